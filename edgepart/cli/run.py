"""``edgepart run BUNDLE``: run a bundle with LiteRT, verify it, benchmark it."""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from typing import Any


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
        "--atol", type=float, help="with --verify: exit with status 1 if any output differs by more"
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
        choices=("xnnpack", "builtin", "reference"),
        help="run every partition on this host kernel set",
    )
    p.add_argument(
        "--delegate",
        action="append",
        default=[],
        metavar="NAME=LIBRARY",
        help="external delegate library for a delegate name (e.g. gpu=/path/x.so)",
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
    from edgepart.errors import UsageError
    from edgepart.fileio import atomic_write, atomic_write_text
    from edgepart.runtime import PartitionedInterpreter
    from edgepart.runtime import verification as rc

    libs = {}
    for spec in args.delegate:
        name, sep, lib = spec.partition("=")
        if not sep or not name or not lib:
            raise UsageError(f"--delegate {spec!r}: expected NAME=LIBRARY")
        libs[name] = lib
    if args.stream and not args.benchmark:
        raise UsageError("--stream needs --benchmark")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        interp = PartitionedInterpreter(
            args.bundle,
            num_threads=args.threads,
            executor=args.executor,
            delegate_libraries=libs,
            fallback=None if args.no_fallback else "xnnpack",
            parallel=not args.serial,
        )
    for w in caught:
        print(f"edgepart: warning: {w.message}", file=sys.stderr)
    report: dict[str, Any] = {
        "bundle": str(args.bundle),
        "partitions": [c.to_dict() for c in interp.executors],
    }
    plan = interp.plan
    print(
        f"bundle {args.bundle}: {plan.source_name}, {len(plan.partitions)} partitions, "
        f"profile {plan.device_profile or '-'}, "
        f"{'concurrent' if interp.parallel else 'serial'} dispatch"
    )
    for p, c in zip(plan.partitions, interp.executors, strict=True):
        flag = "  [FALLBACK]" if c.fallback else ""
        print(f"  {p.id:<8} {p.unit_name:<10} {p.delegate:<12} executed on {c.executed_on}{flag}")
    interp.allocate_tensors()
    inputs = rc.resolve_inputs(interp, args.input, random=args.random, seed=args.seed)
    outputs = rc.run_once(interp, inputs)
    for t, y in zip(plan.outputs, outputs, strict=True):
        print(
            f"output {t.name}: {y.dtype}{list(y.shape)} min {_stat(y, 'min')} max {_stat(y, 'max')}"
        )
    if args.output:
        from pathlib import Path

        out = Path(args.output)
        for t, y in zip(plan.outputs, outputs, strict=True):
            atomic_write(out / f"{_safe(t.name)}.npy", _npy(y))
        given = {s.partition("=")[0] for s in args.input}
        for t, x in zip(plan.inputs, inputs, strict=True):
            if not given & {t.name, t.tensor_name, str(t.tensor)}:
                atomic_write(out / f"input.{_safe(t.name)}.npy", _npy(x))
        print(f"wrote {len(outputs)} output(s) to {out}")
    status = 0
    if args.verify:
        src = rc.open_source_model(interp, args.model)
        diffs = rc.verify_outputs(interp, inputs, outputs, src, executor=args.executor)
        report["verify"] = [d.__dict__ for d in diffs]
        for d in diffs:
            same = "bit-identical" if d.identical else "differs"
            print(
                f"verify {d.name}: max abs diff {d.max_abs:.3g}, max rel diff "
                f"{d.max_rel:.3g} ({same}) against {src.name}"
            )
            if args.atol is not None and d.max_abs > args.atol:
                status = 1
        if status:
            print(
                f"edgepart: verify failed: a difference exceeds --atol {args.atol}", file=sys.stderr
            )
    if args.benchmark:
        b = rc.benchmark_bundle(
            interp, inputs, warmup=args.warmup, repeat=args.repeat, stream=args.stream
        )
        report["benchmark"] = _bench_doc(b)
        _print_bench(b)
    interp.close()
    if args.json:
        atomic_write_text(args.json, json.dumps(report, sort_keys=True, indent=1) + "\n")
    return status


def _stat(y: Any, how: str) -> str:
    if y.size == 0 or y.dtype.kind not in "biuf":
        return "-"
    return f"{getattr(y, how)():.6g}"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "output"


def _npy(a: Any) -> bytes:
    import io

    import numpy as np

    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1e3:.3f} ms"


def _print_bench(b: Any) -> None:
    lat = b.latency
    print(
        f"latency: median {_ms(lat.median_s)}, p90 {_ms(lat.p90_s)} over {lat.n} runs; "
        f"predicted {_ms(b.predicted_latency_s)}"
    )
    for pid, s in b.partitions.items():
        print(
            f"  {pid:<8} alone: median {_ms(s.median_s)}, p90 {_ms(s.p90_s)}; predicted "
            f"{_ms(b.predicted_partitions.get(pid))}"
        )
    if b.stream_items:
        tp = b.throughput_per_s
        print(
            f"stream: {b.stream_items} inputs in {b.stream_seconds:.3f} s = {tp:.1f}/s, "
            f"period {_ms(1 / tp)}; predicted period {_ms(b.predicted_period_s)}"
        )
    if b.predicted_latency_s is None:
        print(
            "(the plan carries no predictions: bundles written without the partitioner's "
            "estimates show '-')"
        )


def _bench_doc(b: Any) -> dict[str, Any]:
    return {
        "latency_median_s": b.latency.median_s,
        "latency_p90_s": b.latency.p90_s,
        "runs": b.latency.n,
        "predicted_latency_s": b.predicted_latency_s,
        "partitions": {
            k: {
                "median_s": s.median_s,
                "p90_s": s.p90_s,
                "predicted_s": b.predicted_partitions.get(k),
            }
            for k, s in b.partitions.items()
        },
        "timeline": {k: {"start_s": v.start_s, "end_s": v.end_s} for k, v in b.timeline.items()},
        "stream_items": b.stream_items,
        "stream_seconds": b.stream_seconds,
        "throughput_per_s": b.throughput_per_s,
        "predicted_period_s": b.predicted_period_s,
    }
