"""Greedy offset assignment: place buffers one by one in a given order at a chosen gap.

For each buffer the placer collects the already-placed buffers it conflicts with, sorted by
offset, and walks the gaps between them (a gap starts at the running maximum end of the buffers
below it, rounded up to the alignment). Three fit rules:

``tflite``
    TFLite's ``SimpleMemoryArena::Allocate`` exactly: keep a gap if it fits and its aligned
    length is below the *unaligned* length of the best gap kept so far (TFLite compares these
    two quantities; reproduced on purpose); if none fits, go above the highest end.
``best``
    The fitting gap with the smallest aligned length (lowest offset on ties).
``first``
    The lowest fitting gap (TFLM's ``GreedyMemoryPlanner``).

Buffers with a fixed offset are placed first, zero-sized buffers get offset 0 and block nothing.
Speed: small conflict sets are scanned in plain Python from precomputed adjacency lists, large
ones with NumPy; both paths give identical offsets (tested). The earlier-placed conflicts of
each buffer are picked from per-buffer Python lists when the adjacency is small enough to hold
that way (a NumPy pass per placement cost more than the whole loop on 60 buffers).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from edgepart.errors import UsageError
from edgepart.memory._arena import Arena
from edgepart.memory._libstdcxx import std_sort

__all__ = ["FITS", "ORDERS", "get_order", "place", "register_order"]

FITS = ("tflite", "best", "first")

_SMALL = 48  # conflict sets up to this size are scanned in Python, larger ones in NumPy

OrderFn = Callable[[Arena], np.ndarray]
ORDERS: dict[str, OrderFn] = {}


def register_order(name: str) -> Callable[[OrderFn], OrderFn]:
    """Decorator adding a placement order (``Arena -> local indices``) to :data:`ORDERS`."""

    def deco(fn: OrderFn) -> OrderFn:
        ORDERS[name] = fn
        return fn

    return deco


def get_order(name: str) -> OrderFn:
    """The order registered as ``name``; the error lists the valid names."""
    try:
        return ORDERS[name]
    except KeyError:
        raise UsageError(
            f"unknown placement order {name!r}; valid orders: {', '.join(sorted(ORDERS))}"
        ) from None


def _sort(*keys: np.ndarray) -> np.ndarray:
    """Indices sorted by ``keys`` (most significant first), ties by index."""
    n = len(keys[0])
    return np.lexsort((np.arange(n), *reversed(keys)))


@register_order("tflite")
def _order_tflite(a: Arena) -> np.ndarray:
    """``CreateTensorAllocationVector``: whole-run buffers first by index, then size descending,
    then first use, sorted the way libstdc++'s (unstable) ``std::sort`` leaves ties, from
    TFLite's input sequence (by first use, then index). An explicit ``rank`` wins."""
    if a.rank is not None:
        return _sort(a.rank)
    seq = _sort(a.lower).tolist()
    whole, size, lower = a.whole_run.tolist(), a.size.tolist(), a.lower.tolist()

    def less(x: int, y: int) -> bool:
        if whole[x]:
            return x < y if whole[y] else True
        if whole[y]:
            return False
        if size[x] != size[y]:
            return size[x] > size[y]  # type: ignore[no-any-return]
        return lower[x] < lower[y]  # type: ignore[no-any-return]

    return np.array(std_sort(seq, less), dtype=np.int64)


@register_order("size")
def _order_size(a: Arena) -> np.ndarray:
    return _sort(-a.size, a.lower)


@register_order("area")
def _order_area(a: Arena) -> np.ndarray:
    return _sort(-(a.size * (a.upper - a.lower)), -a.size)


@register_order("length")
def _order_length(a: Arena) -> np.ndarray:
    """XLA's temporal order: longest lifetime first."""
    return _sort(-(a.upper - a.lower), -a.size)


@register_order("start")
def _order_start(a: Arena) -> np.ndarray:
    """Program order: earliest first use first, larger first on ties."""
    return _sort(a.lower, -a.size)


@register_order("degree")
def _order_degree(a: Arena) -> np.ndarray:
    """Most conflicts first (TVM USMP's ``greedy_by_conflicts``), then size."""
    return _sort(-a.degree, -a.size)


@register_order("pressure")
def _order_pressure(a: Arena) -> np.ndarray:
    """Largest live total over the lifetime first, then width, then area (MiniMalloc TWA)."""
    width = a.upper - a.lower
    return _sort(-a.pressure, -width, -(a.size * width))


