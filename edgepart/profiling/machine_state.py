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

Several threads have a state of their own, which the one-thread canary does not see: how long
the thread pool takes to wake. On the same guest a layer split over two threads costs 1.0-1.1x
its one-thread time for a while, then 2.4-2.9x for 0.1 to 3 seconds at a time (20 split fully
connected layers timed every 13 ms for a minute: slow 5 to 22% of the time), while a kernel that
runs as one task never changes. A batch takes about 1.2 s, so a slow stretch can cover all its
rounds, and the chains' 10th percentile keeps it. Timings of whole models over minutes see the
calm state; a fit that averages the two prices every split kernel too high.
:func:`slow_pool_batches` finds such batches from the chains themselves: per chain, its log
error under a plain linear fit on several threads less its log error on one (what the chain
contains and the machine's speed cancel), the median per batch, and the batches far above the
typical one. They are left out of that configuration's fit (seed 0 of 2026-12-05: 75 of 599
batches, 1,198 of 9,557 chains).

Below that threshold the pool's state is a continuum: on a 2-core Zen 3 guest (2026-12-07) the
batches' medians spread from -6% (10th percentile) to +9% (90th) around the typical batch, and
chains rebuilt from the calibration and timed steadily for a second ran on two threads at 0.57
of their one-thread time where the calibration's batches had measured 0.60. Whole models timed
over minutes find the pool calm; a fit of the typical batch priced their two-thread time 5 to
9% high. :func:`at_calm_pool` brings every chain of a multi-thread configuration to the level
of the calm batches (the lower quarter of the batches' medians): each chain's time is divided
by how far its batch's median is above that level (never multiplied).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgepart.cost.kernels import Kernels
from edgepart.cost.predictor_fit import chain_data, fit_linear, linear_totals
from edgepart.errors import UnsteadyMachineError
from edgepart.profiling.calibrate import Measurements

__all__ = [
    "STEADY_BATCHES",
    "STEADY_LIMIT",
    "UNSTEADY_SPREAD",
    "StateCorrection",
    "at_calm_pool",
    "at_typical_state",
    "batch_speeds",
    "batches_spread",
    "slow_pool_batches",
    "state_sensitivity",
    "steady_check",
]

# rounds a one-thread (CPU-clock) configuration is sampled in, when the batch does not say
CPU_ROUNDS = 5
# chains whose log error under the linear fit is this far from the median are left out of the
# slope (a chain the linear model cannot price says nothing about the machine)
OUTLIER_LOG = 0.5
# the exponent is kept within these bounds
ALPHA_RANGE = (0.0, 3.0)
# a batch whose chains ran slower on several threads, relative to one, than the typical batch
# by more than POOL_Z robust standard deviations and at least POOL_MIN_LOG is left out of the
# multi-thread fit; batches of fewer than POOL_MIN_CHAINS chains are never judged
POOL_Z = 4.0
POOL_MIN_LOG = 0.05
POOL_MIN_CHAINS = 4
# the calm thread pool, as a quantile of the batches' pool medians (at_calm_pool)
CALM_POOL_QUANTILE = 0.25
# A calibration whose batches' canary speeds spread wider than this between their 10th and
# 90th percentile was measured on an unsteady machine (StateCorrection.unsteady). The record on
# one 2-core Zen 3 guest (docs/latency_predictors.md, "An unsteady machine"): seven spreads of
# 1.05 to 1.24 went with held-out chain errors of 5.9 to 11.7% (five under 8%), the five of 1.32
# to 1.40 with 11.6 to 13.2%.
UNSTEADY_SPREAD = 1.3
# A calibration that needs a steady machine (calibrate --host --require-steady, steady_check) is
# judged on its first STEADY_BATCHES batches (about a minute), against STEADY_LIMIT: lower than
# UNSTEADY_SPREAD, since a minute sees less of the machine's swing than the whole run does. In the
# seven calibrations stored from one 2-core Zen 3 guest (2026-12-07), the first 20 batches of the
# two steady runs spread 1.21 and 1.05 (the whole runs 1.18 and 1.20; of their 957 windows of 20
# batches in a row, 19 went past 1.25, all in one run, at most 1.28), of the five unsteady ones
# 1.29-1.38 (the whole runs 1.37-1.40: -0.01 to +0.11 against their first 20 batches).
STEADY_BATCHES = 20
STEADY_LIMIT = 1.25
# After the first minute, the run so far is held to UNSTEADY_SPREAD at every batch: a steady
# start does not promise a steady run. Of the eight calibrations stored (2026-12-07), the two
# steady runs never spread past 1.23 over their batches so far once 21 were in; the six unsteady
# ones all passed 1.3 by their 46th batch (about two minutes), one of them after a first minute
# of 1.249, and ended at 1.34-1.40.

Item = tuple[Kernels, float, float, str | None]


@dataclass(frozen=True)
class StateCorrection:
    """What :func:`at_typical_state` applied to one configuration."""

    alpha: float  # chain time ~ speed ** alpha
    batches: int  # batches with a canary record
    speed_q10: float  # 10th and 90th percentile of the chains' batch speeds (1 = typical)
    speed_q90: float
    slow_pool: int = 0  # batches left out: the thread pool ran slow (slow_pool_batches)

    @property
    def spread(self) -> float:
        """How much slower the machine ran in the slow batches than in the fast ones (90th
        over 10th percentile of the batches' speeds)."""
        return self.speed_q90 / max(self.speed_q10, 1e-9)

    @property
    def unsteady(self) -> bool:
        """The machine swung so much while calibrating (:data:`UNSTEADY_SPREAD`) that taking
        its state out of the chains' times does not save the fit: calibrate again when it is
        quieter."""
        return self.spread > UNSTEADY_SPREAD

    def to_json(self) -> dict[str, float]:
        return {
            "alpha": self.alpha,
            "batches": self.batches,
            "speed_q10": self.speed_q10,
            "speed_q90": self.speed_q90,
            "slow_pool_batches": self.slow_pool,
            "spread": self.spread,
            "unsteady": self.unsteady,
        }


def batch_speeds(meas: Measurements, threads: int) -> dict[int, float]:
    """Per batch with a canary record, its speed relative to the typical batch (module
    docstring); ``{}`` when no batch has one."""
    figures: dict[int, float] = {}
    for b in meas.batches:
        f = _batch_figure(b, threads)
        if f is not None:
            figures[int(b["batch"])] = f
    if not figures:
        return {}
    typical = float(np.median(list(figures.values())))
    return {k: v / typical for k, v in sorted(figures.items())}


def _batch_figure(batch: Mapping[str, Any], threads: int) -> float | None:
    """A batch's canary figure (:func:`batch_speeds`, before it is made relative); None
    without a canary record."""
    samples = batch.get("canary_cpu_s")
    if not samples:
        return None
    # one thread: CPU-clock samples of the first rounds only; more threads: every round
    rounds = int(batch.get("cpu_rounds", CPU_ROUNDS)) if threads == 1 else len(samples)
    return float(np.percentile(samples[: max(rounds, 1)], 10))


def _spread(figures: Sequence[float]) -> float | None:
    """The 90th percentile of batch figures over their 10th; None for fewer than three."""
    if len(figures) < 3:
        return None
    q10, q90 = np.percentile(figures, [10, 90])
    return float(q90 / max(q10, 1e-12))


def batches_spread(meas: Measurements) -> float | None:
    """How unsteady the machine ran over the batches measured so far: the one-thread canary's
    batch speeds (:func:`batch_speeds`), their 90th percentile over their 10th (the figure
    :attr:`StateCorrection.spread` takes over the chains); ``None`` before three batches have a
    canary record."""
    return _spread(list(batch_speeds(meas, 1).values()))


def steady_check(
    limit: float = STEADY_LIMIT, batches: int = STEADY_BATCHES, run_limit: float = UNSTEADY_SPREAD
) -> Callable[[Measurements], None]:
    """A check for :func:`edgepart.profiling.calibrate.measure` (``check=``): once ``batches``
    batches have a canary record, it raises :class:`UnsteadyMachineError` if their
    :func:`batches_spread` is past ``limit``; at every batch after that, if the spread of the
    batches so far is past ``run_limit`` (at least ``limit``). A calibration on such a machine
    would carry that noise (:data:`UNSTEADY_SPREAD`, :data:`STEADY_LIMIT`): better to learn it
    in a minute, or a few, than at the end.

    The check reads only the batches added since its last call on the same measurements (the
    batch figures so far are kept: judging every batch must not cost a pass over all of them,
    43 ms at 380 batches); measurements of another run start it afresh."""
    run_limit = max(run_limit, limit)
    last: Measurements | None = None  # the measurements judged last
    read = 0  # ... and how many of their batches were read
    figures: list[float] = []

    def check(meas: Measurements) -> None:
        nonlocal last, read
        if meas is not last or read > len(meas.batches):
            last, read = meas, 0
            figures.clear()
        for b in meas.batches[read:]:
            f = _batch_figure(b, 1)
            if f is not None:
                figures.append(f)
        read = len(meas.batches)
        done = len(figures)
        if done < batches:
            return
        spread = _spread(figures)
        lim = limit if done == batches else run_limit
        if spread is not None and spread > lim:
            first = "first " if done == batches else ""
            raise UnsteadyMachineError(
                f"calibrate: the machine is unsteady now: over its {first}{done} batches of "
                f"chains the canary's slow batches ran {spread:.2f}x as long as its fast ones "
                f"(past {lim:g}x the whole calibration is likely to be measured in that noise); "
                "nothing was written: calibrate again when the machine is quiet, or without "
                "requiring it steady"
            )

    return check


def _log_residuals(items: Sequence[Item]) -> np.ndarray:
    """Per chain, log(measured / plain linear fit)."""
    d = chain_data(items)
    r: np.ndarray = np.log(d.total / np.maximum(linear_totals(d, fit_linear(d)), 1e-15))
    return r


def state_sensitivity(items: Sequence[Item], speeds: np.ndarray) -> float:
    """The exponent ``alpha`` of ``chain time ~ speed ** alpha`` (module docstring)."""
    x = np.log(np.asarray(speeds, dtype=np.float64))
    if len(items) < 3 or float(np.var(x)) < 1e-8:
        return 0.0
    r = _log_residuals(items)
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


def _pool_medians(
    batches: Sequence[int], items: Sequence[Item], one: Sequence[Item | None]
) -> dict[int, float]:
    """Per batch of at least ``POOL_MIN_CHAINS`` chains measured on one thread too, the median
    over its chains of their log error under a plain linear fit on several threads less their
    log error on one (``{}`` when too few chains or batches)."""
    both = [(b, it, o) for b, it, o in zip(batches, items, one, strict=True) if o is not None]
    if len(both) < 3 * POOL_MIN_CHAINS:
        return {}
    multi = _log_residuals([it for _, it, _ in both])
    single = _log_residuals([o for _, _, o in both])
    per: dict[int, list[float]] = {}
    for (b, _, _), x in zip(both, multi - single, strict=True):
        per.setdefault(int(b), []).append(float(x))
    med = {b: float(np.median(v)) for b, v in per.items() if len(v) >= POOL_MIN_CHAINS}
    return med if len(med) >= 3 else {}


def at_calm_pool(
    batches: Sequence[int], items: Sequence[Item], one: Sequence[Item | None]
) -> tuple[list[Item], dict[str, float] | None]:
    """``items`` (a multi-thread configuration's chains, measured in ``batches``; ``one[i]``
    the same chain on one thread, both at the typical machine state) with each chain's time
    brought to a calm thread pool (module docstring), and what was applied (``None``:
    nothing).

    A batch's pool factor is its median of the chains' log error on several threads less on
    one (:func:`_pool_medians`) above :data:`CALM_POOL_QUANTILE` of all batches' medians; a
    chain's time is divided by it, never multiplied. Chains of batches too small to judge are
    divided by the typical batch's factor."""
    med = _pool_medians(batches, items, one)
    if not med:
        return list(items), None
    vals = np.array(list(med.values()))
    calm = float(np.quantile(vals, CALM_POOL_QUANTILE))
    typical = max(float(np.median(vals)) - calm, 0.0)
    logs = np.array([max(med[int(b)] - calm, 0.0) if int(b) in med else typical for b in batches])
    out = [(k, total * float(np.exp(-x)), fixed, homo)
           for (k, total, fixed, homo), x in zip(items, logs, strict=True)]  # fmt: skip
    return out, {
        "quantile": CALM_POOL_QUANTILE,
        "median_factor": float(np.exp(np.median(logs))),
        "q90_factor": float(np.exp(np.quantile(logs, 0.9))),
    }


def slow_pool_batches(
    batches: Sequence[int], items: Sequence[Item], one: Sequence[Item | None]
) -> set[int]:
    """Batches in which a multi-thread configuration's thread pool ran slow (module
    docstring): ``items`` are its chains, measured in ``batches``, and ``one[i]`` the same
    chain on one thread of the same executor (``None``: not measured there).

    Per chain, how much slower it ran than a plain linear fit says, on several threads less
    on one (what the chain's content and the machine's speed explain cancels); per batch the
    median of that; a batch far above the typical batch (``POOL_Z`` robust deviations, and
    at least ``POOL_MIN_LOG``) ran while waking the pool cost several times its usual."""
    med = _pool_medians(batches, items, one)
    if not med:
        return set()
    vals = np.array(list(med.values()))
    centre = float(np.median(vals))
    spread = 1.4826 * float(np.median(np.abs(vals - centre)))
    limit = centre + max(POOL_Z * spread, POOL_MIN_LOG)
    return {b for b, v in med.items() if v > limit}
