"""Argument helpers shared by several commands: ``NAME=VALUE`` options and the adb options."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import edgepart
from edgepart.errors import UsageError

__all__ = [
    "adb_options",
    "add_adb_arguments",
    "add_input_shape_argument",
    "input_shapes",
    "key_values",
]


def key_values(items: Sequence[str], flag: str, form: str) -> dict[str, str]:
    """``{NAME: VALUE}`` from repeated ``NAME=VALUE`` options (``form`` names them in errors,
    e.g. ``"PROC=TABLEPROC"``); later repeats win."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise UsageError(f"{flag} {item!r}: expected {form}")
        out[name] = value
    return out


def add_input_shape_argument(p: argparse.ArgumentParser) -> None:
    """``--input-shape NAME=D0,D1,...`` (repeatable): the size a dynamic input runs at."""
    p.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=D0,D1,...",
        help="run input NAME (signature name, tensor name or index) at this shape, as "
        "resize_tensor_input does: only -1 dimensions of its shape signature can change; "
        "shapes computed in the model follow (repeatable; default: the stored shape)",
    )


def input_shapes(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    """``{NAME: shape}`` from the ``--input-shape`` options (later repeats win)."""
    return dict(edgepart.parse_input_shape(s) for s in getattr(args, "input_shape", None) or [])


def _delegate_help() -> str:
    """What ``--delegate`` accepts, from the delegate files on the search path."""
    try:
        names = f" ({', '.join(edgepart.delegate_names())})"
    except UsageError:  # a bad EDGEPART_PATH is reported when the command runs, not in help
        names = ""
    return (
        f"a delegate{names} by name or by the benchmark_model label its file gives, or "
        "external:DEVICE_PATH"
    )


def add_adb_arguments(p: argparse.ArgumentParser, *, profile: bool = False) -> None:
    """The device, binary and run options shared by ``bench --adb`` and ``profile --adb``.

    ``profile=True`` leaves out ``--threads`` (``profile`` has its own) and adds
    ``--op-output`` and ``--json``.
    """
    g = p.add_argument_group("Android device (adb)")
    g.add_argument("--adb", action="store_true", help="run on Android devices through adb")
    g.add_argument(
        "--serial",
        "-s",
        action="append",
        default=[],
        metavar="SERIAL",
        help="device to use (repeat for several, run in parallel; default ANDROID_SERIAL or "
        "the only device attached)",
    )
    g.add_argument("--adb-server", metavar="tcp:HOST:PORT", help="adb server address")
    g.add_argument(
        "--delegate",
        action="append",
        default=[],
        metavar="D",
        help=f"{_delegate_help()}; repeat for a side-by-side comparison (default xnnpack)",
    )
    if not profile:
        g.add_argument("--threads", type=int, help="--num_threads (default: the tool's)")
    g.add_argument("--cpu-mask", metavar="HEX", help="pin to CPUs with taskset (e.g. f0)")
    b = g.add_mutually_exclusive_group()
    b.add_argument(
        "--benchmark-binary", metavar="PATH", help="local benchmark_model to push and run"
    )
    b.add_argument(
        "--remote-binary",
        metavar="DEVICE_PATH",
        help="benchmark_model already on the device (default /data/local/tmp/benchmark_model)",
    )
    g.add_argument("--runs", type=int, help="regular runs (--num_runs, with --min_secs=0)")
    g.add_argument("--warmup", type=int, help="warm-up runs (--warmup_runs, min secs 0)")
    g.add_argument(
        "--timeout", type=float, default=600.0, metavar="S", help="seconds per run (default 600)"
    )
    g.add_argument(
        "--resume",
        metavar="DIR",
        help="keep results in DIR and skip runs already completed there (default: a directory "
        "under ./edgepart-runs named after the settings, started afresh)",
    )
    if profile:
        g.add_argument(
            "--op-output",
            choices=("auto", "proto", "csv", "text"),
            default="auto",
            help="per-op output to request: auto = proto where the binary supports it, else "
            "the stdout table",
        )
        g.add_argument("--json", action="store_true", help="print the adb report as JSON")


def adb_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of the phone API calls from the options above."""
    return {
        "serials": args.serial,
        "adb_server": args.adb_server,
        "cpu_mask": args.cpu_mask,
        "benchmark_binary": args.benchmark_binary,
        "remote_binary": args.remote_binary,
        "runs": args.runs,
        "warmup": args.warmup,
        "timeout": args.timeout,
        "results_dir": args.resume,
    }
