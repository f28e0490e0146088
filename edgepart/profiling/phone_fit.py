"""Phone predictors from a handful of whole-model latencies: a constrained fit per delegate.

A phone cannot be calibrated here, but published whole-model latencies (or a few
``benchmark_model`` runs) can calibrate a predictor of the same format as the host's. Per
executor configuration (CPU with N threads, GPU, NNAPI ...), every model's kernels
(:func:`edgepart.cost.kernels.decompose` with that delegate's claiming and fusion) are summed
into a few *work terms* from the device profile's specs:

- ``mac``: roofline compute time of convolutions, fully connected and matrix products
  (MACs x 2 / the processor's peak for the kernel's dtype; on the CPU 8-bit kernels count at
  twice the float rate, what TFLite's 8-bit CPU kernels of the published runs achieved rather
  than the dot-product peak);
- ``mem``: roofline memory time of every other kernel, depthwise convolutions included
  (bytes / bandwidth);
- ``kernels``: the number of kernels (dispatch and launch costs);
- ``partitions``: delegate partitions (each hands data to and from the CPU);

plus the time of the ops the delegate leaves to the CPU, predicted by the CPU configuration
(fitted first). The latency of a model is modelled as a non-negative combination of the terms:
``c_mac`` and ``c_mem`` are inverse efficiency factors against the spec roofline,
``c_kernels`` and ``c_partitions`` fixed costs. The coefficients minimize the relative error
over the models, with a pull toward a prior (efficiency 1/3 of the specs, 20 us per kernel on
accelerators, 2 us on the CPU, 1 ms per partition, which includes the invocation), which
decides what a handful of points cannot: the fit is *constrained* by the physics, not free.
The term set and the prior's strength were chosen by the leave-one-model-out error over both
Pixels and all three delegates together (not per device): depthwise convolutions with their
own term, or a weaker prior, overfit five points.

:func:`leave_one_out` refits without each model in turn and predicts it: the median of those
errors is the figure the profiles quote, and their 10th/90th percentiles become the
predictor's uncertainty band.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgepart.cost.hardware import Hardware, ProcessorSpec
from edgepart.cost.kernels import FEATURES, KERNEL_CLASSES, Kernels
from edgepart.cost.predictor import BASIS, ConfigPredictor, KernelModel

__all__ = ["TERMS", "WholeModelPoint", "fit_terms", "leave_one_out", "term_matrix", "to_config"]

TERMS = ("mac", "mem", "kernels", "partitions")
_F = {n: k for k, n in enumerate(FEATURES)}
_MAC = {"conv", "fc", "tconv", "bmm"}
_PRIOR_EFF = 3.0  # seconds per roofline second: a third of the spec peak


@dataclass
class WholeModelPoint:
    """One measured model on one configuration: its kernels and latency (seconds)."""

    model: str
    kernels: Kernels
    seconds: float
    offset: float = 0.0  # time of kernels another configuration predicts (CPU fallback)
    source: str = ""


@dataclass
class TermFit:
    """Coefficients per term, the invocation cost, and how they were obtained."""

    coef: dict[str, float]
    invoke_s: float
    points: int
    residuals: dict[str, float] = field(default_factory=dict)


def _class(t: str) -> str:
    return t.partition("@")[0].partition(".")[2].removesuffix("_q8")


def term_matrix(k: Kernels, proc: ProcessorSpec, own_prefix: str) -> np.ndarray:
    """The work terms (:data:`TERMS`) of the kernels ``k`` runs on ``proc`` (those typed with
    ``own_prefix``; the rest are the CPU's)."""
    out = np.zeros(len(TERMS))
    bw = max(proc.bandwidth, 1.0)
    cpu = own_prefix in ("xnn", "tfl")
    for t, f, r in zip(k.types, k.features, k.repeat, strict=True):
        if not t.startswith(own_prefix + "."):
            continue
        cls = _class(t)
        out[2] += r
        if cls in _MAC:
            out[0] += r * 2.0 * f[_F["macs"]] / _mac_peak(proc, t.endswith("_q8"), cpu)
        else:
            out[1] += r * (f[_F["in_bytes"]] + f[_F["out_bytes"]] + f[_F["w_bytes"]]) / bw
    out[3] = 0.0 if cpu else float(k.partitions.get(own_prefix, 0))
    return out


def _mac_peak(proc: ProcessorSpec, q8: bool, cpu: bool) -> float:
    f32 = proc.peak("FLOAT32") or proc.peak("FLOAT16") or 1.0
    if not q8:
        return f32
    return 2.0 * f32 if cpu else (proc.peak("INT8") or f32)


STRENGTH = 0.4


def _prior(accel: bool) -> np.ndarray:
    return np.array([_PRIOR_EFF, _PRIOR_EFF, 20e-6 if accel else 2e-6, 1e-3])


def fit_terms(
    rows: np.ndarray,
    seconds: np.ndarray,
    offsets: np.ndarray,
    invoke_s: float,
    *,
    accel: bool,
    strength: float = STRENGTH,
) -> np.ndarray:
    """Non-negative term coefficients minimizing the relative error, pulled toward the prior.

    ``rows``: ``[models, len(TERMS)]``; ``seconds``: measured latencies; ``offsets``: CPU
    fallback time included in them.
    """
    # scipy is optional (the `calibrate` extra): load it only when a phone profile is fitted
    from scipy.optimize import nnls

    y = np.maximum(seconds - offsets - invoke_s, 1e-6 * seconds)
    prior = _prior(accel)
    used = np.flatnonzero(rows.sum(axis=0) > 0)
    a = rows[:, used] / y[:, None]
    # prior rows: strength * (theta_j / prior_j - 1) = 0 for each used term
    pa = np.diag(strength / prior[used])
    bb = np.vstack([a, pa])
    rr = np.concatenate([np.ones(len(y)), np.full(len(used), strength)])
    sol, _ = nnls(bb, rr, maxiter=1000)
    coef = np.zeros(len(TERMS))
    coef[used] = sol
    return coef


def predict_terms(
    rows: np.ndarray, coef: np.ndarray, offsets: np.ndarray, invoke: float
) -> np.ndarray:
    out: np.ndarray = rows @ coef + offsets + invoke
    return out


def leave_one_out(
    rows: np.ndarray, seconds: np.ndarray, offsets: np.ndarray, invoke_s: float, *, accel: bool
) -> np.ndarray:
    """Relative error (predicted / measured - 1) of each point predicted by a fit without it."""
    n = len(seconds)
    err = np.zeros(n)
    for i in range(n):
        keep = np.arange(n) != i
        c = fit_terms(rows[keep], seconds[keep], offsets[keep], invoke_s, accel=accel)
        err[i] = predict_terms(rows[i : i + 1], c, offsets[i : i + 1], invoke_s)[0] / seconds[i] - 1
    return err


def to_config(
    name: str,
    executor: str,
    threads: int,
    proc: ProcessorSpec,
    coef: np.ndarray,
    invoke_s: float,
    *,
    prefix: str,
    cv: Mapping[str, float],
    delegate: str | None,
    fallback: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> ConfigPredictor:
    """The fitted terms as a predictor configuration (the host's format: linear kernel models
    over :data:`edgepart.cost.predictor.BASIS`)."""
    bw = max(proc.bandwidth, 1.0)
    kernels: dict[str, KernelModel] = {}
    cpu = prefix in ("xnn", "tfl")
    for cls in KERNEL_CLASSES:
        for q8 in (False, True):
            c = np.zeros(len(BASIS))
            c[0] = coef[2]
            if cls in _MAC:
                c[1] = coef[0] * 2e6 / _mac_peak(proc, q8, cpu)
            else:
                c[4] = c[5] = c[6] = coef[1] * 1e6 / bw
            t = f"{prefix}.{cls}{'_q8' if q8 else ''}"
            kernels[t] = KernelModel(t, c, cv={k: float(v) for k, v in cv.items()})
    return ConfigPredictor(
        name=name,
        executor=executor,
        threads=threads,
        invoke_s=invoke_s,
        node_s={delegate: float(coef[3])} if delegate else {},
        kernels=kernels,
        family="terms",
        cv=dict(cv),
        fallback=fallback,
        extra={"terms": dict(zip(TERMS, [float(v) for v in coef], strict=True)), **(extra or {})},
    )


def summarize(err: Sequence[float]) -> dict[str, float]:
    e = np.asarray(err, dtype=np.float64)
    if not len(e):
        return {}
    return {
        "n": float(len(e)),
        "median_abs": float(np.median(np.abs(e))),
        "q10": float(np.quantile(e, 0.1)),
        "q90": float(np.quantile(e, 0.9)),
        "max_abs": float(np.max(np.abs(e))),
    }


def hardware_processor(hw: Hardware, delegate: str) -> ProcessorSpec:
    """The processor of ``hw`` reached through ``delegate``."""
    for p in hw.processors:
        if p.delegate == delegate:
            return p
    raise KeyError(f"{hw.name}: no processor with delegate {delegate!r}")
