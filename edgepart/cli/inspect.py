"""``edgepart inspect MODEL``: what is in a model, and where a device's delegates would put it."""

from __future__ import annotations

import argparse
from typing import Any

import edgepart
from edgepart import jsondoc as _json
from edgepart.cli._args import add_input_shape_argument, input_shapes

__all__ = ["register"]


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
    add_input_shape_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    info = edgepart.inspect_model(
        args.model,
        ops=args.ops,
        device=args.profile or None,
        delegates=args.delegate,
        input_shapes=input_shapes(args),
    )
    if args.json:
        print(_json.text(info.to_dict(), indent=2, default=str))
    else:
        print(info.report())
    return 0
