"""Build a bundle from a model and a list of partition specs, and write it: the one writer of
``manifest.json``, ``plan.json``, ``arena.json`` and ``report.txt``.

>>> import tempfile
>>> from edgepart.bundle import PartitionSpec, write_bundle
>>> b = write_bundle(tempfile.mkdtemp() + "/b", "examples/models/mobilenet_v2.tflite",
...                  [PartitionSpec(range(0, 30)), PartitionSpec(range(30, 65))])
>>> [p.id for p in b.plan.partitions]
['p0', 'p1']

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
import stat
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
    check_format,
    plan_from_doc,
)
from edgepart.bundle.load import MANIFEST_LIMIT
from edgepart.bundle.parts import PartSource, dependency_order, extract_partition, model_tensors
from edgepart.bundle.report_txt import format_report
from edgepart.bundle.tensor_parallel import CollectiveEntry, SplitEntry
from edgepart.devices.host_executors import MAX_THREADS
from edgepart.devices.profile import DeviceProfile, load_profile
from edgepart.errors import EdgepartError, OutputError, PlanError, UsageError
from edgepart.fileio import atomic_dir
from edgepart.version import __version__

if TYPE_CHECKING:
    from edgepart.ir.graph import Model

__all__ = [
    "EXTRA_FILES",
    "RESERVED_PLAN_KEYS",
    "PartitionSpec",
    "build_bundle",
    "check_replaceable",
    "save_bundle",
    "write_bundle",
]

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
        :class:`ExecutorSpec` (``kind="delegate"`` with a delegate name and options; the
        library is given when the bundle runs, never stored in it).
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
            raise PlanError(f"partition id {pid!r} is invalid or repeated; use [A-Za-z0-9_.-]")
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
        "files": [_file_entry(path, role, data) for path, (role, data) in sorted(files.items())],
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
        No partitions, a subgraph that does not exist, reserved ``plan_extra`` keys, or a
        refused output directory.
    PlanError
        Ops not covered exactly once, a non-convex or state-splitting partition, partitions
        that depend on each other, unknown processors/units/executors, bad partition ids.
    UnsupportedOpError
        A tensor without a NumPy type on a boundary, or a constant model output.
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
        The bundle.
    out_dir
        Built in a temporary sibling and swapped into place only when complete (atomically on
        Linux; :func:`edgepart.fileio.atomic_dir`). An existing ``out_dir`` is replaced only if
        it is empty or holds nothing but a bundle edgepart wrote, unchanged since (every file
        listed in its manifest with the recorded size and SHA-256).
    extra_files
        More files for the bundle, listed in its manifest with role ``report`` (only
        ``partition_report.txt``, the partitioner's report).

    Raises
    ------
    UsageError
        An extra file with another name, or one that would replace a bundle file.
    OutputError
        ``out_dir`` holds a file edgepart did not write (named), is not a directory, or cannot
        be written (a full disk); whatever was there is left in place.
    """
    extra = dict(extra_files or {})
    listed = {e["path"] for e in bundle.manifest["files"]} | {"manifest.json"}
    clash = sorted(listed & set(extra))
    if clash:
        raise UsageError(f"extra file {clash[0]!r} would replace a file of the bundle")
    odd = sorted(set(extra) - set(EXTRA_FILES))
    if odd:
        raise UsageError(
            f"extra file {odd[0]!r} is not a bundle file; allowed: {', '.join(EXTRA_FILES)}"
        )
    manifest = dict(bundle.manifest)
    if extra:
        manifest["files"] = sorted(
            [
                *bundle.manifest["files"],
                *(_file_entry(name, "report", data) for name, data in extra.items()),
            ],
            key=lambda e: e["path"],
        )
        _json.validate(manifest, "bundle_manifest.schema.json", "manifest.json (being written)")
    out = Path(out_dir)
    with atomic_dir(out, check=check_replaceable) as tmp:
        (tmp / "partitions").mkdir()
        for entry in manifest["files"]:
            name = entry["path"]
            data = extra[name] if name in extra else _file_bytes(bundle, name)
            (tmp / name).write_bytes(data)
        (tmp / "manifest.json").write_bytes(_json.dumps(manifest))
    return Bundle(
        path=out,
        manifest=manifest,
        plan=bundle.plan,
        partition_bytes=bundle.partition_bytes,
        arena=bundle.arena,
        report=bundle.report,
    )


