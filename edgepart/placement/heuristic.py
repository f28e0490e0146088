"""The default placement search: many cheap starts, multi-start local search, window LNS.

1. Admissible processors per node (support and memory; infeasible inputs raise here).
2. Starts: the Band-unit chain DP, an earliest-finish-time greedy, every processor alone with
   fallbacks, any caller-supplied starts (the TFLite baselines), each also *packed* over a
   memory-limited processor's units (and *balanced* for throughput), and stage plans from
   :mod:`~edgepart.placement.stages`. Each is repaired for unit memory (colocation groups
   move whole) and scored.
3. From the best two or three distinct starts (multi-start; when memory binds, the last of them
   is the best start on a processor without a memory limit, grown from there): local search
   (:mod:`~edgepart.placement.localsearch`), each for an equal share of 70 % of the budget.
   The best result continues with the rest: local search while it is still descending, exact
   window re-solves (:mod:`~edgepart.placement.lns`) alternating with local search once it has
   converged, while they improve.
4. On graphs of a few dozen nodes, the exact branch and bound from the best plan, for a bounded
   number of its search nodes.
5. A lower bound that costs no LP (critical path or total work) comes with the result; a start
   or searched plan that meets it is optimal, and the search stops there.

The evaluation budget *grows* with the graph (:func:`evaluation_budget`): the search is
counted in evaluations of the C kernel, never wall time, so results are deterministic; the
exact solver passes a ``deadline`` instead.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from edgepart.errors import PlacementInfeasibleError
from edgepart.placement._fastscore import Scorer
from edgepart.placement.constraints import admissible, group_members
from edgepart.placement.costgraph import CostGraph
from edgepart.placement.evaluate import Evaluation, evaluate, objective_key
from edgepart.placement.exact import solve_exact
from edgepart.placement.lns import Atoms, window_search
from edgepart.placement.localsearch import HUGE, Neighbourhood, local_search
from edgepart.placement.lower_bounds import lower_bound
from edgepart.placement.stages import plan_stages
from edgepart.placement.starts import (
    band_units,
    chain_dp_start,
    greedy_eft_start,
    pack_units,
    single_starts,
)

__all__ = ["HeuristicResult", "evaluation_budget", "repair_memory", "solve_heuristic"]

log = logging.getLogger(__name__)

_SMALL = 400
_GREEDY_MAX_NODES = 5_000  # the node-by-node greedy rarely wins on big graphs; it costs ~20 us/node


@dataclass(frozen=True, eq=False)
class HeuristicResult:
    units: np.ndarray
    evaluation: Evaluation
    start: str  # which start the best placement descends from
    stats: dict[str, int] = field(default_factory=dict)
    bound: float = 0.0  # a lower bound on the primary objective (critical path or load)


BUDGET_GROWTH_LIMIT = 10_000
BUDGET_UNITS_REF = 4
BUDGET_WORK_LIMIT = 2e9


def evaluation_budget(g: CostGraph, effort: float = 1.0) -> int:
    """Number of evaluations the heuristic may spend on ``g`` (see the module docstring).

    It grows with the graph, ``40000 + 2 * nodes`` up to :data:`BUDGET_GROWTH_LIMIT` nodes
    (60,000 there); graphs of 200 nodes and more small enough that an evaluation costs a few
    microseconds get more, ``6e7 / (nodes + edges)`` (at most 300,000; the search usually
    stalls and stops long before). Beyond :data:`BUDGET_GROWTH_LIMIT` nodes, where one
    evaluation costs milliseconds, it falls with the square of the size (600 at 100,000 nodes)
    so the run time stays near that of 10,000 nodes. A move goes to any unit its nodes' processor
    has in use (and one fresh one), so one pass over the moves costs more evaluations the more
    units there are: beyond :data:`BUDGET_UNITS_REF` units the budget grows with the square root
    of their number, up to twice, as long as evaluations times ``nodes + edges`` (the work of
    one evaluation) stay under :data:`BUDGET_WORK_LIMIT` (about 15 s of search at 10,000
    nodes). Times ``effort``.
    """
    n = g.num_nodes
    base: float = 40000 + 2 * min(n, BUDGET_GROWTH_LIMIT)
    if n >= 200:  # (smaller graphs converge within the base budget)
        base = max(base, min(300_000, 6e7 / (n + g.num_edges + 1)))
    if n > BUDGET_GROWTH_LIMIT:
        base = base * (BUDGET_GROWTH_LIMIT / n) ** 2
    more = base * min(2.0, max(1.0, math.sqrt(g.num_units / BUDGET_UNITS_REF)))
    base = max(base, min(more, BUDGET_WORK_LIMIT / (n + g.num_edges + 1)))
    return max(8, int(effort * base))


def repair_memory(g: CostGraph, adm: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Move nodes off over-full units, heaviest weights first, to the admissible unit with room
    where they are fastest. A node of a colocation group moves with its whole group (the
    group's weights and largest activation must fit there, and every member must be admissible
    on it). Returns the input unchanged when every unit fits."""
    cap = g.proc_memory[g.unit_proc]
    if not np.isfinite(cap).any():
        return units
    units = units.copy()
    w = np.bincount(units, weights=g.weight_bytes, minlength=g.num_units)
    arena = np.zeros(g.num_units, dtype=np.int64)
    np.maximum.at(arena, units, g.activation_bytes)
    members = group_members(g) if len(g.coloc_names) else []
    for u in np.flatnonzero(w + arena > cap).tolist():
        on = np.flatnonzero(units == u)
        for v in on[np.argsort(-g.weight_bytes[on], kind="stable")].tolist():
            if w[u] + arena[u] <= cap[u]:
                break
            if units[v] != u:
                continue  # moved with its group
            mv = members[int(g.coloc[v])] if g.coloc[v] >= 0 else np.asarray([v])
            mv = mv[units[mv] == u]
            wv = float(g.weight_bytes[mv].sum())
            av = int(g.activation_bytes[mv].max())
            cands = [
                x
                for x in range(g.num_units)
                if x != u
                and adm[mv, g.unit_proc[x]].all()
                and w[x] + wv + max(arena[x], av) <= cap[x]
            ]
            if not cands:
                continue
            x = min(cands, key=lambda y: (float(g.latency[mv, g.unit_proc[y]].sum()), y))
            units[mv] = x
            w[u] -= wv
            w[x] += wv
            arena[x] = max(arena[x], av)
        rest = units == u
        arena[u] = g.activation_bytes[rest].max() if rest.any() else 0
    return units


