"""Per-op support of a delegate: which ops it accepts and, for the others, why not.

Evaluation follows a delegate file (:class:`~edgepart.devices.delegate.DelegateSpec`): is the op
listed, is its version within the cap, are tensor ranks and per-role dtypes allowed, do the named
constraint predicates hold. Refusals read ``"OPNAME: reason"`` as TFLite logs them.

Ops with the same *signature* (op code, options, and per-operand dtype, shape, quantization,
constness and small constant values) get the same answer, so results are memoized on that
signature: a 10,000-op graph built from a few dozen distinct layers costs a few dozen evaluations.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgepart.devices.capability import OpView, Support
from edgepart.devices.delegate import DelegateSpec, OpRule
from edgepart.devices.roles import input_role, output_role
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Subgraph

__all__ = ["SMALL_CONSTANT_BYTES", "SupportTable", "check_op", "evaluate_support"]

# Predicates may read the values of constants up to this size (axes, shapes, paddings); the
# memo key includes those bytes. Larger constants (weights) enter the key by dtype/shape/quant.
SMALL_CONSTANT_BYTES = 256
_QUANT_TYPES = frozenset(
    int(d) for d in (DType.INT8, DType.UINT8, DType.INT16, DType.INT32, DType.INT4, DType.UINT4)
)


@dataclass(frozen=True, slots=True)
class SupportTable:
    """Support of one delegate for the ops of one subgraph.

    ``supported[i]`` says whether op ``i`` passes the delegate's per-op checks (before any
    partitioning decisions); ``reasons[i]`` is TFLite's ``"OPNAME: reason"`` line for refused ops
    and ``details[i]`` edgepart's more specific explanation (they coincide when the delegate logs
    its own reason).
    """

    delegate: str
    supported: np.ndarray
    reasons: Mapping[int, str]
    details: Mapping[int, str]


def check_op(spec: DelegateSpec, op: OpView) -> tuple[Support, str]:
    """Evaluate one op against a delegate; returns (verdict, detail)."""
    rule = spec.rule(op.name)
    if rule is None:
        r = spec.reasons["unsupported_op"]
        return Support(False, r), r
    version = op.version
    if (rule.max_version is not None and version > rule.max_version) or version < rule.min_version:
        r = spec.reasons["version"].format(max=rule.max_version, version=version)
        return Support(False, r), r
    detail = _tensor_problem(spec, rule, op)
    if detail:
        return Support(False, spec.reasons["tensor"]), detail
    for pred in rule.constraints:
        s = pred(op)
        if not s.ok:
            return s, s.reason
    return Support(True), ""


def _tensor_problem(spec: DelegateSpec, rule: OpRule, op: OpView) -> str:
    sg = op.sg
    for k, t in enumerate(op.inputs):
        if t < 0:
            continue
        const = bool(sg.tensor_is_constant[t])
        if rule.max_rank is not None and (spec.rank_check_constants or not const):
            r = len(op.shape(t))
            if r > rule.max_rank:
                return f"input {k} (tensor {t}) has rank {r}; at most {rule.max_rank} supported"
        role = input_role(op.name, k, is_constant=const)
        allowed = rule.dtypes.get(role)
        if allowed and (spec.dtype_check_constants or not const):
            dt = op.dtype(t)
            if dt not in allowed:
                names = ", ".join(sorted(d.name for d in allowed))
                return f"input {k} (tensor {t}, {role}) has dtype {dt.name}; allowed: {names}"
    for k, t in enumerate(op.outputs):
        if t < 0:
            continue
        if rule.max_rank is not None:
            r = len(op.shape(t))
            if r > rule.max_rank:
                return f"output {k} (tensor {t}) has rank {r}; at most {rule.max_rank} supported"
        role = output_role(op.name, k)
        allowed = rule.dtypes.get(role)
        if allowed:
            dt = op.dtype(t)
            if dt not in allowed:
                names = ", ".join(sorted(d.name for d in allowed))
                return f"output {k} (tensor {t}, {role}) has dtype {dt.name}; allowed: {names}"
    return ""


def group_rows(mat: np.ndarray) -> np.ndarray:
    """Dense ids of the distinct rows of an int matrix (equal rows, equal ids); exact.

    Columns are folded in one at a time with 1-D ``np.unique``, which is far faster than
    ``np.unique(axis=0)`` on wide rows.
    """
    n = mat.shape[0]
    gid = np.zeros(n, dtype=np.int64)
    if n == 0:
        return gid
    span = 1
    for j in range(mat.shape[1]):
        _, col_id = np.unique(mat[:, j], return_inverse=True)
        col_id = col_id.reshape(-1).astype(np.int64)
        width = int(col_id.max()) + 1
        if span * width >= 1 << 62:  # renumber before the mixed key could overflow
            _, gid = np.unique(gid, return_inverse=True)
            gid = gid.reshape(-1).astype(np.int64)
            span = int(gid.max()) + 1
        gid = gid * width + col_id
        span *= width
    _, gid = np.unique(gid, return_inverse=True)
    return gid.reshape(-1).astype(np.int64)


_CACHE: weakref.WeakKeyDictionary[Subgraph, dict[str, np.ndarray]] = weakref.WeakKeyDictionary()


def _derived(sg: Subgraph, key: str, make: Any) -> np.ndarray:
    """Per-subgraph derived columns, computed once (the IR is immutable)."""
    slot = _CACHE.setdefault(sg, {})
    v = slot.get(key)
    if v is None:
        v = slot[key] = make(sg)
    return v


def _options_ids(sg: Subgraph) -> np.ndarray:
    """An int per op; equal ints mean equal builtin options (None is 0)."""
    ids: dict[Any, int] = {None: 0}
    by_obj: dict[int, int] = {}
    out = []
    for o in sg.op_options:
        k = id(o)
        v = by_obj.get(k)
        if v is None:
            # (type, items) compares faster than Options (no dict equality); nested values
            # that cannot be hashed fall back to the Options object itself.
            key: Any = o if o is None else (o.type, *o.items())
            try:
                v = ids.setdefault(key, len(ids))
            except TypeError:
                v = ids.setdefault(o, len(ids))
            by_obj[k] = v
        out.append(v)
    return np.asarray(out, dtype=np.int64)


def _tensor_ids(sg: Subgraph) -> np.ndarray:
    """An int per tensor; equal ints mean equal signatures (dtype, shape, constness, rank flag,
    quantization for integer types, and the bytes of small constants)."""
    n = sg.num_tensors
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    shp = sg.tensor_shape
    lens = shp.lengths()
    width = int(lens.max()) if len(lens) else 0
    mat = np.full((n, 4 + width), -3, dtype=np.int64)
    mat[:, 0] = sg.tensor_dtype
    mat[:, 1] = sg.tensor_is_constant
    mat[:, 2] = sg.tensor_has_rank
    mat[:, 3] = lens
    if width:
        rows = shp.row_ids()
        cols = np.arange(len(shp.idx)) - np.repeat(shp.ptr[:-1], lens)
        mat[rows, 4 + cols] = shp.idx
    base = group_rows(mat)
    dt = sg.tensor_dtype.astype(np.int64)
    quant = np.isin(dt, list(_QUANT_TYPES))
    small = sg.tensor_is_constant & (sg.tensor_nbytes <= SMALL_CONSTANT_BYTES)
    if not (quant.any() or small.any()):
        return base
    # Quantization: objects compared by identity first (builders share them), then by value.
    qcol = np.zeros(n, dtype=np.int64)
    qt = np.flatnonzero(quant)
    if len(qt):
        quants = sg.tensor_quantization
        objs = [quants[t] for t in qt.tolist()]
        by_obj: dict[int, int] = {}
        by_key: dict[Any, int] = {}
        vals = []
        for q in objs:
            k = id(q)
            v = by_obj.get(k)
            if v is None:
                qk = None if q is None else q.key()
                v = by_key.setdefault(qk, len(by_key) + 1)
                by_obj[k] = v
            vals.append(v)
        qcol[qt] = vals
    dcol = np.zeros(n, dtype=np.int64)
    st = np.flatnonzero(small)
    if len(st):
        blobs: dict[bytes, int] = {}
        dcol[st] = [
            blobs.setdefault(sg.buffers.data(int(sg.tensor_buffer[t])).tobytes(), len(blobs) + 1)
            for t in st.tolist()
        ]
    return group_rows(np.stack([base, qcol, dcol], axis=1))


def _padded(csr: Any, tid: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per row: tensor ids of the row's entries, padded with -3 (-1 marks an omitted input)."""
    sub = csr.take(rows)
    lens = sub.lengths()
    width = int(lens.max()) if len(lens) else 0
    mat = np.full((len(rows), width), -3, dtype=np.int64)
    if width and len(sub.idx):
        r = sub.row_ids()
        c = np.arange(len(sub.idx)) - np.repeat(sub.ptr[:-1], lens)
        t = sub.idx.astype(np.int64)
        mat[r, c] = np.where(t >= 0, tid[np.maximum(t, 0)], -1)
    return mat


