"""The bundle format: versioned constants, the typed view of ``plan.json`` / ``arena.json``,
and their validation (:func:`plan_from_doc`, :func:`arena_from_doc`); loading a bundle directory
is :func:`edgepart.bundle.load.load_bundle`.

A bundle is a directory (layout and field reference in ``docs/bundle.md``)::

    manifest.json          format, version, creator, source model, profile, every file + sha256
    plan.json              partitions in dependency order, model inputs/outputs, predictions
    arena.json             optional: static layout of boundary (and internal) buffers
    partitions/<id>.tflite one standalone model per partition
    report.txt             short human summary

Everything here is plain JSON and ``.tflite``: the Android demo reads the same files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgepart import jsondoc as _json
from edgepart.bundle._checks import check_arena, check_plan
from edgepart.bundle.tensor_parallel import (
    CollectiveEntry,
    SplitEntry,
    check_tensor_parallel,
    collective_from_doc,
    split_from_doc,
)
from edgepart.errors import BundleError

__all__ = [
    "ARENA_FORMAT",
    "BUNDLE_FORMAT",
    "BUNDLE_VERSION",
    "EXECUTOR_KINDS",
    "PLAN_FORMAT",
    "PLAN_VERSION",
    "PLAN_VERSIONS",
    "RESERVED_PLAN_KEYS",
    "Arena",
    "ArenaBuffer",
    "Bundle",
    "ExecutorSpec",
    "ModelTensor",
    "PartitionEntry",
    "Plan",
    "TensorRef",
    "arena_from_doc",
    "check_format",
    "plan_from_doc",
]

BUNDLE_FORMAT = "edgepart-bundle"
PLAN_FORMAT = "edgepart-bundle-plan"
ARENA_FORMAT = "edgepart-bundle-arena"
BUNDLE_VERSION = 1
"""The version of the manifest and arena formats this code reads and writes, and of plans
without tensor-parallel splits."""
PLAN_VERSION = 2
"""The newest ``plan.json`` version: 2 adds ``splits`` and ``collectives`` (tensor parallelism,
:mod:`edgepart.bundle.tensor_parallel`). A plan without splits is still written as version 1,
byte for byte as before; readers take both."""
PLAN_VERSIONS = (1, 2)

EXECUTOR_KINDS = ("xnnpack", "builtin", "reference", "delegate")

RESERVED_PLAN_KEYS = frozenset(
    {
        "format",
        "version",
        "source",
        "device_profile",
        "signature_key",
        "inputs",
        "outputs",
        "partitions",
        "splits",
        "collectives",
    }
)
"""Top-level ``plan.json`` keys the bundle owns; the rest (``predicted`` and any partitioner
keys) come from the partitioner."""


@dataclass(frozen=True)
class TensorRef:
    """A partition's input or output: the source tensor and its place in the partition file."""

    tensor: int
    index: int
    name: str
    tensor_name: str
    dtype: str
    shape: tuple[int, ...]
    shape_signature: tuple[int, ...] | None


@dataclass(frozen=True)
class ModelTensor:
    """A model-level input or output (``name`` is its signature name)."""

    tensor: int
    name: str
    tensor_name: str
    dtype: str
    shape: tuple[int, ...]
    shape_signature: tuple[int, ...] | None
    quantization: Mapping[str, Any] | None


@dataclass(frozen=True)
class ExecutorSpec:
    """How a partition runs in LiteRT: a kernel set or an external delegate.

    A delegate is named, never located: its library comes from whoever runs the bundle
    (``delegate_libraries``, ``--delegate-library``, or the delegate's file on the search
    path), never from the bundle (``docs/security.md``).
    """

    kind: str
    delegate: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"kind": self.kind}
        if self.delegate is not None:
            doc["delegate"] = self.delegate
        if self.options:
            doc["options"] = dict(self.options)
        return doc


