"""``edgepart estimate``'s API: a model file on a device profile, every configuration, untimed.

The device's latency predictor is the one its profile names (``latency_predictor``), the one
given, or, for profiles without one, a predictor *estimated from the profile's specs*
(:func:`spec_predictor`: per kernel, the roofline of its work on the processor plus its
dispatch cost), labelled as such, with the wide band that spec-based estimates earned against
published measurements. Models whose tensor shapes depend on their inputs have them resolved
by one untimed LiteRT run first (:mod:`edgepart.profiling.shape_resolution`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgepart.cost.estimate import estimate_model
from edgepart.cost.hardware import hardware_from_profile
from edgepart.cost.kernels import KERNEL_CLASSES, uncounted_loops
from edgepart.cost.predicted_costs import executor_of
from edgepart.cost.predictor import (
    BASIS,
    ConfigPredictor,
    KernelModel,
    ModelEstimate,
    Predictor,
    load_predictor,
)
from edgepart.devices.profile import load_profile
from edgepart.errors import RuntimeBackendError, UsageError
from edgepart.ir.shapes import apply_input_shapes, has_dynamic_dims
from edgepart.profiling.shape_resolution import resolve
from edgepart.tflite.edgetpu import EDGETPU_OP
from edgepart.tflite.reader import read_model

__all__ = [
    "SPEC_BAND",
    "EstimateReport",
    "config_label",
    "estimate_file",
    "spec_predictor",
]

# Relative error band (10th, 90th percentile of predicted / measured - 1) of predictions from
# specs alone: the roofline of the Pixel 3 and Pixel 4 profiles' specs against TFLite's
# published latencies of 6 models x 3 delegates (edgepart/data/latency/
# tflite_published_pixel.json; tools/fit_phone_profiles.py prints them): 32 points, 10th
# percentile -79%, median -61%, 90th -32%, rounded outwards. Spec rooflines are optimistic: a
# model takes 1.4x to 5x what its specs promise.
SPEC_BAND = (-0.8, -0.3)


def config_label(cp: ConfigPredictor) -> str:
    """``CPU 2 threads (XNNPACK)``, ``CPU 1 thread (builtin)``, ``GPU``, ``NNAPI``."""
    if cp.executor in ("xnnpack", "builtin"):
        t = f"{cp.threads} thread{'s' if cp.threads != 1 else ''}"
        return f"CPU {t} ({'XNNPACK' if cp.executor == 'xnnpack' else 'builtin'})"
    return cp.executor.upper() if cp.executor in ("gpu", "nnapi", "npu") else cp.executor


@dataclass
class EstimateReport:
    """What ``edgepart estimate`` prints."""

    model: str
    device: str
    predictor_source: str
    obtained: str
    estimates: list[ModelEstimate]
    labels: dict[str, str] = field(default_factory=dict)
    shapes_resolved: bool = False
    caveat: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "device": self.device,
            "predictor": self.predictor_source,
            "obtained": self.obtained,
            "shapes_resolved": self.shapes_resolved,
            "caveat": self.caveat,
            "estimates": [
                {**e.to_json(), "label": self.labels.get(e.config, e.config)}
                for e in self.estimates
            ],
        }


def spec_predictor(profile: Any) -> Predictor:
    """A predictor from a device profile's specs alone (``obtained: estimated``).

    Per processor one configuration for its executor: every kernel costs the profile's peak
    and bandwidth roofline of its work (a sum here: compute and traffic do not overlap well
    in small kernels), the invocation the processor's dispatch overhead.
    """
    hw = hardware_from_profile(profile)
    configs: dict[str, ConfigPredictor] = {}
    for proc in hw.processors:
        ex = executor_of(proc.delegate)
        name = f"{ex}_{proc.threads}t" if ex in ("xnnpack", "builtin") else ex
        if name in configs:
            continue
        kernels: dict[str, KernelModel] = {}
        prefix = {"xnnpack": "xnn", "builtin": "tfl"}.get(ex, ex)
        for pfx in sorted({prefix, "tfl"}):
            target = proc if pfx == prefix else next(
                (p for p in hw.processors if p.kind == "cpu"), proc
            )  # fmt: skip
            for cls in KERNEL_CLASSES:
                for q8 in (False, True):
                    peak = target.peak("INT8" if q8 else "FLOAT32") or target.peak("FLOAT32")
                    coef = np.zeros(len(BASIS))
                    if peak > 0:
                        coef[1] = 2e6 / peak  # seconds per million MACs (2 ops each)
                    bw = max(target.bandwidth, 1.0)
                    coef[4] = coef[5] = coef[6] = 1e6 / bw
                    t = f"{pfx}.{cls}{'_q8' if q8 else ''}"
                    kernels[t] = KernelModel(t, coef, cv={"q10": SPEC_BAND[0], "q90": SPEC_BAND[1]})
        configs[name] = ConfigPredictor(
            name=name,
            executor=ex,
            threads=proc.threads,
            invoke_s=proc.invoke_overhead_s,
            node_s={str(proc.delegate): 0.0} if proc.delegate else {},
            kernels=kernels,
            family="roofline",
            cv={"q10": SPEC_BAND[0], "q90": SPEC_BAND[1]},
        )
    return Predictor(
        device=str(profile.title),
        obtained="estimated",
        source=f"estimated from the specs in {os.path.basename(profile.path) or profile.name}",
        configs=configs,
    )


def estimate_file(
    model_path: str | os.PathLike[str],
    profile: str,
    *,
    predictor: str | os.PathLike[str] | None = None,
    configs: Sequence[str] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> EstimateReport:
    """Estimate a model file on a device profile (see the module docstring).

    Raises
    ------
    ProfileError, PredictorError, ModelFormatError, UsageError
        Bad profile, predictor or model, or an unknown configuration.
    """
    prof = load_profile(profile)
    if predictor is not None:
        pred = load_predictor(predictor)
    elif prof.latency_predictor:
        pred = load_predictor(prof.latency_predictor)
    else:
        pred = spec_predictor(prof)
    if configs:
        unknown = [c for c in configs if c not in pred.configs]
        if unknown:
            raise UsageError(
                f"--config {unknown[0]!r}: the predictor has {', '.join(sorted(pred.configs))}"
            )
    path = Path(model_path)
    raw = read_model(path)
    compiled = [i for i in range(raw.main.num_ops) if raw.main.op_name(i) == EDGETPU_OP]
    if compiled:  # a compiled program: no CPU, GPU or NNAPI kernel runs it, so none is predicted
        raise UsageError(
            f"{path}: op {compiled[0]} is a compiled Edge TPU program ({EDGETPU_OP}); only the "
            "Edge TPU runs it and no latency predictor covers the Edge TPU: estimate the model "
            "as it was before edgetpu_compiler, or measure it with a latency table"
        )
    # the sizes it runs at: edgepart's shape propagation (checked against LiteRT tensor by
    # tensor on the corpora), the same the partitioner and the profiler use
    model = apply_input_shapes(raw, input_shapes)
    resolved = has_dynamic_dims(raw)  # its dynamic dimensions got the sizes above
    trips: dict[int, float] = {}
    if uncounted_loops(raw):  # loops as many times as its inputs say: count them in a run
        try:
            trips = resolve(raw, path.read_bytes(), input_shapes).trips
        except (RuntimeBackendError, OSError):
            trips = {}  # the estimate notes the loop's assumed single iteration
    ests = estimate_model(model, pred, configs=configs, trips=trips)
    caveat = ""
    if pred.obtained == "estimated":
        caveat = (
            "no latency predictor for this profile: estimated from its specs (roofline), "
            "which on the Pixel 3/4 published figures were optimistic by 1.4x to 5x (the band)"
        )
    elif pred.obtained == "calibrated":
        caveat = "calibrated from a few published whole-model latencies: " + pred.source
    return EstimateReport(
        model=str(path),
        device=pred.device or prof.title,
        predictor_source=pred.source,
        obtained=_obtained(pred),
        estimates=ests,
        labels={n: config_label(c) for n, c in pred.configs.items()},
        shapes_resolved=resolved,
        caveat=caveat,
    )


def _obtained(pred: Predictor) -> str:
    if pred.obtained == "measured":
        n = pred.calibration.get("chains")
        return f"measured on this host ({n} generated kernel chains)" if n else "measured"
    if pred.obtained == "calibrated":
        n = pred.calibration.get("points")
        return f"calibrated from {n} published data points" if n else "calibrated"
    return "estimated from specs"
