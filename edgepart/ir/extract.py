"""Extract a convex set of ops into a standalone model.

The result has the set's boundary tensors as inputs and outputs (ascending by original tensor
index), a signature naming them, the subgraphs its control-flow ops call (renumbered), only the
buffers and op codes it uses, and the metadata a runtime needs (``min_runtime_version``,
``CONVERSION_METADATA``, ``reduced_precision_support``). ``model_control_dependencies`` is not
carried: its node ids are those of the source subgraph.

State must not be split: a variable tensor or a resource used both inside and outside the set
would be two different states in two interpreters, so such a cut is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from edgepart.errors import PlanError, UsageError
from edgepart.ir import analysis
from edgepart.ir.graph import BufferTable, Model, Subgraph
from edgepart.ir.state import state_groups
from edgepart.ir.values import Csr, Metadata, OpCode, Options, SignatureDef
from edgepart.ir.verify import calling_ops

__all__ = ["KEPT_METADATA", "extract"]

KEPT_METADATA = ("min_runtime_version", "CONVERSION_METADATA", "reduced_precision_support")


def extract(
    model: Model,
    ops: Sequence[int],
    *,
    subgraph: int = 0,
    signature_key: str | None = None,
    clone_constant_producers: bool = True,
) -> Model:
    """A standalone model computing ``ops`` of ``model.subgraphs[subgraph]``.

    The result's ``extra`` records where everything came from: ``source_subgraph``,
    ``source_ops`` (in execution order) and ``source_tensors`` (the original index of each new
    tensor), so callers can route boundary tensors between pieces.

    Parameters
    ----------
    model
        The source model.
    ops
        Op indices forming a convex set (no path leaves the set and comes back).
    subgraph
        Which subgraph the ops belong to.
    signature_key
        Key of the new model's signature; defaults to the source subgraph's signature key,
        else ``"serving_default"``.
    clone_constant_producers
        Ops that only transform constants (DEQUANTIZE of fp16 weights, DENSIFY of sparse
        weights) are copied into the piece that reads their output instead of making that
        output a piece input: runtimes fold them into the weights, and a weight arriving as
        a runtime input would defeat that (XNNPACK refuses such partitions).

    Raises
    ------
    UsageError
        If the set is empty or out of range.
    PlanError
        If the set is not convex, only decompresses weights, or would split state.
    """
    sg = model.subgraphs[subgraph]
    op_ids = np.unique(np.asarray(ops, dtype=np.int64))
    if len(op_ids) == 0:
        raise UsageError("cannot extract an empty set of ops")
    if op_ids[0] < 0 or op_ids[-1] >= sg.num_ops:
        raise UsageError(f"op index out of range: subgraph {subgraph} has {sg.num_ops} ops")
    witness = analysis.convexity_violation(sg, op_ids.tolist())
    if witness is not None:
        a, mid, b = witness
        raise PlanError(
            f"ops are not convex: a path leaves the set at {sg.describe_op(a)}, passes "
            f"{sg.describe_op(mid)} and re-enters at {sg.describe_op(b)}; add the ops between"
        )
    order = analysis.topological_order(sg)
    member = np.zeros(sg.num_ops, dtype=bool)
    member[op_ids] = True
    if clone_constant_producers:
        member = _with_constant_producers(sg, member)
        if not member.any():
            raise PlanError(
                "the ops only decompress weights (DEQUANTIZE/DENSIFY of constants) that other "
                "ops consume; extract those consumers instead"
            )
    op_ids = order[member[order]]
    inputs, outputs = analysis.boundary_tensors(sg, op_ids.tolist())
    if clone_constant_producers:
        # weights are recomputed where they are read, never passed between pieces
        prod = analysis.producers(sg)
        folded = analysis.constant_producers(sg)
        model_outputs = set(sg.outputs.tolist())
        outputs = [t for t in outputs if not folded[prod[t]] or t in model_outputs]
    _check_state(model, subgraph, member)
    inputs = [t for t in inputs if not sg.tensor_is_variable[t]]

    used = np.concatenate(
        [
            sg.op_inputs.take(op_ids).idx,
            sg.op_outputs.take(op_ids).idx,
            sg.op_intermediates.take(op_ids).idx,
        ]
    ).astype(np.int64)
    tensor_ids = np.unique(used[used >= 0])

    # Subgraphs called by the set, transitively, keep their relative order after the new main.
    called = _called_subgraphs(model, sg, op_ids)
    sub_map = {subgraph: 0}
    for k, s in enumerate(called, start=1):
        sub_map[s] = k

    remap = _Remapper(model, sub_map)
    main = remap.subgraph(sg, op_ids, tensor_ids, inputs, outputs)
    rest = [
        remap.subgraph(
            model.subgraphs[s],
            np.arange(model.subgraphs[s].num_ops),
            np.arange(model.subgraphs[s].num_tensors),
            model.subgraphs[s].inputs.tolist(),
            model.subgraphs[s].outputs.tolist(),
        )
        for s in called
    ]
    key = signature_key or _source_signature_key(model, subgraph) or "serving_default"
    tmap = {int(t): i for i, t in enumerate(tensor_ids.tolist())}
    sig = SignatureDef(
        key,
        0,
        _signature_names(model, sg, subgraph, inputs, tmap, "inputs"),
        _signature_names(model, sg, subgraph, outputs, tmap, "outputs"),
    )
    metadata = []
    for md in model.metadata:
        if md.name in KEPT_METADATA:
            metadata.append((md.name, remap.buffer(md.buffer)))
    buffers, opcodes = remap.tables()
    return Model(
        extra={
            "source_subgraph": subgraph,
            "source_ops": tuple(op_ids.tolist()),
            "source_tensors": tuple(tensor_ids.tolist()),
        },
        subgraphs=(main.finish(opcodes, buffers), *(r.finish(opcodes, buffers) for r in rest)),
        opcodes=opcodes,
        buffers=buffers,
        metadata=tuple(Metadata(n, b) for n, b in metadata),
        signature_defs=(sig,),
        description=model.description,
        version=model.version,
        source=f"{model.source or 'model'}[subgraph {subgraph}, {len(op_ids)} ops]",
    )


def _with_constant_producers(sg: Subgraph, member: np.ndarray) -> np.ndarray:
    """``member`` plus the weight-decompressing ops (DEQUANTIZE/DENSIFY chains) its other ops
    read, minus those whose outputs nothing in the set (or the model) reads."""
    foldable = analysis.constant_producers(sg)
    prod = analysis.producers(sg)
    makes_output = np.zeros(sg.num_ops, dtype=bool)
    out_prod = prod[sg.outputs.astype(np.int64)]
    makes_output[out_prod[out_prod >= 0]] = True
    # keep only what real compute (or the model's outputs) needs; weights are added back below
    member = member & (~foldable | makes_output)
    frontier = np.flatnonzero(member)
    while len(frontier):
        reads = sg.op_inputs.take(frontier).idx.astype(np.int64)
        reads = reads[reads >= 0]
        p = prod[reads]
        p = np.unique(p[p >= 0])
        new = p[foldable[p] & ~member[p]]
        member[new] = True
        frontier = new
    return member


def _check_state(model: Model, subgraph: int, member: np.ndarray) -> None:
    """Refuse cuts that would split shared state (resource variables, variable tensors)."""
    groups = state_groups(model, subgraph)
    if not (groups >= 0).any():
        return
    sg = model.subgraphs[subgraph]
    for g in np.unique(groups[groups >= 0]).tolist():
        ops = np.flatnonzero(groups == g)
        inside = member[ops]
        if inside.any() and not inside.all():
            a, b = int(ops[inside][0]), int(ops[~inside][0])
            raise PlanError(
                f"the cut splits state: {sg.describe_op(a)} and {sg.describe_op(b)} use the "
                "same resource variable or variable tensor, which lives in one interpreter; "
                "keep them in one piece"
            )


def _called_subgraphs(model: Model, sg: Subgraph, op_ids: np.ndarray) -> list[int]:
    seen: set[int] = set()
    calling = set(calling_ops(sg).tolist())
    stack = [r for i in op_ids.tolist() if i in calling for r in sg.op(i).subgraph_refs]
    while stack:
        s = stack.pop()
        if s in seen:
            continue
        seen.add(s)
        callee = model.subgraphs[s]
        stack.extend(r for i in calling_ops(callee).tolist() for r in callee.op(i).subgraph_refs)
    return sorted(seen)


def _source_signature_key(model: Model, subgraph: int) -> str | None:
    keys = [s.key for s in model.signature_defs if s.subgraph == subgraph]
    return keys[0] if len(keys) == 1 else None


def _signature_names(
    model: Model,
    sg: Subgraph,
    subgraph: int,
    tensors: Sequence[int],
    tmap: dict[int, int],
    side: str,
) -> tuple[tuple[str, int], ...]:
    """Signature names: the source signature's where the tensor is a model I/O, else its name."""
    known: dict[int, str] = {}
    for s in model.signature_defs:
        if s.subgraph == subgraph:
            for name, t in (*s.inputs, *s.outputs):
                known.setdefault(t, name)
    out: list[tuple[str, int]] = []
    taken: set[str] = set()
    for t in tensors:
        name = known.get(t) or sg.tensor_names[t] or f"tensor_{t}"
        if name in taken:
            name = f"{name}_{t}"
        taken.add(name)
        out.append((name, tmap[t]))
    return tuple(out)


