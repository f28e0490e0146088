"""The evaluation kernel behind :func:`edgepart.placement.evaluate.evaluate` (pure Python lists).

This is the reference implementation of the one evaluation function: every detailed evaluation
runs here. The C kernel (:mod:`edgepart.placement._fastscore`, built from ``_evalc.c``) computes
the same scores with the same floating-point operations in the same order, so both give
bit-identical keys; solvers use it for the thousands of score-only evaluations a search needs
and fall back to this module when the C extension is not built.

Plain loops over per-graph lists built once: for small graphs this is several times faster than
NumPy (whose per-call overhead dominates there), and on 100,000 nodes it is still a fraction of a
second. The semantics are documented in :mod:`edgepart.placement.evaluate`; this module only
implements them. Floating-point sums are explicit left-to-right loops (never ``sum()``, whose
algorithm changed in Python 3.12), so results do not depend on the Python version.
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
        self.g_ref = weakref.ref(g)
        self.n = g.num_nodes
        self.nu = g.num_units
        self.nd = len(g.domain_names)
        self.succs: list[list[int]] = [list(r) for r in g.succ.tolist()]
        self.preds: list[list[int]] = [list(r) for r in g.pred.tolist()]
        self.indeg: list[int] = np.diff(g.pred.ptr).tolist()
        self.lat: list[list[float]] = g.latency.tolist()
        self.uproc: list[int] = g.unit_proc.tolist()
        self.udom: list[int] = g.proc_domain[g.unit_proc].tolist()
        self.udisp: list[float] = g.proc_dispatch[g.unit_proc].tolist()
        self.ucap: list[float] = g.proc_memory[g.unit_proc].tolist()
        self.ucopy: list[bool] = g.proc_copies[g.unit_proc].tolist()
        self.usingle: list[bool] = g.proc_single[g.unit_proc].tolist()
        self.uhand: list[bool] = g.proc_unit_handoff[g.unit_proc].tolist()
        self.any_copy = bool(g.proc_copies.any())
        self.any_single = bool(g.proc_single.any())
        self.wts: list[int] = g.weight_bytes.tolist()
        self.act: list[int] = g.activation_bytes.tolist()
        tc = g.tensor_consumers
        self.inc_t: list[int] = tc.row_ids().tolist()
        self.inc_v: list[int] = tc.idx.tolist()
        self.tsrc: list[int] = g.tensor_src.tolist()
        nd = len(g.domain_names)
        self.tcost: list[list[float]] = g.transfer_cost.reshape(len(g.tensor_src), nd * nd).tolist()
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


def epochs(
    c: Compiled, typ: list[int], single: list[bool] | None = None
) -> tuple[list[int], list[int]]:
    """Greedy epoch decomposition, one node type per distinct value of ``typ``.

    ``typ`` may cover only a prefix ``0..k-1`` of the execution order (``k = len(typ)``): the
    epochs of that prefix alone, as the exact solver's prefix bound needs them.

    ``single`` (indexed by type; types are units then) marks types whose nodes must form one
    partition: an epoch of such a type opens only once every node of that type has all its
    predecessors of other types placed, and then takes all of them. When only such blocked
    types have ready nodes, the remaining nodes get partition ``-1`` (the placement cannot be
    partitioned that way: some path leaves the unit and comes back, or two such units wait on
    each other).
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
    ext: dict[int, int] = {}
    if single is not None:
        # ext[t]: edges into nodes of a single-partition type t from nodes of other types
        for v in range(k):
            tv = typ[v]
            if single[tv]:
                ext.setdefault(tv, 0)
                for w in c.preds[v]:
                    if typ[w] != tv:
                        ext[tv] += 1
    brk = c.brk
    while heaps:
        best, top = -1, k
        for t, h in heaps.items():
            if h[0] < top and (single is None or not single[t] or ext[t] == 0):
                best, top = t, h[0]
        if best < 0:
            break  # every ready node waits for a single-partition unit that cannot open
        pid = len(part_unit)
        part_unit.append(best)
        stack = heaps.pop(best)
        while stack:
            v = stack.pop()
            part_of[v] = pid
            for w in succs[v]:
                d = deg[w] - 1
                deg[w] = d
                if w < k:
                    tw = typ[w]
                    if single is not None and tw != best and single[tw]:
                        ext[tw] -= 1
                    if d == 0:
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
    # t*D+dst -> (t, src domain, src partition or -1, cost, designated receiver or -1)
    moved: dict[int, tuple[int, int, int, float, int]] | None = None
    unsupported: list[int] | None = None
    split_group: list[int] | None = None
    # single-partition units whose nodes cannot form one partition (the epochs are then the
    # plain ones, reported for the detail only)
    unpartitionable: list[int] | None = None


