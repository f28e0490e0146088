"""``edgepart run BUNDLE``: run a bundle with LiteRT, verify it, benchmark it."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

import edgepart
from edgepart import jsondoc as _json
from edgepart.cli._args import key_values
from edgepart.errors import UsageError
from edgepart.fileio import atomic_write_text
from edgepart.timefmt import format_seconds

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run a bundle's partitions with LiteRT (verify against the source, benchmark)",
        description="Run a bundle (from `edgepart partition` or write_bundle) with one LiteRT "
        "interpreter per partition. Inputs come from .npy files or are random; outputs are "
        "written as .npy files. Partitions whose delegate library is absent run on the host "
        "fallback executor and are reported as such.",
    )
    p.add_argument("bundle", help="bundle directory")
    p.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="input value (signature name, tensor name or index); repeatable",
    )
    p.add_argument("--random", action="store_true", help="random values for inputs not given")
    p.add_argument("--seed", type=int, default=0, help="seed for --random (default 0)")
    p.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="write each output as DIR/<name>.npy (and random inputs as DIR/input.<name>.npy)",
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="run the source model on the same inputs and compare outputs",
    )
    p.add_argument("--model", help="source .tflite for --verify (default: the manifest's path)")
    p.add_argument(
        "--atol",
        type=float,
        help="with --verify: an output passes if no element differs by more than this",
    )
    p.add_argument(
        "--rtol",
        type=float,
        help="with --verify: an output passes if its largest difference over its largest "
        "magnitude is at most this (default 1e-4; integer outputs must then be identical); a "
        "failed verification exits with status 1",
    )
    p.add_argument("--benchmark", action="store_true", help="measure latency (median, p90)")
    p.add_argument(
        "--stream",
        type=int,
        default=0,
        metavar="N",
        help="with --benchmark: also stream N inputs and report throughput",
    )
    p.add_argument("--repeat", type=int, default=100, help="timed runs per figure (default 100)")
    p.add_argument("--warmup", type=int, default=10, help="untimed warm-up runs (default 10)")
    p.add_argument(
        "--executor",
        choices=edgepart.EXECUTOR_NAMES,
        help="run every partition on this host kernel set",
    )
    p.add_argument(
        "--delegate-library",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="external delegate library for a plan delegate (e.g. gpu=/path/x.so); repeatable",
    )
    p.add_argument(
        "--no-fallback",
        action="store_true",
        help="fail instead of running delegate partitions on the host",
    )
    p.add_argument("--threads", type=int, default=None, help="CPU threads per partition")
    p.add_argument("--serial", action="store_true", help="never run partitions concurrently")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    libs = key_values(args.delegate_library, "--delegate-library", "NAME=PATH")
    if args.stream and not args.benchmark:
        raise UsageError("--stream needs --benchmark")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = edgepart.run_bundle(
                args.bundle,
                args.input,
                random=args.random,
                seed=args.seed,
                executor=args.executor,
                delegate_libraries=libs,
                fallback=not args.no_fallback,
                threads=args.threads,
                parallel=not args.serial,
                verify=args.verify,
                model=args.model,
                benchmark=args.benchmark,
                stream=args.stream,
                repeat=args.repeat,
                warmup=args.warmup,
            )
        finally:
            for w in caught:
                print(f"edgepart: warning: {w.message}", file=sys.stderr)
    plan = result.plan
    print(
        f"bundle {args.bundle}: {plan.source_name}, {len(plan.partitions)} partitions, "
        f"profile {plan.device_profile or '-'}, "
        f"{'concurrent' if result.parallel else 'serial'} dispatch"
    )
    for p, c in zip(plan.partitions, result.executors, strict=True):
        flag = "  [FALLBACK]" if c.fallback else ""
        print(f"  {p.id:<8} {p.unit_name:<10} {p.delegate:<12} executed on {c.executed_on}{flag}")
    for g in result.splits:
        shards = ", ".join(f"{p} ({u})" for p, u in zip(g.partitions, g.units, strict=True))
        how = "run concurrently" if g.concurrent else "run one after another"
        print(f"split {g.split} {g.layer} by {g.mode}: shards {shards} {how}; {g.collective}")
    for t, y in zip(plan.outputs, result.outputs, strict=True):
        print(
            f"output {t.name}: {y.dtype}{list(y.shape)} min {_stat(y, 'min')} max {_stat(y, 'max')}"
        )
    if args.output:
        result.save_outputs(args.output)
        print(f"wrote {len(result.outputs)} output(s) to {args.output}")
    status = 0
    if result.diffs is not None:
        assert result.source is not None
        for d in result.diffs:
            same = "bit-identical" if d.identical else "differs"
            print(
                f"verify {d.name}: max abs diff {d.max_abs:.3g}, max rel diff "
                f"{d.max_rel:.3g} ({same}) against {result.source.name}"
            )
        rtol = edgepart.DEFAULT_RTOL if args.rtol is None else args.rtol
        bad = edgepart.failed_outputs(result.diffs, atol=args.atol, rtol=rtol)
        if bad:
            status = 1
            limit = f"--atol {args.atol:g}" if args.atol is not None else f"--rtol {rtol:g}"
            print(
                f"edgepart: verify failed: {', '.join(bad)} differ(s) from the source model "
                f"beyond {limit}",
                file=sys.stderr,
            )
    if result.benchmark is not None:
        _print_bench(result)
        for g in result.splits:
            ov = result.shard_overlap(g)
            if ov is not None:
                print(
                    f"  split {g.split}: its shards ran at the same time for {format_seconds(ov)}"
                )
    if args.json:
        atomic_write_text(args.json, _json.text(result.to_dict(), default=str) + "\n")
    return status


def _stat(y: Any, how: str) -> str:
    if y.size == 0 or y.dtype.kind not in "biuf":
        return "-"
    return f"{getattr(y, how)():.6g}"


def _print_bench(result: Any) -> None:
    """Measured timings, then the plan's predictions, apart: the measurements are of this
    machine (and of the host fallback where a processor's delegate is absent); the predictions
    are the cost model's for the plan's device."""
    b = result.benchmark
    lat = b.latency
    fell = [c for c in result.executors if c.fallback]
    print(
        f"measured on this machine: latency median {format_seconds(lat.median_s)}, "
        f"p90 {format_seconds(lat.p90_s)} over {lat.n} runs"
    )
    for pid, st in b.partitions.items():
        print(
            f"  {pid:<8} alone: median {format_seconds(st.median_s)}, "
            f"p90 {format_seconds(st.p90_s)}"
        )
    if b.stream_items:
        tp = b.throughput_per_s
        print(
            f"  stream: {b.stream_items} inputs in {format_seconds(b.stream_seconds)} = "
            f"{tp:.1f}/s, period {format_seconds(1 / tp)}"
        )
    profile = result.plan.device_profile or "the plan's device"
    if fell:
        names = ", ".join(f"{c.partition} ({c.requested})" for c in fell)
        print(
            f"  {len(fell)} partition(s) ran on the host fallback, not on their processor: "
            f"{names}; these times say nothing about those processors"
        )
    if b.predicted_latency_s is None:
        print(
            "predicted: none (the plan carries no predictions: bundles written without the "
            "partitioner's estimates)"
        )
        return
    print(
        f"predicted by the cost model for {profile} (a model of that device, not a measurement; "
        "not comparable with the times above unless the profile describes this machine): "
        f"latency {format_seconds(b.predicted_latency_s)}, period "
        f"{format_seconds(b.predicted_period_s)}"
    )
    for pid in b.partitions:
        print(f"  {pid:<8} {format_seconds(b.predicted_partitions.get(pid))}")
