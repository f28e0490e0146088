"""Exact offset search under a time or node budget: the optimisation driver.

:func:`improve` lowers the peak of a plan by asking decision questions "does every component
fit under ``cap``?" (components are groups of buffers chained by conflicts and never
interact). It first asks for ``cap`` = the lower bound and bisects between the highest
capacity proven infeasible and the best peak found, so it is anytime: it only ever replaces a
component's offsets by a solution with a lower peak and is never worse than its start.

Each question runs two complete engines in rounds of growing effort: the canonical DFS
(:mod:`.canonical`, MiniMalloc's three preorders ``WAT``, ``TAW``, ``TWA``) and the skyline
search (:mod:`.skyline`, for components whose conflicts are lifetime overlaps), with node
limits that double each round, then ``2**round`` seeded random preorders with a small limit.
Backtracking search times are heavy-tailed: a preorder that thrashes for 10^5 nodes often has
a neighbour that dives straight to a solution, so short randomized restarts complement the
long runs. Exhausting any complete engine proves the capacity infeasible. Everything is
seeded, so a run stopped by ``node_limit`` (not by time) is reproducible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from edgepart.memory._arena import Arena
from edgepart.memory.canonical import (
    ABORTED,
    FOUND,
    INFEASIBLE,
    TIMEOUT,
    Clock,
    Component,
    canonical_search,
    components,
)
from edgepart.memory.skyline import skyline_search

__all__ = ["SearchStats", "improve"]

HEURISTICS = ("WAT", "TAW", "TWA")
Engine = Callable[[Component, int, np.ndarray, int, Clock], tuple[str, "np.ndarray | None"]]


@dataclass
class SearchStats:
    """What the search did: nodes expanded, probes run, why it stopped."""

    nodes: int = 0
    probes: list[tuple[int, str]] = field(default_factory=list)
    stopped_by: str = "not-run"
    proven_lower: int = 0


def improve(
    arena: Arena,
    offsets: np.ndarray,
    *,
    deadline: float | None,
    node_limit: int | None = None,
) -> tuple[np.ndarray, SearchStats]:
    """Lower the peak of ``offsets`` (local) for ``arena`` by exact search, anytime.

    Returns new offsets (never a higher peak) and :class:`SearchStats`; ``stopped_by`` is
    ``"bound"`` (peak = lower bound), ``"proven"`` (peak = proven optimum above the bound),
    ``"time"``, ``"nodes"`` or ``"no-adjacency"`` (instance too dense to search).
    """
    stats = SearchStats(proven_lower=arena.bound.lower_bound)
    offsets = offsets.copy()
    tops = np.where(arena.active, offsets + arena.size, 0)
    lo, hi = arena.bound.lower_bound, int(tops.max()) if arena.n else 0
    if lo >= hi:
        stats.stopped_by = "bound"
        return offsets, stats
    if arena.adjacency is None:
        stats.stopped_by = "no-adjacency"
        return offsets, stats
    clock = Clock(deadline, node_limit)
    if clock.expired():
        stats.stopped_by = "time"
        return offsets, stats
    groups = components(arena)
    comp_peak = [int(tops[g].max()) for g in groups]
    fixed = arena.active & (arena.fixed >= 0)
    fixed_top = int(tops[fixed].max()) if fixed.any() else 0
    built: dict[int, Component] = {}
    tried: dict[tuple[int, int], int] = {}  # (component, cap) -> last round attempted
    base = max(256, 2 * max(len(g) for g in groups))
    rnd = 0

    def probe(cap: int) -> str:
        """Every component must fit under ``cap``; stops at the first that does not."""
        for ci, g in enumerate(groups):
            if comp_peak[ci] <= cap:
                continue
            if tried.get((ci, cap), -1) >= rnd:
                return ABORTED  # this round's attempts already failed at this capacity
            tried[(ci, cap)] = rnd
            if ci not in built:
                built[ci] = Component(arena, g)
            c = built[ci]
            st, sol = _attempts(c, cap, rnd, base, clock)
            if st != FOUND:
                return st
            assert sol is not None
            offsets[c.members] = sol
            comp_peak[ci] = int((sol + c.size).max())
        return FOUND

    while lo < hi:
        for cap in [lo] if hi - lo <= 1 else [lo, (lo + hi) // 2]:
            status = probe(cap)
            stats.probes.append((cap, status))
            if status == FOUND:
                hi = max([fixed_top, *comp_peak])
            elif status == INFEASIBLE:
                lo = stats.proven_lower = cap + 1
            if status == TIMEOUT or clock.expired():
                stats.stopped_by, stats.nodes = "time", clock.nodes
                return offsets, stats
            if clock.out_of_nodes():
                stats.stopped_by, stats.nodes = "nodes", clock.nodes
                return offsets, stats
            if status in (FOUND, INFEASIBLE):
                break  # re-derive the probe capacities from the new bracket
        else:
            rnd += 1
    stats.nodes = clock.nodes
    stats.stopped_by = "bound" if hi <= arena.bound.lower_bound else "proven"
    return offsets, stats


def _attempts(
    c: Component, cap: int, rnd: int, base: int, clock: Clock
) -> tuple[str, np.ndarray | None]:
    """Round ``rnd`` of attempts on one component (see the module docstring)."""
    engines: list[Engine] = [canonical_search]
    if c.intervals_only:
        engines.insert(0, skyline_search)
    for engine, pre, limit in _runs(c, cap, rnd, base, engines):
        st, sol = engine(c, cap, pre, limit, clock)
        if st != ABORTED or clock.out_of_nodes():
            return st, sol
    return ABORTED, None


def _runs(
    c: Component, cap: int, rnd: int, base: int, engines: list[Engine]
) -> Iterator[tuple[Engine, np.ndarray, int]]:
    """The runs of one round, in order, made only when reached: most rounds end with the first
    run (its engine finds a solution or proves the capacity infeasible in a few nodes), and the
    seeded generator alone cost 32 us, the three preorders 45 us, per round."""
    for h in HEURISTICS:
        for e in engines:
            yield e, c.preorder(h), base << rnd
    rng = np.random.default_rng([rnd, c.m, cap])
    for _ in range(1 << rnd):
        for e in engines:
            yield e, rng.permutation(c.m), base