# Graphs up to this many nodes end with the exact branch and bound from the best plan, for at
# most EXACT_TAIL_SEARCH_NODES of its search nodes (about half a second; a count, not a time, so the
# result stays deterministic): on such graphs the local search can miss a move of several nodes
# at once that the exact search finds in a few thousand nodes.
EXACT_TAIL_MAX_NODES = 48
EXACT_TAIL_SEARCH_NODES = 10_000


def _exact_tail(
    g: CostGraph,
    objective: str,
    best: HeuristicResult,
    lb: float,
    deadline: float | None,
    stats: dict[str, int],
) -> tuple[HeuristicResult, float]:
    """The branch and bound from ``best`` on a small graph (see :data:`EXACT_TAIL_MAX_NODES`),
    and the bound: the optimum when the search completed, else ``lb``."""
    if objective_key(best.evaluation, objective)[0] <= lb * (1 + 1e-9):
        return best, lb
    limit = math.inf if deadline is None else max(0.0, deadline - time.perf_counter())
    ex = solve_exact(
        g,
        objective,
        time_limit=limit,
        incumbents=[best.units],
        lp_bound=False,
        node_limit=EXACT_TAIL_SEARCH_NODES,
    )
    stats["exact_nodes"] = ex.nodes_explored
    bound = max(lb, ex.bound) if ex.optimal else lb
    if objective_key(ex.evaluation, objective) < objective_key(best.evaluation, objective):
        return HeuristicResult(ex.units, ex.evaluation, "exact-tail"), bound
    return best, bound


# The exact stage DP runs in the default search while its (ideal, sub-ideal) pairs stay under
# this many (about a second); beyond it the block DP gives the stage starts (throughput).
STAGE_DP_PAIRS = 30_000


