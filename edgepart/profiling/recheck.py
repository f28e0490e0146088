"""How fast this machine runs now against its calibration: a few of its chains timed again.

A host predictor (:func:`edgepart.profiling.host_calibration.calibrate_host`) prices the
machine as it ran while it was calibrated. A shared machine does not keep that speed: on the
2-core cloud guest these figures come from (2026-12-06), a predictor came out 12 to 16% high
on every model two hours after its calibration and level three hours after (every model and
configuration by about the same factor: the neighbours' load on the caches, memory bandwidth
and clocks, not anything in the models). Over a few minutes the speed mostly holds, so the
error such a drift leaves is one factor per configuration, and ten seconds of timing measure
it; when it does not hold while the chains are timed, their ratios spread
(:attr:`Recheck.unsteady`).

:func:`recheck` rebuilds ``chains`` of the calibration's own chains from their specs (a fixed,
seeded choice among those measured on every configuration), times them again with the
calibration's sampler (interleaved, a fresh random order per round: :mod:`.whole`) and
compares each with its calibration time brought to the calibration's typical machine state
(:mod:`.machine_state`: the batch's canary speed to the power the fit found), the level the
predictor was fitted at. (A configuration of several threads was fitted a little lower, at a
calm thread pool, :func:`.machine_state.at_calm_pool`; its chains are timed now as the
calibration timed them, so ``now / then`` is still the machine's drift, like against like.)
The median of ``now / then`` over the chains is the configuration's
*latency scale*; :func:`apply_recheck` stores it in the predictor
(:attr:`edgepart.cost.predictor.ConfigPredictor.latency_scale`), which multiplies every
prediction of the configuration by it and says so in each estimate's notes. Nothing fitted
changes: a later recheck replaces the scale, a refit drops it.

A scale is applied only when it tells a shift apart from the machine's swing from one minute
to the next (:attr:`Recheck.applies`): more than :data:`MIN_SHIFT` either way, measured while
the machine held steady. Ten seconds measure the moment they run in. Re-checks of 0.85 and
0.90 held for the runs that followed and brought 28 to 52 points of models back within 10%;
re-checks of 1.03 and 1.05 (the latter unsteady) were gone a minute later and cost 6 to 26
points, and ones of 0.97 (quartiles wide apart) and 1.11-1.20 (two threads unsteady) left the
models 5 to 17% off (``docs/latency_predictors.md``, twenty-seventh to thirty-sixth
sessions).

The chains are generated kernel configurations, the ones the predictor was fitted on: no model
a prediction is made for is timed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from edgepart.cost.predictor import LATENCY_SCALE_RANGE, Predictor
from edgepart.errors import PredictorError
from edgepart.profiling.calibrate import Measurements, chains_for, config_name
from edgepart.profiling.kernel_gen import build_chain
from edgepart.profiling.machine_state import batch_speeds
from edgepart.profiling.whole import measure_models
from edgepart.tflite.writer import write_model

__all__ = [
    "MIN_SHIFT",
    "RECHECK_CHAINS",
    "UNSTEADY",
    "Recheck",
    "apply_recheck",
    "probe_chains",
    "recheck",
]

RECHECK_CHAINS = 64
"""Chains timed again by default: the median of 64 ratios whose spread is about 5% (their
quartiles, measured) is within about 1% of the ratio."""

RECHECK_ROUNDS = 9

UNSTEADY = 1.10
"""Quartiles of the chains' ratios further apart than this factor: the machine's speed moved
while they were timed (2-core guest, 2026-12-06: 1.05 to 1.10 in the re-checks the models'
timings then agreed with, 1.10 to 1.14 in one they missed by 5 to 8%)."""

MIN_SHIFT = 0.05
"""The least shift a re-check applies (a scale below ``1 / 1.05`` or above ``1.05``): the 2-core
guest's speed against its calibration swung between 0.964 and 1.034 within 13 minutes
(2026-12-07), and the models timed a minute after a re-check of 1.026-1.039 ran at 0.97-1.01."""


@dataclass(frozen=True)
class Recheck:
    """One configuration re-checked: the median of ``now / then`` over ``chains`` chains
    (``scale``) and its quartiles."""

    config: str
    scale: float
    chains: int
    q25: float
    q75: float

    @property
    def unsteady(self) -> bool:
        """Whether the machine's speed moved while the chains were timed (:data:`UNSTEADY`)."""
        return self.q75 > UNSTEADY * self.q25

    @property
    def applies(self) -> bool:
        """Whether the scale is a shift to apply: beyond :data:`MIN_SHIFT` either way, and the
        machine steady while the chains were timed (module docstring)."""
        shifted = abs(np.log(self.scale)) > np.log1p(MIN_SHIFT)
        return bool(shifted and not self.unsteady)

    @property
    def verdict(self) -> str:
        """What was done with the scale, and why, in words (``calibrate --host --recheck``)."""
        if self.applies:
            return f"predictions scaled by {self.scale:.3f}"
        if self.unsteady:
            return "not applied: the machine was unsteady while re-checking"
        return f"not applied: within the {MIN_SHIFT:.0%} this machine swings by minute to minute"

    def to_json(self) -> dict[str, float | int | str]:
        return {
            "config": self.config,
            "scale": self.scale,
            "chains": self.chains,
            "q25": self.q25,
            "q75": self.q75,
        }


