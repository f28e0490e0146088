"""Stage planner: contiguous stages over heterogeneous units, minimizing the slowest stage.

A *stage plan* cuts the graph into stages ``S_1, ..., S_k`` with ``S_1 ∪ ... ∪ S_i`` an ideal
(a down-set: closed under predecessors) for every ``i``; each stage is then convex and the stages
form a chain, so items flow forward through them (a pipeline). Each stage runs on its own unit;
units of a processor are identical. The *stage time* on processor ``p`` (memory domain ``d``) is

    dispatch(p) + sum of the stage's latencies on p
        + [count_transfers] (sum over tensors entering the stage of cost(host -> d)
                             + sum over tensors leaving it of cost(d -> host))

(tensors between stages are costed as a round trip through the host memory: received from it,
sent to it; a stage in the host domain pays nothing for them), and a stage must fit its unit's
memory (weights plus the largest activation) and run only nodes its processor supports. The
*period* of the plan is its slowest stage time; :func:`plan_stages` minimizes it.

Algorithms (:attr:`StagePlan.method`):

* ``ideals``: the exact dynamic program over the DAG's ideals (Tarnawski et al., NeurIPS'20,
  generalized to several processors): ``dp[J][used] = min over ideals I ⊂ J and processors p of
  max(dp[I][used - e_p], time_p(J \\ I))``, with ``used`` counting the units taken per processor
  (Pareto-pruned). Sub-ideals of each ``J`` are enumerated depth-first by removing maximal
  elements, with the stage's compute, memory and boundary tensors updated incrementally, so a
  pair costs a few operations. It runs when the ideals and pairs stay under the caps.
* ``blocks``: the same DP over ideals that are prefixes of the execution order at the boundaries
  of at most ``max_blocks`` consecutive blocks of about equal work (exact over those splits):
  the fallback for graphs with too many ideals.

A colocation group's nodes must share a stage (unit): ideals that cut a group are no stage
boundaries. The placement of a plan (:attr:`StagePlan.units`) is judged like any other by the
evaluation function; with ``count_transfers`` off and no copying processor, a stage's time is
exactly its unit's load there whenever the evaluation forms one partition per stage (always with
``single_partition``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from edgepart.placement.constraints import admissible, group_members
from edgepart.placement.costgraph import CostGraph

__all__ = ["Stage", "StagePlan", "plan_stages", "refine_stages", "stage_time"]

INF = math.inf


@dataclass(frozen=True, eq=False)
class Stage:
    """One stage: its nodes (execution order), unit and time components (seconds)."""

    nodes: np.ndarray
    unit: int
    compute_s: float
    dispatch_s: float
    recv_s: float
    send_s: float
    weight_bytes: int
    arena_bytes: int

    @property
    def time_s(self) -> float:
        return self.dispatch_s + self.compute_s + self.recv_s + self.send_s


@dataclass(frozen=True, eq=False)
class StagePlan:
    """The stages in pipeline order, their period, and the placement they define."""

    stages: tuple[Stage, ...]
    period_s: float
    units: np.ndarray  # [N] unit per node
    method: str  # "ideals" or "blocks"
    optimal: bool  # exact over the method's family of splits
    ideals: int  # number of ideals the DP ran over
    pairs: int  # (ideal, sub-ideal) pairs it costed
    count_transfers: bool


class _Tables:
    """Per-graph arrays the stage cost needs."""

    def __init__(self, g: CostGraph, adm: np.ndarray) -> None:
        self.g = g
        n = g.num_nodes
        self.adm = adm
        self.lat = np.where(adm, g.latency, 0.0)
        nd = len(g.domain_names)
        host = g.host_domain
        t_in = g.transfer_cost[:, host, :].copy()  # [T, D] host -> d
        t_out = g.transfer_cost[:, :, host].copy()  # [T, D] d -> host
        t_in[:, host] = 0.0
        t_out[:, host] = 0.0
        self.t_in = t_in
        self.t_out = t_out
        self.nd = nd
        self.is_out = np.zeros(len(g.tensor_src), dtype=bool)
        self.is_out[g.output_tensors] = True
        self.n = n

    def lists(self) -> _Tables:
        """Build the per-node Python lists the depth-first enumeration walks (small graphs)."""
        if hasattr(self, "succ"):
            return self
        g, adm, t_in, t_out = self.g, self.adm, self.t_in, self.t_out
        self.succ = [list(r) for r in g.succ.tolist()]
        self.pred = [list(r) for r in g.pred.tolist()]
        self.ins = [list(r) for r in g.node_inputs.tolist()]
        self.outs = [list(r) for r in g.node_outputs.tolist()]
        self.lat_l: list[list[float]] = self.lat.tolist()
        self.adm_l: list[list[bool]] = adm.tolist()
        self.t_in_l: list[list[float]] = t_in.tolist()
        self.t_out_l: list[list[float]] = t_out.tolist()
        self.wts: list[int] = g.weight_bytes.tolist()
        self.act: list[int] = g.activation_bytes.tolist()
        return self


def stage_time(
    g: CostGraph, nodes: np.ndarray, unit: int, *, count_transfers: bool = True
) -> Stage:
    """The :class:`Stage` of ``nodes`` (a difference of two ideals) on ``unit``, from scratch
    (the reference the dynamic program's incremental costs are tested against).

    The stage receives every tensor a node of it reads from outside it (model inputs included)
    and sends every tensor it produces that a node outside it reads or that is a model output.
    """
    p = int(g.unit_proc[unit])
    d = int(g.proc_domain[p])
    host = g.host_domain
    inside = np.zeros(g.num_nodes, dtype=bool)
    inside[nodes] = True
    tc = g.tensor_consumers
    t_of = tc.row_ids()
    src = g.tensor_src
    src_in = np.where(src >= 0, inside[np.maximum(src, 0)], False)
    cons_in = np.zeros(len(src), dtype=bool)
    cons_out = np.zeros(len(src), dtype=bool)
    np.logical_or.at(cons_in, t_of, inside[tc.idx])
    np.logical_or.at(cons_out, t_of, ~inside[tc.idx])
    cons_out[g.output_tensors] = True
    recv = send = 0.0
    if d != host:
        recv = float(g.transfer_cost[~src_in & cons_in, host, d].sum())
        send = float(g.transfer_cost[src_in & cons_out, d, host].sum())
    k = 1.0 if count_transfers else 0.0
    lat = g.latency[nodes, p]
    return Stage(
        np.sort(np.asarray(nodes, dtype=np.int64)),
        unit,
        float(lat.sum()),
        float(g.proc_dispatch[p]),
        k * recv,
        k * send,
        int(g.weight_bytes[nodes].sum()),
        int(g.activation_bytes[nodes].max()) if len(nodes) else 0,
    )


def _ideals_fast(g: CostGraph, cap: int) -> list[int] | None:
    """:func:`_ideals` with addable nodes tracked incrementally (antichain growth)."""
    n = g.num_nodes
    indeg = np.diff(g.pred.ptr).tolist()
    succ = [list(r) for r in g.succ.tolist()]
    preds = [list(r) for r in g.pred.tolist()]
    seen: dict[int, int] = {0: 0}
    out = [0]
    addable0 = frozenset(v for v in range(n) if indeg[v] == 0)
    frontier: list[tuple[int, frozenset[int]]] = [(0, addable0)]
    while frontier:
        nxt: list[tuple[int, frozenset[int]]] = []
        for ideal, addable in frontier:
            for v in addable:
                j = ideal | (1 << v)
                if j in seen:
                    continue
                seen[j] = len(out)
                out.append(j)
                if len(out) > cap:
                    return None
                new = set(addable)
                new.discard(v)
                for w in succ[v]:
                    if all(j >> u & 1 for u in preds[w]):
                        new.add(w)
                nxt.append((j, frozenset(new)))
        frontier = nxt
    return out


def _members(mask: int) -> list[int]:
    out = []
    v = 0
    while mask:
        if mask & 1:
            out.append(v)
        mask >>= 1
        v += 1
    return out


def plan_stages(
    g: CostGraph,
    *,
    count_transfers: bool = True,
    max_ideals: int = 3000,
    max_pairs: int = 30_000,
    max_blocks: int = 160,
    method: str = "auto",
    total: bool = False,
) -> StagePlan | None:
    """The stage plan with the smallest period (module docstring); None if none fits memory.

    With ``total`` the sum of the stage times is minimized instead of the largest: the stages
    run one after another for one input (a latency-oriented split, e.g. of a model whose
    weights must spread over memory-limited units that each run one partition);
    :attr:`StagePlan.period_s` is still the slowest stage.

    Parameters
    ----------
    g : CostGraph
        The problem.
    count_transfers : bool
        Count each stage's send and receive in its time (pipeline stage model).
    max_ideals, max_pairs : int
        Caps of the exact DP over all ideals; beyond them the ``blocks`` DP runs.
    max_blocks : int
        Blocks of the execution order for the ``blocks`` DP.
    method : str
        "auto", "ideals" (None if the caps are exceeded) or "blocks".
    total : bool
        Minimize the sum of the stage times instead of the largest.
    """
    adm = admissible(g)
    tab = _Tables(g, adm)
    if method in ("auto", "ideals"):
        ideals = _ideals_fast(g, max_ideals)
        if ideals is not None:
            index = {m: i for i, m in enumerate(ideals)}
            tab.lists()
            gmasks = [sum(1 << int(v) for v in mem) for mem in group_members(g) if len(mem) > 1]
            splits = [any(0 < (m & gm) != gm for gm in gmasks) for m in ideals]
            res = _dp(
                g,
                count_transfers,
                [m.bit_count() for m in ideals],
                lambda j: _sub_stages(g, tab, ideals[j], index),
                max_pairs,
                "ideals",
                lambda j, i: np.asarray(_members(ideals[j] & ~ideals[i]), dtype=np.int64),
                total,
                splits,
            )
            if res is not None or method == "ideals":
                return res
        elif method == "ideals":
            return None
    # blocks: prefix ideals at block boundaries of the execution order
    n = g.num_nodes
    work = tab.lat.max(axis=1) + 1e-12
    cum = np.concatenate([[0.0], np.cumsum(work)])
    nb = min(max_blocks, n)
    cuts = np.unique(np.searchsorted(cum, np.linspace(0, cum[-1], nb + 1)[1:-1]))
    cuts = cuts[(cuts > 0) & (cuts < n)]
    bounds = np.asarray([0, *cuts.tolist(), n], dtype=np.int64)
    stats = _chain_pairs(g, tab, bounds)

    def subs(
        j: int,
    ) -> list[tuple[int, list[float], list[bool], int, int, list[float], list[float]]]:
        return [
            (
                i,
                stats[0][i, j].tolist(),
                (stats[1][i, j] > 0).tolist(),
                int(stats[2][i, j]),
                int(stats[3][i, j]),
                stats[4][i, j].tolist(),
                stats[5][i, j].tolist(),
            )
            for i in range(j)
        ]

    return _dp(
        g,
        count_transfers,
        bounds.tolist(),
        subs,
        10**12,
        "blocks",
        lambda j, i: np.arange(bounds[i], bounds[j], dtype=np.int64),
        total,
        _block_splits(g, bounds),
    )


def _block_splits(g: CostGraph, bounds: np.ndarray) -> list[bool]:
    """Per prefix boundary: does it cut a colocation group (members on both sides)?"""
    cut = np.zeros(g.num_nodes + 1, dtype=np.int64)
    for mem in group_members(g):
        if len(mem) > 1:
            cut[int(mem.min()) + 1] += 1
            cut[int(mem.max()) + 1] -= 1
    inside = np.cumsum(cut)  # inside[b] > 0: some group has members before and at/after b
    return [bool(inside[b] > 0) for b in bounds.tolist()]


def _chain_pairs(
    g: CostGraph, tab: _Tables, bounds: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stage statistics of every run of blocks ``[bounds[i], bounds[j])`` (i < j), vectorized:
    per-processor compute and inadmissible counts, weights, arena, per-domain receive and
    send costs (arrays indexed ``[i, j, ...]``)."""
    nb = len(bounds) - 1
    npr, nd = g.num_procs, tab.nd
    block = np.repeat(np.arange(nb), np.diff(bounds))  # node -> block
    cl = np.concatenate([np.zeros((1, npr)), np.cumsum(tab.lat, axis=0)])[bounds]
    cn = np.concatenate([np.zeros((1, npr)), np.cumsum(~tab.adm, axis=0)])[bounds]
    cw = np.concatenate([[0], np.cumsum(g.weight_bytes)])[bounds]
    comp = cl[None, :, :] - cl[:, None, :]
    na = cn[None, :, :] - cn[:, None, :]
    wsum = cw[None, :] - cw[:, None]
    bmax = np.zeros(nb, dtype=np.int64)
    np.maximum.at(bmax, block, g.activation_bytes)
    arena = np.zeros((nb + 1, nb + 1), dtype=np.int64)
    for j in range(1, nb + 1):
        arena[:j, j] = np.maximum.accumulate(bmax[:j][::-1])[::-1]
    # tensors: producer block (-1: model input), first and last consumer block
    src = g.tensor_src
    sb = np.where(src >= 0, block[np.maximum(src, 0)], -1)
    tc = g.tensor_consumers
    t_of = tc.row_ids()
    cb = block[tc.idx]
    nt = len(src)
    last = np.full(nt, -1, dtype=np.int64)
    np.maximum.at(last, t_of, cb)
    last[g.output_tensors] = nb  # model outputs always leave
    recv = np.zeros((nb + 1, nb + 1, nd))
    send = np.zeros((nb + 1, nb + 1, nd))
    # recv(i, j) = sum over tensors produced before block i whose first consumer block >= i
    # is < j; walk i downwards keeping that first consumer block per tensor
    first_ge = np.full(nt, nb, dtype=np.int64)
    order = np.argsort(cb, kind="stable")
    cb_s, t_s = cb[order], t_of[order]
    cut = np.searchsorted(cb_s, np.arange(nb + 1))
    for i in range(nb - 1, -1, -1):
        ts = t_s[cut[i] : cut[i + 1]]
        first_ge[ts] = i
        sel = (sb < i) & (first_ge < nb)
        if sel.any():
            h = np.zeros((nb + 1, nd))
            np.add.at(h, first_ge[sel] + 1, tab.t_in[sel])
            recv[i, :, :] = np.cumsum(h, axis=0)
    # send(i, j) = sum over tensors produced in blocks i..j-1 and read at block >= j (or output)
    for j in range(1, nb + 1):
        sel = (sb >= 0) & (sb < j) & (last >= j)
        if sel.any():
            h = np.zeros((nb + 1, nd))
            np.add.at(h, sb[sel], tab.t_out[sel])
            send[:, j, :] = np.cumsum(h[::-1], axis=0)[::-1]
    return comp, na, wsum, arena, recv, send


def _dp(
    g: CostGraph,
    count: bool,
    sizes: list[int],
    subs: Callable[
        [int], list[tuple[int, list[float], list[bool], int, int, list[float], list[float]]]
    ],
    max_pairs: int,
    method: str,
    members: Callable[[int, int], np.ndarray],
    total: bool = False,
    splits: list[bool] | None = None,
) -> StagePlan | None:
    """DP over ideals ``0..len(sizes)-1`` (the smallest empty, the largest the whole graph):
    ``subs(j)`` lists the smaller ideals ``i`` with the stage ``j \\ i``'s statistics,
    ``members(j, i)`` its nodes.

    ``dp[j, s]`` is the smallest period covering ideal ``j`` with the units of usage state
    ``s`` (a mixed-radix code of the units taken per processor); each ideal's row is computed
    at once over all its sub-ideals with NumPy.
    """
    npr = g.num_procs
    units = g.proc_units.tolist()
    disp = g.proc_dispatch
    caps = g.proc_memory
    dom = g.proc_domain
    k = 1.0 if count else 0.0
    nid = len(sizes)
    full = max(range(nid), key=lambda i: sizes[i])
    if sizes[full] != g.num_nodes:
        return None
    radix = np.cumprod([1] + [u + 1 for u in units])
    ns = int(radix[-1])
    codes = np.arange(ns)
    use = (codes[:, None] // radix[None, :-1]) % (np.asarray(units) + 1)[None, :]  # [S, P]
    src_states = [np.flatnonzero(use[:, p] < units[p]) for p in range(npr)]
    dp = np.full((nid, ns), INF)
    back_i = np.full((nid, ns), -1, dtype=np.int64)
    back_p = np.full((nid, ns), -1, dtype=np.int64)
    start = min(range(nid), key=lambda i: sizes[i])
    dp[start, 0] = 0.0
    pairs = 0
    for j in sorted(range(nid), key=lambda i: sizes[i]):
        if j == start or (splits is not None and splits[j]):
            continue  # an ideal cutting a colocation group is no stage boundary: dp stays inf
        rows = subs(j)
        pairs += len(rows)
        if pairs > max_pairs:
            return None
        if not rows:
            continue
        ii = np.asarray([r[0] for r in rows], dtype=np.int64)
        comp = np.asarray([r[1] for r in rows])
        na = np.asarray([r[2] for r in rows], dtype=bool)
        mem = np.asarray([r[3] + r[4] for r in rows], dtype=np.float64)
        comm = np.asarray([r[5] for r in rows]) + np.asarray([r[6] for r in rows])
        best = dp[j]
        for p in range(npr):
            ok = np.flatnonzero(~na[:, p] & (mem <= caps[p]))
            if not len(ok):
                continue
            t = disp[p] + comp[ok, p] + k * comm[ok, dom[p]]
            sst = src_states[p]
            prev = dp[ii[ok]][:, sst]
            val = prev + t[:, None] if total else np.maximum(prev, t[:, None])  # [pairs, states]
            a = np.argmin(val, axis=0)
            v = val[a, np.arange(len(sst))]
            dst = sst + radix[p]
            better_ = v < best[dst]
            if better_.any():
                d = dst[better_]
                best[d] = v[better_]
                back_i[j, d] = ii[ok][a[better_]]
                back_p[j, d] = p
    if not np.isfinite(dp[full]).any():
        return None
    # the best final state; ties: fewest units, then the smallest code
    order = np.lexsort((codes, use.sum(axis=1), dp[full]))
    s_ = int(order[0])
    stages_rev: list[tuple[np.ndarray, int]] = []
    j = full
    while j != start:
        i, p = int(back_i[j, s_]), int(back_p[j, s_])
        stages_rev.append((members(j, i), p))
        s_ -= int(radix[p])
        j = i
    stages_rev.reverse()
    taken = [0] * npr
    unit_of = np.zeros(g.num_nodes, dtype=np.int64)
    stages = []
    for nodes, p in stages_rev:
        u = int(g.proc_first_unit[p]) + taken[p]
        taken[p] += 1
        unit_of[nodes] = u
        stages.append(stage_time(g, nodes, u, count_transfers=count))
    # the DP's period and the stages' from-scratch times agree (tested); report the latter
    per = max(s.time_s for s in stages)
    return StagePlan(tuple(stages), per, unit_of, method, True, nid, pairs, count)


def _sub_stages(
    g: CostGraph,
    tab: _Tables,
    jm: int,
    index: dict[int, int],
) -> list[tuple[int, list[float], list[bool], int, int, list[float], list[float]]]:
    """Every ideal ``I ⊊ J`` (by id) with the stage ``J \\ I``'s per-processor compute,
    inadmissibility, weights, arena and per-domain receive and send costs."""
    npr = g.num_procs
    nd = tab.nd
    # Depth-first over the sub-ideals of J, removing one maximal element at a time: the stage
    # J \ I grows backwards (a node joins after all its successors in J). Each sub-ideal is
    # visited once; the integer bookkeeping (successors left in I, consumers of a tensor inside
    # the stage) is undone on the way back, the float sums are kept per frame (no drift).
    members = _members(jm)
    inj = np.zeros(g.num_nodes, dtype=bool)
    inj[members] = True
    leaves = tab.is_out.copy()  # tensors read outside J (or model outputs) leave the stage
    cons_all = g.tensor_consumers
    ext = ~inj[cons_all.idx]
    if ext.any():
        leaves[np.unique(cons_all.row_ids()[ext])] = True
    succ_in = {v: sum(1 for w in tab.succ[v] if inj[w]) for v in members}
    in_cnt: dict[int, int] = {}
    wts, act, lat_l, adm_l = tab.wts, tab.act, tab.lat_l, tab.adm_l
    t_in_l, t_out_l = tab.t_in_l, tab.t_out_l
    results: list[tuple[int, list[float], list[bool], int, int, list[float], list[float]]] = []
    visited = {jm}
    # frame: ideal, candidates, next position, node removed to get here (-1 at J), state
    zero_p = [0.0] * npr
    zero_d = [0.0] * nd
    Frame = tuple[int, list[int], int, list[float], list[int], int, int, list[float], list[float]]
    stack: list[Frame] = [
        (jm, [v for v in members if succ_in[v] == 0], -1, zero_p, [0] * npr, 0, 0, zero_d, zero_d)
    ]
    pos = [0]
    ins, outs, preds = tab.ins, tab.outs, tab.pred
    rng_p, rng_d = range(npr), range(nd)
    while stack:
        im, cands, m0, comp0, na0, w0, a0, r0, s0 = stack[-1]
        posi = pos[-1]
        if posi >= len(cands):
            stack.pop()
            pos.pop()
            if m0 >= 0:  # undo m0's integer bookkeeping
                for u in preds[m0]:
                    succ_in[u] += 1
                for t in ins[m0]:
                    in_cnt[t] -= 1
            continue
        pos[-1] = posi + 1
        m = cands[posi]
        i2 = im & ~(1 << m)
        if i2 in visited:
            continue
        visited.add(i2)
        lm, am = lat_l[m], adm_l[m]
        comp1 = [comp0[p] + lm[p] for p in rng_p]
        na1 = [na0[p] + (0 if am[p] else 1) for p in rng_p]
        r1 = list(r0)
        s1 = list(s0)
        for t in ins[m]:
            c = in_cnt.get(t, 0)
            in_cnt[t] = c + 1
            if c == 0:
                row = t_in_l[t]
                for d in rng_d:
                    r1[d] += row[d]
        for t in outs[m]:
            if in_cnt.get(t, 0) > 0:
                row = t_in_l[t]
                for d in rng_d:
                    r1[d] -= row[d]
            if leaves[t]:
                row = t_out_l[t]
                for d in rng_d:
                    s1[d] += row[d]
        newly = []
        for u in preds[m]:
            succ_in[u] -= 1
            if succ_in[u] == 0:
                newly.append(u)
        w1 = w0 + wts[m]
        a1 = a0 if a0 > act[m] else act[m]
        j2 = index.get(i2)
        if j2 is not None:
            results.append((j2, comp1, [x > 0 for x in na1], w1, a1, r1, s1))
        nc = [c for c in cands if c != m and (i2 >> c) & 1]
        nc += newly
        stack.append((i2, nc, m, comp1, na1, w1, a1, r1, s1))
        pos.append(0)
    return results


def refine_stages(
    g: CostGraph, plan: StagePlan, *, max_moves: int = 2000, max_candidates: int = 64
) -> StagePlan:
    """Improve a stage plan by moving single nodes across stage boundaries.

    A node of stage ``k`` whose successors all lie in later stages may move to stage ``k+1``
    (one whose predecessors all lie in earlier stages to ``k-1``); the stages stay a chain of
    ideals. The move kept is the one that most lowers the times of the two stages involved,
    taken only if it makes the vector of stage times sorted slowest first lexicographically
    smaller (so the period never grows and the search ends). Moves respect each unit's
    processor support and memory and keep colocation groups whole (grouped nodes stay). This
    is the planner's polish after the block DP, whose splits are prefixes of one execution
    order and miss the other ideals of a branching graph.

    Parameters
    ----------
    g : CostGraph
        The problem.
    plan : StagePlan
        A plan of ``g`` (from :func:`plan_stages`).
    max_moves : int
        Cap on the moves applied.
    max_candidates : int
        Cap on the boundary nodes tried per stage and move.

    Returns
    -------
    StagePlan
        The refined plan (``method`` gains ``+refine`` when a move was applied; ``optimal``
        then false).
    """
    n_st = len(plan.stages)
    if n_st < 2:
        return plan
    adm = admissible(g)
    cnt = plan.count_transfers
    stage_of = np.zeros(g.num_nodes, dtype=np.int64)
    for k, s in enumerate(plan.stages):
        stage_of[s.nodes] = k
    stages = list(plan.stages)
    procs = [int(g.unit_proc[s.unit]) for s in stages]
    pred = [np.asarray(r, dtype=np.int64) for r in g.pred.tolist()]
    succ = [np.asarray(r, dtype=np.int64) for r in g.succ.tolist()]
    grouped = g.coloc >= 0

    def fits(st: Stage) -> bool:
        return bool(st.weight_bytes + st.arena_bytes <= g.proc_memory[int(g.unit_proc[st.unit])])

    moves = 0
    while moves < max_moves:
        times = [s.time_s for s in stages]
        key = sorted(times, reverse=True)
        best: tuple[list[float], int, int, Stage, Stage] | None = None
        for k in sorted(range(n_st), key=lambda i: -times[i]):
            if best is not None:
                break
            members = stages[k].nodes
            if len(members) < 2:
                continue
            for dst in (k + 1, k - 1):
                if not 0 <= dst < n_st:
                    continue
                cands = []
                for v in members.tolist():
                    if grouped[v] or not adm[v, procs[dst]]:
                        continue
                    nb = succ[v] if dst > k else pred[v]
                    if (stage_of[nb] > k).all() if dst > k else (stage_of[nb] < k).all():
                        cands.append(v)
                # nodes nearest the boundary first: the last (first) in execution order
                cands = cands[::-1][:max_candidates] if dst > k else cands[:max_candidates]
                for v in cands:
                    src_nodes = members[members != v]
                    dst_nodes = np.sort(np.append(stages[dst].nodes, v))
                    a = stage_time(g, src_nodes, stages[k].unit, count_transfers=cnt)
                    b = stage_time(g, dst_nodes, stages[dst].unit, count_transfers=cnt)
                    if not (fits(a) and fits(b)):
                        continue
                    t2 = list(times)
                    t2[k], t2[dst] = a.time_s, b.time_s
                    k2 = sorted(t2, reverse=True)
                    if k2 < key and (best is None or k2 < best[0]):
                        best = (k2, k, dst, a, b)
        if best is None:
            break
        _, k, dst, a, b = best
        stages[k], stages[dst] = a, b
        stage_of[a.nodes] = k
        stage_of[b.nodes] = dst
        moves += 1
    if moves == 0:
        return plan
    units = np.zeros(g.num_nodes, dtype=np.int64)
    for s in stages:
        units[s.nodes] = s.unit
    per = max(s.time_s for s in stages)
    return StagePlan(
        tuple(stages),
        per,
        units,
        plan.method + "+refine",
        False,
        plan.ideals,
        plan.pairs,
        cnt,
    )
