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
from abc import ABC, abstractmethod
from itertools import pairwise
from typing import Any, Generic, TypeVar

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

LIST_MAX = 128
"""Components up to this many buffers are searched with list state, larger ones with arrays
(same nodes, same result; per node the two cross near 130-150 buffers)."""


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
        slo_a = arena.s_lo[members] - s0
        shi_a = arena.s_hi[members] - s0
        # cuts[j]: buffers covering both section j and j + 1 (crossing the time between them).
        span = shi_a - slo_a >= 2
        cdiff = np.zeros(self.n_sections + 1, dtype=np.int64)
        np.add.at(cdiff, slo_a[span], 1)
        np.add.at(cdiff, shi_a[span] - 1, -1)
        self.base_cuts = np.cumsum(cdiff)[: max(self.n_sections - 1, 0)]
        # (buffer, section) incidence sorted by section, for per-section minima over buffers.
        cover = shi_a - slo_a
        pair_buf = np.repeat(np.arange(m), cover)
        first = np.repeat(slo_a - np.concatenate([[0], np.cumsum(cover)[:-1]]), cover)
        pair_sec = first + np.arange(int(cover.sum()))
        by_sec = np.argsort(pair_sec, kind="stable")
        self.pair_buf = pair_buf[by_sec]
        self.sec_start = np.searchsorted(pair_sec[by_sec], np.arange(self.n_sections))
        self.slo_a, self.shi_a = slo_a, shi_a
        # The list engine's lookups (see _Dfs).
        self.size_l: list[int] = self.size.tolist()
        self.align_l: list[int] = self.align.tolist()
        self.base_total_l: list[int] = self.base_total.tolist()
        self.base_cuts_l: list[int] = self.base_cuts.tolist()
        pos = np.full(arena.n, -1, dtype=np.int64)
        pos[members] = np.arange(m)
        ptr, nbr = arena.adjacency
        self.nbrs: list[np.ndarray] = []
        self.nbrs_l: list[list[int]] = []
        self.obstacles: list[list[tuple[int, int]]] = []
        for i in members.tolist():
            nb = nbr[ptr[i] : ptr[i + 1]]
            loc = pos[nb]
            self.nbrs.append(loc[loc >= 0])
            self.nbrs_l.append(self.nbrs[-1].tolist())
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
        self.minoff0_l = [self.bump(k, 0) if o else 0 for k, o in enumerate(self.obstacles)]
        self.minoff0 = np.array(self.minoff0_l, dtype=np.int64)
        # Buffers covering each section, and the cap the unplaced floors need before anything
        # is placed: max over sections of unplaced bytes + the lowest viable offset there.
        self.cover: list[list[int]] = [[] for _ in range(self.n_sections)]
        for k in range(m):
            for sec in range(self.slo[k], self.shi[k]):
                self.cover[sec].append(k)
        self.root_need = max(
            (min(self.minoff0_l[k] for k in cov) + t if cov else 0)
            for cov, t in zip(self.cover, self.base_total_l, strict=True)
        )
        # Below this cap the search's root has no candidate (a buffer's lowest top, a
        # section's bytes or its floor test is above it): infeasible without a node.
        self.min_cap = max(self.root_need, int((self.minoff0 + self.size).max()))
        self.has_obstacle = np.array([bool(o) for o in self.obstacles], dtype=bool)
        self.nbr_has_obstacle = [bool(self.has_obstacle[nb].any()) for nb in self.nbrs]
        # Buffers with equal lifetime, size and alignment are interchangeable.
        sig = np.stack([slo_a, shi_a, self.size, self.align], axis=1)
        self.kind = np.unique(sig, axis=0, return_inverse=True)[1].reshape(-1)
        self.intervals_only = self.decompose and not any(self.obstacles)
        width = arena.upper[members] - arena.lower[members]
        self.keys = {"W": width, "A": width * self.size, "T": arena.pressure[members]}
        self._preorders: dict[str, np.ndarray] = {}

    def bump(self, k: int, m: int) -> int:
        """Lowest aligned offset ``>= m`` clear of buffer ``k``'s fixed-offset obstacles."""
        s, a = self.size_l[k], self.align_l[k]
        for fo, fe in self.obstacles[k]:
            if fe <= m:
                continue
            if fo >= m + s:
                break
            m = -(-fe // a) * a
        return m

    def preorder(self, heuristic: str) -> np.ndarray:
        """Rank of every buffer under a static preorder (keys descending, ties by index).

        Cached: the search asks for the same few preorders in every round of every probe
        (read-only; the engines never write to it)."""
        rank = self._preorders.get(heuristic)
        if rank is None:
            keys = [-self.keys[c] for c in heuristic]
            order = np.lexsort((np.arange(self.m), *reversed(keys)))
            rank = np.empty(self.m, dtype=np.int64)
            rank[order] = np.arange(self.m)
            self._preorders[heuristic] = rank
        return rank


class _Stop(Exception):
    """Unwinds the (possibly nested) search when a limit is hit."""

    def __init__(self, status: str) -> None:
        self.status = status


Members = TypeVar("Members", list[int], np.ndarray)
Undo = TypeVar("Undo")


class _Dfs(ABC, Generic[Members, Undo]):
    """Decision search for one component under ``cap``; state is restored after every call.

    The driver; :class:`_ListDfs` and :class:`_ArrayDfs` hold the state and implement the
    node operations, identically (same nodes in the same order, same solution).
    """

    def __init__(self, c: Component, cap: int, pre: np.ndarray, limit: int, clock: Clock) -> None:
        self.c, self.cap, self.limit, self.clock = c, cap, limit, clock
        self.pre_l: list[int] = pre.tolist()
        self.used = 0

    def run(self) -> tuple[str, np.ndarray | None]:
        if self.clock.expired():
            return TIMEOUT, None
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 4 * self.c.m + 1000))
        try:
            ok = self._solve(self._everyone(), 0, self.c.n_sections)
        except _Stop as stop:
            return stop.status, None
        finally:
            sys.setrecursionlimit(old)
        return (FOUND, self._solution()) if ok else (INFEASIBLE, None)

    @abstractmethod
    def _everyone(self) -> Members:
        """Every member of the component, in the engine's own form."""

    @abstractmethod
    def _solution(self) -> np.ndarray:
        """The offsets found, per member."""

    @abstractmethod
    def _offset(self, b: int) -> int:
        """The lowest viable offset of buffer ``b`` now."""

    @abstractmethod
    def _candidates(
        self, members: Members, s0: int, s1: int, last_off: int, last_pre: int
    ) -> list[int] | None:
        """Next buffers to try, or ``None`` when every member is placed (solved)."""

    @abstractmethod
    def _apply(self, b: int, o: int) -> tuple[Undo, bool]:
        """Place ``b`` at ``o``: what undoes it, and whether a time cut emptied."""

    @abstractmethod
    def _undo(self, u: Undo) -> None:
        """Take back the placement ``u`` came from."""

    @abstractmethod
    def _split(self, members: Members) -> list[tuple[Members, int, int]]:
        """Unplaced ``members`` grouped by the time cuts no unplaced buffer crosses any more."""

    def _count_node(self) -> None:
        self.used += 1
        self.clock.nodes += 1
        if self.used >= self.limit or self.clock.out_of_nodes():
            raise _Stop(ABORTED)
        if not self.used & 63 and self.clock.expired():
            raise _Stop(TIMEOUT)

    def _solve(self, members: Members, s0: int, s1: int) -> bool:
        """Canonical DFS over ``members`` (sections ``[s0, s1)``); True when all are placed."""
        root = self._candidates(members, s0, s1, -1, -1)
        if root is None:
            return True
        # Frames: [candidates, next index, undo of the candidate placed there or None].
        stack: list[list[Any]] = [[root, 0, None]]
        while stack:
            frame = stack[-1]
            if frame[2] is not None:
                self._undo(frame[2])
                frame[2] = None
            cands: list[int] = frame[0]
            k: int = frame[1]
            if k >= len(cands):
                stack.pop()
                continue
            frame[1] = k + 1
            b = cands[k]
            o = self._offset(b)
            u, split = self._apply(b, o)
            frame[2] = u
            self._count_node()
            if split:
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

    def _unwind(self, stack: list[list[Any]]) -> None:
        for frame in reversed(stack):
            if frame[2] is not None:
                self._undo(frame[2])