def evaluate_support(
    sg: Subgraph,
    spec: DelegateSpec,
    *,
    ops: Sequence[int] | np.ndarray | None = None,
    context: Mapping[str, Any] | None = None,
    static: frozenset[int] = frozenset(),
    input_overrides: Mapping[int, tuple[int, ...]] | None = None,
) -> SupportTable:
    """Check every op (or the listed ones) of ``sg`` against ``spec``.

    Parameters
    ----------
    context
        Overrides of the delegate's context values (e.g. ``android_api_level``).
    static
        Tensors to treat as static although no buffer backs them (XNNPACK's unpacked weights).
    input_overrides
        Replacement input lists per op (FP16GraphPartitionHelper checks consumers of fp16
        DEQUANTIZE nodes as if they read the fp16 constant directly).
    """
    ctx = {**spec.context, **(context or {})}
    overrides = dict(input_overrides or {})
    n = sg.num_ops
    sel = np.arange(n, dtype=np.int64) if ops is None else np.asarray(ops, dtype=np.int64)
    supported = np.zeros(n, dtype=bool)
    reasons: dict[int, str] = {}
    details: dict[int, str] = {}
    if len(sel) == 0:
        return SupportTable(spec.name, supported, reasons, details)
    tid = _derived(sg, "tensor_ids", _tensor_ids)
    ins = _padded(sg.op_inputs, tid, sel)
    if overrides or static:
        ins = ins.copy()
        pos = {int(o): k for k, o in enumerate(sel.tolist())}
        static_list = np.asarray(sorted(static), dtype=np.int64)
        for op, row in overrides.items():
            k = pos.get(op)
            if k is None:
                continue
            ids = [int(tid[t]) if t >= 0 else -1 for t in row]
            if len(ids) > ins.shape[1]:
                ins = np.pad(ins, ((0, 0), (0, len(ids) - ins.shape[1])), constant_values=-3)
            ins[k, :] = -3
            ins[k, : len(ids)] = ids
        if len(static_list):
            raw = _padded_raw(sg, sel, overrides, pos, ins.shape[1])
            flags = np.isin(raw, static_list)
            ins = np.concatenate([ins, flags.astype(np.int64)], axis=1)
    outs = _padded(sg.op_outputs, tid, sel)
    opts = _derived(sg, "options_ids", _options_ids)[sel]
    code = sg.op_opcode[sel].astype(np.int64)
    group = group_rows(np.concatenate([code[:, None], opts[:, None], ins, outs], axis=1))
    _, first = np.unique(group, return_index=True)
    verdicts: list[tuple[bool, str, str]] = []
    for k in first.tolist():  # one representative op per distinct signature
        op = int(sel[k])
        view = OpView(sg, op, inputs=overrides.get(op), static=static, context=ctx)
        verdict, detail = check_op(spec, view)
        verdicts.append((verdict.ok, verdict.reason, detail))
    ok = np.array([v[0] for v in verdicts], dtype=bool)[group]
    supported[sel[ok]] = True
    names = [c.name for c in sg.opcodes]
    opcode = sg.op_opcode
    for k in np.flatnonzero(~ok).tolist():
        op = int(sel[k])
        _, reason, detail = verdicts[group[k]]
        name = names[int(opcode[op])]
        reasons[op] = f"{name}: {reason}"
        details[op] = f"{name}: {detail}"
    return SupportTable(spec.name, supported, reasons, details)


def _padded_raw(
    sg: Subgraph,
    sel: np.ndarray,
    overrides: Mapping[int, tuple[int, ...]],
    pos: Mapping[int, int],
    width: int,
) -> np.ndarray:
    """Raw input tensor indices per selected op (with overrides), padded with -3."""
    sub = sg.op_inputs.take(sel)
    lens = sub.lengths()
    mat = np.full((len(sel), width), -3, dtype=np.int64)
    if len(sub.idx):
        r = sub.row_ids()
        c = np.arange(len(sub.idx)) - np.repeat(sub.ptr[:-1], lens)
        mat[r, c] = sub.idx
    for op, row in overrides.items():
        k = pos.get(op)
        if k is not None:
            mat[k, :] = -3
            mat[k, : len(row)] = row
    return mat
