"""The work-rule registry of :mod:`edgepart.cost.work`: per op kind, vectorized over its ops.

The rules themselves live in :mod:`edgepart.cost.work_rules`, which registers them here when
it is imported (:mod:`edgepart.cost.work` imports it); this module imports no rule.

A rule takes the subgraph context and the indices of the ops of its kind and returns MACs,
extra FLOPs and, where the default "every input and output once" traffic is wrong, corrected
byte counts. Element-wise FLOPs per output element count the arithmetic of the op's defining
formula, with one FLOP per transcendental function (exp, tanh, ...), following the usual
FLOP-counting convention; they are nominal, and only matter where an op is compute-bound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from edgepart.ir import analysis
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Subgraph
from edgepart.schema import opnames

__all__ = ["RULES", "Ctx", "Result", "rule"]

_CONST_FOLDED = ("DEQUANTIZE", "DENSIFY")


@dataclass(frozen=True, eq=False)
class Result:
    """What a rule returns for its ops (``None`` keeps the default)."""

    macs: np.ndarray | int = 0
    flops: np.ndarray | float = 0.0
    act_read: np.ndarray | None = None
    weight_read: np.ndarray | None = None
    dtype: np.ndarray | None = None
    exact: bool | None = None


class Ctx:
    """Arrays of one subgraph that rules index: shapes, sizes, op inputs/outputs."""

    def __init__(self, sg: Subgraph) -> None:
        self.sg = sg
        self.numel = sg.tensor_numel
        self.nbytes = sg.tensor_nbytes
        self.dt = sg.tensor_dtype.astype(np.int64)
        self.shape_ptr = sg.tensor_shape.ptr.astype(np.int64)
        self.shape_idx = np.maximum(sg.tensor_shape.idx.astype(np.int64), 0)
        self.rank = np.diff(self.shape_ptr)
        self.in_ptr = sg.op_inputs.ptr.astype(np.int64)
        self.in_idx = sg.op_inputs.idx.astype(np.int64)
        self.out_ptr = sg.op_outputs.ptr.astype(np.int64)
        self.out_idx = sg.op_outputs.idx.astype(np.int64)

    @staticmethod
    def of(sg: Subgraph) -> Ctx:
        return Ctx(sg)

    # ---------------------------------------------------------------- indexing helpers
    def inp(self, ops: np.ndarray, k: int) -> np.ndarray:
        """Tensor of input ``k`` of each op, -1 where absent or omitted."""
        pos = self.in_ptr[ops] + k
        ok = pos < self.in_ptr[ops + 1]
        out = np.full(len(ops), -1, dtype=np.int64)
        out[ok] = self.in_idx[pos[ok]]
        return out

    def out(self, ops: np.ndarray, k: int = 0) -> np.ndarray:
        pos = self.out_ptr[ops] + k
        ok = pos < self.out_ptr[ops + 1]
        res = np.full(len(ops), -1, dtype=np.int64)
        res[ok] = self.out_idx[pos[ok]]
        return res

    def dim(self, t: np.ndarray, k: int) -> np.ndarray:
        """Dimension ``k`` of tensors ``t`` (negative counts from the end); 1 where missing."""
        ok = t >= 0
        tt = np.maximum(t, 0)
        r = self.rank[tt]
        kk = np.full(len(t), k) if k >= 0 else r + k
        ok &= (kk >= 0) & (kk < r)
        res = np.ones(len(t), dtype=np.int64)
        res[ok] = self.shape_idx[self.shape_ptr[tt[ok]] + kk[ok]]
        return res

    def n(self, t: np.ndarray) -> np.ndarray:
        """Element count of tensors ``t`` (0 for absent)."""
        return np.where(t >= 0, self.numel[np.maximum(t, 0)], 0)

    def b(self, t: np.ndarray) -> np.ndarray:
        """Bytes of tensors ``t`` (0 for absent)."""
        return np.where(t >= 0, self.nbytes[np.maximum(t, 0)], 0)

    def dtype_of(self, t: np.ndarray) -> np.ndarray:
        return np.where(t >= 0, self.dt[np.maximum(t, 0)], -1)

    def elements_touched(self, ops: np.ndarray) -> np.ndarray:
        tot = np.zeros(len(ops), dtype=np.int64)
        for ptr, idx in ((self.in_ptr, self.in_idx), (self.out_ptr, self.out_idx)):
            lens = ptr[ops + 1] - ptr[ops]
            for k in range(int(lens.max(initial=0))):
                pos = np.minimum(ptr[ops] + k, len(idx) - 1)
                t = np.where(k < lens, idx[pos], -1)
                tot += self.n(t)
        return tot

    def options(self, ops: np.ndarray, key: str, default: object) -> list[object]:
        """Option ``key`` of each op (decoded lazily, so only for kinds that need it)."""
        res = []
        for i in ops.tolist():
            o = self.sg.op_options[i]
            if o is None:
                o = self.sg.op_options2[i]
            res.append(default if o is None else o.get(key, default))
        return res

    # ---------------------------------------------------------------- derived masks
    @cached_property
    def folded(self) -> np.ndarray:
        """Ops LiteRT evaluates once at preparation: DEQUANTIZE/DENSIFY of a constant, and
        chains of them (a sparse fp16 weight is DENSIFY then DEQUANTIZE of the result)."""
        codes = self.sg.op_builtin
        cand = np.isin(codes, [opnames.builtin_code(c) for c in _CONST_FOLDED])
        if not cand.any():
            return np.zeros(self.sg.num_ops, dtype=bool)
        return analysis.constant_producers(self.sg)

    @cached_property
    def weight_like(self) -> np.ndarray:
        """Constants plus outputs of folded ops (weights the runtime has prepared once)."""
        w = self.sg.tensor_is_constant.copy()
        f = np.flatnonzero(self.folded)
        if len(f):
            o = self.out(f, 0)
            w[o[o >= 0]] = True
        out: np.ndarray = w
        return out

    def default_dtype(self) -> np.ndarray:
        """Input 0's dtype (output 0's if there is no input or it is a resource; then input
        1's: the value an ``ASSIGN_VARIABLE`` stores)."""
        ops = np.arange(self.sg.num_ops)
        d = self.dtype_of(self.inp(ops, 0))
        for alt in (self.out(ops, 0), self.inp(ops, 1)):
            bad = (d < 0) | (d == DType.RESOURCE) | (d == DType.VARIANT) | (d == DType.STRING)
            a = self.dtype_of(alt)
            d[bad & (a >= 0)] = a[bad & (a >= 0)]
        return d.astype(np.int8)


Rule = Callable[[Ctx, np.ndarray], Result]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Register a rule for one or more builtin op names."""

    def deco(fn: Rule) -> Rule:
        for name in names:
            if name not in opnames.BUILTIN_CODES:
                raise KeyError(f"unknown builtin {name!r}")
            RULES[name] = fn
        return fn

    return deco


def get_rule(name: str) -> Rule:
    """The rule for an op name; the error lists the op kinds that have one."""
    try:
        return RULES[name]
    except KeyError:
        raise KeyError(f"no work rule for {name!r}; rules exist for {sorted(RULES)}") from None


_LOW_BIT = (DType.INT8, DType.UINT8, DType.INT4, DType.INT2, DType.UINT4)


def mac_dtype(ctx: Ctx, ops: np.ndarray, act: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Compute dtype of MAC ops: 8-bit weights with float activations (hybrid) compute in INT8."""
    da = ctx.dtype_of(act)
    dw = ctx.dtype_of(weights)
    hybrid = np.isin(dw, _LOW_BIT) & np.isin(da, (DType.FLOAT32, DType.FLOAT16))
    return np.where(hybrid, DType.INT8, da).astype(np.int8)
