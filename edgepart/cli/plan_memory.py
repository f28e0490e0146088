"""``edgepart plan-memory``: plan static arenas and report peak vs lower bound per strategy.

The input path decides what is planned: a ``.csv`` buffer table (``id,lower,upper,size
[,alignment]``, half-open lifetimes), a ``.tflite`` model (one arena per subgraph, TFLite's
lifetime rules), or a bundle directory (``edgepart partition -o``): every partition alone (its
own arena, as its TFLite interpreter plans it) and all partitions together (one global arena
per memory of the device profile, boundary tensors shared where processors share memory,
concurrent partitions kept apart), compared per memory; the time limit then applies to each
partition's plan and to the global plan.

Offsets (``-o``): ``.json`` for the plan document, anything else for CSV. For a bundle the JSON
holds the global plan in the ``arena.json`` format (partition-scope ``tensor`` = index in the
partition file) and every partition's own offsets; the CSV is the global buffer table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import edgepart
from edgepart.cli._args import add_input_shape_argument, input_shapes
from edgepart.errors import UsageError

__all__ = ["register"]

# edgepart.api.memory.STRATEGIES, spelled out so that building the parser loads no planner
STRATEGIES = ("tflite", "portfolio", "search")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``plan-memory`` subcommand."""
    p = subparsers.add_parser(
        "plan-memory",
        help="plan tensor offsets in static arenas; print peak, lower bound and their ratio",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("path", type=Path, help="buffer table (.csv), model (.tflite) or bundle dir/")
    p.add_argument(
        "--strategy",
        choices=(*STRATEGIES, "all"),
        default="all",
        help="strategy to run (default: all three; offsets come from the last one run)",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="S",
        help="seconds for the portfolio and search per strategy run (default: 0.5)",
    )
    p.add_argument(
        "--node-limit",
        type=int,
        default=None,
        metavar="N",
        help="search-node budget per arena; makes results reproducible when the search "
        "does not finish",
    )
    p.add_argument(
        "--alignment",
        type=int,
        default=64,
        metavar="BYTES",
        help="alignment for buffers that do not give one (default: 64, as TFLite)",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help="write offsets: .json for the plan document, anything else for CSV",
    )
    p.add_argument(
        "--tflm-plan",
        type=Path,
        default=None,
        metavar="OUT.tflite",
        help="(.tflite input) write a copy carrying TFLite Micro's OfflineMemoryAllocation "
        "metadata for subgraph 0 (planned without in-place sharing, 16-byte alignment)",
    )
    add_input_shape_argument(p)
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    """Run the chosen strategies, print the comparison table, write the offsets."""
    if args.time_limit is not None and args.time_limit < 0:
        raise UsageError(f"--time-limit must be >= 0, got {args.time_limit}")
    if args.node_limit is not None and args.node_limit < 1:
        raise UsageError(f"--node-limit must be >= 1, got {args.node_limit}")
    if args.alignment < 1:
        raise UsageError(f"--alignment must be >= 1, got {args.alignment}")
    if args.tflm_plan is not None and args.path.is_dir():
        raise UsageError("--tflm-plan needs a .tflite model as input, not a bundle")
    if args.tflm_plan is not None and args.path.suffix.lower() != ".tflite":
        raise UsageError("--tflm-plan needs a .tflite model as input")
    plans = edgepart.plan_memory(
        args.path,
        strategies=STRATEGIES if args.strategy == "all" else (args.strategy,),
        time_limit=args.time_limit,
        node_limit=args.node_limit,
        alignment=args.alignment,
        input_shapes=input_shapes(args),
    )
    sys.stdout.write(plans.report())
    if args.output is not None:
        plans.save(args.output)
        sys.stdout.write(f"wrote {args.output} ({plans.last} plan)\n")
    if args.tflm_plan is not None:
        plan = edgepart.write_tflm_plan(
            args.path,
            args.tflm_plan,
            strategy="search" if args.strategy == "all" else args.strategy,
            time_limit=args.time_limit,
            node_limit=args.node_limit,
        )
        r = plan.arenas["sg0"]
        sys.stdout.write(
            f"wrote {args.tflm_plan} (OfflineMemoryAllocation for subgraph 0: {r.size:,} B, "
            f"bound {r.lower_bound:,} B, no in-place sharing)\n"
        )
    return 0
