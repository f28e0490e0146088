"""The evaluation kernel behind :func:`edgepart.placement.evaluate.evaluate` (pure Python lists).

Kept as plain loops over per-graph lists built once: for the small graphs the solvers evaluate
thousands of times this is several times faster than NumPy (whose per-call overhead dominates
there), and on 100,000 nodes it is still about a tenth of a second. The semantics are
documented in :mod:`edgepart.placement.evaluate`; this module only implements them.
"""

from __future__ import annotations

import heapq
import math
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgepart.placement.costgraph import CostGraph

INF = math.inf


class Compiled:
    """Per-graph lists the kernel reads, built once per graph."""

    def __init__(self, g: CostGraph) -> None:
        self.n = g.num_nodes
        self.nu = g.num_units
        self.nd = len(g.domain_names)
        self.succs: list[list[int]] = [list(r) for r in g.succ.tolist()]
        self.indeg: list[int] = np.diff(g.pred.ptr).tolist()
        self.lat: list[list[float]] = g.latency.tolist()
        self.uproc: list[int] = g.unit_proc.tolist()
        self.udom: list[int] = g.proc_domain[g.unit_proc].tolist()
        self.udisp: list[float] = g.proc_dispatch[g.unit_proc].tolist()
        self.ucap: list[float] = g.proc_memory[g.unit_proc].tolist()
        self.wts: list[int] = g.weight_bytes.tolist()
        self.act: list[int] = g.activation_bytes.tolist()
        tc = g.tensor_consumers
        self.inc_t: list[int] = tc.row_ids().tolist()
        self.inc_v: list[int] = tc.idx.tolist()
        self.tsrc: list[int] = g.tensor_src.tolist()
        self.tcost: list[list[float]] = g.transfer_cost.reshape(len(g.tensor_src), -1).tolist()
        src = g.tensor_src[tc.row_ids()]
        self.inc_prod: list[tuple[int, int, int]] = [
            (t, s, v)
            for t, s, v in zip(self.inc_t, src.tolist(), self.inc_v, strict=True)
            if s >= 0
        ]
        self.inc_input: list[tuple[int, int]] = [
            (t, v) for t, s, v in zip(self.inc_t, src.tolist(), self.inc_v, strict=True) if s < 0
        ]
        self.limited = bool(np.isfinite(g.proc_memory).any())
        self.out_t: list[int] = g.output_tensors.tolist()
        self.host: int = g.host_domain
        self.selfl: list[bool] = g.self_link.tolist()
        groups = [np.flatnonzero(g.coloc == i).tolist() for i in range(len(g.coloc_names))]
        self.groups: list[list[int]] = [m for m in groups if len(m) > 1]
        brk = g.epoch_break
        self.brk: list[bool] | None = None if brk is None else [bool(x) for x in brk.tolist()]


_CACHE: weakref.WeakKeyDictionary[CostGraph, Compiled] = weakref.WeakKeyDictionary()


def compiled(g: CostGraph) -> Compiled:
    c = _CACHE.get(g)
    if c is None:
        c = _CACHE[g] = Compiled(g)
    return c


def epochs(c: Compiled, typ: list[int]) -> tuple[list[int], list[int]]:
    """Greedy epoch decomposition, one node type per distinct value of ``typ``.

    ``typ`` may cover only a prefix ``0..k-1`` of the execution order (``k = len(typ)``): the
    epochs of that prefix alone, as the exact solver's prefix bound needs them.
    """
    k = len(typ)
    deg = c.indeg.copy()
    succs = c.succs
    heaps: dict[int, list[int]] = {}
    for v in range(k):
        if deg[v] == 0:
            heaps.setdefault(typ[v], []).append(v)  # ascending v: already a heap
    part_of = [-1] * k
    part_unit: list[int] = []
    push = heapq.heappush
    brk = c.brk
    while heaps:
        best, top = -1, k
        for t, h in heaps.items():
            if h[0] < top:
                best, top = t, h[0]
        pid = len(part_unit)
        part_unit.append(best)
        stack = heaps.pop(best)
        while stack:
            v = stack.pop()
            part_of[v] = pid
            for w in succs[v]:
                d = deg[w] - 1
                deg[w] = d
                if d == 0 and w < k:
                    tw = typ[w]
                    if tw == best and (brk is None or not brk[w]):
                        stack.append(w)
                    elif tw in heaps:
                        push(heaps[tw], w)
                    else:
                        heaps[tw] = [w]
    return part_of, part_unit


@dataclass
class Run:
    """Raw kernel output (lists); :func:`run` fills the detail fields only when asked."""

    feasible: bool
    latency: float
    period: float
    serial: float = 0.0
    spread: float = 0.0  # sum over nodes of their partition's end (with ``spread`` asked)
    part_of: list[int] | None = None
    part_unit: list[int] | None = None
    dur: list[float] | None = None
    start: list[float] | None = None
    end: list[float] | None = None
    load: list[float] | None = None
    weights: list[int] | None = None
    arena: list[int] | None = None
    moved: dict[int, tuple[int, int, int, float]] | None = None  # t*D+dst -> (t, src, part, c)
    unsupported: list[int] | None = None
    split_group: list[int] | None = None