@dataclass(frozen=True)
class PartitionEntry:
    """One partition of a plan (see ``docs/bundle.md`` for each field)."""

    id: str
    ops: tuple[int, ...]
    file_ops: tuple[int, ...]
    processor: str
    unit: int
    delegate: str
    executor: ExecutorSpec | None
    threads: int | None
    file: str
    signature_key: str
    inputs: tuple[TensorRef, ...]
    outputs: tuple[TensorRef, ...]
    depends_on: tuple[str, ...]
    predicted: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] | None = None

    @property
    def unit_name(self) -> str:
        """``processor:unit``: partitions on one unit never run at the same time."""
        return f"{self.processor}:{self.unit}"


@dataclass(frozen=True)
class Plan:
    """The typed content of ``plan.json``; ``extra`` holds partitioner-owned top-level keys.

    ``num_ops`` counts the ops the partitions cover: the source subgraph's, plus what the
    ``splits`` add (a version-2 plan places the split graph, see
    :mod:`edgepart.bundle.tensor_parallel`).
    """

    source_name: str
    subgraph: int
    num_ops: int
    device_profile: str | None
    signature_key: str | None
    inputs: tuple[ModelTensor, ...]
    outputs: tuple[ModelTensor, ...]
    partitions: tuple[PartitionEntry, ...]
    predicted: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    splits: tuple[SplitEntry, ...] = ()
    collectives: tuple[CollectiveEntry, ...] = ()

    @property
    def version(self) -> int:
        """1 for a plan without splits, 2 with (see :data:`PLAN_VERSION`)."""
        return 2 if self.splits or self.collectives else 1

    @property
    def source_num_ops(self) -> int:
        """Ops of the source subgraph (before the splits)."""
        return self.num_ops - sum(s.added_ops for s in self.splits)

    @property
    def input_shapes(self) -> dict[str, tuple[int, ...]]:
        """``{tensor index: shape}`` of the inputs with a dynamic (-1) dimension: the sizes the
        bundle was built for (``--input-shape``), to resize the source model to."""
        return {
            str(t.tensor): t.shape
            for t in self.inputs
            if t.shape_signature is not None and -1 in t.shape_signature
        }

    def partition(self, pid: str) -> PartitionEntry:
        for p in self.partitions:
            if p.id == pid:
                return p
        raise KeyError(f"no partition {pid!r}; partitions: {[p.id for p in self.partitions]}")

    def to_doc(self) -> dict[str, Any]:
        """The JSON document (plain values; serialize with sorted keys)."""
        doc: dict[str, Any] = dict(self.extra)
        doc.update(
            format=PLAN_FORMAT,
            version=self.version,
            source={
                "name": self.source_name,
                "subgraph": self.subgraph,
                "num_ops": self.source_num_ops,
            },
            device_profile=self.device_profile,
            signature_key=self.signature_key,
            inputs=[_model_tensor_doc(t) for t in self.inputs],
            outputs=[_model_tensor_doc(t) for t in self.outputs],
            partitions=[_partition_doc(p) for p in self.partitions],
        )
        if self.predicted is not None:
            doc["predicted"] = dict(self.predicted)
        if self.version == 2:
            doc["splits"] = [s.to_doc() for s in self.splits]
            doc["collectives"] = [c.to_doc() for c in self.collectives]
        return _json.canonical(doc)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class ArenaBuffer:
    """One buffer of the arena plan: where tensor ``tensor`` lives in memory ``memory``."""

    tensor: int
    scope: str
    partition: str | None
    memory: str
    offset: int
    size: int


@dataclass(frozen=True)
class Arena:
    """The typed content of ``arena.json``."""

    alignment: int
    memories: Mapping[str, Mapping[str, Any]]
    buffers: tuple[ArenaBuffer, ...]
    doc: Mapping[str, Any]

    def boundary(self) -> dict[int, ArenaBuffer]:
        """The first boundary-scope buffer of each tensor (the one the runtime stages into)."""
        out: dict[int, ArenaBuffer] = {}
        for b in self.buffers:
            if b.scope == "boundary":
                out.setdefault(b.tensor, b)
        return out


