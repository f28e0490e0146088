"""Segments: contiguous pieces of a model timed whole, so op values hold *in context*.

An op timed on its own runs with its weights and inputs hot and nothing else between its
invocations; inside a running model it runs after other kernels that evicted its weights,
wrote its inputs, used the vector units and branch predictors. Summed standalone values
therefore miss by an amount that depends on the machine and the model (over-predicting large
CNNs by 24-47% on one host, under-predicting on another). The profiler therefore also times
the model cut into a few *segments*: runs of ops contiguous in execution order (always a
convex set, so each extracts to a standalone model), balanced by work, never cutting a group of
ops that share state. Each segment's time, less the invocation and its delegate nodes, is
recorded as a group entry (role ``segment``, naming its ops); the cost model gives the
segment's ops shares of it in proportion to their own values
(:func:`edgepart.cost._table_costs.table_groups`), so any partition is costed with in-context
op values, and a partition that keeps a segment whole pays exactly what was measured.

A model is cut into four to eight segments of about equal work, and a segment holding more
than three quarters of the ops is dropped: the whole model is never a segment, so the table's
prediction of the whole model is still a sum of pieces.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgepart.cost.units import Unit
from edgepart.cost.work import OpWork
from edgepart.ir import analysis
from edgepart.ir.graph import Model

__all__ = ["MIN_UNITS", "Segment", "plan_segments"]

MIN_UNITS = 16  # models with fewer timing units are not segmented
MAX_SEGMENTS = 8
MIN_SEGMENTS = 4


@dataclass
class Segment:
    """Ops (execution order) and the folded helpers their units extract along."""

    ops: list[int]
    helpers: list[int]
    timer: Any = field(default=None, repr=False)


def plan_segments(model: Model, units: list[Unit], work: OpWork) -> list[Segment]:
    """Cut the units (in execution order) into 4 to 8 runs of about equal work."""
    sg = model.main
    if len(units) < MIN_UNITS:
        return []
    pos = {op: k for k, op in enumerate(analysis.topological_order(sg).tolist())}
    ordered = sorted(units, key=lambda u: min(pos[o] for o in u.ops))
    # units are atomic (state groups stay whole); their work decides the cuts
    w = np.array(
        [float(work.flops[list(u.ops)].sum() + 4 * work.bytes[list(u.ops)].sum()) for u in ordered]
    )
    k = int(np.clip(len(ordered) // 8, MIN_SEGMENTS, MAX_SEGMENTS))
    total = float(w.sum())
    if total <= 0:
        w = np.ones(len(ordered))
        total = float(len(ordered))
    cum = np.cumsum(w)
    cuts = [0]
    for j in range(1, k):
        c = int(np.searchsorted(cum, total * j / k)) + 1
        if c > cuts[-1] and c < len(ordered):
            cuts.append(c)
    cuts.append(len(ordered))
    segs = []
    for a, b in itertools.pairwise(cuts):
        chunk = ordered[a:b]
        ops = sorted({o for u in chunk for o in u.ops}, key=lambda o: pos[o])
        helpers = sorted({h for u in chunk for h in u.helpers})
        if len(ops) < 2 or len(ops) * 4 > max(sg.num_ops, 4) * 3:
            continue
        segs.append(Segment(ops, helpers))
    return segs if len(segs) >= 2 else []
