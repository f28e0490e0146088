"""Random convex partitionings of a model, for the runtime acceptance tests.

Two families, both seeded:

* ``contiguous``: ranges of a topological order (always convex), cut at random points; cut
  points that ``extract`` refuses (splitting state, a piece that only decompresses weights)
  are skipped.
* ``banded``: ops grouped by level (longest path from the sources) into random bands, each
  band split into its weakly connected components. A band of levels is convex (levels grow
  along every path, so a path that leaves the band never returns) and so is each component
  (a path between two ops of a band stays in the band, hence in one component); different
  components of a band have no path between them, so they may run concurrently. Components
  of one band go to different units.
"""

from __future__ import annotations

import itertools

import numpy as np

from edgepart.bundle import PartitionSpec
from edgepart.errors import PlanError, UsageError
from edgepart.ir import analysis
from edgepart.ir.extract import extract
from edgepart.ir.graph import Model

__all__ = ["banded", "contiguous", "extractable"]


def extractable(model: Model, parts: list[list[int]]) -> bool:
    """True if ``extract`` accepts every part."""
    try:
        for ops in parts:
            extract(model, ops)
    except (UsageError, PlanError):
        return False
    return True


def contiguous(model: Model, k: int, seed: int) -> list[list[int]]:
    """Up to ``k`` pieces: ranges of a topological order with random accepted cut points."""
    sg = model.main
    order = analysis.topological_order(sg).tolist()
    n = sg.num_ops
    rng = np.random.default_rng(seed)
    candidates = rng.permutation(np.arange(1, n)).tolist() if n > 1 else []
    cuts: list[int] = []
    for c in candidates:
        if len(cuts) == k - 1:
            break
        trial = sorted([*cuts, c])
        bounds = [0, *trial, n]
        pieces = [order[a:b] for a, b in itertools.pairwise(bounds)]
        if extractable(model, pieces):
            cuts = trial
    bounds = [0, *cuts, n]
    return [order[a:b] for a, b in itertools.pairwise(bounds)]


def _levels(model: Model) -> np.ndarray:
    sg = model.main
    pred = analysis.predecessors(sg)
    level = np.zeros(sg.num_ops, dtype=np.int64)
    for op in analysis.topological_order(sg).tolist():
        p = pred.row(op)
        level[op] = level[p].max() + 1 if len(p) else 0
    return level


def _components(model: Model, ops: list[int]) -> list[list[int]]:
    sg = model.main
    member = set(ops)
    parent = {o: o for o in ops}

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    succ = analysis.successors(sg)
    for o in ops:
        for s in succ.row(o).tolist():
            if s in member:
                parent[find(s)] = find(o)
    groups: dict[int, list[int]] = {}
    for o in sorted(ops):
        groups.setdefault(find(o), []).append(o)
    return sorted(groups.values())


def banded(model: Model, bands: int, seed: int, units: int = 2) -> list[PartitionSpec] | None:
    """Band/component partitions as specs (units spread within a band), or ``None`` if
    ``extract`` refuses some piece (state split). ``bands`` is the number of bands; narrow
    bands (many of them) split parallel branches into concurrent partitions."""
    sg = model.main
    level = _levels(model)
    # weight decompression (fp16 DEQUANTIZE, DENSIFY) goes with a consumer: extract copies it
    # into every reader anyway, and a piece of only such ops is refused
    folded = analysis.constant_producers(sg)
    top = int(level.max()) + 1
    rng = np.random.default_rng(seed)
    inner = sorted(rng.choice(np.arange(1, top), size=min(bands - 1, top - 1), replace=False))
    edges = [0, *(int(x) for x in inner), top]
    groups: list[tuple[list[int], int]] = []
    for a, b in itertools.pairwise(edges):
        ops = np.flatnonzero((level >= a) & (level < b) & ~folded).tolist()
        for j, comp in enumerate(_components(model, ops)):
            groups.append((comp, j % units))
    owner = {o: g for g, (comp, _) in enumerate(groups) for o in comp}
    succ = analysis.successors(sg)
    for op in reversed(analysis.topological_order(sg).tolist()):
        if folded[op]:
            owner[op] = owner[int(succ.row(op)[0])]
            groups[owner[op]][0].append(op)
    specs = [PartitionSpec(sorted(comp), unit=u) for comp, u in groups if comp]
    if not extractable(model, [list(s.ops) for s in specs]):
        return None
    return specs
