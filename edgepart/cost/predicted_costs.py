"""Predictor side of :mod:`edgepart.cost.model`: per-op latencies from kernel predictions.

A processor backed by a latency predictor (:mod:`edgepart.cost.predictor`) costs a subgraph
by its kernels (:func:`edgepart.cost.kernels.decompose` with the processor's executor): each
kernel's predicted time goes to its ops, split in proportion to their roofline estimates (a
fused convolution and its activation share the convolution's kernel), ops that cost nothing
per invocation (folded weights, elided copies) get 0, and control-flow ops carry the
subgraphs they call. Multi-op kernels become groups, so a partition that cuts one is flagged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgepart.cost.kernels import Kernels, decompose
from edgepart.cost.predictor import ConfigPredictor, Predictor, PredictorError
from edgepart.cost.signature import OpSig
from edgepart.cost.work import OpWork
from edgepart.ir.graph import Model, Subgraph

__all__ = ["PredictedCosts", "executor_of", "predicted_costs"]

# the LiteRT executor a processor's delegate stands for
_EXECUTOR = {"xnnpack": "xnnpack", "cpu_builtin": "builtin"}


def executor_of(delegate: str | None) -> str:
    """The predictor executor of a processor reached through ``delegate``."""
    if delegate is None:
        return "builtin"
    return _EXECUTOR.get(delegate, delegate)


@dataclass
class PredictedCosts:
    """Per op of one subgraph on one processor: latency, delegate, kernel type."""

    latency: np.ndarray
    delegated: np.ndarray
    ktype: np.ndarray  # per op: index into ``types`` (-1: no kernel)
    types: list[str]
    groups: list[tuple[int, ...]]
    node_s: float
    invoke_s: float
    config: ConfigPredictor
    kernels: Kernels


def predicted_costs(
    model: Model | None,
    sg: Subgraph,
    work: OpWork,
    sigs: list[OpSig],
    roof: np.ndarray,
    predictor: Predictor,
    delegate: str | None,
    threads: int,
    cache: dict[str, Kernels] | None = None,
) -> PredictedCosts | None:
    """The predicted costs of ``sg`` on a processor, or None when the predictor has no
    configuration for its executor."""
    ex = executor_of(delegate)
    try:
        cp = predictor.config(ex, threads)
    except PredictorError:
        return None
    if model is None:
        model = Model(subgraphs=(sg,), opcodes=sg.opcodes, buffers=sg.buffers)
    si = next((i for i, s in enumerate(model.subgraphs) if s is sg), 0)
    k = (cache or {}).get(ex)
    if k is None:
        k = decompose(model, ex, subgraph=si, sg=sg, work=work, sigs=sigs)
        if cache is not None:
            cache[ex] = k
    secs, _, _, _ = cp.kernel_seconds_with_calls(k)
    n = sg.num_ops
    lat = np.zeros(n)
    ktype = np.full(n, -1, dtype=np.int64)
    tix = {t: i for i, t in enumerate(sorted(set(k.types)))}
    groups: list[tuple[int, ...]] = []
    for kid, ops in enumerate(k.ops):
        idx = list(ops)
        if len(idx) == 1:
            lat[idx[0]] += secs[kid]  # a recurrent op has two kernels (its steps and gates)
        else:
            share = np.maximum(roof[idx], 0.0)
            tot = float(share.sum())
            share = share / tot if tot > 0 and np.isfinite(tot) else np.full(len(idx), 1 / len(idx))
            lat[idx] = secs[kid] * share
            groups.append(tuple(sorted(idx)))
        ktype[idx] = tix[k.types[kid]]
    delegated = np.array([o is not None for o in k.op_delegate], dtype=bool)
    if ex == "builtin":
        delegated[:] = False
    deleg = delegate if delegate not in (None, "cpu_builtin") else None
    node = cp.node_s.get(str(deleg), 0.0) if deleg else 0.0
    if deleg and not node and cp.node_s:
        node = float(next(iter(cp.node_s.values())))
    node *= cp.latency_scale
    return PredictedCosts(
        latency=lat,
        delegated=delegated,
        ktype=ktype,
        types=list(tix),
        groups=groups,
        node_s=node,
        invoke_s=cp.fixed_s(k),
        config=cp,
        kernels=k,
    )