_NO = Run(False, INF, INF)


def run(c: Compiled, units: list[int], detail: bool, spread: int = 0) -> Run:
    """Evaluate one placement; with ``detail`` False an infeasible one returns early.

    ``spread`` 1 adds the sum over nodes of the end time of their partition: how early results
    become available overall, the local search's tie-breaker on makespan plateaus; 2 adds the
    sum of squared unit and link loads: how balanced the resources are, the tie-breaker on
    period plateaus (several resources equally busy).
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

    unpart: list[int] = []
    if c.any_single:
        part_of, part_unit = epochs(c, units, c.usingle)
        if -1 in part_of:
            if not detail:
                return _NO
            unpart = sorted({units[v] for v in range(n) if part_of[v] < 0 and c.usingle[units[v]]})
            part_of, part_unit = epochs(c, units)
    else:
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

    # Transfers, in creation order of the reading partitions, then the model outputs: which
    # reads pay a cost, which (tensor, destination domain) pairs move (once each), and the delay
    # each read sees. A unit that copies with its own cores spends the transfer's time inside its
    # partition (the sender after its compute, the first receiver in that domain before it), and
    # the delay on the path is then already paid.
    nd, host, udom, selfl, tcost, tsrc = c.nd, c.host, c.udom, c.selfl, c.tcost, c.tsrc
    ucopy, uhand = c.ucopy, c.uhand
    moved: dict[int, tuple[int, int, int, float, int]] = {}
    reads: list[list[tuple[int, float]]] = [[] for _ in range(nq)]
    for q in range(nq):
        u = part_unit[q]
        dq = udom[u]
        rq = reads[q]
        for t, ps in qin[q]:
            if ps >= 0:
                us = part_unit[ps]
                ds = udom[us]
                if ds == dq and (not selfl[ds] or (us == u and not uhand[u])):
                    rq.append((ps, 0.0))
                    continue
                cst = tcost[t][ds * nd + dq]
                sender = ucopy[us]
            else:
                if dq == host:
                    rq.append((-1, 0.0))
                    continue
                ds = host
                cst = tcost[t][host * nd + dq]
                sender = False
            k = t * nd + dq
            if k not in moved:
                moved[k] = (t, ds, ps, cst, q)
                if sender:
                    dur[ps] += cst
                if ucopy[u]:
                    dur[q] += cst
                    rq.append((ps, 0.0))
                    continue
            rq.append((ps, 0.0 if sender else cst))
    outs: list[tuple[int, float]] = []
    for t in c.out_t:
        q = part_of[tsrc[t]]
        us = part_unit[q]
        ds = udom[us]
        if ds == host:
            outs.append((q, 0.0))
            continue
        cst = tcost[t][ds * nd + host]
        k = t * nd + host
        if k not in moved:
            moved[k] = (t, ds, q, cst, -1)
            if ucopy[us]:
                dur[q] += cst
        outs.append((q, 0.0 if ucopy[us] else cst))

    free = [0.0] * c.nu
    start = [0.0] * nq
    end = [0.0] * nq
    send = [0.0] * nq
    last = 0.0
    for q in range(nq):
        u = part_unit[q]
        r = rs = 0.0
        for ps, cst in reads[q]:
            if ps >= 0:
                a = end[ps] + cst
                b = send[ps] + cst
            else:
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
    for q, cst in outs:
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
    for k, mv in moved.items():
        link[mv[1] * nd + k % nd] += mv[3]
    period = max(max(load), max(link))
    ok = not unsupported and not split and fits and not unpart
    sp = 0.0
    if spread == 1 and (ok or detail):
        for q in part_of:
            sp += end[q]
    elif spread == 2 and (ok or detail):
        for x in load:
            sp += x * x
        for x in link:
            sp += x * x
    if not detail:
        return Run(ok, latency if ok else INF, period if ok else INF, 0.0, sp if ok else 0.0)
    return Run(
        ok,
        latency,
        period,
        serial,
        sp,
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
        unpart,
    )


def as_array(x: Any, dtype: Any) -> np.ndarray:
    return np.asarray(x, dtype=dtype)
