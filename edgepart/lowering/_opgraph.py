"""Op-level graph helpers of the fusion pre-pass: union-find, adjacency, closures, SCCs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgepart.ir import analysis
from edgepart.ir.graph import Subgraph
from edgepart.ir.values import Csr
from edgepart.placement.topology import csr_from_pairs

__all__ = ["OpGraph", "UnionFind", "strong_components"]


class UnionFind:
    """Union-find over ops; the representative is the largest op index of the set."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, a: int) -> int:
        p = self.parent
        root = a
        while p[root] != root:
            root = p[root]
        while p[a] != root:
            p[a], a = root, p[a]
        return root

    def union(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        lo, hi = (ra, rb) if ra < rb else (rb, ra)
        self.parent[lo] = hi
        return True

    def roots(self) -> np.ndarray:
        """Representative of every element (pointer jumping, vectorized)."""
        p = np.asarray(self.parent, dtype=np.int64)
        while True:
            q = p[p]
            if np.array_equal(q, p):
                return p
            p = q


class OpGraph:
    """Op-level adjacency of one subgraph, computed once."""

    def __init__(self, sg: Subgraph) -> None:
        self.sg = sg
        self.n = sg.num_ops
        self.prod = analysis.producers(sg)
        self.cons = analysis.consumers(sg)
        src, dst = analysis.op_edges(sg)
        self.src, self.dst = src, dst
        self.succ = csr_from_pairs(self.n, src, dst)
        self.pred = csr_from_pairs(self.n, dst, src)
        self.is_out = np.zeros(sg.num_tensors, dtype=bool)
        self.is_out[sg.outputs.astype(np.int64)] = True
        self.names = [c.name for c in sg.opcodes]

    def op_name(self, i: int) -> str:
        return self.names[int(self.sg.op_opcode[i])]

    def outputs_only_to(self, op: int, target: int) -> bool:
        """Every output of ``op`` is read by ``target`` alone and is no subgraph output."""
        outs = self.sg.op_outputs.row(op)
        outs = outs[outs >= 0]
        if not len(outs):
            return False
        for t in outs.tolist():
            if self.is_out[t]:
                return False
            c = self.cons.row(t)
            if len(c) != 1 or int(c[0]) != target:
                return False
        return True

    def closure(self, ops: Sequence[int]) -> np.ndarray:
        """Convex closure: ``ops`` plus every op on a path between two of them."""
        down = analysis.reachable(self.succ, ops, self.n)
        up = analysis.reachable(self.pred, ops, self.n)
        out = down & up
        out[list(ops)] = True
        return np.flatnonzero(out)


def strong_components(succ: Csr, k: int) -> list[list[int]]:
    """Tarjan's strongly connected components, iterative."""
    ptr, nxt = succ.ptr.tolist(), succ.idx.tolist()
    index = [-1] * k
    low = [0] * k
    on = [False] * k
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for s in range(k):
        if index[s] >= 0:
            continue
        work = [(s, ptr[s])]
        index[s] = low[s] = counter
        counter += 1
        stack.append(s)
        on[s] = True
        while work:
            v, j = work[-1]
            if j < ptr[v + 1]:
                work[-1] = (v, j + 1)
                w = nxt[j]
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on[w] = True
                    work.append((w, ptr[w]))
                elif on[w]:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on[w] = False
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out
