"""From a source model and a partition spec to a plan entry and a standalone ``.tflite``."""

from __future__ import annotations

import hashlib
import heapq
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgepart.bundle.format import ModelTensor, PartitionEntry, TensorRef
from edgepart.errors import ModelFormatError, PassError, PlanError, UnsupportedOpError, UsageError
from edgepart.fileio import read_regular, sha256_regular
from edgepart.ir.analysis import constant_producers, convexity_violation, producers
from edgepart.ir.dtypes import DType
from edgepart.ir.extract import extract
from edgepart.tflite.reader import read_model_bytes
from edgepart.tflite.writer import write_model

if TYPE_CHECKING:
    from edgepart.bundle.write import PartitionSpec
    from edgepart.ir.graph import Model, Subgraph

__all__ = ["PartSource", "dependency_order", "dtype_name", "extract_partition", "model_tensors"]

MODEL_LIMIT = 1 << 32
"""Largest model file read whole (a flatbuffer addresses at most 2 GiB; larger models keep
their weights outside it)."""


@dataclass(frozen=True)
class PartSource:
    """The source model plus what the manifest records about it."""

    model: Model
    name: str
    sha256: str
    nbytes: int
    path: str | None

    @staticmethod
    def open(model: Model | str | os.PathLike[str], source_path: Any = None) -> PartSource:
        """Read a path (hashing the file) or describe an in-memory :class:`Model`."""
        if isinstance(model, (str, os.PathLike)):
            source_path = model
            path = Path(model)
            data = read_regular(
                path, what=".tflite model", limit=MODEL_LIMIT, error=ModelFormatError
            )
            loaded = read_model_bytes(data, source=str(path))
            return PartSource(
                loaded, path.name, hashlib.sha256(data).hexdigest(), len(data), str(path.resolve())
            )
        if source_path is None and model.source and os.path.isfile(model.source):
            source_path = model.source
        if source_path is not None:
            path = Path(source_path)
            digest, size = sha256_regular(path, what=".tflite model", error=ModelFormatError)
            return PartSource(model, path.name, digest, size, str(path.resolve()))

        data = write_model(model)
        name = Path(model.source).name if model.source else "model.tflite"
        return PartSource(model, name, hashlib.sha256(data).hexdigest(), len(data), None)


def dtype_name(sg: Subgraph, t: int, role: str) -> str:
    """NumPy dtype name of tensor ``t``; refuses types a boundary cannot carry."""
    dt = DType(int(sg.tensor_dtype[t]))
    if dt.numpy is None:
        raise UnsupportedOpError(
            f"{sg.describe_tensor(t)} is a {role} of type {dt.name}, which has no NumPy "
            "equivalent and cannot be passed between partitions or in and out of a bundle; "
            "keep its producer and consumers in one partition"
        )
    return str(dt.numpy.name)


def _signature(sg: Subgraph, t: int) -> tuple[int, ...] | None:
    return sg.tensor_signature.row_tuple(t) if sg.tensor_has_signature[t] else None


def model_tensors(
    model: Model, subgraph: int
) -> tuple[str | None, tuple[ModelTensor, ...], tuple[ModelTensor, ...]]:
    """(signature key or None, inputs, outputs) of the source subgraph, in subgraph order."""
    sg = model.subgraphs[subgraph]
    sigs = [s for s in model.signature_defs if s.subgraph == subgraph]
    key = sigs[0].key if sigs else None
    names: dict[int, str] = {}
    for s in sigs[:1]:
        for name, t in (*s.inputs, *s.outputs):
            names.setdefault(t, name)

    def entry(t: int, role: str) -> ModelTensor:
        q = sg.tensor_quantization[t]
        quant = None
        if q is not None and not q.is_empty and len(q.scale):
            quant = {
                "scales": [float(x) for x in q.scale],
                "zero_points": [int(x) for x in q.zero_point],
                "quantized_dimension": int(q.quantized_dimension),
            }
        return ModelTensor(
            tensor=t,
            name=names.get(t, sg.tensor_names[t]),
            tensor_name=sg.tensor_names[t],
            dtype=dtype_name(sg, t, role),
            shape=sg.tensor_shape.row_tuple(t),
            shape_signature=_signature(sg, t),
            quantization=quant,
        )

    inputs = tuple(entry(int(t), "model input") for t in sg.inputs.tolist())
    outputs = tuple(entry(int(t), "model output") for t in sg.outputs.tolist())
    for mt in outputs:
        if sg.tensor_is_constant[mt.tensor]:
            raise UnsupportedOpError(
                f"{sg.describe_tensor(mt.tensor)} is a constant model output; no partition "
                "computes it, so bundles cannot carry it"
            )
    return key, inputs, outputs


