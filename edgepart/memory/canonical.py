"""Canonical-solution depth-first search under a capacity (after Moffitt's MiniMalloc).

The decision problem "do all buffers of a component fit under ``cap``?" is answered by a DFS
that only builds *canonical* solutions (MiniMalloc, ASPLOS '23):

- every buffer is placed at its lowest viable offset ``minoff`` (the aligned maximum end of the
  placed buffers it conflicts with, pushed past fixed-offset obstacles);
- buffers are committed in non-decreasing ``(offset, preorder rank)`` order, which removes
  permutation redundancy; so an unplaced buffer can go no lower than the last offset (and not
  at it when its rank is lower): its *earliest* offset;
- *dominance*: a candidate at or above the lowest possible top of some unplaced buffer would
  leave a gap that buffer could always take, so it is skipped;
- *section inference*: in every section (elementary time interval) the unplaced bytes must fit
  between ``max(floor, lowest earliest offset of its unplaced buffers)`` and ``cap``;
- *dynamic decomposition*: when no unplaced buffer crosses some time any more, the two sides
  are solved independently.

Components are groups of buffers chained by conflicts; they never interact.
"""

from __future__ import annotations

import sys
import time
from itertools import pairwise

import numpy as np

from edgepart.memory._arena import Arena

__all__ = [
    "ABORTED",
    "FOUND",
    "INFEASIBLE",
    "TIMEOUT",
    "Clock",
    "Component",
    "canonical_search",
    "components",
]

FOUND, INFEASIBLE, ABORTED, TIMEOUT = "found", "infeasible", "aborted", "timeout"