@dataclass(frozen=True, eq=False)
class Bundle:
    """A loaded (or freshly built) bundle: verified plan, partition bytes, optional arena."""

    path: Path | None
    manifest: Mapping[str, Any]
    plan: Plan
    partition_bytes: Mapping[str, bytes]
    arena: Arena | None = None
    report: str = ""

    @property
    def source_path(self) -> str | None:
        """Where the source model was when the bundle was written (may have moved since)."""
        path = self.manifest["source_model"]["path"]
        return str(path) if path is not None else None


# ---------------------------------------------------------------------- documents -> values


def plan_from_doc(doc: Any, where: str = "plan.json") -> Plan:
    """Validate a plan document and return its typed view: the one ``plan.json`` validator.

    The bundle's keys are checked against ``bundle_plan.schema.json``; a plan that carries the
    partitioner's keys (``partitioner`` and the rest, written by ``edgepart partition``) is
    checked against ``plan.schema.json`` too; then the cross-references (op coverage,
    producers, dependencies, tensor types).

    Raises
    ------
    BundleError
        One line naming ``where`` and the JSON path or the partition that is wrong.
    """
    check_format(doc, PLAN_FORMAT, where, versions=PLAN_VERSIONS)
    _refuse_libraries(doc, where)
    if doc["version"] == 1 and ("splits" in doc or "collectives" in doc):
        raise BundleError(
            f"{where}: a version-1 plan has no 'splits' or 'collectives'; a plan with "
            "tensor-parallel splits is version 2"
        )
    _json.validate(doc, "bundle_plan.schema.json", where)
    if "partitioner" in doc:
        _json.validate(doc, "plan.schema.json", where)
    known = RESERVED_PLAN_KEYS | {"predicted"}
    src = doc["source"]
    splits = tuple(split_from_doc(s) for s in doc.get("splits", ()))
    plan = Plan(
        source_name=src["name"],
        subgraph=src["subgraph"],
        num_ops=src["num_ops"] + sum(s.added_ops for s in splits),
        device_profile=doc["device_profile"],
        signature_key=doc["signature_key"],
        inputs=tuple(_model_tensor(t) for t in doc["inputs"]),
        outputs=tuple(_model_tensor(t) for t in doc["outputs"]),
        partitions=tuple(_partition(p) for p in doc["partitions"]),
        predicted=doc.get("predicted"),
        extra={k: v for k, v in doc.items() if k not in known},
        splits=splits,
        collectives=tuple(collective_from_doc(c) for c in doc.get("collectives", ())),
    )
    check_plan(plan, where)
    check_tensor_parallel(plan, where)
    return plan


def _refuse_libraries(doc: Mapping[str, Any], where: str) -> None:
    """A plan naming a library to load is refused before anything else looks at it."""
    parts = doc.get("partitions")
    for i, p in enumerate(parts if isinstance(parts, list) else []):
        ex = p.get("executor") if isinstance(p, Mapping) else None
        lib = ex.get("library") if isinstance(ex, Mapping) else None
        if lib is not None:
            assert isinstance(p, Mapping) and isinstance(ex, Mapping)
            name = ex.get("delegate") or p.get("delegate")
            raise BundleError(
                f"{where}: $.partitions[{i}].executor.library names a library to load "
                f"({str(lib)[:80]!r}); a bundle is data and cannot choose code: remove the key, "
                f"and give the library when running (--delegate-library {name}=PATH, "
                "delegate_libraries=, or the delegate's file on the search path)"
            )


def arena_from_doc(doc: Any, plan: Plan, where: str = "arena.json") -> Arena:
    """Validate an arena document against its schema and against ``plan`` (no conflicts)."""
    check_format(doc, ARENA_FORMAT, where)
    _json.validate(doc, "bundle_arena.schema.json", where)
    arena = Arena(
        alignment=doc["alignment"],
        memories=doc["memories"],
        buffers=tuple(
            ArenaBuffer(
                b["tensor"], b["scope"], b["partition"], b["memory"], b["offset"], b["size"]
            )
            for b in doc["buffers"]
        ),
        doc=doc,
    )
    check_arena(arena, plan, where)
    return arena


