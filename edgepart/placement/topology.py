"""Graph utilities on integer arrays: CSR adjacency, stable topological order, cycle finding.

Nodes are ``0..n-1`` and edges are given as two arrays ``src``, ``dst``. Everything here is
linear in nodes plus edges, so 100,000-node graphs take milliseconds.
"""

from __future__ import annotations

import heapq

import numpy as np

from edgepart.ir.values import Csr

__all__ = ["csr_from_pairs", "find_cycle", "stable_topological_order"]


def csr_from_pairs(n: int, rows: np.ndarray, cols: np.ndarray, *, unique: bool = True) -> Csr:
    """CSR with row ``r`` listing the ``cols`` paired with ``r`` (sorted, optionally deduped).

    Parameters
    ----------
    n : int
        Number of rows.
    rows, cols : numpy.ndarray
        Integer arrays of equal length.
    unique : bool
        Drop repeated ``(row, col)`` pairs.

    Returns
    -------
    Csr
        ``ptr`` of length ``n + 1`` (int64) and ``idx`` (int64).
    """
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    if len(rows):
        key = rows * max(int(cols.max()) + 1, 1) + cols
        order = np.argsort(key, kind="stable")
        rows, cols, key = rows[order], cols[order], key[order]
        if unique:
            keep = np.ones(len(key), dtype=bool)
            keep[1:] = key[1:] != key[:-1]
            rows, cols = rows[keep], cols[keep]
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=ptr[1:])
    return Csr(ptr, cols)


def stable_topological_order(succ: Csr, indegree: np.ndarray) -> np.ndarray:
    """Kahn's algorithm taking the smallest ready index first.

    A list that is already topologically sorted comes back unchanged, so the given order is kept
    wherever the dependencies allow it.

    Returns
    -------
    numpy.ndarray
        The order (int64). It is shorter than the node count when the graph has a cycle.
    """
    n = len(indegree)
    deg = indegree.astype(np.int64).tolist()
    ptr = succ.ptr.tolist()
    idx = succ.idx.tolist()
    # Fast path: the given order is topological (the common case for exported graphs).
    pos_ok = True
    for v in range(n):
        for j in range(ptr[v], ptr[v + 1]):
            if idx[j] <= v:
                pos_ok = False
                break
        if not pos_ok:
            break
    if pos_ok:
        return np.arange(n, dtype=np.int64)
    ready = [v for v in range(n) if deg[v] == 0]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:
        v = heapq.heappop(ready)
        out.append(v)
        for j in range(ptr[v], ptr[v + 1]):
            w = idx[j]
            deg[w] -= 1
            if deg[w] == 0:
                heapq.heappush(ready, w)
    return np.asarray(out, dtype=np.int64)


def find_cycle(pred: Csr, candidates: np.ndarray) -> list[int]:
    """Return one directed cycle ``[v0, v1, ..., v0]`` among ``candidates`` (nodes Kahn left).

    Every node Kahn's algorithm could not order has a predecessor it could not order either, so
    walking backwards along such predecessors must revisit a node, which closes a cycle.
    """
    inside = np.zeros(len(pred), dtype=bool)
    inside[candidates] = True
    ptr = pred.ptr.tolist()
    idx = pred.idx.tolist()
    seen: dict[int, int] = {}
    path: list[int] = []
    v = int(candidates[0])
    while v not in seen:
        seen[v] = len(path)
        path.append(v)
        v = next(idx[j] for j in range(ptr[v], ptr[v + 1]) if inside[idx[j]])
    cyc = path[seen[v] :][::-1]
    return [*cyc, cyc[0]]
