"""Exact placement for small graphs: depth-first branch and bound over every placement.

The search space is the heuristic's: every node (in execution order) on every unit of every
admissible processor. Identical units of one processor are interchangeable (the evaluation
depends on unit identity only through which nodes share a unit), so a node may open a new unit of
a processor only if it is that processor's lowest unused one; every placement has exactly one
such canonical relabelling with the same objective. Leaves are scored by the one evaluation
function (:func:`~.schedule.evaluate`), so the result is optimal for exactly the objective
the heuristic is judged by.

Pruning uses lower bounds valid for *every* completion and every schedule that respects
dependencies, partition atomicity (a partition starts after all its inputs arrive; its outputs
appear when it ends) and unit exclusivity:

* ``fin(v)``, a lower bound on when each placed node finishes:
  ``lat(v) + max(dispatch + input arrival, fin(u) [same unit] or fin(u) + transfer + dispatch
  [other unit] over predecessors u)``;
* ``tail(w, q)``, computed once backwards: ``lat(w, q) + max(output transfer, min over the
  successor's admissible processors r of [0 if r == q else transfer + dispatch(r)] + tail)``;
* latency bound: the largest ``fin(v)`` plus output transfer, the largest over unplaced nodes
  ``w`` with placed predecessors of ``min_q [start bound(w, q) + tail(w, q)]``, and every unit's
  load (its nodes' latencies plus at least one dispatch);
* throughput bound: every unit's load and the total minimum work over all units.

A node whose bound reaches the incumbent is pruned, so ties with the incumbent are not explored:
the primary objective is proven optimal when the search completes; the secondary key is only
the best among placements seen. The incumbent starts from caller-supplied placements (the
heuristic's and the baselines'), so the exact result is never worse than them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from edgepart.placement import _core
from edgepart.placement._bounds import edge_xfer, frontier_bound, io_costs, prefix_bound
from edgepart.placement.constraints import admissible, group_members
from edgepart.placement.costgraph import CostGraph
from edgepart.placement.evaluate import Evaluation, evaluate, objective_key, score
from edgepart.placement.lower_bounds import lower_bound

__all__ = ["BB_MAX_NODES", "ExactResult", "solve_exact"]

# The branch and bound runs on graphs up to this size (its preprocessing is quadratic in the
# worst case); above it the answer is the incumbent and the root lower bound.
BB_MAX_NODES = 2000


@dataclass(frozen=True, eq=False)
class ExactResult:
    units: np.ndarray
    evaluation: Evaluation
    optimal: bool  # the search finished: no placement has a better primary objective
    nodes_explored: int
    leaves: int
    seconds: float
    bound: float = 0.0  # lower bound on the primary objective (= the incumbent when optimal)


def solve_exact(
    g: CostGraph,
    objective: str = "latency",
    *,
    time_limit: float = 60.0,
    incumbents: Sequence[np.ndarray] = (),
    progress: Callable[[int, int, str], None] | None = None,
    lp_bound: bool = True,
    node_limit: int | None = None,
) -> ExactResult:
    """Branch and bound to the optimal placement of ``g`` (see the module docstring).

    Parameters
    ----------
    g : CostGraph
        The problem (practical up to a few dozen nodes).
    objective : str
        "latency" or "throughput".
    time_limit : float
        Seconds; when reached the best placement found is returned with ``optimal=False``.
    incumbents : sequence of numpy.ndarray
        Known placements (unit per node) to start from; the best feasible one bounds the search.
    progress : callable, optional
        ``progress(elapsed_ms, limit_ms, label)`` every 256 search nodes (a progress bar:
        :class:`edgepart.progress.Progress`); the label gives nodes searched and the best so far.
    lp_bound : bool
        Compute the LP lower bounds at the root (:mod:`~edgepart.placement.lower_bounds`): an
        incumbent that meets them is optimal without a search.
    node_limit : int, optional
        Stop after this many search nodes as on the time limit (a limit that does not depend on
        the machine's speed: without the LP bounds and with a time limit that is not reached,
        the result is deterministic).

    Raises
    ------
    PlacementInfeasibleError
        A node or colocation group fits no processor.
    """
    t0 = time.perf_counter()
    adm = admissible(g)
    n, npr = g.num_nodes, g.num_procs
    deadline = t0 + time_limit
    best_units = None
    best_ev = None
    best_key = (math.inf, math.inf)
    for inc in incumbents:
        ev = evaluate(g, inc)
        key = objective_key(ev, objective)
        if key < best_key:
            best_units, best_ev, best_key = np.asarray(inc).copy(), ev, key
    throughput = objective == "throughput"
    root_lb = lower_bound(g, objective, lp=lp_bound, time_limit=max(0.05, 0.3 * time_limit)).value
    if best_units is not None and best_ev is not None and best_key[0] <= root_lb * (1 + 1e-9):
        # the incumbent meets the bound: proven without a search
        if progress is not None:
            progress(int(time_limit * 1e3), int(time_limit * 1e3), "0 nodes, done (at the bound)")
        return ExactResult(best_units, best_ev, True, 0, 0, time.perf_counter() - t0, root_lb)
    lat = np.where(adm, g.latency, np.inf)
    dom = g.proc_domain.tolist()
    disp = g.proc_dispatch.tolist()
    xfer = edge_xfer(g)
    a_in, o_out = io_costs(g)
    preds = g.pred.tolist()
    succs = g.succ.tolist()

    # tail[w][q], backwards over the execution order.
    tail = np.full((n, npr), np.inf)
    for w in range(n - 1, -1, -1):
        for q in np.flatnonzero(adm[w]).tolist():
            best = o_out[w, q]
            for s in succs[w]:
                x = xfer[(w, s)]
                r_ok = np.flatnonzero(adm[s])
                c = [
                    tail[s, r] + (0.0 if r == q else x[dom[q], dom[r]] + disp[r])
                    for r in r_ok.tolist()
                ]
                best = max(best, min(c))
            tail[w, q] = lat[w, q] + best
    tail_l = tail.tolist()
    lat_l = lat.tolist()
    a_in_l = a_in.tolist()
    o_out_l = o_out.tolist()
    min_lat = np.min(lat, axis=1)
    rest_work: list[float] = np.concatenate([np.cumsum(min_lat[::-1])[::-1], [0.0]]).tolist()
    total_units = g.num_units
    # Frontier at depth k: unplaced nodes w >= k with a predecessor < k (w is in it for
    # min(preds(w)) < k <= w), cached per depth.
    min_pred = [min(preds[w]) if preds[w] else n for w in range(n)]
    by_start = sorted(range(n), key=lambda w: min_pred[w])
    fcache: dict[int, list[tuple[int, list[int]]]] = {}

    def frontier(k: int) -> list[tuple[int, list[int]]]:
        hit = fcache.get(k)
        if hit is None:
            hit = []
            for w in by_start:
                if min_pred[w] >= k:
                    break
                if w >= k:
                    hit.append((w, [u for u in preds[w] if u < k]))
            hit.sort()
            if len(fcache) < 4096:
                fcache[k] = hit
        return hit

    static_lb = max(
        (
            min(disp[q] + a_in_l[w][q] + tail_l[w][q] for q in range(npr) if adm[w, q])
            for w in range(n)
            if not preds[w]
        ),
        default=0.0,
    )
    adm_units = [
        [(q, int(g.proc_first_unit[q]), int(g.proc_units[q])) for q in np.flatnonzero(adm[v])]
        for v in range(n)
    ]
    uproc = g.unit_proc.tolist()
    cap = g.proc_memory[g.unit_proc].tolist()
    wts = g.weight_bytes.tolist()
    act = g.activation_bytes.tolist()
    group = g.coloc.tolist()
    gfirst = [int(m[0]) if len(m) else -1 for m in group_members(g)]

    if n > BB_MAX_NODES or (best_units is None and n > 60):
        # beyond the branch and bound's reach: the incumbent and the bound are the answer
        if progress is not None:
            progress(int(time_limit * 1e3), int(time_limit * 1e3), "0 nodes, done (too large)")
        if best_units is None or best_ev is None:
            arr = g.proc_first_unit[np.argmin(np.where(adm, g.latency, np.inf), axis=1)]
            return ExactResult(
                arr, evaluate(g, arr), False, 0, 0, time.perf_counter() - t0, root_lb
            )
        return ExactResult(best_units, best_ev, False, 0, 0, time.perf_counter() - t0, root_lb)
    comp = _core.compiled(g)
    # the prefix schedule bound relies on the plain epochs of the prefix
    prefix_ok = not bool(g.proc_single.any())

    unit = [-1] * n
    fin = [0.0] * n
    load = [0.0] * g.num_units
    wsum = [0] * g.num_units
    arena = [0] * g.num_units
    used = [0] * npr
    count = [0] * g.num_units
    state = {"nodes": 0, "leaves": 0, "timeout": False}

    def bound(k: int, work: float) -> float:
        lb = max(load)
        if throughput:
            return max(lb, (work + rest_work[k]) / total_units, root_lb)
        return frontier_bound(lb, frontier(k), unit, fin, uproc, tail_l, a_in_l, xfer, dom, disp)

    def _children(v: int) -> list[tuple[float, int, int, float]]:
        gv = group[v]
        forced = unit[gfirst[gv]] if gv >= 0 and gfirst[gv] < v else -1
        out = []
        for q, f0, cnt in adm_units[v]:
            top = min(used[q] + 1, cnt)
            for u in range(f0, f0 + top):
                if forced >= 0 and u != forced:
                    continue
                if wsum[u] + wts[v] + max(arena[u], act[v]) > cap[u]:
                    continue
                s = disp[q] + a_in_l[v][q]
                for p in preds[v]:
                    up = unit[p]
                    a = fin[p] if up == u else fin[p] + xfer[p, v][dom[uproc[up]], dom[q]] + disp[q]
                    if a > s:
                        s = a
                f = s + lat_l[v][q]
                out.append((f + tail_l[v][q] - lat_l[v][q], int(u), int(q), f))
        out.sort()
        return out

    # Depth-first branch and bound with an explicit stack (no recursion: any depth works).
    # A frame is one tree node at depth k: its children (sorted by estimate), the next one to
    # try, and the state change of the child currently descended into (undone on return).
    stack: list[list[object]] = [[0, 0.0, 0.0, None, 0, None]]
    while stack:
        fr = stack[-1]
        k, work, lb_fin, children, ci, applied = fr
        assert isinstance(k, int) and isinstance(work, float) and isinstance(lb_fin, float)
        if applied is not None:  # back from a child: undo it
            assert isinstance(applied, tuple)
            u_, q_, old_ = applied
            load[u_], wsum[u_], arena[u_], used[q_] = old_
            count[u_] -= 1
            unit[k] = -1
            fr[5] = None
        if state["timeout"]:
            break
        if children is None:  # entering the node
            state["nodes"] += 1
            if node_limit is not None and state["nodes"] > node_limit:
                state["timeout"] = True
                break
            if (state["nodes"] & 255) == 1:
                now = time.perf_counter()
                if now > deadline:
                    state["timeout"] = True
                    break
                if progress is not None:
                    best = "-" if best_ev is None else f"{best_key[0] * 1e3:.3f} ms"
                    progress(
                        int((now - t0) * 1e3),
                        int(time_limit * 1e3),
                        f"{state['nodes']} nodes, best {best}",
                    )
            if k == n:
                state["leaves"] += 1
                key = score(g, unit, objective)
                if key < best_key:
                    arr = np.asarray(unit, dtype=np.int64)
                    best_units, best_ev, best_key = arr, evaluate(g, arr), key
                stack.pop()
                continue
            children = _children(k)
            fr[3] = children
        assert isinstance(children, list) and isinstance(ci, int)
        if ci >= len(children):
            stack.pop()
            continue
        fr[4] = ci + 1
        est, u, q, f = children[ci]
        if est >= best_key[0] * (1 - 1e-9) and not throughput:
            continue
        v = k
        first_use = count[u] == 0
        count[u] += 1
        unit[v] = u
        fin[v] = f
        old = (load[u], wsum[u], arena[u], used[q])
        fr[5] = (u, q, old)
        load[u] += lat_l[v][q] + (disp[q] if first_use else 0.0)
        wsum[u] += wts[v]
        arena[u] = max(arena[u], act[v])
        f0 = int(g.proc_first_unit[q])
        if u - f0 + 1 > used[q]:
            used[q] = u - f0 + 1
        nf = max(lb_fin, f + o_out_l[v][q])
        lb = bound(k + 1, work + lat_l[v][q])
        if not throughput and lb < best_key[0] * (1 - 1e-9):
            lb = max(lb, nf, static_lb)
            if lb < best_key[0] * (1 - 1e-9) and prefix_ok:
                lb = max(
                    lb,
                    prefix_bound(
                        comp,
                        unit,
                        k + 1,
                        frontier(k + 1),
                        tail_l,
                        a_in_l,
                        o_out_l,
                        xfer,
                        dom,
                        disp,
                    ),
                )
        if lb < best_key[0] * (1 - 1e-9):
            stack.append([k + 1, work + lat_l[v][q], nf, None, 0, None])

    elapsed = time.perf_counter() - t0
    if progress is not None:
        progress(int(time_limit * 1e3), int(time_limit * 1e3), f"{state['nodes']} nodes, done")
    if best_units is None or best_ev is None:
        # No incumbent and nothing feasible found in time: fall back to an evaluation of the
        # all-fastest placement so the caller gets a concrete (infeasible) answer to report.
        arr = g.proc_first_unit[np.argmin(lat, axis=1)]
        return ExactResult(
            arr, evaluate(g, arr), False, state["nodes"], state["leaves"], elapsed, root_lb
        )
    done = not state["timeout"]
    return ExactResult(
        best_units,
        best_ev,
        done,
        state["nodes"],
        state["leaves"],
        elapsed,
        best_key[0] if done else root_lb,
    )
