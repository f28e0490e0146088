#!/usr/bin/env python3
"""Cost-model fidelity on this host: predicted vs measured whole-model latency, in one run.

For every runnable corpus model (``tools/build_corpus.py``) and each executor (XNNPACK and the
builtin kernels, 1 thread by default), the host profiler (:mod:`edgepart.profiling.host`) times
every op/fused group *and* the whole model, interleaved in the same rounds. The prediction is
what the partitioner would use: a :class:`~edgepart.cost.model.CostModel` over the resulting
latency table, ``partition_latency(all ops)`` = the measured per-invocation overhead once, one
measured delegate node per delegate partition (counted with TFLite's partitioning algorithm),
plus the sum of the table's per-op and fused-group values, each op's in the context of the op
before it where that pair was measured (:mod:`edgepart.cost.context`). Nothing is fitted to
the models: the only inputs are the table's entries.

Prints every model's error, the median absolute error and the share within +-5% and +-10%, for
three statistics: median, p10 and min. Each comparison uses the same statistic on both sides
(table entries and the invocation overhead from the op timings, the whole-model figure from its
own timing); on a shared, busy machine the lower statistics are the less interference-prone.

The machine is shared and its speed drifts, so ``--runs N`` repeats the whole comparison N times
(fresh profiles each time) and prints each run's summary and the spread over runs.

Two modes:

``--mode table`` (default): as above, the latency table of each model itself (profile it, then
predict it).

``--mode predictor --predictor FILE``: models the predictor has never seen. A predictor from
``edgepart calibrate --host`` (fitted on generated kernel chains only) predicts every model on
each of its configurations (XNNPACK with 1 and 2 threads, builtin kernels with 1 thread), from
its kernels alone; then all models are measured under every configuration, interleaved (a
fresh random order each round), and the comparison is repeated ``--runs`` times. With one
thread the measured figure is the 10th percentile of CPU time per invocation (robust to
preemption on a shared machine); wall time is reported too. Per configuration it prints the
shares within +-5% and +-10% and the median error of each run and of the medians over runs.
``--baseline OTHER`` judges a second predictor (another calibration, or the previous code's)
on the same measurements: this machine's speed drifts by several percent between runs, so two
predictors compare only against one set of measurements. ``--probe host.measurements.npz``
times ``--probe-chains`` of the calibration's own chains again among the models: the median
ratio now/then per configuration is the machine's drift since calibration, printed, and the
shares are printed a second time with the predictions scaled by it (a diagnostic that tells
the predictor's error from the machine's; the figures without it are the result).
``--timings EARLIER.json`` measures nothing: it judges the predictor (and ``--baseline``) on
the timings an earlier run's ``--json`` holds, so that calibrations made at different times
compare on the same timings; ``--timings A.json,B.json,...`` judges each set on its own and
then lists, per configuration, the models off by more than 10% in at least half of the sets
with their error in each (an error that repeats across sets taken at other hours is the
predictor's, one that comes and goes the machine's; ``--json`` then writes each set's
medians). ``--recheck`` (with ``--probe``) does what
``edgepart calibrate --host --recheck`` does before the runs: some of the calibration's chains
timed again give each configuration's latency scale, and the predictor judged is the scaled
one (the predictor as given is judged on the same measurements as the baseline, unless
``--baseline`` names another).
The model set is the corpus (``tools/build_corpus.py``, the default set plus
``mobilenet_v2_224`` and ``resnet50``) and every real-model corpus model LiteRT runs
(``tools/real_models.py``), with the input shapes its manifest gives.

Usage::

    python benchmarks/fidelity.py [--executors xnnpack,builtin] [--threads 1] [--runs 1]
                                  [--models a,b|all] [--extra DIR] [--json OUT]
    python benchmarks/fidelity.py --mode predictor --predictor host.predictor.json [--runs 3]
                                  [--baseline other.predictor.json] [--probe MEASUREMENTS]
                                  [--recheck] [--models a,b] [--rounds 27] [--json OUT]
    python benchmarks/fidelity.py --mode predictor --predictor P --timings EARLIER.json[,...]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))  # this checkout's edgepart, run from anywhere

STATS = ("median", "p10", "min")


def corpus(names: list[str] | None) -> dict[str, Path]:
    import build_corpus

    paths = {}
    for name in names or build_corpus.default_names():
        try:
            paths[name] = build_corpus.ensure(name)
        except build_corpus.CorpusError as err:
            print(f"skip {name}: the corpus cannot build it ({err})")
    manifest = build_corpus.load_manifest()
    out = {}
    for name, path in paths.items():
        entry = manifest["models"].get(name, {})
        if entry.get("runnable", True) is False:
            print(f"skip {name}: not runnable in LiteRT here ({entry.get('probe_error', '')})")
            continue
        out[name] = path
    return out


def run_one(
    name: str,
    path: Path,
    executor: str,
    threads: int,
    shapes: dict[str, list[int]] | None = None,
) -> dict[str, object]:
    from edgepart.cost.hardware import Hardware, ProcessorSpec
    from edgepart.cost.model import CostModel
    from edgepart.profiling.host import ProfileConfig, profile_model
    from edgepart.tflite.reader import read_model

    model = read_model(path)
    cfg = ProfileConfig(executor=executor, threads=threads)
    res = profile_model(model, cfg, model_bytes=path.read_bytes(), name=name, input_shapes=shapes)
    assert res.model_stats is not None
    model = res.model or model  # shapes resolved where they depend on the inputs
    hw = Hardware("host", (ProcessorSpec("cpu", threads=threads),))
    pt = res.table.processors[res.processor]
    row: dict[str, object] = {
        "model": name,
        "executor": executor,
        "ops": model.main.num_ops,
        "timed": res.timed,
        "fused": len(res.fused),
        "context": sum(1 for e in pt.entries.values() if e.extra.get("role") == "context"),
        "profile_s": res.elapsed_s,
        "segments": sum(1 for e in pt.entries.values() if e.extra.get("role") == "segment"),
    }
    for stat in STATS:
        table = res.table.restat(stat)
        cm = CostModel(hw, table, table_for={"cpu": res.processor})
        gc = cm.costs(model.main, model)
        pred = gc.partition_latency(range(model.main.num_ops), "cpu")
        ms = res.model_stats
        meas = {"median": ms.median_s, "p10": ms.p10_s, "min": ms.min_s}[stat]
        row[f"{stat}_pred_s"] = pred.seconds
        row[f"{stat}_meas_s"] = meas
        row[f"{stat}_err"] = pred.seconds / meas - 1.0
        row["sources"] = gc.source_counts("cpu")
        # the same table without its segments: standalone op values only (the old prediction)
        bare = table.restat(stat)
        for p in bare.processors.values():
            for k in [k for k, e in p.entries.items() if e.extra.get("role") == "segment"]:
                del p.entries[k]
            p._families = None
        cm0 = CostModel(hw, bare, table_for={"cpu": res.processor})
        p0 = cm0.costs(model.main, model).partition_latency(range(model.main.num_ops), "cpu")
        row[f"{stat}_noseg_err"] = p0.seconds / meas - 1.0
    return row


def one_run(
    models: dict[str, Path],
    executors: list[str],
    threads: int,
    shapes: dict[str, dict[str, list[int]] | None] | None = None,
) -> list[dict[str, object]]:
    """Profile and compare every model once per executor, printing a row each."""
    rows = []
    head = f"{'model':<22} {'executor':<8} {'ops':>4} {'fused':>5} {'ctx':>4}"
    for stat in STATS:
        head += f" | {stat + ' us':>10} {'pred':>9} {'err':>7} {'(no seg)':>8}"
    print(head + f" | {'prof s':>6}")
    for name, path in models.items():
        for ex in executors:
            try:
                r = run_one(name, path, ex, threads, (shapes or {}).get(name))
            except Exception as err:
                print(f"{name:<22} {ex:<8} FAILED: {type(err).__name__}: {err}")
                continue
            rows.append(r)
            line = f"{name:<22} {ex:<8} {r['ops']:>4} {r['fused']:>5} {r['context']:>4}"
            for stat in STATS:
                line += (
                    f" | {float(r[f'{stat}_meas_s']) * 1e6:>10.2f} "
                    f"{float(r[f'{stat}_pred_s']) * 1e6:>9.2f} "
                    f"{float(r[f'{stat}_err']):>+7.1%} ({float(r[f'{stat}_noseg_err']):>+6.1%})"
                )
            print(line + f" | {float(r['profile_s']):>6.1f}", flush=True)
    return rows


def summarize(rows: list[dict[str, object]], stat: str, executor: str | None) -> str:
    sel = [r for r in rows if executor is None or r["executor"] == executor]
    errs = [abs(float(r[f"{stat}_err"])) for r in sel]  # type: ignore[arg-type]
    if not errs:
        return ""
    w5 = sum(e <= 0.05 for e in errs) / len(errs)
    w10 = sum(e <= 0.10 for e in errs) / len(errs)
    who = executor or "all"
    bare = [abs(float(r[f"{stat}_noseg_err"])) for r in sel if f"{stat}_noseg_err" in r]  # type: ignore[arg-type]
    extra = ""
    if bare:
        extra = (
            f"   [without segments: median {statistics.median(bare):6.1%}, within 10% "
            f"{sum(e <= 0.10 for e in bare) / len(bare):6.1%}]"
        )
    return (
        f"{stat:>6} {who:<8}: n={len(errs):>2}  median |err| {statistics.median(errs):6.1%}"
        f"  within 5%: {w5:6.1%}  within 10%: {w10:6.1%}{extra}"
    )


def predictor_models(
    names: list[str] | None,
) -> dict[str, tuple[Path, dict[str, list[int]] | None]]:
    """Corpus (default set plus the two large CNNs) and real models LiteRT runs, with input
    shapes for the dynamic ones."""
    import real_models

    out: dict[str, tuple[Path, dict[str, list[int]] | None]] = {}
    want = set(names) if names else None
    import build_corpus

    corpus_names = [*build_corpus.default_names(), "mobilenet_v2_224", "resnet50"]
    for name, path in corpus([n for n in corpus_names if want is None or n in want]).items():
        out[name] = (path, None)
    manifest = real_models.load_manifest()["models"]
    for name, entry in sorted(manifest.items()):
        if want is not None and name not in want:
            continue
        if not entry.get("runnable"):
            print(f"skip {name}: LiteRT does not run it here")
            continue
        try:
            path = real_models.ensure(name)
        except Exception as err:
            print(f"skip {name}: {err}")
            continue
        out[name] = (Path(path), entry.get("input_shapes"))
    return out


def predictor_mode(args: argparse.Namespace) -> int:
    from edgepart.cost.estimate import estimate_model
    from edgepart.cost.predictor import load_predictor
    from edgepart.profiling.shape_resolution import needs_run, resolve
    from edgepart.profiling.whole import measure_models
    from edgepart.tflite.reader import read_model

    pred = load_predictor(args.predictor)
    base = load_predictor(args.baseline) if args.baseline else None
    if args.recheck:
        from edgepart.profiling.calibrate import load_measurements
        from edgepart.profiling.recheck import apply_recheck, recheck

        if not args.probe:
            raise SystemExit("--recheck needs --probe host.measurements.npz (the calibration's)")
        if base is None:
            base, args.baseline = load_predictor(args.predictor), f"{args.predictor} as given"
        checks = recheck(load_measurements(args.probe), pred)
        apply_recheck(pred, checks)
        print(
            "re-checked before the runs (the calibration's chains now / then, its quartiles): "
            + ", ".join(
                f"{c} {k.scale:.3f} ({k.q25:.3f}..{k.q75:.3f}; {k.verdict})"
                for c, k in sorted(checks.items())
            )
        )
    scale = {n: c.latency_scale for n, c in pred.configs.items()}
    configs = [(n, c.executor, c.threads) for n, c in sorted(pred.configs.items())]
    models = predictor_models(None if args.models in (None, "all") else args.models.split(","))
    preds: dict[tuple[str, str], float] = {}
    base_preds: dict[tuple[str, str], float] = {}
    contents: dict[str, tuple[bytes, dict[str, list[int]] | None]] = {}
    for name, (path, shapes) in models.items():
        model = read_model(path)
        content = path.read_bytes()
        try:
            sg, trips = None, None
            if needs_run(model) or shapes:  # the shapes and loop counts of the timed inputs
                res = resolve(model, content, shapes)
                sg, trips = res.subgraph, res.trips
            for e in estimate_model(model, pred, sg=sg, trips=trips):
                preds[(name, e.config)] = e.seconds
            for e in estimate_model(model, base, sg=sg, trips=trips) if base is not None else []:
                base_preds[(name, e.config)] = e.seconds
        except Exception as err:
            print(f"{name}: cannot predict ({type(err).__name__}: {err})")
            continue
        contents[name] = (content, shapes)
    sets = [p for p in (args.timings or "").split(",") if p]
    if len(sets) > 1:  # each stored set judged on its own, then what repeats across them
        return _across_sets(sets, preds, base_preds, configs, args.json)
    probe = _drift_probe(args, [c for c, _, _ in configs]) if args.probe else {}
    rows: list[dict[str, object]] = []
    drift: dict[str, list[float]] = {}
    t0 = time.perf_counter()
    if sets:  # judge on the timings of an earlier run: nothing is measured
        rows = _rejudged(sets[0], preds)
        contents = {n: contents[n] for n in sorted({str(r["model"]) for r in rows})}
        print(f"timings of {sets[0]} ({len(rows)} timings; nothing measured now)")
    for run in range(0 if sets else args.runs):
        load0 = os.getloadavg()[0]
        timed = {**contents, **{k: (v[0], None) for k, v in probe.items()}}
        timings = measure_models(timed, configs, rounds=args.rounds, seed=run)
        load1 = os.getloadavg()[0]
        if probe:
            ratios: dict[str, list[float]] = {}
            for t in timings:
                now = t.value("p10", "auto")
                if t.name in probe and now is not None and t.config in probe[t.name][1]:
                    ratios.setdefault(t.config, []).append(now / probe[t.name][1][t.config])
            for c, vals in sorted(ratios.items()):
                drift.setdefault(c, []).append(statistics.median(vals))
            speeds = ", ".join(f"{c} {v[-1]:.3f}" for c, v in sorted(drift.items()))
            print(f"machine speed against calibration (its chains timed again, now/then): {speeds}")
        for t in timings:
            p = preds.get((t.name, t.config))
            meas = t.value("p10", "auto")
            if p is None or meas is None:
                continue
            wall = t.value("p10", "wall")
            rows.append(
                {
                    "run": run,
                    "model": t.name,
                    "config": t.config,
                    "pred_s": p,
                    "meas_s": meas,
                    "meas_clock": "cpu" if t.cpu is not None else "wall",
                    "wall_s": wall,
                    "err": p / meas - 1.0,
                    "wall_err": (p / wall - 1.0) if wall else None,
                    "load": (load0 + load1) / 2,
                }
            )
        print(f"\n=== run {run + 1} of {args.runs} (load average {load0:.1f} -> {load1:.1f})")
        _predictor_summary([r for r in rows if r["run"] == run], configs)
    # medians over runs, per model and configuration
    print("\n=== medians over runs")
    med = _medians(rows, configs, base_preds)
    for c, _, _ in configs:
        print(f"-- {c}")
        for r in [r for r in med if r["config"] == c]:
            print(
                f"   {r['model']:<40} measured {float(r['meas_s']) * 1e6:>11.1f} us  predicted "  # type: ignore[arg-type]
                f"{float(r['pred_s']) * 1e6:>11.1f} us  {float(r['err']):>+7.1%}"  # type: ignore[arg-type]
                + (f"  baseline {float(r['base_err']):>+7.1%}" if "base_err" in r else "")  # type: ignore[arg-type]
            )
    _predictor_summary(med, configs)
    _by_latency(med, configs)
    measured: dict[tuple[str, str], dict[int, float]] = {}
    for r in rows:
        key = (str(r["model"]), str(r["config"]))
        measured.setdefault(key, {})[int(r["run"])] = float(r["meas_s"])  # type: ignore[call-overload, arg-type]
    rep = repeatability(measured)
    _print_repeatability(rep)
    if drift:  # the predictions scaled by how much slower the machine runs than at calibration
        factor = {c: statistics.median(v) for c, v in drift.items()}
        print(
            "drift-corrected (predictions times the machine's speed against calibration: "
            + ", ".join(f"{c} {f:.3f}" for c, f in sorted(factor.items()))
            + "), same measurements:"
        )
        for r in med:
            if r["config"] in factor:
                r["drift"] = factor[str(r["config"])]
                raw = float(r["pred_s"]) / scale[str(r["config"])]  # type: ignore[arg-type]
                r["drift_err"] = raw * r["drift"] / float(r["meas_s"]) - 1  # type: ignore[arg-type, operator]
        _predictor_summary([{**r, "err": r["drift_err"]} for r in med if "drift_err" in r], configs)
    if base_preds:  # the baseline predictor on the same measurements: a drift-free comparison
        print(f"baseline {args.baseline}, same measurements:")
        _predictor_summary([{**r, "err": r["base_err"]} for r in med if "base_err" in r], configs)
    _print_spread(med, bool(base_preds))
    loads = [float(r["load"]) for r in rows]  # type: ignore[arg-type]
    if loads:
        print(f"load average during the runs: {min(loads):.1f} .. {max(loads):.1f}")
    print(f"total {time.perf_counter() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"runs": rows, "medians": med, "repeatability": rep}, indent=1, sort_keys=True
            )
            + "\n"
        )
    return 0


def _medians(
    rows: list[dict[str, object]],
    configs: list[tuple[str, str, int]],
    base_preds: dict[tuple[str, str], float],
) -> list[dict[str, object]]:
    """Per model and configuration, the median measurement over the runs against the
    prediction (and the baseline's)."""
    med: list[dict[str, object]] = []
    for name in sorted({str(r["model"]) for r in rows}):
        for c, _, _ in configs:
            rs = [r for r in rows if r["model"] == name and r["config"] == c]
            if not rs:
                continue
            m = statistics.median(float(r["meas_s"]) for r in rs)  # type: ignore[arg-type]
            p = float(rs[0]["pred_s"])  # type: ignore[arg-type]
            row: dict[str, object] = {"model": name, "config": c, "pred_s": p, "meas_s": m,
                                      "err": p / m - 1}  # fmt: skip
            if (name, c) in base_preds:
                row["base_pred_s"] = base_preds[(name, c)]
                row["base_err"] = base_preds[(name, c)] / m - 1
            med.append(row)
    return med


def _across_sets(
    paths: list[str],
    preds: dict[tuple[str, str], float],
    base_preds: dict[tuple[str, str], float],
    configs: list[tuple[str, str, int]],
    out: str | None,
) -> int:
    """``--timings A.json,B.json,...``: every stored set judged on its own (the medians over
    its runs), then, per configuration, the share within 10% set by set and the models off by
    more than 10% in at least half of the sets, with their error in each and whether it kept
    its sign. An error that repeats from one set of timings to the next (taken at other hours,
    the machine at other speeds) is the predictor's; one that comes and goes is the machine's."""
    meds = []
    every = [_rejudged(path, preds) for path in paths]  # all read before anything is printed
    for path, rows in zip(paths, every, strict=True):
        med = _medians(rows, configs, base_preds)
        meds.append(med)
        print(f"== {path} ({len(rows)} timings; nothing measured now)")
        _predictor_summary(med, configs)
        _print_spread(med, bool(base_preds))
    print(f"\n=== across the {len(paths)} sets")
    for c, _, _ in configs:
        shares = [_within(med, c, "err") for med in meds]
        if not [s for s in shares if s is not None]:
            continue
        line = f"{c:<12} within 10% set by set: " + " / ".join(
            "-" if s is None else f"{s:.1%}" for s in shares
        )
        base = [_within(med, c, "base_err") for med in meds]
        if base_preds and all(b is not None for b in base):
            line += "; baseline " + " / ".join(f"{b:.1%}" for b in base if b is not None)
        print(line)
    for c, _, _ in configs:
        errs: dict[str, list[float | None]] = {}
        for k, med in enumerate(meds):
            for r in med:
                if r["config"] == c:
                    errs.setdefault(str(r["model"]), [None] * len(meds))[k] = float(r["err"])  # type: ignore[arg-type]
        if not errs:
            continue
        misses = {
            m: e
            for m, e in sorted(errs.items())
            if 2 * sum(v is not None and abs(v) > 0.10 for v in e) >= len(meds)
        }
        print(f"-- {c}: off by more than 10% in at least half of the sets: {len(misses)}")
        for m, e in misses.items():
            vals = [v for v in e if v is not None]
            sign = "one sign" if all(v > 0 for v in vals) or all(v < 0 for v in vals) else "both"
            print(f"   {m:<40} " + " ".join("      -" if v is None else f"{v:+7.1%}" for v in e)
                  + f"  ({sign})")  # fmt: skip
    if out:
        Path(out).write_text(
            json.dumps(
                {"sets": [{"timings": p, "medians": m} for p, m in zip(paths, meds, strict=True)]},
                indent=1,
                sort_keys=True,
            )
            + "\n"
        )
    return 0


def _within(med: list[dict[str, object]], config: str, key: str) -> float | None:
    errs = [abs(float(r[key])) for r in med if r["config"] == config and key in r]  # type: ignore[arg-type]
    return sum(e <= 0.10 for e in errs) / len(errs) if errs else None


def _rejudged(path: str, preds: dict[tuple[str, str], float]) -> list[dict[str, object]]:
    """The timings an earlier ``--json`` output holds, with this run's predictions."""
    rows = []
    try:
        stored = json.loads(Path(path).read_text())["runs"]
        for r in stored:
            p = preds.get((str(r["model"]), str(r["config"])))
            if p is None:
                continue
            meas, wall = float(r["meas_s"]), r.get("wall_s")
            rows.append({**r, "pred_s": p, "err": p / meas - 1.0,
                         "wall_err": (p / float(wall) - 1.0) if wall else None})  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as err:
        print(f"fidelity: --timings {path}: not the --json output of a predictor-mode run "
              f"({type(err).__name__}: {err}); give such a file", file=sys.stderr)  # fmt: skip
        raise SystemExit(2) from None
    return rows


def _drift_probe(
    args: argparse.Namespace, configs: list[str]
) -> dict[str, tuple[bytes, dict[str, float]]]:
    """``--probe-chains`` chains of the calibration's measurements (``--probe FILE``), rebuilt
    from their specs, with the latency each configuration measured then: timed again among the
    models, they tell how much faster or slower the machine runs now than at calibration
    (:func:`edgepart.profiling.recheck.probe_chains`; another choice of chains than
    ``--recheck``'s)."""
    from edgepart.profiling.calibrate import load_measurements
    from edgepart.profiling.recheck import probe_chains

    meas = load_measurements(args.probe)
    chosen = probe_chains(meas, configs, args.probe_chains, seed=1)
    return {f"probe:{i}": probe for i, probe in enumerate(chosen)}


def _predictor_summary(rows: list[dict[str, object]], configs: list[tuple[str, str, int]]) -> None:
    for c, _, _ in configs:
        errs = [abs(float(r["err"])) for r in rows if r["config"] == c]  # type: ignore[arg-type]
        if not errs:
            continue
        print(
            f"{c:<12} n={len(errs):>2}  median |err| {statistics.median(errs):6.1%}  "
            f"within 5%: {sum(e <= 0.05 for e in errs) / len(errs):6.1%}  "
            f"within 10%: {sum(e <= 0.10 for e in errs) / len(errs):6.1%}"
        )


def repeatability(
    values: dict[tuple[str, str], dict[int, float]],
) -> dict[str, dict[str, float]]:
    """How well the measurements agree with themselves, per configuration.

    ``values`` maps ``(model, configuration)`` to ``{run: measured seconds}``. Each run's
    measurement of a model is judged against the median of the other runs' as if it were a
    prediction: the share within +-5% and +-10% and the median error. A predictor judged on
    such measurements is held to a target the measurements themselves may not meet.

    >>> r = repeatability({("a", "c"): {0: 1.0, 1: 1.0, 2: 1.2}})["c"]
    >>> r["n"], round(r["within_10"], 3), round(r["median"], 3)
    (3, 0.667, 0.091)
    """
    errs: dict[str, list[float]] = {}
    for (_, config), runs in sorted(values.items()):
        if len(runs) < 2:
            continue
        for run, v in sorted(runs.items()):
            others = statistics.median(w for q, w in runs.items() if q != run)
            errs.setdefault(config, []).append(abs(v / others - 1.0))
    return {
        c: {
            "n": len(e),
            "within_5": sum(x <= 0.05 for x in e) / len(e),
            "within_10": sum(x <= 0.10 for x in e) / len(e),
            "median": statistics.median(e),
        }
        for c, e in sorted(errs.items())
    }


def spread(errors: list[float]) -> dict[str, float]:
    """How far the errors scatter around their common bias: the median of the log errors is
    the bias, and after it is taken out, the median absolute log error and the share within
    +-10%. A diagnostic of what a predictor gets right *between* models (the bias moves with
    the machine's speed; this does not), never a prediction: it uses the measurements' median.

    >>> s = spread([0.2, 0.2, 0.3])
    >>> round(s["bias"], 3), round(s["mad"], 3), round(s["within_10"], 3)
    (0.2, 0.0, 1.0)
    """
    logs = [math.log1p(e) for e in errors]
    bias = statistics.median(logs)
    rest = [x - bias for x in logs]
    return {
        "bias": math.expm1(bias),
        "mad": statistics.median(abs(x) for x in rest),
        "within_10": sum(abs(math.expm1(x)) <= 0.10 for x in rest) / len(rest),
    }


def _print_spread(med: list[dict[str, object]], baseline: bool) -> None:
    print("spread around each configuration's common bias (diagnostic, see spread()):")
    for c in sorted({str(r["config"]) for r in med}):
        rows = [r for r in med if r["config"] == c]
        line = f"{c:<12} " + _spread_text(spread([float(r["err"]) for r in rows]))  # type: ignore[arg-type]
        if baseline and all("base_err" in r for r in rows):
            line += "; baseline " + _spread_text(spread([float(r["base_err"]) for r in rows]))  # type: ignore[arg-type]
        print(line)


def _spread_text(s: dict[str, float]) -> str:
    return (
        f"bias {s['bias']:+6.1%}, spread {s['mad']:.3f}, within 10% after it {s['within_10']:6.1%}"
    )


def _print_repeatability(rep: dict[str, dict[str, float]]) -> None:
    if not rep:
        return
    print("repeatability of the measurements (each run against the median of the other runs):")
    for c, r in rep.items():
        print(
            f"{c:<12} n={int(r['n']):>3}  median |err| {r['median']:6.1%}  "
            f"within 5%: {r['within_5']:6.1%}  within 10%: {r['within_10']:6.1%}"
        )


# bands of measured whole-model latency: a predictor's error is rarely the same for a model of
# a few kernels of tens of nanoseconds as for one of milliseconds
BANDS_S = (0.0, 30e-6, 1e-3, float("inf"))


def _by_latency(rows: list[dict[str, object]], configs: list[tuple[str, str, int]]) -> None:
    print("by measured latency (median signed error, share within 10%):")
    for c, _, _ in configs:
        cells = []
        for lo, hi in itertools.pairwise(BANDS_S):
            errs = [float(r["err"]) for r in rows  # type: ignore[arg-type]
                    if r["config"] == c and lo <= float(r["meas_s"]) < hi]  # type: ignore[arg-type]  # fmt: skip
            label = f"{lo * 1e6:g}-{hi * 1e6:g} us" if hi != float("inf") else f">= {lo * 1e6:g} us"
            if errs:
                within = sum(abs(e) <= 0.10 for e in errs) / len(errs)
                cells.append(f"{label}: n={len(errs)} {statistics.median(errs):+.1%} {within:.0%}")
        print(f"   {c:<12} " + "; ".join(cells))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("table", "predictor"), default="table")
    ap.add_argument("--predictor", help="predictor file (--mode predictor)")
    ap.add_argument(
        "--probe",
        help="the calibration's measurements (host.measurements.npz, --mode predictor): some of "
        "its chains are timed again among the models, to tell the machine's drift since",
    )
    ap.add_argument("--probe-chains", type=int, default=48, help="chains --probe times again")
    ap.add_argument(
        "--recheck",
        action="store_true",
        help="with --probe: re-check the predictor's latency scale before the runs, as "
        "calibrate --host --recheck does, and judge the scaled predictor",
    )
    ap.add_argument(
        "--baseline",
        help="another predictor file judged on the same measurements (--mode predictor): the "
        "machine's speed drifts between runs, so two predictors compare only in one run",
    )
    # 27, not 9: with 9 samples a run's p10 of a 2-thread (wall clock) timing moved by more than
    # 10% from one run to the next for 46% of the models; with 27, for 10% (2026-12-04)
    ap.add_argument(
        "--timings",
        metavar="JSON",
        help="--mode predictor: judge on the timings an earlier --json output holds instead of "
        "measuring (several predictors compare on the same timings; no --probe); several "
        "files, comma-separated: each judged on its own, then the misses that repeat across them",
    )
    ap.add_argument("--rounds", type=int, default=27, help="samples per model per run (predictor)")
    ap.add_argument("--executors", default="xnnpack,builtin")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--models",
        help="comma-separated corpus names (default: default corpus; 'all': the corpus and the "
        "real models LiteRT runs, as --mode predictor uses)",
    )
    ap.add_argument("--extra", help="directory of additional .tflite files to include")
    ap.add_argument("--runs", type=int, default=1, help="repeat the whole comparison N times")
    ap.add_argument("--json", help="write all rows here")
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if args.runs < 1:
        ap.error(f"--runs {args.runs}: need at least 1")
    if args.mode == "predictor":
        if not args.predictor:
            ap.error("--mode predictor needs --predictor FILE")
        if args.rounds < 3:  # a timing's statistics need three samples
            ap.error(f"--rounds {args.rounds}: need at least 3 samples per model per run")
        if args.timings and (args.probe or args.recheck):
            ap.error("--timings judges stored timings: --probe and --recheck time chains now")
        from edgepart.errors import EdgepartError

        try:
            return predictor_mode(args)
        except EdgepartError as err:
            print(f"fidelity: {err}", file=sys.stderr)
            return 2
    shapes: dict[str, dict[str, list[int]] | None] = {}
    if args.models == "all":  # the corpus and the real models, as in --mode predictor
        both = predictor_models(None)
        models = {k: p for k, (p, _) in both.items()}
        shapes = {k: s for k, (_, s) in both.items()}
    else:
        models = corpus(args.models.split(",") if args.models else None)
    if args.extra:
        for p in sorted(Path(args.extra).glob("*.tflite")):
            models[p.stem] = p
    rows: list[dict[str, object]] = []
    t0 = time.perf_counter()
    executors = args.executors.split(",")
    per_run: dict[str, list[float]] = {}
    for run in range(args.runs):
        if args.runs > 1:
            print(f"\n=== run {run + 1} of {args.runs} ===")
        got = one_run(models, executors, args.threads, shapes)
        for r in got:
            r["run"] = run
        rows.extend(got)
        print()
        for stat in STATS:
            for ex in [*executors, None]:
                line = summarize(got, stat, ex)
                if line:
                    print(line)
            errs = [abs(float(r[f"{stat}_err"])) for r in got]  # type: ignore[arg-type]
            if errs:
                per_run.setdefault(stat, []).append(sum(e <= 0.10 for e in errs) / len(errs))
        print(f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if args.runs > 1:
        print("\nspread over runs (share within +-10%, all executors):")
        for stat, shares in per_run.items():
            print(
                f"{stat:>6}: "
                + " ".join(f"{x:.1%}" for x in shares)
                + f"  (min {min(shares):.1%}, median {statistics.median(shares):.1%}, "
                f"max {max(shares):.1%})"
            )
        measured: dict[tuple[str, str], dict[int, float]] = {}
        for r in rows:
            key = (str(r["model"]), f"{r['executor']}_{args.threads}t")
            measured.setdefault(key, {})[int(r["run"])] = float(r["p10_meas_s"])  # type: ignore[call-overload, arg-type]
        print("\np10 statistic:")
        _print_repeatability(repeatability(measured))
        print("\nall runs pooled:")
        for stat in STATS:
            line = summarize(rows, stat, None)
            if line:
                print(line)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
