"""One-call model partitioning: a ``.tflite`` (or a read model) and a device profile to a plan.

:func:`partition_model` runs the whole decision step of ``edgepart partition MODEL --profile``
(cost graph, TFLite-default baseline, solver, checker) and returns it as a value;
:func:`partition_specs` gives the bundle partition specs of that plan, for callers that build
bundles themselves (:func:`edgepart.bundle.build_bundle`), e.g. the runtime's equivalence tests.

>>> plan = partition_model("model.tflite", "pixel8")              # doctest: +SKIP
>>> specs = partition_specs("model.tflite", "pixel8")             # doctest: +SKIP
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from edgepart.deploy.apply import PlacedPartition, placed_partitions
from edgepart.deploy.apply import partition_specs as _specs
from edgepart.devices.profile import DeviceProfile
from edgepart.ir.graph import Model
from edgepart.lowering.default_placement import DefaultPlacement, profile_default_baseline
from edgepart.lowering.from_model import ModelProblem, model_costgraph
from edgepart.placement.solve import Solution, SolveOptions, partition_costgraph

if TYPE_CHECKING:
    from edgepart.bundle.write import PartitionSpec

__all__ = ["ModelPlan", "partition_model", "partition_specs"]


@dataclass(frozen=True, eq=False)
class ModelPlan:
    """A solved model: the problem, TFLite's default, the checked solution and its partitions."""

    problem: ModelProblem
    default: DefaultPlacement
    solution: Solution
    partitions: list[PlacedPartition]


def partition_model(
    model: Model | str | os.PathLike[str],
    profile: DeviceProfile | str,
    method: str = "heuristic",
    options: SolveOptions | None = None,
) -> ModelPlan:
    """Partition ``model``'s main subgraph for ``profile`` (see the module docstring)."""
    if not isinstance(model, Model):
        from edgepart.tflite.reader import read_model

        model = read_model(model)
    problem = model_costgraph(model, profile)
    default = profile_default_baseline(problem)
    sol = partition_costgraph(problem.graph, method, options, reference=default.baseline)
    return ModelPlan(problem, default, sol, placed_partitions(problem, sol.evaluation))


def partition_specs(
    model: Model | str | os.PathLike[str],
    profile: DeviceProfile | str,
    method: str = "heuristic",
    options: SolveOptions | None = None,
) -> list[PartitionSpec]:
    """The bundle partition specs of :func:`partition_model`'s plan."""
    mp = partition_model(model, profile, method, options)
    return _specs(mp.problem, mp.solution.evaluation, mp.partitions)