_NO = Run(False, INF, INF)


def run(c: Compiled, units: list[int], detail: bool, spread: bool = False) -> Run:
    """Evaluate one placement; with ``detail`` False an infeasible one returns early.

    ``spread`` adds the sum over nodes of the end time of their partition: how early results
    become available overall, the local search's tie-breaker on makespan plateaus.
    """
    n, uproc = c.n, c.uproc
    procs = [uproc[u] for u in units]
    lv = [row[p] for row, p in zip(c.lat, procs, strict=True)]
    unsupported: list[int] = []
    if INF in lv:
        if not detail:
            return _NO
        unsupported = [v for v in range(n) if lv[v] == INF]
        lv = [0.0 if x == INF else x for x in lv]
    split: list[int] = []
    for m in c.groups:
        u0 = units[m[0]]
        for v in m:
            if units[v] != u0:
                if not detail:
                    return _NO
                split.append(v)
                break
    weights = [0] * c.nu
    arena = [0] * c.nu
    fits = True
    if detail or c.limited:
        for u, w, ac in zip(units, c.wts, c.act, strict=True):
            weights[u] += w
            if ac > arena[u]:
                arena[u] = ac
        ucap = c.ucap
        fits = all(weights[u] + arena[u] <= ucap[u] for u in range(c.nu))
        if not fits and not detail:
            return _NO

    part_of, part_unit = epochs(c, units)
    nq = len(part_unit)
    dur = [0.0] * nq
    for q, x in zip(part_of, lv, strict=True):
        dur[q] += x
    udisp = c.udisp
    for q in range(nq):
        dur[q] += udisp[part_unit[q]]

    # Cross-partition reads, grouped by reading partition (duplicates do not change timing).
    qin: list[list[tuple[int, int]]] = [[] for _ in range(nq)]
    for t, s, v in c.inc_prod:
        pc = part_of[v]
        ps = part_of[s]
        if ps != pc:
            qin[pc].append((t, ps))
    for t, v in c.inc_input:
        qin[part_of[v]].append((t, -1))

    nd, host, udom, selfl, tcost, tsrc = c.nd, c.host, c.udom, c.selfl, c.tcost, c.tsrc
    free = [0.0] * c.nu
    start = [0.0] * nq
    end = [0.0] * nq
    send = [0.0] * nq
    last = 0.0
    moved: dict[int, tuple[int, int, int, float]] = {}
    for q in range(nq):
        u = part_unit[q]
        dq = udom[u]
        r = rs = 0.0
        for t, ps in qin[q]:
            if ps >= 0:
                ds = udom[part_unit[ps]]
                if ds == dq and not selfl[ds]:
                    cst = 0.0
                else:
                    cst = tcost[t][ds * nd + dq]
                    k = t * nd + dq
                    if k not in moved:
                        moved[k] = (t, ds, ps, cst)
                a = end[ps] + cst
                b = send[ps] + cst
            else:
                if dq == host:
                    cst = 0.0
                else:
                    cst = tcost[t][host * nd + dq]
                    k = t * nd + dq
                    if k not in moved:
                        moved[k] = (t, host, -1, cst)
                a = b = cst
            if a > r:
                r = a
            if b > rs:
                rs = b
        st = r if r > free[u] else free[u]
        start[q] = st
        end[q] = free[u] = st + dur[q]
        st = rs if rs > last else last
        send[q] = last = st + dur[q]

    latency = max(end)
    serial = max(send)
    for t in c.out_t:
        q = part_of[tsrc[t]]
        ds = udom[part_unit[q]]
        cst = 0.0
        if ds != host:
            cst = tcost[t][ds * nd + host]
            k = t * nd + host
            if k not in moved:
                moved[k] = (t, ds, q, cst)
        a = end[q] + cst
        if a > latency:
            latency = a
        a = send[q] + cst
        if a > serial:
            serial = a

    load = [0.0] * c.nu
    for q in range(nq):
        load[part_unit[q]] += dur[q]
    link = [0.0] * (nd * nd)
    for k, (_, ds, _, cst) in moved.items():
        link[ds * nd + k % nd] += cst
    period = max(max(load), max(link))
    ok = not unsupported and not split and fits
    if not detail:
        sp = sum([end[q] for q in part_of]) if spread and ok else 0.0
        return Run(ok, latency if ok else INF, period if ok else INF, 0.0, sp)
    return Run(
        ok,
        latency,
        period,
        serial,
        sum([end[q] for q in part_of]) if spread else 0.0,
        part_of,
        part_unit,
        dur,
        start,
        end,
        load,
        weights,
        arena,
        moved,
        unsupported,
        split,
    )


def as_array(x: Any, dtype: Any) -> np.ndarray:
    return np.asarray(x, dtype=dtype)
