"""``edgepart profile MODEL``: measure every op of a model and write a latency table.

On this host by default (:func:`edgepart.profile_host`, the LiteRT interpreter); with ``--adb``
on Android phones (:func:`edgepart.profile_phone`, ``benchmark_model``; options shared with
``edgepart bench``). Both write the same latency-table format.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import edgepart
from edgepart import jsondoc as _json
from edgepart.cli._args import (
    adb_options,
    add_adb_arguments,
    add_input_shape_argument,
    input_shapes,
)
from edgepart.cli._phone_text import finish, print_profile
from edgepart.errors import UsageError
from edgepart.timefmt import format_seconds

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "profile",
        help="time every op (and fused group) of a model with LiteRT; write a latency table",
        description="Measure every op of a model's main subgraph on this host: each op (or "
        "group of ops the executor fuses into one kernel, or ops sharing state) is extracted "
        "into a standalone model and timed with the LiteRT interpreter (warm-up, adaptive "
        "repeats, median and spread), as is the whole model and the per-invocation overhead. "
        "Writes a latency table (docs/latency_tables.md).",
    )
    p.add_argument("model", help="path to a .tflite file")
    p.add_argument(
        "--executor",
        choices=edgepart.EXECUTOR_NAMES,
        default="xnnpack",
        help="xnnpack = LiteRT default (XNNPACK delegate); builtin = builtin kernels "
        "without default delegates; reference = reference kernels",
    )
    p.add_argument("--threads", type=int, default=1, help="interpreter threads (default 1)")
    p.add_argument("-o", "--output", metavar="JSON", help="write the latency table here")
    p.add_argument(
        "--processor", help="processor name in the table (default host_<executor>_<threads>t)"
    )
    p.add_argument(
        "--statistic",
        choices=("median", "p10", "min"),
        default="p10",
        help="statistic a table entry's value is taken from (default p10: "
        "interference from other processes only adds time)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=0.04,
        metavar="SECONDS",
        help="measuring time per op (repeats adapt to it; default 0.04)",
    )
    p.add_argument(
        "--no-fusion",
        action="store_true",
        help="single ops only: do not time fused op pairs or ops after their predecessor",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument(
        "--top",
        type=int,
        default=15,
        metavar="N",
        help="print the N slowest units (default 15; 0 = none)",
    )
    add_input_shape_argument(p)
    add_adb_arguments(p, profile=True)  # the --adb branch: benchmark_model on phones
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    if args.threads < 1:
        raise UsageError(f"--threads {args.threads}: need at least 1")
    if args.budget <= 0:
        raise UsageError(f"--budget {args.budget}: need a positive number of seconds")
    if args.adb:
        if args.input_shape:
            raise UsageError(
                "--input-shape applies to host profiling; benchmark_model on a "
                "phone runs the model at its stored shapes"
            )
        return _adb(args)
    with _bar(args, "op") as bar:
        res = edgepart.profile_host(
            args.model,
            executor=args.executor,
            threads=args.threads,
            budget=args.budget,
            processor=args.processor,
            statistic=args.statistic,
            fusion=not args.no_fusion,
            output=args.output,
            progress=bar,
            input_shapes=input_shapes(args),
        )
    _report(res, args)
    return 0


def _adb(args: argparse.Namespace) -> int:
    """The ``--adb`` branch: per-op profile on phones -> latency table."""
    with _bar(args, "run") as bar:
        report, table = edgepart.profile_phone(
            args.model,
            delegates=args.delegate or ["xnnpack"],
            threads=args.threads,
            op_output=args.op_output,
            statistic=args.statistic,
            processor=args.processor,
            output=args.output,
            progress=bar,
            **adb_options(args),
        )
    if args.json:
        print(_json.text(report.to_json(), default=str))
    else:
        print_profile(report, table)
    return finish(report)


def _report(res: Any, args: argparse.Namespace) -> None:
    pt = res.table.processors[res.processor]
    if args.top:
        units = sorted(res.units, key=lambda u: -u.value_s)[: args.top]
        print(f"{'ops':<14} {'kind':<6} {'value us':>10} {'p10':>9} {'p90':>9} {'n':>4}  signature")
        for u in units:
            st = u.stats
            ops = ",".join(map(str, u.unit.ops))
            if st is None:
                print(f"{ops[:14]:<14} {u.kind:<6} {'failed':>10}  {u.error}")
                continue
            print(
                f"{ops[:14]:<14} {u.kind:<6} {u.value_s * 1e6:>10.2f} {st.p10_s * 1e6:>9.2f} "
                f"{st.p90_s * 1e6:>9.2f} {st.count:>4}  {u.key[:70]}"
            )
        print()
    failed = [u for u in res.units if u.stats is None]
    print(
        f"processor {res.processor}: {len(res.units)} units, {res.timed} timed, "
        f"{len(pt.entries)} table entries, {len(res.fused)} fused groups, "
        f"{len(failed)} failed, {res.elapsed_s:.1f} s"
    )
    print(f"invoke overhead {format_seconds(res.overhead.median_s)}")
    if res.model_stats is not None:
        m = res.model_stats
        measured = (
            f"whole model: measured median {format_seconds(m.median_s)} (p10 "
            f"{format_seconds(m.p10_s)}, p90 {format_seconds(m.p90_s)}); "
        )
        if not math.isfinite(res.predicted_s):
            print(
                measured + f"no table prediction: {len(failed)} unit(s) could not be timed "
                "(see the lines above)"
            )
        else:
            err = (res.predicted_s / m.median_s - 1) * 100 if m.median_s > 0 else float("nan")
            print(
                measured + f"table sum + overhead {format_seconds(res.predicted_s)} ({err:+.1f}%)"
            )
    if args.output:
        print(f"wrote {args.output}")


def _bar(args: argparse.Namespace, unit: str) -> edgepart.Progress:
    """A bar on stderr when it is a terminal (edgepart.progress), never with --no-progress."""
    return edgepart.Progress("profiling", unit=unit, enabled=False if args.no_progress else None)
