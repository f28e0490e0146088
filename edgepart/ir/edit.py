"""Edit one subgraph of a model: replace ops by op sequences, append tensors and constants.

:class:`SubgraphEditor` is the building block of graph rewrites that keep the rest of the model
as it is (tensor parallelism's splits, :mod:`edgepart.ir.split`). Its guarantees:

* **Stable tensor indices.** Every existing tensor keeps its index; new tensors are appended
  after them. Model inputs, outputs, signatures and every tensor a rewrite does not touch keep
  their meaning, so plans and checks written against the source model still name the same
  tensors.
* **Ops in place.** A replaced op's sequence takes its position in execution order; an empty
  sequence deletes the op. :attr:`EditResult.op_map` maps each source op to its new index
  (``-1`` when replaced) and :attr:`EditResult.new_ops` gives each replacement's new indices.
* **No dead weights.** Constants that no op of any subgraph reads after the edit (weights a
  rewrite sliced into new constants) lose their data, so a written model does not carry both
  copies; the tensor entry stays, empty, to keep indices stable.
* **Shared tables.** New op codes and buffers are appended to the model's tables; every
  subgraph of the result shares them, as the reader's do.

The editor is permissive like :mod:`edgepart.ir.builder`; check results with
:func:`edgepart.ir.verify.check_model` (the split rewrites do).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgepart.ir.builder import default_options
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import BufferTable, LazySeq, Model, Subgraph
from edgepart.ir.values import Csr, OpCode, Options, Quantization
from edgepart.schema import opnames
from edgepart.schema.opnames import options_type_for

__all__ = ["EditResult", "NewOp", "SubgraphEditor"]


@dataclass(frozen=True)
class NewOp:
    """An op to insert: its code, tensors (``-1`` for an omitted optional input) and options."""

    opcode: OpCode
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: Options | None = None
    options2: Options | None = None


@dataclass(frozen=True, eq=False)
class EditResult:
    """The edited model and where the ops went.

    ``op_map[i]`` is the new index of source op ``i`` (``-1`` if it was replaced or deleted);
    ``new_ops[i]`` lists the new indices of the ops that replaced source op ``i``, in order.
    """

    model: Model
    subgraph: int
    op_map: np.ndarray
    new_ops: Mapping[int, tuple[int, ...]]
    num_source_tensors: int


@dataclass
class _NewTensor:
    name: str
    dtype: int
    shape: tuple[int, ...]
    signature: tuple[int, ...] | None
    buffer: int
    quantization: Quantization | None


class SubgraphEditor:
    """Collects edits of ``model.subgraphs[subgraph]``; :meth:`build` makes the new model.

    Parameters
    ----------
    model
        The source model (not modified).
    subgraph
        The subgraph to edit.
    """

    def __init__(self, model: Model, subgraph: int = 0) -> None:
        self.model = model
        self.subgraph = subgraph
        self.sg: Subgraph = model.subgraphs[subgraph]
        self._tensors: list[_NewTensor] = []
        self._blobs: list[np.ndarray] = []
        self._opcodes: list[OpCode] = list(model.opcodes)
        self._replace: dict[int, tuple[NewOp, ...]] = {}

    # ------------------------------------------------------------------ tensors
    @property
    def num_tensors(self) -> int:
        """Tensors of the edited subgraph so far (source tensors plus appended ones)."""
        return self.sg.num_tensors + len(self._tensors)

    def tensor(
        self,
        name: str,
        dtype: DType | int,
        shape: Sequence[int],
        *,
        signature: Sequence[int] | None = None,
        quantization: Quantization | None = None,
    ) -> int:
        """Append a tensor without data (an activation); return its index."""
        return self._append(name, int(dtype), shape, signature, 0, quantization)

    def constant(
        self,
        name: str,
        value: np.ndarray,
        *,
        dtype: DType | int | None = None,
        quantization: Quantization | None = None,
    ) -> int:
        """Append a constant holding ``value`` (stored little-endian); return its index."""
        value = np.asarray(value)
        dt = DType.from_numpy(value.dtype) if dtype is None else DType(dtype)
        little = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
        self._blobs.append(little.reshape(-1).view(np.uint8))
        buf = len(self.model.buffers) + len(self._blobs) - 1
        return self._append(name, int(dt), value.shape, None, buf, quantization)

    def _append(
        self,
        name: str,
        dtype: int,
        shape: Sequence[int],
        signature: Sequence[int] | None,
        buffer: int,
        quantization: Quantization | None,
    ) -> int:
        self._tensors.append(
            _NewTensor(
                name,
                dtype,
                tuple(int(d) for d in shape),
                None if signature is None else tuple(int(d) for d in signature),
                buffer,
                quantization,
            )
        )
        return self.num_tensors - 1

    def shape(self, t: int) -> tuple[int, ...]:
        """Shape of a source or appended tensor."""
        if t < self.sg.num_tensors:
            return self.sg.tensor_shape.row_tuple(t)
        return self._tensors[t - self.sg.num_tensors].shape

    # ------------------------------------------------------------------ ops
    def opcode(self, name: str, version: int = 1) -> OpCode:
        """The op code of builtin ``name`` at ``version`` (added to the table by :meth:`build`)."""
        return OpCode(opnames.builtin_code(name), None, version)

    def op(
        self,
        op: str | OpCode,
        inputs: Sequence[int],
        outputs: Sequence[int],
        *,
        options: Options | Mapping[str, Any] | None = None,
        version: int = 1,
        options2: Options | None = None,
    ) -> NewOp:
        """An op to pass to :meth:`replace`: a builtin name (options completed with the
        schema's defaults) or an existing op code (options taken as given)."""
        if isinstance(op, OpCode):
            code = op
            if options is not None and not isinstance(options, Options):
                raise TypeError("give Options with an explicit op code")
        else:
            code = self.opcode(op, version)
            otype = options_type_for(op)
            if options is not None and not isinstance(options, Options):
                if otype is None:
                    raise KeyError(f"{op} carries no builtin options")
                options = default_options(otype, **dict(options))
            elif options is None and otype is not None:
                options = default_options(otype)
        if isinstance(options, Options) and opnames.is_options2(options.type):
            options, options2 = None, options
        return NewOp(
            code, tuple(int(t) for t in inputs), tuple(int(t) for t in outputs), options, options2
        )

    def replace(self, op: int, ops: Sequence[NewOp]) -> None:
        """Put ``ops`` (in order) where source op ``op`` was; ``[]`` deletes it."""
        if not 0 <= op < self.sg.num_ops:
            raise IndexError(f"op {op} of {self.sg.num_ops}")
        if op in self._replace:
            raise ValueError(f"{self.sg.describe_op(op)} is already replaced")
        self._replace[op] = tuple(ops)

    def replaced(self, op: int) -> bool:
        return op in self._replace

    # ------------------------------------------------------------------ build
    def build(self) -> EditResult:
        """The edited model (the source model is unchanged)."""
        sg, model = self.sg, self.model
        code_index: dict[OpCode, int] = {}
        for k, c in enumerate(self._opcodes):
            code_index.setdefault(c, k)
        for ops in self._replace.values():
            for o in ops:
                if o.opcode not in code_index:
                    code_index[o.opcode] = len(self._opcodes)
                    self._opcodes.append(o.opcode)
        opcodes = tuple(self._opcodes)

        rows: list[tuple[Any, ...]] = []  # (opcode, ins, outs, inter, opt, opt2, custom, extra)
        op_map = np.full(sg.num_ops, -1, dtype=np.int64)
        new_ops: dict[int, tuple[int, ...]] = {}
        ins_all, outs_all, inter_all = sg.op_inputs, sg.op_outputs, sg.op_intermediates
        for i in range(sg.num_ops):
            rep = self._replace.get(i)
            if rep is None:
                op_map[i] = len(rows)
                rows.append(
                    (
                        int(sg.op_opcode[i]),
                        ins_all.row_tuple(i),
                        outs_all.row_tuple(i),
                        inter_all.row_tuple(i),
                        sg.op_options[i],
                        sg.op_options2[i],
                        sg.op_custom_options[i],
                        sg.op_extra[i],
                    )
                )
                continue
            first = len(rows)
            for o in rep:
                rows.append(
                    (code_index[o.opcode], o.inputs, o.outputs, (), o.options, o.options2, None, {})
                )
            new_ops[i] = tuple(range(first, len(rows)))

        buffers = self._buffers()
        n_old = sg.num_tensors
        new = self._tensors

        def extend(old: Sequence[Any], pick: Any) -> LazySeq[Any]:
            return LazySeq(
                n_old + len(new), lambda t: old[t] if t < n_old else pick(new[t - n_old])
            )

        tensor_buffer = np.concatenate(
            [sg.tensor_buffer, np.asarray([r.buffer for r in new], dtype=np.int64)]
        )
        edited = Subgraph(
            name=sg.name,
            inputs=sg.inputs,
            outputs=sg.outputs,
            op_opcode=np.asarray([r[0] for r in rows], dtype=np.int32),
            op_inputs=Csr.from_rows([r[1] for r in rows]),
            op_outputs=Csr.from_rows([r[2] for r in rows]),
            op_intermediates=Csr.from_rows([r[3] for r in rows]),
            op_options=tuple(r[4] for r in rows),
            op_options2=tuple(r[5] for r in rows),
            op_custom_options=tuple(r[6] for r in rows),
            op_extra=tuple(r[7] for r in rows),
            tensor_dtype=np.concatenate(
                [sg.tensor_dtype, np.asarray([r.dtype for r in new], dtype=np.int8)]
            ),
            tensor_buffer=tensor_buffer,
            tensor_shape=_concat_csr(sg.tensor_shape, [r.shape for r in new]),
            tensor_signature=_concat_csr(sg.tensor_signature, [r.signature or () for r in new]),
            tensor_has_signature=np.concatenate(
                [sg.tensor_has_signature, np.asarray([r.signature is not None for r in new])]
            ).astype(bool),
            tensor_is_variable=np.concatenate(
                [sg.tensor_is_variable, np.zeros(len(new), dtype=bool)]
            ),
            tensor_has_rank=np.concatenate([sg.tensor_has_rank, np.ones(len(new), dtype=bool)]),
            tensor_names=extend(sg.tensor_names, lambda r: r.name),
            tensor_quantization=extend(sg.tensor_quantization, lambda r: r.quantization),
            tensor_sparsity=extend(sg.tensor_sparsity, lambda r: None),
            tensor_extra=extend(sg.tensor_extra, lambda r: {}),
            opcodes=opcodes,
            buffers=buffers,
            debug_metadata_index=sg.debug_metadata_index,
        )
        subgraphs = [
            edited
            if s == self.subgraph
            else dataclasses.replace(g, opcodes=opcodes, buffers=buffers)
            for s, g in enumerate(model.subgraphs)
        ]
        subgraphs = _drop_dead_weights(model, subgraphs, self.subgraph, n_old)
        result = dataclasses.replace(
            model,
            subgraphs=tuple(subgraphs),
            opcodes=opcodes,
            buffers=subgraphs[0].buffers,
        )
        return EditResult(result, self.subgraph, op_map, new_ops, n_old)

    def _buffers(self) -> BufferTable:
        src = self.model.buffers
        k = len(self._blobs)
        if k == 0:
            return src
        n_mem = len(src.mems)
        return BufferTable(
            mems=(*src.mems, *self._blobs),
            mem=np.concatenate([src.mem, np.arange(n_mem, n_mem + k)]).astype(np.int32),
            start=np.concatenate([src.start, np.zeros(k, dtype=np.int64)]).astype(np.int64),
            length=np.concatenate(
                [src.length, np.asarray([len(b) for b in self._blobs], dtype=np.int64)]
            ).astype(np.int64),
            external=np.concatenate([src.external, np.zeros(k, dtype=bool)]).astype(bool),
        )


def _concat_csr(old: Csr, rows: Sequence[Sequence[int]]) -> Csr:
    if not rows:
        return old
    add = Csr.from_rows(rows)
    ptr = np.concatenate([old.ptr, old.ptr[-1] + add.ptr[1:]]).astype(np.int64)
    return Csr(ptr, np.concatenate([old.idx, add.idx.astype(old.idx.dtype)]))


def _drop_dead_weights(
    model: Model, subgraphs: list[Subgraph], edited: int, n_old: int
) -> list[Subgraph]:
    """Empty the source constants of the edited subgraph that no op reads any more, and the
    buffers that no tensor of any subgraph (or metadata) refers to after that."""
    sg = subgraphs[edited]
    old = model.subgraphs[edited]
    was_read = np.zeros(n_old, dtype=bool)
    t = old.op_inputs.idx.astype(np.int64)
    was_read[t[t >= 0]] = True
    now_read = np.zeros(sg.num_tensors, dtype=bool)
    t = sg.op_inputs.idx.astype(np.int64)
    now_read[t[t >= 0]] = True
    outputs = np.zeros(sg.num_tensors, dtype=bool)
    outputs[sg.outputs.astype(np.int64)] = True
    const = old.tensor_is_constant
    dead = np.flatnonzero(was_read & const & ~now_read[:n_old] & ~outputs[:n_old])
    if len(dead) == 0:
        return subgraphs
    dead_bufs = np.unique(sg.tensor_buffer[dead])
    tensor_buffer = sg.tensor_buffer.copy()
    tensor_buffer[dead] = 0
    still = np.zeros(len(sg.buffers), dtype=bool)
    for s, g in enumerate(subgraphs):
        tb = tensor_buffer if s == edited else g.tensor_buffer
        tb = tb[(tb >= 0) & (tb < len(still))]
        still[tb] = True
    for md in model.metadata:
        if 0 <= md.buffer < len(still):
            still[md.buffer] = True
    for b in (model.extra or {}).get("metadata_buffer", ()) or ():
        if 0 <= int(b) < len(still):
            still[int(b)] = True
    free = dead_bufs[(dead_bufs > 0) & ~still[dead_bufs]]
    buffers = sg.buffers
    if len(free):
        length = buffers.length.copy()
        length[free] = 0
        buffers = BufferTable(
            mems=buffers.mems,
            mem=buffers.mem,
            start=buffers.start,
            length=length,
            external=buffers.external,
        )
    # a dead tensor keeps its index but not its per-channel parameters (they are written)
    dead_set = set(dead.tolist())
    quant = sg.tensor_quantization
    quantization = LazySeq(len(quant), lambda t: None if t in dead_set else quant[t])
    out = []
    for s, g in enumerate(subgraphs):
        if s == edited:
            out.append(
                dataclasses.replace(
                    g,
                    tensor_buffer=tensor_buffer,
                    buffers=buffers,
                    tensor_quantization=quantization,
                )
            )
        else:
            out.append(dataclasses.replace(g, buffers=buffers))
    return out
