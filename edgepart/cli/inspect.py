"""``edgepart inspect MODEL``: what is in a model, and where a device's delegates would put it."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "inspect",
        help="summarize a .tflite model (ops, dtypes, bytes, I/O); with --profile, delegate claims",
        description="Summarize a .tflite model. With --profile or --delegate, also report which "
        "ops each delegate takes, the partitions TFLite would create, and why ops are refused.",
    )
    p.add_argument("model", help="path to a .tflite file")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--ops", action="store_true", help="list every op with its inputs and outputs")
    p.add_argument("--profile", help="device profile name or YAML path (see `edgepart profiles`)")
    p.add_argument(
        "--delegate",
        action="append",
        default=[],
        help="delegate name or YAML path; repeat to apply several in order",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from edgepart.ir.summary import describe_ops, format_summary, summarize
    from edgepart.tflite.reader import read_model

    model = read_model(args.model)
    result: dict[str, Any] = {"model": summarize(model)}
    if args.ops:
        result["ops"] = describe_ops(model)
    claims = None
    if args.profile or args.delegate:
        from edgepart.claim.explain import claim_report, format_claim_report

        claims = claim_report(model, profile=args.profile, delegates=args.delegate)
        result["claims"] = claims
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True, default=str))
        return 0
    print(format_summary(result["model"]))
    if args.ops:
        print()
        for row in result["ops"]:
            ins = ", ".join(_brief(t) for t in row["inputs"])
            outs = ", ".join(_brief(t) for t in row["outputs"])
            print(f"[{row['subgraph']}:{row['op']:>4}] {row['name']:<24} {ins} -> {outs}")
    if claims is not None:
        print()
        print(format_claim_report(claims))
    return 0


def _brief(t: dict[str, Any] | None) -> str:
    if t is None:
        return "-"
    mark = "c" if t["constant"] else "t"
    return f"{mark}{t['tensor']}:{t['dtype'].lower()}{t['shape']}"