def _alphas(pred: Predictor) -> dict[str, float]:
    """Per configuration, the exponent the fit brought chain times to the typical machine
    state with (0: none recorded, times as measured)."""
    out: dict[str, float] = {}
    for rep in pred.calibration.get("reports", []) or []:
        state = rep.get("machine_state") if isinstance(rep, dict) else None
        if isinstance(state, dict) and "alpha" in state:
            out[str(rep.get("config"))] = float(state["alpha"])
    return out


def probe_chains(
    meas: Measurements,
    configs: Sequence[str],
    chains: int = RECHECK_CHAINS,
    *,
    statistic: str = "p10",
    alphas: dict[str, float] | None = None,
    seed: int = 0,
) -> list[tuple[bytes, dict[str, float]]]:
    """``chains`` of the calibration's chains measured on every one of ``configs``, as models,
    each with its calibration time per configuration (seconds, on ``statistic``), brought to
    the typical machine state where ``alphas`` gives the configuration's exponent. The choice
    is fixed by ``seed``."""
    then: dict[int, dict[str, float]] = {}
    recs = {}
    threads = {config_name(ex, th): th for ex, th in meas.configs}
    for c in configs:
        speeds = batch_speeds(meas, threads[c])
        alpha = (alphas or {}).get(c, 0.0)
        for rec, total in chains_for(meas, c, statistic):
            f = speeds.get(int(rec.batch), 1.0) ** (-alpha) if alpha else 1.0
            then.setdefault(id(rec), {})[c] = total * f
            recs[id(rec)] = rec
    both = sorted((k for k, v in then.items() if len(v) == len(configs)),
                  key=lambda k: json.dumps(recs[k].spec.to_json(), sort_keys=True))  # fmt: skip
    rng = np.random.default_rng([seed, 17])
    pick = rng.choice(len(both), size=min(chains, len(both)), replace=False)
    return [(write_model(build_chain(recs[both[i]].spec)), then[both[i]]) for i in sorted(pick)]


def recheck(
    meas: Measurements,
    pred: Predictor,
    *,
    chains: int = RECHECK_CHAINS,
    rounds: int = RECHECK_ROUNDS,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Recheck]:
    """Time ``chains`` of the calibration's chains again on every configuration of ``pred``
    that ``meas`` measured; per configuration, the latency scale (module docstring).

    Raises
    ------
    PredictorError
        When the measurements share no configuration with the predictor, or too few chains
        (under 8) were measured on all of them to judge the machine's speed by.
    """
    measured = {config_name(ex, th) for ex, th in meas.configs}
    configs = sorted(c for c in pred.configs if c in measured)
    if not configs:
        raise PredictorError(
            f"the measurements ({', '.join(sorted(measured))}) share no configuration with the "
            f"predictor ({', '.join(sorted(pred.configs))}); re-check with the measurements "
            "the predictor was fitted on"
        )
    statistic = str(pred.calibration.get("statistic", "p10"))
    probes = probe_chains(meas, configs, chains, statistic=statistic, alphas=_alphas(pred),
                          seed=seed)  # fmt: skip
    if len(probes) < 8:
        raise PredictorError(
            f"only {len(probes)} chains were measured on all of {', '.join(configs)}; "
            "calibrate again (calibrate --host)"
        )
    plan = [(c, pred.configs[c].executor, pred.configs[c].threads) for c in configs]
    models = {f"probe:{i}": (content, None) for i, (content, _) in enumerate(probes)}
    timings = measure_models(models, plan, rounds=rounds, seed=seed, progress=progress)
    ratios: dict[str, list[float]] = {c: [] for c in configs}
    for t in timings:
        now = t.value(statistic, "auto")
        then = probes[int(t.name.split(":")[1])][1].get(t.config)
        if now is not None and then:
            ratios[t.config].append(now / then)
    out: dict[str, Recheck] = {}
    for c, r in ratios.items():
        if len(r) < 8:
            raise PredictorError(f"{c}: only {len(r)} chains ran again; calibrate again")
        q25, med, q75 = np.percentile(r, [25, 50, 75])
        out[c] = Recheck(c, float(med), len(r), float(q25), float(q75))
    return out


def apply_recheck(pred: Predictor, checks: dict[str, Recheck]) -> Predictor:
    """``pred`` with each re-checked configuration's latency scale set (in place; returned):
    the re-check's scale where it :attr:`~Recheck.applies`, else 1 (the re-check is recorded
    either way, with ``applied``).

    Raises
    ------
    PredictorError
        A scale outside :data:`edgepart.cost.predictor.LATENCY_SCALE_RANGE`: the machine is not
        the one calibrated, or nothing like it now.
    """
    lo, hi = LATENCY_SCALE_RANGE
    for c, chk in sorted(checks.items()):
        if not lo <= chk.scale <= hi:
            raise PredictorError(
                f"{c}: the calibration's chains run at {chk.scale:.2f} times their calibration "
                f"time (allowed {lo} to {hi}): is this the machine that was calibrated? "
                "Calibrate it again (calibrate --host)"
            )
    for c, chk in sorted(checks.items()):
        cp = pred.configs[c]
        cp.latency_scale = chk.scale if chk.applies else 1.0
        record = {k: v for k, v in chk.to_json().items() if k != "config"}
        cp.extra = {**cp.extra, "recheck": {**record, "applied": chk.applies}}
    return pred
