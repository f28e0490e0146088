"""Large-neighbourhood search: re-solve a window of the graph exactly with the rest fixed.

A *window* is a run of consecutive *atoms* (maximal chains and single nodes, closed under
colocation, in execution order). Every atom may go to any target unit of any processor that
admits it (the units in use plus one fresh unit per multi-unit processor), or stay as it is;
all combinations are scored by the evaluation kernel in one batch and the best one is taken if
it improves the key. So within the window the result is optimal for exactly the objective every
plan is judged by, with everything outside the window fixed. Windows are as long as the number of
combinations allows (``limit``), swept along the execution order, or centred on the critical
path for large graphs.

This finds compound improvements single block moves cannot: two or three neighbouring atoms
that must change units together (a branch and its join moved to a fresh unit at once, a
boundary shifted while the next segment moves elsewhere).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import numpy as np

from edgepart.placement._fastscore import Key, Scorer
from edgepart.placement.costgraph import CostGraph
from edgepart.placement.localsearch import Neighbourhood, chains, critical_nodes

__all__ = ["Atoms", "window_search"]


class Atoms:
    """Chains and single nodes of a graph in execution order, each closed under colocation."""

    def __init__(self, g: CostGraph, nbh: Neighbourhood) -> None:
        n = g.num_nodes
        atom_of = np.full(n, -1, dtype=np.int64)
        atoms: list[np.ndarray] = []
        for c in chains(g):
            atom_of[c] = len(atoms)
            atoms.append(c)
        for v in np.flatnonzero(atom_of < 0).tolist():
            atom_of[v] = len(atoms)
            atoms.append(np.asarray([v], dtype=np.int64))
        first = np.asarray([int(a.min()) for a in atoms])
        order = np.argsort(first, kind="stable")
        self.atoms = [nbh.close(atoms[i]) for i in order.tolist()]
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        self.atom_of = rank[atom_of]
        self._nbh = nbh
        self._opts: dict[int, list[tuple[int, np.ndarray]]] = {}
        # processors admitting each atom (for window sizes), vectorized
        ok = nbh.adm[np.concatenate(self.atoms)] if self.atoms else np.zeros((0, 0), bool)
        lens = np.asarray([len(a) for a in self.atoms], dtype=np.int64)
        starts = np.zeros(len(lens), dtype=np.int64)
        if len(lens) > 1:
            np.cumsum(lens[:-1], out=starts[1:])
        self.procs = (
            np.logical_or.reduceat(ok, starts, axis=0) if len(lens) else np.zeros((0, 0), bool)
        )

    def options(self, i: int) -> list[tuple[int, np.ndarray]]:
        """``(processor, nodes)`` options of atom ``i`` (computed on first use)."""
        hit = self._opts.get(i)
        if hit is None:
            hit = self._opts[i] = self._nbh.options(self.atoms[i])
        return hit

    def __len__(self) -> int:
        return len(self.atoms)


def _choices(
    atoms: Atoms, i: int, targets: list[list[int]], cur: np.ndarray
) -> list[tuple[int, np.ndarray]]:
    """``(unit, nodes)`` choices of atom ``i``; ``(-1, empty)`` keeps it as it is."""
    out: list[tuple[int, np.ndarray]] = [(-1, np.zeros(0, dtype=np.int64))]
    for p, nodes in atoms.options(i):
        for u in targets[p]:
            if (cur[nodes] != u).any():
                out.append((u, nodes))
    return out


def _combos(
    choice_lists: list[list[tuple[int, np.ndarray]]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every combination but the all-keep one, as CSR moves."""
    lists = [[(u, nd.tolist()) for u, nd in cl] for cl in choice_lists]
    ptr, nodes, units = [0], [], []
    for combo in itertools.product(*lists):
        total = 0
        for u, nd in combo:
            if u >= 0:
                nodes.extend(nd)
                units.extend([u] * len(nd))
                total += len(nd)
        if total:
            ptr.append(ptr[-1] + total)
    return (
        np.asarray(ptr, dtype=np.int64),
        np.asarray(nodes, dtype=np.int64),
        np.asarray(units, dtype=np.int64),
    )


def _windows(
    atoms: Atoms, sizes: list[int], limit: int, starts: list[int]
) -> Iterator[tuple[int, int]]:
    """``(first atom, end atom)`` windows starting at ``starts``, as long as ``limit`` allows."""
    m = len(atoms)
    for s in starts:
        prod, e = 1, s
        while e < m and prod * sizes[e] <= limit:
            prod *= sizes[e]
            e += 1
        if e - s >= 2:
            yield s, e


def window_search(
    g: CostGraph,
    sc: Scorer,
    nbh: Neighbourhood,
    atoms: Atoms,
    start: np.ndarray,
    *,
    max_evals: int,
    limit: int = 1024,
    focus: bool | None = None,
    throughput: bool = False,
    deadline: float | None = None,
) -> tuple[np.ndarray, Key, int]:
    """Sweep windows over ``start``; return the best placement, its key, improvements made.

    ``focus`` (default: graphs over the neighbourhood's small size) restricts windows to those
    starting near the critical path.
    """
    e0 = sc.evaluations
    cur = np.asarray(start, dtype=np.int64).copy()
    key = sc.score(cur)
    improved = 0
    if focus is None:
        focus = g.num_nodes > 150
    pos, misses = 0, 0
    stale = True  # targets, sizes and window starts must be recomputed
    tg: list[list[int]] = []
    wins: list[tuple[int, int]] = []
    while sc.evaluations - e0 < max_evals:
        if deadline is not None and time.perf_counter() > deadline:
            break
        if stale:
            used = np.zeros(g.num_units, dtype=bool)
            used[np.unique(cur)] = True
            tg = nbh.targets(used)
            per_proc = np.asarray([len(t) for t in tg], dtype=np.int64)
            sizes = (1 + atoms.procs.astype(np.int64) @ per_proc).tolist()
            if focus:
                crit, _, _, _ = critical_nodes(g, sc, cur, throughput)
                ca = np.unique(atoms.atom_of[crit])
                starts = sorted({int(max(0, a - d)) for a in ca.tolist() for d in (0, 1, 2)})
                pos = 0
            else:
                starts = list(range(len(atoms)))
            wins = list(_windows(atoms, sizes, limit, starts))
            stale = False
            misses = 0
        if not wins or misses >= len(wins):
            break
        s, e = wins[pos % len(wins)]
        pos += 1
        lists = [_choices(atoms, i, tg, cur) for i in range(s, e)]
        ptr, nodes, units = _combos(lists)
        if len(ptr) - 1 > max_evals - (sc.evaluations - e0):
            break
        idx, _, _ = sc.scan(cur, ptr, nodes, units, key, first=False)
        if idx >= 0:
            cur = cur.copy()
            cur[nodes[ptr[idx] : ptr[idx + 1]]] = units[ptr[idx] : ptr[idx + 1]]
            key = sc.score(cur)
            improved += 1
            stale = True
        else:
            misses += 1
    return cur, key, improved
