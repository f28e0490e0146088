"""Work per op: FLOPs (a multiply-accumulate counts as 2) and bytes moved, from the IR alone.

:func:`op_work` costs every op of a subgraph with a few dozen vectorized NumPy expressions, one
per op kind present (the per-kind rules live in :mod:`edgepart.cost.rules`), so a 100,000-op
graph takes milliseconds. Bytes are the *minimum traffic*: every tensor an op touches is read or
written once (activations read, activations written, weights read). Per-kind corrections:

- gathers and slices read only what they copy out (not the whole table or input);
- ``DEQUANTIZE`` / ``DENSIFY`` of a constant run once at preparation in LiteRT (builtin kernels
  cache the result; XNNPACK unpacks such weights before it builds its graph), so they cost
  nothing per invocation and their outputs count as *weights* of the ops reading them;
- ``CALL_ONCE`` runs on the first invocation only, and costs nothing per invocation;
- ``IF`` costs its more expensive branch, ``STABLEHLO_COMPOSITE`` its decomposition, ``WHILE``
  its condition plus body once (the trip count is unknown, so it is flagged as not exact).

Fused activations are not counted (they ride on the producing kernel), so ``macs`` matches the
MAC figures papers publish. Ops without a rule (custom ops and rare builtins) get a conservative
estimate, one FLOP per element read or written plus all their bytes, and ``known`` False.

>>> from edgepart.cost.work import op_work
>>> from edgepart.tflite.reader import read_model
>>> model = read_model("examples/models/mobilenet_v2.tflite")
>>> w = op_work(model.main, model)
>>> int(w.macs.sum()), int(w.bytes.sum())
(10666928, 6116480)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgepart.cost import rules as _rules
from edgepart.cost import work_rules  # noqa: F401  (registers every rule in rules.RULES)
from edgepart.cost.rules import Ctx
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model, Subgraph
from edgepart.schema import opnames

__all__ = ["OpWork", "op_work"]


@dataclass(frozen=True, eq=False)
class OpWork:
    """Per-op work of one subgraph, as parallel arrays indexed by op.

    Attributes
    ----------
    macs
        Multiply-accumulates of the op's MAC kernel (convolutions, matrix products, recurrent
        cells); 0 for other ops.
    flops
        Floating-point (or integer) operations: ``2 * macs`` plus element-wise work.
    act_read, act_written, weight_read
        Bytes of non-constant inputs read, outputs written, constant inputs read.
    dtype
        The dtype the op computes in (``DType`` value); dynamic-range (hybrid) MAC ops with
        8-bit weights and float activations compute in ``INT8``.
    known
        False where no rule exists (the conservative estimate) or the count is a bound.
    folded
        True for ops LiteRT evaluates once at preparation (zero per-invocation work).
    """

    macs: np.ndarray
    flops: np.ndarray
    act_read: np.ndarray
    act_written: np.ndarray
    weight_read: np.ndarray
    dtype: np.ndarray
    known: np.ndarray
    folded: np.ndarray

    def __len__(self) -> int:
        return len(self.flops)

    @property
    def bytes(self) -> np.ndarray:
        """Total bytes moved per op (activations read and written plus weights read)."""
        out: np.ndarray = self.act_read + self.act_written + self.weight_read
        return out

    @property
    def intensity(self) -> np.ndarray:
        """Operational intensity, FLOPs per byte moved (0 for ops moving no bytes)."""
        b = self.bytes.astype(np.float64)
        out = np.zeros(len(b))
        np.divide(self.flops, b, out=out, where=b > 0)
        return out

    def take(self, ops: np.ndarray) -> OpWork:
        """The work of a subset of ops (in the given order)."""
        return OpWork(*(getattr(self, f)[ops] for f in _FIELDS))


_FIELDS = ("macs", "flops", "act_read", "act_written", "weight_read", "dtype", "known", "folded")


def op_work(sg: Subgraph, model: Model | None = None) -> OpWork:
    """FLOPs and bytes of every op of ``sg``.

    Parameters
    ----------
    sg
        The subgraph to cost.
    model
        The owning model; needed to cost control-flow ops (``IF``, ``WHILE``, composites)
        from the subgraphs they call. Without it those ops get the conservative estimate.
    """
    return _op_work(sg, model, frozenset())


def _op_work(sg: Subgraph, model: Model | None, stack: frozenset[int]) -> OpWork:
    n = sg.num_ops
    ctx = Ctx.of(sg)
    macs = np.zeros(n, dtype=np.int64)
    flops = np.zeros(n, dtype=np.float64)
    known = np.ones(n, dtype=bool)
    weight_like = ctx.weight_like
    nbytes = ctx.nbytes
    # default traffic: every input and output once
    ins = sg.op_inputs
    t_in = ins.idx.astype(np.int64)
    valid = t_in >= 0
    rows = ins.row_ids()
    tb = np.where(valid, nbytes[np.maximum(t_in, 0)], 0)
    is_w = valid & weight_like[np.maximum(t_in, 0)]
    act_read = np.bincount(rows, weights=np.where(is_w, 0, tb), minlength=n)
    weight_read = np.bincount(rows, weights=np.where(is_w, tb, 0), minlength=n)
    outs = sg.op_outputs
    t_out = outs.idx.astype(np.int64)
    ov = t_out >= 0
    act_written = np.bincount(
        outs.row_ids(), weights=np.where(ov, nbytes[np.maximum(t_out, 0)], 0), minlength=n
    )
    dtype = ctx.default_dtype()

    codes = sg.op_builtin
    for code in np.unique(codes).tolist():
        ops = np.flatnonzero(codes == code)
        name = opnames.builtin_name(code)
        if code in opnames.CALLING_BUILTINS:
            _control_flow(sg, model, stack, ops, name, flops, macs, known, act_read, weight_read)
            continue
        rule = _rules.RULES.get(name)
        if rule is None:
            flops[ops] = _conservative_flops(ctx, ops)
            known[ops] = False
            continue
        r = rule(ctx, ops)
        macs[ops] = r.macs
        flops[ops] = 2.0 * r.macs + r.flops
        if r.dtype is not None:
            dtype[ops] = r.dtype
        if r.act_read is not None:
            act_read[ops] = r.act_read
        if r.weight_read is not None:
            weight_read[ops] = r.weight_read
        if r.exact is not None:
            known[ops] = r.exact
    folded = ctx.folded
    for arr in (flops, act_read, act_written, weight_read):
        arr[folded] = 0
    macs[folded] = 0
    return OpWork(
        macs=macs,
        flops=flops,
        act_read=act_read.astype(np.int64),
        act_written=act_written.astype(np.int64),
        weight_read=weight_read.astype(np.int64),
        dtype=dtype,
        known=known,
        folded=folded,
    )


def _conservative_flops(ctx: Ctx, ops: np.ndarray) -> np.ndarray:
    """One op per element read or written: an over-estimate for data-movement-like ops."""
    return ctx.elements_touched(ops).astype(np.float64)


def _control_flow(
    sg: Subgraph,
    model: Model | None,
    stack: frozenset[int],
    ops: np.ndarray,
    name: str,
    flops: np.ndarray,
    macs: np.ndarray,
    known: np.ndarray,
    act_read: np.ndarray,
    weight_read: np.ndarray,
) -> None:
    """IF: the dearer branch; WHILE: condition + body once (flagged); CALL_ONCE: free."""
    for i in ops.tolist():
        if name == "CALL_ONCE":
            flops[i] = 0.0
            act_read[i] = 0
            continue
        refs = sg.op(i).subgraph_refs
        if model is None or not refs or any(r in stack or r >= len(model.subgraphs) for r in refs):
            known[i] = False
            continue
        totals = []
        for r in refs:
            w = _op_work(model.subgraphs[r], model, stack | {r})
            totals.append(
                (
                    float(w.flops.sum()),
                    int(w.macs.sum()),
                    int(w.weight_read.sum()),
                    bool(w.known.all()),
                )
            )
        if name == "IF":
            branch = [t for t in totals[:2]] or totals
            f, m, wb, ok = max(branch)
        else:
            f = sum(t[0] for t in totals)
            m = sum(t[1] for t in totals)
            wb = sum(t[2] for t in totals)
            ok = all(t[3] for t in totals) and name != "WHILE"
        flops[i] = f
        macs[i] = m
        weight_read[i] += wb
        known[i] = ok


def dtype_name(code: int) -> str:
    """``"FLOAT32"`` for a dtype code (``"UNKNOWN_<n>"`` if not a TFLite type)."""
    try:
        return DType(int(code)).name
    except ValueError:
        return f"UNKNOWN_{int(code)}"
