"""Which layers to split across processor units, and at what ratio (tensor parallelism).

Two kinds of split, both on a solved model (a :class:`~edgepart.lowering.from_model.ModelProblem`
with a placement of its nodes):

* :func:`latency_splits`, CoDL's latency-balanced split: a layer placed on unit ``u0`` is shared
  with other units so that every shard finishes at the same time, transfers included. With
  shard ``s`` on unit ``u`` taking a fraction ``r`` of the layer, its finish time is
  ``a_u + r * b_u``: ``a_u`` the fixed part (the unit's dispatch, the kernel's launch, the link
  latencies of sending the input there and the result back), ``b_u`` what scales (the kernel's
  work at ``r = 1``, the bytes of the result over the link). All shards finish together at
  ``T = (1 + sum a_u / b_u) / sum 1 / b_u`` with ``r_u = (T - a_u) / b_u``; units are added
  fastest first while ``T`` falls, shards that would not fit their unit's memory are capped
  there and the rest rebalanced. The split costs ``T`` plus the collective (CONCATENATION or
  ADD on ``u0``, with one more dispatch: ``u0``'s partition is cut around the shards). A layer
  is a candidate when that beats the layer alone on ``u0`` by at least ``min_gain``.
* :func:`memory_splits`: a layer whose weights no unit can hold is split across every unit of
  the processors that run it, in shards that fit (a 134 MB FULLY_CONNECTED on four 128 MB
  units: four 33.5 MB shards, one per unit).

Only exact modes are chosen (output channels, columns, batch): a split the partitioner takes
on its own never changes the model's results. Whether the candidates are taken is decided on
the whole model by :mod:`edgepart.deploy.splits` (the predicted latency of the best placement
with them against the best without).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgepart.errors import UsageError
from edgepart.ir.graph import Model
from edgepart.ir.split import EXACT_MODES, MAX_SHARDS, SplitSpec, shard_sizes, split_extent
from edgepart.ir.split import split_modes as _split_modes
from edgepart.lowering.from_model import ModelProblem

__all__ = [
    "LATENCY_MAX_SHARDS",
    "MEMORY_HEADROOM",
    "SPLIT_GAIN",
    "SplitChoice",
    "latency_splits",
    "memory_splits",
]

SPLIT_GAIN = 0.10
"""A split is taken when it is predicted to save at least this fraction of the latency."""
LATENCY_MAX_SHARDS = 4
MEMORY_HEADROOM = 0.9
"""Shards may fill at most this fraction of a unit's memory (the rest: activations, arena)."""


@dataclass(frozen=True)
class SplitChoice:
    """A split to try: the rewrite, the unit of each shard and what the balance predicts.

    ``units`` are global unit indices of the *unsplit* problem's cost graph, one per shard;
    ``collective_unit`` runs the all-gather. ``unsplit_s`` is the layer alone on its unit,
    ``split_s`` the balanced shards plus the collective (both predictions of the cost model).
    """

    spec: SplitSpec
    reason: str  # "latency" or "memory"
    node: int
    units: tuple[int, ...]
    collective_unit: int
    unsplit_s: float
    split_s: float

    @property
    def gain(self) -> float:
        """Fraction of the layer's time the split saves (``1 - split / unsplit``)."""
        if not self.unsplit_s > 0 or not math.isfinite(self.split_s):
            return 0.0
        return 1.0 - self.split_s / self.unsplit_s


def _layer_op(model: Model, problem: ModelProblem, v: int) -> tuple[int, str] | None:
    """The op of node ``v`` worth splitting (most work) and its first exact mode."""
    best: tuple[float, int, str] | None = None
    flops = problem.costs.work.flops
    for op in problem.node_ops(v).tolist():
        modes = _split_modes(model, op, problem.subgraph)
        usable = [m for m, why in modes.items() if not why and m in EXACT_MODES]
        if not usable:
            continue
        key = (float(flops[op]), -op, usable[0])
        if best is None or key[:2] > best[:2]:
            best = key
    return None if best is None else (-best[1], best[2])


