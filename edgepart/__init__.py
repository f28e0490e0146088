"""edgepart: partition TFLite (LiteRT) models across the processors of edge devices.

Pipeline parallelism (:mod:`edgepart.api.pipeline`): :func:`plan_pipeline` (a model's stage
plan under a device profile), :func:`simulate_pipeline` (a micro-batch schedule's timeline),
:func:`run_pipeline` (the stages on this host, threads with bounded queues),
:func:`write_gantt`; across machines :func:`load_cluster`, :func:`plan_cluster`,
:func:`run_cluster` (Ray actors, the ``cluster`` extra). The API names load
on first use (PEP 562 ``__getattr__``): ``import edgepart`` itself loads only the error
classes, so the CLI starts without NumPy or LiteRT until a command needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from edgepart.errors import EdgepartError, ModelFormatError

if TYPE_CHECKING:
    from edgepart.api.pipeline import (
        ClusterPlan,
        PipelinePlan,
        load_cluster,
        plan_cluster,
        plan_pipeline,
        random_inputs,
        run_cluster,
        run_pipeline,
        simulate_pipeline,
        stage_costs,
        write_gantt,
    )
    from edgepart.runtime.details import StageFailedError

__version__ = "0.1.0"

_LAZY = {
    "plan_pipeline": "edgepart.api.pipeline",
    "PipelinePlan": "edgepart.api.pipeline",
    "simulate_pipeline": "edgepart.api.pipeline",
    "run_pipeline": "edgepart.api.pipeline",
    "stage_costs": "edgepart.api.pipeline",
    "StageFailedError": "edgepart.runtime.details",
    "ClusterPlan": "edgepart.api.pipeline",
    "load_cluster": "edgepart.api.pipeline",
    "plan_cluster": "edgepart.api.pipeline",
    "run_cluster": "edgepart.api.pipeline",
    "write_gantt": "edgepart.api.pipeline",
    "random_inputs": "edgepart.api.pipeline",
}

__all__ = [
    "ClusterPlan",
    "EdgepartError",
    "ModelFormatError",
    "PipelinePlan",
    "StageFailedError",
    "__version__",
    "load_cluster",
    "plan_cluster",
    "plan_pipeline",
    "random_inputs",
    "run_cluster",
    "run_pipeline",
    "simulate_pipeline",
    "stage_costs",
    "write_gantt",
]


def __getattr__(name: str) -> Any:
    """Load an API name from its module on first use (see the module docstring)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'edgepart' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
