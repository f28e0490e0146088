"""Lower bound and naive size of an arena, by a sweep over the timeline.

The lower bound is the classic LOAD: the maximum over time of the bytes alive at that time. With
alignment it is slightly subtler than summing rounded-up sizes: every offset is a multiple of
``g`` (the gcd of the arena's alignments), so among the buffers alive at time ``t`` each one
except the topmost occupies at least its size rounded up to ``g``, and the topmost only its
size. Hence ``LB(t) = sum(roundup(size, g)) - max(padding)`` over the live buffers, which is a
valid bound (two 10-byte buffers aligned to 64 fit in 74 bytes, not 128). A fixed offset adds
``offset + size`` as a further bound.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from edgepart.errors import UsageError
from edgepart.memory.problem import Buffer, MemoryProblem

__all__ = ["ArenaBound", "arena_bounds", "lower_bound"]


@dataclass(frozen=True)
class ArenaBound:
    """The lower bound of one arena, where it is attained, and the no-reuse (naive) size."""

    memory: str
    lower_bound: int
    time: int
    naive: int
    n_buffers: int


def lower_bound(problem: MemoryProblem | Iterable[Buffer], memory: str | None = None) -> ArenaBound:
    """The lower bound of one arena (the only one, or ``memory``).

    Parameters
    ----------
    problem
        A :class:`MemoryProblem` or an iterable of :class:`Buffer`.
    memory
        Which arena; may be omitted when the problem has a single memory.
    """
    prob = problem if isinstance(problem, MemoryProblem) else MemoryProblem.from_buffers(problem)
    if memory is None:
        if len(prob.memories) > 1:
            raise UsageError(
                f"problem has {len(prob.memories)} memories ({', '.join(prob.memories)}); "
                "pass memory= to choose one or use arena_bounds()"
            )
        memory = prob.memories[0] if prob.memories else ""
    if not prob.memories:
        return ArenaBound(memory=memory, lower_bound=0, time=0, naive=0, n_buffers=0)
    return _bound_of_rows(prob, memory, prob.rows_of(memory))


def arena_bounds(problem: MemoryProblem) -> dict[str, ArenaBound]:
    """:class:`ArenaBound` of every memory of ``problem``, keyed by memory name."""
    return {m: _bound_of_rows(problem, m, problem.rows_of(m)) for m in problem.memories}


def _bound_of_rows(prob: MemoryProblem, memory: str, rows: np.ndarray) -> ArenaBound:
    lo, up = prob.lower[rows], prob.upper[rows]
    size, align, fixed = prob.size[rows], prob.alignment[rows], prob.fixed[rows]
    lb, t = sweep_bound(lo, up, size, align)
    has_fixed = (fixed >= 0) & (size > 0)
    if has_fixed.any():
        tops = fixed[has_fixed] + size[has_fixed]
        k = int(np.argmax(tops))
        if int(tops[k]) > lb:
            lb, t = int(tops[k]), int(lo[has_fixed][k])
    return ArenaBound(memory, lb, t, naive_size(size, align), len(rows))


def naive_size(size: np.ndarray, align: np.ndarray) -> int:
    """Arena size with no reuse: every buffer gets its own aligned slot, in row order."""
    end = 0
    for s, a in zip(size.tolist(), align.tolist(), strict=True):
        if s:
            end = -(-end // a) * a + s
    return end


def sweep_bound(
    lower: np.ndarray, upper: np.ndarray, size: np.ndarray, align: np.ndarray
) -> tuple[int, int]:
    """``(LB, time)``: max over time of live rounded bytes minus the largest live padding."""
    live = size > 0
    if not live.any():
        return 0, int(lower.min()) if len(lower) else 0
    lower, upper, size = lower[live], upper[live], size[live]
    g = math.gcd(*align[live].tolist())
    rounded = -(-size // g) * g
    pad = rounded - size
    # Events sorted by time; at equal times removals (upper) come before additions because
    # lifetimes are half-open.
    times = np.concatenate([upper, lower])
    kinds = np.concatenate([np.zeros(len(upper), np.int8), np.ones(len(lower), np.int8)])
    deltas = np.concatenate([-rounded, rounded])
    order = np.lexsort((kinds, times))
    running = np.cumsum(deltas[order])
    # The value after the last event at each distinct time is the load on the next segment.
    t_sorted = times[order]
    last_at_time = np.flatnonzero(np.append(t_sorted[1:] != t_sorted[:-1], True))
    seg_load = running[last_at_time]
    best = int(seg_load.max())
    seg_time = t_sorted[last_at_time]
    if not pad.any():
        k = int(np.argmax(seg_load))
        return best, int(seg_time[k])
    # Only segments whose rounded load beats ``best - max(pad)`` can attain the bound; find the
    # largest live padding there, one cumulative count per distinct padding value.
    cand = np.flatnonzero(seg_load > best - int(pad.max()))
    pads = np.unique(pad[pad > 0])
    if len(pads) > 512:
        return _sweep_with_padding(lower, upper, rounded, pad, best - int(pad.max()))
    pad_ev = np.concatenate([pad, pad])[order]
    sign = np.where(kinds[order] == 1, 1, -1)
    max_pad = np.zeros(len(cand), dtype=np.int64)
    for v in pads[::-1].tolist():
        live = np.cumsum(np.where(pad_ev >= v, sign, 0))[last_at_time[cand]]
        max_pad = np.where((max_pad == 0) & (live > 0), v, max_pad)
    value = seg_load[cand] - max_pad
    k = int(np.argmax(value))
    return int(value[k]), int(seg_time[cand[k]])


def _sweep_with_padding(
    lower: np.ndarray, upper: np.ndarray, rounded: np.ndarray, pad: np.ndarray, floor: int
) -> tuple[int, int]:
    """Exact ``max_t(sum rounded - max pad)`` by a heap sweep (only when some padding exists)."""
    n = len(lower)
    events = sorted(
        [(int(upper[i]), 0, i) for i in range(n)] + [(int(lower[i]), 1, i) for i in range(n)]
    )
    heap: list[tuple[int, int]] = []
    alive = np.zeros(n, dtype=bool)
    total = 0
    best, best_t = floor - 1, int(lower.min())
    rounded_l, pad_l = rounded.tolist(), pad.tolist()
    for k, (t, kind, i) in enumerate(events):
        if kind == 0:
            alive[i] = False
            total -= rounded_l[i]
        else:
            alive[i] = True
            total += rounded_l[i]
            heapq.heappush(heap, (-pad_l[i], i))
        if k + 1 < len(events) and events[k + 1][0] == t:
            continue
        while heap and not alive[heap[0][1]]:
            heapq.heappop(heap)
        if heap and total + heap[0][0] > best:
            best, best_t = total + heap[0][0], t
    return best, best_t
