"""How fast the machine ran while each calibration batch was measured, and how much it mattered.

The machine a calibration runs on is shared: its speed moves by several percent from one
minute to the next (other tenants of the host contend for its caches and memory bandwidth),
and now and then by 20% or more for tens of seconds. Every batch of chains is measured within
a few seconds, so all its chains share one machine state, and the *canary*
(:func:`edgepart.profiling.calibrate.canary_model`), timed at the start of every round of the
batch, measures it. On a 2-core Zen 4 guest (2026-12-04) a third of the chains were measured
in batches whose canary ran 8% or more over its best time; the fit of all chains predicted
those 3-13% fast and the chains of the fastest batches 2-6% slow: it priced a mixture of
machine states, and every chain's error carried its batch's state.

This module takes that state out before the fit:

- :func:`batch_speeds`: per batch, the canary's 10th percentile over the rounds the
  configuration's chains were sampled in (the statistic the chains are fitted on by default,
  over the same rounds), relative to the median of that figure over all batches. The
  reference is the calibration's *typical* state, not its fastest moment: the predictor keeps
  predicting the machine as it usually runs, and only the batch-to-batch spread is removed.
- :func:`state_sensitivity`: how strongly the chains follow the canary. Chains of small,
  memory-bound kernels slow down more than the compute-bound canary, so the exponent
  ``alpha`` in ``chain time ~ speed ** alpha`` is fitted, per configuration: the slope of the
  chains' log error under a plain linear fit (:func:`edgepart.cost.predictor_fit.fit_linear`)
  against the log of their batch's speed. The machine state is independent of what a chain
  contains, so the kernels' fit cannot absorb it, and the slope measures it.
- :func:`at_typical_state`: each chain's time divided by ``speed ** alpha``.

Measurements without canary records (older files, or none recorded) are left as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgepart.cost.kernels import Kernels
from edgepart.cost.predictor_fit import chain_data, fit_linear, linear_totals
from edgepart.profiling.calibrate import Measurements

__all__ = ["StateCorrection", "at_typical_state", "batch_speeds", "state_sensitivity"]

# rounds a one-thread (CPU-clock) configuration is sampled in, when the batch does not say
CPU_ROUNDS = 5
# chains whose log error under the linear fit is this far from the median are left out of the
# slope (a chain the linear model cannot price says nothing about the machine)
OUTLIER_LOG = 0.5
# the exponent is kept within these bounds
ALPHA_RANGE = (0.0, 3.0)

Item = tuple[Kernels, float, float, str | None]


@dataclass(frozen=True)
class StateCorrection:
    """What :func:`at_typical_state` applied to one configuration."""

    alpha: float  # chain time ~ speed ** alpha
    batches: int  # batches with a canary record
    speed_q10: float  # 10th and 90th percentile of the chains' batch speeds (1 = typical)
    speed_q90: float

    def to_json(self) -> dict[str, float]:
        return {
            "alpha": self.alpha,
            "batches": self.batches,
            "speed_q10": self.speed_q10,
            "speed_q90": self.speed_q90,
        }


def batch_speeds(meas: Measurements, threads: int) -> dict[int, float]:
    """Per batch with a canary record, its speed relative to the typical batch (module
    docstring); ``{}`` when no batch has one."""
    figures: dict[int, float] = {}
    for b in meas.batches:
        samples = b.get("canary_cpu_s")
        if not samples:
            continue
        # one thread: CPU-clock samples of the first rounds only; more threads: every round
        rounds = int(b.get("cpu_rounds", CPU_ROUNDS)) if threads == 1 else len(samples)
        figures[int(b["batch"])] = float(np.percentile(samples[: max(rounds, 1)], 10))
    if not figures:
        return {}
    typical = float(np.median(list(figures.values())))
    return {k: v / typical for k, v in sorted(figures.items())}


def state_sensitivity(items: Sequence[Item], speeds: np.ndarray) -> float:
    """The exponent ``alpha`` of ``chain time ~ speed ** alpha`` (module docstring)."""
    x = np.log(np.asarray(speeds, dtype=np.float64))
    if len(items) < 3 or float(np.var(x)) < 1e-8:
        return 0.0
    d = chain_data(items)
    coef = fit_linear(d)
    r = np.log(d.total / np.maximum(linear_totals(d, coef), 1e-15))
    ok = np.abs(r - np.median(r)) < OUTLIER_LOG
    xs, rs = x[ok] - x[ok].mean(), r[ok] - r[ok].mean()
    den = float((xs * xs).sum())
    if den <= 0.0:
        return 0.0
    alpha = float((xs * rs).sum()) / den
    return float(np.clip(alpha, *ALPHA_RANGE))


def at_typical_state(
    meas: Measurements, batches: Sequence[int], items: Sequence[Item], threads: int
) -> tuple[list[Item], StateCorrection | None]:
    """``items`` (one per chain, measured in ``batches``) with each chain's time brought to the
    calibration's typical machine state, and what was applied (``None``: nothing to apply)."""
    table = batch_speeds(meas, threads)
    if not table:
        return list(items), None
    speeds = np.array([table.get(int(b), 1.0) for b in batches])
    alpha = state_sensitivity(items, speeds)
    factor = speeds ** (-alpha)
    out = [(k, total * float(f), fixed, homo)
           for (k, total, fixed, homo), f in zip(items, factor, strict=True)]  # fmt: skip
    q10, q90 = np.percentile(speeds, [10, 90])
    return out, StateCorrection(alpha, len(table), float(q10), float(q90))