def check_format(
    doc: Any, fmt: str, where: str, versions: tuple[int, ...] = (BUNDLE_VERSION,)
) -> None:
    """Refuse a document that is not a JSON object of format ``fmt`` in one of ``versions``."""
    if not isinstance(doc, dict):
        raise BundleError(f"{where}: expected a JSON object, found {type(doc).__name__}")
    if doc.get("format") != fmt:
        raise BundleError(f"{where}: format is {doc.get('format')!r}, expected {fmt!r}")
    version = doc.get("version")
    if isinstance(version, bool) or version not in versions:
        known = " and ".join(str(v) for v in versions)
        raise BundleError(
            f"{where}: {fmt} version {version!r} is not supported (this edgepart reads version "
            f"{known}); re-create the bundle with this edgepart or upgrade it"
        )


def _shape(v: Any) -> tuple[int, ...] | None:
    return None if v is None else tuple(int(x) for x in v)


def _model_tensor(d: Mapping[str, Any]) -> ModelTensor:
    return ModelTensor(
        d["tensor"],
        d["name"],
        d["tensor_name"],
        d["dtype"],
        _shape(d["shape"]) or (),
        _shape(d["shape_signature"]),
        d["quantization"],
    )


def _tensor_ref(d: Mapping[str, Any]) -> TensorRef:
    return TensorRef(
        d["tensor"],
        d["index"],
        d["name"],
        d["tensor_name"],
        d["dtype"],
        _shape(d["shape"]) or (),
        _shape(d["shape_signature"]),
    )


def _partition(d: Mapping[str, Any]) -> PartitionEntry:
    ex = d["executor"]
    executor = (
        None
        if ex is None
        else ExecutorSpec(ex["kind"], ex.get("delegate"), dict(ex.get("options", {})))
    )
    return PartitionEntry(
        id=d["id"],
        ops=tuple(d["ops"]),
        file_ops=tuple(d["file_ops"]),
        processor=d["processor"],
        unit=d["unit"],
        delegate=d["delegate"],
        executor=executor,
        threads=d["threads"],
        file=d["file"],
        signature_key=d["signature_key"],
        inputs=tuple(_tensor_ref(t) for t in d["inputs"]),
        outputs=tuple(_tensor_ref(t) for t in d["outputs"]),
        depends_on=tuple(d["depends_on"]),
        predicted=d.get("predicted"),
        extra=d.get("extra"),
    )


def _tensor_doc(t: TensorRef | ModelTensor) -> dict[str, Any]:
    return {
        "tensor": t.tensor,
        "name": t.name,
        "tensor_name": t.tensor_name,
        "dtype": t.dtype,
        "shape": list(t.shape),
        "shape_signature": None if t.shape_signature is None else list(t.shape_signature),
    }


def _model_tensor_doc(t: ModelTensor) -> dict[str, Any]:
    return {**_tensor_doc(t), "quantization": t.quantization}


def _partition_doc(p: PartitionEntry) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": p.id,
        "ops": list(p.ops),
        "file_ops": list(p.file_ops),
        "processor": p.processor,
        "unit": p.unit,
        "delegate": p.delegate,
        "executor": None if p.executor is None else p.executor.to_doc(),
        "threads": p.threads,
        "file": p.file,
        "signature_key": p.signature_key,
        "inputs": [{**_tensor_doc(t), "index": t.index} for t in p.inputs],
        "outputs": [{**_tensor_doc(t), "index": t.index} for t in p.outputs],
        "depends_on": list(p.depends_on),
    }
    if p.predicted is not None:
        doc["predicted"] = dict(p.predicted)
    if p.extra is not None:
        doc["extra"] = dict(p.extra)
    return doc
