"""TFLite's partitioning of a node set into independent subsets ("epochs"), re-implemented exactly.

This mirrors ``PartitionGraphIntoIndependentNodeSubsets`` (``tflite/graph_info.cc``) and the
selection/replacement steps a delegate runs around it (``GraphPartitionHelper`` in
``tflite/delegates/utils.cc``, ``Subgraph::PreviewDelegatePartitioning`` and
``Subgraph::ReplaceNodeSubsetsWithDelegateKernels`` in ``tflite/core/subgraph.cc``).

TFLite's algorithm: every node is *delegated* (in the supported set) or *cpu*. Epochs are built
one at a time. Sweeping the nodes in plan order, the first ready node fixes the epoch's kind; every
ready, unassigned node of that kind joins. Greedy mode repeats the sweep until a pass adds nothing;
non-greedy mode ends the epoch at the first node it cannot add after adding one. Tensors no node
produces are always ready. Boundary tensors are collected per subset and finally sorted ascending
and deduplicated.

TFLite implements this with repeated O(n) sweeps (quadratic in the worst case). Here the same
result is computed in (near) linear time:

* Greedy, plan order topological (every producer and control-edge source precedes its consumer,
  as in every file the converter writes): a greedy epoch is a fixpoint, so consecutive epochs
  alternate kinds and a node's epoch is a longest path with weight 1 on edges that change kind:
  ``epoch(v) = max(base(v), max_u epoch(u) + [kind(u) != kind(v)])``. Within an epoch nodes are
  added in plan order.
* Non-greedy, topological: epochs are the maximal runs of one kind in plan order.
* Anything else (control edges pointing backwards, node fusion disabled): an event-driven
  simulation of the sweeps with two heaps (this sweep / next sweep), O(E log n).

All three are checked against a literal port of the C++ loop in ``tests/claim/``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from edgepart.errors import ModelFormatError
from edgepart.ir.values import Csr

__all__ = [
    "NodeSubset",
    "delegate_partitions",
    "nodes_of_first_n_largest",
    "partition_independent_subsets",
    "side_effect_control_edges",
]

SubsetKind = Literal["delegated", "cpu"]


@dataclass(frozen=True, slots=True)
class NodeSubset:
    """One epoch: nodes of a single kind and the tensors crossing its boundary.

    ``nodes`` are node (row) indices in the order TFLite adds them, which is the order a CPU
    subset's nodes take in the rebuilt execution plan. ``input_tensors`` include always-ready
    tensors (graph inputs and constants); both tensor lists are sorted ascending, deduplicated.
    """

    kind: SubsetKind
    nodes: tuple[int, ...]
    input_tensors: tuple[int, ...]
    output_tensors: tuple[int, ...]


def side_effect_control_edges(might_have_side_effect: np.ndarray) -> list[tuple[int, int]]:
    """Chain the side-effecting nodes in plan order, as TFLite does when no metadata edges exist.

    TFLite adds these edges only in greedy mode and only when the model carries no
    ``model_control_dependencies`` metadata.
    """
    idx = np.flatnonzero(np.asarray(might_have_side_effect, dtype=bool)).tolist()
    return list(itertools.pairwise(idx))


def partition_independent_subsets(
    node_inputs: Csr,
    node_outputs: Csr,
    supported: np.ndarray,
    *,
    num_tensors: int,
    graph_outputs: Sequence[int] = (),
    greedy: bool = True,
    control_edges: Sequence[tuple[int, int]] = (),
    disable_node_fusion: bool = False,
) -> list[NodeSubset]:
    """Split the nodes into epochs exactly as ``PartitionGraphIntoIndependentNodeSubsets``.

    Parameters
    ----------
    node_inputs, node_outputs
        Tensor indices per node, rows in execution-plan order; -1 marks an omitted optional input.
    supported
        Boolean per node: True for nodes the delegate may take.
    num_tensors
        Number of tensors in the subgraph.
    graph_outputs
        The subgraph's output tensors (added to the producing subset's outputs).
    greedy
        TFLite's default; False matches ``experimental_disable_delegate_clustering=True``.
    control_edges
        ``(from, to)`` node pairs; ``to`` cannot run before ``from``. Pass the metadata edges, or
        :func:`side_effect_control_edges` in greedy mode (TFLite's fallback).
    disable_node_fusion
        Every subset holds one node (``experimental_preserve_all_tensors=True``).

    Returns
    -------
    list of NodeSubset
        In execution order; CPU subsets are included.

    Raises
    ------
    ModelFormatError
        If some node can never become ready (a dependency cycle), where TFLite fails too.

    Examples
    --------
    The header comment's example: ``0->1->2*->3*``, ``1->4``, ``4->5``, ``3->5``.

    >>> ins = Csr.from_rows([[0], [1], [2], [3], [2], [5, 4]])
    >>> outs = Csr.from_rows([[1], [2], [3], [4], [5], [6]])
    >>> sup = np.array([0, 0, 1, 1, 0, 0], bool)
    >>> [s.nodes for s in partition_independent_subsets(ins, outs, sup, num_tensors=7)]
    [(0, 1, 4), (2, 3), (5,)]
    >>> edges = [(3, 4)]
    >>> [s.nodes for s in partition_independent_subsets(
    ...     ins, outs, sup, num_tensors=7, control_edges=edges)]
    [(0, 1), (2, 3), (4, 5)]
    """
    deps = _Deps.build(node_inputs, node_outputs, num_tensors, control_edges)
    return _partition(deps, supported, graph_outputs, greedy, disable_node_fusion)


def nodes_of_first_n_largest(
    subsets: Sequence[NodeSubset], n: int | None = None, min_nodes_per_partition: int = 0
) -> list[int]:
    """``GetNodesOfFirstNLargestPartitions``: the nodes of the largest delegated subsets.

    Delegated subsets are sorted by node count, largest first; at most ``n`` are taken (all when
    ``n`` is None), stopping at the first one smaller than ``min_nodes_per_partition``. Ties keep
    preview order: TFLite uses ``std::sort``, which libstdc++ implements stably (insertion sort)
    up to 16 partitions; beyond that the tie order is platform-dependent.
    """
    parts = [s for s in subsets if s.kind == "delegated"]
    parts.sort(key=lambda s: -len(s.nodes))
    limit = len(parts) if n is None else min(n, len(parts))
    out: list[int] = []
    for s in parts[:limit]:
        if len(s.nodes) < min_nodes_per_partition:
            break
        out.extend(s.nodes)
    return out


def delegate_partitions(
    node_inputs: Csr,
    node_outputs: Csr,
    supported: np.ndarray,
    *,
    num_tensors: int,
    graph_outputs: Sequence[int] = (),
    greedy: bool = True,
    control_edges: Sequence[tuple[int, int]] = (),
    max_partitions: int | None = None,
    min_nodes_per_partition: int = 0,
    disable_node_fusion: bool = False,
) -> list[NodeSubset]:
    """The whole delegate step: preview, keep the largest partitions, then replace.

    Runs the partitioner on ``supported``, selects nodes with :func:`nodes_of_first_n_largest`
    and re-partitions on that reduced set, as ``ReplaceNodeSubsetsWithDelegateKernels`` does.
    Returns the final subsets (CPU ones included); each ``delegated`` one becomes a DELEGATE node.
    When nothing is selected the result is empty: TFLite ignores empty replacement sets and
    leaves the execution plan as it was.
    """
    sup = np.asarray(supported, dtype=bool)
    deps = _Deps.build(node_inputs, node_outputs, num_tensors, control_edges)
    if not sup.any():
        return []
    order, epoch = _epochs(deps, sup, greedy, disable_node_fusion)
    # The selection of nodes_of_first_n_largest, on arrays: delegated epochs by size, largest
    # first, ties in preview order, capped, cut at the first one below the minimum.
    sizes = np.bincount(epoch[sup], minlength=int(epoch.max()) + 1)
    delegated = np.flatnonzero(sizes)
    ranked = delegated[np.argsort(-sizes[delegated], kind="stable")]
    if max_partitions is not None:
        ranked = ranked[: max(max_partitions, 0)]
    small = np.flatnonzero(sizes[ranked] < min_nodes_per_partition)
    if len(small):
        ranked = ranked[: small[0]]
    if len(ranked) == 0:
        return []
    if len(ranked) < len(delegated):
        sup = sup & np.isin(epoch, ranked)
        order, epoch = _epochs(deps, sup, greedy, disable_node_fusion)
    # else: the replacement run sees the same node set as the preview, hence the same epochs
    return _assemble(deps, sup, order, epoch, graph_outputs)


# ---------------------------------------------------------------------------------------- helpers


@dataclass(frozen=True, eq=False)
class _Deps:
    """Dependency structure shared by the preview and the replacement run."""

    node_inputs: Csr
    num_tensors: int
    producer: np.ndarray  # producing node per tensor, -1 if always ready
    src: np.ndarray  # unique dependency edges, sorted by (dst, src)
    dst: np.ndarray
    forward: bool  # every edge points forward in plan order

    @property
    def n(self) -> int:
        return len(self.node_inputs)

    @staticmethod
    def build(
        node_inputs: Csr,
        node_outputs: Csr,
        num_tensors: int,
        control_edges: Sequence[tuple[int, int]],
    ) -> _Deps:
        n = len(node_inputs)
        if len(node_outputs) != n:
            raise ValueError(f"{n} input rows but {len(node_outputs)} output rows")
        producer = _producers(node_outputs, num_tensors)
        src, dst = _dependency_edges(node_inputs, producer, control_edges, n)
        forward = bool((src < dst).all())
        return _Deps(node_inputs, num_tensors, producer, src, dst, forward)


def _partition(
    deps: _Deps,
    supported: np.ndarray,
    graph_outputs: Sequence[int],
    greedy: bool,
    no_fusion: bool,
) -> list[NodeSubset]:
    typ = np.asarray(supported, dtype=bool)
    if typ.shape != (deps.n,):
        raise ValueError(f"{deps.n} nodes but supported has shape {typ.shape}")
    if deps.n == 0:
        return []
    order, epoch = _epochs(deps, typ, greedy, no_fusion)
    return _assemble(deps, typ, order, epoch, graph_outputs)


def _epochs(
    deps: _Deps, typ: np.ndarray, greedy: bool, no_fusion: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(nodes in the order TFLite adds them, epoch per node)."""
    if deps.forward and not no_fusion:
        epoch = _greedy_epochs(typ, deps.src, deps.dst, deps.n) if greedy else _run_epochs(typ)
        return np.argsort(epoch, kind="stable"), epoch
    return _simulate(typ, deps.src, deps.dst, deps.n, greedy, no_fusion)


def _unique(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values (cheaper than ``np.unique`` for plain int64 keys)."""
    if len(a) < 2:
        return a
    a = np.sort(a)
    keep = np.empty(len(a), dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def _producers(node_outputs: Csr, num_tensors: int) -> np.ndarray:
    """Producing node per tensor (-1 for always-ready tensors); the first producer wins."""
    producer = np.full(num_tensors, -1, dtype=np.int64)
    t = node_outputs.idx.astype(np.int64)
    rows = node_outputs.row_ids()
    ok = t >= 0
    t, rows = t[ok][::-1], rows[ok][::-1]
    producer[t] = rows  # reversed so that, on duplicates, the lowest node index is written last
    return producer


def _dependency_edges(
    node_inputs: Csr, producer: np.ndarray, control_edges: Sequence[tuple[int, int]], n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Unique (src, dst) node pairs from data dependencies plus control edges, sorted by dst."""
    t = node_inputs.idx.astype(np.int64)
    rows = node_inputs.row_ids()
    ok = t >= 0
    src = producer[t[ok]]
    dst = rows[ok]
    keep = src >= 0
    src, dst = src[keep], dst[keep]
    if len(control_edges):
        ce = np.asarray(control_edges, dtype=np.int64).reshape(-1, 2)
        if ce.size and (ce.min() < 0 or ce.max() >= n):
            raise ValueError(f"control edge outside 0..{n - 1}")
        src = np.concatenate([src, ce[:, 0]])
        dst = np.concatenate([dst, ce[:, 1]])
    key = _unique(dst * n + src)
    return key % n, key // n


def _run_epochs(typ: np.ndarray) -> np.ndarray:
    """Non-greedy epochs on a topological plan: maximal runs of one kind."""
    change = np.empty(len(typ), dtype=np.int64)
    change[0] = 0
    change[1:] = typ[1:] != typ[:-1]
    return np.cumsum(change)


def _greedy_epochs(typ: np.ndarray, src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """Greedy epochs on a topological plan via the alternating-kind longest-path recurrence.

    Nodes with exactly one dependency inherit their predecessor's epoch (+1 on a kind change);
    those chains are resolved by vectorized pointer jumping, so the Python loop only visits
    nodes with two or more dependencies.
    """
    indeg = np.bincount(dst, minlength=n)
    roots = np.flatnonzero(indeg == 0)
    first_kind = bool(typ[roots[0]])  # the first ready node in plan order fixes epoch 0's kind
    base = np.where(typ == first_kind, 0, 1).astype(np.int64)
    if len(src) == 0:
        return base
    weight = (typ[src] != typ[dst]).astype(np.int64)
    # Forest of single-dependency links: epoch(v) = epoch(root(v)) + offset(v).
    parent = np.arange(n, dtype=np.int64)
    offset = np.zeros(n, dtype=np.int64)
    single = indeg[dst] == 1
    parent[dst[single]] = src[single]
    offset[dst[single]] = weight[single]
    while True:
        grand = parent[parent]
        if np.array_equal(grand, parent):
            break
        offset += offset[parent]
        parent = grand
    multi = np.flatnonzero(indeg >= 2)
    if len(multi):
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(indeg, out=ptr[1:])
        edge_root = parent[src].tolist()
        edge_off = (offset[src] + weight).tolist()
        ep = base.tolist()
        p = ptr.tolist()
        for v in multi.tolist():
            e = ep[v]
            for k in range(p[v], p[v + 1]):
                c = ep[edge_root[k]] + edge_off[k]
                if c > e:
                    e = c
            ep[v] = e
        base = np.asarray(ep, dtype=np.int64)
    return base[parent] + offset


def _simulate(
    typ: np.ndarray, src: np.ndarray, dst: np.ndarray, n: int, greedy: bool, no_fusion: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Event-driven replay of TFLite's sweeps for arbitrary plans; returns (order, epoch)."""
    kinds = typ.tolist()
    pending = np.bincount(dst, minlength=n).tolist()
    succ_order = np.argsort(src, kind="stable")
    succ = dst[succ_order].tolist()
    sptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=sptr[1:])
    sp = sptr.tolist()
    done = [False] * n
    epoch_of = [-1] * n
    ready: dict[bool, list[int]] = {True: [], False: []}
    for v in range(n):
        if pending[v] == 0:
            ready[kinds[v]].append(v)  # ascending, hence already heaps
    order: list[int] = []
    newly: list[int] = []

    def add(v: int, e: int) -> None:
        done[v] = True
        epoch_of[v] = e
        order.append(v)
        for k in range(sp[v], sp[v + 1]):
            s = succ[k]
            pending[s] -= 1
            if pending[s] == 0:
                newly.append(s)

    def pop_min(kind: bool) -> int:
        h = ready[kind]
        while h and done[h[0]]:
            heapq.heappop(h)
        return h[0] if h else n

    e = 0
    while True:
        first = min(pop_min(True), pop_min(False))
        if first == n:
            break
        kind = kinds[first]
        if no_fusion:
            heapq.heappop(ready[kind])
            add(first, e)
            for s in newly:
                heapq.heappush(ready[kinds[s]], s)
            newly.clear()
        elif greedy:
            cur: list[int] = ready[kind]
            nxt: list[int] = []
            ready[kind] = []
            while cur:
                v = heapq.heappop(cur)
                if done[v]:
                    continue
                add(v, e)
                for s in newly:
                    if kinds[s] != kind:
                        heapq.heappush(ready[kinds[s]], s)
                    elif s > v:
                        heapq.heappush(cur, s)  # still ahead of the sweep position
                    else:
                        heapq.heappush(nxt, s)  # picked up by the next sweep
                newly.clear()
                if not cur:
                    cur, nxt = nxt, []
        else:
            pos = first
            while True:
                while pos < n and not done[pos] and pending[pos] == 0 and kinds[pos] == kind:
                    add(pos, e)
                    pos += 1
                for s in newly:
                    heapq.heappush(ready[kinds[s]], s)
                newly.clear()
                if pos < n:
                    break  # the first failure after an addition ends a non-greedy epoch
                pos = pop_min(kind)  # a completed sweep: the next sweep starts from node 0
                if pos == n:
                    break
        e += 1
    if len(order) != n:
        stuck = sorted(set(range(n)) - set(order))[:5]
        raise ModelFormatError(
            f"nodes {stuck} can never run: their inputs or control edges form a cycle"
        )
    return np.asarray(order, dtype=np.int64), np.asarray(epoch_of, dtype=np.int64)


def _assemble(
    deps: _Deps,
    typ: np.ndarray,
    order: np.ndarray,
    epoch: np.ndarray,
    graph_outputs: Sequence[int],
) -> list[NodeSubset]:
    """Build NodeSubsets from per-node epochs: boundary tensors sorted and deduplicated."""
    nt = deps.num_tensors
    num_epochs = int(epoch.max()) + 1
    tensor_epoch = np.full(nt, -2, dtype=np.int64)
    has = deps.producer >= 0
    tensor_epoch[has] = epoch[deps.producer[has]]
    t = deps.node_inputs.idx.astype(np.int64)
    rows = deps.node_inputs.row_ids()
    ok = t >= 0
    t, rows = t[ok], rows[ok]
    te = tensor_epoch[t]
    ne = epoch[rows]
    cross = te != ne
    in_key = _unique(ne[cross] * nt + t[cross])
    prod = cross & (te >= 0)
    go = np.asarray(graph_outputs, dtype=np.int64).reshape(-1)
    go_e = tensor_epoch[go] if len(go) else go
    go_ok = go_e >= 0
    out_key = _unique(np.concatenate([te[prod] * nt + t[prod], go_e[go_ok] * nt + go[go_ok]]))
    bounds = np.arange(num_epochs + 1)
    in_split = np.searchsorted(in_key // nt, bounds).tolist()
    out_split = np.searchsorted(out_key // nt, bounds).tolist()
    node_split = np.searchsorted(epoch[order], bounds).tolist()
    in_t = (in_key % nt).tolist()
    out_t = (out_key % nt).tolist()
    nodes = order.tolist()
    first_kind = typ[order[np.asarray(node_split[:-1])]].tolist()
    return [
        NodeSubset(
            "delegated" if first_kind[e] else "cpu",
            tuple(nodes[node_split[e] : node_split[e + 1]]),
            tuple(in_t[in_split[e] : in_split[e + 1]]),
            tuple(out_t[out_split[e] : out_split[e + 1]]),
        )
        for e in range(num_epochs)
    ]
