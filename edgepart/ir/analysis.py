"""Graph queries on a :class:`~edgepart.ir.graph.Subgraph`: producers, consumers, op edges,
topological order, convexity, boundaries and live bytes.

All functions are pure and vectorized over the subgraph's columns, so they stay fast on
100,000-op graphs (see ``benchmarks/ir.py``). Nothing is cached on the subgraph; callers that
query repeatedly should keep the results.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Sequence

import numpy as np

from edgepart.errors import ModelFormatError
from edgepart.ir.graph import Subgraph
from edgepart.ir.values import Csr
from edgepart.schema import opnames

__all__ = [
    "boundary_tensors",
    "constant_producers",
    "consumers",
    "convexity_violation",
    "is_convex",
    "is_topologically_sorted",
    "live_bytes_lower_bound",
    "op_edges",
    "predecessors",
    "producers",
    "reachable",
    "successors",
    "tensor_lifetimes",
    "topological_order",
]


def producers(sg: Subgraph) -> np.ndarray:
    """Index of the op producing each tensor, or -1 (inputs, constants, unused).

    If a tensor has several producers (an invalid graph), the last one wins; use
    :func:`edgepart.ir.verify.verify_model` to find such defects.
    """
    prod = np.full(sg.num_tensors, -1, dtype=np.int64)
    outs = sg.op_outputs
    if len(outs.idx):
        prod[outs.idx] = outs.row_ids()
    return prod


def consumers(sg: Subgraph) -> Csr:
    """Per tensor, the ops reading it (ascending, each op once per tensor)."""
    ins = sg.op_inputs
    ops = ins.row_ids()
    t = ins.idx.astype(np.int64)
    keep = t >= 0
    t, ops = t[keep], ops[keep]
    key = np.unique(t * (sg.num_ops + 1) + ops)
    t, ops = key // (sg.num_ops + 1), key % (sg.num_ops + 1)
    ptr = np.zeros(sg.num_tensors + 1, dtype=np.int64)
    np.cumsum(np.bincount(t, minlength=sg.num_tensors), out=ptr[1:])
    return Csr(ptr, ops.astype(np.int64))


def op_edges(sg: Subgraph) -> tuple[np.ndarray, np.ndarray]:
    """Data edges between ops as (src, dst) arrays, deduplicated and sorted by (src, dst)."""
    ins = sg.op_inputs
    dst = ins.row_ids()
    t = ins.idx.astype(np.int64)
    keep = t >= 0
    src = producers(sg)[t[keep]]
    dst = dst[keep]
    ok = src >= 0
    n = sg.num_ops + 1
    key = np.unique(src[ok] * n + dst[ok])
    return key // n, key % n


def successors(sg: Subgraph) -> Csr:
    """Per op, the ops consuming any of its outputs."""
    src, dst = op_edges(sg)
    return _adjacency(sg.num_ops, src, dst)


def predecessors(sg: Subgraph) -> Csr:
    """Per op, the ops producing any of its inputs."""
    src, dst = op_edges(sg)
    order = np.lexsort((src, dst))
    return _adjacency(sg.num_ops, dst[order], src[order])


def reachable(adj: Csr, start: Sequence[int], n: int) -> np.ndarray:
    """Boolean mask of the ``n`` nodes reachable from ``start`` (included) along ``adj``
    (e.g. :func:`successors` for descendants, :func:`predecessors` for ancestors)."""
    seen = np.zeros(n, dtype=bool)
    seen[list(start)] = True
    stack = list(start)
    ptr, nxt = adj.ptr.tolist(), adj.idx.tolist()
    while stack:
        i = stack.pop()
        for j in nxt[ptr[i] : ptr[i + 1]]:
            if not seen[j]:
                seen[j] = True
                stack.append(j)
    return seen


def _adjacency(n: int, src: np.ndarray, dst: np.ndarray) -> Csr:
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    return Csr(ptr, dst)


def is_topologically_sorted(sg: Subgraph) -> bool:
    """True if every op comes after the producers of its inputs (a valid execution order)."""
    return _raw_edges_forward(sg)


def _raw_edges_forward(sg: Subgraph) -> bool:
    """Every (producer, consumer) pair goes forward in file order (no dedup needed)."""
    ins = sg.op_inputs
    t = ins.idx.astype(np.int64)
    keep = t >= 0
    src = producers(sg)[t[keep]]
    dst = ins.row_ids()[keep]
    return bool(np.all((src < dst) | (src < 0)))


def topological_order(sg: Subgraph) -> np.ndarray:
    """Ops in a topological order: the file's own order when valid, else Kahn's (stable).

    Raises
    ------
    ModelFormatError
        If the ops form a cycle (naming one op on it).
    """
    if _raw_edges_forward(sg):
        return np.arange(sg.num_ops, dtype=np.int64)
    src, dst = op_edges(sg)
    succ = _adjacency(sg.num_ops, src, dst)
    indeg = np.bincount(dst, minlength=sg.num_ops)
    ptr, nxt = succ.ptr.tolist(), succ.idx.tolist()
    deg = indeg.tolist()
    ready = [i for i in range(sg.num_ops) if deg[i] == 0]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        out.append(i)
        for j in nxt[ptr[i] : ptr[i + 1]]:
            deg[j] -= 1
            if deg[j] == 0:
                heapq.heappush(ready, j)
    if len(out) != sg.num_ops:
        stuck = next(i for i in range(sg.num_ops) if deg[i] > 0)
        raise ModelFormatError(f"the ops form a cycle through {sg.describe_op(stuck)}")
    return np.asarray(out, dtype=np.int64)


def convexity_violation(sg: Subgraph, ops: Iterable[int]) -> tuple[int, int, int] | None:
    """A witness that ``ops`` is not convex, or ``None`` if it is.

    Returns ``(a, outside, b)``: a path leaves the set at op ``a``, passes op ``outside``,
    and re-enters at op ``b``.
    """
    members = np.zeros(sg.num_ops, dtype=bool)
    idx = np.fromiter(ops, dtype=np.int64)
    members[idx] = True
    succ = successors(sg)
    ptr, nxt = succ.ptr.tolist(), succ.idx.tolist()
    # BFS from the set's outside successors through outside ops; reaching the set again breaks
    # convexity. ``via`` remembers where each outside op was first entered from.
    via: dict[int, tuple[int, int]] = {}
    queue: deque[int] = deque()
    mem = members.tolist()
    for a in idx.tolist():
        for j in nxt[ptr[a] : ptr[a + 1]]:
            if not mem[j] and j not in via:
                via[j] = (a, j)
                queue.append(j)
    while queue:
        o = queue.popleft()
        for j in nxt[ptr[o] : ptr[o + 1]]:
            if mem[j]:
                a, first = via[o]
                return a, first, j
            if j not in via:
                via[j] = via[o]
                queue.append(j)
    return None


def is_convex(sg: Subgraph, ops: Iterable[int]) -> bool:
    """True if no path leaves ``ops`` and comes back (the set can run as one unit)."""
    return convexity_violation(sg, ops) is None


def boundary_tensors(sg: Subgraph, ops: Sequence[int]) -> tuple[list[int], list[int]]:
    """(inputs, outputs) of an op set, each ascending by tensor index.

    Inputs are non-constant tensors read by the set and not produced in it (graph inputs,
    variables and tensors from other ops); outputs are tensors produced in the set and read
    outside it or listed as subgraph outputs.
    """
    member = np.zeros(sg.num_ops, dtype=bool)
    member[np.asarray(ops, dtype=np.int64)] = True
    prod = producers(sg)
    ins = sg.op_inputs
    rows = ins.row_ids()
    t = ins.idx.astype(np.int64)
    read = t[(t >= 0) & member[rows]]
    read = np.unique(read)
    external = (prod[read] < 0) | ~member[np.maximum(prod[read], 0)]
    inputs = read[external & ~sg.tensor_is_constant[read]]
    made = sg.op_outputs.idx[member[sg.op_outputs.row_ids()]].astype(np.int64)
    used_outside = np.zeros(sg.num_tensors, dtype=bool)
    outside_reads = t[(t >= 0) & ~member[rows]]
    used_outside[outside_reads] = True
    used_outside[sg.outputs.astype(np.int64)] = True
    outputs = np.unique(made[used_outside[made]])
    return inputs.tolist(), outputs.tolist()


# Ops that only reshape constant data into another constant form; runtimes fold them away.
_CONSTANT_TRANSFORMS = frozenset(
    {opnames.builtin_code("DEQUANTIZE"), opnames.builtin_code("DENSIFY")}
)


def constant_producers(sg: Subgraph) -> np.ndarray:
    """Per op: True for DEQUANTIZE/DENSIFY ops whose inputs are all constants or outputs of
    such ops (fp16 and sparse weights), which runtimes fold into the weights."""
    cand = np.isin(sg.op_builtin, list(_CONSTANT_TRANSFORMS))
    out = np.zeros(sg.num_ops, dtype=bool)
    if not cand.any():
        return out
    prod = producers(sg)
    const = sg.tensor_is_constant.copy()
    for i in topological_order(sg).tolist():
        if not cand[i]:
            continue
        ins = sg.op_inputs.row(i)
        ins = ins[ins >= 0]
        if all(const[t] or (prod[t] >= 0 and out[prod[t]]) for t in ins.tolist()):
            out[i] = True
    return out


def tensor_lifetimes(sg: Subgraph, order: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
    """Per tensor, the ``[first, last]`` step it is live in ``order`` (inclusive), or -1.

    Step ``k`` is the k-th op executed. Subgraph inputs and variables are live from step 0,
    subgraph outputs until the last step; constants are not live (they are not in the arena).
    """
    n = sg.num_ops
    order_arr = np.arange(n, dtype=np.int64) if order is None else np.asarray(order, np.int64)
    step = np.empty(n, dtype=np.int64)
    step[order_arr] = np.arange(len(order_arr))
    first = np.full(sg.num_tensors, -1, dtype=np.int64)
    last = np.full(sg.num_tensors, -1, dtype=np.int64)
    outs = sg.op_outputs
    if len(outs.idx):
        s = step[outs.row_ids()]
        first[outs.idx] = s
        np.maximum.at(last, outs.idx.astype(np.int64), s)
    ins = sg.op_inputs
    t = ins.idx.astype(np.int64)
    keep = t >= 0
    np.maximum.at(last, t[keep], step[ins.row_ids()[keep]])
    whole = np.zeros(sg.num_tensors, dtype=bool)
    whole[sg.inputs.astype(np.int64)] = True
    whole |= sg.tensor_is_variable
    first[whole] = 0
    last[whole] = max(n - 1, 0)
    last[sg.outputs.astype(np.int64)] = max(n - 1, 0)
    const = sg.tensor_is_constant & ~sg.tensor_is_variable
    first[const] = -1
    last[const] = -1
    # a produced tensor nobody reads is still written: it lives at its producing step
    dead = (first >= 0) & (last < first)
    last[dead] = first[dead]
    return np.stack([first, last], axis=1)


def live_bytes_lower_bound(sg: Subgraph, order: Sequence[int] | np.ndarray | None = None) -> int:
    """Max over execution steps of the bytes of simultaneously live tensors.

    No arena can be smaller than this for the given order (ignoring alignment and in-place
    reuse, which can only be exploited within an op's inputs and outputs).
    """
    life = tensor_lifetimes(sg, order)
    live = life[:, 0] >= 0
    if not live.any() or sg.num_ops == 0:
        return int(sg.tensor_nbytes[live].sum())
    size = sg.tensor_nbytes[live]
    delta = np.zeros(sg.num_ops + 1, dtype=np.int64)
    np.add.at(delta, life[live, 0], size)
    np.add.at(delta, life[live, 1] + 1, -size)
    return int(np.cumsum(delta)[:-1].max())