def _link(problem: ModelProblem, a: int, b: int) -> tuple[float, float]:
    """(latency, seconds per byte) between the domains of processors ``a`` and ``b``."""
    hw = problem.costs.cm.hardware
    da, db = hw.processors[a].domain, hw.processors[b].domain
    if da == db:
        return 0.0, 0.0
    lk = hw.link(da, db)
    if lk is None or not lk.bandwidth > 0:
        return math.inf, math.inf
    return lk.latency_s, 1.0 / lk.bandwidth


def _balance(
    a: Sequence[float], b: Sequence[float], cap: Sequence[float]
) -> tuple[float, list[float]]:
    """Fractions ``r`` (summing to 1, ``r_i <= cap_i``) finishing together: ``(T, r)``."""
    n = len(a)
    free = list(range(n))
    r = [0.0] * n
    left = 1.0
    while free:
        inv = sum(1.0 / b[i] for i in free)
        t = (left + sum(a[i] / b[i] for i in free)) / inv
        over = [i for i in free if (t - a[i]) / b[i] > cap[i]]
        if not over:
            for i in free:
                r[i] = (t - a[i]) / b[i]
            break
        for i in over:
            r[i] = cap[i]
            left -= cap[i]
            free.remove(i)
        if left <= 0:
            break
    if any(x <= 0 for x in r) or abs(sum(r) - 1.0) > 1e-6:
        return math.inf, r
    return max(a[i] + r[i] * b[i] for i in range(n)), r


def latency_splits(
    problem: ModelProblem,
    units: np.ndarray,
    *,
    min_gain: float = SPLIT_GAIN,
    max_shards: int = LATENCY_MAX_SHARDS,
) -> list[SplitChoice]:
    """Layers worth splitting for latency, best gain first (see the module docstring).

    Parameters
    ----------
    problem
        The unsplit model under its profile.
    units
        The unit of every node in the unsplit plan.
    min_gain
        The least fraction of the layer's time a split must save.
    max_shards
        Most shards per layer.

    Returns
    -------
    list of SplitChoice
        The candidates (reason ``"latency"``), largest predicted saving first.
    """
    g, gc, model = problem.graph, problem.costs, problem.model
    sg = model.subgraphs[problem.subgraph]
    hw = gc.cm.hardware
    out: list[SplitChoice] = []
    lat = np.asarray(gc.latency, dtype=np.float64)
    for v in range(g.num_nodes):
        picked = _layer_op(model, problem, v)
        if picked is None:
            continue
        op, mode = picked
        u0 = int(units[v])
        p0 = int(g.unit_proc[u0])
        t0 = float(lat[op, p0])
        if not (math.isfinite(t0) and t0 > 0):
            continue
        x = int(sg.op_inputs.row(op)[0])
        y = int(sg.op_outputs.row(op)[0])
        in_b, out_b = float(sg.tensor_nbytes[x]), float(sg.tensor_nbytes[y])
        w_b = float(sg.tensor_nbytes[sg.op_inputs.row(op)[1]]) if mode != "batch" else 0.0
        sliced = sg.op_name(op) == "DEPTHWISE_CONV_2D" or mode == "batch"
        # per unit: fixed cost a, cost per fraction b, largest fraction its memory allows
        o0 = hw.processors[p0].op_overhead_s
        cand: list[tuple[float, float, float, int]] = [(o0, max(t0 - o0, 1e-12), 1.0, u0)]
        for u in range(g.num_units):
            p = int(g.unit_proc[u])
            if u == u0 or not problem.support.supported[op, p]:
                continue
            tp = float(lat[op, p])
            if not (math.isfinite(tp) and tp > 0):
                continue
            l_in, s_in = _link(problem, p0, p)
            l_out, s_out = _link(problem, p, p0)
            if not math.isfinite(l_in + l_out):
                continue
            op_p = hw.processors[p].op_overhead_s
            a = float(g.proc_dispatch[p]) + op_p + l_in + l_out + (0 if sliced else in_b * s_in)
            b = max(tp - op_p, 1e-12) + out_b * s_out + (in_b * s_in if sliced else 0.0)
            room = float(g.proc_memory[p]) * MEMORY_HEADROOM
            cap = 1.0 if not math.isfinite(room) or w_b <= 0 else min(1.0, room / w_b)
            cand.append((a, b, cap, u))
        if len(cand) < 2:
            continue
        first, others = cand[0], sorted(cand[1:], key=lambda c: (c[0] + c[1], c[3]))
        chosen = [first]
        best_t, best_r = math.inf, [1.0]
        for c in others[: max_shards - 1]:
            trial = [*chosen, c]
            t, r = _balance([q[0] for q in trial], [q[1] for q in trial], [q[2] for q in trial])
            if t < best_t:
                chosen, best_t, best_r = trial, t, r
            else:
                break
        if len(chosen) < 2:
            continue
        extent, granule = split_extent(model, op, mode, problem.subgraph)
        try:
            sizes = shard_sizes(extent, best_r, granule)
        except UsageError:  # too small for this many shards: not a candidate
            continue
        gather = float(g.proc_dispatch[p0]) + _gather_s(problem, p0, out_b, len(chosen))
        split_s = best_t + gather
        choice = SplitChoice(
            spec=SplitSpec((op,), mode, sizes),
            reason="latency",
            node=v,
            units=tuple(c[3] for c in chosen),
            collective_unit=u0,
            unsplit_s=t0,
            split_s=split_s,
        )
        if choice.gain >= min_gain:
            out.append(choice)
    out.sort(key=lambda c: (-(c.unsplit_s - c.split_s), c.node))
    return out


