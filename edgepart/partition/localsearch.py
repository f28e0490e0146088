"""Iterated local search over placements, judged only by :func:`~.schedule.evaluate`.

A *move* puts the admissible part of a block of nodes on one unit. Blocks are the current
partitions (and, on small graphs, their prefixes and suffixes), maximal chains (paths whose inner
nodes have one predecessor and one successor), Band units, windows of 2-8 consecutive nodes
(small graphs) and single nodes; each is closed under colocation. Targets are the units already
in use plus one fresh unit of each multi-unit processor. On small graphs a second neighbourhood
moves two adjacent atoms (chains or single nodes) at once, each to its own unit. Every candidate
is evaluated in full and accepted only if it improves the objective key, so convexity,
support, memory and colocation hold throughout (partitions are always re-derived from the
placement, and infeasible placements score ``inf``).

Moves are scanned circularly, continuing after the last accepted one. When a full cycle of
both neighbourhoods brings no improvement, the search restarts from the best placement after a
seeded random kick (one to three random block moves). The budget is a number of evaluations,
not wall time, so results are deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgepart.partition.costgraph import CostGraph
from edgepart.partition.schedule import Evaluation, evaluate, objective_key, score

__all__ = ["SearchStats", "local_search"]


@dataclass
class SearchStats:
    evaluations: int = 0
    improvements: int = 0
    kicks: int = 0


def _chains(g: CostGraph) -> list[np.ndarray]:
    """Maximal paths whose links are the only edge out of the source and into the target."""
    outd = np.diff(g.succ.ptr)
    ind = np.diff(g.pred.ptr)
    sp, si = g.succ.ptr, g.succ.idx
    chains: list[np.ndarray] = []
    cont = np.zeros(g.num_nodes, dtype=bool)  # v continues its predecessor's chain
    single = outd == 1
    nxt = np.full(g.num_nodes, -1, dtype=np.int64)
    nxt[single] = si[sp[:-1][single]]
    link = single.copy()
    link[single] &= ind[nxt[single]] == 1
    cont[nxt[link]] = True
    for v in np.flatnonzero(~cont & link).tolist():
        path = [v]
        while link[path[-1]]:
            path.append(int(nxt[path[-1]]))
        chains.append(np.asarray(path, dtype=np.int64))
    return chains


class _Blocks:
    """Static blocks (chains, Band units, singles) with colocation closure."""

    def __init__(self, g: CostGraph, band_of: np.ndarray) -> None:
        self.g = g
        self.group = g.coloc
        self.members: list[np.ndarray] = []
        if len(g.coloc_names):
            from edgepart.partition.constraints import group_members

            self.members = group_members(g)
        order = np.argsort(band_of, kind="stable")
        cut = np.searchsorted(band_of[order], np.arange(int(band_of.max()) + 2))
        bands = [order[cut[i] : cut[i + 1]] for i in range(len(cut) - 1)]
        chains = _chains(g)
        self.static = chains + [b for b in bands if len(b) > 1]
        # Small graphs: every window of 2..8 consecutive nodes in execution order (segments of
        # a DNN; the part of a window a processor cannot run simply stays where it is).
        n = g.num_nodes
        self.windows = (
            [np.arange(i, i + w, dtype=np.int64) for w in range(2, 9) for i in range(0, n - w + 1)]
            if n <= 400
            else []
        )
        self.singles = [np.asarray([v], dtype=np.int64) for v in range(g.num_nodes)]
        # Atoms: chains, and single nodes outside chains.
        atom_of = np.full(g.num_nodes, -1, dtype=np.int64)
        self.atoms: list[np.ndarray] = []
        for c in chains:
            atom_of[c] = len(self.atoms)
            self.atoms.append(c)
        for v in np.flatnonzero(atom_of < 0).tolist():
            atom_of[v] = len(self.atoms)
            self.atoms.append(np.asarray([v], dtype=np.int64))
        self.atom_of = atom_of

    def adjacent_atoms(self) -> list[tuple[int, int]]:
        """Pairs of atoms joined by an edge, in graph order."""
        g = self.g
        src = np.repeat(np.arange(g.num_nodes), np.diff(g.succ.ptr))
        a, b = self.atom_of[src], self.atom_of[g.succ.idx]
        keep = a != b
        if not keep.any():
            return []
        pairs = np.unique(np.stack([a[keep], b[keep]], axis=1), axis=0)
        return [(int(x), int(y)) for x, y in pairs.tolist()]

    def close(self, block: np.ndarray) -> np.ndarray:
        if not self.members:
            return block
        gs = np.unique(self.group[block])
        gs = gs[gs >= 0]
        if not len(gs):
            return block
        return np.unique(np.concatenate([block, *(self.members[int(x)] for x in gs)]))


def _partition_blocks(ev: Evaluation, small: bool) -> list[np.ndarray]:
    order = np.argsort(ev.part_of, kind="stable")
    cut = np.searchsorted(ev.part_of[order], np.arange(ev.num_partitions + 1))
    parts = [order[cut[i] : cut[i + 1]] for i in range(ev.num_partitions)]
    out = list(parts)
    if small:
        for p in parts:
            for k in range(1, len(p) - 1):
                out.append(p[: k + 1])
                out.append(p[k:])
    return out


def _targets(
    g: CostGraph, adm: np.ndarray, units: np.ndarray, block: np.ndarray, keep: bool = False
) -> list[tuple[int, np.ndarray]]:
    """``(unit, nodes)`` moves of ``block``: the nodes admissible on the unit's processor.

    Units offered: those in use plus one fresh unit per multi-unit processor. A move that
    changes nothing is left out unless ``keep``.
    """
    sub = adm[block]
    used = np.zeros(g.num_units, dtype=bool)
    used[units] = True
    out: list[tuple[int, np.ndarray]] = []
    for p in np.flatnonzero(sub.any(axis=0)).tolist():
        nodes = block[sub[:, p]]
        f, k = int(g.proc_first_unit[p]), int(g.proc_units[p])
        fresh = True
        for u in range(f, f + k):
            if not used[u]:
                if not fresh:
                    continue
                fresh = False
            if keep or (units[nodes] != u).any():
                out.append((u, nodes))
    return out


def local_search(
    g: CostGraph,
    adm: np.ndarray,
    band_of: np.ndarray,
    start: np.ndarray,
    objective: str,
    *,
    max_evals: int,
    seed: int = 0,
) -> tuple[np.ndarray, Evaluation, SearchStats]:
    """Improve ``start`` (unit per node) until the evaluation budget is spent or nothing helps.

    Returns the best placement, its evaluation and counters.
    """
    stats = SearchStats()
    blocks = _Blocks(g, band_of)
    rng = np.random.default_rng(seed)
    small = g.num_nodes <= 400
    cur = start.copy()
    ev = evaluate(g, cur)
    stats.evaluations += 1
    key = objective_key(ev, objective)
    best, best_ev, best_key = cur.copy(), ev, key

    pos = {"single": 0, "pair": 0}

    def step(name: str, gen: Iterator[list[tuple[int, np.ndarray]]]) -> bool:
        """Scan moves circularly from where the last scan stopped; take the first improvement.

        False after a full cycle without improvement, or when the budget is spent. Big graphs
        (whose budget is a few dozen evaluations) scan lazily from the start instead of listing
        every move.
        """
        nonlocal cur, ev, key
        moves: Sequence[list[tuple[int, np.ndarray]]] = list(gen) if small else _Lazy(gen)
        m = len(moves) if small else 1 << 62
        for i in range(m):
            if stats.evaluations >= max_evals:
                return False
            j = (pos[name] + i) % m if small else i
            try:
                move = moves[j]
            except IndexError:
                return False
            trial = cur.copy()
            for u, nodes in move:
                trial[nodes] = u
            if not all(_memory_ok(g, trial, u) for u, _ in move):
                continue
            tkey = score(g, trial, objective)
            stats.evaluations += 1
            if _better(tkey, key):
                cur, ev, key = trial, evaluate(g, trial), tkey
                stats.improvements += 1
                pos[name] = j + 1
                return True
        return False

    while stats.evaluations < max_evals:
        if step("single", _single_moves(g, adm, blocks, cur, ev, small)) or (
            small and step("pair", _pair_moves(g, adm, blocks, cur))
        ):
            if _better(key, best_key):
                best, best_ev, best_key = cur.copy(), ev, key
            continue
        # Local optimum of both neighbourhoods: kick the best placement and descend again.
        if stats.evaluations >= max_evals or not math.isfinite(best_key[0]):
            break
        stats.kicks += 1
        cur = _kick(g, adm, blocks, best, best_ev, rng)
        ev = evaluate(g, cur)
        stats.evaluations += 1
        key = objective_key(ev, objective)
        if _better(key, best_key):
            best, best_ev, best_key = cur.copy(), ev, key
    return best, best_ev, stats


class _Lazy(Sequence[list[tuple[int, np.ndarray]]]):
    """Indexes a generator in increasing order only (enough for a forward scan)."""

    def __init__(self, gen: Iterator[list[tuple[int, np.ndarray]]]) -> None:
        self._gen = gen

    def __len__(self) -> int:  # pragma: no cover - never asked in a forward scan
        raise TypeError("lazy move list has no length")

    def __getitem__(self, i: Any) -> Any:
        try:
            return next(self._gen)
        except StopIteration:
            raise IndexError(i) from None


def _single_moves(
    g: CostGraph, adm: np.ndarray, blocks: _Blocks, cur: np.ndarray, ev: Evaluation, small: bool
) -> Iterator[list[tuple[int, np.ndarray]]]:
    for block in _moves(blocks, ev, small):
        for u, nodes in _targets(g, adm, cur, block):
            yield [(u, nodes)]


def _pair_moves(
    g: CostGraph, adm: np.ndarray, blocks: _Blocks, cur: np.ndarray
) -> Iterator[list[tuple[int, np.ndarray]]]:
    """Two adjacent atoms (single nodes or chains) moved at once, each to its own unit."""
    for a, b in blocks.adjacent_atoms():
        ba, bb = blocks.close(blocks.atoms[a]), blocks.close(blocks.atoms[b])
        tb = _targets(g, adm, cur, bb)
        for ua, na in _targets(g, adm, cur, ba):
            for ub, nb in tb:
                yield [(ua, na), (ub, nb)]


def _better(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Strictly better, ignoring float noise below one part in 10^12."""
    if a[0] < b[0] * (1 - 1e-12):
        return True
    return a[0] <= b[0] * (1 + 1e-12) and a[1] < b[1] * (1 - 1e-12)


