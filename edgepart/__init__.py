"""edgepart: partition TFLite (LiteRT) models across the processors of edge devices.

The whole job, one call per step (each takes everything the matching CLI command takes)::

    import edgepart

    model = edgepart.read_model("m.tflite")
    device = edgepart.load_device("pixel8")  # a shipped name or a YAML path
    claims = edgepart.claims(model, device)  # per delegate: ops, partitions, refusals
    compiled = edgepart.compile(model, device, latency_tables=["t.json"])
    print(compiled.report())
    compiled.save("out/")  # the bundle: partitions, plan.json, arena.json
    interp = edgepart.PartitionedInterpreter("out/")  # LiteRT's Interpreter API

Models: :func:`read_model`, :func:`inspect_model`, :func:`claims`. Devices:
:func:`load_device`, :func:`load_delegate`, :func:`device_names`, :func:`delegate_names`,
:func:`catalog`, :func:`validate_yaml`, the host executors :data:`EXECUTOR_NAMES`. Costs:
:func:`roofline`, :func:`profile_host`. Latency prediction: :func:`calibrate_host`,
:func:`recheck_host`, :func:`refit_predictor`, :func:`fit_predictor_from_tables`,
:func:`estimate`. Placement:
:func:`place`, :func:`compile`, :func:`place_graph`. Memory: :func:`plan_memory`,
:func:`write_tflm_plan`. Bundles: :func:`load_bundle`, :func:`run_bundle`,
:class:`PartitionedInterpreter`. Phones (adb):
:func:`adb_devices`, :func:`bench_model`, :func:`bench_bundle`, :func:`profile_phone`.
Conversion: :func:`convert_model` (Keras, SavedModel, PyTorch to a checked ``.tflite``). Reports:
:func:`build_report`, :func:`write_report` (one self-contained HTML page). Long steps take a
``progress`` callback, such as a :class:`Progress` bar. Errors: :class:`EdgepartError` and its
subclasses. The calls live in :mod:`edgepart.api` and the packages it names.

Pipelines: :func:`plan_pipeline` (a model's stage plan under a device profile),
:func:`simulate_pipeline` (a micro-batch schedule's timeline), :func:`run_pipeline` (the stages
on this host, threads with bounded queues), :func:`write_gantt`; across machines
:func:`load_cluster`, :func:`plan_cluster`, :func:`run_cluster` (Ray actors, the ``cluster``
extra).

The API names load on first use (PEP 562 ``__getattr__``): ``import edgepart`` itself loads
only the error classes, so the CLI starts without NumPy or LiteRT until a command needs them,
and the layers below the API can import ``edgepart.version`` and ``edgepart.errors`` without
importing the API above them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from edgepart.errors import (
    AdbError,
    AdbServerError,
    ArenaOverflowError,
    BenchmarkOutputError,
    BufferTableError,
    BundleError,
    CommandTimeoutError,
    ConversionError,
    CostGraphError,
    DeviceDisconnectedError,
    DeviceNotFoundError,
    DeviceUnauthorizedError,
    EdgepartError,
    LatencyTableError,
    ModelFormatError,
    OutputError,
    PassError,
    PlacementInfeasibleError,
    PlanError,
    PredictorError,
    ProfileError,
    RemoteBinaryError,
    RemoteCommandError,
    RuntimeBackendError,
    UnsteadyMachineError,
    UnsupportedOpError,
    UsageError,
)
from edgepart.version import __version__

if TYPE_CHECKING:
    from edgepart.api.costs import roofline
    from edgepart.api.devices import (
        catalog,
        delegate_names,
        device_names,
        load_delegate,
        load_device,
        validate_yaml,
    )
    from edgepart.api.memory import plan_memory, write_tflm_plan
    from edgepart.api.models import claims, inspect_model, read_model
    from edgepart.api.phones import adb_devices, bench_bundle, bench_model, profile_phone
    from edgepart.api.pipelines import (
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
        train_pipeline,
        write_gantt,
    )
    from edgepart.api.placement import CompiledModel, compile, place, place_graph
    from edgepart.api.prediction import (
        EstimateReport,
        HostCalibration,
        PredictorFit,
        PredictorRecheck,
        calibrate_host,
        estimate,
        fit_predictor_from_tables,
        recheck_host,
        refit_predictor,
    )
    from edgepart.api.profiling import profile_host
    from edgepart.api.running import PartitionedInterpreter, run_bundle
    from edgepart.bundle.load import load_bundle
    from edgepart.convert import ConversionResult, convert_model
    from edgepart.devices.host_executors import EXECUTOR_NAMES
    from edgepart.ir.shapes import InputShapeNote, parse_input_shape
    from edgepart.progress import Progress
    from edgepart.report import ReportResult, build_report, write_report
    from edgepart.runtime.details import StageFailedError
    from edgepart.runtime.verification import DEFAULT_RTOL, failed_outputs

_LAZY = {
    "read_model": "edgepart.api.models",
    "inspect_model": "edgepart.api.models",
    "claims": "edgepart.api.models",
    "load_device": "edgepart.api.devices",
    "catalog": "edgepart.api.devices",
    "EXECUTOR_NAMES": "edgepart.devices.host_executors",
    "load_delegate": "edgepart.api.devices",
    "device_names": "edgepart.api.devices",
    "delegate_names": "edgepart.api.devices",
    "validate_yaml": "edgepart.api.devices",
    "roofline": "edgepart.api.costs",
    "profile_host": "edgepart.api.profiling",
    "calibrate_host": "edgepart.api.prediction",
    "refit_predictor": "edgepart.api.prediction",
    "recheck_host": "edgepart.api.prediction",
    "PredictorRecheck": "edgepart.api.prediction",
    "fit_predictor_from_tables": "edgepart.api.prediction",
    "estimate": "edgepart.api.prediction",
    "EstimateReport": "edgepart.api.prediction",
    "HostCalibration": "edgepart.api.prediction",
    "PredictorFit": "edgepart.api.prediction",
    "place": "edgepart.api.placement",
    "compile": "edgepart.api.placement",
    "place_graph": "edgepart.api.placement",
    "CompiledModel": "edgepart.api.placement",
    "plan_memory": "edgepart.api.memory",
    "write_tflm_plan": "edgepart.api.memory",
    "load_bundle": "edgepart.bundle.load",
    "run_bundle": "edgepart.api.running",
    "PartitionedInterpreter": "edgepart.api.running",
    "adb_devices": "edgepart.api.phones",
    "bench_model": "edgepart.api.phones",
    "bench_bundle": "edgepart.api.phones",
    "profile_phone": "edgepart.api.phones",
    "convert_model": "edgepart.convert",
    "ConversionResult": "edgepart.convert",
    "build_report": "edgepart.report",
    "write_report": "edgepart.report",
    "ReportResult": "edgepart.report",
    "Progress": "edgepart.progress",
    "InputShapeNote": "edgepart.ir.shapes",
    "parse_input_shape": "edgepart.ir.shapes",
    "failed_outputs": "edgepart.runtime.verification",
    "DEFAULT_RTOL": "edgepart.runtime.verification",
    "ClusterPlan": "edgepart.api.pipelines",
    "PipelinePlan": "edgepart.api.pipelines",
    "load_cluster": "edgepart.api.pipelines",
    "plan_cluster": "edgepart.api.pipelines",
    "plan_pipeline": "edgepart.api.pipelines",
    "random_inputs": "edgepart.api.pipelines",
    "run_cluster": "edgepart.api.pipelines",
    "run_pipeline": "edgepart.api.pipelines",
    "simulate_pipeline": "edgepart.api.pipelines",
    "stage_costs": "edgepart.api.pipelines",
    "train_pipeline": "edgepart.api.pipelines",
    "write_gantt": "edgepart.api.pipelines",
    "StageFailedError": "edgepart.runtime.details",
}

__all__ = [
    "DEFAULT_RTOL",
    "EXECUTOR_NAMES",
    "AdbError",
    "AdbServerError",
    "ArenaOverflowError",
    "BenchmarkOutputError",
    "BufferTableError",
    "BundleError",
    "ClusterPlan",
    "CommandTimeoutError",
    "CompiledModel",
    "ConversionError",
    "ConversionResult",
    "CostGraphError",
    "DeviceDisconnectedError",
    "DeviceNotFoundError",
    "DeviceUnauthorizedError",
    "EdgepartError",
    "EstimateReport",
    "HostCalibration",
    "InputShapeNote",
    "LatencyTableError",
    "ModelFormatError",
    "OutputError",
    "PartitionedInterpreter",
    "PassError",
    "PipelinePlan",
    "PlacementInfeasibleError",
    "PlanError",
    "PredictorError",
    "PredictorFit",
    "PredictorRecheck",
    "ProfileError",
    "Progress",
    "RemoteBinaryError",
    "RemoteCommandError",
    "ReportResult",
    "RuntimeBackendError",
    "StageFailedError",
    "UnsteadyMachineError",
    "UnsupportedOpError",
    "UsageError",
    "__version__",
    "adb_devices",
    "bench_bundle",
    "bench_model",
    "build_report",
    "calibrate_host",
    "catalog",
    "claims",
    "compile",
    "convert_model",
    "delegate_names",
    "device_names",
    "estimate",
    "failed_outputs",
    "fit_predictor_from_tables",
    "inspect_model",
    "load_bundle",
    "load_cluster",
    "load_delegate",
    "load_device",
    "parse_input_shape",
    "place",
    "place_graph",
    "plan_cluster",
    "plan_memory",
    "plan_pipeline",
    "profile_host",
    "profile_phone",
    "random_inputs",
    "read_model",
    "recheck_host",
    "refit_predictor",
    "roofline",
    "run_bundle",
    "run_cluster",
    "run_pipeline",
    "simulate_pipeline",
    "stage_costs",
    "train_pipeline",
    "validate_yaml",
    "write_gantt",
    "write_report",
    "write_tflm_plan",
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
