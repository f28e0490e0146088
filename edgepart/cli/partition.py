"""``edgepart partition``: place a model (under a device profile) or a cost graph on processors.

Two problem sources, one set of solvers:

* ``MODEL --profile DEVICE [-o OUT/]``: :func:`edgepart.place` (the decision and its report),
  or with ``-o`` :func:`edgepart.compile` and ``save``: a bundle directory (plan.json, one
  .tflite per partition, arena.json, manifest, reports).
* ``--graph COSTGRAPH.json [-o PLAN.json]``: :func:`edgepart.place_graph` on a documented cost
  graph (``docs/costgraph.md``).
"""

from __future__ import annotations

import argparse
from typing import Any

import edgepart
from edgepart.cli._args import add_input_shape_argument, input_shapes, key_values
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
    p.add_argument("model", nargs="?", metavar="MODEL", help="a .tflite model (with --profile)")
    p.add_argument("--graph", metavar="COSTGRAPH.json", help="a cost-graph JSON file")
    p.add_argument(
        "--profile", metavar="DEVICE", help="device profile name or YAML path (with MODEL)"
    )
    p.add_argument(
        "--latency-table",
        action="append",
        default=[],
        metavar="T.json",
        help="measured latency table for the cost model (repeatable; merged in order)",
    )
    p.add_argument(
        "--table-for",
        action="append",
        default=[],
        metavar="PROC=TABLEPROC",
        help="back profile processor PROC with latency-table processor TABLEPROC",
    )
    p.add_argument("--no-arena", action="store_true", help="with MODEL -o: do not plan arena.json")
    p.add_argument(
        "--no-split",
        action="store_true",
        help="with MODEL: never split a layer across units (tensor parallelism; by default a "
        "layer is split when the plan gains at least 10 %% or its weights fit no unit)",
    )
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
    p.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="MODEL: the bundle directory to write; --graph: the plan JSON file",
    )
    add_input_shape_argument(p)
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    if args.model and args.graph:
        raise UsageError("give either MODEL or --graph, not both")
    if not args.model and not args.graph:
        raise UsageError("nothing to partition: give MODEL --profile DEVICE or --graph FILE.json")
    if args.time_limit is not None and not args.exact:
        raise UsageError("--time-limit applies to --exact only")
    if args.time_limit is not None and args.time_limit <= 0:
        raise UsageError(f"--time-limit must be positive, got {args.time_limit}")
    if args.edge_cut is not None and args.edge_cut < 1:
        raise UsageError(f"--edge-cut K needs K >= 1, got {args.edge_cut}")
    if args.effort <= 0:
        raise UsageError(f"--effort must be positive, got {args.effort}")
    method = "exact" if args.exact else "edge-cut" if args.edge_cut is not None else "heuristic"
    solve = {
        "objective": args.objective,
        "method": method,
        "seed": args.seed,
        "effort": args.effort,
        "time_limit": args.time_limit,
        "edge_cut_k": args.edge_cut or 2,
        "edge_cut_method": args.edge_cut_method,
    }
    if args.model:
        return _model(args, solve)
    return _graph(args, solve)


def _graph(args: argparse.Namespace, solve: dict[str, Any]) -> int:
    if args.no_split:
        raise UsageError("--no-split goes with MODEL; a cost graph's nodes are not layers")
    if args.profile:
        raise UsageError("--profile goes with MODEL; a cost graph already describes its processors")
    if args.latency_table or args.table_for:
        raise UsageError("--latency-table/--table-for go with MODEL; a cost graph has its costs")
    if args.input_shape:
        raise UsageError("--input-shape goes with MODEL; a cost graph has no tensors to resize")
    with _exact_bar() as bar:
        placed = edgepart.place_graph(args.graph, progress=bar, **solve)
    if args.output:
        placed.save(args.output)
    print(placed.report(), end="")
    _print_bound(placed.solution)
    if args.output:
        print(f"plan written to {args.output}")
    return 0


def _model(args: argparse.Namespace, solve: dict[str, Any]) -> int:
    if not args.profile:
        raise UsageError(
            f"{args.model}: give the device with --profile DEVICE (see edgepart profiles)"
        )
    if args.no_arena and not args.output:
        raise UsageError("--no-arena applies when writing a bundle with -o OUT/")
    solve = {**solve, "split": not args.no_split}
    costs = {
        "latency_tables": args.latency_table,
        "table_for": key_values(args.table_for, "--table-for", "PROC=TABLEPROC"),
        "input_shapes": input_shapes(args),
    }
    if args.output:
        with _exact_bar() as bar:
            compiled = edgepart.compile(
                args.model, args.profile, arena=not args.no_arena, progress=bar, **costs, **solve
            )
        compiled.save(args.output)
        placement, report = compiled.placement, compiled.report()
    else:
        with _exact_bar() as bar:
            placement = edgepart.place(args.model, args.profile, progress=bar, **costs, **solve)
        report = placement.report()
    print(report, end="")
    _print_bound(placement.solution)
    tp = placement.tensor_parallel
    if tp is not None and tp.enabled and not tp.taken:
        print(f"tensor parallelism: no split taken ({tp.note})")
    secs = placement.seconds
    print(
        f"time: model to cost graph {secs['lowering']:.2f} s, {solve['method']} "
        f"{secs['solve']:.2f} s"
    )
    if args.output:
        arena = "" if compiled.arena is not None else " (no arena.json)"
        print(f"bundle written to {args.output}{arena}")
    return 0


def _print_bound(sol: Any) -> None:
    """``--exact``: the incumbent, the best lower bound and their gap (the search's answer
    within its time limit)."""
    if sol.method != "exact":
        return
    inc, lb = sol.info.get("incumbent"), sol.info.get("bound")
    if inc is None or lb is None:
        return
    gap = inc / lb - 1.0 if lb > 0 else float("inf")
    unit = "s" if sol.options.objective == "latency" else "s period"
    print(
        f"exact: incumbent {inc * 1e3:.6g} m{unit}, lower bound {lb * 1e3:.6g} m{unit} "
        f"(gap {100 * gap:.3g} %), {'optimal' if sol.optimal else 'optimality not proven'} "
        f"within the {sol.options.time_limit:g} s limit"
    )


def _exact_bar() -> edgepart.Progress:
    """The bar ``--exact`` draws on a terminal (milliseconds of its time limit); the other
    methods never call it, and a bar never called draws nothing."""
    return edgepart.Progress("exact search", unit="ms")
