"""Build a bundle from a model and a list of partition specs, and write it: the one writer of
``manifest.json``, ``plan.json``, ``arena.json`` and ``report.txt``.

>>> from edgepart.bundle import PartitionSpec, write_bundle          # doctest: +SKIP
>>> write_bundle("out/", "model.tflite", [PartitionSpec(range(0, 30)),
...                                       PartitionSpec(range(30, 65), unit=1)])  # doctest: +SKIP

:func:`build_bundle` makes the bundle in memory, every document validated as the loader would
(``plan.json`` by :func:`~edgepart.bundle.format.plan_from_doc`, the partitioner's keys
included); :func:`save_bundle` writes one; :func:`write_bundle` does both. Each spec's ops are
extracted as a standalone ``.tflite`` (:func:`edgepart.ir.extract.extract`, which refuses
non-convex sets and cuts through state); partitions are ordered by dependency; the plan, report,
optional arena and a manifest with checksums are written into a temporary directory that
replaces ``out_dir`` only when complete.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgepart import jsondoc as _json
from edgepart.bundle.arena_plan import plan_bundle_arena
from edgepart.bundle.format import (
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    EXECUTOR_KINDS,
    RESERVED_PLAN_KEYS,
    Bundle,
    ExecutorSpec,
    PartitionEntry,
    Plan,
    arena_from_doc,
    plan_from_doc,
)
from edgepart.bundle.parts import PartSource, dependency_order, extract_partition, model_tensors
from edgepart.bundle.report_txt import format_report
from edgepart.bundle.tensor_parallel import CollectiveEntry, SplitEntry
from edgepart.devices.profile import DeviceProfile, load_profile
from edgepart.errors import UsageError
from edgepart.fileio import atomic_dir
from edgepart.version import __version__

if TYPE_CHECKING:
    from edgepart.ir.graph import Model

__all__ = ["RESERVED_PLAN_KEYS", "PartitionSpec", "build_bundle", "save_bundle", "write_bundle"]

_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True)
class PartitionSpec:
    """What the partitioner decided for one partition.

    Parameters
    ----------
    ops
        Op indices of the source subgraph (a convex set).
    processor, unit
        The device-profile processor and which of its units runs the partition.
    delegate
        The LiteRT delegate name (``xnnpack``, ``cpu_builtin``, ``gpu``, ...); default: the
        profile processor's delegate, else ``xnnpack``.
    executor
        Optional explicit executor: ``"xnnpack"``, ``"builtin"``, ``"reference"`` or an
        :class:`ExecutorSpec` (``kind="delegate"`` with a library path and options).
    id
        Partition id (file ``partitions/<id>.tflite``); default ``p<k>`` in dependency order.
    threads
        CPU threads for this partition's interpreter; default: the runtime's ``num_threads``.
    predicted
        Partitioner predictions (``start_s``, ``end_s``, ``duration_s``, ...).
    extra
        Free-form partitioner data kept in the plan.
    """

    ops: Sequence[int]
    processor: str = "cpu"
    unit: int = 0
    delegate: str | None = None
    executor: ExecutorSpec | str | None = None
    id: str | None = None
    threads: int | None = None
    predicted: Mapping[str, float | None] | None = None
    extra: Mapping[str, Any] | None = None


def build_bundle(
    model: Model | str | os.PathLike[str],
    partitions: Sequence[PartitionSpec | Sequence[int]],
    *,
    subgraph: int = 0,
    profile: DeviceProfile | str | None = None,
    plan_extra: Mapping[str, Any] | None = None,
    arena: Mapping[str, Any] | str | None = None,
    source_path: str | os.PathLike[str] | None = None,
    splits: Sequence[SplitEntry] = (),
    collectives: Sequence[CollectiveEntry] = (),
) -> Bundle:
    """The bundle for ``model`` cut into ``partitions``, in memory (see :func:`write_bundle`).

    With ``splits`` (tensor parallelism), ``model`` is the split model
    (:func:`edgepart.ir.split.split_model` of the source, as the entries say) and
    ``source_path`` the source model's file: the plan is written as version 2 with its
    ``splits`` and ``collectives`` (:mod:`edgepart.bundle.tensor_parallel`).
    """
    src = PartSource.open(model, source_path)
    sg_count = len(src.model.subgraphs)
    if not 0 <= subgraph < sg_count:
        raise UsageError(f"subgraph {subgraph} does not exist; the model has {sg_count}")
    prof = _load_profile(profile)
    specs = [_normalize(p, prof) for p in partitions]
    if not specs:
        raise UsageError("no partitions given; a bundle needs at least one")
    _check_extra(plan_extra)
    order = dependency_order(src.model.subgraphs[subgraph], [s.ops for s in specs])
    entries: list[PartitionEntry] = []
    blobs: dict[str, bytes] = {}
    used_ids: set[str] = set()
    for k, i in enumerate(order):
        spec = specs[i]
        pid = spec.id or f"p{k}"
        if not _ID.match(pid) or pid in used_ids:
            raise UsageError(f"partition id {pid!r} is invalid or repeated; use [A-Za-z0-9_.-]")
        used_ids.add(pid)
        entry, blob = extract_partition(src, subgraph, spec, pid, entries)
        entries.append(entry)
        blobs[pid] = blob
    sig_key, inputs, outputs = model_tensors(src.model, subgraph)
    extra = dict(plan_extra or {})
    predicted = extra.pop("predicted", None)
    plan = Plan(
        source_name=src.name,
        subgraph=subgraph,
        num_ops=src.model.subgraphs[subgraph].num_ops,
        device_profile=None if prof is None else prof.name,
        signature_key=sig_key,
        inputs=inputs,
        outputs=outputs,
        partitions=tuple(entries),
        predicted=predicted,
        extra=extra,
        splits=tuple(splits),
        collectives=tuple(collectives),
    )
    plan_doc = plan.to_doc()
    plan = plan_from_doc(plan_doc, "plan.json (being written)")  # the loader's own checks
    arena_doc: Mapping[str, Any] | None = None
    if arena == "boundary":
        arena_doc = plan_bundle_arena(plan, scope="boundary").document
    elif arena == "global":
        arena_doc = plan_bundle_arena(
            plan, scope="global", source=src.model.subgraphs[subgraph], profile=prof
        ).document
    elif isinstance(arena, str):
        raise UsageError(
            f"arena={arena!r} is not known; give an arena document, 'global' or 'boundary'"
        )
    elif arena is not None:
        arena_doc = arena
    arena_obj = None
    if arena_doc is not None:
        arena_obj = arena_from_doc(_json.canonical(arena_doc), plan, "arena.json (being written)")
    report = format_report(plan, arena_obj)
    files: dict[str, tuple[str, bytes]] = {
        "plan.json": ("plan", _json.dumps(plan_doc)),
        "report.txt": ("report", report.encode("utf-8")),
    }
    if arena_obj is not None:
        files["arena.json"] = ("arena", _json.dumps(arena_obj.doc))
    for p in plan.partitions:
        files[p.file] = ("partition", blobs[p.id])
    manifest = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "creator": {"tool": "edgepart", "version": __version__},
        "source_model": {
            "name": src.name,
            "sha256": src.sha256,
            "bytes": src.nbytes,
            "path": src.path,
        },
        "device_profile": plan.device_profile,
        "files": [
            {
                "path": path,
                "role": role,
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
            for path, (role, data) in sorted(files.items())
        ],
    }
    _json.validate(manifest, "bundle_manifest.schema.json", "manifest.json (being written)")
    return Bundle(
        path=None,
        manifest=manifest,
        plan=plan,
        partition_bytes=blobs,
        arena=arena_obj,
        report=report,
    )


def write_bundle(
    out_dir: str | os.PathLike[str],
    model: Model | str | os.PathLike[str],
    partitions: Sequence[PartitionSpec | Sequence[int]],
    *,
    subgraph: int = 0,
    profile: DeviceProfile | str | None = None,
    plan_extra: Mapping[str, Any] | None = None,
    arena: Mapping[str, Any] | str | None = None,
    source_path: str | os.PathLike[str] | None = None,
) -> Bundle:
    """Write a bundle directory for ``model`` cut into ``partitions``; return it loaded.

    Parameters
    ----------
    out_dir
        The bundle directory. Built in a temporary sibling and renamed into place only when
        complete; an existing bundle there is replaced, any other existing non-empty
        directory is refused.
    model
        A :class:`~edgepart.ir.graph.Model` or a ``.tflite`` path.
    partitions
        :class:`PartitionSpec` values (or plain op-index lists, run on ``cpu:0``), in any
        order; they are written in dependency order.
    subgraph
        The subgraph the op indices refer to.
    profile
        The device profile (name, path or loaded) the plan targets: checks processors and
        units, supplies default delegates, and is recorded in the manifest.
    plan_extra
        Extra top-level plan keys from the partitioner (``predicted`` with ``latency_s`` /
        ``period_s`` / ``baseline_latency_s``, ``transfers``, ``memory``, ``baseline``, ...).
        Keys the bundle owns (:data:`RESERVED_PLAN_KEYS`) are refused.
    arena
        ``None`` (no ``arena.json``), ``"global"`` (plan every partition's tensors and the
        boundary buffers, one arena per memory domain of ``profile``), ``"boundary"`` (plan
        only the staged boundary buffers, in one host arena) or an arena document (format
        ``edgepart-bundle-arena``). Planned by
        :func:`~edgepart.bundle.arena_plan.plan_bundle_arena`.
    source_path
        The file ``model`` was read from, when giving a :class:`Model` (recorded with its
        sha256 so ``edgepart run --verify`` can find it); default: ``model.source``.

    Raises
    ------
    UsageError
        Ops not covered exactly once, a non-convex or state-splitting partition, partitions
        that depend on each other, unknown processors/units, reserved ``plan_extra`` keys,
        tensors without a NumPy type on a boundary, or a refused output directory.
    BundleError
        An arena document that does not fit the plan.
    """
    bundle = build_bundle(
        model,
        partitions,
        subgraph=subgraph,
        profile=profile,
        plan_extra=plan_extra,
        arena=arena,
        source_path=source_path,
    )
    return save_bundle(bundle, out_dir)


def save_bundle(
    bundle: Bundle,
    out_dir: str | os.PathLike[str],
    *,
    extra_files: Mapping[str, bytes] | None = None,
) -> Bundle:
    """Write a bundle (from :func:`build_bundle`) to the directory ``out_dir``; return it with
    its path.

    Parameters
    ----------
    bundle
        The bundle; its manifest lists every file written except ``extra_files``.
    out_dir
        Built in a temporary sibling and renamed into place only when complete; an existing
        bundle there is replaced, any other existing non-empty directory is refused.
    extra_files
        Files written beside the bundle's own but not listed in its manifest (names relative to
        ``out_dir``; e.g. the partitioner's ``partition_report.txt``).

    Raises
    ------
    UsageError
        ``out_dir`` exists and is not a bundle, or an extra file would replace a bundle file.
    """
    extra = dict(extra_files or {})
    listed = {e["path"] for e in bundle.manifest["files"]} | {"manifest.json"}
    clash = sorted(listed & set(extra))
    if clash:
        raise UsageError(f"extra file {clash[0]!r} would replace a file of the bundle")
    out = Path(out_dir)
    if out.exists() and (
        not out.is_dir() or (any(out.iterdir()) and not (out / "manifest.json").is_file())
    ):
        raise UsageError(
            f"{out} exists and is not an edgepart bundle; refusing to replace it (choose a new "
            "output directory)"
        )
    with atomic_dir(out) as tmp:
        (tmp / "partitions").mkdir()
        for entry in bundle.manifest["files"]:
            data = _file_bytes(bundle, entry["path"])
            (tmp / entry["path"]).write_bytes(data)
        (tmp / "manifest.json").write_bytes(_json.dumps(bundle.manifest))
        for name, data in sorted(extra.items()):
            (tmp / name).write_bytes(data)
    return Bundle(
        path=out,
        manifest=bundle.manifest,
        plan=bundle.plan,
        partition_bytes=bundle.partition_bytes,
        arena=bundle.arena,
        report=bundle.report,
    )


def _file_bytes(bundle: Bundle, path: str) -> bytes:
    if path == "plan.json":
        return _json.dumps(bundle.plan.to_doc())
    if path == "report.txt":
        return bundle.report.encode("utf-8")
    if path == "arena.json":
        assert bundle.arena is not None
        return _json.dumps(bundle.arena.doc)
    pid = next(p.id for p in bundle.plan.partitions if p.file == path)
    return bundle.partition_bytes[pid]


def _load_profile(profile: DeviceProfile | str | None) -> DeviceProfile | None:
    if profile is None or not isinstance(profile, (str, os.PathLike)):
        return profile
    return load_profile(profile)


def _normalize(p: PartitionSpec | Sequence[int], prof: DeviceProfile | None) -> PartitionSpec:
    spec = p if isinstance(p, PartitionSpec) else PartitionSpec(ops=list(p))
    delegate = spec.delegate
    if prof is not None:
        proc = next((q for q in prof.processors if q.name == spec.processor), None)
        if proc is None:
            raise UsageError(
                f"processor {spec.processor!r} is not in profile {prof.name!r}; processors: "
                f"{', '.join(q.name for q in prof.processors)}"
            )
        if not 0 <= spec.unit < int(proc.units.value):
            raise UsageError(
                f"processor {spec.processor!r} of profile {prof.name!r} has "
                f"{int(proc.units.value)} units; unit {spec.unit} does not exist"
            )
        delegate = delegate or proc.delegate
    ex = spec.executor
    if isinstance(ex, str):
        if ex not in EXECUTOR_KINDS or ex == "delegate":
            raise UsageError(
                f"executor {ex!r} is not known; use one of xnnpack, builtin, reference, or an "
                "ExecutorSpec(kind='delegate', delegate=..., library=...)"
            )
        ex = ExecutorSpec(ex)
    if spec.unit < 0 or (spec.threads is not None and spec.threads < 1):
        raise UsageError(f"partition {spec.id or list(spec.ops)[:3]}: unit/threads out of range")
    return PartitionSpec(
        ops=sorted(int(o) for o in spec.ops),
        processor=spec.processor,
        unit=spec.unit,
        delegate=delegate or "xnnpack",
        executor=ex,
        id=spec.id,
        threads=spec.threads,
        predicted=spec.predicted,
        extra=spec.extra,
    )


def _check_extra(extra: Mapping[str, Any] | None) -> None:
    bad = sorted(RESERVED_PLAN_KEYS & set(extra or {}))
    if bad:
        raise UsageError(
            f"plan_extra may not set {', '.join(bad)}: the bundle writer owns these plan keys"
        )
