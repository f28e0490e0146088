"""``edgepart calibrate --host``: measure this machine and fit its latency predictors."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="measure this host (generated kernel chains) and fit its latency predictors",
        description="Measure generated kernel chains (convolutions, matrix products, "
        "element-wise ops ... over the ranges real models use, inside chains, order "
        "randomized, with adaptive sampling) on this machine with the real LiteRT runtime, "
        "fit one latency predictor per executor configuration (cross-validated; the best of "
        "linear, gradient-boosted-tree and random-forest models), and write this machine's "
        "device profile (`--profile host`), its predictor and the measurements. "
        "--fit-only refits saved measurements without measuring.",
    )
    p.add_argument("--host", action="store_true", help="calibrate this machine (required)")
    p.add_argument(
        "--executor",
        action="append",
        choices=("xnnpack", "builtin"),
        help="executor to calibrate (repeatable; default: both)",
    )
    p.add_argument(
        "--threads",
        action="append",
        type=int,
        metavar="N",
        help="XNNPACK thread count (repeatable; default: 1 to min(cores, 4)); builtin "
        "kernels are calibrated with 1 thread unless given",
    )
    p.add_argument(
        "--budget", type=float, default=30.0, metavar="MIN", help="minutes in all (default 30)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the chain draws and the fit")
    p.add_argument(
        "--family",
        default="auto",
        choices=("auto", "linear", "gbt", "rf"),
        help="predictor family (default: the best cross-validated one)",
    )
    p.add_argument(
        "--statistic",
        default="p10",
        choices=("p10", "median", "min"),
        help="which statistic of each chain's samples to fit (default p10)",
    )
    p.add_argument(
        "-o", "--out", metavar="DIR", help="output directory (default: where --profile host looks)"
    )
    p.add_argument(
        "--fit-only",
        metavar="NPZ",
        help="refit saved measurements (host.measurements.npz) instead of measuring",
    )
    p.add_argument(
        "--predictor-out", metavar="JSON", help="with --fit-only or --from-table: the predictor"
    )
    p.add_argument(
        "--from-table",
        action="append",
        default=[],
        metavar="TABLE=MODEL",
        help="fit a predictor from a per-op latency table (edgepart profile, also --adb on a "
        "phone) of MODEL instead of calibrating this host (repeatable; with --predictor-out)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--json", action="store_true", help="print the fit report as JSON")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from pathlib import Path

    from edgepart.errors import UsageError
    from edgepart.profiling.host_calibration import (
        PREDICTOR_FILE,
        calibrate_host,
        default_configs,
        refit,
    )

    if args.from_table:
        return _from_tables(args)
    if not args.host:
        raise UsageError(
            "calibrate: give --host (measure this machine) or --from-table TABLE=MODEL"
        )
    bar = None if args.no_progress or args.json else _make_bar()
    if args.fit_only:
        out = args.predictor_out or str(
            Path(args.out or Path(args.fit_only).parent) / PREDICTOR_FILE
        )
        _, reports = refit(
            args.fit_only,
            out,
            family=args.family,
            statistic=args.statistic,
            seed=args.seed,
            progress=(lambda s: bar.update(0.5, s)) if bar else None,
        )
        if bar:
            bar.close()
        _report(reports, args, [out])
        return 0
    cfgs = default_configs()
    if args.executor or args.threads:
        execs = args.executor or ["xnnpack", "builtin"]
        threads = sorted(set(args.threads or [t for e, t in cfgs if e == "xnnpack"]))
        if any(t < 1 for t in threads):
            raise UsageError("--threads: need at least 1")
        cfgs = []
        for ex in execs:
            ts = threads if ex == "xnnpack" or args.threads else [1]
            cfgs.extend((ex, t) for t in ts)
    try:
        res = calibrate_host(
            configs=cfgs,
            budget_s=args.budget * 60,
            seed=args.seed,
            family=args.family,
            statistic=args.statistic,
            out_dir=args.out,
            progress=bar.update if bar else None,
        )
    finally:
        if bar:
            bar.close()
    if not args.json:
        r = res.roofs
        print(
            f"host: {res.measurements.host.get('description')}; peaks fp32 "
            f"{r['fp32']['best'] / 1e9:.1f} / int8 {r['int8']['best'] / 1e9:.1f} G op/s "
            f"({r['threads']} threads), copy bandwidth {r['bandwidth'] / 1e9:.1f} GB/s"
        )
        load = res.predictor.calibration.get("load", {})
        print(
            f"measured {len(res.measurements.chains)} chains in "
            f"{res.measurements.elapsed_s:.0f} s (load average {load.get('min', 0):.1f}.."
            f"{load.get('max', 0):.1f}); total {res.elapsed_s:.0f} s of a "
            f"{res.budget_s:.0f} s budget"
        )
    _report(res.reports, args, [str(f) for f in res.files])
    return 0


def _from_tables(args: argparse.Namespace) -> int:
    from edgepart.cost.table import load_table
    from edgepart.errors import UsageError
    from edgepart.profiling.table_fit import predictor_from_tables
    from edgepart.tflite.reader import read_model

    if not args.predictor_out:
        raise UsageError("--from-table needs --predictor-out JSON")
    family = "linear" if args.family == "auto" else args.family
    pairs: list[Any] = []
    for item in args.from_table:
        table, sep, model = item.partition("=")
        if not sep or not table or not model:
            raise UsageError(f"--from-table {item!r}: expected TABLE=MODEL")
        t = load_table(table)
        m = read_model(model)
        pairs.extend((m, pt) for pt in t.processors.values())
    pred = predictor_from_tables(pairs, family=family, seed=args.seed)
    pred.save(args.predictor_out)
    for name, cp in sorted(pred.configs.items()):
        fam = cp.extra.get("families", {}).get(cp.family, {})
        print(
            f"{name}: {cp.extra.get('chains', 0)} measured kernels and partitions, {cp.family}; "
            f"held-out median error {fam.get('median_abs', float('nan')):.1%}"
        )
    print(f"wrote {args.predictor_out}")
    return 0


def _report(reports: Any, args: argparse.Namespace, files: list[str]) -> None:
    if args.json:
        print(json.dumps({"reports": [r.to_json() for r in reports], "files": files}, indent=1))
        return
    for r in reports:
        fams = "  ".join(
            f"{f}: median {v['median_abs']:.1%}, within 10% {v['within_10']:.0%}"
            for f, v in r.families.items()
        )
        print(f"\n{r.config}: {r.chains} chains, {r.kernels} kernels; held-out chain error: {fams}")
        print(f"  chosen: {r.family}")
        print(
            f"  {'kernel type':<18} {'chains':>6} {'median':>8} {'<=10%':>6} {'p10':>7} {'p90':>7}"
        )
        for t, s in sorted(r.per_type.items()):
            if s.get("n", 0) < 5:
                continue
            print(
                f"  {t:<18} {int(s['n']):>6} {s['median_abs']:>8.1%} {s['within_10']:>6.0%} "
                f"{s['q10']:>+7.1%} {s['q90']:>+7.1%}"
            )
    print()
    for f in files:
        print(f"wrote {f}")


def _make_bar() -> Any:
    """The project's progress bar (``edgepart.progress``) where present, else a plain one."""
    import importlib

    try:
        mod = importlib.import_module("edgepart.progress")
    except ImportError:
        return _Bar()
    return _Shared(mod.Progress("calibrating", unit="/1000 of the budget"))


class _Shared:
    """Feeds fractions of the budget to an ``edgepart.progress.Progress`` bar."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar

    def update(self, frac: float, label: str) -> None:
        self.bar(int(max(0.0, min(frac, 1.0)) * 1000), 1000, label)

    def close(self) -> None:
        self.bar.close()


class _Bar:
    """A one-line progress bar on stderr (fraction of the time budget and a label)."""

    def __init__(self) -> None:
        self._last = ""

    def update(self, frac: float, label: str) -> None:
        width = 30
        n = int(max(0.0, min(frac, 1.0)) * width)
        line = f"\r[{'#' * n}{'.' * (width - n)}] {frac:5.1%} {label[:50]:<50}"
        if line != self._last:
            sys.stderr.write(line)
            sys.stderr.flush()
            self._last = line

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()
