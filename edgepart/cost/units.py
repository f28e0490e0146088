"""Timing units: which ops the profiler extracts and times together.

A *unit* is a set of ops whose latency is measured as one: a single op normally; the ops that
share a variable or resource (state cannot be split between two interpreters); and an op
together with the ``DEQUANTIZE``/``DENSIFY`` of its constant weights. Those folded ops run once
at preparation, so they are *helpers*: extracted with the op that reads their output (so that
weight stays static, as in the whole model, and XNNPACK still takes the op) but costed at zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgepart.cost.rules import Ctx
from edgepart.cost.table import Stats
from edgepart.ir import analysis
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Subgraph
from edgepart.schema import opnames

__all__ = ["Unit", "UnitResult", "convex_closure", "state_groups", "timing_units"]


@dataclass(frozen=True)
class Unit:
    """Ops timed together: ``ops`` carry the cost, ``helpers`` are extracted along at no cost."""

    ops: tuple[int, ...]
    helpers: tuple[int, ...] = ()

    @property
    def extract_ops(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.ops) | set(self.helpers)))


@dataclass(frozen=True)
class UnitResult:
    """One unit: its signature key, measured statistics (None if it failed) and value."""

    unit: Unit
    key: str
    kind: str
    value_s: float
    stats: Stats | None
    error: str | None = None


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))
        self.children: set[int] = set()

    def find(self, a: int) -> int:
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)
            self.children.update((ra, rb))


def convex_closure(sg: Subgraph, ops: list[int]) -> list[int]:
    """The smallest convex superset: add every op on a path between two members."""
    succ = analysis.successors(sg)
    pred = analysis.predecessors(sg)
    down = analysis.reachable(succ, ops, sg.num_ops)
    up = analysis.reachable(pred, ops, sg.num_ops)
    return sorted(set(np.flatnonzero(down & up).tolist()) | set(ops))


def state_groups(sg: Subgraph) -> list[tuple[int, ...]]:
    """Groups of ops that share state (a resource or variable), each convex, in op order.

    Only ops touching state are looked at one by one, so graphs without state cost one pass.
    """
    n = sg.num_ops
    stateful = (sg.tensor_dtype == DType.RESOURCE) | sg.tensor_is_variable
    handles = np.flatnonzero(sg.op_builtin == _VAR_HANDLE).tolist()
    if not stateful.any() and not handles:
        return []
    folded = Ctx.of(sg).folded
    uf = _UnionFind(n)
    first_user: dict[int, int] = {}
    for csr in (sg.op_inputs, sg.op_outputs):
        t = csr.idx.astype(np.int64)
        hit = (t >= 0) & stateful[np.maximum(t, 0)]
        rows = csr.row_ids()[hit]
        for op, ten in zip(rows.tolist(), t[hit].tolist(), strict=True):
            if ten in first_user:
                uf.union(first_user[ten], op)
            else:
                first_user[ten] = op
    # VAR_HANDLE ops produce a resource that READ/ASSIGN ops take by name: group by shared_name
    by_name: dict[str, int] = {}
    for i in handles:
        o = sg.op_options[i]
        name = str(o.get("shared_name", "")) if o is not None else ""
        if name in by_name:
            uf.union(by_name[name], i)
        else:
            by_name[name] = i
    # CALL_ONCE initializes the variables: it belongs with the ops using resources
    for i in np.flatnonzero(sg.op_builtin == _CALL_ONCE).tolist():
        for h in handles:
            uf.union(i, h)
    touched = sorted(uf.children)
    while True:  # close groups under convexity; ops pulled in join the group, repeat
        groups: dict[int, list[int]] = {}
        for i in touched:
            if not folded[i]:
                groups.setdefault(uf.find(i), []).append(i)
        changed = False
        for members in groups.values():
            if len(members) > 1:
                for i in convex_closure(sg, members):
                    if not folded[i] and uf.find(i) != uf.find(members[0]):
                        uf.union(i, members[0])
                        touched.append(i)
                        changed = True
        touched = sorted(set(touched))
        if not changed:
            break
    return sorted((tuple(g) for g in groups.values() if len(g) > 1), key=lambda g: g[0])


def timing_units(sg: Subgraph) -> list[Unit]:
    """Partition the subgraph's ops into timing units (in execution order of their first op)."""
    ctx = Ctx.of(sg)
    folded = ctx.folded
    order = analysis.topological_order(sg).tolist()
    group_of: dict[int, tuple[int, ...]] = {}
    for g in state_groups(sg):
        for i in g:
            group_of[i] = g
    helpers_of = _helpers(sg, ctx, folded)
    units = []
    seen: set[tuple[int, ...]] = set()
    for i in order:
        if folded[i]:
            continue
        members = group_of.get(i, (i,))
        if members in seen:
            continue
        seen.add(members)
        helpers = sorted({h for m in members for h in helpers_of.get(m, ())})
        units.append(Unit(tuple(members), tuple(helpers)))
    used = {h for u in units for h in u.helpers}
    pos = {op: k for k, op in enumerate(order)}
    for i in np.flatnonzero(folded).tolist():
        if i not in used:  # folded ops nobody reads: timed alone
            units.append(Unit((i,)))
    units.sort(key=lambda u: pos[u.ops[0]])
    return units


_VAR_HANDLE = opnames.builtin_code("VAR_HANDLE")
_CALL_ONCE = opnames.builtin_code("CALL_ONCE")


def _helpers(sg: Subgraph, ctx: Ctx, folded: np.ndarray) -> dict[int, list[int]]:
    """For each op, the folded ops producing its inputs, transitively (a sparse fp16 weight
    is DEQUANTIZE of a DENSIFY of the constant: both are the op's helpers)."""
    out: dict[int, list[int]] = {}
    f = np.flatnonzero(folded)
    if not len(f):
        return out
    made = {int(t): int(op) for op, t in zip(f.tolist(), ctx.out(f, 0).tolist(), strict=True)}
    rows = sg.op_inputs.row_ids()
    for op, t in zip(rows.tolist(), sg.op_inputs.idx.tolist(), strict=True):
        if t in made:
            out.setdefault(op, []).append(made[t])
    for op in list(out):
        if folded[op]:
            continue
        chain, todo = [], list(out[op])
        while todo:
            h = todo.pop()
            if h not in chain:
                chain.append(h)
                todo.extend(out.get(h, ()))
        out[op] = chain
    return out
