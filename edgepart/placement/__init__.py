"""Placement of a cost graph's nodes on heterogeneous processor units.

The solvers work on a generic :class:`~edgepart.placement.costgraph.CostGraph` (a documented JSON
format, ``docs/costgraph.md``) and judge every placement with one evaluation function,
:func:`~edgepart.placement.evaluate.evaluate`. Entry point: :func:`partition_costgraph`.
"""

from __future__ import annotations

from edgepart.placement.costgraph import CostGraph, costgraph_from_dict, load_costgraph
from edgepart.placement.evaluate import Evaluation, evaluate
from edgepart.placement.solve import Solution, SolveOptions, partition_costgraph

__all__ = [
    "CostGraph",
    "Evaluation",
    "Solution",
    "SolveOptions",
    "costgraph_from_dict",
    "evaluate",
    "load_costgraph",
    "partition_costgraph",
]