class Clock:
    """Deadline and global node budget shared by all probes of one search."""

    def __init__(self, deadline: float | None, node_limit: int | None) -> None:
        self.deadline = deadline
        self.node_limit = node_limit
        self.nodes = 0

    def expired(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def out_of_nodes(self) -> bool:
        return self.node_limit is not None and self.nodes >= self.node_limit


class Component:
    """A set of mutually reachable (through conflicts) free buffers, re-indexed ``0..m-1``."""

    def __init__(self, arena: Arena, members: np.ndarray) -> None:
        assert arena.adjacency is not None
        self.members = members
        m = self.m = len(members)
        self.size = arena.size[members]
        self.align = arena.align[members]
        s0 = int(arena.s_lo[members].min())
        self.n_sections = int(arena.s_hi[members].max()) - s0
        self.slo = (arena.s_lo[members] - s0).tolist()
        self.shi = (arena.s_hi[members] - s0).tolist()
        diff = np.zeros(self.n_sections + 1, dtype=np.int64)
        np.add.at(diff, arena.s_lo[members] - s0, self.size)
        np.add.at(diff, arena.s_hi[members] - s0, -self.size)
        self.base_total = np.cumsum(diff)[:-1]
        self.slo_a = arena.s_lo[members] - s0
        self.shi_a = arena.s_hi[members] - s0
        # cuts[j]: buffers covering both section j and j + 1 (crossing the time between them).
        span = self.shi_a - self.slo_a >= 2
        cdiff = np.zeros(self.n_sections + 1, dtype=np.int64)
        np.add.at(cdiff, self.slo_a[span], 1)
        np.add.at(cdiff, self.shi_a[span] - 1, -1)
        self.base_cuts = np.cumsum(cdiff)[: max(self.n_sections - 1, 0)]
        # (buffer, section) incidence sorted by section, for per-section minima over buffers.
        cover = self.shi_a - self.slo_a
        pair_buf = np.repeat(np.arange(m), cover)
        first = np.repeat(self.slo_a - np.concatenate([[0], np.cumsum(cover)[:-1]]), cover)
        pair_sec = first + np.arange(int(cover.sum()))
        by_sec = np.argsort(pair_sec, kind="stable")
        self.pair_buf = pair_buf[by_sec]
        self.sec_start = np.searchsorted(pair_sec[by_sec], np.arange(self.n_sections))
        pos = np.full(arena.n, -1, dtype=np.int64)
        pos[members] = np.arange(m)
        ptr, nbr = arena.adjacency
        self.nbrs: list[np.ndarray] = []
        self.obstacles: list[list[tuple[int, int]]] = []
        for i in members.tolist():
            nb = nbr[ptr[i] : ptr[i + 1]]
            loc = pos[nb]
            self.nbrs.append(loc[loc >= 0])
            fx = nb[arena.fixed[nb] >= 0]
            f_off = arena.fixed[fx]
            ends = (f_off + arena.size[fx]).tolist()
            self.obstacles.append(sorted(zip(f_off.tolist(), ends, strict=True)))
        # Explicit extra conflicts can join buffers across an empty time cut, so temporal
        # decomposition is only sound without them.
        inside = np.zeros(arena.n, dtype=bool)
        inside[members] = True
        ex = arena.extra
        self.decompose = not bool((inside[ex[:, 0]] & inside[ex[:, 1]]).any()) if len(ex) else True
        self.has_obstacle = np.array([bool(o) for o in self.obstacles], dtype=bool)
        self.nbr_has_obstacle = [bool(self.has_obstacle[nb].any()) for nb in self.nbrs]
        self.minoff0 = np.zeros(m, dtype=np.int64)
        for k in np.flatnonzero(self.has_obstacle).tolist():
            self.minoff0[k] = self.bump(k, 0)
        # Buffers with equal lifetime, size and alignment are interchangeable.
        sig = np.stack([self.slo_a, self.shi_a, self.size, self.align], axis=1)
        self.kind = np.unique(sig, axis=0, return_inverse=True)[1].reshape(-1)
        self.intervals_only = self.decompose and not bool(self.has_obstacle.any())
        width = arena.upper[members] - arena.lower[members]
        self.keys = {"W": width, "A": width * self.size, "T": arena.pressure[members]}

    def bump(self, k: int, m: int) -> int:
        """Lowest aligned offset ``>= m`` clear of buffer ``k``'s fixed-offset obstacles."""
        s, a = int(self.size[k]), int(self.align[k])
        for fo, fe in self.obstacles[k]:
            if fe <= m:
                continue
            if fo >= m + s:
                break
            m = -(-fe // a) * a
        return m

    def preorder(self, heuristic: str) -> np.ndarray:
        """Rank of every buffer under a static preorder (keys descending, ties by index)."""
        keys = [-self.keys[c] for c in heuristic]
        order = np.lexsort((np.arange(self.m), *reversed(keys)))
        rank = np.empty(self.m, dtype=np.int64)
        rank[order] = np.arange(self.m)
        return rank


class _Stop(Exception):
    """Unwinds the (possibly nested) search when a limit is hit."""

    def __init__(self, status: str) -> None:
        self.status = status


class _Dfs:
    """Decision search for one component under ``cap``; state is restored after every call."""

    def __init__(self, c: Component, cap: int, pre: np.ndarray, limit: int, clock: Clock) -> None:
        self.c, self.cap, self.pre, self.limit, self.clock = c, cap, pre, limit, clock
        self.size_l, self.pre_l = c.size.tolist(), pre.tolist()
        self.minoff = c.minoff0.copy()
        self.placed = np.zeros(c.m, dtype=bool)
        self.solution = np.full(c.m, -1, dtype=np.int64)
        self.floor = np.zeros(c.n_sections, dtype=np.int64)
        self.total = c.base_total.copy()
        self.cuts = c.base_cuts.copy()
        self.used = 0

    def run(self) -> tuple[str, np.ndarray | None]:
        if self.clock.expired():
            return TIMEOUT, None
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 4 * self.c.m + 1000))
        try:
            ok = self._solve(np.arange(self.c.m), 0, self.c.n_sections)
        except _Stop as stop:
            return stop.status, None
        finally:
            sys.setrecursionlimit(old)
        return (FOUND, self.solution) if ok else (INFEASIBLE, None)

    def _candidates(
        self, members: np.ndarray, s0: int, s1: int, last_off: int, last_pre: int
    ) -> list[int] | None:
        """Next buffers to try, or ``None`` when every member is placed (solved)."""
        unp = members[~self.placed[members]]
        if not len(unp):
            return None
        mo, sz, pr = self.minoff[unp], self.c.size[unp], self.pre[unp]
        # Canonical order: what comes next sits at >= last_off, and at == last_off only with a
        # higher preorder rank; so that is where each unplaced member can go at the earliest.
        eff = mo
        if last_off >= 0:
            al = self.c.align[unp]
            need = last_off + (pr < last_pre)
            eff = np.maximum(mo, -(-need // al) * al)
        if int((eff + sz).max()) > self.cap:
            return []
        # Section inference. Every section satisfies floor + unplaced <= cap (checked when its
        # floor was set) and a candidate's own sections have floors <= its offset, so placing at
        # ``o`` keeps this subproblem's sections feasible iff o + max(unplaced) <= cap.
        room = self.cap - int(self.total[s0:s1].max())
        if room < 0 or not self._floors_ok(unp, eff):
            return []
        top = int((mo + sz).min())
        cand = unp[(mo < top) & (mo <= room) & (eff == mo)]
        if len(cand) > 1:
            cand = cand[np.lexsort((self.pre[cand], self.minoff[cand]))]
        return cand.tolist()  # type: ignore[no-any-return]

    def _floors_ok(self, unp: np.ndarray, eff: np.ndarray) -> bool:
        """Unallocated floor: in each section the lowest remaining buffer cannot go below its
        earliest offset, so floor = max(floor, that) and floor + unplaced bytes must fit."""
        c = self.c
        earliest = self.minoff.copy()
        earliest[unp] = eff
        vals = np.where(self.placed[c.pair_buf], self.cap, earliest[c.pair_buf])
        low = np.minimum.reduceat(vals, c.sec_start)
        over = (np.maximum(low, self.floor) + self.total > self.cap) & (self.total > 0)
        return not bool(over.any())

    def _apply(self, b: int, o: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, bool]:
        c = self.c
        h = o + self.size_l[b]
        self.placed[b] = True
        self.solution[b] = o
        s0, s1 = c.slo[b], c.shi[b]
        saved_floor = self.floor[s0:s1].copy()
        self.floor[s0:s1] = h
        self.total[s0:s1] -= self.size_l[b]
        cut = self.cuts[s0 : s1 - 1]
        cut -= 1
        split = c.decompose and bool(len(cut)) and not cut.all()
        nb = c.nbrs[b]
        old = self.minoff[nb]
        a = c.align[nb]
        self.minoff[nb] = np.maximum(old, -(-h // a) * a)
        if c.nbr_has_obstacle[b]:
            for k in nb[c.has_obstacle[nb] & (self.minoff[nb] != old)].tolist():
                self.minoff[k] = c.bump(k, int(self.minoff[k]))
        return b, saved_floor, nb, old, split

    def _undo(self, u: tuple[int, np.ndarray, np.ndarray, np.ndarray, bool]) -> None:
        b, saved_floor, nb, old, _ = u
        c = self.c
        self.minoff[nb] = old
        s0, s1 = c.slo[b], c.shi[b]
        self.floor[s0:s1] = saved_floor
        self.total[s0:s1] += self.size_l[b]
        self.cuts[s0 : s1 - 1] += 1
        self.placed[b] = False

    def _count_node(self) -> None:
        self.used += 1
        self.clock.nodes += 1
        if self.used >= self.limit or self.clock.out_of_nodes():
            raise _Stop(ABORTED)
        if not self.used & 63 and self.clock.expired():
            raise _Stop(TIMEOUT)

    def _split(self, members: np.ndarray) -> list[tuple[np.ndarray, int, int]]:
        """Unplaced ``members`` grouped by the time cuts no unplaced buffer crosses any more."""
        c = self.c
        unp = members[~self.placed[members]]
        if not len(unp):
            return []
        lo, hi = c.slo_a[unp], c.shi_a[unp]
        order = np.lexsort((unp, lo))
        unp, lo, hi = unp[order], lo[order], hi[order]
        reach = np.maximum.accumulate(hi)
        start = np.concatenate([[True], lo[1:] >= reach[:-1]])
        bounds = [*np.flatnonzero(start).tolist(), len(unp)]
        return [(unp[i:j], int(lo[i]), int(reach[j - 1])) for i, j in pairwise(bounds)]

    def _solve(self, members: np.ndarray, s0: int, s1: int) -> bool:
        """Canonical DFS over ``members`` (sections ``[s0, s1)``); True when all are placed."""
        root = self._candidates(members, s0, s1, -1, -1)
        if root is None:
            return True
        stack: list[list[object]] = [[root, 0, None]]
        while stack:
            frame = stack[-1]
            if frame[2] is not None:
                self._undo(frame[2])  # type: ignore[arg-type]
                frame[2] = None
            cands: list[int] = frame[0]  # type: ignore[assignment]
            k: int = frame[1]  # type: ignore[assignment]
            if k >= len(cands):
                stack.pop()
                continue
            frame[1] = k + 1
            b = cands[k]
            o = int(self.minoff[b])
            u = self._apply(b, o)
            frame[2] = u
            self._count_node()
            if u[4]:
                # A cut emptied: the remaining buffers form independent subproblems.
                if all(self._solve(g, g0, g1) for g, g0, g1 in self._split(members)):
                    self._unwind(stack)
                    return True
                continue
            child = self._candidates(members, s0, s1, o, self.pre_l[b])
            if child is None:
                self._unwind(stack)
                return True
            if child:
                stack.append([child, 0, None])
        return False

    def _unwind(self, stack: list[list[object]]) -> None:
        for frame in reversed(stack):
            if frame[2] is not None:
                self._undo(frame[2])  # type: ignore[arg-type]


def components(arena: Arena) -> list[np.ndarray]:
    """Groups of free (non-fixed, non-empty) buffers that never conflict across groups."""
    assert arena.adjacency is not None
    free = np.flatnonzero(arena.active & (arena.fixed < 0))
    if not len(free):
        return []
    parent = np.arange(arena.n)
    # Interval chains: sorted by start, a new group begins where no earlier lifetime reaches.
    order = free[np.lexsort((free, arena.lower[free]))]
    reach = np.maximum.accumulate(arena.upper[order])
    starts = np.concatenate([[True], arena.lower[order][1:] >= reach[:-1]])
    group = np.cumsum(starts) - 1
    parent[order] = order[np.flatnonzero(starts)][group]
    # Extra conflicts can join interval groups: union-find over the (few) extra pairs.
    for a, b in arena.extra.tolist():
        if arena.fixed[a] >= 0 or arena.fixed[b] >= 0 or not (arena.active[a] and arena.active[b]):
            continue
        ra, rb = _find(parent, a), _find(parent, b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    roots = np.array([_find(parent, i) for i in free.tolist()])
    return [free[roots == r] for r in np.unique(roots).tolist()]


def _find(parent: np.ndarray, i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = int(parent[i])
    return i


def canonical_search(
    c: Component, cap: int, pre: np.ndarray, limit: int, clock: Clock
) -> tuple[str, np.ndarray | None]:
    """Decide whether component ``c`` fits under ``cap`` with at most ``limit`` nodes."""
    return _Dfs(c, cap, pre, limit, clock).run()
