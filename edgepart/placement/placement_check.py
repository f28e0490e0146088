"""The plan checker: re-verifies a plan from the cost graph alone, independently of the solvers.

It does not reuse the evaluation kernel; it recomputes every rule from the graph arrays:

1. every node is in exactly one partition;
2. every partition's unit exists and its processor supports all the partition's nodes;
3. the partition graph is a DAG (so every partition is convex: a path leaving a partition and
   coming back would be a cycle through it);
4. colocation groups sit on one unit;
5. every unit's memory holds its weights plus its arena estimate (largest node activation);
6. a unit of a ``single_partition`` processor runs at most one partition;
7. the schedule: each partition lasts its dispatch plus its nodes' latencies (plus the copies its
   unit makes on a ``transfers_on_unit`` processor), starts no earlier than every input's
   arrival (producer end plus transfer cost unless a copying unit paid it, model inputs from the
   host), partitions on one unit do not overlap, and the predicted latency is the end of the
   schedule (last partition end or model output arrival at the host).

Each failure raises :class:`~edgepart.errors.PlanError` with the partition, node and numbers.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgepart.errors import PlanError
from edgepart.placement.costgraph import CostGraph
from edgepart.placement.evaluate import Evaluation

__all__ = ["PlanView", "check_evaluation", "check_plan"]


@dataclass(frozen=True, eq=False)
class PlanView:
    """What the checker needs of a plan: partitions, their units and times, the latency."""

    part_nodes: Sequence[np.ndarray]
    part_unit: np.ndarray
    part_start: np.ndarray
    part_end: np.ndarray
    latency_s: float


def check_evaluation(g: CostGraph, ev: Evaluation) -> None:
    """Check the plan an :class:`Evaluation` describes (see :func:`check_plan`)."""
    order = np.argsort(ev.part_of, kind="stable")
    cut = np.searchsorted(ev.part_of[order], np.arange(ev.num_partitions + 1))
    parts = [order[cut[i] : cut[i + 1]] for i in range(ev.num_partitions)]
    check_plan(g, PlanView(parts, ev.part_unit, ev.part_start, ev.part_end, ev.latency_s))


def check_plan(g: CostGraph, plan: PlanView, *, tol: float = 1e-9) -> None:
    """Raise :class:`PlanError` unless ``plan`` satisfies every rule of the module docstring."""
    part_of = _coverage(g, plan)
    _support(g, plan)
    _acyclic(g, plan, part_of)
    units = np.asarray(plan.part_unit)[part_of]
    _colocation(g, units)
    _memory(g, units)
    _single(g, plan)
    _schedule(g, plan, part_of, tol)


def _fail(msg: str) -> None:
    raise PlanError(msg)


def _coverage(g: CostGraph, plan: PlanView) -> np.ndarray:
    part_of = np.full(g.num_nodes, -1, dtype=np.int64)
    for q, nodes in enumerate(plan.part_nodes):
        nodes = np.asarray(nodes, dtype=np.int64)
        if len(nodes) == 0:
            _fail(f"partition {q} is empty")
        if nodes.min() < 0 or nodes.max() >= g.num_nodes:
            _fail(f"partition {q} names a node index outside 0..{g.num_nodes - 1}")
        again = nodes[part_of[nodes] >= 0]
        if len(again):
            v = int(again[0])
            _fail(f"{g.node_label(v)} is in partitions {int(part_of[v])} and {q}")
        if len(np.unique(nodes)) != len(nodes):
            _fail(f"partition {q} lists a node twice")
        part_of[nodes] = q
    missing = np.flatnonzero(part_of < 0)
    if len(missing):
        _fail(f"{g.node_label(int(missing[0]))} is in no partition ({len(missing)} unplaced)")
    return part_of


def _support(g: CostGraph, plan: PlanView) -> None:
    for q, nodes in enumerate(plan.part_nodes):
        u = int(plan.part_unit[q])
        if not 0 <= u < g.num_units:
            _fail(f"partition {q} is on unit index {u}, but there are {g.num_units} units")
        p = int(g.unit_proc[u])
        bad = np.asarray(nodes)[~np.isfinite(g.latency[np.asarray(nodes), p])]
        if len(bad):
            _fail(
                f"partition {q} on {g.unit_name(u)} holds {g.node_label(int(bad[0]))}, which "
                f"{g.proc_names[p]} does not support"
            )


def _acyclic(g: CostGraph, plan: PlanView, part_of: np.ndarray) -> None:
    src = np.repeat(np.arange(g.num_nodes), np.diff(g.succ.ptr))
    dst = g.succ.idx
    ps, pd = part_of[src], part_of[dst]
    cross = ps != pd
    nq = len(plan.part_nodes)
    key = np.unique(ps[cross] * nq + pd[cross])
    a, b = key // nq, key % nq
    indeg = np.bincount(b, minlength=nq)
    out = [[] for _ in range(nq)]  # type: list[list[int]]
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        out[x].append(y)
    ready = [q for q in range(nq) if indeg[q] == 0]
    seen = 0
    while ready:
        q = ready.pop()
        seen += 1
        for y in out[q]:
            indeg[y] -= 1
            if indeg[y] == 0:
                ready.append(y)
    if seen == nq:
        return
    # Name a cycle: walk forward inside the leftover set until a partition repeats.
    left = set(np.flatnonzero(indeg > 0).tolist())
    path = [min(left)]
    pos = {path[0]: 0}
    while True:
        nxt = next(y for y in out[path[-1]] if y in left)
        if nxt in pos:
            cyc = [*path[pos[nxt] :], nxt]
            break
        pos[nxt] = len(path)
        path.append(nxt)
    hops = []
    for x, y in itertools.pairwise(cyc):
        e = int(np.flatnonzero(cross & (ps == x) & (pd == y))[0])
        hops.append(f"{g.node_label(int(src[e]))} -> {g.node_label(int(dst[e]))}")
    _fail(
        f"partitions {' -> '.join(map(str, cyc))} form a cycle, so partition {cyc[0]} is not "
        f"convex or the partitions cannot be ordered ({'; '.join(hops)})"
    )


def _colocation(g: CostGraph, units: np.ndarray) -> None:
    for gi, name in enumerate(g.coloc_names):
        members = np.flatnonzero(g.coloc == gi)
        us = np.unique(units[members])
        if len(us) > 1:
            v = int(members[np.flatnonzero(units[members] != units[members[0]])[0]])
            _fail(
                f"colocation group {name!r} is split over units {g.unit_name(int(us[0]))} and "
                f"{g.unit_name(int(units[v]))} ({g.node_label(v)})"
            )


def _memory(g: CostGraph, units: np.ndarray) -> None:
    w = np.bincount(units, weights=g.weight_bytes, minlength=g.num_units)
    arena = np.zeros(g.num_units, dtype=np.int64)
    np.maximum.at(arena, units, g.activation_bytes)
    cap = g.proc_memory[g.unit_proc]
    for u in np.flatnonzero(w + arena > cap).tolist():
        _fail(
            f"unit {g.unit_name(u)} holds {int(w[u])} bytes of weights plus a {int(arena[u])}-byte "
            f"arena, more than its {int(cap[u])} bytes"
        )


def _single(g: CostGraph, plan: PlanView) -> None:
    pu = np.asarray(plan.part_unit, dtype=np.int64)
    counts = np.bincount(pu, minlength=g.num_units)
    bad = np.flatnonzero((counts > 1) & g.proc_single[g.unit_proc])
    if len(bad):
        u = int(bad[0])
        _fail(
            f"unit {g.unit_name(u)} runs {int(counts[u])} partitions but its processor runs one "
            "partition per unit (single_partition)"
        )


def _schedule(g: CostGraph, plan: PlanView, part_of: np.ndarray, tol: float) -> None:
    start = np.asarray(plan.part_start, dtype=np.float64)
    end = np.asarray(plan.part_end, dtype=np.float64)
    pu = np.asarray(plan.part_unit)
    proc = g.unit_proc[pu]
    dom = g.proc_domain[proc]
    copies = g.proc_copies[proc]
    nq = len(plan.part_nodes)
    tc = g.tensor_consumers
    t = tc.row_ids()
    src = g.tensor_src[t]
    ps = np.where(src >= 0, part_of[np.maximum(src, 0)], -1)
    pc = part_of[tc.idx]
    cross = ps != pc
    t, ps, pc = t[cross], ps[cross], pc[cross]
    # one row per (tensor, reading partition)
    if len(t):
        key = np.unique(np.stack([t, pc, ps]), axis=1)
        t, pc, ps = key[0], key[1], key[2]
    a_dom = np.where(ps >= 0, dom[np.maximum(ps, 0)], g.host_domain)
    b_dom = dom[pc]
    same_unit = (ps >= 0) & (pu[np.maximum(ps, 0)] == pu[pc])
    free = (a_dom == b_dom) & (
        (ps < 0) | ~g.self_link[a_dom] | (same_unit & ~g.proc_unit_handoff[proc[pc]])
    )
    cost = np.where(free, 0.0, g.transfer_cost[t, a_dom, b_dom])
    # a (tensor, destination domain) moves once; its first reader in creation order receives it
    nd = len(g.domain_names)
    mkey = t * nd + b_dom
    first = np.ones(len(t), dtype=bool)
    if len(t):
        order = np.lexsort((pc, mkey))
        charged = order[~free[order]]  # charged reads by (tensor, domain), then partition
        first[:] = False
        if len(charged):
            ck = mkey[charged]
            head = np.ones(len(charged), dtype=bool)
            head[1:] = ck[1:] != ck[:-1]
            first[charged[head]] = True
    sender_pays = ~free & (ps >= 0) & copies[np.maximum(ps, 0)]
    recv_pays = ~free & first & copies[pc]
    extra = np.zeros(nq)
    np.add.at(extra, ps[first & sender_pays], cost[first & sender_pays])
    np.add.at(extra, pc[recv_pays], cost[recv_pays])
    outs = g.output_tensors
    oq = part_of[g.tensor_src[outs]] if len(outs) else np.zeros(0, np.int64)
    od = dom[oq]
    o_cost = np.where(od == g.host_domain, 0.0, g.transfer_cost[outs, od, g.host_domain])
    # an output already copied to the host domain for a reader there is not moved again
    moved_host = set((mkey[first]).tolist())
    o_new = np.asarray(
        [
            od[i] != g.host_domain and int(outs[i]) * nd + g.host_domain not in moved_host
            for i in range(len(outs))
        ],
        dtype=bool,
    )
    o_sender = copies[oq] & (od != g.host_domain)
    np.add.at(extra, oq[o_new & o_sender], o_cost[o_new & o_sender])
    for q, nodes in enumerate(plan.part_nodes):
        want = g.proc_dispatch[proc[q]] + g.latency[np.asarray(nodes), proc[q]].sum() + extra[q]
        if abs(end[q] - start[q] - want) > tol * max(1.0, want):
            _fail(
                f"partition {q} lasts {end[q] - start[q]:.9g} s but its dispatch, nodes and "
                f"copies take {want:.9g} s"
            )
        if start[q] < -tol:
            _fail(f"partition {q} starts before time 0 ({start[q]:.9g} s)")
    ready = np.where(ps >= 0, end[np.maximum(ps, 0)], 0.0)
    arrive = ready + np.where(sender_pays | recv_pays, 0.0, cost)
    late = np.flatnonzero(start[pc] < arrive - tol * np.maximum(1.0, arrive))
    if len(late):
        i = int(late[0])
        _fail(
            f"partition {int(pc[i])} starts at {start[pc[i]]:.9g} s but its input tensor "
            f"{g.tensor_name(int(t[i]))!r} arrives at {arrive[i]:.9g} s"
        )
    for u in np.unique(pu).tolist():
        qs = np.flatnonzero(pu == u)
        qs = qs[np.lexsort((end[qs], start[qs]))]
        for x, y in zip(qs[:-1].tolist(), qs[1:].tolist(), strict=True):
            if start[y] < end[x] - tol * max(1.0, end[x]):
                _fail(
                    f"partitions {x} and {y} overlap on unit {g.unit_name(u)} "
                    f"({start[x]:.9g}-{end[x]:.9g} s and {start[y]:.9g}-{end[y]:.9g} s)"
                )
    finish = float(end.max())
    for i in range(len(outs)):
        c = 0.0 if o_sender[i] else float(o_cost[i])
        finish = max(finish, float(end[oq[i]]) + c)
    if abs(plan.latency_s - finish) > tol * max(1.0, finish):
        _fail(f"predicted latency {plan.latency_s:.9g} s but the schedule ends at {finish:.9g} s")