def _moves(blocks: _Blocks, ev: Evaluation, small: bool) -> Iterator[np.ndarray]:
    for b in _partition_blocks(ev, small):
        yield blocks.close(b)
    for b in blocks.static:
        yield blocks.close(b)
    for b in blocks.windows:
        yield blocks.close(b)
    for b in blocks.singles:
        yield blocks.close(b)


def _memory_ok(g: CostGraph, units: np.ndarray, u: int) -> bool:
    cap = g.proc_memory[g.unit_proc[u]]
    if not math.isfinite(cap):
        return True
    on = units == u
    if not on.any():  # a later part of a compound move emptied the unit again
        return True
    return bool(g.weight_bytes[on].sum() + g.activation_bytes[on].max() <= cap)


def _kick(
    g: CostGraph,
    adm: np.ndarray,
    blocks: _Blocks,
    best: np.ndarray,
    ev: Evaluation,
    rng: np.random.Generator,
) -> np.ndarray:
    cur: np.ndarray = best.copy()
    pool = _partition_blocks(ev, False) + blocks.static
    for _ in range(int(rng.integers(1, 4))):
        block = blocks.close(pool[int(rng.integers(len(pool)))])
        ts = _targets(g, adm, cur, block)
        if ts:
            u, nodes = ts[int(rng.integers(len(ts)))]
            cur[nodes] = u
    return cur
