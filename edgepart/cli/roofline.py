"""``edgepart roofline MODEL --profile DEVICE``: per-op roofline table and plot."""

from __future__ import annotations

import argparse
import os
from typing import Any

import edgepart
from edgepart import jsondoc as _json
from edgepart.cli._args import add_input_shape_argument, input_shapes, key_values

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "roofline",
        help="per-op FLOPs, bytes, intensity and roofline latency on a device's processors",
        description="Cost every op of a model's main subgraph on each processor of a device "
        "profile: time = max(FLOPs / peak for the op's dtype, bytes / bandwidth), plus the "
        "processor's dispatch overhead when the op runs alone. With --table, measured "
        "latencies replace the roofline where the table covers an op. -o writes a roofline "
        "plot (PNG).",
    )
    p.add_argument("model", help="path to a .tflite file")
    p.add_argument("--profile", required=True, help="device profile name or YAML path")
    p.add_argument("-o", "--output", metavar="PNG", help="write the roofline plot here")
    p.add_argument(
        "--table",
        action="append",
        default=[],
        metavar="JSON",
        help="latency table to use (repeatable; merged in order)",
    )
    p.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="PROC=TABLEPROC",
        help="back profile processor PROC with table processor TABLEPROC",
    )
    p.add_argument(
        "--top",
        type=int,
        default=0,
        metavar="N",
        help="show only the N slowest ops (by the first processor)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_input_shape_argument(p)
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    table_for = key_values(args.map, "--map", "PROC=TABLEPROC")
    r = edgepart.roofline(
        args.model,
        args.profile,
        latency_tables=args.table,
        table_for=table_for,
        input_shapes=input_shapes(args),
    )
    if args.output:
        title = f"{os.path.basename(args.model)} on {r.device} (1 invocation per processor)"
        r.plot(args.output, title)
    if args.json:
        print(_json.text(r.to_dict(), default=str))
        return 0
    print(r.format_text(args.top))
    if args.output:
        print(f"wrote {args.output}")
    return 0
