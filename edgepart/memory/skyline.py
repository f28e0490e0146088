"""Skyline search: branch on which buffer covers the lowest, leftmost open point.

A second complete decision procedure next to the canonical DFS of :mod:`.canonical`, in the
style of exact perfect-packing solvers. The state is a *skyline*: a floor per section (time
interval) below which nothing more can go. At each node take the open section ``s`` (one that
unplaced buffers still cover) with the lowest floor ``f``, leftmost on ties, and branch:

1. place a buffer at offset ``f`` that covers ``s``: it must start at ``s`` (sections to the
   left are higher, or ``s`` would not be leftmost), be aligned at ``f`` and have floor ``f``
   over all its sections;
2. or declare the point ``(s, f)`` wasted and raise the floor of ``s`` to ``r``, the smallest
   offset any buffer covering ``s`` can still take: ``align(max floor of its sections)`` when
   that is above ``f``, else ``align(f)`` if ``f`` is misaligned for it, else it must rest on a
   buffer placed later, so ``align(f + smallest other unplaced size)``.

Completeness: take any solution with every buffer lowered as far as it goes (each rests on
another buffer or on 0). Either some buffer covering ``s`` sits at ``f`` (branch 1 has it) or
the lowest one covering ``s`` sits at ``>= r`` (branch 2 stays consistent with it). Identical
buffers are interchangeable, so only the lowest-numbered unplaced one of each kind is tried.
Placing a buffer keeps ``floor + unplaced`` of its sections unchanged, so the section bound
``floor + unplaced <= cap`` only has to be re-checked where waste raises a floor: in sections
with no slack, waste is refused at once, which is what makes tight instances fast here.

Only for components whose conflicts are lifetime overlaps (no explicit extra conflicts, no
fixed-offset obstacles); the canonical DFS covers the rest.
"""

from __future__ import annotations

import numpy as np

from edgepart.memory.canonical import ABORTED, FOUND, INFEASIBLE, TIMEOUT, Clock, Component

__all__ = ["skyline_search"]


class _Frame:
    """One node: the open point, its candidates, and what was done there (to undo it)."""

    __slots__ = ("cands", "floor", "next", "placed", "section", "waste_to", "wasted")

    def __init__(self, section: int, floor: int, cands: list[int], waste_to: int) -> None:
        self.section, self.floor, self.cands, self.waste_to = section, floor, cands, waste_to
        self.next = 0
        self.placed: tuple[int, list[int]] | None = None
        self.wasted = False


def skyline_search(
    c: Component, cap: int, pre: np.ndarray, limit: int, clock: Clock
) -> tuple[str, np.ndarray | None]:
    """Decide whether component ``c`` fits under ``cap`` (see module docstring)."""
    if clock.expired():
        return TIMEOUT, None
    m, n_sec = c.m, c.n_sections
    size_l, align_l = c.size.tolist(), c.align.tolist()
    slo, shi = c.slo, c.shi
    floor = [0] * n_sec
    total = c.base_total.tolist()
    if any(t > cap for t in total):
        return INFEASIBLE, None
    placed = [False] * m
    solution = np.full(m, -1, dtype=np.int64)
    # Buffers covering each section, in preorder (the branching order), identical kinds merged.
    order = np.argsort(pre, kind="stable").tolist()
    cover: list[list[int]] = [[] for _ in range(n_sec)]
    for b in order:
        for s in range(slo[b], shi[b]):
            cover[s].append(b)
    kind = c.kind.tolist()
    sizes_sorted = sorted(range(m), key=lambda b: size_l[b])
    used = 0
    stack: list[_Frame] = []

    def open_point() -> tuple[int, int] | None:
        best_s, best_f = -1, 0
        for s in range(n_sec):
            if total[s] and (best_s < 0 or floor[s] < best_f):
                best_s, best_f = s, floor[s]
        return None if best_s < 0 else (best_s, best_f)

    def smallest_other(b: int) -> int:
        for k in sizes_sorted:
            if not placed[k] and k != b:
                return int(size_l[k])
        return 0

    def branch(s: int, f: int) -> _Frame:
        cands: list[int] = []
        seen: set[int] = set()
        raise_to = -1
        for b in cover[s]:
            if placed[b]:
                continue
            a = align_l[b]
            top = max(floor[slo[b] : shi[b]])
            if top > f:
                lb = -(-top // a) * a
            elif f % a:
                lb = -(-f // a) * a
            else:
                lb = -(-(f + smallest_other(b)) // a) * a
                if slo[b] == s and kind[b] not in seen:
                    seen.add(kind[b])
                    cands.append(b)
            if raise_to < 0 or lb < raise_to:
                raise_to = lb
        waste = raise_to > f and raise_to + total[s] <= cap
        return _Frame(s, f, cands, raise_to if waste else -1)

    def place(b: int, f: int) -> tuple[int, list[int]]:
        lo, hi = slo[b], shi[b]
        saved = floor[lo:hi]
        h = f + size_l[b]
        for s in range(lo, hi):
            floor[s] = h
            total[s] -= size_l[b]
        placed[b] = True
        solution[b] = f
        return b, saved

    point = open_point()
    if point is None:
        return FOUND, solution
    stack.append(branch(*point))
    while stack:
        fr = stack[-1]
        if fr.placed is not None:
            b, saved = fr.placed
            lo, hi = slo[b], shi[b]
            floor[lo:hi] = saved
            for s in range(lo, hi):
                total[s] += size_l[b]
            placed[b] = False
            fr.placed = None
        if fr.wasted:
            floor[fr.section] = fr.floor
            fr.wasted = False
        if fr.next < len(fr.cands):
            fr.placed = place(fr.cands[fr.next], fr.floor)
            fr.next += 1
        elif fr.next == len(fr.cands) and fr.waste_to != -1:
            floor[fr.section] = fr.waste_to
            fr.wasted = True
            fr.next += 1
        else:
            stack.pop()
            continue
        used += 1
        clock.nodes += 1
        if used >= limit or clock.out_of_nodes():
            return ABORTED, None
        if not used & 63 and clock.expired():
            return TIMEOUT, None
        point = open_point()
        if point is None:
            return FOUND, solution
        stack.append(branch(*point))
    return INFEASIBLE, None
