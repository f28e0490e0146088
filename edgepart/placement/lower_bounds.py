"""Lower bounds on the best latency and period any placement can reach (so gaps are known).

Every bound here is valid for the evaluation function (:mod:`~edgepart.placement.evaluate`)
under every model option: no feasible placement scores below it. The proofs rest on three facts
of the evaluation. (1) A partition's end is at least its start plus its dispatch plus its nodes'
latencies; for a node ``v`` define its *virtual completion* ``e(v)`` as the partition's start
plus dispatch plus the latencies of the partition's nodes up to ``v`` in execution order, so
``e(v) <= end(partition)``, ``e(v) >= e(u) + lat(v)`` when a predecessor ``u`` shares the
partition, and otherwise ``e(v) >= end(partition of u) + transfer + dispatch + lat(v)`` (a
partition starts after its inputs arrive; a copying unit spends the transfer inside a partition
on the path instead, which is no shorter). (2) A unit's load is at least the latencies of its
nodes (plus one dispatch if it is used) and the makespan is at least every unit's load. (3) A
tensor consumed in a memory domain its producer is not in moves into that domain at least once,
costing at least the cheapest link into it.

* :func:`critical_path_bound` (latency): the longest path where every node takes its cheapest
  processor, with a transfer and a dispatch wherever consecutive nodes change processor, from
  the model inputs' arrival to the outputs' delivery (a DP over nodes and processors).
* :func:`load_bound`: total minimum work over all units, or (throughput) the LP below without
  its transfer rows.
* :func:`lp_latency_bound`: a linear relaxation that couples the two: fractional placements
  ``x[v, p]``, virtual completions along every edge with fractional domain and processor
  changes (``y >= X_u(d) - X_v(d)``), per-processor load (work / units) and memory rows; the
  LP optimum is a lower bound because every placement gives a feasible LP point.
* :func:`lp_period_bound` (throughput): fractional placements, per-processor load with dispatch
  (``w_p >= x[v, p]``) and, on copying processors alone in their domain, the transfers their
  units make; per memory domain the tensors that must enter it and leave it (inputs and outputs
  included), spread over the links into and out of it; memory rows.

:func:`lower_bound` takes the best of them. LPs run on HiGHS with a time limit; an LP that does
not reach optimality contributes nothing (its intermediate value is not a bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from edgepart.placement._bounds import io_costs
from edgepart.placement._highs import INF, Model, new_highs
from edgepart.placement.constraints import admissible
from edgepart.placement.costgraph import CostGraph

__all__ = [
    "LP_MAX_NODES",
    "LowerBound",
    "critical_path_bound",
    "load_bound",
    "lower_bound",
    "lp_latency_bound",
    "lp_period_bound",
]


# The LP relaxations are built for graphs up to this size (their models grow with nodes times
# processors plus edges times domains); larger graphs get the combinatorial bounds only.
LP_MAX_NODES = 20_000


@dataclass(frozen=True)
class LowerBound:
    """The best bound and what each method gave (``-inf``: not run or not solved)."""

    value: float
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def method(self) -> str:
        return max(self.parts, key=lambda k: (self.parts[k], k)) if self.parts else ""


def _edge_arrays(g: CostGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(src, dst, xfer[E, D, D])``: per edge the largest transfer cost of its tensors between
    every pair of domains (0 within a domain without a self-link)."""
    nd = len(g.domain_names)
    tc = g.tensor_consumers
    t = tc.row_ids()
    s = g.tensor_src[t]
    keep = s >= 0
    t, s, v = t[keep], s[keep], tc.idx[keep]
    free = np.eye(nd, dtype=bool) & ~g.self_link[:, None]
    cost = np.where(free[None, :, :], 0.0, g.transfer_cost[t])
    key = s * g.num_nodes + v
    order = np.argsort(key, kind="stable")
    key, cost = key[order], cost[order]
    uniq, first = np.unique(key, return_index=True)
    xfer = np.maximum.reduceat(cost, first, axis=0) if len(key) else np.zeros((0, nd, nd))
    return uniq // g.num_nodes, uniq % g.num_nodes, xfer


