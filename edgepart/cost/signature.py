"""Op signatures: what identifies an op's cost in a latency table.

An op's cost depends on its kind and version, the dtype, shape and constness of each input and
output, and its options; not on tensor names or quantization scales. :class:`OpSig` holds exactly
that and renders a canonical, human-readable key::

    CONV_2D:1(FLOAT32[1,8,8,16],c:FLOAT32[16,3,3,16],c:FLOAT32[16])->(FLOAT32[1,8,8,16]){...}

``c:`` marks a constant (weights prepared once). The custom ops LiteRT's builtin resolver
ships (``AudioSpectrogram``, ``Mfcc`` ...) have the numbers of their FlexBuffer options as
their options, once :func:`edgepart.tflite.litert_safety.check_custom_options` finds them safe.
The *family* of a signature drops the shapes (keeps ranks): ops of one family differ only in
size, so the latency of one can be scaled from another (see :mod:`edgepart.cost.table`). A fused
group's key joins its members' keys with the edges between them.

:func:`op_signatures` computes every op's signature with one NumPy pass that first groups ops of
identical structure, so a 100,000-op graph builds only its distinct signatures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgepart.cost.rules import Ctx
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Subgraph
from edgepart.tflite.litert_safety import FLEX_OPTION_KEYS, custom_option_values

__all__ = [
    "GroupSig",
    "OpSig",
    "TensorSig",
    "group_key",
    "group_signature",
    "op_signatures",
]


@dataclass(frozen=True, slots=True)
class TensorSig:
    """The cost-relevant facts of one tensor: dtype, static shape, constness."""

    dtype: str
    shape: tuple[int, ...]
    const: bool = False

    def text(self, with_shape: bool = True) -> str:
        dims = ",".join(map(str, self.shape)) if with_shape else f"r{len(self.shape)}"
        return f"{'c:' if self.const else ''}{self.dtype}[{dims}]"

    def to_json(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "shape": list(self.shape), "const": self.const}


@dataclass(frozen=True, slots=True)
class OpSig:
    """The cost-relevant facts of one op (see the module docstring)."""

    op: str
    version: int
    inputs: tuple[TensorSig | None, ...]
    outputs: tuple[TensorSig, ...]
    options: tuple[tuple[str, Any], ...] = ()

    def _text(self, with_shape: bool) -> str:
        ins = ",".join("-" if t is None else t.text(with_shape) for t in self.inputs)
        outs = ",".join(t.text(with_shape) for t in self.outputs)
        opts = ",".join(f"{k}={_fmt(v)}" for k, v in self.options)
        return f"{self.op}:{self.version}({ins})->({outs}){{{opts}}}"

    @property
    def key(self) -> str:
        """Canonical key (shapes included)."""
        return self._text(True)

    @property
    def family(self) -> str:
        """Key without shapes: signatures that differ only in size share it."""
        return self._text(False)

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "version": self.version,
            "inputs": [None if t is None else t.to_json() for t in self.inputs],
            "outputs": [t.to_json() for t in self.outputs],
            "options": {k: _jsonable(v) for k, v in self.options},
        }


@dataclass(frozen=True, slots=True)
class GroupSig:
    """A fused group: member signatures in execution order plus internal edges.

    ``edges`` are ``(producer position, consumer position)`` pairs within the group.
    """

    members: tuple[OpSig, ...]
    edges: tuple[tuple[int, int], ...]

    @property
    def key(self) -> str:
        return group_key([m.key for m in self.members], self.edges)

    @property
    def family(self) -> str:
        return group_key([m.family for m in self.members], self.edges)


def group_key(member_keys: Sequence[str], edges: Sequence[tuple[int, int]]) -> str:
    """A group's key from its members' keys (or families) and internal edges."""
    inner = " ; ".join(member_keys)
    e = ",".join(f"{a}>{b}" for a, b in edges)
    return f"GROUP[{inner}]#{e}"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (tuple, list)):
        return "[" + ",".join(_fmt(x) for x in v) + "]"
    if isinstance(v, bytes):
        return v.hex()
    return str(v)


def _jsonable(v: Any) -> Any:
    if isinstance(v, (tuple, list)):
        return [_jsonable(x) for x in v]
    if isinstance(v, bytes):
        return v.hex()
    return v


def _with_sample_rate(sg: Subgraph, op: int, o: dict[str, Any]) -> dict[str, Any]:
    """An ``Mfcc`` op's options with its sample rate, when that input is a constant: which of
    the spectrogram's bins its filterbank reads each frame depends on it (the bins from the
    lower to the upper frequency limit, in steps of half the rate over the bins)."""
    ins = sg.op_inputs.row(op).tolist()
    if len(ins) < 2 or ins[1] < 0:
        return o
    t = sg.tensor(int(ins[1]))
    try:
        v = np.asarray(t.numpy()).reshape(-1)
    except (ValueError, TypeError):  # not a constant, or its buffer does not hold its shape
        return o
    if t.sparsity is not None or v.size != 1 or v.dtype.kind not in "iu":
        return o
    return {**o, "sample_rate": int(v[0])}


def _options_tuple(o: Any) -> tuple[tuple[str, Any], ...]:
    if o is None:
        return ()
    return tuple(sorted((str(k), v) for k, v in o.items() if not k.endswith("subgraph_index")))


def _tensor_classes(sg: Subgraph, ctx: Ctx) -> tuple[np.ndarray, list[TensorSig]]:
    """A class id per tensor (equal dtype, shape, constness) and one TensorSig per class."""
    nt = sg.num_tensors
    if nt == 0:
        return np.zeros(0, np.int64), []
    rank = ctx.rank
    width = int(rank.max(initial=0))
    mat = np.full((nt, 3 + width), -2, dtype=np.int64)
    mat[:, 0] = ctx.dt
    mat[:, 1] = ctx.weight_like
    mat[:, 2] = rank
    if width:
        rows = np.repeat(np.arange(nt), rank)
        col = np.arange(len(rows)) - np.repeat(ctx.shape_ptr[:-1], rank)
        mat[rows, 3 + col] = ctx.shape_idx
    uniq, inv = unique_rows(mat)
    sigs = []
    for row in uniq.tolist():
        r = row[2]
        sigs.append(TensorSig(_dtype_name(row[0]), tuple(row[3 : 3 + r]), bool(row[1])))
    return inv.reshape(-1), sigs


def unique_rows(mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unique rows, inverse) of an int64 matrix, via a row hash (much faster than axis=0)."""
    if len(mat) == 0:
        return mat, np.zeros(0, np.int64)
    h = np.zeros(len(mat), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for col in mat.T:
            h = h * np.uint64(0x100000001B3) + col.astype(np.uint64) + np.uint64(0x9E3779B9)
            h ^= h >> np.uint64(29)
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    uniq = mat[first]
    if not np.array_equal(uniq[inv], mat):  # a hash collision: take the exact (slow) path
        uniq, inv = np.unique(mat, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
    return uniq, inv


def _dtype_name(code: int) -> str:
    try:
        return DType(int(code)).name
    except ValueError:
        return f"TYPE_{code}"


def op_signatures(sg: Subgraph, ops: Sequence[int] | np.ndarray | None = None) -> list[OpSig]:
    """The signature of each op in ``ops`` (all ops by default), in the given order."""
    ctx = Ctx.of(sg)
    sel = np.arange(sg.num_ops) if ops is None else np.asarray(ops, dtype=np.int64)
    if len(sel) == 0:
        return []
    tcls, tsigs = _tensor_classes(sg, ctx)
    ins, outs = sg.op_inputs.take(sel), sg.op_outputs.take(sel)
    mi = int(ins.lengths().max(initial=0))
    mo = int(outs.lengths().max(initial=0))
    mat = np.full((len(sel), 2 + mi + mo), -3, dtype=np.int64)
    mat[:, 0] = sg.op_opcode[sel]
    mat[:, 1] = ins.lengths() * 1000 + outs.lengths()
    for csr, off in ((ins, 2), (outs, 2 + mi)):
        lens = csr.lengths()
        rows = np.repeat(np.arange(len(sel)), lens)
        col = np.arange(len(rows)) - np.repeat(csr.ptr[:-1], lens)
        t = csr.idx.astype(np.int64)
        mat[rows, off + col] = np.where(t >= 0, tcls[np.maximum(t, 0)], -1)
    uniq, inv = unique_rows(mat)
    base: list[tuple[str, int, tuple[TensorSig | None, ...], tuple[TensorSig, ...]]] = []
    for row in uniq.tolist():
        code = sg.opcodes[row[0]]
        nin, nout = divmod(row[1], 1000)
        i_sig = tuple(None if c < 0 else tsigs[c] for c in row[2 : 2 + nin])
        o_sig = tuple(tsigs[c] for c in row[2 + mi : 2 + mi + nout])
        base.append((code.name, code.version, i_sig, o_sig))
    # per structural class, the distinct options seen and their signatures; options compare
    # with ``==`` (a dict comparison), which is much cheaper than hashing every op's options
    seen: list[list[tuple[Any, OpSig]]] = [[] for _ in base]
    out: list[OpSig] = []
    opts = sg.op_options
    opts2 = sg.op_options2
    for k, i in zip(inv.tolist(), sel.tolist(), strict=True):
        o = opts[i]
        if o is None:
            o = opts2[i]
        if o is None and base[k][0] in FLEX_OPTION_KEYS:  # a custom op LiteRT ships
            o = custom_option_values(base[k][0], sg.op_custom_options[i])
            if o is not None and base[k][0] == "Mfcc":
                o = _with_sample_rate(sg, i, o)
        found = None
        for rep, sig in seen[k]:
            if rep == o:
                found = sig
                break
        if found is None:
            name, version, i_sig, o_sig = base[k]
            found = OpSig(name, version, i_sig, o_sig, _options_tuple(o))
            seen[k].append((o, found))
        out.append(found)
    return out


def group_signature(
    sg: Subgraph, ops: Sequence[int], sigs: Sequence[OpSig] | None = None
) -> GroupSig:
    """The signature of a group of ops (given in execution order)."""
    ops = [int(i) for i in ops]
    members = tuple(sigs) if sigs is not None else tuple(op_signatures(sg, ops))
    pos = {op: k for k, op in enumerate(ops)}
    made: dict[int, int] = {}
    for op in ops:
        for t in sg.op_outputs.row(op).tolist():
            made[t] = pos[op]
    edges = set()
    for op in ops:
        for t in sg.op_inputs.row(op).tolist():
            if t in made and made[t] != pos[op]:
                edges.add((made[t], pos[op]))
    return GroupSig(members, tuple(sorted(edges)))