EXTRA_FILES = ("partition_report.txt",)
"""Files a bundle may hold beside its own (listed in the manifest with role ``report``)."""

_MAX_ENTRIES = 100_000


def check_replaceable(out: Path) -> None:
    """Refuse to replace ``out`` unless it is empty or holds nothing but an edgepart bundle.

    Every file must be ``manifest.json`` (an edgepart bundle manifest) or listed in it with
    the recorded size and SHA-256; the only directory allowed is ``partitions/``; no symbolic
    links. Files a user added, or edited since, are never deleted.

    Raises
    ------
    OutputError
        Naming one file edgepart did not write (or that changed since it wrote it).
    """
    found = _entries(out)
    if not found:
        return
    refuse = (
        f"; refusing to replace {out} (move it out of the directory, or choose another "
        "output directory)"
    )
    if "manifest.json" not in found:
        raise OutputError(f"{out}/{found[0]} was not written by edgepart{refuse}")
    try:
        manifest = _json.load_file(
            out / "manifest.json",
            what="bundle manifest",
            limit=MANIFEST_LIMIT,
            error=OutputError,
            follow_symlinks=False,
        )
        check_format(manifest, BUNDLE_FORMAT, f"{out}/manifest.json")
        _json.validate(manifest, "bundle_manifest.schema.json", f"{out}/manifest.json")
    except EdgepartError as err:
        raise OutputError(
            f"{out}/manifest.json is not a manifest edgepart wrote ({err}){refuse}"
        ) from None
    if manifest["creator"]["tool"] != "edgepart":
        raise OutputError(
            f"{out}/manifest.json was written by {manifest['creator']['tool']!r}{refuse}"
        )
    files = {e["path"]: e for e in manifest["files"]}
    dirs = {p.rpartition("/")[0] for p in files if "/" in p}
    for rel in found:
        if rel == "manifest.json" or rel in dirs:
            continue
        entry = files.get(rel)
        if entry is None:
            raise OutputError(f"{out}/{rel} was not written by edgepart{refuse}")
        if not _unchanged(out / rel, entry):
            raise OutputError(
                f"{out}/{rel} changed after edgepart wrote it (size or SHA-256 differs from "
                f"manifest.json){refuse}"
            )


def _entries(root: Path) -> list[str]:
    """Relative paths of everything below ``root`` (directories too), sorted; links not
    followed. Symbolic links and special files are returned as entries to refuse."""
    out: list[str] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            it = list(os.scandir(root / rel if rel else root))
        except OSError as err:
            raise OutputError(f"{root / rel}: cannot list ({err.strerror})") from None
        for e in it:
            name = f"{rel}/{e.name}" if rel else e.name
            out.append(name)
            if e.is_dir(follow_symlinks=False):
                stack.append(name)
            if len(out) > _MAX_ENTRIES:
                raise OutputError(f"{root}: holds more than {_MAX_ENTRIES} files; not a bundle")
    return sorted(out)


def _unchanged(path: Path, entry: Mapping[str, Any]) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_size != entry["bytes"]:
        return False
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return False
    return bool(h.hexdigest() == entry["sha256"])


def _file_entry(path: str, role: str, data: bytes) -> dict[str, Any]:
    return {
        "path": path,
        "role": role,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


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
            raise PlanError(
                f"processor {spec.processor!r} is not in profile {prof.name!r}; processors: "
                f"{', '.join(q.name for q in prof.processors)}"
            )
        if not 0 <= spec.unit < int(proc.units.value):
            raise PlanError(
                f"processor {spec.processor!r} of profile {prof.name!r} has "
                f"{int(proc.units.value)} units; unit {spec.unit} does not exist"
            )
        delegate = delegate or proc.delegate
    ex = spec.executor
    if isinstance(ex, str):
        if ex not in EXECUTOR_KINDS or ex == "delegate":
            raise PlanError(
                f"executor {ex!r} is not known; use one of xnnpack, builtin, reference, or an "
                "ExecutorSpec(kind='delegate', delegate=...)"
            )
        ex = ExecutorSpec(ex)
    if spec.unit < 0 or (spec.threads is not None and not 1 <= spec.threads <= MAX_THREADS):
        raise PlanError(f"partition {spec.id or list(spec.ops)[:3]}: unit/threads out of range")
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
