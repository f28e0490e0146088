"""The buffers of a bundle: its partition files as they run, its plan's routing and memories.

Each partition is planned from its own ``.tflite`` file (the ops TFLite runs, in the file's
order, with TFLite's lifetimes); its inputs and outputs are tied to model-wide tensors by the
plan (``tensor`` = source index, ``index`` = index in the partition file). A partition's memory
is the memory domain of its processor in the bundle's device profile, else in the partitioner's
``partitioner.processors`` record of ``plan.json``; without either, every partition uses one
memory ``host``. Model inputs and outputs live in the host memory: the first CPU processor's
domain (as for the partitioner's cost graphs).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from edgepart.memory.partitioned import PartitionedBuffers, PartitionTensors, partitioned_buffers
from edgepart.memory.problem import DEFAULT_ALIGNMENT

__all__ = ["BundleBuffers", "bundle_buffers"]

HOST = "host"


@dataclass(frozen=True, eq=False)
class BundleBuffers:
    """The bundle's buffers plus where its memories came from (``"profile NAME"``,
    ``"plan.json"`` or ``"none"``)."""

    buffers: PartitionedBuffers
    name: str
    memories_from: str


def bundle_buffers(
    path: str | os.PathLike[str], *, alignment: int = DEFAULT_ALIGNMENT
) -> BundleBuffers:
    """Load and verify the bundle at ``path`` and build its per-partition and global buffers.

    Raises
    ------
    BundleError
        The bundle does not load (see :func:`edgepart.bundle.load_bundle`).
    """
    from edgepart.bundle import load_bundle
    from edgepart.tflite.reader import read_model_bytes

    bundle = load_bundle(path)
    plan = bundle.plan
    domain, host, source = _domains(plan.device_profile, plan.extra)
    parts = []
    for p in plan.partitions:
        where = f"{path}/{p.file}"
        sg = read_model_bytes(bundle.partition_bytes[p.id], where).subgraphs[0]
        refs = (*p.inputs, *p.outputs)
        parts.append(
            PartitionTensors(
                id=p.id,
                unit=p.unit_name,
                memory=domain.get(p.processor, HOST),
                subgraph=sg,
                ops=tuple(range(sg.num_ops)),
                inputs=tuple(r.index for r in p.inputs),
                outputs=tuple(r.index for r in p.outputs),
                tensor_ids={r.index: r.tensor for r in refs},
            )
        )
    pb = partitioned_buffers(
        parts,
        host_memory=host,
        model_outputs=[t.tensor for t in plan.outputs],
        alignment=alignment,
    )
    name = os.path.basename(os.path.normpath(os.fspath(path)))
    return BundleBuffers(pb, name, source)


def _domains(profile: str | None, extra: object) -> tuple[dict[str, str], str, str]:
    """``(processor -> memory, host memory, where from)``."""
    from edgepart.errors import ProfileError

    if profile is not None:
        from edgepart.devices.profile import load_profile

        try:
            prof = load_profile(profile)
        except ProfileError:
            prof = None
        if prof is not None:
            dom = {p.name: p.memory_domain for p in prof.processors}
            cpus = [p.memory_domain for p in prof.processors if p.kind == "cpu"]
            return dom, cpus[0] if cpus else prof.processors[0].memory_domain, f"profile {profile}"
    part = extra.get("partitioner") if isinstance(extra, Mapping) else None
    procs = part.get("processors") if isinstance(part, Mapping) else None
    if isinstance(procs, list):
        recs = [p for p in procs if isinstance(p, Mapping) and "name" in p and "memory_domain" in p]
        if recs:
            dom = {str(p["name"]): str(p["memory_domain"]) for p in recs}
            cpus = [str(p["memory_domain"]) for p in recs if p.get("kind") == "cpu"]
            return dom, cpus[0] if cpus else str(recs[0]["memory_domain"]), "plan.json"
    return {}, HOST, "none"
