"""Seeded random buffer sets shared by the memory-planner tests."""

from __future__ import annotations

import numpy as np

from edgepart.memory import MemoryProblem


def random_problem(
    rng: np.random.Generator, n: int, *, start: int, life: int, size: int, unit: int = 1
) -> MemoryProblem:
    """``n`` buffers (ids ``0..n-1``) born in ``[0, start)``, living ``[1, life)`` steps, of
    ``[1, size) * unit`` bytes; draws from ``rng`` in that order."""
    lo = rng.integers(0, start, n)
    return MemoryProblem.from_arrays(
        ids=range(n),
        lower=lo,
        upper=lo + rng.integers(1, life, n),
        size=rng.integers(1, size, n) * unit,
    )


def cut_rectangle(
    n: int, t: int, m: int, seed: int, unit: int = 64, *, shuffle: bool = True
) -> MemoryProblem:
    """Cut a full time x memory rectangle into ``n`` pieces: the bound is tight by construction.

    ``shuffle`` lists the pieces in random order, else in the order the cutting left them.
    """
    rng = np.random.default_rng(seed)
    pieces = [(0, t, 0, m)]
    while len(pieces) < n:
        k = int(rng.integers(len(pieces)))
        t0, t1, m0, m1 = pieces[k]
        if t1 - t0 > 1 and (m1 - m0 == 1 or rng.random() < 0.5):
            c = int(rng.integers(t0 + 1, t1))
            pieces[k : k + 1] = [(t0, c, m0, m1), (c, t1, m0, m1)]
        elif m1 - m0 > 1:
            c = int(rng.integers(m0 + 1, m1))
            pieces[k : k + 1] = [(t0, t1, m0, c), (t0, t1, c, m1)]
    perm = rng.permutation(len(pieces)) if shuffle else range(len(pieces))
    return MemoryProblem.from_arrays(
        ids=range(len(pieces)),
        lower=[pieces[i][0] for i in perm],
        upper=[pieces[i][1] for i in perm],
        size=[(pieces[i][3] - pieces[i][2]) * unit for i in perm],
    )