def _late(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() > deadline


def _stage_starts(g: CostGraph, objective: str) -> list[tuple[str, np.ndarray]]:
    """Stage plans (contiguous stages, one unit each) as starts, from the exact DP over ideals
    when it is small enough, else from the block DP: for throughput the slowest stage is
    minimized (with and without send and receive), for latency the sum of the stages (run one
    after another, send and receive counted: sequential stages that fill memory-limited units
    or single-partition units)."""
    out: list[tuple[str, np.ndarray]] = []
    # ideals beyond sqrt(2 * pairs) cannot stay under the pair cap
    cap = math.isqrt(2 * STAGE_DP_PAIRS)
    total = objective != "throughput"
    for count in (True, False) if not total else (True,):
        plan = plan_stages(
            g, count_transfers=count, max_ideals=cap, max_pairs=STAGE_DP_PAIRS, total=total
        )
        if plan is not None:
            out.append((f"stages:{plan.method}{'+comm' if count else ''}", plan.units))
    return out


# Percentage of the search budget the tries descend with, each an equal part; the best of them
# continues with the rest.
TRY_SHARE_PERCENT = 70


def _descend(
    g: CostGraph,
    adm: np.ndarray,
    band_of: np.ndarray,
    objective: str,
    tries: list[tuple[tuple[float, float], int, str, np.ndarray]],
    budget: int,
    lb: float,
    sc: Scorer,
    nbh: Neighbourhood,
    seed: int,
    deadline: float | None,
    stats: dict[str, int],
) -> HeuristicResult:
    """Local search from every try for an equal share of :data:`TRY_SHARE_PERCENT` of what is
    left of the budget; then the best result continues with the rest: local search while it is
    still descending (it ran out of evaluations before reaching a local optimum), exact window
    re-solves (:mod:`~edgepart.placement.lns`) once it has (it stalled, or kicked), alternating
    while the windows improve. Stops early at ``lb``."""

    def run(units: np.ndarray, evals: int, i: int) -> tuple[np.ndarray, Evaluation, bool]:
        res_units, res_ev, st = local_search(
            g,
            adm,
            band_of,
            units,
            objective,
            max_evals=max(1, evals),
            seed=seed + i,
            scorer=sc,
            nbh=nbh,
            deadline=deadline,
        )
        stats["improvements"] += st.improvements
        stats["kicks"] += st.kicks
        return res_units, res_ev, st.kicks > 0 or st.evaluations < evals

    def optimal(ev: Evaluation) -> bool:
        return objective_key(ev, objective)[0] <= lb * (1 + 1e-9)

    share = TRY_SHARE_PERCENT * (budget - sc.evaluations) // (100 * len(tries))
    results = []
    for i, (_, _, name, units) in enumerate(tries):
        res_units, res_ev, converged = run(units, share, i)
        results.append((objective_key(res_ev, objective), i, name, res_units, res_ev, converged))
        if optimal(res_ev):
            break  # the other starts cannot do better
    _, i, name, units, ev, converged = min(results, key=lambda r: (r[0], r[1]))
    atoms = Atoms(g, nbh) if g.num_nodes <= HUGE else None
    for _ in range(20):
        left = budget - sc.evaluations
        if left <= 0 or _late(deadline) or optimal(ev):
            break
        if converged:
            if atoms is None:
                break
            units, _, imp = window_search(
                g,
                sc,
                nbh,
                atoms,
                units,
                max_evals=left,
                throughput=objective == "throughput",
                deadline=deadline,
            )
            stats["windows"] = stats.get("windows", 0) + imp
            if imp == 0:
                break
        units, ev, converged = run(units, budget - sc.evaluations, i)
    return HeuristicResult(units, ev, name)


def solve_heuristic(
    g: CostGraph,
    objective: str = "latency",
    *,
    seed: int = 0,
    effort: float = 1.0,
    extra_starts: Sequence[tuple[str, np.ndarray]] = (),
    deadline: float | None = None,
) -> HeuristicResult:
    """Find a good feasible placement of ``g`` for ``objective`` ("latency" or "throughput").

    Parameters
    ----------
    g : CostGraph
        The problem.
    objective : str
        What to minimize: makespan ("latency") or the busiest resource's load ("throughput").
    seed : int
        Seed of the local search's kicks.
    effort : float
        Multiplies the evaluation budget.
    extra_starts : sequence of (name, units)
        More starting placements (e.g. the TFLite baselines).
    deadline : float
        A ``time.perf_counter()`` value at which the search stops (the exact solver's time
        limit); without it the run depends on evaluation counts only (deterministic).

    Returns
    -------
    HeuristicResult

    Raises
    ------
    PlacementInfeasibleError
        A node or colocation group fits no processor, or no start could be made to fit memory.
    """
    adm = admissible(g)
    band_of, _ = band_units(g, adm)
    budget = evaluation_budget(g, effort)
    starts: list[tuple[str, np.ndarray]] = [("chain-dp", chain_dp_start(g, adm))]
    if g.num_nodes <= _GREEDY_MAX_NODES:
        starts.append(("greedy-eft", greedy_eft_start(g, adm)))
    starts += [(f"single:{g.proc_names[p]}", s) for p, s in enumerate(single_starts(g, adm))]
    starts += list(extra_starts)
    sc = Scorer(g, objective)
    scored: list[tuple[tuple[float, float], int, str, np.ndarray]] = []
    packed = []
    for name, units in starts:
        for bal in (False, True) if objective == "throughput" else (False,):
            pk = pack_units(g, units, balance=bal)
            if not np.array_equal(pk, units):
                packed.append((f"{name}+{'balanced' if bal else 'packed'}", pk))
    starts += packed
    starts += _stage_starts(g, objective)
    binds = False  # memory repair had to move nodes: some unit's memory binds
    for name, units in starts:
        fixed = repair_memory(g, adm, units)
        binds = binds or not np.array_equal(fixed, units)
        units = fixed
        k = sc.score(units, spread=False)
        k2 = (k[0], k[2]) if objective == "throughput" else (k[0], k[1])
        scored.append((k2, len(scored), name, units))
    used = len(scored)
    scored.sort(key=lambda s: (s[0], s[1]))
    if not math.isfinite(scored[0][0][0]):
        ev = evaluate(g, scored[0][3])
        raise PlacementInfeasibleError(
            "no feasible placement found; the best attempt violates: " + ev.violations[0]
        )
    # multi-start: the best distinct starts (three on small graphs, two on large ones)
    tries = []
    seen: set[bytes] = set()
    for s_ in scored:
        kb = s_[3].tobytes()
        if math.isfinite(s_[0][0]) and kb not in seen:
            seen.add(kb)
            tries.append(s_)
    tries = tries[: 3 if g.num_nodes <= _SMALL else 2 if g.num_nodes <= HUGE else 1]
    if binds and len(tries) > 1:
        # Memory binds: repaired and packed starts fill the units and leave the search little
        # room to move; the last try grows instead from a processor whose memory is not limited
        # (its nodes move onto the limited units move by move, each move feasible).
        free = {f"single:{g.proc_names[p]}" for p in range(g.num_procs)}
        free -= {f"single:{g.proc_names[p]}" for p in np.flatnonzero(np.isfinite(g.proc_memory))}
        grow = [
            s_
            for s_ in scored
            if s_[2] in free
            and math.isfinite(s_[0][0])
            and all(s_[3].tobytes() != t[3].tobytes() for t in tries)
        ]
        if grow:
            tries[-1] = grow[0]
    # the best bound that costs no LP: critical path (latency) or total work (throughput); a
    # start that meets it is optimal, and so is a searched plan: nothing left to search for
    lb = lower_bound(g, objective, lp=False).value
    stats = {"evaluations": used, "improvements": 0, "kicks": 0, "budget": budget}
    if tries[0][0][0] <= lb * (1 + 1e-9):
        _, _, name, units = tries[0]
        return HeuristicResult(units, evaluate(g, units), name, stats, lb)
    nbh = Neighbourhood(g, adm, band_of)
    best = _descend(g, adm, band_of, objective, tries, budget, lb, sc, nbh, seed, deadline, stats)
    stats["evaluations"] = sc.evaluations
    if g.num_nodes <= EXACT_TAIL_MAX_NODES and not _late(deadline):
        best, lb = _exact_tail(g, objective, best, lb, deadline, stats)
    log.debug("heuristic: %s, start %s", stats, best.start)
    return HeuristicResult(best.units, best.evaluation, best.start, stats, lb)
