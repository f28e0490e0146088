"""Iterated local search over placements, judged only by the evaluation function.

A *move* puts the admissible part of a block of nodes on one unit. Blocks are the current
partitions (with their prefixes and suffixes: shifting a partition boundary), maximal chains
(paths whose inner nodes have one predecessor and one successor), Band units, *segments*
(consecutive runs of the execution order of 2, 4, 8, ... nodes, half-overlapping: whole layers
and groups of layers of a network), windows of 2-8 consecutive nodes (small graphs) and single
nodes; each is closed under colocation. Targets are the units already in use plus one fresh
unit of each multi-unit processor. On small graphs a second neighbourhood moves two adjacent
atoms (chains or single nodes) at once, each to its own unit. Where memory binds, a move that
only the target unit's arena blocks also comes as an *ejection*: the block moves in and the
unit's activation-heavy nodes move out, at once (:func:`ejections`). Every candidate is scored
by the evaluation kernel (the C one when built, :mod:`~edgepart.placement._fastscore`) and accepted
only if it improves the key, so convexity, support, memory, colocation and the model options
hold throughout (partitions are always re-derived from the placement, and infeasible placements
score ``inf``).

The key is ``(latency, period, spread)`` or, for throughput, ``(period, balance, latency)``.
Makespan has wide plateaus: when two parallel branches are both critical, speeding up either one
alone changes nothing, so an improvement needing both looks like two useless moves; the spread
(the sum over nodes of their partition's end time) falls with each branch made faster, so such
compound improvements are found move by move. The period has plateaus too (several equally busy
units); the balance (the sum of squared unit and link loads) falls with each one relieved.

On graphs over :data:`SMALL` nodes the static blocks are *focused*: only blocks touching the
critical path (latency: the chain of partitions that finish last, each the latest of its inputs
and its unit's previous partition; throughput: the busiest unit, or every partition boundary when
a link is the bottleneck) are tried, with all partition-level moves; single nodes, windows, short
chains and boundary shifts only where units meet and only towards units their neighbours use.
Each chunk of moves is scored in one kernel call (incrementally, from the first epoch a move can
change) and the improving ones are applied in order of gain, each kept only if the placement
still improves, so one scan makes many independent improvements; for latency, a move to a
fresh unit that an earlier move of the scan has filled goes to the next empty unit of the same
processor instead, so one scan can open several units (growth from one processor would fill
them one scan each otherwise). On small graphs moves are scanned circularly, continuing after
the last accepted one (first improvement), and the move list is rebuilt after a few
improvements. Beyond :data:`HUGE` nodes single nodes and short
segments leave the static neighbourhood. When nothing improves, the search restarts from the
best placement after a seeded random kick (one to three random block moves). It stops after a
budget of evaluations, after ``patience`` kicks in a row that found nothing better, at a
``deadline`` if one is given, or at once when nothing can move. Without a deadline everything is
counted in evaluations, never wall time, so results are deterministic.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from edgepart.placement import _core
from edgepart.placement._fastscore import Scorer, better
from edgepart.placement.constraints import group_members
from edgepart.placement.costgraph import CostGraph
from edgepart.placement.evaluate import Evaluation, evaluate

__all__ = ["HUGE", "SMALL", "Neighbourhood", "SearchStats", "critical_nodes", "local_search"]

SMALL = 400  # graphs up to this many nodes get the rich neighbourhoods everywhere
HUGE = 20_000  # graphs above this many nodes get a coarse neighbourhood and no window search
_CHUNK = 2048  # moves per kernel call (the budget is checked between calls)
_REBUILD = 8  # small graphs: improvements before the move list is rebuilt


@dataclass
class SearchStats:
    evaluations: int = 0
    improvements: int = 0
    kicks: int = 0


def chains(g: CostGraph) -> list[np.ndarray]:
    """Maximal paths whose links are the only edge out of the source and into the target."""
    outd = np.diff(g.succ.ptr)
    ind = np.diff(g.pred.ptr)
    sp, si = g.succ.ptr, g.succ.idx
    out: list[np.ndarray] = []
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
        out.append(np.asarray(path, dtype=np.int64))
    return out


class _Options:
    """A list of ``(processor, nodes)`` options as CSR arrays, for vectorized move building."""

    def __init__(self, opts: list[tuple[int, np.ndarray]], local: list[bool] | None = None) -> None:
        self.proc = np.asarray([p for p, _ in opts], dtype=np.int64)
        # local options only go to units their neighbours use (or fresh ones): see moves()
        self.local = (
            np.asarray(local, dtype=bool) if local is not None else np.zeros(len(opts), bool)
        )
        lens = np.asarray([len(x) for _, x in opts], dtype=np.int64)
        self.ptr = np.zeros(len(opts) + 1, dtype=np.int64)
        np.cumsum(lens, out=self.ptr[1:])
        self.nodes = (
            np.concatenate([x for _, x in opts]).astype(np.int64)
            if opts
            else np.zeros(0, dtype=np.int64)
        )
        self.lens = lens

    def __len__(self) -> int:
        return len(self.proc)

    def subset(self, idx: np.ndarray) -> _Options:
        out = _Options.__new__(_Options)
        out.proc = self.proc[idx]
        out.local = self.local[idx]
        out.lens = self.lens[idx]
        out.ptr = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(out.lens, out=out.ptr[1:])
        starts = self.ptr[idx]
        out.nodes = _gather(self.nodes, starts, out.lens)
        return out


def _gather(arr: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Concatenation of ``arr[s:s+l]`` for each (s, l)."""
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=arr.dtype)
    off = np.zeros(len(lens), dtype=np.int64)
    np.cumsum(lens[:-1], out=off[1:])
    idx = np.repeat(starts - off, lens) + np.arange(total)
    out: np.ndarray = arr[idx]
    return out