_ListUndo = tuple[int, list[int], list[tuple[int, int]]]  # buffer, floors, (neighbour, minoff)
_ArrayUndo = tuple[int, np.ndarray, np.ndarray, np.ndarray]  # buffer, floors, neighbours, minoffs


class _ListDfs(_Dfs[list[int], _ListUndo]):
    """State in plain Python lists: components are mostly small and most runs expand a handful
    of nodes (bisection probes settled at once), where a NumPy call on a 10-element array costs
    more than the loop it replaces. Per node (2-core Zen 3, random and cut-rectangle
    components): 45-130 us against 125-200 us with arrays up to 100 buffers; the two cross
    near 150, and at 1,000 lists are 1.3-9x slower (see :data:`LIST_MAX`)."""

    def __init__(self, c: Component, cap: int, pre: np.ndarray, limit: int, clock: Clock) -> None:
        super().__init__(c, cap, pre, limit, clock)
        self.minoff = c.minoff0_l.copy()
        self.placed = [False] * c.m
        self.solution = [-1] * c.m
        self.floor = [0] * c.n_sections
        self.total = c.base_total_l.copy()
        self.cuts = c.base_cuts_l.copy()

    def _everyone(self) -> list[int]:
        return list(range(self.c.m))

    def _solution(self) -> np.ndarray:
        return np.array(self.solution, dtype=np.int64)

    def _offset(self, b: int) -> int:
        return self.minoff[b]

    def _candidates(
        self, members: list[int], s0: int, s1: int, last_off: int, last_pre: int
    ) -> list[int] | None:
        """Next buffers to try, or ``None`` when every member is placed (solved)."""
        placed, minoff, pre = self.placed, self.minoff, self.pre_l
        size, align = self.c.size_l, self.c.align_l
        cap = self.cap
        unp = [b for b in members if not placed[b]]
        if not unp:
            return None
        # Canonical order: what comes next sits at >= last_off, and at == last_off only with a
        # higher preorder rank; so that is where each unplaced member can go at the earliest.
        # One that cannot go low enough to fit under the cap ends the node.
        eff = []
        if last_off >= 0:
            for b in unp:
                a = align[b]
                e = -(-(last_off + (pre[b] < last_pre)) // a) * a
                mo = minoff[b]
                if e < mo:
                    e = mo
                if e + size[b] > cap:
                    return []
                eff.append(e)
        else:
            for b in unp:
                e = minoff[b]
                if e + size[b] > cap:
                    return []
                eff.append(e)
        # Section inference. Every section satisfies floor + unplaced <= cap (checked when its
        # floor was set) and a candidate's own sections have floors <= its offset, so placing at
        # ``o`` keeps this subproblem's sections feasible iff o + max(unplaced) <= cap.
        room = cap - max(self.total[s0:s1])
        if room < 0:
            return []
        if last_off < 0:
            # Nothing placed yet: the floors are a property of the component.
            ok = cap >= self.c.root_need if not self.used else self._floors_ok(0, -1, 0, -1, -1)
        else:
            # Sections with at most cap - max(eff) unplaced bytes cannot fail the floor test.
            over = cap - max(eff)
            ok = over >= cap - room or self._floors_ok(s0, s1, over, last_off, last_pre)
        if not ok:
            return []
        top = min([minoff[b] + size[b] for b in unp])
        cand = [
            b
            for b, e in zip(unp, eff, strict=True)
            if (mo := minoff[b]) < top and mo <= room and e == mo
        ]
        if len(cand) > 1:
            cand.sort(key=lambda b: (minoff[b], pre[b]))
        return cand

    def _floors_ok(self, s0: int, s1: int, over: int, last_off: int, last_pre: int) -> bool:
        """Unallocated floor: in each section the lowest remaining buffer cannot go below its
        earliest offset, so floor = max(floor, that) and floor + unplaced bytes must fit.

        Every floor already fits (floor + unplaced <= cap), so a section fits iff some unplaced
        buffer covering it can go at or below cap - unplaced: one found ends its scan. Only
        sections ``[s0, s1)`` with more than ``over`` unplaced bytes are scanned: below the root
        of a (sub)search only this subproblem's sections change (its unplaced members cover no
        other section, and state is restored between siblings). At a root (``s1 < 0``) every
        section is, as the last placement may have left a sibling subproblem's section
        infeasible, and the earliest offsets are the lowest viable ones."""
        c, cap, total = self.c, self.cap, self.total
        placed, minoff, align, pre = self.placed, self.minoff, c.align_l, self.pre_l
        if s1 < 0:
            s0, s1, over = 0, c.n_sections, 0
        for s in range(s0, s1):
            t = total[s]
            if t <= over:
                continue
            need = cap - t
            for b in c.cover[s]:
                if placed[b] or minoff[b] > need:
                    continue
                if last_off < 0:
                    break
                a = align[b]
                if -(-(last_off + (pre[b] < last_pre)) // a) * a <= need:
                    break
            else:
                return False
        return True

    def _apply(self, b: int, o: int) -> tuple[_ListUndo, bool]:
        c = self.c
        sz = c.size_l[b]
        h = o + sz
        self.placed[b] = True
        self.solution[b] = o
        s0, s1 = c.slo[b], c.shi[b]
        floor, total, cuts = self.floor, self.total, self.cuts
        saved_floor = floor[s0:s1]
        floor[s0:s1] = [h] * (s1 - s0)
        for s in range(s0, s1):
            total[s] -= sz
        split = False
        for s in range(s0, s1 - 1):
            cuts[s] -= 1
            if not cuts[s]:
                split = True
        split = split and c.decompose
        # Raise the lowest offsets of the unplaced neighbours (a placed buffer's is only read
        # again after it is unplaced, by then with this placement undone).
        minoff, placed, align = self.minoff, self.placed, c.align_l
        changed: list[tuple[int, int]] = []
        for k in c.nbrs_l[b]:
            if placed[k]:
                continue
            a = align[k]
            v = -(-h // a) * a
            old = minoff[k]
            if v > old:
                if c.obstacles[k]:
                    v = c.bump(k, v)
                minoff[k] = v
                changed.append((k, old))
        return (b, saved_floor, changed), split

    def _undo(self, u: _ListUndo) -> None:
        b, saved_floor, changed = u
        c = self.c
        minoff = self.minoff
        for k, old in changed:
            minoff[k] = old
        s0, s1 = c.slo[b], c.shi[b]
        self.floor[s0:s1] = saved_floor
        sz = c.size_l[b]
        total, cuts = self.total, self.cuts
        for s in range(s0, s1):
            total[s] += sz
        for s in range(s0, s1 - 1):
            cuts[s] += 1
        self.placed[b] = False

    def _split(self, members: list[int]) -> list[tuple[list[int], int, int]]:
        """Unplaced ``members`` grouped by the time cuts no unplaced buffer crosses any more."""
        slo, shi = self.c.slo, self.c.shi
        unp = sorted((slo[b], b) for b in members if not self.placed[b])
        groups: list[tuple[list[int], int, int]] = []
        for lo, b in unp:
            if groups and lo < groups[-1][2]:
                g = groups[-1]
                g[0].append(b)
                if shi[b] > g[2]:
                    groups[-1] = (g[0], g[1], shi[b])
            else:
                groups.append(([b], lo, shi[b]))
        return groups


class _ArrayDfs(_Dfs[np.ndarray, _ArrayUndo]):
    """State in NumPy arrays: per node costs little more for 1,000 buffers than for 100."""

    def __init__(self, c: Component, cap: int, pre: np.ndarray, limit: int, clock: Clock) -> None:
        super().__init__(c, cap, pre, limit, clock)
        self.pre = pre
        self.minoff = c.minoff0.copy()
        self.placed = np.zeros(c.m, dtype=bool)
        self.solution = np.full(c.m, -1, dtype=np.int64)
        self.floor = np.zeros(c.n_sections, dtype=np.int64)
        self.total = c.base_total.copy()
        self.cuts = c.base_cuts.copy()

    def _everyone(self) -> np.ndarray:
        return np.arange(self.c.m)

    def _solution(self) -> np.ndarray:
        return self.solution

    def _offset(self, b: int) -> int:
        return int(self.minoff[b])

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

    def _apply(self, b: int, o: int) -> tuple[_ArrayUndo, bool]:
        c = self.c
        h = o + c.size_l[b]
        self.placed[b] = True
        self.solution[b] = o
        s0, s1 = c.slo[b], c.shi[b]
        saved_floor = self.floor[s0:s1].copy()
        self.floor[s0:s1] = h
        self.total[s0:s1] -= c.size_l[b]
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
        return (b, saved_floor, nb, old), split

    def _undo(self, u: _ArrayUndo) -> None:
        b, saved_floor, nb, old = u
        c = self.c
        self.minoff[nb] = old
        s0, s1 = c.slo[b], c.shi[b]
        self.floor[s0:s1] = saved_floor
        self.total[s0:s1] += c.size_l[b]
        self.cuts[s0 : s1 - 1] += 1
        self.placed[b] = False

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
    if cap < c.min_cap and not clock.expired():
        # What the search would answer at its root (three in four of the bisection's runs on
        # random instances), without setting it up.
        return INFEASIBLE, None
    engine = _ListDfs if c.m <= LIST_MAX else _ArrayDfs
    return engine(c, cap, pre, limit, clock).run()
