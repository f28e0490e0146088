"""``edgepart bench MODEL|BUNDLE --adb``: run TFLite's ``benchmark_model`` on Android phones.

Also home of the adb options and the ``--adb`` branch that ``edgepart profile`` uses
(:func:`add_adb_arguments`, :func:`profile_adb`), so both commands take the same options.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

__all__ = ["add_adb_arguments", "profile_adb", "register"]


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
    from edgepart.android.bm_flags import delegate_help

    g.add_argument(
        "--delegate",
        action="append",
        default=[],
        metavar="D",
        help=f"{delegate_help()}; repeat for a side-by-side comparison (default xnnpack)",
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
        metavar="NAME=DEVICE_PATH",
        help="bundles: external delegate library on the device for a plan delegate "
        "(e.g. edgetpu=/data/local/tmp/libedgetpu.so.1)",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=handler)


def _common(args: argparse.Namespace) -> dict[str, Any]:
    from edgepart.android.jobs import BinarySpec, RunSettings
    from edgepart.android.server import AdbServer
    from edgepart.errors import UsageError

    if not args.adb:
        raise UsageError(
            "benchmarking needs a target: pass --adb to run on Android devices (host runs: "
            "`edgepart run`, host per-op profiles: `edgepart profile`)"
        )
    settings = RunSettings(
        binary=BinarySpec(args.benchmark_binary, args.remote_binary),
        cpu_mask=args.cpu_mask,
        runs=args.runs,
        warmup=args.warmup,
        timeout=args.timeout,
    )
    return {
        "serials": args.serial,
        "settings": settings,
        "results_dir": args.resume,
        "resume": args.resume is not None,
        "server": AdbServer.parse(args.adb_server) if args.adb_server else None,
    }


def handler(args: argparse.Namespace) -> int:
    from edgepart.android.bm_flags import parse_delegate
    from edgepart.errors import UsageError

    common = _common(args)
    if Path(args.target).is_dir():
        from edgepart.android.bundle_bench import bench_bundle

        if args.delegate:
            raise UsageError(
                "a bundle's partitions run with the delegates its plan assigns; drop --delegate"
            )
        libs = _libraries(args.delegate_library)
        report = bench_bundle(args.target, threads=args.threads, libraries=libs, **common)
        _emit(report, args.json, _print_bundle)
    else:
        from edgepart.android.model_bench import bench_model

        if args.delegate_library:
            raise UsageError("--delegate-library applies to bundles; use --delegate external:PATH")
        delegates = [parse_delegate(d) for d in args.delegate or ["xnnpack"]]
        report = bench_model(args.target, delegates=delegates, threads=args.threads, **common)
        _emit(report, args.json, _print_bench)
    return _finish(report)


def _libraries(items: list[str]) -> dict[str, str]:
    from edgepart.errors import UsageError

    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path.startswith("/"):
            raise UsageError(
                f"--delegate-library {item!r}: use NAME=DEVICE_PATH, e.g. "
                "edgetpu=/data/local/tmp/libedgetpu.so.1"
            )
        out[name] = path
    return out


def _emit(report: Any, as_json: bool, printer: Any) -> None:
    if as_json:
        print(json.dumps(report.to_json(), indent=1, sort_keys=True))
    else:
        printer(report)
        print(f"results: {report.results_dir}")


def _finish(report: Any) -> int:
    err = report.failure()
    if err is not None:
        raise err
    return 0


# --- text reports ------------------------------------------------------------------------------


def _f(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _device_line(d: Any) -> str:
    i = d.info or {}
    bits = [i.get("model"), i.get("soc") and f"SoC {i['soc']}"]
    bits += [i.get("android_version") and f"Android {i['android_version']}", i.get("abi")]
    return f"device {d.serial}: " + ", ".join(b for b in bits if b)


def _row(rec: dict[str, Any], first: str) -> list[str]:
    s = rec.get("summary") or {}
    st = s.get("steady") or {}
    mem = s.get("memory") or {}
    spread = "-"
    if st.get("p5_ms") is not None:
        spread = f"{st['p5_ms']:.3f}-{st['p95_ms']:.3f}"
    elif st.get("min_ms") is not None:
        spread = f"{st['min_ms']:.3f}-{st['max_ms']:.3f} (min-max)"
    median = st.get("median_ms")
    if median is not None:
        central = _f(median)
    elif st.get("avg_ms") is not None:
        central = _f(st["avg_ms"]) + " (avg)"  # builds without percentiles print no median
    else:
        central = "-"
    verdict = (rec.get("delegate_verdict") or {}).get("executed_on", "")
    return [
        first,
        rec["status"] + ("*" if rec.get("resumed") else ""),
        _f(s.get("init_ms")),
        _f(s.get("first_ms")),
        _f(s.get("warmup_avg_ms")),
        central,
        spread,
        _f(st.get("std_ms")),
        str(st.get("count") or "-"),
        _f(mem.get("peak_mb") or mem.get("overall_delta_mb"), 1),
        verdict,
    ]


_HEAD = ["init ms", "first ms", "warm-up ms", "median ms", "p5-p95 ms", "std ms", "runs", "mem MB"]


def _table(rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        cells = [
            c.ljust(w) if i in (0, 1, len(r) - 1) else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        print("  ".join(cells).rstrip())


def _notes(records: list[dict[str, Any]]) -> None:
    for rec in records:
        if rec["status"] != "ok" or not (rec.get("delegate_verdict") or {}).get("applied", True):
            print(f"  {rec['status']}: {rec['message']}")
    if any(r.get("resumed") for r in records):
        print("  * taken from the results directory (--resume), not re-run")


def _print_bench(report: Any) -> None:
    for d in report.devices:
        print(_device_line(d))
        if d.records:
            rows = [["delegate", "status", *_HEAD, "executed on"]]
            rows += [_row(r, r["label"]) for r in d.records]
            _table(rows)
            _notes(d.records)
        if d.error:
            print(f"  stopped: {d.error}")
        print()


def _print_bundle(report: Any) -> None:
    for d in report.devices:
        print(_device_line(d))
        head = [
            "partition",
            "status",
            "processor",
            "delegate",
            "ran with",
            "median ms",
            "p5-p95 ms",
            "predicted ms",
            "ratio",
            "executed on",
        ]
        rows = [head]
        for p in report.extra["partitions"].get(d.serial, []):
            rows.append(
                [
                    p["id"],
                    p["status"],
                    p["processor"],
                    p["delegate"],
                    p["ran_with"],
                    _f(p["median_ms"]),
                    p["spread"],
                    _f(p["predicted_ms"]),
                    _f(p["ratio"], 2),
                    p["executed_on"],
                ]
            )
        if len(rows) > 1:
            _table(rows)
        t = report.extra["totals"].get(d.serial)
        if t:
            print(
                f"  sum of partition medians {_f(t['measured_ms'])} ms (each partition on its "
                f"own, no boundary copies); sum of predicted partition times "
                f"{_f(t['predicted_ms'])} ms; plan latency {_f(t['plan_latency_ms'])} ms"
            )
        for note in report.extra["fallbacks"].get(d.serial, []):
            print(f"  fallback: {note}")
        fell_back = {
            p["id"] for p in report.extra["partitions"].get(d.serial, []) if p["fallback_reason"]
        }
        _notes(
            [
                r
                for r in d.records
                if (r.get("tags") or {}).get("role") == "fallback"
                or (r.get("tags") or {}).get("partition") not in fell_back
            ]
        )
        if d.error:
            print(f"  stopped: {d.error}")
        print()


# --- profile --adb -----------------------------------------------------------------------------


def profile_adb(args: argparse.Namespace) -> int:
    """The ``--adb`` branch of ``edgepart profile``: per-op profile on phones -> latency table."""
    from edgepart.android.bm_flags import parse_delegate
    from edgepart.profiling.phone import profile_model_adb

    common = _common(args)
    delegates = [parse_delegate(d) for d in args.delegate or ["xnnpack"]]
    report, table = profile_model_adb(
        args.model,
        delegates=delegates,
        threads=args.threads,
        op_output=args.op_output,
        statistic=args.statistic,
        processor=args.processor,
        output=args.output,
        **common,
    )
    if getattr(args, "json", False):
        print(json.dumps(report.to_json(), indent=1, sort_keys=True))
    else:
        _print_profile(report, table)
    return _finish(report)


def _print_profile(report: Any, table: Any) -> None:
    for d in report.devices:
        print(_device_line(d))
        rows = [["delegate", "status", *_HEAD, "executed on"]]
        rows += [_row(r, r["label"]) for r in d.records]
        if len(rows) > 1:
            _table(rows)
        _notes(d.records)
        if d.error:
            print(f"  stopped: {d.error}")
        print()
    for p in report.extra.get("processors", []):
        print(
            f"processor {p['processor']}: {p['op_entries']} op entries, {p['group_entries']} "
            f"delegate-partition groups ({p['ops_in_groups']} ops), layout {p['layout']}, "
            f"runtime info {'yes' if p['runtime_info'] else 'no'}; table sum "
            f"{p['sum_ms']:.3f} ms vs measured median {_f(p['measured_ms'])} ms"
        )
    for s in report.extra.get("skipped", []):
        print(f"not in the table: {s}")
    out = report.extra.get("table")
    if out:
        print(f"wrote {out} ({len(table.processors)} processor(s))")
