"""One memory's buffers prepared for planning: local arrays, sections, conflict adjacency.

Everything the greedy placers and the search share is computed once here, vectorized:
*sections* (the elementary time intervals between consecutive lifetime endpoints, each buffer
covering a contiguous range of them), the conflict adjacency in CSR form (time overlaps found by
a sort-and-search sweep, plus explicit extra conflicts), conflict degrees and per-buffer
"pressure" (the largest live total over the buffer's lifetime).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from edgepart.memory.bounds import ArenaBound, naive_size, sweep_bound
from edgepart.memory.problem import MemoryProblem

MAX_PAIRS = 12_000_000
"""Above this many conflicting pairs the adjacency is not materialized (memory); the greedy
placers then find conflicts with a vectorized mask per placement and the search is skipped."""

LIST_PAIRS = 400_000
"""Up to this many adjacency entries the greedy placers also keep it as Python lists (tens of
megabytes at most)."""


@dataclass(eq=False)
class Arena:
    """Local (0-based) view of the buffers of one memory."""

    memory: str
    rows: np.ndarray
    ids: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    size: np.ndarray
    align: np.ndarray
    fixed: np.ndarray
    extra: np.ndarray  # (k, 2) local extra-conflict pairs
    bound: ArenaBound
    rank: np.ndarray | None = None  # explicit TFLite placement order, if the problem has one

    @property
    def n(self) -> int:
        return len(self.rows)

    @cached_property
    def active(self) -> np.ndarray:
        """Buffers that take space (size > 0); zero-sized ones conflict with nothing."""
        return self.size > 0

    @cached_property
    def times(self) -> np.ndarray:
        """Distinct lifetime endpoints; section ``k`` is ``[times[k], times[k + 1])``."""
        return np.unique(np.concatenate([self.lower, self.upper]))

    @cached_property
    def s_lo(self) -> np.ndarray:
        return np.searchsorted(self.times, self.lower)

    @cached_property
    def s_hi(self) -> np.ndarray:
        return np.searchsorted(self.times, self.upper)

    @cached_property
    def section_total(self) -> np.ndarray:
        """Bytes alive in each section (unaligned sizes)."""
        diff = np.zeros(len(self.times), dtype=np.int64)
        np.add.at(diff, self.s_lo, self.size)
        np.add.at(diff, self.s_hi, -self.size)
        return np.cumsum(diff)[:-1]

    @cached_property
    def pressure(self) -> np.ndarray:
        """Per buffer, the largest section total over its lifetime (MiniMalloc's ``T``)."""
        return _range_max(self.section_total, self.s_lo, self.s_hi)

    @cached_property
    def adjacency(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Conflict CSR ``(ptr, nbr)`` over active buffers, or ``None`` when too large."""
        pairs = interval_pairs(self.lower, self.upper, self.active, MAX_PAIRS)
        if pairs is None:
            return None
        a, b = pairs
        if len(self.extra):
            a = np.concatenate([a, self.extra[:, 0]])
            b = np.concatenate([b, self.extra[:, 1]])
            keep = self.active[a] & self.active[b]
            a, b = a[keep], b[keep]
            key = np.unique(np.minimum(a, b) * self.n + np.maximum(a, b))
            a, b = key // self.n, key % self.n
        return _csr(np.concatenate([a, b]), np.concatenate([b, a]), self.n)

    @cached_property
    def adjacency_lists(self) -> list[list[int]] | None:
        """The conflict adjacency as one Python list per buffer, or ``None`` above
        :data:`LIST_PAIRS` entries (memory) or without materialized adjacency."""
        adj = self.adjacency
        if adj is None or len(adj[1]) > LIST_PAIRS:
            return None
        ptr, flat = adj[0].tolist(), adj[1].tolist()
        return [flat[ptr[i] : ptr[i + 1]] for i in range(self.n)]

    @cached_property
    def extra_adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR of the explicit extra conflicts only (for the mask path)."""
        e = self.extra
        return _csr(np.concatenate([e[:, 0], e[:, 1]]), np.concatenate([e[:, 1], e[:, 0]]), self.n)

    @cached_property
    def degree(self) -> np.ndarray:
        adj = self.adjacency
        if adj is not None:
            return np.diff(adj[0])
        # Count time overlaps with two searches: j overlaps i iff lower_j < upper_i and not
        # upper_j <= lower_i (and j != i).
        act = self.active
        lo, up = np.sort(self.lower[act]), np.sort(self.upper[act])
        deg = np.searchsorted(lo, self.upper, "left") - np.searchsorted(up, self.lower, "right")
        deg = np.where(act, deg - 1, 0)
        return deg + np.diff(self.extra_adjacency[0])

    @cached_property
    def whole_run(self) -> np.ndarray:
        """Buffers alive for the whole timeline of this arena (TFLite allocates them first)."""
        if not self.n:
            return np.zeros(0, dtype=bool)
        whole: np.ndarray = (self.lower <= self.lower.min()) & (self.upper >= self.upper.max())
        return whole


def prepare(problem: MemoryProblem, memory: str, floor: int = 0) -> Arena:
    """Local view of the buffers of ``memory``; ``floor`` is a lower bound known otherwise."""
    rows = problem.rows_of(memory)
    local = np.full(len(problem), -1, dtype=np.int64)
    local[rows] = np.arange(len(rows))
    extra = local[problem.conflicts] if len(problem.conflicts) else np.zeros((0, 2), np.int64)
    if len(extra):
        extra = extra[(extra >= 0).all(axis=1)]
    lo, up = problem.lower[rows], problem.upper[rows]
    size, align = problem.size[rows], problem.alignment[rows]
    fixed = problem.fixed[rows]
    lb, t = sweep_bound(lo, up, size, align)
    has_fixed = (fixed >= 0) & (size > 0)
    if has_fixed.any():
        lb = max(lb, int((fixed[has_fixed] + size[has_fixed]).max()))
    lb = max(lb, floor)
    bound = ArenaBound(memory, lb, t, naive_size(size, align), len(rows))
    return Arena(
        memory=memory,
        rows=rows,
        ids=tuple(problem.ids[i] for i in rows.tolist()),
        lower=lo,
        upper=up,
        size=size,
        align=align,
        fixed=fixed,
        extra=extra,
        bound=bound,
        rank=None if problem.rank is None else problem.rank[rows],
    )


def interval_pairs(
    lower: np.ndarray, upper: np.ndarray, active: np.ndarray, limit: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """All pairs ``(i, j)`` of active buffers with intersecting half-open lifetimes.

    Sorted by start, the buffers starting inside ``[lower_i, upper_i)`` after ``i`` form a
    contiguous run, and every intersecting pair has one member starting inside the other's
    lifetime; so the pairs are generated from one ``searchsorted`` without quadratic work.
    Returns ``None`` when there are more than ``limit`` pairs.
    """
    idx = np.flatnonzero(active)
    order = idx[np.lexsort((idx, lower[idx]))]
    lo_sorted = lower[order]
    stop = np.searchsorted(lo_sorted, upper[order], "left")
    pos = np.arange(len(order))
    cnt = np.maximum(stop - pos - 1, 0)
    total = int(cnt.sum())
    if total > limit:
        return None
    first = np.repeat(pos, cnt)
    starts = np.repeat(pos + 1 - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt)
    second = starts + np.arange(total)
    return order[first], order[second]


def _csr(a: np.ndarray, b: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    key = np.sort(a.astype(np.int64) * max(n, 1) + b)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(a, minlength=n), out=ptr[1:])
    return ptr, key % max(n, 1)


def _range_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``max(values[lo[i]:hi[i]])`` for every ``i`` (ranges non-empty) via a sparse table."""
    if not len(lo):
        return np.zeros(0, dtype=np.int64)
    table = [values]
    k = 1
    while 2 * k <= len(values):
        prev = table[-1]
        table.append(np.maximum(prev[:-k], prev[k:]))
        k *= 2
    length = hi - lo
    level = np.floor(np.log2(np.maximum(length, 1))).astype(np.int64)
    out = np.empty(len(lo), dtype=np.int64)
    for lv in np.unique(level).tolist():
        sel = level == lv
        t = table[lv]
        out[sel] = np.maximum(t[lo[sel]], t[hi[sel] - (1 << lv)])
    return out
