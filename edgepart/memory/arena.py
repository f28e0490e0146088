"""Offset assignment strategies and the :class:`ArenaPlan` result.

Three strategies, each never worse than the one before it:

``tflite``
    TFLite's own planner (``ArenaPlanner::CreateTensorAllocationVector`` order and
    ``SimpleMemoryArena::Allocate`` best-fit gap rule, 64-byte alignment by default): the
    baseline users compare against.
``portfolio``
    The baseline plus greedy placements over several orders (size, area, lifetime length,
    start, conflict degree, live pressure) and fits (best, first); keeps the lowest peak.
``search``
    The portfolio's best, then an exact canonical-solution search (:mod:`.search`) that tries
    to reach the lower bound within the time limit.

Every arena stops as soon as its peak equals the lower bound (the plan is then optimal). Plans
are data: :func:`plan_arena` returns an :class:`ArenaPlan`; writing offsets anywhere is the
caller's step. Each plan is verified by :func:`~edgepart.memory.arena_check.check_plan` before it
is returned.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from edgepart.errors import ArenaOverflowError, UsageError
from edgepart.memory._arena import Arena, prepare
from edgepart.memory.arena_check import check_plan
from edgepart.memory.greedy import get_order, place
from edgepart.memory.problem import MemoryProblem
from edgepart.memory.search import improve

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "PORTFOLIO",
    "STRATEGIES",
    "ArenaPlan",
    "ArenaResult",
    "get_strategy",
    "plan_arena",
    "register_strategy",
]

log = logging.getLogger(__name__)

DEFAULT_TIME_LIMIT = 0.5
"""Seconds per :func:`plan_arena` call for improving on the baseline (portfolio + search)."""

PORTFOLIO: tuple[tuple[str, str], ...] = (
    ("size", "best"),
    ("size", "first"),
    ("area", "best"),
    ("area", "first"),
    ("length", "best"),
    ("length", "first"),
    ("pressure", "best"),
    ("pressure", "first"),
    ("start", "best"),
    ("start", "first"),
    ("degree", "best"),
    ("degree", "first"),
    ("tflite", "first"),
)
"""(order, fit) variants the portfolio tries after the baseline, in this order."""


@dataclass(frozen=True)
class ArenaResult:
    """The outcome for one memory."""

    memory: str
    size: int
    lower_bound: int
    naive: int
    n_buffers: int
    method: str
    stopped_by: str
    proven_lower: int

    @property
    def ratio(self) -> float:
        """Arena size over lower bound (1.0 = provably optimal)."""
        return self.size / self.lower_bound if self.lower_bound else 1.0

    @property
    def optimal(self) -> bool:
        """True when the size is proven minimal (equal to the bound or to a proven bound)."""
        return self.size <= self.proven_lower


@dataclass(frozen=True)
class ArenaPlan:
    """Offsets for every buffer plus per-memory arena sizes and bounds.

    ``offsets`` follows the problem's row order. ``timings`` (seconds) and per-arena
    ``stopped_by`` describe this run; everything else is a deterministic function of the input
    unless a time limit cut the search short (``stopped_by == "time"``).
    """

    offsets: Mapping[str, int]
    arenas: Mapping[str, ArenaResult]
    strategy: str
    timings: Mapping[str, float] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """Total bytes over all arenas (the arena size for single-memory problems)."""
        return sum(a.size for a in self.arenas.values())

    @property
    def lower_bound(self) -> int:
        """Sum of the arenas' lower bounds."""
        return sum(a.lower_bound for a in self.arenas.values())

    def to_json(self, *, include_timings: bool = False) -> str:
        """A JSON document (sorted keys) with offsets and per-arena results."""
        doc: dict[str, object] = {
            "strategy": self.strategy,
            "arenas": {
                m: {
                    "size": a.size,
                    "lower_bound": a.lower_bound,
                    "proven_lower_bound": a.proven_lower,
                    "naive": a.naive,
                    "buffers": a.n_buffers,
                    "method": a.method,
                }
                for m, a in self.arenas.items()
            },
            "offsets": dict(self.offsets),
        }
        if include_timings:
            doc["timings"] = dict(self.timings)
        return json.dumps(doc, sort_keys=True, indent=1) + "\n"


@dataclass
class _Outcome:
    offsets: np.ndarray
    method: str
    stopped_by: str
    proven_lower: int
    timings: dict[str, float] = field(default_factory=dict)


StrategyFn = Callable[[Arena, float | None, int | None], _Outcome]
STRATEGIES: dict[str, StrategyFn] = {}


def register_strategy(name: str) -> Callable[[StrategyFn], StrategyFn]:
    """Decorator adding a strategy ``(arena, deadline, node_limit) -> outcome``."""

    def deco(fn: StrategyFn) -> StrategyFn:
        STRATEGIES[name] = fn
        return fn

    return deco


