"""``edgepart bench MODEL|BUNDLE --adb``: run TFLite's ``benchmark_model`` on Android phones."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import edgepart
from edgepart.cli._args import adb_options, add_adb_arguments, key_values
from edgepart.cli._phone_text import emit, finish, print_bench, print_bundle
from edgepart.errors import UsageError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "bench",
        help="benchmark a model or bundle on Android phones with benchmark_model (adb)",
        description="Push a model (or every partition of a bundle) and TFLite's benchmark_model "
        "to Android devices, run it with each delegate, and report init, first, warm-up and "
        "steady-state latency (median and spread) and memory. Several delegates give a "
        "side-by-side table; several --serial run in parallel. Results are kept as they "
        "complete; --resume finishes an interrupted run.",
    )
    p.add_argument("target", metavar="MODEL|BUNDLE", help=".tflite model or bundle directory")
    add_adb_arguments(p)
    p.add_argument(
        "--delegate-library",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="bundles: external delegate library on the device for a plan delegate "
        "(e.g. edgetpu=/data/local/tmp/libedgetpu.so.1); repeatable",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    if not args.adb:
        raise UsageError(
            "benchmarking needs a target: pass --adb to run on Android devices (host runs: "
            "`edgepart run`, host per-op profiles: `edgepart profile`)"
        )
    if Path(args.target).is_dir():
        if args.delegate:
            raise UsageError(
                "a bundle's partitions run with the delegates its plan assigns; drop --delegate"
            )
        libs = key_values(args.delegate_library, "--delegate-library", "NAME=DEVICE_PATH")
        with edgepart.Progress("bench", unit="run") as bar:
            report = edgepart.bench_bundle(
                args.target,
                delegate_libraries=libs,
                threads=args.threads,
                progress=bar,
                **adb_options(args),
            )
        emit(report, args.json, print_bundle)
    else:
        if args.delegate_library:
            raise UsageError("--delegate-library applies to bundles; use --delegate external:PATH")
        with edgepart.Progress("bench", unit="run") as bar:
            report = edgepart.bench_model(
                args.target,
                delegates=args.delegate or ["xnnpack"],
                threads=args.threads,
                progress=bar,
                **adb_options(args),
            )
        emit(report, args.json, print_bench)
    return finish(report)
