"""``edgepart calibrate --host``: this machine's profile, measured, with its latency predictor.

:func:`calibrate_host` runs, within one time budget:

1. the roofs (:mod:`edgepart.profiling.host_roofs`: peaks, bandwidth, memory);
2. the chain measurements (:func:`edgepart.profiling.calibrate.measure`) with adaptive
   sampling (:func:`adaptive_weights`), stopping early enough for the fit;
3. the fit (:func:`edgepart.profiling.host_predictor.fit_host_predictor`);

and writes three files into the output directory (by default the one ``--profile host``
resolves to, :func:`edgepart.devices.profile.host_profile_path`):

- ``host.yaml``: an ``edgepart/device@1`` profile of this machine, every number measured,
  naming the predictor (``latency_predictor: host.predictor.json``);
- ``host.predictor.json``: the predictor (:mod:`edgepart.cost.predictor`);
- ``host.measurements.npz``: the measurements, so ``calibrate --fit-only`` can refit them
  (identically for the same seed) without measuring again.

:func:`recheck_host` (``calibrate --host --recheck``) times a few of those chains again and
stores in the predictor how much faster or slower the machine runs now than it did then
(:mod:`edgepart.profiling.recheck`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgepart.cost.predictor import Predictor, load_predictor
from edgepart.cost.predictor_fit import FitReport, chain_data, cross_validate
from edgepart.devices.profile import host_profile_path
from edgepart.errors import UnsteadyMachineError, UsageError
from edgepart.fileio import atomic_write_text
from edgepart.profiling import machine_state
from edgepart.profiling.calibrate import (
    MeasureConfig,
    Measurements,
    chains_for,
    config_name,
    load_measurements,
    measure,
)
from edgepart.profiling.host_predictor import fit_host_predictor
from edgepart.profiling.host_roofs import measure_bandwidth, measure_peak, memory_bytes
from edgepart.profiling.kernel_gen import CLASS_WEIGHTS
from edgepart.profiling.recheck import RECHECK_CHAINS, Recheck, apply_recheck, recheck

__all__ = [
    "MEASURE_SHARE",
    "HostCalibration",
    "adaptive_weights",
    "calibrate_host",
    "default_configs",
    "recheck_host",
    "refit",
    "write_host_profile",
]

PROFILE_FILE = "host.yaml"
PREDICTOR_FILE = "host.predictor.json"
MEASUREMENTS_FILE = "host.measurements.npz"
# share of the budget spent measuring (the roofs included); fitting (cross-validating three
# families per configuration, the boosted trees bagged four times) takes 0.45-0.55 of the
# measuring time: three 20-minute calibrations on a 2-core Zen 4 guest measured for 791 s
# and fitted in 355, 381 and 434 s, the last 26 s over the budget at a share of 0.66
MEASURE_SHARE = 0.60
Progress = Callable[[float, str], None]


def default_configs(cores: int | None = None) -> list[tuple[str, int]]:
    """XNNPACK with 1 to min(cores, 4) threads, builtin kernels with 1."""
    n = max(1, min(cores or os.cpu_count() or 1, 4))
    return [("xnnpack", t) for t in range(1, n + 1)] + [("builtin", 1)]


@dataclass
class HostCalibration:
    """What :func:`calibrate_host` did and wrote."""

    out_dir: Path
    predictor: Predictor
    reports: list[FitReport]
    measurements: Measurements
    roofs: dict[str, Any]
    elapsed_s: float
    budget_s: float
    files: list[Path] = field(default_factory=list)


def adaptive_weights(meas: Measurements, config: str | None = None) -> dict[str, float]:
    """Class weights for the next chains: the default weight times how much worse than the
    median class the class's homogeneous chains are predicted (a quick linear fit,
    cross-validated), clipped to 0.5x..3x."""
    name = config or config_name(*meas.configs[0])
    ex = name.rsplit("_", 1)[0]
    fx = meas.fixed.get(name, {})
    inv = float(fx.get("invoke", {}).get("p10_s", 0.0))
    node = max(float(fx.get("delegate_node", {}).get("p10_s", inv)) - inv, 0.0)
    items = [
        (c.kernels[ex], t, inv + c.partitions.get(ex, 0) * node, c.spec.homogeneous)
        for c, t in chains_for(meas, name)
    ]
    if len(items) < 30:
        return dict(CLASS_WEIGHTS)
    d = chain_data(items)
    pred, _ = cross_validate(d, "linear", folds=3, seed=meas.seed)
    err = np.abs(pred / d.total - 1.0)
    per: dict[str, float] = {}
    for cls in CLASS_WEIGHTS:
        sel = [i for i, h in enumerate(d.homo) if h == cls]
        if len(sel) >= 3:
            per[cls] = float(np.median(err[sel]))
    if not per:
        return dict(CLASS_WEIGHTS)
    mid = float(np.median(list(per.values()))) or 1e-3
    out = {}
    for cls, w in CLASS_WEIGHTS.items():
        f = per.get(cls, mid) / max(mid, 1e-6)
        out[cls] = w * float(np.clip(f, 0.5, 3.0))
    return out


def calibrate_host(
    *,
    configs: Sequence[tuple[str, int]] | None = None,
    budget_s: float = 1800.0,
    seed: int = 0,
    family: str = "auto",
    statistic: str = "p10",
    out_dir: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    require_steady: float | None = None,
) -> HostCalibration:
    """Measure this machine and write its profile and predictor (module docstring).

    ``require_steady``: stop after the first
    :data:`~edgepart.profiling.machine_state.STEADY_BATCHES` batches if the machine ran more
    unsteadily than this, or at any later batch if the batches so far ran more unsteadily
    than :data:`~edgepart.profiling.machine_state.UNSTEADY_SPREAD`
    (:func:`~edgepart.profiling.machine_state.steady_check`), writing nothing; ``None``
    calibrates whatever the machine does (the fit reports how steady it was).

    Raises
    ------
    UsageError
        On a budget too small to measure anything useful.
    UnsteadyMachineError
        With ``require_steady``, on a machine that ran less steadily.
    """
    if budget_s < 30:
        raise UsageError(f"--budget {budget_s / 60:g} min: need at least half a minute")
    t0 = time.monotonic()
    cfgs = list(configs or default_configs())
    out = Path(out_dir) if out_dir is not None else host_profile_path().parent
    # the directories this call creates, the leaf first: removed again if it stops early
    created = list(itertools.takewhile(lambda d: not d.exists(), (out, *out.parents)))
    out.mkdir(parents=True, exist_ok=True)
    if progress:
        progress(0.0, "roofs")
    roofs = measure_roofs(max(t for _, t in cfgs))
    deadline = t0 + budget_s * MEASURE_SHARE
    mcfg = MeasureConfig(configs=tuple(cfgs), budget_s=budget_s * MEASURE_SHARE, seed=seed)

    def on_progress(frac: float, label: str) -> None:
        if progress:
            progress(min(frac * MEASURE_SHARE, MEASURE_SHARE), label)

    check = None
    if require_steady is not None:
        check = machine_state.steady_check(require_steady, machine_state.STEADY_BATCHES)
    try:
        meas = measure(
            mcfg, progress=on_progress, weights_for=adaptive_weights, deadline=deadline, check=check
        )
    except UnsteadyMachineError:
        for d in created:  # nothing was written into them
            with contextlib.suppress(OSError):
                d.rmdir()
        raise
    meas.budget_s = budget_s
    mpath = out / MEASUREMENTS_FILE
    meas.save(mpath)

    def fit_progress(label: str) -> None:
        if progress:
            el = time.monotonic() - t0
            progress(min(max(el / budget_s, MEASURE_SHARE), 0.99), label)

    pred, reports = fit_host_predictor(
        meas, statistic=statistic, family=family, seed=seed, progress=fit_progress
    )
    ppath = out / PREDICTOR_FILE
    pred.save(ppath)
    prof = out / PROFILE_FILE
    write_host_profile(prof, roofs, meas, pred, PREDICTOR_FILE)
    if progress:
        progress(1.0, "done")
    return HostCalibration(
        out_dir=out,
        predictor=pred,
        reports=reports,
        measurements=meas,
        roofs=roofs,
        elapsed_s=time.monotonic() - t0,
        budget_s=budget_s,
        files=[prof, ppath, mpath],
    )


def refit(
    measurements: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    family: str = "auto",
    statistic: str = "p10",
    seed: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[Predictor, list[FitReport]]:
    """Fit a predictor from saved measurements and write it to ``out`` (same measurements and
    seed: the same bytes)."""
    meas = load_measurements(measurements)
    pred, reports = fit_host_predictor(
        meas,
        statistic=statistic,
        family=family,
        seed=meas.seed if seed is None else seed,
        progress=progress,
    )
    pred.save(out)
    return pred, reports


def recheck_host(
    predictor: str | os.PathLike[str],
    measurements: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    chains: int = RECHECK_CHAINS,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Predictor, dict[str, Recheck]]:
    """Time ``chains`` of the calibration's chains (``measurements``) again and write the
    predictor with each configuration's latency scale to ``out`` (atomically; the input is
    read in full first, so ``out`` may be the same file)."""
    pred = load_predictor(predictor)
    meas = load_measurements(measurements)
    checks = recheck(meas, pred, chains=chains, seed=seed, progress=progress)
    apply_recheck(pred, checks).save(out)
    return pred, checks


def measure_roofs(threads: int) -> dict[str, Any]:
    """Peaks (all calibrated threads), bandwidth, memory, invocation overhead."""
    total, avail = memory_bytes()
    return {
        "fp32": measure_peak(False, threads),
        "int8": measure_peak(True, threads),
        "bandwidth": measure_bandwidth(),
        "memory_total": total,
        "memory_available": avail,
        "threads": threads,
        "cores": os.cpu_count() or 1,
    }


def _q(value: float, source: str) -> str:
    """A measured quantity in flow style; floats with a mantissa dot (PyYAML reads ``3e-07``
    as text)."""
    v = str(int(value)) if float(value).is_integer() else f"{value:.6e}"
    src = source.replace('"', "'")
    return f'{{value: {v}, provenance: measured, source: "{src}"}}'


def write_host_profile(
    path: str | os.PathLike[str],
    roofs: dict[str, Any],
    meas: Measurements,
    pred: Predictor,
    predictor_file: str,
) -> None:
    """Write the calibrated ``host`` device profile (every number measured here)."""
    host = meas.host
    cx = pred.configs.get(config_name("xnnpack", 1))
    invoke = cx.invoke_s if cx is not None else 3e-7
    threads = int(roofs["threads"])
    bw = float(roofs["bandwidth"])
    lines = [
        "# This machine, measured by `edgepart calibrate --host`; used by `--profile host`.",
        "schema: edgepart/device@1",
        "name: host",
        f'title: "This host: {host.get("description", "?")}"',
        f'soc: "{host.get("description", "?")}; SIMD: {host.get("simd", "?")}"',
        "source: >-",
        f"  measured on this machine by edgepart calibrate --host (ai-edge-litert "
        f"{host.get('litert', '?')}): {len(meas.chains)} generated kernel chains in "
        f"{meas.elapsed_s:.0f} s, LiteRT XNNPACK fully connected stacks for the peaks, a NumPy "
        "copy for the bandwidth, /proc/meminfo for the memory.",
        f"latency_predictor: {predictor_file}",
        "default_delegates: []",
        "memory_domains:",
        "  dram:",
        f"    capacity_bytes: {_q(float(roofs['memory_total']), '/proc/meminfo MemTotal')}",
        f"    bandwidth_bytes_per_s: {_q(bw, 'numpy copyto of 256 MiB, best of 5')}",
        "processors:",
        "  - name: cpu",
        "    kind: cpu",
        "    delegate: xnnpack",
        f"    units: {_q(float(roofs['cores']), 'os.cpu_count()')}",
        f"    threads: {_q(float(threads), 'most threads calibrated')}",
        "    peak_ops_per_s:",
        f"      fp32: {_q(float(roofs['fp32']['best']), roofs['fp32']['source'])}",
        f"      int8: {_q(float(roofs['int8']['best']), roofs['int8']['source'])}",
        f"    memory_bandwidth_bytes_per_s: {_q(bw, 'same copy test as the dram domain')}",
        f"    memory_capacity_bytes: {_q(float(roofs['memory_available']), '/proc/meminfo MemAvailable')}",  # noqa: E501
        "    memory_domain: dram",
        f"    dispatch_overhead_s: {_q(float(invoke), 'empty LiteRT invocation, 10th percentile')}",
    ]
    atomic_write_text(path, "\n".join(lines) + "\n")
