"""Fit a host predictor from calibration measurements (:mod:`edgepart.profiling.calibrate`).

One :class:`~edgepart.cost.predictor.ConfigPredictor` per measured configuration, fitted by
:func:`edgepart.cost.predictor_fit.fit_config` on the chains' chosen statistic (default the
10th percentile of the samples: interference only adds time). A configuration's fixed costs
are the measured empty invocation and delegate node. Builtin kernels inside XNNPACK
configurations are priced by the builtin configuration's models, except those that run after
a dynamically quantized XNNPACK kernel (``@qd8`` types): the builtin models times one
slowdown factor fitted on the chains that have them (:func:`after_qd8_models`); kernel types a
configuration never saw fall back to the builtin configuration with the same thread count,
else one thread. A configuration of several threads is fitted against the same executor's one-thread
configuration (:mod:`edgepart.cost.predictor_fit`: its models scaled per kernel type); on
XNNPACK, the kernels it runs as one task (:mod:`edgepart.cost.xnn_tasks`) are priced by the
one-thread models as they are, in the fit and in every prediction (``one_task_config``).

Before the fit, every chain's time is brought to the calibration's typical machine state
(:mod:`edgepart.profiling.machine_state`: its batch's canary speed, to the power fitted per
configuration), and a configuration of several threads leaves out the batches measured while
its thread pool was slow to wake (``slow_pool_batches``) and brings the rest to a calm pool
(``at_calm_pool``: whole models timed over minutes find it so).

The result depends only on the measurements, the statistic, the family and the seed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from edgepart.cost.kernels import AFTER_QD8, Kernels
from edgepart.cost.predictor import ConfigPredictor, KernelModel, Predictor, runs_builtin
from edgepart.cost.predictor_fit import (
    BAGS,
    FitReport,
    chain_data,
    config_predictor,
    fit_config,
)
from edgepart.cost.stats import STAT_GETTERS, Stats
from edgepart.cost.xnn_tasks import one_task_of
from edgepart.errors import PredictorError, UsageError
from edgepart.profiling.calibrate import Measurements, chains_for, config_name, summarize_load
from edgepart.profiling.machine_state import (
    Item,
    at_calm_pool,
    at_typical_state,
    slow_pool_batches,
)
from edgepart.profiling.timing import WIDE_BODY_OPS

__all__ = ["fit_host_predictor"]


def fit_host_predictor(
    meas: Measurements,
    *,
    statistic: str = "p10",
    family: str = "auto",
    seed: int = 0,
    folds: int = 3,
    bags: int = BAGS,
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
    one_thread: dict[str, dict[int, Item]] = {}  # per executor, its one-thread items by chain
    one_typical: dict[str, dict[int, Item]] = {}  # the same at the typical machine state
    # the widest one-row GEMM XNNPACK runs as one task here, by kernel type suffix (gemm_tiles;
    # none in measurements taken before the probe existed: the safe widths of xnn_tasks)
    widths = {str(k): float(v) for k, v in meas.host.get("gemm_task_outputs", {}).items()}
    # builtin configurations first: their models predict the builtin kernels that run inside
    # XNNPACK configurations (the ops XNNPACK refuses), which then need no rows of their own
    order = sorted(meas.configs, key=lambda c: (c[0] != "builtin", c[1], c[0]))
    for ex, th in order:
        name = config_name(ex, th)
        fx = meas.fixed.get(name, {})
        excess = _Excess(meas.fixed_moments.get(name) or [fx], get)
        invoke = get(Stats(**fx["invoke"])) if "invoke" in fx else 0.0
        # a plan with builtin kernels costs more to invoke than an empty model: left out of
        # each chain's fixed cost, it lands on the kernels (a one-element builtin ADD was
        # priced at 129 ns against 55 measured), over-pricing models of many tiny kernels
        plan = excess({"op_chain": 1.0, "invoke": -1.0}) or 0.0
        node = excess({"delegate_node": 1.0, "invoke": -1.0}) or 0.0
        timed = chains_for(meas, name, statistic)
        if len(timed) < 2 * folds:
            _refuse_dropped(meas, name, ex, len(timed), 2 * folds)
        items = []
        for c, total in timed:
            k = c.kernels[ex]
            parts = c.partitions.get(ex, 0)
            builtin = plan if runs_builtin(k) else 0.0
            items.append((k, total, invoke + builtin + parts * node, c.spec.homogeneous))
        if th == 1:
            one_thread[ex] = {id(c): it for (c, _), it in zip(timed, items, strict=True)}
        slow_pool: set[int] = set()
        if th > 1 and ex in one_thread:
            # batches measured while the thread pool was slow to wake (machine_state)
            one = one_thread[ex]
            slow_pool = slow_pool_batches(
                [c.batch for c, _ in timed], items, [one.get(id(c)) for c, _ in timed]
            )
            keep = [i for i, (c, _) in enumerate(timed) if c.batch not in slow_pool]
            timed, items = [timed[i] for i in keep], [items[i] for i in keep]
        # every chain's time at the calibration's typical machine state (machine_state)
        items, state = at_typical_state(meas, [c.batch for c, _ in timed], items, th)
        if state is not None and slow_pool:
            state = replace(state, slow_pool=len(slow_pool))
        calm = None
        if th == 1:
            one_typical[ex] = {id(c): it for (c, _), it in zip(timed, items, strict=True)}
        elif ex in one_typical:
            # and with the thread pool as calm as whole models find it (machine_state)
            one = one_typical[ex]
            items, calm = at_calm_pool(
                [c.batch for c, _ in timed], items, [one.get(id(c)) for c, _ in timed]
            )
        fallback = None
        if ex != "builtin":
            cands = [t for e, t in meas.configs if e == "builtin"]
            if cands:
                fallback = config_name("builtin", min(cands, key=lambda t: (abs(t - th), t)))
        # more threads: the same executor's one-thread models, scaled per kernel type; the
        # kernels XNNPACK runs as one task are priced by them as they are (xnn_tasks)
        ref_cp = configs.get(config_name(ex, 1)) if th > 1 else None
        one_ref = ref_cp if ex == "xnnpack" else None
        ext: ConfigPredictor | None = None
        qd8_items: list[tuple[Kernels, float, float, str | None]] = []
        if fallback is not None and fallback in configs:
            ext = configs[fallback]
            # chains with builtin kernels that run after a dynamically quantized XNNPACK
            # kernel: they price those kernels' slowdown once the rest is fitted
            qd8_items = [it for it in items if any(AFTER_QD8 in t for t in it[0].types)]
            items = [it for it in items if not any(AFTER_QD8 in t for t in it[0].types)]
        external = None
        if ext is not None or one_ref is not None:

            def external(
                typ: str,
                feats: np.ndarray,
                ext: ConfigPredictor | None = ext,
                one_ref: ConfigPredictor | None = one_ref,
            ) -> Any:
                if not typ.startswith("tfl."):
                    return _one_task_seconds(one_ref, typ, feats, widths)
                m = ext.model_for(typ)[0] if ext is not None else None
                return None if m is None else m.predict(feats)

        reference = None
        if ref_cp is not None:

            def reference(typ: str, ref_cp: ConfigPredictor = ref_cp) -> KernelModel | None:
                return ref_cp.model_for(typ)[0]

        # XNNPACK's matrix products count MACs in whole tiles of rows, per data type
        # (gemm_tiles); measurements from before the per-type probe have the float tile only,
        # those from before any probe none
        tile: int | dict[str, int] = 1
        if ex == "xnnpack":
            tile = dict(meas.host.get("gemm_row_tiles") or {}) or meas.host.get("gemm_row_tile", 1)
        # a core's second-level cache (host_info; none in measurements taken before it was
        # recorded: the spill term is not used)
        cache = float(meas.host.get("l2_bytes", 0) or 0)
        d = chain_data(
            items, external=external, reference=reference, row_tile=tile, cache_bytes=cache
        )
        models, rep = fit_config(
            name, d, family=family, seed=seed, folds=folds, bags=bags, progress=progress
        )
        rep.machine_state = state.to_json() if state is not None else None
        if calm is not None:
            rep.machine_state = {**(rep.machine_state or {}),
                                 **{f"calm_pool_{k}": v for k, v in calm.items()}}  # fmt: skip
        if ext is not None and qd8_items:
            slow = after_qd8_models(qd8_items, models, ext)
            models.update(slow)
            for t, m in slow.items():  # in the report beside the fitted types (in sample)
                rep.per_type[t] = {k: v for k, v in m.cv.items() if k not in ("chains", "factor")}
                rep.per_type[t]["n"] = m.cv["chains"]
        if family == "auto":
            # the families are compared on the first configuration; the others use its choice
            # (cross-validated all the same, for their per-type errors)
            family = rep.family
        configs[name] = config_predictor(
            name, ex, th, invoke, {"xnnpack": node} if ex == "xnnpack" else {}, models, rep,
            fallback, _control_costs(excess), plan,
        )  # fmt: skip
        if d.ref_models is not None and ref_cp is not None:
            configs[name].extra["reference"] = ref_cp.name
            rep.reference = ref_cp.name
        if one_ref is not None:
            configs[name].one_task_config = one_ref.name
            configs[name].gemm_outputs = dict(widths)
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


# chains whose builtin kernels after a qd8 kernel take at least this share of the kernel time
# price the slowdown; at least MIN_QD8_CHAINS of them, else the plain builtin models stand
QD8_SHARE = 0.25
MIN_QD8_CHAINS = 5


def after_qd8_models(
    items: Sequence[tuple[Kernels, float, float, str | None]],
    models: Mapping[str, KernelModel],
    builtin: ConfigPredictor,
) -> dict[str, KernelModel]:
    """Models of the ``@qd8`` builtin kernel types (:data:`~edgepart.cost.kernels.AFTER_QD8`):
    the builtin configuration's model of the plain type times one slowdown factor per
    configuration, the median over ``items`` (chains with such kernels) of what the chain
    leaves to them (measured, less its fixed costs and its other kernels as fitted) over what
    the builtin models predict for them. One number, because the slowdown is a state of the
    processor, not of the kernel (docs/latency_predictors.md); its spread over the chains is
    the models' error band (``cv``, in sample: one parameter).
    """
    ratios, parts = [], []
    plain: dict[str, KernelModel] = {}
    counts: dict[str, int] = {}
    # the XNNPACK kernels as predictions will find them: a type the fit merged into its plain
    # class (too few chains of its own) has that class's model
    own = ConfigPredictor("fitted", "xnnpack", 0, 0.0, {}, dict(models))  # a lookup only
    for k, total, fixed, _ in items:
        other = slow = 0.0
        for t, f, r in zip(k.types, k.features, k.repeat, strict=True):
            base = t.partition("@")[0]
            m = builtin.model_for(base)[0] if t.startswith("tfl.") else own.model_for(t)[0]
            if m is None:
                break
            secs = float(m.predict(f[None, :])[0]) * float(r)
            if AFTER_QD8 in t:
                slow += secs
                plain[t] = m
                counts[t] = counts.get(t, 0) + 1
            else:
                other += secs
        else:
            left = total - fixed - other
            if slow > 0 and slow >= QD8_SHARE * (slow + other):
                ratios.append(left / slow)
                parts.append((fixed + other, slow, total))
    if len(ratios) < MIN_QD8_CHAINS:
        return {}
    factor = max(float(np.median(ratios)), 0.1)
    err = np.array([(a + factor * b) / tot - 1.0 for a, b, tot in parts])
    cv = {
        "chains": float(len(err)),
        "factor": factor,
        "median_abs": float(np.median(np.abs(err))),
        "q10": float(np.percentile(err, 10)),
        "q90": float(np.percentile(err, 90)),
        "within_10": float(np.mean(np.abs(err) <= 0.10)),
        "within_5": float(np.mean(np.abs(err) <= 0.05)),
    }
    out = {}
    for t, m in sorted(plain.items()):
        out[t] = KernelModel(
            t, m.coef * factor, m.trees, m.floor_s * factor, cv=dict(cv), n=counts[t],
            ranges=dict(m.ranges), row_tile=m.row_tile, cache_bytes=m.cache_bytes,
        )  # fmt: skip
    return out


def _one_task_seconds(
    ref: ConfigPredictor | None, typ: str, feats: np.ndarray, widths: dict[str, float]
) -> Any:
    """Seconds of the kernels of ``typ`` that XNNPACK runs as one task (``widths``: the one-row
    GEMM widths measured here), by the one-thread configuration ``ref`` (NaN for the others),
    or None when there are none."""
    if ref is None:
        return None
    single = one_task_of(typ, feats, widths)
    if not single.any():
        return None
    m, _ = ref.model_for(typ)
    if m is None:
        return None
    out = np.full(len(feats), np.nan)
    out[single] = m.predict(feats[single])
    return out


class _Excess:
    """What a combination of the fixed-cost models costs, from each moment that timed them all.

    A calibration times the fixed-cost models at moments across the run, all of them
    interleaved round by round (``FixedSamplers``); a moment's figures were taken together, so
    a difference of them is that moment's. The median over the moments of those differences
    drops the moments a burst of other work inflated one model more than another; a difference
    of each model's median over the moments does not pair them, and on a busy machine left an
    ``IF`` costing nothing (a one-minute calibration) or a quarter more than the paired figure
    (a twenty-minute one). Measurements without moments have their medians only (one moment).
    """

    def __init__(self, moments: Sequence[Mapping[str, Any]], get: Callable[[Stats], float]) -> None:
        self.moments, self.get = moments, get

    def __call__(self, terms: Mapping[str, float]) -> float | None:
        """The median over the moments of ``sum(w * model)`` over ``terms`` (model: weight),
        clipped at 0 (a cost is not negative); None if no moment timed every model."""
        vals = [
            sum(w * self.get(Stats(**m[k])) for k, w in terms.items())
            for m in self.moments
            if all(k in m for k in terms)
        ]
        return max(float(np.median(vals)), 0.0) if vals else None


def _control_costs(excess: _Excess) -> dict[str, float]:
    """What control-flow ops cost beyond the kernels of the subgraphs they call, from the
    fixed-cost measurements (:mod:`edgepart.profiling.timing`; each a median over the moments,
    :class:`_Excess`): the loop's intercept less the invocation of a plan of builtin kernels
    (``op_chain``) and its one condition op (``int_op``), its slope less the two ops of an
    iteration, the ``IF`` less the invocation and its branch's op.

    With the loops of a wider body (``loop_wide``), also what an invocation of a ``WHILE`` or
    ``IF`` costs per op of the subgraphs it calls (``subgraph_op``: LiteRT allocates and
    prepares them again at every invocation and releases them after): the wide loop's
    intercept above the one-op loop's, per extra op. The entries are then without their own
    subgraphs' ops (the loop's condition and body, the branch), which the prediction adds back
    op by op."""
    entry = {"op_chain": -1.0, "int_op": -1.0}
    w = 1.0 / (WIDE_BODY_OPS - 1)  # per extra op of the wide loop
    per_op = excess({"loop_wide": w, "loop": -w})
    # less the ops of the subgraphs each calls, when measured: a loop's two, a branch's one
    loop = {"loop": 1.0 + 2 * w, "loop_wide": -2 * w} if per_op is not None else {"loop": 1.0}
    branch = {"branch": 1.0, "loop": w, "loop_wide": -w} if per_op is not None else {"branch": 1.0}
    out = {
        "while_iteration": excess({"loop_iteration": 1.0, "int_op": -2.0}),
        "while": excess({**loop, **entry}),
        "if": excess({**branch, **entry}),
        "subgraph_op": per_op,
    }
    if any(out[k] is None for k in ("while_iteration", "while", "if")):
        return {}
    return {k: v for k, v in sorted(out.items()) if v is not None}


def _refuse_dropped(meas: Measurements, name: str, ex: str, n: int, need: int) -> None:
    """Say so when the canary filter, not the budget, left ``name`` without enough chains."""
    dropped = sum(1 for c in meas.chains if ex in c.kernels and c.stats.get(name) is None)
    if dropped:
        raise PredictorError(
            f"{name}: {n} of {n + dropped} measured chains kept, need at least {need}: the "
            "others ran while other processes slowed the calibration canary past its limit; "
            "calibrate on a quieter machine"
        )
