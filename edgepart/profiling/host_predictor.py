"""Fit a host predictor from calibration measurements (:mod:`edgepart.profiling.calibrate`).

One :class:`~edgepart.cost.predictor.ConfigPredictor` per measured configuration, fitted by
:func:`edgepart.cost.predictor_fit.fit_config` on the chains' chosen statistic (default the
10th percentile of the samples: interference only adds time). A configuration's fixed costs
are the measured empty invocation and delegate node. Builtin kernels inside XNNPACK
configurations are fitted with the XNNPACK kernels; kernel types a configuration never saw
fall back to the builtin configuration with the same thread count, else one thread.

The result depends only on the measurements, the statistic, the family and the seed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from edgepart.cost.kernels import AFTER_QD8
from edgepart.cost.predictor import ConfigPredictor, Predictor
from edgepart.cost.predictor_fit import FitReport, chain_data, config_predictor, fit_config
from edgepart.cost.stats import STAT_GETTERS, Stats
from edgepart.errors import UsageError
from edgepart.profiling.calibrate import Measurements, chains_for, config_name, summarize_load

__all__ = ["fit_host_predictor"]


def fit_host_predictor(
    meas: Measurements,
    *,
    statistic: str = "p10",
    family: str = "auto",
    seed: int = 0,
    folds: int = 3,
    progress: Callable[[str], None] | None = None,
) -> tuple[Predictor, list[FitReport]]:
    """A predictor for every configuration in ``meas`` and the fit reports.

    Raises
    ------
    UsageError
        On an unknown statistic or family, or too few measured chains.
    """
    if statistic not in STAT_GETTERS:
        raise UsageError(f"unknown statistic {statistic!r}; choose one of {sorted(STAT_GETTERS)}")
    get = STAT_GETTERS[statistic]
    configs: dict[str, ConfigPredictor] = {}
    reports: list[FitReport] = []
    # builtin configurations first: their models predict the builtin kernels that run inside
    # XNNPACK configurations (the ops XNNPACK refuses), which then need no rows of their own
    order = sorted(meas.configs, key=lambda c: (c[0] != "builtin", c[1], c[0]))
    for ex, th in order:
        name = config_name(ex, th)
        fx = meas.fixed.get(name, {})
        invoke = get(Stats(**fx["invoke"])) if "invoke" in fx else 0.0
        node = 0.0
        if "delegate_node" in fx:
            node = max(get(Stats(**fx["delegate_node"])) - invoke, 0.0)
        items = []
        for c, total in chains_for(meas, name, statistic):
            parts = c.partitions.get(ex, 0)
            items.append((c.kernels[ex], total, invoke + parts * node, c.spec.homogeneous))
        fallback = None
        if ex != "builtin":
            cands = [t for e, t in meas.configs if e == "builtin"]
            if cands:
                fallback = config_name("builtin", min(cands, key=lambda t: (abs(t - th), t)))
        external = None
        if fallback is not None and fallback in configs:
            ext = configs[fallback]

            def external(typ: str, feats: np.ndarray, ext: ConfigPredictor = ext) -> Any:
                # builtin kernels after a dynamically quantized XNNPACK kernel run slower
                # than in the builtin configuration: fitted here (kernels.AFTER_QD8)
                if not typ.startswith("tfl.") or AFTER_QD8 in typ:
                    return None
                m, _ = ext.model_for(typ)
                return None if m is None else m.predict(feats)

        d = chain_data(items, external=external)
        models, rep = fit_config(name, d, family=family, seed=seed, folds=folds, progress=progress)
        if family == "auto":
            # the families are compared on the first configuration; the others use its choice
            # (cross-validated all the same, for their per-type errors)
            family = rep.family
        configs[name] = config_predictor(
            name, ex, th, invoke, {"xnnpack": node} if ex == "xnnpack" else {}, models, rep,
            fallback, _control_costs(fx, invoke, get),
        )  # fmt: skip
        reports.append(rep)
    load = summarize_load(meas)
    host = meas.host
    configs = {k: configs[k] for k in sorted(configs)}
    pred = Predictor(
        device=str(host.get("description", "host")),
        obtained="measured",
        source=(
            f"edgepart calibrate --host: {len(meas.chains)} generated kernel chains measured "
            f"with ai-edge-litert {host.get('litert', '?')} in {meas.elapsed_s:.0f} s "
            f"(load average {load['min']:.1f}..{load['max']:.1f}); statistic {statistic}"
        ),
        configs=configs,
        calibration={
            "chains": len(meas.chains),
            "seed": meas.seed,
            "statistic": statistic,
            "host": host,
            "load": load,
            "measure_s": round(meas.elapsed_s, 1),
            "reports": [r.to_json() for r in reports],
        },
    )
    return pred, reports


def _control_costs(
    fx: dict[str, Any], invoke: float, get: Callable[[Stats], float]
) -> dict[str, float]:
    """What control-flow ops cost beyond the kernels of the subgraphs they call, from the
    fixed-cost measurements (:mod:`edgepart.profiling.timing`): the loop's
    intercept less the invocation and its one condition op, its slope less the two ops of an
    iteration, the ``IF`` less the invocation and its branch's op."""
    if not all(k in fx for k in ("loop", "loop_iteration", "int_op", "branch")):
        return {}
    op = get(Stats(**fx["int_op"]))
    return {
        "while": max(get(Stats(**fx["loop"])) - invoke - op, 0.0),
        "while_iteration": max(get(Stats(**fx["loop_iteration"])) - 2 * op, 0.0),
        "if": max(get(Stats(**fx["branch"])) - invoke - op, 0.0),
    }
