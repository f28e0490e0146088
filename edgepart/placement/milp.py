"""Latency MILP on HiGHS: convex partitions (slots) per unit, scheduled, with symmetry breaking.

The model follows the latency integer program of Tarnawski et al. (NeurIPS'20), generalized to
heterogeneous processors, memory domains, links and several partitions per unit:

* every unit ``u`` has ``q_u`` *slots* (1 on a ``single_partition`` processor, ``slots``
  otherwise), each one partition: ``x[v, s] = 1`` puts node ``v`` in slot ``s`` (admissible
  processors only), each node in exactly one slot;
* **convexity** per slot with Tarnawski's monotone variables: ``z[v, s] >= x[v, s]``,
  ``z[v, s] <= z[u, s]`` and ``z[v, s] <= x[v, s] - x[u, s] + 1`` along every edge ``u -> v``
  (once a path leaves a slot it cannot come back);
* **schedule**: a slot starts at ``S_s``, lasts its dispatch (if used) plus its nodes' latencies
  (plus, on copying processors, the transfers into and out of it) and ends at ``F_s``; a node's
  output is available at ``L_v >= F_s`` of its slot; a slot starts after each input arrives in
  its domain (``A[u, d]``: ``L_u`` plus the link cost from ``u``'s domain, or the self-link from
  another unit of the same domain); slots of one unit run in order; the makespan ``T`` covers
  every output's delivery to the host;
* **memory** per unit (weights plus the largest activation) and **colocation** (a group's nodes
  share a unit);
* **symmetry breaking** for identical units of a processor: a unit is used only if the previous
  one is, and used units start in order of their first slot's start (every solution has such a
  relabelling with the same makespan);
* **warm start** from a placement (the heuristic's), whose makespan also caps the big-M terms.

When every processor runs one partition per unit and no unit copies, the model *is* the
evaluation function's (each unit's nodes form its one partition, started as soon as its inputs
arrive), so its optimum is the optimum and its dual bound a lower bound; :attr:`MilpResult.exact`
says so. Otherwise the slots restrict the partitions a unit may run and copies are charged per
slot, so the MILP is a heuristic whose plans the evaluation function judges (the returned
placement is re-evaluated) and whose bound is not reported. HiGHS runs on one thread with a
time limit (and, for deterministic runs, a node limit).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from edgepart.placement._bounds import io_costs
from edgepart.placement._highs import INF, Model, new_highs
from edgepart.placement.constraints import admissible, group_members
from edgepart.placement.costgraph import CostGraph
from edgepart.placement.evaluate import Evaluation, evaluate
from edgepart.placement.lower_bounds import _edge_arrays

__all__ = ["MilpResult", "canonical_units", "milp_exact_for", "solve_milp"]


@dataclass(frozen=True, eq=False)
class MilpResult:
    units: np.ndarray | None  # best placement found (None: none)
    evaluation: Evaluation | None
    objective: float  # the MILP's makespan of that placement (inf: none)
    bound: float  # HiGHS's dual bound (-inf if none); a lower bound only if ``exact``
    exact: bool  # the model equals the evaluation function's
    optimal: bool  # HiGHS proved optimality (within its gap tolerance)
    status: str
    seconds: float
    columns: int
    rows: int


def milp_exact_for(g: CostGraph) -> bool:
    """The MILP models the evaluation exactly: one partition per unit everywhere, no copies."""
    return bool(g.proc_single.all() and not g.proc_copies.any())


def solve_milp(
    g: CostGraph,
    *,
    time_limit: float = 60.0,
    start: np.ndarray | None = None,
    slots: int = 2,
    node_limit: int | None = None,
    fixed: np.ndarray | None = None,
) -> MilpResult:
    """Solve the latency MILP (module docstring).

    Parameters
    ----------
    g : CostGraph
        The problem.
    time_limit : float
        Seconds for HiGHS.
    start : numpy.ndarray
        A feasible placement (unit per node) to warm-start from; its latency bounds the big-M.
    slots : int
        Partitions per unit on processors without ``single_partition``.
    node_limit : int
        Branch-and-bound node limit (makes the run independent of the machine's speed).
    fixed : numpy.ndarray
        ``[N]`` bool: nodes whose unit is fixed to ``start``'s (large-neighbourhood search).
    """
    t0 = time.perf_counter()
    adm = admissible(g)
    n = g.num_nodes
    nu = g.num_units
    nd = len(g.domain_names)
    uproc = g.unit_proc
    dom_u = g.proc_domain[uproc]
    exact = milp_exact_for(g)
    q_u = np.where(g.proc_single[uproc], 1, max(1, slots))
    slot_unit = np.repeat(np.arange(nu), q_u)
    slot_idx = np.concatenate([np.arange(k) for k in q_u])
    ns = len(slot_unit)
    slot_proc = uproc[slot_unit]
    slot_dom = dom_u[slot_unit]
    lat = g.latency
    disp = g.proc_dispatch
    src, dst, xfer = _edge_arrays(g)
    a_in, o_out = io_costs(g)

    # big-M: the warm start's latency, or everything on the slowest admissible processor
    if start is not None:
        ev0 = evaluate(g, start)
        ub = ev0.latency_s if ev0.feasible else math.inf
    else:
        ub = math.inf
    if not math.isfinite(ub):
        worst = np.where(adm, lat, 0.0).max(axis=1).sum() + disp.max() * n
        ub = float(worst + xfer.max(initial=0.0) * max(1, len(src)) + a_in.max() + o_out.max())
    # Times are scaled so the start's makespan is 1000 (HiGHS's tolerances are absolute).
    # Times in solutions better than the start stay below it; 3x leaves room for phantom
    # arrivals in domains nobody reads from and for the model's pessimism where it is not exact.
    scale = 1000.0 / ub if ub > 0 else 1.0
    lat = np.where(np.isfinite(lat), lat * scale, lat)
    disp = disp * scale
    xfer = xfer * scale
    a_in = a_in * scale
    o_out = o_out * scale
    big = 3000.0

    m = Model()
    x = np.full((n, ns), -1, dtype=np.int64)
    ok = adm[:, slot_proc]  # [n, ns]
    if fixed is not None and start is not None:
        ok &= ~fixed[:, None] | (slot_unit[None, :] == np.asarray(start)[:, None])
    x[ok] = m.cols(int(ok.sum()), hi=1.0, integer=True)
    for v in range(n):
        c = x[v][x[v] >= 0]
        m.row(c, np.ones(len(c)), 1.0, 1.0)
    used = m.cols(ns, hi=1.0)
    start_c = m.cols(ns)
    fin = m.cols(ns)
    L = m.cols(n)
    T = m.cols(1, cost=1.0)[0]
    for s in range(ns):
        on = np.flatnonzero(x[:, s] >= 0)
        for v in on.tolist():
            m.row([used[s], x[v, s]], [1.0, -1.0], lo=0.0)
        # F = S + dispatch * used + sum lat x  (copies added below)
        p = int(slot_proc[s])
        m.row(
            np.concatenate([[fin[s], start_c[s], used[s]], x[on, s]]),
            np.concatenate([[1.0, -1.0, -disp[p]], -lat[on, p]]),
            lo=0.0,
        )
        for v in on.tolist():
            # L_v >= F_s - M (1 - x)
            m.row([L[v], fin[s], x[v, s]], [1.0, -1.0, -big], lo=-big)
    # convexity (Tarnawski): z[v, s] = 1 for s's nodes and everything that precedes them
    z = m.cols(n * ns, hi=1.0).reshape(n, ns)
    for s in range(ns):
        for v in np.flatnonzero(x[:, s] >= 0).tolist():
            m.row([z[v, s], x[v, s]], [1.0, -1.0], lo=0.0)
    for i in range(len(src)):
        u, v = int(src[i]), int(dst[i])
        for s in range(ns):
            m.row([z[v, s], z[u, s]], [1.0, -1.0], hi=0.0)
            # leaving s along u -> v: nothing after v may be in s
            cols, vals = [z[v, s]], [1.0]
            if x[v, s] >= 0:
                cols.append(x[v, s])
                vals.append(-1.0)
            if x[u, s] >= 0:
                cols.append(x[u, s])
                vals.append(1.0)
                m.row(cols, vals, hi=1.0)
    # arrivals A[u, d]
    A = m.cols(n * nd).reshape(n, nd)
    xd = [[x[u][(slot_dom == d) & (x[u] >= 0)] for d in range(nd)] for u in range(n)]
    has_out = np.zeros(n, dtype=bool)
    has_out[src] = True
    edge_cost = np.zeros((n, nd, nd))
    for i in range(len(src)):
        u = int(src[i])
        edge_cost[u] = np.maximum(edge_cost[u], xfer[i])
    for u in np.flatnonzero(has_out).tolist():
        for d in range(nd):
            m.row([A[u, d], L[u]], [1.0, -1.0], lo=0.0)
            for d2 in range(nd):
                if d2 == d:
                    continue
                c = float(edge_cost[u, d2, d])
                cols = xd[u][d2]
                if c <= 0 or not len(cols):
                    continue
                # A[u, d] >= L_u + c - M (1 - X_u(d2))
                m.row(
                    np.concatenate([[A[u, d], L[u]], cols]),
                    np.concatenate([[1.0, -1.0], -big * np.ones(len(cols))]),
                    lo=c - big,
                )
    for i in range(len(src)):
        u, v = int(src[i]), int(dst[i])
        for s in range(ns):
            if x[v, s] < 0:
                continue
            d = int(slot_dom[s])
            # S_s >= A[u, d] - M (1 - x[v, s] + x[u, s])
            cols = [start_c[s], A[u, d], x[v, s]]
            vals = [1.0, -1.0, -big]
            if x[u, s] >= 0:
                cols.append(x[u, s])
                vals.append(big)
            m.row(cols, vals, lo=-big)
            if g.self_link[d]:
                # from another unit of the same domain: the self-link
                sc = float(xfer[i][d, d])
                un = slot_unit[s]
                same_dom_other = [
                    int(x[u, s2])
                    for s2 in range(ns)
                    if slot_dom[s2] == d and slot_unit[s2] != un and x[u, s2] >= 0
                ]
                if sc > 0 and same_dom_other:
                    cols = [start_c[s], L[u], x[v, s], *same_dom_other]
                    vals = [1.0, -1.0, -big, *([-big] * len(same_dom_other))]
                    m.row(cols, vals, lo=sc - 2 * big)
            # slots of one unit in order; a node in a later slot than its predecessor's slot
            # on the same unit also waits (covered by the unit order rows below)
    # model inputs
    for v in range(n):
        for s in range(ns):
            if x[v, s] >= 0 and a_in[v, slot_proc[s]] > 0:
                m.row([start_c[s], x[v, s]], [1.0, -a_in[v, slot_proc[s]]], lo=0.0)
    # outputs and makespan
    for v in range(n):
        cols = [T, L[v]]
        vals = [1.0, -1.0]
        for s in np.flatnonzero(x[v] >= 0).tolist():
            c = o_out[v, slot_proc[s]]
            if c > 0:
                cols.append(x[v, s])
                vals.append(-c)
        m.row(cols, vals, lo=0.0)
    # unit order of slots, copies charged per slot
    for s in range(ns):
        if slot_idx[s] > 0:
            m.row([start_c[s], fin[s - 1]], [1.0, -1.0], lo=0.0)
            m.row([used[s - 1], used[s]], [1.0, -1.0], lo=0.0)
    if g.proc_copies.any():
        for s in range(ns):
            if not g.proc_copies[slot_proc[s]]:
                continue
            extra_c, extra_v = [], []
            d = int(slot_dom[s])
            for i in range(len(src)):
                u, v = int(src[i]), int(dst[i])
                c = float(xfer[i][:, d].max())
                if c <= 0 or (x[v, s] < 0 and x[u, s] < 0):
                    continue
                # in: v in s, u not; out: u in s, v not (charged once per edge and slot)
                for a, b in ((v, u), (u, v)):
                    if x[a, s] < 0:
                        continue
                    w = m.cols(1, hi=1.0)[0]
                    cols = [w, x[a, s]] + ([x[b, s]] if x[b, s] >= 0 else [])
                    vals = [1.0, -1.0] + ([1.0] if x[b, s] >= 0 else [])
                    m.row(cols, vals, lo=0.0)
                    extra_c.append(w)
                    extra_v.append(-c)
            if extra_c:
                m.row([fin[s], start_c[s], *extra_c], [1.0, -1.0, *extra_v], lo=0.0)
    # memory and colocation per unit
    for u in range(nu):
        cap = float(g.proc_memory[uproc[u]])
        ss = np.flatnonzero(slot_unit == u)
        if math.isfinite(cap):
            arena = m.cols(1)[0]
            cols, vals = [arena], [1.0]
            for s in ss.tolist():
                on = np.flatnonzero(x[:, s] >= 0)
                cols += x[on, s].tolist()
                vals += g.weight_bytes[on].astype(float).tolist()
                for v in on.tolist():
                    if g.activation_bytes[v] > 0:
                        m.row([arena, x[v, s]], [1.0, -float(g.activation_bytes[v])], lo=0.0)
            m.row(cols, vals, hi=cap)
    for members in group_members(g):
        if len(members) < 2:
            continue
        a = int(members[0])
        for b in members[1:].tolist():
            for u in range(nu):
                ss = np.flatnonzero(slot_unit == u)
                ca = [int(x[a, s]) for s in ss if x[a, s] >= 0]
                cb = [int(x[b, s]) for s in ss if x[b, s] >= 0]
                if ca or cb:
                    m.row(ca + cb, [1.0] * len(ca) + [-1.0] * len(cb), 0.0, 0.0)
    # symmetry breaking over identical units: used in order, first starts in order
    for p in range(g.num_procs):
        f, k = int(g.proc_first_unit[p]), int(g.proc_units[p])
        for u in range(f, f + k - 1):
            s0 = int(np.flatnonzero(slot_unit == u)[0])
            s1 = int(np.flatnonzero(slot_unit == u + 1)[0])
            m.row([used[s0], used[s1]], [1.0, -1.0], lo=0.0)
            m.row([start_c[s1], start_c[s0], used[s1]], [1.0, -1.0, -big], lo=-big)

    warm = None
    if start is not None:
        warm = _warm_values(g, m, canonical_units(g, np.asarray(start)), x, slot_unit, slot_idx)
    h = new_highs(time_limit=max(0.01, time_limit - (time.perf_counter() - t0)), mip=True)
    if node_limit is not None:
        h.setOptionValue("mip_max_nodes", int(node_limit))
    status, values, bound = m.solve(h, start=warm)
    units = None
    ev = None
    obj = math.inf
    if values.size and np.isfinite(values).all() and (values[x[x >= 0]] > 0.5).any():
        xv = values[np.maximum(x, 0)] * (x >= 0)
        s_of = np.argmax(xv, axis=1)
        if (xv[np.arange(n), s_of] > 0.5).all():
            units = slot_unit[s_of].astype(np.int64)
            ev = evaluate(g, units)
            obj = float(values[T]) / scale
    optimal = status == "Optimal"
    bound = bound / scale
    return MilpResult(
        units,
        ev,
        obj,
        bound if math.isfinite(bound) else -INF,
        exact,
        optimal,
        status,
        time.perf_counter() - t0,
        m.num_cols,
        len(m.r_lo),
    )


def canonical_units(g: CostGraph, units: np.ndarray) -> np.ndarray:
    """Relabel identical units so each processor's used units come first, in order of their
    first partition's start (the MILP's symmetry breaking); the evaluation is unchanged."""
    ev = evaluate(g, units)
    if not ev.feasible:
        return units
    first_start: dict[int, float] = {}
    for q, u in enumerate(ev.part_unit.tolist()):
        first_start.setdefault(u, float(ev.part_start[q]))
    out = units.copy()
    for p in range(g.num_procs):
        f, k = int(g.proc_first_unit[p]), int(g.proc_units[p])
        used = sorted(
            (u for u in range(f, f + k) if u in first_start), key=lambda u: (first_start[u], u)
        )
        relabel = {u: f + i for i, u in enumerate(used)}
        for u, nu in relabel.items():
            out[units == u] = nu
    result: np.ndarray = out
    return result


def _warm_values(
    g: CostGraph,
    m: Model,
    units: np.ndarray,
    x: np.ndarray,
    slot_unit: np.ndarray,
    slot_idx: np.ndarray,
) -> np.ndarray | None:
    """Column values with only the ``x`` of ``units`` set (HiGHS completes the rest); partitions
    of a unit map to its slots in creation order, extra ones into the last slot."""
    ev = evaluate(g, units)
    if not ev.feasible:
        return None
    vals = np.full(m.num_cols, np.nan)
    xs = np.zeros(x.shape)
    seen: dict[int, int] = {}
    part_slot = np.zeros(ev.num_partitions, dtype=np.int64)
    for q, u in enumerate(ev.part_unit.tolist()):
        k = seen.get(u, 0)
        seen[u] = k + 1
        ss = np.flatnonzero(slot_unit == u)
        part_slot[q] = ss[min(k, len(ss) - 1)]
    for v in range(g.num_nodes):
        s = part_slot[ev.part_of[v]]
        if x[v, s] < 0:
            return None
        xs[v, s] = 1.0
    have = x >= 0
    vals[x[have]] = xs[have]
    return vals