def get_strategy(name: str) -> StrategyFn:
    """The strategy registered as ``name``; the error lists the valid names."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise UsageError(
            f"unknown memory strategy {name!r}; valid strategies: {', '.join(STRATEGIES)}"
        ) from None


def _peak(arena: Arena, offsets: np.ndarray) -> int:
    return int(np.where(arena.active, offsets + arena.size, 0).max()) if arena.n else 0


@register_strategy("tflite")
def _tflite(arena: Arena, deadline: float | None, node_limit: int | None) -> _Outcome:
    t0 = time.perf_counter()
    off = place(arena, get_order("tflite")(arena), "tflite")
    stop = "bound" if _peak(arena, off) <= arena.bound.lower_bound else "baseline"
    return _Outcome(
        off, "tflite", stop, arena.bound.lower_bound, {"tflite": time.perf_counter() - t0}
    )


@register_strategy("portfolio")
def _portfolio(arena: Arena, deadline: float | None, node_limit: int | None) -> _Outcome:
    best = _tflite(arena, deadline, node_limit)
    best_peak = _peak(arena, best.offsets)
    t0 = time.perf_counter()
    lb = arena.bound.lower_bound
    stop = "bound" if best_peak <= lb else "portfolio"
    for order, fit in PORTFOLIO:
        if best_peak <= lb:
            break
        if deadline is not None and time.perf_counter() >= deadline:
            stop = "time"
            break
        off = place(arena, get_order(order)(arena), fit)
        peak = _peak(arena, off)
        if peak < best_peak:
            best_peak, best.offsets, best.method = peak, off, f"{order}/{fit}"
            stop = "bound" if peak <= lb else stop
    best.stopped_by = stop
    best.timings["portfolio"] = time.perf_counter() - t0
    return best


@register_strategy("search")
def _search(arena: Arena, deadline: float | None, node_limit: int | None) -> _Outcome:
    best = _portfolio(arena, deadline, node_limit)
    if best.stopped_by == "bound":
        return best
    t0 = time.perf_counter()
    before = _peak(arena, best.offsets)
    off, stats = improve(arena, best.offsets, deadline=deadline, node_limit=node_limit)
    if _peak(arena, off) < before:
        best.offsets, best.method = off, "search"
    best.stopped_by, best.proven_lower = stats.stopped_by, stats.proven_lower
    best.timings["search"] = time.perf_counter() - t0
    return best


def plan_arena(
    problem: MemoryProblem,
    *,
    strategy: str = "search",
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    node_limit: int | None = None,
    capacity: int | Mapping[str, int] | None = None,
    lower_bounds: Mapping[str, int] | None = None,
) -> ArenaPlan:
    """Assign an offset to every buffer of ``problem``, one arena per memory.

    Parameters
    ----------
    problem
        The buffers (see :class:`~edgepart.memory.problem.MemoryProblem`).
    strategy
        ``"tflite"``, ``"portfolio"`` or ``"search"`` (default).
    time_limit
        Seconds for improving on the baseline (portfolio variants and search), shared by the
        arenas; ``None`` means no limit. The baseline itself always runs.
    node_limit
        Optional total search-node budget per arena: a machine-independent limit that makes the
        result reproducible even when the search does not finish.
    capacity
        Optional arena capacity (bytes), one for all memories or per memory name; a plan that
        does not fit raises :class:`ArenaOverflowError`.
    lower_bounds
        Optional bounds per memory proven by the caller from structure the live-bytes sweep
        does not see (e.g. explicit conflicts between concurrent partitions); each arena's
        bound is the larger of the two, and the strategies stop when they reach it.
    """
    fn = get_strategy(strategy)
    t_start = time.perf_counter()
    deadline = None if time_limit is None else t_start + time_limit
    offsets = np.zeros(len(problem), dtype=np.int64)
    results: dict[str, ArenaResult] = {}
    timings: dict[str, float] = {}
    for k, memory in enumerate(problem.memories):
        arena = prepare(problem, memory, (lower_bounds or {}).get(memory, 0))
        share = None
        if deadline is not None:
            left = len(problem.memories) - k
            share = time.perf_counter() + max(0.0, deadline - time.perf_counter()) / left
        out = fn(arena, share, node_limit)
        offsets[arena.rows] = out.offsets
        for key, val in out.timings.items():
            timings[key] = timings.get(key, 0.0) + val
        results[memory] = ArenaResult(
            memory=memory,
            size=_peak(arena, out.offsets),
            lower_bound=arena.bound.lower_bound,
            naive=arena.bound.naive,
            n_buffers=arena.n,
            method=out.method,
            stopped_by=out.stopped_by,
            proven_lower=max(out.proven_lower, arena.bound.lower_bound),
        )
    t_check = time.perf_counter()
    check_plan(problem, offsets, {m: r.size for m, r in results.items()})
    timings["check"] = time.perf_counter() - t_check
    timings["total"] = time.perf_counter() - t_start
    _check_capacity(results, capacity)
    for r in results.values():
        log.debug(
            "arena %s: %d B, bound %d B (x%.4f) by %s, stopped by %s",
            r.memory,
            r.size,
            r.lower_bound,
            r.ratio,
            r.method,
            r.stopped_by,
        )
    return ArenaPlan(
        offsets=dict(zip(problem.ids, offsets.tolist(), strict=True)),
        arenas=results,
        strategy=strategy,
        timings=timings,
    )


def _check_capacity(
    results: Mapping[str, ArenaResult], capacity: int | Mapping[str, int] | None
) -> None:
    if capacity is None:
        return
    for m, r in results.items():
        cap = capacity if isinstance(capacity, int) else capacity.get(m)
        if cap is None or r.size <= cap:
            continue
        if r.proven_lower > cap:
            raise ArenaOverflowError(
                f"memory {m!r} needs at least {r.proven_lower} bytes (proven lower bound) but "
                f"its capacity is {cap} bytes; move buffers to another memory or split the work"
            )
        raise ArenaOverflowError(
            f"memory {m!r}: the best plan found needs {r.size} bytes but the capacity is {cap} "
            f"bytes (lower bound {r.lower_bound}); raise the time limit or the capacity"
        )