def extract_partition(
    src: PartSource,
    subgraph: int,
    spec: PartitionSpec,
    pid: str,
    earlier: list[PartitionEntry],
) -> tuple[PartitionEntry, bytes]:
    """Extract ``spec.ops`` as a standalone model and describe it as a plan entry.

    The boundary is read from the extracted piece itself (its ``source_tensors`` provenance):
    :func:`~edgepart.ir.extract.extract` copies weight-decompressing ops (DEQUANTIZE/DENSIFY
    of constants) into every piece that reads their output, so a piece's file may hold ops
    placed elsewhere (``file_ops``) and its boundary is not that of ``spec.ops`` alone.
    """
    sg = src.model.subgraphs[subgraph]
    try:
        piece = extract(src.model, spec.ops, subgraph=subgraph)
    except (UsageError, PlanError) as err:
        raise type(err)(f"partition {pid}: {err}") from None
    blob = write_model(piece)
    # the signature as written is what a runtime sees: read it back from the bytes (which
    # also checks that extract and the writer made a valid model)
    try:
        sig = read_model_bytes(blob, source=pid).signature_defs[0]
    except ModelFormatError as err:
        raise PassError(
            f"partition {pid}: extract then write_model made a model that does not read back "
            f"({err}); this is an edgepart bug: please report it with the source model"
        ) from None
    extra = piece.extra or {}
    origin = list(extra["source_tensors"])
    names = {local: name for name, local in (*sig.inputs, *sig.outputs)}

    def refs(locals_: Any, role: str) -> tuple[TensorRef, ...]:
        out = []
        for local in locals_.tolist():
            t = int(origin[local])
            out.append(
                TensorRef(
                    tensor=t,
                    index=int(local),
                    name=names.get(local, sg.tensor_names[t]),
                    tensor_name=sg.tensor_names[t],
                    dtype=dtype_name(sg, t, role),
                    shape=sg.tensor_shape.row_tuple(t),
                    shape_signature=_signature(sg, t),
                )
            )
        return tuple(out)

    inputs = refs(piece.main.inputs, f"partition {pid} input")
    producers = {t.tensor: e.id for e in earlier for t in e.outputs}
    deps = {producers[t.tensor] for t in inputs if t.tensor in producers}
    entry = PartitionEntry(
        id=pid,
        ops=tuple(spec.ops),
        file_ops=tuple(int(o) for o in extra["source_ops"]),
        processor=spec.processor,
        unit=spec.unit,
        delegate=spec.delegate or "xnnpack",
        executor=spec.executor if not isinstance(spec.executor, str) else None,
        threads=spec.threads,
        file=f"partitions/{pid}.tflite",
        signature_key=sig.key,
        inputs=inputs,
        outputs=refs(piece.main.outputs, f"partition {pid} output"),
        depends_on=tuple(e.id for e in earlier if e.id in deps),
        predicted=None if spec.predicted is None else dict(spec.predicted),
        extra=None if spec.extra is None else dict(spec.extra),
    )
    return entry, blob


def dependency_order(sg: Subgraph, parts: Sequence[Sequence[int]]) -> list[int]:
    """Indices of ``parts`` (op sets) in dependency order (stable: ties keep the given order).

    Refuses ops placed twice or not at all, and sets that depend on each other (naming a
    non-convexity witness when that is the cause).
    """
    owner: dict[int, int] = {}
    for i, ops in enumerate(parts):
        for op in ops:
            if not 0 <= op < sg.num_ops:
                raise PlanError(f"op index {op} is out of range: subgraph has {sg.num_ops} ops")
            if op in owner:
                raise PlanError(
                    f"{sg.describe_op(op)} is in two partitions (specs {owner[op]} and {i})"
                )
            owner[op] = i
    if len(owner) != sg.num_ops:
        missing = next(o for o in range(sg.num_ops) if o not in owner)
        raise PlanError(f"{sg.describe_op(missing)} is in no partition; place every op")
    prod = producers(sg)
    # weight decompression is copied into its readers by extract: it orders nothing
    folded = constant_producers(sg)
    deps: list[set[int]] = [set() for _ in parts]
    for op, i in owner.items():
        for t in sg.op_inputs.row(op).tolist():
            if t < 0 or prod[t] < 0 or folded[prod[t]]:
                continue
            if owner[int(prod[t])] != i:
                deps[i].add(owner[int(prod[t])])
    indeg = [len(d) for d in deps]
    users: list[list[int]] = [[] for _ in parts]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    ready = [i for i in range(len(parts)) if indeg[i] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j in users[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(ready, j)
    if len(order) != len(parts):
        stuck = [i for i in range(len(parts)) if indeg[i] > 0]
        for i in stuck:  # a non-convex spec is the usual cause: name its witness path
            w = convexity_violation(sg, parts[i])
            if w is not None:
                raise PlanError(
                    f"partition spec {i}: ops are not convex: a path leaves the set at "
                    f"{sg.describe_op(w[0])}, passes {sg.describe_op(w[1])} and re-enters at "
                    f"{sg.describe_op(w[2])}; add the ops between"
                )
        raise PlanError(
            f"partition specs {stuck} depend on each other in a cycle; merge them or cut "
            "the graph differently"
        )
    return order
