"""Edge-cut mode: a balanced k-way split with few transferred bytes, then repair and evaluate.

Two partitioners produce ``k`` blocks, balanced by each node's fastest admissible latency:

* ``interval`` (default): cut the execution order into ``k`` contiguous intervals with a
  dynamic program that minimizes the bytes of tensors alive across the cuts, subject to every
  block weighing at most ``(1 + imbalance)`` times the average (or the heaviest node, if that is
  more). Intervals of a topological order are always convex.
* ``metis``: METIS 5 k-way through ``pymetis`` on the undirected graph with tensor bytes as edge
  weights (an optional baseline; imported only when asked for).

The repair step makes the result a valid plan. (1) Convexity: blocks are ranked by their mean
position in the execution order and each node's rank is raised to the largest rank among its
predecessors, so ranks never decrease along an edge; every block is then convex and the block
graph is a DAG (a path leaving a block can only reach higher ranks). (2) Units: blocks take
distinct units where possible, heaviest block first, each picking the unit where it would run
fastest. (3) Support and memory: nodes a block's unit cannot run go to their fastest admissible
processor, and over-full units are relieved (:func:`~.heuristic.repair_memory`). The result is
judged by the same evaluation function as every other plan.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from edgepart.errors import UsageError
from edgepart.placement.constraints import admissible
from edgepart.placement.costgraph import CostGraph
from edgepart.placement.evaluate import Evaluation, evaluate
from edgepart.placement.heuristic import repair_memory
from edgepart.placement.starts import fix_colocation

__all__ = ["EDGE_CUT_METHODS", "EdgeCutResult", "edge_cut", "transferred_bytes"]

EDGE_CUT_METHODS = ("interval", "metis")


@dataclass(frozen=True, eq=False)
class EdgeCutResult:
    units: np.ndarray
    blocks: np.ndarray  # block per node after the convexity repair
    raw_blocks: np.ndarray  # the partitioner's own output
    raw_cut_bytes: int
    cut_bytes: int  # after repair, between units
    method: str
    evaluation: Evaluation


def transferred_bytes(g: CostGraph, label: np.ndarray) -> int:
    """Bytes moved between blocks: each tensor once per other block that reads it."""
    tc = g.tensor_consumers
    t = tc.row_ids()
    src = g.tensor_src[t]
    keep = src >= 0
    t, cons, src = t[keep], tc.idx[keep], src[keep]
    cross = label[cons] != label[src]
    pairs = np.unique(np.stack([t[cross], label[cons][cross]]), axis=1) if cross.any() else None
    return 0 if pairs is None else int(g.tensor_bytes[pairs[0]].sum())


def _interval_blocks(g: CostGraph, w: np.ndarray, k: int, imbalance: float) -> np.ndarray:
    n = g.num_nodes
    prefix = np.concatenate([[0.0], np.cumsum(w)])
    cap = max((1.0 + imbalance) * prefix[-1] / k, float(w.max()))
    # alive[c]: bytes of tensors produced before position c and read at or after it.
    tc = g.tensor_consumers
    t = tc.row_ids()
    src = g.tensor_src[t]
    ok = src >= 0
    last = np.full(len(g.tensor_src), -1, dtype=np.int64)
    np.maximum.at(last, t[ok], tc.idx[ok])
    prod = np.flatnonzero((g.tensor_src >= 0) & (last >= 0))
    delta = np.zeros(n + 1)
    np.add.at(delta, g.tensor_src[prod] + 1, g.tensor_bytes[prod])
    np.add.at(delta, last[prod] + 1, -g.tensor_bytes[prod])
    alive = np.cumsum(delta)
    inf = float("inf")
    dp = np.full((k + 1, n + 1), inf)
    arg = np.zeros((k + 1, n + 1), dtype=np.int64)
    dp[0, 0] = 0.0
    for j in range(1, k + 1):
        # dp[j][i] = alive[i] (if i < n) + min dp[j-1][i'] over i' with weight(i'..i) <= cap,
        # a sliding-window minimum since the window's left end only moves right.
        dq: deque[int] = deque()
        left = 0
        prev = dp[j - 1]
        for i in range(1, n + 1):
            dq_push = i - 1
            while dq and prev[dq[-1]] >= prev[dq_push]:
                dq.pop()
            dq.append(dq_push)
            while prefix[i] - prefix[left] > cap + 1e-12 * cap:
                left += 1
            while dq and dq[0] < left:
                dq.popleft()
            if dq and prev[dq[0]] < inf:
                dp[j, i] = prev[dq[0]] + (alive[i] if i < n else 0.0)
                arg[j, i] = dq[0]
    best_j = int(np.argmin(dp[1:, n])) + 1  # fewer blocks if k is more than the graph needs
    label = np.zeros(n, dtype=np.int64)
    i = n
    for j in range(best_j, 0, -1):
        i0 = int(arg[j, i])
        label[i0:i] = j - 1
        i = i0
    return label


def _metis_blocks(g: CostGraph, w: np.ndarray, k: int, imbalance: float, seed: int) -> np.ndarray:
    try:
        import pymetis  # optional (edgepart[metis]): loaded only when method "metis" runs
    except ImportError as err:
        raise UsageError(
            "edge-cut method 'metis' needs the optional package pymetis; install it with "
            "'pip install pymetis' (or 'pip install edgepart[metis]'), or use method 'interval'"
        ) from err
    tc = g.tensor_consumers
    t = tc.row_ids()
    s = g.tensor_src[t]
    ok = s >= 0
    a, b, byt = s[ok], tc.idx[ok], g.tensor_bytes[t[ok]]
    n = g.num_nodes
    key = np.minimum(a, b) * n + np.maximum(a, b)
    uk, inv = np.unique(key, return_inverse=True)
    ew = np.bincount(inv, weights=byt)
    ua, ub = uk // n, uk % n
    rows = np.concatenate([ua, ub])
    cols = np.concatenate([ub, ua])
    wts = np.concatenate([ew, ew])
    order = np.lexsort((cols, rows))
    rows, cols, wts = rows[order], cols[order], wts[order]
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=ptr[1:])
    # METIS wants positive integer weights: bytes scaled to at most ~1e6, at least 1.
    ewi = np.maximum(1, np.round(wts / max(1.0, wts.max() / 1e6))).astype(np.int64)
    vwi = np.maximum(1, np.round(w / max(w.max() / 1e6, 1e-30))).astype(np.int64)
    opts = pymetis.Options(seed=seed, ufactor=int(imbalance * 1000))
    res = pymetis.part_graph(
        k,
        adjacency=pymetis.CSRAdjacency(ptr, cols),
        vweights=vwi.tolist(),
        eweights=ewi.tolist(),
        options=opts,
    )
    return np.asarray(res.vertex_part, dtype=np.int64)


def _monotone(g: CostGraph, label: np.ndarray) -> np.ndarray:
    """Rank blocks by mean position, then raise ranks along edges (see the module docstring)."""
    n = g.num_nodes
    nb = int(label.max()) + 1
    mean = np.bincount(label, weights=np.arange(n), minlength=nb) / np.maximum(
        np.bincount(label, minlength=nb), 1
    )
    rank_of = np.empty(nb, dtype=np.int64)
    rank_of[np.argsort(mean, kind="stable")] = np.arange(nb)
    r = rank_of[label].tolist()
    for v, ps in enumerate(g.pred.tolist()):
        for u in ps:
            if r[u] > r[v]:
                r[v] = r[u]
    return np.asarray(r, dtype=np.int64)


def edge_cut(
    g: CostGraph, k: int, *, method: str = "interval", imbalance: float = 0.05, seed: int = 0
) -> EdgeCutResult:
    """Balanced ``k``-way placement with few transferred bytes (see the module docstring).

    Raises
    ------
    UsageError
        ``k < 1``, an unknown method, or ``metis`` without ``pymetis``.
    PlacementInfeasibleError
        A node fits no processor.
    """
    if k < 1:
        raise UsageError(f"edge-cut needs k >= 1 blocks, got {k}")
    if method not in EDGE_CUT_METHODS:
        raise UsageError(
            f"unknown edge-cut method {method!r}; valid: {', '.join(EDGE_CUT_METHODS)}"
        )
    adm = admissible(g)
    lat = np.where(adm, g.latency, np.inf)
    w = lat.min(axis=1)
    k = min(k, g.num_nodes)
    raw = (
        _interval_blocks(g, w, k, imbalance)
        if method == "interval"
        else _metis_blocks(g, w, k, imbalance, seed)
    )
    blocks = _monotone(g, raw)
    nb = int(blocks.max()) + 1
    # Distinct units per block, heaviest block first, each where it runs fastest.
    taken = np.zeros(g.num_units, dtype=np.int64)
    unit_of_block = np.zeros(nb, dtype=np.int64)
    bw = np.bincount(blocks, weights=w, minlength=nb)
    for b in np.argsort(-bw, kind="stable").tolist():
        members = blocks == b
        best, best_key = 0, (np.inf, np.inf, 0)
        for u in range(g.num_units):
            p = int(g.unit_proc[u])
            col = np.where(np.isfinite(lat[members, p]), lat[members, p], 10 * w[members])
            key = (float(taken[u]), float(col.sum()), u)
            if key < best_key:
                best, best_key = u, key
        unit_of_block[b] = best
        taken[best] += 1
    units = unit_of_block[blocks]
    bad = ~adm[np.arange(g.num_nodes), g.unit_proc[units]]
    units[bad] = g.proc_first_unit[np.argmin(lat[bad], axis=1)]
    units = repair_memory(g, adm, fix_colocation(g, units))
    return EdgeCutResult(
        units=units,
        blocks=blocks,
        raw_blocks=raw,
        raw_cut_bytes=transferred_bytes(g, raw),
        cut_bytes=transferred_bytes(g, units),
        method=method,
        evaluation=evaluate(g, units),
    )
