"""Iterated local search over placements, judged only by the evaluation kernel.

A *move* puts the admissible part of a block of nodes on one unit. Blocks are the current
partitions (and, on small graphs, their prefixes and suffixes), maximal chains (paths whose inner
nodes have one predecessor and one successor), Band units, windows of 2-8 consecutive nodes
(small graphs) and single nodes; each is closed under colocation. Targets are the units already
in use plus one fresh unit of each multi-unit processor. On small graphs a second neighbourhood
moves two adjacent atoms (chains or single nodes) at once, each to its own unit. Every candidate
is evaluated in full and accepted only if it improves the key, so convexity, support, memory and
colocation hold throughout (partitions are always re-derived from the placement, and infeasible
placements score ``inf``).

The key is ``(primary, secondary, spread)``: the objective's two components (latency and
period, or the reverse) and, as a tie-breaker, the sum over nodes of their partition's end time.
Makespan has wide plateaus: when two parallel branches are both critical, speeding up either one
alone changes nothing, so an improvement needing both looks like two useless moves. The spread
falls with each branch made faster, so such compound improvements are found move by move.

Moves are scanned circularly, continuing after the last accepted one. When a full cycle of both
neighbourhoods brings no improvement, the search restarts from the best placement after a seeded
random kick (one to three random block moves). It stops after a budget of distinct evaluations,
after ``patience`` kicks in a row that found nothing better, or at once when nothing can move.
Scores are memoized on small graphs, so revisiting a placement costs a lookup. Everything is
counted in evaluations, never wall time, so results are deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from edgepart.placement import _core
from edgepart.placement.constraints import group_members
from edgepart.placement.costgraph import CostGraph
from edgepart.placement.evaluate import Evaluation, evaluate

__all__ = ["SearchStats", "local_search"]

SMALL = 400  # graphs up to this many nodes get the rich neighbourhoods and memoization

Option = tuple[int, tuple[int, ...]]  # (processor, nodes of a block it admits)
Move = list[tuple[int, tuple[int, ...]]]


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


class _Moves:
    """Blocks and their per-processor admissible parts, computed once per graph."""

    def __init__(self, g: CostGraph, adm: np.ndarray, band_of: np.ndarray, small: bool) -> None:
        self.g = g
        self.adm = adm
        self.small = small
        self._opt_cache: dict[bytes, list[Option]] = {}
        self.members: list[np.ndarray] = []
        if len(g.coloc_names):
            self.members = group_members(g)
        order = np.argsort(band_of, kind="stable")
        cut = np.searchsorted(band_of[order], np.arange(int(band_of.max()) + 2))
        bands = [order[cut[i] : cut[i + 1]] for i in range(len(cut) - 1)]
        chains = _chains(g)
        n = g.num_nodes
        # Small graphs: every window of 2..8 consecutive nodes in execution order (segments of
        # a DNN; the part of a window a processor cannot run simply stays where it is).
        windows = (
            [np.arange(i, i + w, dtype=np.int64) for w in range(2, 9) for i in range(0, n - w + 1)]
            if small
            else []
        )
        singles = [np.asarray([v], dtype=np.int64) for v in range(n)]
        static = chains + [b for b in bands if len(b) > 1] + windows + singles
        self.static_blocks = [self.close(b) for b in static]
        self.static_opts = [o for b in self.static_blocks for o in self.options(b)]
        # atoms (chains, and single nodes outside chains) for the pair neighbourhood
        atom_of = np.full(n, -1, dtype=np.int64)
        atoms: list[np.ndarray] = []
        for c in chains:
            atom_of[c] = len(atoms)
            atoms.append(c)
        for v in np.flatnonzero(atom_of < 0).tolist():
            atom_of[v] = len(atoms)
            atoms.append(np.asarray([v], dtype=np.int64))
        self.pair_opts: list[tuple[list[Option], list[Option]]] = []
        if small:
            src = np.repeat(np.arange(n), np.diff(g.succ.ptr))
            a, b = atom_of[src], atom_of[g.succ.idx]
            keep = a != b
            if keep.any():
                pairs = np.unique(np.stack([a[keep], b[keep]], axis=1), axis=0)
                opts = [self.options(self.close(x)) for x in atoms]
                self.pair_opts = [(opts[int(x)], opts[int(y)]) for x, y in pairs.tolist()]
        self.first = g.proc_first_unit.tolist()
        self.count = g.proc_units.tolist()

    def close(self, block: np.ndarray) -> np.ndarray:
        """The block plus every colocation group it touches."""
        if not self.members:
            return block
        gs = np.unique(self.g.coloc[block])
        gs = gs[gs >= 0]
        if not len(gs):
            return block
        return np.unique(np.concatenate([block, *(self.members[int(x)] for x in gs)]))

    def options(self, block: np.ndarray) -> list[Option]:
        """``(processor, nodes)`` for every processor admitting part of the block (cached)."""
        k = block.tobytes()
        hit = self._opt_cache.get(k)
        if hit is None:
            sub = self.adm[block]
            hit = [
                (p, tuple(block[sub[:, p]].tolist()))
                for p in np.flatnonzero(sub.any(axis=0)).tolist()
            ]
            self._opt_cache[k] = hit
        return hit

    def units(self, p: int, used: list[bool]) -> list[int]:
        """Units of processor ``p`` a block may move to: the used ones plus one fresh one."""
        f, k = self.first[p], self.count[p]
        if k == 1:
            return [f]
        out: list[int] = []
        fresh = True
        for u in range(f, f + k):
            if used[u]:
                out.append(u)
            elif fresh:
                out.append(u)
                fresh = False
        return out

    def partition_opts(self, part_of: np.ndarray, nparts: int) -> list[Option]:
        """Options of the current partitions (and, on small graphs, prefixes and suffixes)."""
        order = np.argsort(part_of, kind="stable")
        cut = np.searchsorted(part_of[order], np.arange(nparts + 1))
        out: list[Option] = []
        for i in range(nparts):
            p = order[cut[i] : cut[i + 1]]
            out += self.options(self.close(p))
            if self.small:
                for k in range(1, len(p) - 1):
                    out += self.options(self.close(p[: k + 1]))
                    out += self.options(self.close(p[k:]))
        return out


class _Scorer:
    """``(primary, secondary, spread)`` keys of placements; counts distinct evaluations.

    Kicks and neighbourhood scans revisit the same placements often on small graphs; with
    ``memo`` a revisit costs a dictionary lookup instead of an evaluation.
    """

    def __init__(self, g: CostGraph, objective: str, memo: bool) -> None:
        self.c = _core.compiled(g)
        self.throughput = objective == "throughput"
        self.memo: dict[tuple[int, ...], tuple[float, float, float]] | None = {} if memo else None
        self.evaluations = 0

    def __call__(self, units: list[int]) -> tuple[float, float, float]:
        k: tuple[int, ...] = ()
        if self.memo is not None:
            k = tuple(units)
            hit = self.memo.get(k)
            if hit is not None:
                return hit
        r = _core.run(self.c, units, False, True)
        self.evaluations += 1
        if not r.feasible:
            key = (math.inf, math.inf, math.inf)
        elif self.throughput:
            key = (r.period, r.latency, r.spread)
        else:
            key = (r.latency, r.period, r.spread)
        if self.memo is not None:
            self.memo[k] = key
        return key


def local_search(
    g: CostGraph,
    adm: np.ndarray,
    band_of: np.ndarray,
    start: np.ndarray,
    objective: str,
    *,
    max_evals: int,
    seed: int = 0,
    patience: int | None = None,
) -> tuple[np.ndarray, Evaluation, SearchStats]:
    """Improve ``start`` (unit per node) until the budget is spent or the search stalls.

    ``patience`` (default 30 kicks on small graphs, 3 on large ones) bounds the kicks in a
    row that do not improve the best placement. Returns the best placement, its evaluation and
    counters (see the module docstring).
    """
    stats = SearchStats()
    small = g.num_nodes <= SMALL
    mv = _Moves(g, adm, band_of, small)
    rng = np.random.default_rng(seed)
    scorer = _Scorer(g, objective, memo=small)
    if patience is None:
        patience = 30 if small else 3
    c = _core.compiled(g)
    mem = _Memory(g)

    def parts(units: list[int]) -> tuple[np.ndarray, int]:
        po, pu = _core.epochs(c, units)
        return np.asarray(po, dtype=np.int64), len(pu)

    cur: list[int] = start.tolist()
    key = scorer(cur)
    cur_parts = parts(cur)
    best, best_key, best_parts = cur[:], key, cur_parts
    pos = {"single": 0, "pair": 0}

    def scan(name: str, opts_seq: list[object], expand: object) -> bool | None:
        """Try moves circularly from the last accepted position; take the first improvement.

        True on an improvement, False after a full cycle without one (or budget spent), None
        when there is no move at all. Large graphs scan once from the start.
        """
        nonlocal cur, key, cur_parts
        m = len(opts_seq)
        if m == 0:
            return None
        used = [False] * g.num_units
        for u in set(cur):
            used[u] = True
        any_move = False
        start_at = pos[name] % m if small else 0
        for i in range(m):
            j = (start_at + i) % m
            for move in expand(opts_seq[j], used):  # type: ignore[operator]
                if all(all(cur[v] == u for v in nodes) for u, nodes in move):
                    continue
                any_move = True
                if scorer.evaluations >= max_evals:
                    return False
                trial = cur[:]
                for u, nodes in move:
                    for v in nodes:
                        trial[v] = u
                if not mem.ok(trial, move):
                    continue
                tkey = scorer(trial)
                if _better(tkey, key):
                    cur, key = trial, tkey
                    cur_parts = parts(cur)
                    stats.improvements += 1
                    pos[name] = j + 1
                    return True
        return False if any_move else None

    def expand_single(opt: Option, used: list[bool]) -> Iterator[Move]:
        p, nodes = opt
        for u in mv.units(p, used):
            yield [(u, nodes)]

    def expand_pair(pair: tuple[list[Option], list[Option]], used: list[bool]) -> Iterator[Move]:
        oa, ob = pair
        tb = [(u, nb) for p, nb in ob for u in mv.units(p, used)]
        for p, na in oa:
            for ua in mv.units(p, used):
                for ub, nb in tb:
                    yield [(ua, na), (ub, nb)]

    stale = 0
    while scorer.evaluations < max_evals:
        singles: list[object] = [*mv.partition_opts(*cur_parts), *mv.static_opts]
        r1 = scan("single", singles, expand_single)
        r2: bool | None = None
        if not r1 and small:
            r2 = scan("pair", list(mv.pair_opts), expand_pair)
        if r1 or r2:
            if _better(key, best_key):
                best, best_key, best_parts = cur[:], key, cur_parts
                stale = 0
            continue
        if r1 is None and r2 is None:
            break  # nothing can move at all
        if scorer.evaluations >= max_evals or not math.isfinite(best_key[0]) or stale >= patience:
            break
        # Local optimum of both neighbourhoods: kick the best placement and descend again.
        stats.kicks += 1
        stale += 1
        cur = _kick(g, mv, best, best_parts, rng)
        key = scorer(cur)
        cur_parts = parts(cur)
        if _better(key, best_key):
            best, best_key, best_parts = cur[:], key, cur_parts
            stale = 0
    stats.evaluations = scorer.evaluations
    arr = np.asarray(best, dtype=np.int64)
    return arr, evaluate(g, arr), stats


class _Memory:
    """Unit memory checks for compound moves (only when some processor has a capacity)."""

    def __init__(self, g: CostGraph) -> None:
        self.g = g
        self.limited = bool(np.isfinite(g.proc_memory).any())
        self.cap = g.proc_memory[g.unit_proc]

    def ok(self, units: list[int], move: Move) -> bool:
        if not self.limited:
            return True
        arr = np.asarray(units, dtype=np.int64)
        g = self.g
        for u, _ in move:
            if not math.isfinite(self.cap[u]):
                continue
            on = arr == u
            if on.any() and g.weight_bytes[on].sum() + g.activation_bytes[on].max() > self.cap[u]:
                return False
        return True


def _better(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """Lexicographically strictly better, ignoring float noise below one part in 10^12."""
    for x, y in zip(a, b, strict=True):
        if x < y * (1 - 1e-12):
            return True
        if x > y * (1 + 1e-12):
            return False
    return False


def _kick(
    g: CostGraph,
    mv: _Moves,
    best: list[int],
    best_parts: tuple[np.ndarray, int],
    rng: np.random.Generator,
) -> list[int]:
    """One to three random block moves applied to the best placement."""
    cur = best[:]
    part_of, nparts = best_parts
    order = np.argsort(part_of, kind="stable")
    cut = np.searchsorted(part_of[order], np.arange(nparts + 1))
    pool = [mv.close(order[cut[i] : cut[i + 1]]) for i in range(nparts)] + mv.static_blocks
    for _ in range(int(rng.integers(1, 4))):
        block = pool[int(rng.integers(len(pool)))]
        used = [False] * g.num_units
        for u in set(cur):
            used[u] = True
        ts = [
            (u, nodes)
            for p, nodes in mv.options(block)
            for u in mv.units(p, used)
            if any(cur[v] != u for v in nodes)
        ]
        if ts:
            u, nodes = ts[int(rng.integers(len(ts)))]
            for v in nodes:
                cur[v] = u
    return cur
