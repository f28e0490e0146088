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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edgepart.memory.problem import MemoryProblem

__all__ = ["register"]

_STRATEGIES = ("tflite", "portfolio", "search")


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
        choices=(*_STRATEGIES, "all"),
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
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    """Run the chosen strategies, print the comparison table, write the offsets."""
    from edgepart.errors import UsageError
    from edgepart.memory import DEFAULT_TIME_LIMIT, plan_arena
    from edgepart.memory.csvio import write_offsets_csv, write_plan_json

    if args.time_limit is not None and args.time_limit < 0:
        raise UsageError(f"--time-limit must be >= 0, got {args.time_limit}")
    if args.node_limit is not None and args.node_limit < 1:
        raise UsageError(f"--node-limit must be >= 1, got {args.node_limit}")
    if args.alignment < 1:
        raise UsageError(f"--alignment must be >= 1, got {args.alignment}")
    strategies = _STRATEGIES if args.strategy == "all" else (args.strategy,)
    limit = DEFAULT_TIME_LIMIT if args.time_limit is None else args.time_limit
    if args.path.is_dir():
        if args.tflm_plan is not None:
            raise UsageError("--tflm-plan needs a .tflite model as input, not a bundle")
        return _plan_bundle(args, strategies, limit)
    problem = _load(args.path, args.alignment)
    if not len(problem):
        raise UsageError(f"{args.path}: no buffers to plan")
    plans = {
        s: plan_arena(problem, strategy=s, time_limit=limit, node_limit=args.node_limit)
        for s in strategies
    }
    out = sys.stdout
    n_mem = len(problem.memories)
    out.write(
        f"{args.path}: {len(problem)} buffers, {n_mem} {'memory' if n_mem == 1 else 'memories'}\n"
    )
    header = f"{'memory':<12} {'strategy':<10} {'peak B':>14} {'bound B':>14} {'peak/bound':>10}"
    out.write(header + f" {'time s':>8}  method (stopped by)\n")
    timed_out = False
    for memory in problem.memories:
        for s, plan in plans.items():
            r = plan.arenas[memory]
            timed_out |= r.stopped_by == "time"
            out.write(
                f"{memory:<12} {s:<10} {r.size:>14,} {r.lower_bound:>14,} {r.ratio:>10.4f}"
                f" {plan.timings.get('total', 0.0):>8.3f}  {r.method} ({r.stopped_by})\n"
            )
        r = plans[strategies[-1]].arenas[memory]
        out.write(f"{memory:<12} {'no reuse':<10} {r.naive:>14,}\n")
    if timed_out:
        out.write(
            "note: a time limit cut the search short; results may vary between runs "
            "(use --node-limit for reproducible output)\n"
        )
    if args.output is not None:
        plan = plans[strategies[-1]]
        if args.output.suffix.lower() == ".json":
            write_plan_json(plan, args.output)
        else:
            write_offsets_csv(problem, plan, args.output)
        out.write(f"wrote {args.output} ({strategies[-1]} plan)\n")
    if args.tflm_plan is not None:
        _write_tflm(args, limit)
    return 0


def _write_tflm(args: argparse.Namespace, limit: float) -> None:
    from edgepart.errors import UsageError
    from edgepart.memory.model_problem import offline_plan
    from edgepart.tflite.writer import save_model

    if args.path.suffix.lower() != ".tflite":
        raise UsageError("--tflm-plan needs a .tflite model as input")
    strategy = "search" if args.strategy == "all" else args.strategy
    model, plan = offline_plan(
        args.path, strategy=strategy, time_limit=limit, node_limit=args.node_limit
    )
    save_model(model, args.tflm_plan)
    r = plan.arenas["sg0"]
    sys.stdout.write(
        f"wrote {args.tflm_plan} (OfflineMemoryAllocation for subgraph 0: {r.size:,} B, "
        f"bound {r.lower_bound:,} B, no in-place sharing)\n"
    )


def _load(path: Path, alignment: int) -> MemoryProblem:
    """Dispatch on the path: ``.tflite`` model or CSV buffer table."""
    from edgepart.memory.csvio import read_buffers_csv

    if path.suffix.lower() == ".tflite":
        from edgepart.memory.model_problem import model_problem

        return model_problem(path, alignment=alignment)
    return read_buffers_csv(path, default_alignment=alignment)


def _plan_bundle(args: argparse.Namespace, strategies: tuple[str, ...], limit: float) -> int:
    """Per-partition and global plans of a bundle; the offsets of the last strategy."""
    from edgepart.bundle.buffers import bundle_buffers
    from edgepart.fileio import atomic_write_text
    from edgepart.memory.csvio import write_offsets_csv
    from edgepart.memory.global_plan import plan_partitioned
    from edgepart.memory.partitioned_report import format_partitioned, partitioned_json

    bb = bundle_buffers(args.path, alignment=args.alignment)
    pb = bb.buffers
    plans = {
        s: plan_partitioned(pb, strategy=s, time_limit=limit, node_limit=args.node_limit)
        for s in strategies
    }
    title = (
        f"{args.path}: {len(pb.partitions)} partitions, memories from {bb.memories_from}, "
        f"host memory {pb.host_memory}"
    )
    sys.stdout.write(format_partitioned(title, plans))
    if args.output is not None:
        last = strategies[-1]
        plan = plans[last]
        if args.output.suffix.lower() == ".json":
            atomic_write_text(args.output, partitioned_json(bb.name, bb.memories_from, plan, last))
        else:
            write_offsets_csv(pb.problem, plan.global_plan, args.output)
        sys.stdout.write(f"wrote {args.output} ({last} plan)\n")
    return 0