class Neighbourhood:
    """Blocks and their per-processor admissible parts, computed once per graph."""

    def __init__(self, g: CostGraph, adm: np.ndarray, band_of: np.ndarray) -> None:
        self.g = g
        self.adm = adm
        self._opt_cache: dict[bytes, list[tuple[int, np.ndarray]]] = {}
        n = g.num_nodes
        self.small = n <= SMALL
        self.members: list[np.ndarray] = []
        if len(g.coloc_names):
            self.members = group_members(g)
        order = np.argsort(band_of, kind="stable")
        cut = np.searchsorted(band_of[order], np.arange(int(band_of.max()) + 2))
        bands = [order[cut[i] : cut[i + 1]] for i in range(len(cut) - 1)]
        ch = chains(g)
        windows = (
            [np.arange(i, i + w, dtype=np.int64) for w in range(2, 9) for i in range(0, n - w + 1)]
            if self.small
            else []
        )
        segments: list[np.ndarray] = []
        # beyond HUGE nodes (past the range the search is tuned for) whole layers and up move,
        # single nodes only through partition boundary shifts: the neighbourhood stays small
        w = 16 if self.small else 8 if n <= HUGE else 64
        while w < n:
            step = max(1, w // 2)
            segments += [np.arange(i, min(n, i + w), dtype=np.int64) for i in range(0, n, step)]
            w *= 2
        singles = [np.asarray([v], dtype=np.int64) for v in range(n)] if n <= HUGE else []
        static = ch + [b for b in bands if len(b) > 1] + segments + windows + singles
        blocks = [self.close(b) for b in static] if self.members else static
        self.static_blocks = blocks
        n_seg = len(ch) + len([b for b in bands if len(b) > 1]) + len(segments)
        # singles, windows and short chains are boundary adjustments; segments and bands move
        # whole regions anywhere
        local = [i >= n_seg or len(b) <= (8 if i < len(ch) else 32) for i, b in enumerate(blocks)]
        self.static = _options_of_blocks(blocks, local, adm)
        # node -> static options containing it (for the focused neighbourhood)
        owner = np.repeat(np.arange(len(self.static)), self.static.lens)
        srt = np.argsort(self.static.nodes, kind="stable")
        self._by_node_opt = owner[srt]
        self._by_node_ptr = np.searchsorted(self.static.nodes[srt], np.arange(n + 1))
        # atoms (chains, and single nodes outside chains) for the pair neighbourhood
        self.pairs: list[tuple[_Options, _Options]] = []
        if self.small:
            atom_of = np.full(n, -1, dtype=np.int64)
            atoms: list[np.ndarray] = []
            for c in ch:
                atom_of[c] = len(atoms)
                atoms.append(c)
            for v in np.flatnonzero(atom_of < 0).tolist():
                atom_of[v] = len(atoms)
                atoms.append(np.asarray([v], dtype=np.int64))
            src = np.repeat(np.arange(n), np.diff(g.succ.ptr))
            a, b = atom_of[src], atom_of[g.succ.idx]
            keep = a != b
            if keep.any():
                prs = np.unique(np.stack([a[keep], b[keep]], axis=1), axis=0)
                ao = [_Options(self.options(self.close(x))) for x in atoms]
                self.pairs = [(ao[int(x)], ao[int(y)]) for x, y in prs.tolist()]
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

    def options(self, block: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """``(processor, nodes)`` for every processor admitting part of the block (cached)."""
        k = block.tobytes()
        hit = self._opt_cache.get(k)
        if hit is None:
            sub = self.adm[block]
            hit = [(p, block[sub[:, p]]) for p in np.flatnonzero(sub.any(axis=0)).tolist()]
            if len(self._opt_cache) < 200_000:
                self._opt_cache[k] = hit
        return hit

    def closed_options(self, block: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """:meth:`options` of the block closed under colocation (cached by the open block)."""
        k = b"c" + block.tobytes()
        hit = self._opt_cache.get(k)
        if hit is None:
            hit = self.options(self.close(block))
            if len(self._opt_cache) < 200_000:
                self._opt_cache[k] = hit
        return hit

    def targets(self, used: np.ndarray) -> list[list[int]]:
        """Per processor: the units a block may move to (used ones plus one fresh one)."""
        out = []
        for f, k in zip(self.first, self.count, strict=True):
            if k == 1:
                out.append([f])
                continue
            us = [u for u in range(f, f + k) if used[u]]
            fresh = next((u for u in range(f, f + k) if not used[u]), None)
            out.append(us + ([fresh] if fresh is not None else []))
        return out

    def partition_options(
        self, part_of: np.ndarray, nparts: int, focus: np.ndarray | None
    ) -> _Options:
        """Options of the current partitions; prefixes and suffixes of the focused ones."""
        order = np.argsort(part_of, kind="stable")
        cut = np.searchsorted(part_of[order], np.arange(nparts + 1))
        blocks: list[np.ndarray] = []
        loc: list[bool] = []
        for i in range(nparts):
            p = order[cut[i] : cut[i + 1]]
            blocks.append(p)
            loc.append(False)
            if len(p) > 2 and (self.small or (focus is not None and focus[i])):
                ks: list[int] = list(range(1, len(p) - 1))
                if len(p) > (40 if self.small else 8):  # split points at powers of two
                    ks = sorted(
                        {
                            k
                            for j in range(1, 20)
                            for k in (2**j - 1, len(p) - 2**j - 1)
                            if 0 < k < len(p) - 1
                        }
                    )
                for k in ks:
                    blocks += [p[: k + 1], p[k:]]
                    loc += [True, True]
        if self.members:
            blocks = [self.close(b) for b in blocks]
        return _options_of_blocks(blocks, loc, self.adm)

    def touching(self, nodes: np.ndarray) -> np.ndarray:
        """Indices of the static options containing any of ``nodes`` (ascending)."""
        starts = self._by_node_ptr[nodes]
        lens = self._by_node_ptr[nodes + 1] - starts
        mark = np.zeros(len(self.static), dtype=bool)
        mark[_gather(self._by_node_opt, starts, lens)] = True
        out: np.ndarray = np.flatnonzero(mark)
        return out

    def focused_static(self, nodes: np.ndarray, boundary: np.ndarray | None = None) -> _Options:
        """Static options touching any of ``nodes``; local ones (boundary adjustments) only when
        they touch ``boundary`` (nodes with a neighbour on another unit), when given."""
        if self.small:
            return self.static
        idx = self.touching(nodes)
        if boundary is not None:
            idx = idx[~self.static.local[idx]]
            bidx = self.touching(boundary)
            idx = np.union1d(idx, bidx[self.static.local[bidx]])
        return self.static.subset(idx)


def _options_of_blocks(blocks: list[np.ndarray], local: list[bool], adm: np.ndarray) -> _Options:
    """Every block's per-processor admissible parts as options (block by block, processors in
    order), vectorized: the same as :meth:`Neighbourhood.options` on each block."""
    lens = np.asarray([len(b) for b in blocks], dtype=np.int64)
    nodes = np.concatenate(blocks).astype(np.int64) if blocks else np.zeros(0, np.int64)
    bstart = np.zeros(len(blocks), dtype=np.int64)
    if len(blocks) > 1:
        np.cumsum(lens[:-1], out=bstart[1:])
    npr = adm.shape[1]
    keys: list[np.ndarray] = []
    opt_lens: list[np.ndarray] = []
    opt_starts: list[np.ndarray] = []
    parts: list[np.ndarray] = []
    base = 0
    for p in range(npr):
        m = adm[nodes, p]
        cnt = np.add.reduceat(m.astype(np.int64), bstart) if len(nodes) else np.zeros(0, np.int64)
        cnt[lens == 0] = 0
        have = np.flatnonzero(cnt > 0)
        keys.append(have * npr + p)
        kept = nodes[m]
        parts.append(kept)
        # start of each kept option inside the concatenation of all processors' kept nodes
        st0 = np.zeros(len(have), dtype=np.int64)
        if len(have) > 1:
            np.cumsum(cnt[have][:-1], out=st0[1:])
        opt_lens.append(cnt[have])
        opt_starts.append(st0 + base)
        base += len(kept)
    key = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    ln = np.concatenate(opt_lens) if opt_lens else np.zeros(0, np.int64)
    st = np.concatenate(opt_starts) if opt_starts else np.zeros(0, np.int64)
    allk = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    order = np.argsort(key, kind="stable")  # block-major, processors in order
    out = _Options.__new__(_Options)
    out.proc = key[order] % npr
    out.lens = ln[order].astype(np.int64)
    out.ptr = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(out.lens, out=out.ptr[1:])
    out.nodes = _gather(allk, st[order], out.lens)
    out.local = (
        np.asarray(local, dtype=bool)[key[order] // npr] if len(order) else np.zeros(0, bool)
    )
    return out


def moves(
    opts: _Options,
    targets: list[list[int]],
    cur: np.ndarray,
    g: CostGraph | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR moves (ptr, node, unit): every option to every target unit of its processor, minus
    moves that change nothing; ordered by option, then unit.

    With ``g``, *local* options (boundary adjustments: single nodes, windows, short chains,
    partition prefixes and suffixes) only go to units their neighbours (predecessors and
    successors) use or to fresh units: moving a few nodes to a unit nothing around them uses
    only adds partitions and transfers, unless it opens a new one for a parallel branch.
    """
    if not len(opts):
        z = np.zeros(0, dtype=np.int64)
        return np.zeros(1, dtype=np.int64), z, z
    o_list, u_list = [], []
    for p, ts in enumerate(targets):
        idx = np.flatnonzero(opts.proc == p)
        if not len(idx) or not ts:
            continue
        o_list.append(np.repeat(idx, len(ts)))
        u_list.append(np.tile(np.asarray(ts, dtype=np.int64), len(idx)))
    if not o_list:
        z = np.zeros(0, dtype=np.int64)
        return np.zeros(1, dtype=np.int64), z, z
    o = np.concatenate(o_list)
    u = np.concatenate(u_list)
    if g is not None:
        small_o = opts.local[o]
        if small_o.any():
            used_before = np.bincount(cur, minlength=g.num_units) > 0
            # neighbour units of every node: (node, unit) pairs over edges both ways
            src = np.repeat(np.arange(g.num_nodes), np.diff(g.succ.ptr))
            a = np.concatenate([src, g.succ.idx])
            b = np.concatenate([cur[g.succ.idx], cur[src]])
            nu = g.num_units
            near = np.zeros(g.num_nodes * nu, dtype=bool)
            near[a * nu + b] = True
            # an option may go to u if some node of it has a neighbour on u
            lens = opts.lens[o]
            first = opts.ptr[o]
            ok = ~small_o | ~used_before[u]
            cand = np.flatnonzero(small_o & ~ok)
            if len(cand):
                nodes_c = _gather(opts.nodes, first[cand], lens[cand])
                hit = near[nodes_c * nu + np.repeat(u[cand], lens[cand])].astype(np.int64)
                cp = np.zeros(len(cand) + 1, dtype=np.int64)
                np.cumsum(lens[cand], out=cp[1:])
                ok[cand] = np.add.reduceat(hit, cp[:-1]) > 0
            o, u = o[ok], u[ok]
    srt = np.lexsort((u, o))
    o, u = o[srt], u[srt]
    lens = opts.lens[o]
    nodes = _gather(opts.nodes, opts.ptr[o], lens)
    unit = np.repeat(u, lens)
    # drop moves where every node is already on the target
    diff = (cur[nodes] != unit).astype(np.int64)
    ptr = np.zeros(len(o) + 1, dtype=np.int64)
    np.cumsum(lens, out=ptr[1:])
    changed = np.add.reduceat(diff, ptr[:-1]) > 0 if len(diff) else np.zeros(0, bool)
    changed &= lens > 0
    if not changed.all():
        keep = np.repeat(changed, lens)
        nodes, unit = nodes[keep], unit[keep]
        lens = lens[changed]
        ptr = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=ptr[1:])
    return ptr, nodes, unit


def pair_moves(
    pairs: list[tuple[_Options, _Options]], targets: list[list[int]], cur: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two adjacent atoms at once, each to a target unit of one of its processors (without
    ``cur``, moves that change nothing are kept: they score as no improvement)."""
    ptr, nodes, units = [0], [], []
    for oa, ob in pairs:
        tb = [
            (u, ob.nodes[ob.ptr[j] : ob.ptr[j + 1]])
            for j in range(len(ob))
            for u in targets[int(ob.proc[j])]
        ]
        for i in range(len(oa)):
            na = oa.nodes[oa.ptr[i] : oa.ptr[i + 1]]
            for ua in targets[int(oa.proc[i])]:
                for ub, nb in tb:
                    if cur is not None and (cur[na] == ua).all() and (cur[nb] == ub).all():
                        continue
                    nodes.append(na)
                    units.append(np.full(len(na), ua, dtype=np.int64))
                    nodes.append(nb)
                    units.append(np.full(len(nb), ub, dtype=np.int64))
                    ptr.append(ptr[-1] + len(na) + len(nb))
    if len(ptr) == 1:
        z = np.zeros(0, dtype=np.int64)
        return np.zeros(1, dtype=np.int64), z, z
    return (
        np.asarray(ptr, dtype=np.int64),
        np.concatenate(nodes).astype(np.int64),
        np.concatenate(units).astype(np.int64),
    )


def boundary(g: CostGraph, units: np.ndarray) -> np.ndarray:
    """``[N]`` bool: nodes with a predecessor or successor on another unit."""
    src = np.repeat(np.arange(g.num_nodes), np.diff(g.succ.ptr))
    diff = units[src] != units[g.succ.idx]
    out = np.zeros(g.num_nodes, dtype=bool)
    out[src[diff]] = True
    out[g.succ.idx[diff]] = True
    return out


def critical_nodes(
    g: CostGraph, scorer: Scorer, cur: np.ndarray, throughput: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(critical node mask, part_of, critical partition mask, number of partitions)``.

    Latency: walk back from the partition that ends last, each time to whichever of its input
    partitions and its unit's previous partition ends last. Throughput: the partitions of the
    busiest unit, or every partition with a cross-partition edge when a link is the bottleneck.
    """
    part_of, part_unit, start, end = scorer.detail(cur)
    nq = len(part_unit)
    crit_q = np.zeros(nq, dtype=bool)
    if nq == 0:
        return np.zeros(g.num_nodes, bool), part_of, crit_q, 0
    src = np.repeat(np.arange(g.num_nodes), np.diff(g.succ.ptr))
    ps, pc = part_of[src], part_of[g.succ.idx]
    cross = ps != pc
    if throughput:
        load = np.bincount(part_unit, weights=end - start, minlength=g.num_units)
        u = int(np.argmax(load))
        ev_period = scorer.score(cur, spread=False)
        per = ev_period[0]
        if load[u] >= per * (1 - 1e-9):
            crit_q[part_unit == u] = True
        else:
            crit_q[np.unique(np.concatenate([ps[cross], pc[cross]]))] = True
    else:
        key = np.unique(pc[cross] * nq + ps[cross])
        a, b = key // nq, key % nq
        pptr = np.searchsorted(a, np.arange(nq + 1))
        prev_same = np.full(nq, -1, dtype=np.int64)
        last: dict[int, int] = {}
        for q in range(nq):
            uq = int(part_unit[q])
            prev_same[q] = last.get(uq, -1)
            last[uq] = q
        q = int(np.argmax(end))
        while q >= 0 and not crit_q[q]:
            crit_q[q] = True
            cands = b[pptr[q] : pptr[q + 1]].tolist()
            if prev_same[q] >= 0:
                cands.append(int(prev_same[q]))
            if not cands or start[q] <= 0.0:
                break
            q = max(cands, key=lambda x: (end[x], x))
    return crit_q[part_of], part_of, crit_q, nq


def _build(
    g: CostGraph,
    mv: Neighbourhood,
    sc: Scorer,
    cur: np.ndarray,
    tg: list[list[int]],
    throughput: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The single-block moves from ``cur``: partition-level ones, then the static blocks
    (focused on the critical path on large graphs)."""
    if mv.small:
        po, pu = _core.epochs(sc.c, cur.tolist())
        part_of, nq = np.asarray(po, dtype=np.int64), len(pu)
        popts = mv.partition_options(part_of, nq, None)
        stat = mv.static
    else:
        crit, part_of, crit_q, nq = critical_nodes(g, sc, cur, throughput)
        popts = mv.partition_options(part_of, nq, crit_q)
        stat = mv.focused_static(np.flatnonzero(crit), np.flatnonzero(crit & boundary(g, cur)))
    gl = None if mv.small else g
    p1, n1, u1 = moves(popts, tg, cur, gl)
    p2, n2, u2 = moves(stat, tg, cur, gl)
    ptr = np.concatenate([p1, p2[1:] + p1[-1]])
    nodes = np.concatenate([n1, n2])
    units = np.concatenate([u1, u2])
    p3, n3, u3 = ejections(g, mv, cur, ptr, nodes, units)
    return (
        np.concatenate([ptr, p3[1:] + ptr[-1]]),
        np.concatenate([nodes, n3]),
        np.concatenate([units, u3]),
    )


EJECTIONS_PER_BUILD = 512


def ejections(
    g: CostGraph,
    mv: Neighbourhood,
    cur: np.ndarray,
    ptr: np.ndarray,
    nodes: np.ndarray,
    units: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compound moves for the moves ``(ptr, nodes, units)`` that only the target's arena blocks.

    A unit's memory holds its weights plus its largest activation. When a block's weights would
    fit on a full unit but the unit's largest activations leave no room, moving the block alone
    is infeasible, and so is any first step towards it: moving the activation-heavy nodes off
    first makes the plan slower without freeing anything until the last of them has gone. The
    compound move does both at once: the block goes to the unit, and the unit's nodes whose
    activation exceeds the room left (with their colocation groups) go, in one variant each, to
    at most two of: the unit the block came from (a swap), the unit most of their neighbours
    use when they fit there as it stands, and the first unit of the first processor without a
    memory limit (processors that do not admit them are skipped). At most
    :data:`EJECTIONS_PER_BUILD` blocked moves per call, in move order; the evaluation judges
    the results like any other move (returned as CSR moves in the same format).
    """
    z = np.zeros(0, dtype=np.int64)
    empty = (np.zeros(1, dtype=np.int64), z, z)
    cap = g.proc_memory[g.unit_proc]
    m = len(ptr) - 1
    if m == 0 or not np.isfinite(cap).any():
        return empty
    nu = g.num_units
    wts, act = g.weight_bytes, g.activation_bytes
    w = np.bincount(cur, weights=wts, minlength=nu)
    arena = np.zeros(nu, dtype=np.int64)
    np.maximum.at(arena, cur, act)
    tgt = units[ptr[:-1]]
    moved = cur[nodes] != units
    new_w = w[tgt] + np.add.reduceat(np.where(moved, wts[nodes], 0), ptr[:-1])
    a_b = np.maximum.reduceat(np.where(moved, act[nodes], 0), ptr[:-1])
    c = cap[tgt]
    blocked = (new_w + np.maximum(arena[tgt], a_b) > c) & (new_w + a_b <= c) & (arena[tgt] > a_b)
    cand = np.flatnonzero(blocked)[:EJECTIONS_PER_BUILD]
    if not len(cand):
        return empty
    order = np.argsort(-act, kind="stable")
    on_unit: dict[int, np.ndarray] = {}  # a unit's nodes, largest activation first
    free_units = [
        int(g.proc_first_unit[p]) for p in range(g.num_procs) if not np.isfinite(g.proc_memory[p])
    ]
    out_ptr, out_nodes, out_units = [0], [], []
    for i in cand.tolist():
        u = int(tgt[i])
        blk = nodes[ptr[i] : ptr[i + 1]]
        room = float(c[i] - new_w[i])
        if u not in on_unit:
            on_unit[u] = order[cur[order] == u]
        mine = on_unit[u]
        k = int(np.searchsorted(-act[mine], -room, side="left"))
        ej = mv.close(mine[:k]) if k else mine[:0]
        ej = ej[~np.isin(ej, blk)]
        if not len(ej):
            continue
        src = np.unique(cur[blk[moved[ptr[i] : ptr[i + 1]]]])
        dests = [int(src[0])] if len(src) == 1 else []
        # the unit most of the ejected nodes' neighbours use, if they fit there as it is
        nb = np.concatenate([g.succ.take(ej).idx, g.pred.take(ej).idx])
        nbu = cur[nb]
        nbu = nbu[(nbu != u) & ~np.isin(nb, blk)]
        if len(nbu):
            d = int(np.bincount(nbu, minlength=nu).argmax())
            if act[ej].max() <= arena[d] and w[d] + wts[ej].sum() + arena[d] <= cap[d]:
                dests.append(d)
        ok = [d for d in dict.fromkeys(dests + free_units[:1]) if mv.adm[ej, g.unit_proc[d]].all()]
        for dest in ok[:2]:
            out_nodes += [blk, ej]
            out_units += [units[ptr[i] : ptr[i + 1]], np.full(len(ej), dest, dtype=np.int64)]
            out_ptr.append(out_ptr[-1] + len(blk) + len(ej))
    if len(out_ptr) == 1:
        return empty
    return (
        np.asarray(out_ptr, dtype=np.int64),
        np.concatenate(out_nodes).astype(np.int64),
        np.concatenate(out_units).astype(np.int64),
    )


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
    scorer: Scorer | None = None,
    nbh: Neighbourhood | None = None,
    deadline: float | None = None,
) -> tuple[np.ndarray, Evaluation, SearchStats]:
    """Improve ``start`` (unit per node) until the budget is spent or the search stalls.

    ``patience`` (default 30 kicks on small graphs, 4 on large ones) bounds the kicks in a
    row that do not improve the best placement. ``deadline`` (a ``time.perf_counter()`` value)
    also stops it, for the exact solver's time limit; default runs never look at the clock.
    Returns the best placement, its evaluation and counters (see the module docstring).
    """
    stats = SearchStats()
    sc = scorer if scorer is not None else Scorer(g, objective)
    e0 = sc.evaluations
    mv = nbh if nbh is not None else Neighbourhood(g, adm, band_of)
    small = mv.small
    rng = np.random.default_rng(seed)
    throughput = objective == "throughput"
    if patience is None:
        patience = 30 if g.num_nodes < 100 else 8 if small else 4

    def spent() -> int:
        if deadline is not None and time.perf_counter() > deadline:
            return max_evals
        return sc.evaluations - e0

    cur = np.asarray(start, dtype=np.int64).copy()
    key = sc.score(cur)
    best, best_key = cur.copy(), key
    pos = {"single": 0, "pair": 0}

    def scan(name: str, built: tuple[np.ndarray, np.ndarray, np.ndarray]) -> bool | None:
        """Improve over the moves; True on an improvement, False after a full cycle without one
        (or budget spent), None when there is no move at all.

        Small graphs: first improvement, circularly from the last accepted position. Large
        graphs: every move is scored against the current placement, then the improving ones are
        applied one after another in order of their own gain, each kept only if the placement
        still improves (one evaluation each): a scan then makes many independent improvements
        (moves in different layers) instead of one.
        """
        nonlocal cur, key
        ptr, nodes, units = built
        m = len(ptr) - 1
        if m == 0:
            return None
        if not small:
            gained = False
            i = 0
            # units empty at the start of the scan: moves to them stand for "a fresh unit"
            # (latency only: for throughput, measured with an earlier budget split, opening
            # several units in one scan ended in worse local optima, e.g. the ResNet50
            # operator graph of placement_scale.py 44 % slower)
            fresh = np.zeros(g.num_units, dtype=bool)
            if not throughput:
                fresh[:] = True
                fresh[cur] = False

            while i < m:
                left = max_evals - spent()
                if left <= 0:
                    break
                j = min(m, i + min(_CHUNK, left))
                a, b = int(ptr[i]), int(ptr[j])
                _, kk, _ = sc.scan(
                    cur, ptr[i : j + 1] - a, nodes[a:b], units[a:b], key, first=False
                )
                good = [
                    i + int(x)
                    for x in np.lexsort((kk[:, 2], kk[:, 1], kk[:, 0])).tolist()
                    if better(tuple(kk[x]), key)
                ]
                i = j
                touched = np.zeros(g.num_nodes, dtype=bool)
                for x in good:
                    if spent() >= max_evals:
                        break
                    nd = nodes[ptr[x] : ptr[x + 1]]
                    if touched[nd].any():
                        continue
                    trial = cur.copy()
                    trial[nd] = _refresh(g, cur, nd, units[ptr[x] : ptr[x + 1]], fresh)
                    tk = sc.score(trial)
                    if better(tk, key):
                        cur, key = trial, tk
                        touched[nd] = True
                        stats.improvements += 1
                        gained = True
            return gained
        s0 = pos[name] % m
        for lo, hi in ((s0, m), (0, s0)):
            i = lo
            while i < hi:
                left = max_evals - spent()
                if left <= 0:
                    return False
                j = min(hi, i + min(_CHUNK, left))
                a, b = int(ptr[i]), int(ptr[j])
                idx, _, _ = sc.scan(cur, ptr[i : j + 1] - a, nodes[a:b], units[a:b], key)
                if idx >= 0:
                    k = i + idx
                    nd = nodes[ptr[k] : ptr[k + 1]]
                    cur = cur.copy()
                    cur[nd] = units[ptr[k] : ptr[k + 1]]
                    key = sc.score(cur)
                    stats.improvements += 1
                    pos[name] = k + 1
                    return True
                i = j
        return False

    stale = 0
    built: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    since = 0  # improvements since the move list was built (small graphs reuse it a while)
    pair_cache: dict[tuple[tuple[int, ...], ...], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    while spent() < max_evals:
        used = np.zeros(g.num_units, dtype=bool)
        used[np.unique(cur)] = True
        tg = mv.targets(used)
        if built is None or not small or since >= _REBUILD:
            built = _build(g, mv, sc, cur, tg, throughput)
            since = 0
        r1 = scan("single", built)
        if r1 is False and small and since > 0:
            built, since = None, 0  # stale list: rebuild and rescan before calling it optimal
            continue
        if r1:
            since += 1
        r2: bool | None = None
        if not r1 and small and mv.pairs:
            tkey = tuple(tuple(t) for t in tg)
            if tkey not in pair_cache:
                if len(pair_cache) > 64:
                    pair_cache.clear()
                pair_cache[tkey] = pair_moves(mv.pairs, tg, None)
            r2 = scan("pair", pair_cache[tkey])
            if r2:
                built = None
        if r1 or r2:
            if better(key, best_key):
                best, best_key = cur.copy(), key
                stale = 0
            continue
        if r1 is None and r2 is None:
            break  # nothing can move at all
        if spent() >= max_evals or not math.isfinite(best_key[0]) or stale >= patience:
            break
        # Local optimum of the neighbourhoods: kick the best placement and descend again.
        stats.kicks += 1
        stale += 1
        cur = _kick(g, mv, best, rng, sc)
        key = sc.score(cur)
        built = None
        if better(key, best_key):
            best, best_key = cur.copy(), key
            stale = 0
    stats.evaluations = spent()
    return best, evaluate(g, best), stats


def _refresh(
    g: CostGraph, cur: np.ndarray, nodes: np.ndarray, to: np.ndarray, fresh: np.ndarray
) -> np.ndarray:
    """``to`` with every target that was a fresh unit when the moves were built, and has since
    been filled by another move, replaced by a unit of the same processor that is still empty
    (units of a processor are identical): one scan can then open several units, not one."""
    if not fresh[to].any():
        return to
    rest = np.ones(g.num_nodes, dtype=bool)
    rest[nodes] = False
    used = np.zeros(g.num_units, dtype=bool)
    used[cur[rest]] = True
    stale = np.unique(to[fresh[to] & used[to]])
    if not len(stale):
        return to
    out = to.copy()
    taken = used.copy()
    taken[to] = True
    for t in stale.tolist():
        p = int(g.unit_proc[t])
        f = int(g.proc_first_unit[p])
        empty = np.flatnonzero(~taken[f : f + int(g.proc_units[p])])
        if len(empty):
            out[to == t] = f + int(empty[0])
            taken[f + int(empty[0])] = True
    result: np.ndarray = out
    return result


def _kick(
    g: CostGraph, mv: Neighbourhood, best: np.ndarray, rng: np.random.Generator, sc: Scorer
) -> np.ndarray:
    """One to three random block moves applied to the best placement."""

    cur = best.copy()
    po, pu = _core.epochs(sc.c, best.tolist())
    part_of = np.asarray(po, dtype=np.int64)
    order = np.argsort(part_of, kind="stable")
    cut = np.searchsorted(part_of[order], np.arange(len(pu) + 1))
    pool = [mv.close(order[cut[i] : cut[i + 1]]) for i in range(len(pu))]
    nstat = len(mv.static_blocks)
    for _ in range(int(rng.integers(1, 4))):
        r = int(rng.integers(len(pool) + nstat))
        block = pool[r] if r < len(pool) else mv.static_blocks[r - len(pool)]
        used = np.zeros(g.num_units, dtype=bool)
        used[np.unique(cur)] = True
        tg = mv.targets(used)
        ts = [
            (u, nodes) for p, nodes in mv.options(block) for u in tg[p] if (cur[nodes] != u).any()
        ]
        if ts:
            u, nodes = ts[int(rng.integers(len(ts)))]
            cur[nodes] = u
    out: np.ndarray = cur
    return out
