"""``edgepart calibrate --host``: measure this machine and fit its latency predictors."""

from __future__ import annotations

import argparse
import json
from typing import Any

import edgepart
from edgepart.errors import UsageError

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
        "--fit-only refits saved measurements without measuring; --recheck times a few of "
        "the calibration's chains again and scales the predictor by how much faster or "
        "slower the machine runs now.",
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
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the chain draws and the fit (default 0; with --fit-only, the seed the "
        "measurements were drawn with)",
    )
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
        "--recheck",
        action="store_true",
        help="time --recheck-chains of the calibration's chains (in -o DIR) again and store "
        "in its predictor how much faster or slower this machine runs now (about ten "
        "seconds; every prediction is scaled by it)",
    )
    p.add_argument(
        "--recheck-chains",
        type=int,
        default=64,
        metavar="N",
        help="chains --recheck times again (default 64)",
    )
    p.add_argument(
        "--predictor-out",
        metavar="JSON",
        help="with --fit-only, --recheck or --from-table: the predictor",
    )
    p.add_argument(
        "--from-table",
        action="append",
        default=[],
        metavar="TABLE=MODEL",
        help="fit a predictor from a per-op latency table (edgepart profile, also --adb on a "
        "phone) of MODEL instead of calibrating this host (repeatable; with --predictor-out)",
    )
    p.add_argument(
        "--require-steady",
        action="store_true",
        help="stop (status 2, nothing written) as soon as the machine runs unsteadily: its "
        "canary's slow batches take more than 1.25 times as long as its fast ones over the "
        "first minute, or 1.3 times over the batches so far at any later batch, where "
        "calibrations hold out about twice the error; by default the calibration goes on and "
        "its report says how steady the machine was",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--json", action="store_true", help="print the fit report as JSON")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    if args.require_steady and (args.fit_only or args.recheck or args.from_table):
        raise UsageError(
            "calibrate: --require-steady judges the machine while measuring chains: not with "
            "--fit-only, --recheck or --from-table"
        )
    if args.from_table:
        return _from_tables(args)
    if not args.host:
        raise UsageError(
            "calibrate: give --host (measure this machine) or --from-table TABLE=MODEL"
        )
    if args.recheck:
        return _recheck(args)
    bar = edgepart.Progress(
        "calibrating",
        unit="/1000 of the budget",
        enabled=False if args.no_progress or args.json else None,
    )
    if args.fit_only:
        try:
            fit = edgepart.refit_predictor(
                args.fit_only,
                args.predictor_out or args.out,
                family=args.family,
                statistic=args.statistic,
                seed=args.seed,
                progress=bar,
            )
        finally:
            bar.close()
        _report(fit.reports, args, [str(f) for f in fit.files])
        return 0
    try:
        res = edgepart.calibrate_host(
            executors=args.executor,
            threads=args.threads,
            budget=args.budget * 60,
            seed=args.seed or 0,
            family=args.family,
            statistic=args.statistic,
            out_dir=args.out,
            progress=bar,
            require_steady=args.require_steady,
        )
    finally:
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


def _recheck(args: argparse.Namespace) -> int:
    if args.fit_only:
        raise UsageError("give --recheck or --fit-only, not both")
    bar = edgepart.Progress("re-checking", unit=" rounds", enabled=False if args.no_progress
                            or args.json else None)  # fmt: skip
    try:
        res = edgepart.recheck_host(
            args.out,
            out=args.predictor_out,
            chains=args.recheck_chains,
            seed=args.seed or 0,
            progress=bar,
        )
    finally:
        bar.close()
    if args.json:
        checks = [{**c.to_json(), "unsteady": c.unsteady, "applied": c.applies}
                  for _, c in sorted(res.checks.items())]  # fmt: skip
        print(json.dumps({"checks": checks,
                          "files": [str(f) for f in res.files]}, indent=1))  # fmt: skip
        return 0
    for name, c in sorted(res.checks.items()):
        print(
            f"{name}: {c.chains} of the calibration's chains now take {c.scale:.3f} of their "
            f"calibration time (quartiles {c.q25:.3f}..{c.q75:.3f}); {c.verdict}"
        )
    if any(c.unsteady for c in res.checks.values()):
        print(
            "the chains' ratios spread by more than 10% between their quartiles: the machine "
            "was unsteady while re-checking; re-check again"
        )
    for f in res.files:
        print(f"wrote {f}")
    return 0


def _from_tables(args: argparse.Namespace) -> int:
    if not args.predictor_out:
        raise UsageError("--from-table needs --predictor-out JSON")
    pairs = []
    for item in args.from_table:
        table, sep, model = item.partition("=")
        if not sep or not table or not model:
            raise UsageError(f"--from-table {item!r}: expected TABLE=MODEL")
        pairs.append((table, model))
    pred = edgepart.fit_predictor_from_tables(
        pairs, args.predictor_out, family=args.family, seed=args.seed or 0
    )
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
        ms = r.machine_state or {}
        if "speed_q10" in ms:
            print(
                f"  chain times brought to the typical machine state: the canary ran at "
                f"{ms['speed_q10']:.3f}..{ms['speed_q90']:.3f} of typical (p10..p90), chains "
                f"follow it to the power {ms['alpha']:.2f}"
            )
            if ms.get("slow_pool_batches"):
                print(
                    f"  {ms['slow_pool_batches']:.0f} of {ms['batches']:.0f} batches left out: "
                    f"measured while the thread pool was slow to wake"
                )
        if "calm_pool_median_factor" in ms:
            print(
                f"  and brought to a calm thread pool: divided by "
                f"{ms['calm_pool_median_factor']:.3f} (median), {ms['calm_pool_q90_factor']:.3f} "
                f"(90th percentile)"
            )
        if r.reference:
            print(
                f"  fitted against {r.reference}: per kernel type, a fixed cost plus a scale of "
                f"its prediction (its speed-up is 1/scale)"
            )
        ref = "  scale  +fixed" if r.reference else ""
        print(
            f"  {'kernel type':<18} {'chains':>6} {'median':>8} {'<=10%':>6} {'p10':>7} {'p90':>7}"
            f"{ref}"
        )
        for t, s in sorted(r.per_type.items()):
            if s.get("n", 0) < 5:
                continue
            scale = ""
            if t in r.scales:
                fixed, k = r.scales[t]
                scale = f" {k:>6.3f} {fixed * 1e9:>4.0f} ns"
            print(
                f"  {t:<18} {int(s['n']):>6} {s['median_abs']:>8.1%} {s['within_10']:>6.0%} "
                f"{s['q10']:>+7.1%} {s['q90']:>+7.1%}{scale}"
            )
    # every configuration was measured in the same batches: one verdict for the calibration
    spreads = [ms["spread"] for r in reports if (ms := r.machine_state or {}).get("unsteady")]
    if spreads:
        print(
            f"\nwarning: the machine was unsteady while calibrating (its slow batches ran "
            f"{max(spreads):.2f}x as long as its fast ones); every configuration was measured in "
            f"those batches and its predictions carry that noise: calibrate again when the "
            f"machine is quiet"
        )
    print()
    for f in files:
        print(f"wrote {f}")
