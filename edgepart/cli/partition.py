"""``edgepart partition``: place a model (under a device profile) or a cost graph on processors.

Two problem sources, one set of solvers:

* ``MODEL --profile DEVICE [-o OUT/]``: the model's main subgraph becomes a cost graph (claim
  rules, cost model, fusion pre-pass: :func:`edgepart.lowering.from_model.model_costgraph`);
  the plan is compared with TFLite's default placement on that device, and ``-o`` writes a
  bundle directory (plan.json, one .tflite per partition, arena.json, manifest, reports).
* ``--graph COSTGRAPH.json [-o PLAN.json]``: a documented cost graph (``docs/costgraph.md``).
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
    p.set_defaults(func=handler)


def _graph_problem(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """The cost graph of ``--graph`` and a description of where it came from."""
    from edgepart.placement.costgraph import load_costgraph

    if args.profile:
        raise UsageError("--profile goes with MODEL; a cost graph already describes its processors")
    if args.latency_table or args.table_for:
        raise UsageError("--latency-table/--table-for go with MODEL; a cost graph has its costs")
    g = load_costgraph(args.graph)
    with open(args.graph, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return g, {
        "kind": "costgraph",
        "name": g.name,
        "file": os.path.basename(args.graph),
        "sha256": digest,
    }


def _options(args: argparse.Namespace) -> tuple[str, Any]:
    from edgepart.placement.solve import SolveOptions

    if args.time_limit is not None and not args.exact:
        raise UsageError("--time-limit applies to --exact only")
    if args.time_limit is not None and args.time_limit <= 0:
        raise UsageError(f"--time-limit must be positive, got {args.time_limit}")
    if args.edge_cut is not None and args.edge_cut < 1:
        raise UsageError(f"--edge-cut K needs K >= 1, got {args.edge_cut}")
    if args.effort <= 0:
        raise UsageError(f"--effort must be positive, got {args.effort}")
    method = "exact" if args.exact else "edge-cut" if args.edge_cut is not None else "heuristic"
    opts = SolveOptions(
        objective=args.objective,
        seed=args.seed,
        effort=args.effort,
        time_limit=60.0 if args.time_limit is None else args.time_limit,
        edge_cut_k=args.edge_cut or 2,
        edge_cut_method=args.edge_cut_method,
    )
    return method, opts


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


def handler(args: argparse.Namespace) -> int:
    if args.model and args.graph:
        raise UsageError("give either MODEL or --graph, not both")
    if not args.model and not args.graph:
        raise UsageError("nothing to partition: give MODEL --profile DEVICE or --graph FILE.json")
    method, opts = _options(args)
    if args.model:
        return _model(args, method, opts)
    return _graph(args, method, opts)


def _graph(args: argparse.Namespace, method: str, opts: Any) -> int:
    from edgepart.fileio import atomic_write_text
    from edgepart.placement.plan_doc import format_report, plan_json
    from edgepart.placement.solve import partition_costgraph

    g, source = _graph_problem(args)
    sol = partition_costgraph(g, method, opts)
    if args.output:
        atomic_write_text(args.output, plan_json(sol, source))
    print(format_report(sol), end="")
    _print_bound(sol)
    if args.output:
        print(f"plan written to {args.output}")
    return 0


def _model(args: argparse.Namespace, method: str, opts: Any) -> int:
    import time

    from edgepart.cost.hardware import hardware_from_profile
    from edgepart.cost.model import CostModel
    from edgepart.cost.table import tables_from
    from edgepart.deploy.apply import placed_partitions, write_plan_bundle
    from edgepart.deploy.report_text import format_model_report
    from edgepart.devices.profile import load_profile
    from edgepart.fileio import atomic_write_text
    from edgepart.lowering.default_placement import profile_default_baseline
    from edgepart.lowering.from_model import model_costgraph
    from edgepart.placement.solve import partition_costgraph
    from edgepart.tflite.reader import read_model

    if not args.profile:
        raise UsageError(
            f"{args.model}: give the device with --profile DEVICE (see edgepart profiles)"
        )
    if args.no_arena and not args.output:
        raise UsageError("--no-arena applies when writing a bundle with -o OUT/")
    t0 = time.perf_counter()
    prof = load_profile(args.profile)
    mapping = {}
    for m in args.table_for:
        proc, sep, tproc = m.partition("=")
        if not sep or not proc or not tproc:
            raise UsageError(f"--table-for {m!r}: expected PROC=TABLEPROC")
        mapping[proc] = tproc
    tables = tables_from(args.latency_table) if args.latency_table else None
    cm = CostModel(hardware_from_profile(prof), tables, table_for=mapping)
    model = read_model(args.model)
    problem = model_costgraph(model, prof, cm)
    default = profile_default_baseline(problem)
    t1 = time.perf_counter()
    sol = partition_costgraph(problem.graph, method, opts, reference=default.baseline)
    t2 = time.perf_counter()
    arena = None
    if args.output:
        _, parts, arena = write_plan_bundle(
            args.output, problem, sol, default, arena=not args.no_arena, source_path=args.model
        )
    else:
        parts = placed_partitions(problem, sol.evaluation)
    report = format_model_report(problem, sol, parts, default, arena)
    print(report, end="")
    _print_bound(sol)
    print(f"time: model to cost graph {t1 - t0:.2f} s, {method} {t2 - t1:.2f} s")
    if args.output:
        atomic_write_text(os.path.join(args.output, "partition_report.txt"), report)
        print(f"bundle written to {args.output}" + ("" if arena else " (no arena.json)"))
    return 0
