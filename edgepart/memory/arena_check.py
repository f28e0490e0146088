"""Independent plan checker: proves that no two conflicting buffers overlap in memory.

The proof is a sweep over time (O(n log n) comparisons): lifetimes end before others start at
the same time (half-open), and the live buffers are kept sorted by offset. If the live set is
pairwise disjoint, a newly starting buffer overlaps some live buffer only if it overlaps its
predecessor or successor by offset, so checking those two at every insertion suffices. Explicit
extra conflicts are checked pairwise. Alignment, fixed offsets and claimed arena sizes are
checked too. Every failure raises :class:`ArenaOverflowError` naming both buffers, their
lifetimes and byte ranges.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping

import numpy as np

from edgepart.errors import ArenaOverflowError
from edgepart.memory.problem import MemoryProblem

__all__ = ["check_plan"]


def check_plan(
    problem: MemoryProblem,
    offsets: Mapping[str, int] | np.ndarray,
    arena_sizes: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Verify a plan; return the peak (arena size actually used) of every memory.

    Parameters
    ----------
    problem
        The buffers the plan is for.
    offsets
        Offset per buffer id, or an array aligned with the problem's rows.
    arena_sizes
        Optional claimed size per memory; every buffer must end within its memory's claim.
    """
    off = _offset_array(problem, offsets)
    _check_values(problem, off)
    end = off + problem.size
    peaks: dict[str, int] = {}
    for m_idx, memory in enumerate(problem.memories):
        rows = np.flatnonzero(problem.memory == m_idx)
        live = rows[problem.size[rows] > 0]
        peak = int(end[live].max()) if len(live) else 0
        _sweep(problem, memory, live, off, end)
        peaks[memory] = peak
        if arena_sizes is not None and memory in arena_sizes and peak > arena_sizes[memory]:
            i = int(live[np.argmax(end[live])])
            raise ArenaOverflowError(
                f"memory {memory!r}: buffer {problem.describe(i)} ends at byte {peak}, beyond "
                f"the claimed arena size {arena_sizes[memory]}"
            )
    _check_extra(problem, off, end)
    return peaks


def _offset_array(problem: MemoryProblem, offsets: Mapping[str, int] | np.ndarray) -> np.ndarray:
    if isinstance(offsets, np.ndarray):
        if offsets.shape != (len(problem),):
            raise ArenaOverflowError(f"plan has {offsets.shape} offsets for {len(problem)} buffers")
        return offsets.astype(np.int64)
    missing = [b for b in problem.ids if b not in offsets]
    if missing:
        raise ArenaOverflowError(
            f"plan has no offset for buffer {missing[0]!r} ({len(missing)} buffers missing)"
        )
    extra = set(offsets) - set(problem.ids)
    if extra:
        raise ArenaOverflowError(f"plan names unknown buffer {sorted(extra)[0]!r}")
    return np.array([int(offsets[b]) for b in problem.ids], dtype=np.int64)


def _check_values(problem: MemoryProblem, off: np.ndarray) -> None:
    bad = np.flatnonzero(off < 0)
    if len(bad):
        i = int(bad[0])
        raise ArenaOverflowError(f"buffer {problem.describe(i)} has negative offset {off[i]}")
    bad = np.flatnonzero(off % problem.alignment != 0)
    if len(bad):
        i = int(bad[0])
        raise ArenaOverflowError(
            f"buffer {problem.describe(i)} at offset {off[i]} is not aligned to "
            f"{problem.alignment[i]} bytes"
        )
    bad = np.flatnonzero((problem.fixed >= 0) & (off != problem.fixed))
    if len(bad):
        i = int(bad[0])
        raise ArenaOverflowError(
            f"buffer {problem.describe(i)} must sit at its fixed offset {problem.fixed[i]}, "
            f"plan puts it at {off[i]}"
        )


def _overlap_error(
    problem: MemoryProblem, memory: str, a: int, b: int, off: np.ndarray, end: np.ndarray, why: str
) -> ArenaOverflowError:
    return ArenaOverflowError(
        f"memory {memory!r}: buffer {problem.describe(a)} at bytes [{off[a]}, {end[a]}) and "
        f"buffer {problem.describe(b)} at bytes [{off[b]}, {end[b]}) overlap ({why})"
    )


def _sweep(
    problem: MemoryProblem, memory: str, rows: np.ndarray, off: np.ndarray, end: np.ndarray
) -> None:
    lo, up = problem.lower[rows], problem.upper[rows]
    times = np.concatenate([up, lo])
    kinds = np.concatenate([np.zeros(len(rows), np.int8), np.ones(len(rows), np.int8)])
    who = np.concatenate([rows, rows])
    order = np.lexsort((who, kinds, times))
    off_l, end_l = off.tolist(), end.tolist()
    keys: list[tuple[int, int]] = []  # live buffers as (offset, row), sorted
    for kind, i in zip(kinds[order].tolist(), who[order].tolist(), strict=True):
        key = (off_l[i], i)
        pos = bisect.bisect_left(keys, key)
        if kind == 0:
            del keys[pos]
            continue
        if pos and end_l[keys[pos - 1][1]] > off_l[i]:
            raise _overlap_error(problem, memory, keys[pos - 1][1], i, off, end, "live together")
        if pos < len(keys) and keys[pos][0] < end_l[i]:
            raise _overlap_error(problem, memory, i, keys[pos][1], off, end, "live together")
        keys.insert(pos, key)


def _check_extra(problem: MemoryProblem, off: np.ndarray, end: np.ndarray) -> None:
    if not len(problem.conflicts):
        return
    a, b = problem.conflicts[:, 0], problem.conflicts[:, 1]
    both = (problem.size[a] > 0) & (problem.size[b] > 0)
    clash = np.flatnonzero(both & (off[a] < end[b]) & (off[b] < end[a]))
    if len(clash):
        k = int(clash[0])
        ia, ib = int(a[k]), int(b[k])
        memory = problem.memories[int(problem.memory[ia])]
        raise _overlap_error(problem, memory, ia, ib, off, end, "explicit conflict")
