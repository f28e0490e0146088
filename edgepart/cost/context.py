"""Ops in context: what an op adds right after its predecessor, not what it costs alone.

An op timed on its own is invoked over and over with only the Python call and the interpreter's
loop between invocations, which is enough to push its kernel's code out of the instruction cache
and branch predictors. Inside a model it runs right after its predecessor, which on the builtin
kernels often shares code with it (the element-wise and reduction helpers, the tensor and
quantization checks, the same kernel for a repeated op) and has just written its input. So the
standalone timings of a chain of ops sum to more than the chain takes: on this host by 0.01 to
0.1 us per op boundary, which is noise for a CNN but 5 to 15% of a model of a few microseconds.

The profiler therefore also times each op together with the op before it in execution order
(a *context pair*; two ops adjacent in a topological order always form a convex set). What the
second op adds in context is then ``value(pair) - value(first op alone)``; the cost model uses it
whenever the first op runs in the same invocation just before, and the standalone value
otherwise. Pairs are only formed between single-op units (not state groups or fused chains, whose
entries already cover their inside).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgepart.cost.units import Unit
from edgepart.ir.graph import Subgraph

__all__ = ["ROLE", "context_units", "predecessors"]

ROLE = "context"


def predecessors(sg: Subgraph, folded: np.ndarray) -> np.ndarray:
    """Per op: the op that runs just before it (the previous op that is not folded at
    preparation, in execution order), or -1 for the first op and for folded ops."""
    n = sg.num_ops
    out = np.full(n, -1, dtype=np.int64)
    live = np.flatnonzero(~np.asarray(folded, dtype=bool))
    if len(live) > 1:
        out[live[1:]] = live[:-1]
    return out


def context_units(units: Sequence[Unit], pred: np.ndarray) -> list[tuple[Unit, Unit, Unit]]:
    """``(first, second, pair)`` for every single-op unit whose predecessor is a single-op unit.

    ``pred`` is :func:`predecessors`; the pair carries both members' helpers.
    """
    single = {u.ops[0]: u for u in units if len(u.ops) == 1}
    out = []
    for b, ub in single.items():
        a = int(pred[b])
        ua = single.get(a)
        if ua is None:
            continue
        helpers = tuple(sorted(set(ua.helpers) | set(ub.helpers)))
        out.append((ua, ub, Unit((a, b), helpers)))
    out.sort(key=lambda t: t[2].ops)
    return out
