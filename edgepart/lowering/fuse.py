"""The fusion pre-pass: merge ops that must or would run together into the cost graph's nodes.

Each node is a set of ops placed as one; merging never changes what a placement costs (a node's
latency is the sum of its ops', which the cost model already makes fusion-aware), it only
removes choices that cannot help or cannot be deployed. Rules, in order:

1. **Weight decompression** (``constant_decompression``): DEQUANTIZE/DENSIFY chains of constants
   (:func:`edgepart.ir.analysis.constant_producers`; fp16 and sparse weights) are *helpers* of
   every op that reads their output, cloned into each reader's node: the weight is decompressed
   where it is read, as :func:`edgepart.ir.extract.extract` does. Helpers are no node's member.
2. **Kernel fusion** (``kernel_fusion``): groups the cost model costs as one kernel
   (:meth:`edgepart.cost.model.GraphCosts.groups`, found by the nn-Meter rule in
   :mod:`edgepart.cost.fusion` and recorded in latency tables) become one node when every
   processor supports all or none of their ops (so no processor loses an option). Fused
   activations (``fused_activation_function``) are already one op; they are only counted.
3. **Free reshapes** (``free_reshape``): a reshape-like op (RESHAPE, SQUEEZE, EXPAND_DIMS,
   BITCAST) whose latency is at most ``free_s`` on every processor supporting it joins its
   producer (when everything the producer writes goes only to it) or else its single consumer,
   if it is supported wherever that partner is. The default ``free_s = 0`` merges only what
   the cost model says is free, so no placement gets worse.
4. **State** (``state``): ops sharing a resource variable, variable tensor or CALL_ONCE
   initialization (:func:`edgepart.ir.state.state_groups`) must run in one interpreter, so the
   convex closure of each group is one node (colocation on one unit would not be enough: two
   partitions on one unit are two interpreters).
5. **Untyped boundaries** (``untyped_tensor``): a tensor without a NumPy type (string, variant,
   int4, bfloat16, ...) cannot be handed between partitions, so its producer and consumers
   (with the ops between them) become one node.
6. **Cycle breaking** (``cycle``): if the merges above make the node graph cyclic (two groups
   interleaved), the nodes on each cycle are merged (with their convex closure) until the node
   graph is a DAG, as cycle-checked contraction in XLA and TVM does.

Rules 2 and 3 merge along single-exit chains (every op but the last sends all its outputs to
the next), which keeps the node graph acyclic by construction; rules 4-6 merge convex sets.
Nodes are numbered in a topological order (by their last op in execution order).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from edgepart.ir import analysis
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model, Subgraph
from edgepart.ir.state import state_groups
from edgepart.ir.values import Csr
from edgepart.lowering._opgraph import OpGraph, UnionFind, strong_components
from edgepart.placement.topology import csr_from_pairs, stable_topological_order

__all__ = ["RESHAPE_LIKE", "RULES", "Fusion", "fuse"]

RESHAPE_LIKE = frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS", "BITCAST"})
RULES = (
    "constant_decompression",
    "kernel_fusion",
    "free_reshape",
    "state",
    "untyped_tensor",
    "cycle",
)


@dataclass(frozen=True, eq=False)
class Fusion:
    """The result of :func:`fuse`: nodes as sets of ops (arrays; see the module docstring).

    ``node_of[i]`` is the node of op ``i``; for a helper op, the node of its first reader.
    ``members`` lists each node's own ops and ``helpers`` the cloned decompression ops it reads,
    both in execution order. ``merged`` counts the ops each rule folded into another node
    (``constant_decompression``: helper ops; the other rules: ops that stopped being a node of
    their own); ``fused_activations`` counts ops that already carry a fused activation.
    """

    num_ops: int
    node_of: np.ndarray
    is_helper: np.ndarray
    members: Csr
    helpers: Csr
    merged: dict[str, int] = field(default_factory=dict)
    fused_activations: int = 0

    @property
    def num_nodes(self) -> int:
        return len(self.members)

    @property
    def shrink(self) -> float:
        """Ops per node (1.0 when nothing merged)."""
        return self.num_ops / max(1, self.num_nodes)

    def node_ops(self, v: int) -> np.ndarray:
        """Members and helpers of node ``v`` (ascending op index)."""
        return np.union1d(self.members.row(v), self.helpers.row(v))


def _helpers(g: OpGraph) -> np.ndarray:
    """Per op: a weight-decompression helper (cloned into its readers)."""
    sg = g.sg
    cand = analysis.constant_producers(sg)
    if not cand.any():
        return cand
    ok = cand.copy()
    for op in np.flatnonzero(cand).tolist():
        outs = sg.op_outputs.row(op)
        outs = outs[outs >= 0]
        # a decompressed weight that is a model output, or read by nobody, stays a node
        if not len(outs) or g.is_out[outs].any() or not (g.cons.lengths()[outs] > 0).all():
            ok[op] = False
    out: np.ndarray = ok
    return out


def _readers(g: OpGraph, helper: np.ndarray) -> dict[int, list[int]]:
    """For each helper op, the non-helper ops that (through helper chains) read its output."""
    sg = g.sg
    out: dict[int, list[int]] = {}
    order = analysis.topological_order(sg).tolist()
    for op in reversed(order):  # consumers before producers
        if not helper[op]:
            continue
        found: set[int] = set()
        for t in sg.op_outputs.row(op).tolist():
            if t < 0:
                continue
            for c in g.cons.row(t).tolist():
                if helper[c]:
                    found.update(out.get(c, ()))
                else:
                    found.add(c)
        out[op] = sorted(found)
    return out


def _support_rows(support: np.ndarray | None, ops: Iterable[int]) -> set[bytes]:
    if support is None:
        return {b""}
    return {support[i].tobytes() for i in ops}


def fuse(
    sg: Subgraph,
    *,
    model: Model | None = None,
    subgraph: int = 0,
    support: np.ndarray | None = None,
    latency: np.ndarray | None = None,
    fused_groups: Sequence[Sequence[int]] = (),
    free_s: float = 0.0,
) -> Fusion:
    """Merge the ops of ``sg`` into nodes (see the module docstring).

    Parameters
    ----------
    sg
        The subgraph to fuse (``model.subgraphs[subgraph]``).
    model, subgraph
        The owning model, for state groups (CALL_ONCE initialization lives in other
        subgraphs); without it, state groups are not merged.
    support
        ``[ops, processors]`` bool: which processor runs which op. Fusion never merges ops with
        different support (kernel fusion) or makes a partner lose a processor (free reshapes).
        ``None``: every op runs everywhere.
    latency
        ``[ops, processors]`` seconds, for deciding which reshape-like ops are free; ``None``
        disables the free-reshape rule.
    fused_groups
        Op groups some processor runs as one kernel (from the cost model).
    free_s
        The latency at or below which a reshape-like op counts as free.
    """
    g = OpGraph(sg)
    n = g.n
    merged = {r: 0 for r in RULES}
    helper = _helpers(g)
    readers = _readers(g, helper)
    for h in [h for h, rd in readers.items() if not rd]:  # reaches no real op: a node itself
        helper[h] = False
        del readers[h]
    merged["constant_decompression"] = int(helper.sum())
    uf = UnionFind(n)

    # --- 2. kernel fusion along single-exit chains with identical support
    for grp in fused_groups:
        ops = sorted({int(i) for i in grp})
        if len(ops) < 2 or helper[ops].any() or len(_support_rows(support, ops)) != 1:
            continue
        if not all(g.outputs_only_to(a, b) for a, b in itertools.pairwise(ops)):
            continue
        for a, b in itertools.pairwise(ops):
            if uf.union(a, b):
                merged["kernel_fusion"] += 1

    # --- 3. free reshape-like ops
    if latency is not None:
        for r in range(n):
            if helper[r] or g.op_name(r) not in RESHAPE_LIKE:
                continue
            sup_r = np.ones(latency.shape[1], dtype=bool) if support is None else support[r]
            if not sup_r.any() or (latency[r, sup_r] > free_s).any():
                continue
            partner = _reshape_partner(g, r, helper, support)
            if partner is not None and uf.union(r, partner):
                merged["free_reshape"] += 1

    # --- 4./5. sets that must stay in one partition
    together: list[list[int]] = []
    if model is not None:
        sgid = state_groups(model, subgraph)
        for gid in np.unique(sgid[sgid >= 0]).tolist():
            ops = np.flatnonzero(sgid == gid).tolist()
            if len(ops) > 1:
                together.append(["state", *ops])  # type: ignore[list-item]
    for t in _untyped_crossings(sg, g):
        ops = sorted({int(g.prod[t]), *g.cons.row(t).tolist()} - {-1})
        ops = [o for o in ops if not helper[o]]
        if len(ops) > 1:
            together.append(["untyped_tensor", *ops])  # type: ignore[list-item]
    for entry in together:
        rule, ops = str(entry[0]), [int(x) for x in entry[1:]]
        merged[rule] += _merge_closed(g, uf, ops, helper)

    # --- 6. break cycles of the node graph
    while True:
        roots = uf.roots()
        cyc = _cycles(g, roots, helper)
        if not cyc:
            break
        for comp in cyc:
            ops = np.flatnonzero(np.isin(roots, comp) & ~helper).tolist()
            merged["cycle"] += _merge_closed(g, uf, ops, helper)

    return _build(g, uf.roots(), helper, readers, merged)


def _reshape_partner(
    g: OpGraph, r: int, helper: np.ndarray, support: np.ndarray | None
) -> int | None:
    """The producer (preferred) or single consumer a free reshape-like op may join."""
    ins = g.sg.op_inputs.row(r)
    data = int(ins[0]) if len(ins) else -1
    a = int(g.prod[data]) if data >= 0 else -1
    if a >= 0 and not helper[a] and g.outputs_only_to(a, r) and _covers(support, r, a):
        return a
    outs = g.sg.op_outputs.row(r)
    outs = outs[outs >= 0]
    if len(outs) == 1 and not g.is_out[outs[0]]:
        c = g.cons.row(int(outs[0]))
        if len(c) == 1 and not helper[int(c[0])] and _covers(support, r, int(c[0])):
            return int(c[0])
    return None


def _covers(support: np.ndarray | None, r: int, other: int) -> bool:
    """``r`` is supported wherever ``other`` is (merging costs ``other`` no processor)."""
    return support is None or bool(np.all(support[r] | ~support[other]))


def _untyped_crossings(sg: Subgraph, g: OpGraph) -> list[int]:
    """Produced tensors without a NumPy type read by another op (they cannot be staged)."""
    numpy_ok = np.zeros(256, dtype=bool)
    for d in DType:
        if 0 <= int(d) < 256 and d.numpy is not None:
            numpy_ok[int(d)] = True
    dt = sg.tensor_dtype.astype(np.int64)
    bad = ~numpy_ok[np.clip(dt, 0, 255)] & (dt != int(DType.RESOURCE))  # resources: state rule
    bad &= g.prod >= 0
    bad &= g.cons.lengths() > 0
    out: list[int] = np.flatnonzero(bad).tolist()
    return out


def _merge_closed(g: OpGraph, uf: UnionFind, ops: list[int], helper: np.ndarray) -> int:
    """Merge ``ops`` with their convex closure, grown over whole nodes until stable; returns
    how many nodes disappeared."""
    count = 0
    cur = sorted(set(ops))
    while cur:
        closed = [i for i in g.closure(cur).tolist() if not helper[i]]
        roots = uf.roots()
        whole = np.flatnonzero(np.isin(roots, roots[closed]) & ~helper).tolist()
        for i in whole[1:]:
            if uf.union(whole[0], i):
                count += 1
        if len(whole) == len(cur):  # cur is a subset of whole: nothing was added
            break
        cur = whole
    return count


def _cycles(g: OpGraph, roots: np.ndarray, helper: np.ndarray) -> list[list[int]]:
    """Strongly connected components (size > 1) of the node graph, as lists of root ops."""
    keep = ~helper[g.src]
    a, b = roots[g.src[keep]], roots[g.dst[keep]]
    cross = a != b
    a, b = a[cross], b[cross]
    if not len(a):
        return []
    uniq, inv = np.unique(np.concatenate([a, b]), return_inverse=True)
    k = len(uniq)
    ia, ib = inv[: len(a)], inv[len(a) :]
    succ = csr_from_pairs(k, ia, ib)
    indeg = np.bincount(succ.idx, minlength=k)
    if len(stable_topological_order(succ, indeg)) == k:
        return []
    comps = strong_components(succ, k)
    return [[int(uniq[v]) for v in c] for c in comps if len(c) > 1]


def _build(
    g: OpGraph,
    roots: np.ndarray,
    helper: np.ndarray,
    readers: dict[int, list[int]],
    merged: dict[str, int],
) -> Fusion:
    sg = g.sg
    n = g.n
    order = analysis.topological_order(sg)
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    own = np.flatnonzero(~helper)
    # node order: by the execution position of each group's last member (a topological order)
    last = np.full(n, -1, dtype=np.int64)
    np.maximum.at(last, roots[own], pos[own])
    groups = np.flatnonzero(last >= 0)
    groups = groups[np.argsort(last[groups], kind="stable")]
    gid = np.full(n, -1, dtype=np.int64)
    gid[groups] = np.arange(len(groups))
    node_of = np.full(n, -1, dtype=np.int64)
    node_of[own] = gid[roots[own]]
    m_order = own[np.lexsort((pos[own], node_of[own]))]
    members = csr_from_pairs(len(groups), node_of[m_order], pos[m_order])
    members = Csr(members.ptr, order[members.idx])  # back from positions to op indices
    hv, hn = [], []
    for h, rd in readers.items():
        nodes = sorted({int(node_of[c]) for c in rd})
        for v in nodes:
            hv.append(v)
            hn.append(int(pos[h]))
        node_of[h] = nodes[0] if nodes else -1
    hcsr = csr_from_pairs(len(groups), np.asarray(hv, np.int64), np.asarray(hn, np.int64))
    helpers = Csr(hcsr.ptr, order[hcsr.idx] if len(hcsr.idx) else hcsr.idx)
    acts = 0
    opts = sg.op_options
    for i in range(n):
        o = opts[i]
        if o is not None and o.get("fused_activation_function", "NONE") not in ("NONE", None):
            acts += 1
    return Fusion(
        num_ops=n,
        node_of=node_of,
        is_helper=helper,
        members=members,
        helpers=helpers,
        merged=merged,
        fused_activations=acts,
    )
