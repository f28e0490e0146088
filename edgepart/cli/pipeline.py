"""``edgepart pipeline``: a model's stage plan, a micro-batch schedule's timeline, a Gantt chart.

Argument parsing and printing over :mod:`edgepart.api.pipelines`: the stage plan under a device
profile (:func:`~edgepart.api.pipelines.plan_pipeline`), the schedule simulated over it
(:func:`~edgepart.api.pipelines.simulate_pipeline`), optionally the stages run on this host
(:func:`~edgepart.api.pipelines.run_pipeline`, ``--run N``), and the chart (``-o``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import edgepart
from edgepart.errors import UsageError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "pipeline",
        help="stage plan of a model, micro-batch schedule timeline (GPipe, 1F1B, stream)",
        description=(
            "Split a model into pipeline stages on a device's units (slowest stage with its "
            "send/recv minimized, each within its unit's memory), simulate a micro-batch "
            "schedule over the stages, and draw its Gantt chart."
        ),
    )
    p.add_argument("model", metavar="MODEL", help="a .tflite model")
    p.add_argument("--profile", required=True, metavar="DEVICE", help="device profile name or YAML")
    p.add_argument("--micro-batches", type=int, default=8, metavar="M", help="default 8")
    p.add_argument(
        "--schedule", choices=("gpipe", "1f1b", "stream"), default="stream", help="default stream"
    )
    p.add_argument(
        "--backward-ratio",
        type=float,
        default=2.0,
        metavar="R",
        help="gpipe/1f1b: backward time as R x forward per stage (default 2; the model has "
        "no backward graph, so it is estimated)",
    )
    p.add_argument("--queue-depth", type=int, default=2, metavar="K", help="stream: default 2")
    p.add_argument("--cpu-threads", type=int, metavar="N", help="interpreter threads per CPU stage")
    p.add_argument(
        "--latency-table", action="append", default=[], metavar="T.json", help="repeatable"
    )
    p.add_argument(
        "--run",
        type=int,
        metavar="N",
        help="stream: also run N random inputs through the stages on this host and print the "
        "measured figures beside the simulated ones",
    )
    p.add_argument("-o", "--output", metavar="GANTT.png", help="write the Gantt chart (PNG)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=handler)


def _figures(t: Any) -> str:
    d = t.to_dict()
    lat = d["latency_s"]
    return (
        f"makespan {d['makespan_s'] * 1e3:.4f} ms, period {d['period_s'] * 1e3:.4f} ms, "
        f"latency median {lat['median'] * 1e3:.4f} ms (max {lat['max'] * 1e3:.4f}), bubble "
        f"{100 * d['bubble_fraction']:.1f} %, peak in flight per stage {d['peak_in_flight']}"
        + (
            f" ({', '.join(f'{b / 1024:.1f} KiB' for b in d['peak_activation_bytes'])})"
            if any(d["peak_activation_bytes"])
            else ""
        )
    )


def handler(args: argparse.Namespace) -> int:
    if args.micro_batches < 1:
        raise UsageError(f"--micro-batches must be >= 1, got {args.micro_batches}")
    if args.run is not None and (args.schedule != "stream" or args.run < 1):
        raise UsageError("--run N (N >= 1) runs inference: use it with --schedule stream")
    if args.output and not args.output.lower().endswith(".png"):
        raise UsageError(f"-o {args.output}: the Gantt chart is a PNG; name it *.png")
    plan = edgepart.plan_pipeline(
        args.model,
        args.profile,
        latency_tables=args.latency_table,
        cpu_threads=args.cpu_threads,
    )
    ratio = None if args.schedule == "stream" else args.backward_ratio
    tl = edgepart.simulate_pipeline(
        plan,
        args.schedule,
        args.micro_batches,
        queue_depth=args.queue_depth,
        backward_ratio=ratio,
    )
    run = None
    if args.run is not None:
        bundle = plan.bundle()
        items = edgepart.random_inputs(bundle, args.run)
        run = edgepart.run_pipeline(bundle, items, queue_depth=args.queue_depth)
    if args.output:
        title = f"{plan.problem.graph.name}: {args.schedule}, simulated on the {args.profile} plan"
        edgepart.write_gantt(tl, args.output, title)
    if args.json:
        doc: dict[str, Any] = {"plan": plan.to_dict(), "simulated": tl.to_dict()}
        if ratio is not None:
            doc["simulated"]["backward_ratio"] = ratio
        if run is not None:
            doc["host_run"] = {
                "measured": run.measured.to_dict(),
                "simulated_on_measured_stage_times": run.simulated.to_dict(),
                "stage_s": list(run.stage_s),
            }
        print(json.dumps(doc, indent=2, sort_keys=True))
        return 0
    print(plan.report(), end="")
    est = f" (backward estimated as {ratio:g} x forward)" if ratio is not None else ""
    print(f"schedule {args.schedule}, {args.micro_batches} micro-batch(es){est}:")
    print(f"  simulated: {_figures(tl)}")
    if run is not None:
        print(f"this host ({args.run} inputs; host timings, not a {args.profile} measurement):")
        print(f"  stage medians: {', '.join(f'{s * 1e3:.4f} ms' for s in run.stage_s)}")
        print(f"  measured:  {_figures(run.measured)}")
        print(f"  simulated on those stage times: {_figures(run.simulated)}")
    if args.output:
        print(f"Gantt chart written to {args.output}")
    return 0