def critical_path_bound(g: CostGraph, adm: np.ndarray | None = None) -> float:
    """Longest path with each node on its cheapest processor (see the module docstring)."""
    adm = admissible(g) if adm is None else adm
    npr = g.num_procs
    lat = np.where(adm, g.latency, np.inf)
    dom = g.proc_domain
    disp = g.proc_dispatch
    src, dst, xfer = _edge_arrays(g)
    a_in, o_out = io_costs(g)
    # per edge [r, q]: transfer between processors' domains plus q's dispatch; 0 if r == q
    x_pp = xfer[:, dom][:, :, dom] + disp[None, None, :]
    idx = np.arange(npr)
    x_pp[:, idx, idx] = 0.0
    order = np.argsort(dst, kind="stable")
    src, dst, x_pp = src[order], dst[order], x_pp[order]
    eptr = np.searchsorted(dst, np.arange(g.num_nodes + 1))
    f = np.empty((g.num_nodes, npr))
    best = 0.0
    for v in range(g.num_nodes):
        ready = disp + a_in[v]
        a, b = eptr[v], eptr[v + 1]
        if b > a:
            via = (f[src[a:b]][:, :, None] + x_pp[a:b]).min(axis=1)  # [k, q]
            ready = np.maximum(ready, via.max(axis=0)) if b - a > 1 else np.maximum(ready, via[0])
        f[v] = ready + lat[v]
        best = max(best, float(np.min(f[v] + o_out[v])))
    return best


def load_bound(g: CostGraph, adm: np.ndarray | None = None) -> float:
    """Total minimum work over all units, and the largest single node (plus a dispatch)."""
    adm = admissible(g) if adm is None else adm
    lat = np.where(adm, g.latency, np.inf)
    work = float(lat.min(axis=1).sum())
    one = float((lat + g.proc_dispatch[None, :]).min(axis=1).max())
    return max(work / g.num_units, one)


def _placement_cols(m: Model, adm: np.ndarray) -> np.ndarray:
    """``x[v, p]`` column indices (-1 where inadmissible), with sum-to-one rows."""
    n, npr = adm.shape
    x = np.full((n, npr), -1, dtype=np.int64)
    cnt = int(adm.sum())
    x[adm] = m.cols(cnt, hi=1.0)
    for v in range(n):
        cols = x[v][x[v] >= 0]
        m.row(cols, np.ones(len(cols)), 1.0, 1.0)
    return x


