"""``edgepart report BUNDLE|MODEL -o report.html``: one self-contained HTML page, and Model
Explorer overlays on request."""

from __future__ import annotations

import argparse
from typing import Any

import edgepart
from edgepart.cli._args import add_input_shape_argument, input_shapes, key_values

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "report",
        help="write an HTML report of a bundle or a model planned now (graph, schedules, "
        "per-op table, roofline, arena)",
        description=(
            "One self-contained HTML file (no network access when opened): the op graph colored "
            "by processor with partition boundaries and the bytes crossing them, a per-op table "
            "(latency on each processor, chosen processor, why the others refuse it), Gantt "
            "charts of the predicted schedule, TFLite's default and measured runs (--measured), "
            "the stage timeline of throughput plans, the roofline and the arena. "
            "--model-explorer DIR also writes Model Explorer node-data overlays."
        ),
    )
    p.add_argument("target", metavar="BUNDLE|MODEL", help="bundle directory or .tflite model")
    p.add_argument("-o", "--output", required=True, metavar="REPORT.html", help="file to write")
    p.add_argument(
        "--profile",
        metavar="DEVICE",
        help="device profile (required for a MODEL; a bundle's own profile by default)",
    )
    p.add_argument("--model", metavar="SOURCE.tflite", help="a bundle's source model, if moved")
    p.add_argument(
        "--measured",
        action="append",
        default=[],
        metavar="FILE.json",
        help="a record of `edgepart run BUNDLE --benchmark --json FILE` or of `edgepart bench "
        "BUNDLE --adb --json` (repeatable)",
    )
    p.add_argument(
        "--objective",
        choices=("latency", "throughput"),
        default="latency",
        help="with a MODEL: what the plan made now minimizes (default latency)",
    )
    p.add_argument(
        "--latency-table",
        action="append",
        default=[],
        metavar="T.json",
        help="measured latency table for the cost model (repeatable)",
    )
    p.add_argument(
        "--table-for",
        action="append",
        default=[],
        metavar="PROC=TABLEPROC",
        help="back profile processor PROC with latency-table processor TABLEPROC",
    )
    p.add_argument(
        "--model-explorer",
        metavar="DIR",
        help="also write Model Explorer node-data overlays (processor, partition, TFLite "
        "default, predicted and measured latency per op) into DIR",
    )
    add_input_shape_argument(p)
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    mapping = key_values(args.table_for, "--table-for", "PROC=TABLEPROC")
    res = edgepart.write_report(
        args.target,
        args.output,
        model_explorer=args.model_explorer,
        profile=args.profile,
        model=args.model,
        measured=args.measured,
        latency_tables=args.latency_table,
        table_for=mapping,
        objective=args.objective,
        input_shapes=input_shapes(args),
    )
    meta = res.document["meta"]
    print(
        f"report of {meta['target']} ({meta['model']}, {meta['num_ops']} ops, "
        f"{meta['num_partitions']} partitions, profile {meta['profile']}) written to {res.html}"
    )
    measured = [s for s in res.document["schedules"] if s["kind"] in ("host", "phone")]
    for s in measured:
        print(f"  {s['label']}")
    if res.overlays:
        paths = ",".join(str(p) for p in res.overlays)
        print(f"Model Explorer overlays ({len(res.overlays)}) written; view them with:")
        print(f"  model-explorer {res.model_path} --node_data_paths={paths}")
    return 0