class _Remapper:
    """Renumbers buffers, op codes and subgraph references into the new model."""

    def __init__(self, model: Model, sub_map: dict[int, int]) -> None:
        self.model = model
        self.sub_map = sub_map
        self.buffer_map: dict[int, int] = {}
        self.buffer_ids: list[int] = [-1]  # new buffer 0 is the empty sentinel
        self.opcode_map: dict[int, int] = {}
        self.opcodes: list[OpCode] = []

    def buffer(self, b: int) -> int:
        if b <= 0 or not self.model.buffers.present[b]:
            return 0
        if b not in self.buffer_map:
            self.buffer_map[b] = len(self.buffer_ids)
            self.buffer_ids.append(b)
        return self.buffer_map[b]

    def opcode(self, c: int) -> int:
        if c not in self.opcode_map:
            self.opcode_map[c] = len(self.opcodes)
            self.opcodes.append(self.model.opcodes[c])
        return self.opcode_map[c]

    def options(self, o: Options | None) -> Options | None:
        if o is None:
            return None
        changes: dict[str, Any] = {}
        for k, v in o.items():
            if k.endswith("subgraph_index") and isinstance(v, int) and v in self.sub_map:
                changes[k] = self.sub_map[v]
        return o.replace(**changes) if changes else o

    def subgraph(
        self,
        sg: Subgraph,
        op_ids: np.ndarray,
        tensor_ids: np.ndarray,
        inputs: Sequence[int],
        outputs: Sequence[int],
    ) -> _PendingSubgraph:
        tmap = np.full(sg.num_tensors + 1, -1, dtype=np.int64)  # slot -1 keeps -1
        tmap[tensor_ids] = np.arange(len(tensor_ids))

        def ref(c: Csr) -> Csr:
            sub = c.take(op_ids)
            return Csr(sub.ptr, tmap[sub.idx.astype(np.int64)].astype(np.int32))

        ops = op_ids.tolist()
        tens = tensor_ids.tolist()
        new_buf = [
            self.buffer(int(b)) if sg.tensor_is_constant[t] else 0
            for t, b in zip(tens, sg.tensor_buffer[tensor_ids].tolist(), strict=True)
        ]
        return _PendingSubgraph(
            dict(
                name=sg.name,
                inputs=tmap[np.asarray(inputs, dtype=np.int64)].astype(np.int32),
                outputs=tmap[np.asarray(outputs, dtype=np.int64)].astype(np.int32),
                op_opcode=np.asarray(
                    [self.opcode(int(c)) for c in sg.op_opcode[op_ids].tolist()], dtype=np.int32
                ),
                op_inputs=ref(sg.op_inputs),
                op_outputs=ref(sg.op_outputs),
                op_intermediates=ref(sg.op_intermediates),
                op_options=tuple(self.options(sg.op_options[i]) for i in ops),
                op_options2=tuple(self.options(sg.op_options2[i]) for i in ops),
                op_custom_options=tuple(sg.op_custom_options[i] for i in ops),
                op_extra=tuple(
                    {k: v for k, v in sg.op_extra[i].items() if k != "large_custom_options"}
                    for i in ops
                ),
                tensor_dtype=sg.tensor_dtype[tensor_ids],
                tensor_buffer=np.asarray(new_buf, dtype=np.int64),
                tensor_shape=sg.tensor_shape.take(tensor_ids),
                tensor_signature=sg.tensor_signature.take(tensor_ids),
                tensor_has_signature=sg.tensor_has_signature[tensor_ids],
                tensor_is_variable=sg.tensor_is_variable[tensor_ids],
                tensor_has_rank=sg.tensor_has_rank[tensor_ids],
                tensor_names=tuple(sg.tensor_names[t] for t in tens),
                tensor_quantization=tuple(sg.tensor_quantization[t] for t in tens),
                tensor_sparsity=tuple(sg.tensor_sparsity[t] for t in tens),
                tensor_extra=tuple(sg.tensor_extra[t] for t in tens),
                debug_metadata_index=-1,
            )
        )

    def tables(self) -> tuple[BufferTable, tuple[OpCode, ...]]:
        src = self.model.buffers
        ids = np.asarray(self.buffer_ids[1:], dtype=np.int64)
        mems = (*src.mems, b"")
        empty = len(mems) - 1
        buffers = BufferTable(
            mems=mems,
            mem=np.concatenate([[empty], src.mem[ids]]).astype(np.int32),
            start=np.concatenate([[0], src.start[ids]]).astype(np.int64),
            length=np.concatenate([[0], src.length[ids]]).astype(np.int64),
            external=np.zeros(len(ids) + 1, dtype=bool),
        )
        return buffers, tuple(self.opcodes)


class _PendingSubgraph:
    """Subgraph columns waiting for the final buffer and op-code tables."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def finish(self, opcodes: tuple[OpCode, ...], buffers: BufferTable) -> Subgraph:
        return Subgraph(opcodes=opcodes, buffers=buffers, **self.fields)