def _domain_sums(g: CostGraph, x: np.ndarray, v: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    cols = x[v][(g.proc_domain == d) & (x[v] >= 0)]
    return cols, np.ones(len(cols))


def _memory_rows(g: CostGraph, m: Model, x: np.ndarray) -> None:
    for p in range(g.num_procs):
        cap = float(g.proc_memory[p])
        if not math.isfinite(cap):
            continue
        on = np.flatnonzero(x[:, p] >= 0)
        w = g.weight_bytes[on].astype(np.float64)
        if w.sum() > 0:
            m.row(x[on, p], w, hi=cap * int(g.proc_units[p]))


def lp_latency_bound(
    g: CostGraph, adm: np.ndarray | None = None, *, time_limit: float = 30.0
) -> float:
    """The latency LP relaxation (module docstring); ``-inf`` if HiGHS does not solve it."""
    adm = admissible(g) if adm is None else adm
    n, npr = g.num_nodes, g.num_procs
    lat = np.where(adm, g.latency, 0.0)
    disp = g.proc_dispatch
    a_in, o_out = io_costs(g)
    src, dst, xfer = _edge_arrays(g)
    nd = len(g.domain_names)
    m = Model()
    x = _placement_cols(m, adm)
    e = m.cols(n)
    t_col = m.cols(1, cost=1.0)[0]
    for v in range(n):
        cols = x[v][adm[v]]
        c = (lat[v] + disp + a_in[v])[adm[v]]
        # e[v] >= sum_p (disp + input arrival + lat) x[v, p]
        m.row(np.concatenate([[e[v]], cols]), np.concatenate([[1.0], -c]), lo=0.0)
        oc = o_out[v][adm[v]]
        m.row(np.concatenate([[t_col, e[v]], cols]), np.concatenate([[1.0, -1.0], -oc]), lo=0.0)
    if len(src):
        ne = len(src)
        y = m.cols(ne, hi=1.0)
        z = m.cols(ne, hi=1.0)
        off = ~np.eye(nd, dtype=bool)
        dom = g.proc_domain
        for i in range(ne):
            u, v = int(src[i]), int(dst[i])
            cmin = float(xfer[i][off].min()) if nd > 1 else 0.0
            # processors of v that differ from u's: a change pays at least the cheapest
            # dispatch among v's admissible processors
            dmin = float(disp[adm[v]].min())
            cols = x[v][adm[v]]
            m.row(
                np.concatenate([[e[v], e[u], y[i], z[i]], cols]),
                np.concatenate([[1.0, -1.0, -cmin, -dmin], -lat[v][adm[v]]]),
                lo=0.0,
            )
            for d in range(nd):
                cu = x[u][(dom == d) & adm[u]]
                cv = x[v][(dom == d) & adm[v]]
                if len(cu) and cmin > 0:
                    # y >= X_u(d) - X_v(d)
                    m.row(
                        np.concatenate([[y[i]], cu, cv]),
                        np.concatenate([[1.0], -np.ones(len(cu)), np.ones(len(cv))]),
                        lo=0.0,
                    )
            if dmin > 0:
                for p in range(npr):
                    if adm[u, p]:
                        cols2 = [z[i], x[u, p]] + ([x[v, p]] if adm[v, p] else [])
                        vals2 = [1.0, -1.0] + ([1.0] if adm[v, p] else [])
                        m.row(cols2, vals2, lo=0.0)
    for p in range(npr):
        on = np.flatnonzero(adm[:, p])
        if len(on):
            m.row(
                np.concatenate([[t_col], x[on, p]]),
                np.concatenate([[-float(g.proc_units[p])], lat[on, p]]),
                hi=0.0,
            )
    _memory_rows(g, m, x)
    h = new_highs(time_limit=time_limit)
    status, _, bound = m.solve(h)
    return bound if status == "Optimal" else -INF


def lp_period_bound(
    g: CostGraph,
    adm: np.ndarray | None = None,
    *,
    time_limit: float = 30.0,
    transfers: bool = True,
) -> float:
    """The throughput LP relaxation (module docstring); ``-inf`` if HiGHS does not solve it."""
    adm = admissible(g) if adm is None else adm
    npr = g.num_procs
    lat = np.where(adm, g.latency, 0.0)
    disp = g.proc_dispatch
    dom = g.proc_domain
    nd = len(g.domain_names)
    host = g.host_domain
    m = Model()
    x = _placement_cols(m, adm)
    per = m.cols(1, cost=1.0)[0]
    w = m.cols(npr, hi=1.0)
    for p in range(npr):
        for v in np.flatnonzero(adm[:, p]).tolist():
            m.row([w[p], x[v, p]], [1.0, -1.0], lo=0.0)
    # per domain: inflow and outflow terms (column, cost) for links and copying processors
    inflow: list[list[tuple[int, float]]] = [[] for _ in range(nd)]
    outflow: list[list[tuple[int, float]]] = [[] for _ in range(nd)]
    if transfers and nd > 1:
        tc = g.tensor_consumers
        for t in range(len(g.tensor_src)):
            s = int(g.tensor_src[t])
            cons = tc.row(t).tolist()
            for b in range(nd):
                if s >= 0:
                    srcs = [a for a in range(nd) if a != b]
                    cmin = float(g.transfer_cost[t, srcs, b].min())
                else:
                    if b == host:
                        continue
                    cmin = float(g.transfer_cost[t, host, b])
                if cmin <= 0:
                    continue
                zc = m.cols(1, hi=1.0)[0]
                for v in cons:
                    cv, _ = _domain_sums(g, x, v, b)
                    if not len(cv):
                        continue
                    if s >= 0:
                        cs, _ = _domain_sums(g, x, s, b)
                        m.row(
                            np.concatenate([[zc], cv, cs]),
                            np.concatenate([[1.0], -np.ones(len(cv)), np.ones(len(cs))]),
                            lo=0.0,
                        )
                    else:
                        m.row(
                            np.concatenate([[zc], cv]),
                            np.concatenate([[1.0], -np.ones(len(cv))]),
                            lo=0.0,
                        )
                inflow[b].append((int(zc), cmin))
        for t in g.output_tensors.tolist():
            s = int(g.tensor_src[t])
            for a in range(nd):
                if a == host:
                    continue
                c = float(g.transfer_cost[t, a, host])
                cs, _ = _domain_sums(g, x, s, a)
                if c <= 0 or not len(cs):
                    continue
                zc = m.cols(1, hi=1.0)[0]
                m.row(
                    np.concatenate([[zc], cs]), np.concatenate([[1.0], -np.ones(len(cs))]), lo=0.0
                )
                outflow[a].append((int(zc), c))
        for b in range(nd):
            links_in = nd - 1
            if inflow[b]:
                cols = [c for c, _ in inflow[b]]
                vals = [-v for _, v in inflow[b]]
                m.row([per, *cols], [float(links_in), *vals], lo=0.0)
            if outflow[b]:
                cols = [c for c, _ in outflow[b]]
                vals = [-v for _, v in outflow[b]]
                m.row([per, *cols], [float(nd - 1), *vals], lo=0.0)
    for p in range(npr):
        on = np.flatnonzero(adm[:, p])
        if not len(on):
            continue
        cols = [per, *x[on, p].tolist(), int(w[p])]
        vals = [-float(g.proc_units[p]), *lat[on, p].tolist(), float(disp[p])]
        alone = int((dom == dom[p]).sum()) == 1
        if transfers and g.proc_copies[p] and alone:
            for c, v in inflow[dom[p]] + outflow[dom[p]]:
                cols.append(c)
                vals.append(v)
        m.row(cols, vals, hi=0.0)
    _memory_rows(g, m, x)
    h = new_highs(time_limit=time_limit)
    status, _, bound = m.solve(h)
    return bound if status == "Optimal" else -INF


def lower_bound(
    g: CostGraph, objective: str = "latency", *, lp: bool = True, time_limit: float = 30.0
) -> LowerBound:
    """The best of the bounds above for ``objective`` ("latency" or "throughput"); the LPs only
    with ``lp`` and up to :data:`LP_MAX_NODES` nodes.

    Raises
    ------
    PlacementInfeasibleError
        A node or colocation group fits no processor (then no placement exists).
    """
    adm = admissible(g)
    parts: dict[str, float] = {}
    lp = lp and g.num_nodes <= LP_MAX_NODES
    if objective == "throughput":
        lat = np.where(adm, g.latency, np.inf)
        parts["load"] = float(lat.min(axis=1).sum()) / g.num_units
        if lp:
            parts["lp"] = lp_period_bound(g, adm, time_limit=time_limit)
    else:
        parts["critical-path"] = critical_path_bound(g, adm)
        parts["load"] = load_bound(g, adm)
        if lp:
            parts["lp"] = lp_latency_bound(g, adm, time_limit=time_limit)
    return LowerBound(max(parts.values()), parts)