def place(arena: Arena, order: np.ndarray, fit: str) -> np.ndarray:
    """Offsets (local, int64) from placing ``arena``'s buffers greedily in ``order``."""
    if fit not in FITS:
        raise UsageError(f"unknown fit {fit!r}; valid fits: {', '.join(FITS)}")
    n = arena.n
    size_l, align_l = arena.size.tolist(), arena.align.tolist()
    off_np = np.full(n, -1, dtype=np.int64)
    end_np = np.zeros(n, dtype=np.int64)
    seg: list[tuple[int, int]] = [(-1, 0)] * n
    fixed = arena.fixed >= 0
    for i in np.flatnonzero(fixed).tolist():
        o = int(arena.fixed[i])
        off_np[i], end_np[i] = o, o + size_l[i]
        seg[i] = (o, o + size_l[i])
    # Fixed buffers count as placed before everything; only conflicts placed earlier matter:
    # with the adjacency as lists, those whose segment is set (offsets are never negative).
    lists = arena.adjacency_lists
    earlier = None
    if lists is None:
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        rank[fixed] = -1
        earlier = _earlier_lists(arena, rank)
    adj = arena.adjacency
    scan = _SCANS[fit]
    done = fixed.tolist()
    for i in order.tolist():
        if done[i]:
            continue
        s = size_l[i]
        if s == 0:
            off_np[i] = 0
            done[i] = True
            continue
        segs: list[tuple[int, int]] | None = None
        if lists is not None:
            segs = [sj for j in lists[i] if (sj := seg[j])[0] >= 0]
        elif earlier is not None:
            segs = [seg[j] for j in earlier[i]]
        if segs is not None and len(segs) <= _SMALL:
            o = scan(sorted(segs), s, align_l[i])
        else:
            arr = (
                adj[1][adj[0][i] : adj[0][i + 1]] if adj is not None else _mask_neighbors(arena, i)
            )
            o = _scan_numpy(off_np, end_np, arr, s, align_l[i], fit)
        off_np[i], end_np[i] = o, o + s
        seg[i] = (o, o + s)
        done[i] = True
    return off_np


def _earlier_lists(arena: Arena, rank: np.ndarray) -> list[list[int]] | None:
    """Per buffer, its conflicting buffers that come earlier in the placement order."""
    adj = arena.adjacency
    if adj is None:
        return None
    ptr, nbr = adj
    rows = np.repeat(np.arange(arena.n), np.diff(ptr))
    keep = rank[nbr] < rank[rows]
    counts = np.bincount(rows[keep], minlength=arena.n)
    p = np.concatenate([[0], np.cumsum(counts)]).tolist()
    flat = nbr[keep].tolist()
    return [flat[p[i] : p[i + 1]] for i in range(arena.n)]


def _mask_neighbors(arena: Arena, i: int) -> np.ndarray:
    """Conflicts of ``i`` without materialized adjacency: a vectorized overlap test."""
    hit = (arena.lower < arena.upper[i]) & (arena.upper > arena.lower[i]) & arena.active
    hit[i] = False
    ptr, nbr = arena.extra_adjacency
    extra = nbr[ptr[i] : ptr[i + 1]]
    if len(extra):
        hit[extra] = arena.active[extra]
    return np.flatnonzero(hit)


def _scan_tflite(segs: list[tuple[int, int]], size: int, align: int) -> int:
    best, best_fit, cur = -1, -1, 0
    for o, e in segs:
        ac = -(-cur // align) * align
        if ac + size <= o and (best < 0 or o - ac < best_fit):
            best, best_fit = ac, o - cur
        if e > cur:
            cur = e
    return best if best >= 0 else -(-cur // align) * align


def _scan_best(segs: list[tuple[int, int]], size: int, align: int) -> int:
    best, best_gap, cur = -1, -1, 0
    for o, e in segs:
        ac = -(-cur // align) * align
        if ac + size <= o and (best < 0 or o - ac < best_gap):
            best, best_gap = ac, o - ac
        if e > cur:
            cur = e
    return best if best >= 0 else -(-cur // align) * align


def _scan_first(segs: list[tuple[int, int]], size: int, align: int) -> int:
    cur = 0
    for o, e in segs:
        ac = -(-cur // align) * align
        if ac + size <= o:
            return ac
        if e > cur:
            cur = e
    return -(-cur // align) * align


_SCANS = {"tflite": _scan_tflite, "best": _scan_best, "first": _scan_first}


def _scan_numpy(
    off_np: np.ndarray, end_np: np.ndarray, nb: np.ndarray, size: int, align: int, fit: str
) -> int:
    """The same gap walk as the ``_scan_*`` functions, vectorized over a large conflict set."""
    o = off_np[nb]
    placed = o >= 0
    o, e = o[placed], end_np[nb][placed]
    if not len(o):
        return 0
    k = np.argsort(o, kind="stable")
    o, e = o[k], e[k]
    prefix = np.maximum.accumulate(e)
    cur = np.concatenate([[0], prefix[:-1]])
    ac = -(-cur // align) * align
    fits = np.flatnonzero(ac + size <= o)
    if not len(fits):
        return int(-(-int(prefix[-1]) // align) * align)
    if fit == "first":
        return int(ac[fits[0]])
    if fit == "best":
        return int(ac[fits[np.argmin(o[fits] - ac[fits])]])
    segs = list(
        zip(o[fits].tolist(), (o[fits] - cur[fits]).tolist(), ac[fits].tolist(), strict=True)
    )
    best, best_fit = -1, -1
    for oo, raw, aa in segs:
        if best < 0 or oo - aa < best_fit:
            best, best_fit = aa, raw
    return best
