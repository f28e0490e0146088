"""The partitioning API: pick a solver by name, compare with the TFLite baseline, check the plan.

Solvers are registered by name (``heuristic``, ``exact``, ``edge-cut``); each returns a placement
and its evaluation. :func:`partition_costgraph` runs the baselines, the chosen solver, keeps the
better of the solver's plan and the best baseline (except in edge-cut mode, which returns the
requested k-way split as asked and only reports the baseline), and runs the plan checker on the
result.

Examples
--------
>>> from edgepart.placement.synth import random_costgraph_doc
>>> from edgepart.placement.costgraph import costgraph_from_dict
>>> sol = partition_costgraph(costgraph_from_dict(random_costgraph_doc(12, 3, seed=1)))
>>> sol.evaluation.latency_s <= sol.baseline.evaluation.latency_s
True
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgepart.errors import PlacementInfeasibleError, UsageError
from edgepart.placement.baseline import Baseline, best_baseline, tflite_baselines
from edgepart.placement.costgraph import CostGraph
from edgepart.placement.edgecut import edge_cut
from edgepart.placement.evaluate import OBJECTIVES, Evaluation, evaluate, objective_key
from edgepart.placement.exact import solve_exact
from edgepart.placement.heuristic import solve_heuristic
from edgepart.placement.milp import solve_milp
from edgepart.placement.placement_check import check_evaluation
from edgepart.progress import ProgressCallback

__all__ = [
    "Solution",
    "SolveOptions",
    "get_solver",
    "partition_costgraph",
    "register_solver",
    "solver_names",
]


@dataclass(frozen=True)
class SolveOptions:
    objective: str = "latency"
    seed: int = 0
    effort: float = 1.0
    time_limit: float = 60.0  # exact solver
    edge_cut_k: int = 2
    edge_cut_method: str = "interval"
    # progress(done, total, label) while the exact solver runs (not part of the result)
    progress: ProgressCallback | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, eq=False)
class Solution:
    """A solved problem: the placement, its evaluation, the baselines and solver details."""

    graph: CostGraph
    options: SolveOptions
    method: str  # the registered solver name
    chosen: str  # "heuristic", "exact", "edge-cut", or the baseline's name if that won
    units: np.ndarray
    evaluation: Evaluation
    optimal: bool | None  # exact solver: optimality proven; None for other methods
    baseline: Baseline | None
    baselines: tuple[Baseline, ...]
    info: dict[str, Any] = field(default_factory=dict)


# The exact mode's MILP runs on graphs up to this size (its model grows with nodes x slots).
MILP_MAX_NODES = 3000

SolverFn = Callable[[CostGraph, SolveOptions, list[Baseline]], tuple[np.ndarray, dict[str, Any]]]
_SOLVERS: dict[str, SolverFn] = {}


def register_solver(name: str) -> Callable[[SolverFn], SolverFn]:
    """Decorator adding a solver under ``name``."""

    def deco(fn: SolverFn) -> SolverFn:
        _SOLVERS[name] = fn
        return fn

    return deco


def get_solver(name: str) -> SolverFn:
    """The solver registered as ``name``; the error lists the valid names."""
    try:
        return _SOLVERS[name]
    except KeyError:
        raise UsageError(
            f"unknown partition method {name!r}; valid: {', '.join(solver_names())}"
        ) from None


def solver_names() -> list[str]:
    return sorted(_SOLVERS)


@register_solver("heuristic")
def _heuristic(
    g: CostGraph, o: SolveOptions, bl: list[Baseline]
) -> tuple[np.ndarray, dict[str, Any]]:
    r = solve_heuristic(
        g,
        o.objective,
        seed=o.seed,
        effort=o.effort,
        extra_starts=[(b.name, b.units) for b in bl if b.feasible],
    )
    return r.units, {"start": r.start, **r.stats, "bound": r.bound}


@register_solver("exact")
def _exact(g: CostGraph, o: SolveOptions, bl: list[Baseline]) -> tuple[np.ndarray, dict[str, Any]]:
    """Incumbent from the heuristic (a third of the time at most), the latency MILP where it
    fits (exact with one partition per unit everywhere), then branch and bound on graphs up to
    :data:`~edgepart.placement.exact.BB_MAX_NODES`; always within ``o.time_limit``."""
    t0 = time.perf_counter()
    tl = o.time_limit
    h = solve_heuristic(
        g,
        o.objective,
        seed=o.seed,
        effort=o.effort,
        extra_starts=[(b.name, b.units) for b in bl if b.feasible],
        deadline=t0 + tl / 3,
    )
    incumbents = [h.units] + [b.units for b in bl if b.feasible]
    milp_bound = -math.inf
    info: dict[str, Any] = {"heuristic_evaluations": h.stats["evaluations"]}
    left = tl - (time.perf_counter() - t0)
    # an incumbent at the heuristic's cheap bound is optimal already: no MILP needed
    h_best = objective_key(h.evaluation, o.objective)[0]
    at_bound = math.isfinite(h_best) and h_best <= h.bound * (1 + 1e-9)
    if (
        o.objective == "latency"
        and not at_bound
        and g.num_nodes <= MILP_MAX_NODES
        and left > 0.2 * tl
    ):
        r = solve_milp(g, time_limit=0.5 * left, start=h.units)
        info["milp"] = {"status": r.status, "exact": r.exact}
        if r.units is not None and r.evaluation is not None and r.evaluation.feasible:
            incumbents.append(r.units)
        if r.exact:
            milp_bound = r.bound
    left = max(0.01, tl - (time.perf_counter() - t0))
    r2 = solve_exact(
        g,
        o.objective,
        time_limit=left,
        incumbents=incumbents,
        progress=None if o.progress is None else _whole_limit(o.progress, t0, tl),
    )
    best = objective_key(r2.evaluation, o.objective)[0]
    bound = max(r2.bound, milp_bound)
    optimal = r2.optimal or (math.isfinite(best) and best <= bound * (1 + 1e-9))
    info.update(
        {
            "optimal": optimal,
            "bound": bound if math.isfinite(bound) else None,
            "incumbent": best if math.isfinite(best) else None,
            "nodes_explored": r2.nodes_explored,
            "leaves": r2.leaves,
            "seconds": time.perf_counter() - t0,
        }
    )
    return r2.units, info


def _whole_limit(progress: ProgressCallback, t0: float, limit: float) -> ProgressCallback:
    """The branch and bound's progress in milliseconds of the whole exact mode's time limit
    (the heuristic and the MILP ran before it, within the same limit)."""
    full = int(limit * 1e3)

    def report(done: int, total: int, label: str) -> None:
        now = min(full, int((time.perf_counter() - t0) * 1e3))
        progress(full if done >= total else now, full, label)

    return report


@register_solver("edge-cut")
def _edgecut(
    g: CostGraph, o: SolveOptions, bl: list[Baseline]
) -> tuple[np.ndarray, dict[str, Any]]:
    r = edge_cut(g, o.edge_cut_k, method=o.edge_cut_method, seed=o.seed)
    return r.units, {
        "k": o.edge_cut_k,
        "partitioner": r.method,
        "raw_cut_bytes": r.raw_cut_bytes,
        "cut_bytes": r.cut_bytes,
        "blocks": int(r.blocks.max()) + 1,
    }


def partition_costgraph(
    g: CostGraph,
    method: str = "heuristic",
    options: SolveOptions | None = None,
    *,
    baselines: Sequence[Baseline] = (),
    reference: Baseline | None = None,
    starts: Sequence[Baseline] = (),
) -> Solution:
    """Place ``g`` with the named solver and return a checked :class:`Solution`.

    Parameters
    ----------
    g : CostGraph
        The problem.
    method : str
        A registered solver: "heuristic", "exact" or "edge-cut".
    options : SolveOptions
        Objective, seed, effort, exact time limit, edge-cut k and partitioner, and a progress
        callback the exact solver calls.
    baselines : sequence of Baseline
        More TFLite-default candidates besides the generic ones (e.g. the exact claim of a
        device profile's default delegates); all are starts and the plan is never worse than
        the best feasible one.
    reference : Baseline
        The baseline to report the plan against ("the TFLite default"); when it is missing or
        infeasible, the best feasible candidate is reported.
    starts : sequence of Baseline
        Placements the caller proposes (e.g. tensor-parallel shards on their units): solver
        starts, and the plan is never worse than the best feasible one; unlike ``baselines``
        they are not reported as baselines.

    Raises
    ------
    UsageError
        Unknown method or objective.
    PlacementInfeasibleError
        No feasible placement exists (names the node or unit and the numbers).
    PlanError
        Internal: the chosen plan failed the checker (a bug, never expected).
    """
    o = options or SolveOptions()
    if o.objective not in OBJECTIVES:
        raise UsageError(f"unknown objective {o.objective!r}; valid: {', '.join(OBJECTIVES)}")
    solver = get_solver(method)
    every = ([reference] if reference is not None else []) + list(baselines) + tflite_baselines(g)
    pool = every + list(starts)
    best = best_baseline(pool, o.objective)
    units, info = solver(g, o, pool)
    ev = evaluate(g, units)
    if not ev.feasible:
        raise PlacementInfeasibleError(f"the {method} plan is infeasible: {ev.violations[0]}")
    chosen = method
    if (
        method != "edge-cut"
        and best is not None
        and objective_key(best.evaluation, o.objective) < objective_key(ev, o.objective)
    ):
        units, ev, chosen = best.units, best.evaluation, best.name
    check_evaluation(g, ev)
    optimal = info.pop("optimal", None) if method == "exact" else None
    shown = (
        reference
        if reference is not None and reference.feasible
        else best_baseline(every, o.objective)
    )
    return Solution(g, o, method, chosen, units, ev, optimal, shown, tuple(every), info)