def _gather_s(problem: ModelProblem, p: int, nbytes: float, k: int) -> float:
    """Roofline time of the all-gather on processor ``p``: read and write the output once."""
    spec = problem.costs.cm.hardware.processors[p]
    bw = spec.bandwidth if spec.bandwidth > 0 else math.inf
    return spec.op_overhead_s * (1 if k <= 5 else 2) + 2.0 * nbytes / bw


def memory_splits(problem: ModelProblem) -> list[SplitChoice]:
    """Splits for the layers whose node fits no unit (see the module docstring).

    Parameters
    ----------
    problem
        The unsplit model under its profile.

    Returns
    -------
    list of SplitChoice
        Per node that no supporting unit can hold: its largest splittable layer spread over
        every unit of the processors supporting it, in equal shards that fit (reason
        ``"memory"``; ``unsplit_s`` is infinite). Nodes with no splittable layer are left to
        the solver's infeasibility error.
    """
    g, model = problem.graph, problem.model
    sg = model.subgraphs[problem.subgraph]
    need = g.weight_bytes + g.activation_bytes
    sup = g.supported()
    out: list[SplitChoice] = []
    for v in range(g.num_nodes):
        caps = g.proc_memory[sup[v]]
        if len(caps) == 0 or need[v] <= caps.max():
            continue
        picked = _layer_op(model, problem, v)
        if picked is None:
            continue
        op, mode = picked
        w = float(sg.tensor_nbytes[sg.op_inputs.row(op)[1]])
        rest = float(need[v]) - w
        hosts = [
            u
            for u in range(g.num_units)
            if problem.support.supported[op, int(g.unit_proc[u])]
            and g.proc_memory[g.unit_proc[u]] * MEMORY_HEADROOM > rest
        ]
        if not hosts:
            continue
        hosts.sort(key=lambda u: (-float(g.proc_memory[g.unit_proc[u]]), u))
        room = min(float(g.proc_memory[g.unit_proc[u]]) * MEMORY_HEADROOM - rest for u in hosts)
        k = len(hosts)
        while k < MAX_SHARDS and w / k > room:
            k += len(hosts)
        k = min(k, MAX_SHARDS)
        extent, granule = split_extent(model, op, mode, problem.subgraph)
        try:
            sizes = shard_sizes(extent, [1.0] * k, granule)
        except UsageError:  # cannot be cut this finely: the solver reports the node
            continue
        shard_units = tuple(hosts[s % len(hosts)] for s in range(k))
        out.append(
            SplitChoice(
                spec=SplitSpec((op,), mode, sizes),
                reason="memory",
                node=v,
                units=shard_units,
                collective_unit=shard_units[0],
                unsplit_s=math.inf,
                split_s=math.nan,
            )
        )
    return out
