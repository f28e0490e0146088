"""``edgepart partition``: place a cost graph (later: a model under a device profile) on processors.

Problem sources are resolved by :func:`_load_problem`; only ``--graph COSTGRAPH.json`` exists
now. ``MODEL --profile DEVICE`` will plug in there once the fusion pre-pass and the cost model
exist, and everything after it (solvers, plan, report) stays the same.
"""

from __future__ import annotations

import argparse
import hashlib
import os
from typing import Any

from edgepart.errors import UsageError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "partition",
        help="place a cost graph's nodes on processors (heuristic, exact or edge-cut)",
        description=(
            "Assign every node of a cost graph to a processor unit, minimizing the predicted "
            "latency (or the pipeline period), and compare with TFLite's default placement."
        ),
    )
    p.add_argument("model", nargs="?", metavar="MODEL", help="a .tflite model (not yet supported)")
    p.add_argument("--graph", metavar="COSTGRAPH.json", help="a cost-graph JSON file")
    p.add_argument("--profile", metavar="DEVICE", help="device profile (with MODEL; not yet)")
    p.add_argument(
        "--objective",
        choices=("latency", "throughput"),
        default="latency",
        help="minimize one input's latency (default) or the busiest unit/link's load",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--exact", action="store_true", help="branch and bound to a proven optimum")
    mode.add_argument(
        "--edge-cut", type=int, metavar="K", help="balanced K-way split with few transferred bytes"
    )
    p.add_argument(
        "--time-limit",
        type=float,
        metavar="S",
        help="seconds for --exact (default 60); the plan says whether optimality was proven",
    )
    p.add_argument(
        "--edge-cut-method",
        choices=("interval", "metis"),
        default="interval",
        help="partitioner for --edge-cut (metis needs the optional pymetis package)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed for randomized steps (default 0)")
    p.add_argument("--effort", type=float, default=1.0, help="heuristic budget multiplier")
    p.add_argument("-o", "--output", metavar="PLAN.json", help="write the plan JSON here")
    p.set_defaults(func=handler)


def _load_problem(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """The cost graph to solve and a description of where it came from."""
    if args.model and args.graph:
        raise UsageError("give either MODEL or --graph, not both")
    if args.model:
        raise UsageError(
            f"partitioning a .tflite model ({args.model}) is not available yet: it needs the "
            "fusion pre-pass and the cost model; pass a cost graph with --graph COSTGRAPH.json"
        )
    if not args.graph:
        raise UsageError("nothing to partition: give --graph COSTGRAPH.json")
    if args.profile:
        raise UsageError("--profile goes with MODEL; a cost graph already describes its processors")
    from edgepart.partition.costgraph import load_costgraph

    g = load_costgraph(args.graph)
    with open(args.graph, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return g, {
        "kind": "costgraph",
        "name": g.name,
        "file": os.path.basename(args.graph),
        "sha256": digest,
    }


def handler(args: argparse.Namespace) -> int:
    from edgepart._io import atomic_write_text
    from edgepart.partition.plan import format_report, plan_json
    from edgepart.partition.solve import SolveOptions, partition_costgraph

    if args.time_limit is not None and not args.exact:
        raise UsageError("--time-limit applies to --exact only")
    if args.time_limit is not None and args.time_limit <= 0:
        raise UsageError(f"--time-limit must be positive, got {args.time_limit}")
    if args.edge_cut is not None and args.edge_cut < 1:
        raise UsageError(f"--edge-cut K needs K >= 1, got {args.edge_cut}")
    if args.effort <= 0:
        raise UsageError(f"--effort must be positive, got {args.effort}")
    g, source = _load_problem(args)
    method = "exact" if args.exact else "edge-cut" if args.edge_cut is not None else "heuristic"
    opts = SolveOptions(
        objective=args.objective,
        seed=args.seed,
        effort=args.effort,
        time_limit=60.0 if args.time_limit is None else args.time_limit,
        edge_cut_k=args.edge_cut or 2,
        edge_cut_method=args.edge_cut_method,
    )
    sol = partition_costgraph(g, method, opts)
    if args.output:
        atomic_write_text(args.output, plan_json(sol, source))
    print(format_report(sol), end="")
    if args.output:
        print(f"plan written to {args.output}")
    return 0
