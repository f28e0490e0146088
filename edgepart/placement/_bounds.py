"""Lower-bound helpers of the exact solver (see :mod:`edgepart.placement.exact` for the proofs)."""

from __future__ import annotations

import math

import numpy as np

from edgepart.placement import _core
from edgepart.placement.costgraph import CostGraph


def edge_xfer(g: CostGraph) -> dict[tuple[int, int], np.ndarray]:
    """Per edge ``(u, w)``: ``[D, D]`` largest transfer cost over the tensors u sends to w."""
    out: dict[tuple[int, int], np.ndarray] = {}
    nd = len(g.domain_names)
    free = np.eye(nd, dtype=bool) & ~g.self_link[:, None]
    tc = g.tensor_consumers
    for t in range(len(g.tensor_src)):
        s = int(g.tensor_src[t])
        if s < 0:
            continue
        c = np.where(free, 0.0, g.transfer_cost[t])
        for w in tc.row(t).tolist():
            prev = out.get((s, w))
            out[(s, w)] = c if prev is None else np.maximum(prev, c)
    return out


def io_costs(g: CostGraph) -> tuple[np.ndarray, np.ndarray]:
    """``[N, P]`` input arrival lower bound and output delivery cost per node and processor."""
    n, dom, host = g.num_nodes, g.proc_domain, g.host_domain
    a_in = np.zeros((n, g.num_procs))
    o_out = np.zeros((n, g.num_procs))
    for t in np.flatnonzero(g.tensor_src < 0).tolist():
        c = np.where(dom == host, 0.0, g.transfer_cost[t, host, dom])
        for v in g.tensor_consumers.row(t).tolist():
            a_in[v] = np.maximum(a_in[v], c)
    for t in g.output_tensors.tolist():
        s = int(g.tensor_src[t])
        c = np.where(dom == host, 0.0, g.transfer_cost[t, dom, host])
        o_out[s] = np.maximum(o_out[s], c)
    return a_in, o_out


def prefix_bound(
    c: _core.Compiled,
    units: list[int],
    k: int,
    frontier: list[tuple[int, list[int]]],
    tail: list[list[float]],
    a_in: list[list[float]],
    o_out: list[list[float]],
    xfer: dict[tuple[int, int], np.ndarray],
    pdom: list[int],
    disp: list[float],
) -> float:
    """Latency lower bound from the exact schedule of the placed prefix ``0..k-1``.

    The epochs of the prefix are exactly the full graph's epochs restricted to the prefix (the
    lowest ready node is a prefix node as long as prefix nodes remain), later nodes can only
    join existing partitions or form later ones, and the fixed-order list schedule is monotone
    in durations and arrivals. So the prefix's partition ends bound the final ones from below,
    and an unplaced node ``w`` cannot finish before a placed predecessor's partition ends plus
    (on another processor) the transfer and a dispatch.
    """
    uproc, lat = c.uproc, c.lat
    part_of, part_unit = _core.epochs(c, units[:k])
    nq = len(part_unit)
    dur = [0.0] * nq
    for v in range(k):
        dur[part_of[v]] += lat[v][uproc[units[v]]]
    qin: list[list[tuple[int, int]]] = [[] for _ in range(nq)]
    tsrc = c.tsrc
    for t, v in zip(c.inc_t, c.inc_v, strict=True):
        if v < k:
            src = tsrc[t]
            pss = part_of[src] if src >= 0 else -1
            if pss != part_of[v]:
                qin[part_of[v]].append((t, pss))
    nd, host, udom, selfl, tcost = c.nd, c.host, c.udom, c.selfl, c.tcost
    free = [0.0] * c.nu
    end = [0.0] * nq
    for q in range(nq):
        u = part_unit[q]
        dq = udom[u]
        r = 0.0
        for t, ps in qin[q]:
            if ps >= 0:
                us = part_unit[ps]
                ds = udom[us]
                no_cost = ds == dq and (not selfl[ds] or (us == u and not c.uhand[u]))
                a = end[ps] + (0.0 if no_cost else tcost[t][ds * nd + dq])
            else:
                a = 0.0 if dq == host else tcost[t][host * nd + dq]
            if a > r:
                r = a
        s = r if r > free[u] else free[u]
        end[q] = free[u] = s + dur[q] + c.udisp[u]
    lb = max(end) if nq else 0.0
    for v in range(k):
        o = o_out[v][uproc[units[v]]]
        if o > 0.0 and end[part_of[v]] + o > lb:
            lb = end[part_of[v]] + o
    fin = [end[q] for q in part_of]
    return frontier_bound(lb, frontier, units, fin, uproc, tail, a_in, xfer, pdom, disp)


def frontier_bound(
    lb: float,
    frontier: list[tuple[int, list[int]]],
    units: list[int],
    fin: list[float],
    uproc: list[int],
    tail: list[list[float]],
    a_in: list[list[float]],
    xfer: dict[tuple[int, int], np.ndarray],
    pdom: list[int],
    disp: list[float],
) -> float:
    """``lb`` raised to the finish bound of every unplaced node ``w`` with placed predecessors.

    ``w`` on processor ``q`` cannot start before its input arrival plus dispatch, nor before a
    placed predecessor ``u`` finishes (``fin[u]``, a lower bound) plus, on another processor, the
    transfer and a dispatch; it then needs at least ``tail[w][q]``.
    """
    for w, pl in frontier:
        bw = math.inf
        for q, tq in enumerate(tail[w]):
            if tq == math.inf:
                continue
            st = disp[q] + a_in[w][q]
            for u in pl:
                pu = uproc[units[u]]
                a = fin[u] if pu == q else fin[u] + xfer[(u, w)][pdom[pu], pdom[q]] + disp[q]
                if a > st:
                    st = a
            if st + tq < bw:
                bw = st + tq
        if bw > lb:
            lb = bw
    return lb
