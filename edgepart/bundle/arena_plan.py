"""Arena planning across the partitions of a bundle: the one entry point, :func:`plan_bundle_arena`.

Every arena that spans partitions is planned here: the ``arena.json`` the partitioner writes
(``edgepart partition -o``, :func:`edgepart.bundle.write.build_bundle` with ``arena="global"``),
the boundary-only arena of ``build_bundle(..., arena="boundary")``, and the per-partition and
global plans ``edgepart plan-memory BUNDLE/`` compares. Two scopes:

``global``
    Every partition's tensors and the tensors handed between them, one arena per memory domain
    (:mod:`edgepart.memory.partitioned`: internal buffers on each partition's block of a shared
    timeline, boundary buffers in the producer's memory and in every memory that reads them,
    explicit conflicts between partitions that may run concurrently), planned by
    :func:`edgepart.memory.global_plan.plan_global`. The partitions are read from ``source``
    (the source subgraph: partition-scope ``tensor`` ids are source tensor indices; what the
    partitioner writes) or, without it, from the bundle's partition files (ids are indices in
    each partition file; what ``plan-memory`` reports). A partition's memory is its processor's
    memory domain in the device profile, else in the ``partitioner.processors`` record of
    ``plan.json``; without either, every partition uses one memory ``host``. Model inputs and
    outputs live in the first CPU processor's memory.

``boundary``
    Only the staged boundary tensors, in one host arena (what the Python runtime needs). A
    timeline interleaves reads and writes: partition ``k`` reads its inputs at step ``2k + 1``
    and writes its outputs at step ``2k + 2`` (model inputs are written at step 0), so a tensor
    lives ``[write, last read + 1)``; pairs that this linear timeline separates but that may
    still overlap because the partitions run concurrently get explicit conflicts
    (:meth:`edgepart.bundle.plan_graph.PlanGraph.conflict`).

The default strategy (the planner's ``portfolio`` of greedy orders, no time limit) is
deterministic, so a bundle's arena is byte-reproducible; ``strategy="search"`` with a
``time_limit`` may find a smaller arena but then depends on machine speed when the limit cuts
the search short.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from edgepart.bundle.format import ARENA_FORMAT, BUNDLE_VERSION, Bundle, Plan
from edgepart.bundle.plan_graph import PlanGraph, tensor_nbytes
from edgepart.devices.profile import DeviceProfile, load_profile
from edgepart.errors import ProfileError, UsageError
from edgepart.memory import Buffer, MemoryProblem, plan_arena
from edgepart.memory.arena import ArenaPlan
from edgepart.memory.global_plan import (
    PartitionedPlan,
    arena_document,
    plan_global,
    plan_partitioned,
)
from edgepart.memory.partitioned import (
    PartitionedBuffers,
    PartitionTensors,
    partitioned_buffers,
)
from edgepart.memory.problem import DEFAULT_ALIGNMENT
from edgepart.tflite.reader import read_model_bytes

if TYPE_CHECKING:
    from edgepart.ir.graph import Subgraph

__all__ = ["HOST_MEMORY", "SCOPES", "BundleArena", "plan_bundle_arena"]

HOST_MEMORY = "host"
"""Memory name of the runtime's staging arena (host RAM), and of every partition's memory when
neither a profile nor the plan names memory domains."""

SCOPES = ("global", "boundary")


@dataclass(frozen=True, eq=False)
class BundleArena:
    """An arena plan across the partitions of a bundle.

    ``document`` is the ``arena.json`` document (format ``edgepart-bundle-arena``). For the
    ``global`` scope, ``buffers`` holds the per-partition and global problems and
    ``global_plan`` their global plan; ``partitioned`` adds every partition planned alone when
    asked for (``per_partition=True``). ``memories_from`` says where the memory domains came
    from (``"profile NAME"``, ``"plan.json"`` or ``"none"``).
    """

    scope: str
    strategy: str
    document: dict[str, Any]
    memories_from: str
    buffers: PartitionedBuffers | None = None
    global_plan: ArenaPlan | None = None
    partitioned: PartitionedPlan | None = None


def plan_bundle_arena(
    bundle: Bundle | Plan,
    *,
    scope: str = "global",
    source: Subgraph | None = None,
    profile: DeviceProfile | None = None,
    strategy: str = "portfolio",
    time_limit: float | None = None,
    node_limit: int | None = None,
    alignment: int = DEFAULT_ALIGNMENT,
    per_partition: bool = False,
) -> BundleArena:
    """Plan the arena across the partitions of ``bundle`` (see the module docstring).

    Parameters
    ----------
    bundle
        A loaded or freshly built :class:`~edgepart.bundle.format.Bundle`, or only its
        :class:`~edgepart.bundle.format.Plan` (enough for the ``boundary`` scope, and for the
        ``global`` scope with ``source``).
    scope
        ``"global"`` (every tensor, one arena per memory domain) or ``"boundary"`` (the staged
        boundary tensors in one host arena).
    source
        ``global`` scope: the source subgraph the plan's op and tensor indices refer to; plan
        the partitions over it instead of over the partition files.
    profile
        ``global`` scope: the device profile whose memory domains the partitions use; default:
        the plan's ``device_profile`` loaded by name, else the plan's partitioner record.
    strategy, time_limit, node_limit
        As for :func:`edgepart.memory.plan_arena` (the default is deterministic).
    alignment
        Alignment of every buffer in bytes.
    per_partition
        ``global`` scope: also plan every partition alone (``BundleArena.partitioned``), for
        comparing separate arenas with the global one.

    Returns
    -------
    BundleArena
        The ``arena.json`` document and, for the ``global`` scope, the problems and plans.

    Raises
    ------
    UsageError
        An unknown scope, or the ``global`` scope from a plan alone without ``source``.
    """
    plan = bundle.plan if isinstance(bundle, Bundle) else bundle
    if scope == "boundary":
        doc, result = _boundary(plan, strategy, time_limit, node_limit, alignment)
        return BundleArena(scope, strategy, doc, HOST_MEMORY, global_plan=result)
    if scope != "global":
        raise UsageError(f"arena scope {scope!r} is not known; use one of {', '.join(SCOPES)}")
    domain, host, memories_from = _domains(plan, profile)
    if source is not None:
        parts = [
            PartitionTensors(
                p.id,
                p.unit_name,
                domain.get(p.processor, HOST_MEMORY),
                source,
                p.file_ops,
                tuple(sorted(r.tensor for r in p.inputs)),
                tuple(sorted(r.tensor for r in p.outputs)),
            )
            for p in plan.partitions
        ]
    elif isinstance(bundle, Bundle):
        parts = _file_partitions(bundle, domain)
    else:
        raise UsageError(
            "planning the global arena of a plan needs its partition files (a Bundle) or the "
            "source subgraph (source=)"
        )
    pb = partitioned_buffers(
        parts,
        host_memory=host,
        model_outputs=[t.tensor for t in plan.outputs],
        alignment=alignment,
    )
    partitioned = None
    if per_partition:
        partitioned = plan_partitioned(
            pb, strategy=strategy, time_limit=time_limit, node_limit=node_limit
        )
        glob = partitioned.global_plan
    else:
        glob = plan_global(pb, strategy=strategy, time_limit=time_limit, node_limit=node_limit)
    doc = arena_document(pb, glob, f"edgepart-partition-global/{strategy}")
    return BundleArena(scope, strategy, doc, memories_from, pb, glob, partitioned)


def _file_partitions(bundle: Bundle, domain: Mapping[str, str]) -> list[PartitionTensors]:
    """Each partition as its file runs: its ops in file order, tied to model-wide tensors."""
    where = bundle.path if bundle.path is not None else "<bundle>"
    parts = []
    for p in bundle.plan.partitions:
        sg = read_model_bytes(bundle.partition_bytes[p.id], f"{where}/{p.file}").subgraphs[0]
        refs = (*p.inputs, *p.outputs)
        parts.append(
            PartitionTensors(
                id=p.id,
                unit=p.unit_name,
                memory=domain.get(p.processor, HOST_MEMORY),
                subgraph=sg,
                ops=tuple(range(sg.num_ops)),
                inputs=tuple(r.index for r in p.inputs),
                outputs=tuple(r.index for r in p.outputs),
                tensor_ids={r.index: r.tensor for r in refs},
            )
        )
    return parts


def _domains(plan: Plan, profile: DeviceProfile | None) -> tuple[dict[str, str], str, str]:
    """``(processor -> memory, host memory, where from)``."""
    if profile is None and plan.device_profile is not None:
        try:
            profile = load_profile(plan.device_profile)
        except ProfileError:
            profile = None  # a profile by path that moved: the plan's own record still serves
    if profile is not None:
        dom = {p.name: p.memory_domain for p in profile.processors}
        cpus = [p.memory_domain for p in profile.processors if p.kind == "cpu"]
        host = cpus[0] if cpus else profile.processors[0].memory_domain
        return dom, host, f"profile {plan.device_profile or profile.name}"
    part = plan.extra.get("partitioner")
    procs = part.get("processors") if isinstance(part, Mapping) else None
    if isinstance(procs, list):
        recs = [p for p in procs if isinstance(p, Mapping) and "name" in p and "memory_domain" in p]
        if recs:
            dom = {str(p["name"]): str(p["memory_domain"]) for p in recs}
            cpus = [str(p["memory_domain"]) for p in recs if p.get("kind") == "cpu"]
            return dom, cpus[0] if cpus else str(recs[0]["memory_domain"]), "plan.json"
    return {}, HOST_MEMORY, "none"


def _boundary(
    plan: Plan,
    strategy: str,
    time_limit: float | None,
    node_limit: int | None,
    alignment: int,
) -> tuple[dict[str, Any], ArenaPlan | None]:
    """The ``boundary`` scope: every staged boundary tensor of ``plan`` in one host arena."""
    graph = PlanGraph.from_plan(plan)
    sizes = {x.tensor: tensor_nbytes(x.dtype, x.shape) for x in plan.inputs}
    for p in plan.partitions:
        for ref in p.outputs:
            sizes[ref.tensor] = tensor_nbytes(ref.dtype, ref.shape)
    staged = graph.staged_tensors()
    life: dict[int, tuple[int, int]] = {}
    for t in staged:
        prod = graph.producer.get(t)
        start = 0 if prod is None else 2 * prod + 2
        end = max(2 * c + 2 for c in graph.consumers[t])
        life[t] = (start, max(end, start + 1))
    buffers = [
        Buffer(
            id=f"t{t}",
            lower=life[t][0],
            upper=life[t][1],
            size=sizes[t],
            alignment=alignment,
            memory=HOST_MEMORY,
        )
        for t in staged
    ]
    conflicts = []
    for i, t in enumerate(staged):
        for u in staged[i + 1 :]:
            apart = life[t][1] <= life[u][0] or life[u][1] <= life[t][0]
            if apart and graph.conflict(t, u):
                conflicts.append((f"t{t}", f"t{u}"))
    doc: dict[str, Any] = {
        "format": ARENA_FORMAT,
        "version": BUNDLE_VERSION,
        "strategy": strategy,
        "alignment": alignment,
        "memories": {},
        "buffers": [],
    }
    if not buffers:
        doc["memories"][HOST_MEMORY] = {"size": 0, "lower_bound": 0}
        return doc, None
    result = plan_arena(
        MemoryProblem.from_buffers(buffers, conflicts),
        strategy=strategy,
        time_limit=time_limit,
        node_limit=node_limit,
    )
    for name, a in result.arenas.items():
        doc["memories"][name] = {
            "size": a.size,
            "lower_bound": a.lower_bound,
            "naive": a.naive,
            "method": a.method,
        }
    doc["buffers"] = [
        {
            "tensor": t,
            "scope": "boundary",
            "partition": None,
            "memory": HOST_MEMORY,
            "offset": int(result.offsets[f"t{t}"]),
            "size": sizes[t],
            "lifetime": list(life[t]),
        }
        for t in staged
    ]
    return doc, result
