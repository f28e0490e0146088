"""Latency prediction: calibrate this host, fit predictors, estimate models without timing them.

A latency predictor maps the kernels an executor runs (found with its fusion rules) to their
latency (``docs/latency_predictors.md``). :func:`calibrate_host` measures generated kernel
chains on this machine and writes its device profile (``--profile host``) and predictor;
:func:`recheck_host` times a few of its chains again and scales the predictor by how much faster
or slower the machine runs now; :func:`refit_predictor` fits again from the saved measurements;
:func:`fit_predictor_from_tables`
fits one from per-op latency tables (``edgepart profile``, also ``--adb`` on a phone);
:func:`estimate` predicts what ``benchmark_model`` reports for a model on every configuration of
a device's predictor.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from edgepart.cost.predictor import Predictor
from edgepart.cost.predictor_fit import FitReport
from edgepart.cost.table import ProcessorTable, load_table
from edgepart.devices.host_executors import MAX_THREADS
from edgepart.devices.profile import host_profile_path
from edgepart.errors import UsageError
from edgepart.ir.graph import Model
from edgepart.profiling import host_calibration
from edgepart.profiling.host_calibration import (
    MEASUREMENTS_FILE,
    PREDICTOR_FILE,
    HostCalibration,
    default_configs,
    refit,
)
from edgepart.profiling.machine_state import STEADY_LIMIT
from edgepart.profiling.model_estimate import EstimateReport, estimate_file
from edgepart.profiling.recheck import RECHECK_CHAINS, Recheck
from edgepart.profiling.table_fit import predictor_from_tables
from edgepart.tflite.reader import read_model

__all__ = [
    "CALIBRATED_EXECUTORS",
    "EstimateReport",
    "HostCalibration",
    "PredictorFit",
    "PredictorRecheck",
    "calibrate_host",
    "estimate",
    "fit_predictor_from_tables",
    "recheck_host",
    "refit_predictor",
]

CALIBRATED_EXECUTORS = ("xnnpack", "builtin")
"""Host executors :func:`calibrate_host` measures: LiteRT's default (the XNNPACK delegate) and
builtin kernels without default delegates."""

FAMILIES = ("auto", "linear", "gbt", "rf")
STATISTICS = ("p10", "median", "min")
Progress = Callable[[int, int, str], None]
# progress is reported in thousandths of the budget (calibration) or of the fit (refit)
_STEPS = 1000


@dataclass
class PredictorFit:
    """What :func:`refit_predictor` fitted and wrote."""

    predictor: Predictor
    reports: list[FitReport]
    files: list[Path] = field(default_factory=list)


def calibrate_host(
    *,
    executors: Sequence[str] | None = None,
    threads: Sequence[int] | None = None,
    budget: float = 1800.0,
    seed: int = 0,
    family: str = "auto",
    statistic: str = "p10",
    out_dir: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    require_steady: bool = False,
) -> HostCalibration:
    """Measure this machine and fit its latency predictors; write its device profile.

    Generated kernel chains (convolutions, matrix products, element-wise ops ... over the
    ranges real models use) are timed with the real LiteRT runtime inside chains, in random
    order, sampling more where the fit is worst; then one predictor per executor
    configuration is fitted and cross-validated. These are host timings: they describe this
    machine, not a phone.

    Parameters
    ----------
    executors
        Executors to calibrate, from :data:`CALIBRATED_EXECUTORS` (default: both).
    threads
        XNNPACK thread counts (default 1 to min(cores, 4)). Builtin kernels are calibrated
        with 1 thread unless ``threads`` is given, then with each of them.
    budget
        Seconds in all, fitting included (at least 30).
    seed
        Seed of the chain draws and of the fit.
    family
        Predictor family: ``"auto"`` (the best cross-validated of the others), ``"linear"``,
        ``"gbt"`` (gradient-boosted trees) or ``"rf"`` (random forest); the tree families
        need scikit-learn (the ``calibrate`` extra).
    statistic
        Which statistic of each chain's samples is fitted: ``"p10"``, ``"median"`` or ``"min"``.
    out_dir
        Where the profile (``host.yaml``), predictor and measurements go (default: where
        ``--profile host`` looks).
    progress
        Called as ``progress(done, 1000, label)``: thousandths of the budget spent.
    require_steady
        Stop, writing nothing, as soon as the machine runs unsteadily (its canary's slow
        batches take more than 1.25 times as long as its fast ones over the first minute, or
        1.3 times over the batches so far at any later batch: calibrations measured in such
        noise hold out about twice the error). By default the calibration goes on and its
        report says how steady the machine was.

    Returns
    -------
    HostCalibration
        The predictor, its fit reports (held-out error per kernel type), the measurements,
        the roofs (peaks, bandwidth), the time taken and the files written.

    Raises
    ------
    UsageError
        An unknown executor, family or statistic, a thread count out of range, a budget
        under 30 seconds (or too short to measure enough chains to cross-validate), or a
        tree family without scikit-learn.
    RuntimeBackendError
        LiteRT failed while measuring.
    UnsteadyMachineError
        With ``require_steady``, on a machine that ran unsteadily.

    Examples
    --------
    >>> import edgepart
    >>> cal = edgepart.calibrate_host(threads=[1], budget=600, out_dir="/tmp/host")
    ... # doctest: +SKIP
    >>> sorted(cal.predictor.configs)  # doctest: +SKIP
    ['builtin_1t', 'xnnpack_1t']
    """
    for ex in executors or ():
        if ex not in CALIBRATED_EXECUTORS:
            raise UsageError(f"executor {ex!r}: calibrate one of {', '.join(CALIBRATED_EXECUTORS)}")
    for t in threads or ():
        if not 1 <= t <= MAX_THREADS:
            raise UsageError(f"threads {t}: need 1 to {MAX_THREADS}")
    _check_fit(family, statistic)
    configs = default_configs()
    if executors or threads:
        ts = sorted(set(threads or [t for e, t in configs if e == "xnnpack"]))
        configs = [
            (ex, t)
            for ex in executors or CALIBRATED_EXECUTORS
            for t in (ts if ex == "xnnpack" or threads else [1])
        ]
    return host_calibration.calibrate_host(
        configs=configs,
        budget_s=budget,
        seed=seed,
        family=family,
        statistic=statistic,
        out_dir=out_dir,
        progress=None if progress is None else lambda f, s: progress(_steps(f), _STEPS, s),
        require_steady=STEADY_LIMIT if require_steady else None,
    )


@dataclass
class PredictorRecheck:
    """What :func:`recheck_host` measured (per configuration) and wrote."""

    predictor: Predictor
    checks: dict[str, Recheck]
    files: list[Path] = field(default_factory=list)


def recheck_host(
    directory: str | os.PathLike[str] | None = None,
    *,
    out: str | os.PathLike[str] | None = None,
    chains: int = RECHECK_CHAINS,
    seed: int = 0,
    progress: Progress | None = None,
) -> PredictorRecheck:
    """Re-check this machine's speed against its calibration and scale its predictor.

    A shared machine does not keep the speed it had while it was calibrated (on the 2-core
    cloud guest of ``docs/latency_predictors.md`` a predictor came out 12 to 16% high on every
    model two hours after its calibration). ``chains`` of the calibration's own chains are
    timed again (about ten seconds); the median of their new time over their
    calibration time, per configuration, becomes that configuration's ``latency_scale``,
    which multiplies all its predictions (each estimate notes it), when it is a shift of more
    than 5% either way measured while the machine held steady (:attr:`Recheck.applies`; a
    smaller one is the machine's swing from minute to minute, gone by the time the
    predictions are used: the scale stays 1 and the re-check is recorded). Nothing fitted
    changes; a later re-check replaces the scale. No model is timed: the chains are
    generated kernel configurations.

    Parameters
    ----------
    directory
        Where :func:`calibrate_host` wrote ``host.predictor.json`` and
        ``host.measurements.npz`` (default: where ``--profile host`` looks).
    out
        Write the scaled predictor here (default: over ``host.predictor.json``, atomically).
    chains
        How many of the calibration's chains to time again (at least 8).
    seed
        Which chains (a fixed choice per seed) and the order they are timed in.
    progress
        Called as ``progress(done, total, label)`` per round of timing.

    Returns
    -------
    PredictorRecheck
        The scaled predictor, each configuration's re-check (scale, chains, quartiles of the
        chains' ratios) and the file written.

    Raises
    ------
    UsageError
        Fewer than 8 chains asked for.
    PredictorError
        A missing or invalid predictor or measurements file, measurements without the
        predictor's configurations, or a scale outside 0.25 to 4 (another machine).

    Examples
    --------
    >>> import edgepart
    >>> chk = edgepart.recheck_host("/tmp/host")  # doctest: +SKIP
    >>> round(chk.checks["xnnpack_1t"].scale, 2)  # doctest: +SKIP
    0.84
    """
    if chains < 8:
        raise UsageError(f"--recheck-chains {chains}: need at least 8")
    d = Path(directory) if directory is not None else host_profile_path().parent
    target = Path(out) if out is not None else d / PREDICTOR_FILE
    pred, checks = host_calibration.recheck_host(
        d / PREDICTOR_FILE,
        d / MEASUREMENTS_FILE,
        target,
        chains=chains,
        seed=seed,
        progress=None if progress is None else lambda i, n: progress(i, n, "re-checking"),
    )
    return PredictorRecheck(pred, checks, [target])


def refit_predictor(
    measurements: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    family: str = "auto",
    statistic: str = "p10",
    seed: int | None = None,
    progress: Progress | None = None,
) -> PredictorFit:
    """Fit a host predictor again from saved measurements (``host.measurements.npz``).

    The same measurements, family, statistic and seed give a byte-identical predictor file.

    Parameters
    ----------
    measurements
        The measurements :func:`calibrate_host` saved.
    out
        Write the predictor (JSON) here; a directory: ``host.predictor.json`` in it; default:
        ``host.predictor.json`` beside the measurements (where :func:`calibrate_host` put it).
    family, statistic
        As for :func:`calibrate_host`.
    seed
        Seed of the fit (default: the measurements' own).
    progress
        Called as ``progress(done, 1000, label)`` as the fit proceeds.

    Returns
    -------
    PredictorFit
        The predictor, its fit report per configuration (held-out error per kernel type) and
        the file written.

    Raises
    ------
    UsageError
        An unknown family or statistic, a missing measurements file, or a tree family without
        scikit-learn.
    PredictorError
        A measurements file that is not edgepart's or of another version, or too few measured
        chains to fit.

    Examples
    --------
    >>> import edgepart
    >>> fit = edgepart.refit_predictor(
    ...     "/tmp/host/host.measurements.npz", "/tmp/host/linear.json", family="linear"
    ... )  # doctest: +SKIP
    >>> [r.family for r in fit.reports]  # doctest: +SKIP
    ['linear', 'linear']
    """
    _check_fit(family, statistic)
    path = Path(measurements).parent / PREDICTOR_FILE if out is None else Path(out)
    if path.is_dir():
        path = path / PREDICTOR_FILE
    pred, reports = refit(
        measurements,
        path,
        family=family,
        statistic=statistic,
        seed=seed,
        progress=None if progress is None else lambda s: progress(_STEPS // 2, _STEPS, s),
    )
    return PredictorFit(pred, reports, [path])


def fit_predictor_from_tables(
    tables: Sequence[tuple[str | os.PathLike[str], str | os.PathLike[str]]],
    out: str | os.PathLike[str] | None = None,
    *,
    family: str = "linear",
    seed: int = 0,
) -> Predictor:
    """Fit a latency predictor from per-op latency tables of profiled models.

    One configuration per processor of the tables, fitted to every op, fused group and
    partition they measured (``edgepart profile`` on this host, ``--adb`` on a phone).

    Parameters
    ----------
    tables
        ``(latency table, model)`` path pairs: each table was measured on that ``.tflite``.
    out
        Write the predictor (JSON) here.
    family
        ``"linear"`` (also what ``"auto"`` picks: tables give few samples per kernel type),
        ``"gbt"`` or ``"rf"`` (scikit-learn).
    seed
        Seed of the fit.

    Returns
    -------
    Predictor
        The predictor (``configs``: one per table processor).

    Raises
    ------
    UsageError
        No tables, an unknown family, or tables of different executors or thread counts.
    PredictorError
        Fewer than 6 kernels with a measured time in the tables.
    LatencyTableError
        A table is not valid.
    ModelFormatError
        A model does not load.

    Examples
    --------
    >>> import edgepart, os, tempfile
    >>> table = os.path.join(tempfile.mkdtemp(), "mnv2.json")
    >>> m = "examples/models/mobilenet_v2.tflite"
    >>> _ = edgepart.profile_host(m, budget=0.002, fusion=False, output=table)
    >>> pred = edgepart.fit_predictor_from_tables([(table, m)])
    >>> sorted(pred.configs), pred.obtained
    (['host_xnnpack_1t'], 'measured')
    """
    if not tables:
        raise UsageError("fit a predictor from tables: give at least one (table, model) pair")
    if family not in FAMILIES:
        raise UsageError(f"family {family!r}: use one of {', '.join(FAMILIES)}")
    pairs: list[tuple[Model, ProcessorTable]] = []
    for table, model in tables:
        t = load_table(table)
        m = read_model(model)
        pairs.extend((m, pt) for pt in t.processors.values())
    pred = predictor_from_tables(pairs, family="linear" if family == "auto" else family, seed=seed)
    if out is not None:
        pred.save(out)
    return pred


def estimate(
    model: str | os.PathLike[str],
    profile: str | os.PathLike[str],
    *,
    predictor: str | os.PathLike[str] | None = None,
    configs: Sequence[str] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> EstimateReport:
    """Predict a model's latency on every configuration of a device, without timing it.

    What ``benchmark_model`` would report as the average per configuration of the device's
    latency predictor (CPU with N threads on XNNPACK or builtin kernels, GPU, NNAPI ...): the
    model's kernels, found with each executor's fusion rules, plus invocation and
    delegate-node costs. Each figure has the band (10th to 90th percentile) the predictor's
    cross-validation gives, and the report says how the predictor was obtained (measured,
    calibrated from published figures, or estimated from the profile's specs). Models whose
    shapes depend on their inputs get them from edgepart's shape propagation (as `partition` does);
    a ``WHILE`` loop whose trip count depends on the inputs is counted in one untimed LiteRT run
    on the seeded inputs edgepart times models with (the estimate's notes say so).

    Parameters
    ----------
    model
        A ``.tflite`` path.
    profile
        A device profile name (``"pixel4"``, ``"host"`` after :func:`calibrate_host`) or YAML
        path.
    predictor
        A predictor file to use instead of the profile's (``latency_predictor``).
    configs
        Only these configurations (e.g. ``["xnnpack_2t"]``; default: all).
    input_shapes
        Input name -> the shape it runs at (see :func:`edgepart.parse_input_shape`).

    Returns
    -------
    EstimateReport
        Per configuration (``estimates``): predicted seconds, band, kernels, partitions, and
        notes; the predictor's source and how it was obtained.

    Raises
    ------
    ProfileError
        The profile does not load.
    PredictorError
        The predictor file is not valid.
    ModelFormatError
        The model does not load.
    UsageError
        A configuration the predictor does not have.

    Examples
    --------
    >>> import edgepart
    >>> rep = edgepart.estimate("examples/models/mobilenet_v2.tflite", "pixel4")
    >>> sorted(e.config for e in rep.estimates)
    ['gpu', 'nnapi', 'xnnpack_4t']
    >>> all(e.low_s <= e.seconds <= e.high_s for e in rep.estimates)
    True
    """
    return estimate_file(
        model,
        os.fspath(profile),
        predictor=predictor,
        configs=configs,
        input_shapes=input_shapes,
    )


def _check_fit(family: str, statistic: str) -> None:
    if family not in FAMILIES:
        raise UsageError(f"family {family!r}: use one of {', '.join(FAMILIES)}")
    if statistic not in STATISTICS:
        raise UsageError(f"statistic {statistic!r}: use one of {', '.join(STATISTICS)}")


def _steps(frac: float) -> int:
    return int(max(0.0, min(frac, 1.0)) * _STEPS)
