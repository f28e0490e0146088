"""Placement of a cost graph's nodes on heterogeneous processor units.

The solvers work on a generic :class:`~edgepart.placement.costgraph.CostGraph` (a documented JSON
format, ``docs/costgraph.md``) and judge every placement with one evaluation function,
:func:`~edgepart.placement.evaluate.evaluate`. Entry point: :func:`partition_costgraph`. Also
public: the stage planner :func:`plan_stages` (contiguous stages over heterogeneous units, the
pipeline issue's stage plans), the lower bounds :func:`lower_bound` and the latency MILP
:func:`solve_milp`.
"""

from __future__ import annotations

from edgepart.placement.costgraph import CostGraph, costgraph_from_dict, load_costgraph
from edgepart.placement.evaluate import Evaluation, evaluate
from edgepart.placement.lower_bounds import LowerBound, lower_bound
from edgepart.placement.milp import MilpResult, solve_milp
from edgepart.placement.solve import Solution, SolveOptions, partition_costgraph
from edgepart.placement.stages import Stage, StagePlan, plan_stages, stage_time

__all__ = [
    "CostGraph",
    "Evaluation",
    "LowerBound",
    "MilpResult",
    "Solution",
    "SolveOptions",
    "Stage",
    "StagePlan",
    "costgraph_from_dict",
    "evaluate",
    "load_costgraph",
    "lower_bound",
    "partition_costgraph",
    "plan_stages",
    "solve_milp",
    "stage_time",
]
