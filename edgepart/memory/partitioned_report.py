"""Text and JSON reports of partitioned plans (per-partition arenas against the global arena).

Plain functions returning strings; the CLI prints and writes them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from edgepart.memory.global_plan import PartitionedPlan, arena_document

__all__ = ["PLAN_FORMAT", "format_partitioned", "partitioned_json"]

PLAN_FORMAT = "edgepart-memory-bundle-plan"


def _ratio(size: int, bound: int) -> float:
    return size / bound if bound else 1.0


def format_partitioned(title: str, plans: Mapping[str, PartitionedPlan]) -> str:
    """A table per memory: summed per-partition arenas and the global arena for every
    strategy in ``plans`` (in its order), then one comparison line per memory."""
    strategy = list(plans)[-1]
    last = plans[strategy]
    pb = last.buffers
    lines = [title]
    for p, prob in zip(pb.partitions, pb.partition_problems, strict=True):
        lines.append(f"  {p.id:<8} {p.unit:<12} {p.memory:<14} {len(prob):>6} buffers")
    lines.append(
        f"global: {len(pb.problem)} buffers, {len(pb.concurrent)} partition pairs may run "
        f"concurrently, {len(pb.problem.conflicts)} explicit conflicts"
    )
    lines.append(
        f"{'memory':<14} {'plan':<10} {'strategy':<10} {'peak B':>14} {'bound B':>14} "
        f"{'peak/bound':>10} {'time s':>8}  method (stopped by)"
    )
    timed_out = False
    for cmp in last.memories():
        m = cmp.memory
        for s, plan in plans.items():
            arenas = [pp.arenas[m] for pp in plan.partition_plans.values() if m in pp.arenas]
            if arenas:
                size, bound = sum(a.size for a in arenas), sum(a.lower_bound for a in arenas)
                secs = sum(
                    pp.timings.get("total", 0.0)
                    for pp in plan.partition_plans.values()
                    if m in pp.arenas
                )
                at = sum(a.size <= a.lower_bound for a in arenas)
                timed_out |= any(a.stopped_by == "time" for a in arenas)
                lines.append(
                    f"{m:<14} {'partition':<10} {s:<10} {size:>14,} {bound:>14,} "
                    f"{_ratio(size, bound):>10.4f} {secs:>8.3f}  "
                    f"{len(arenas)} arenas, {at} at bound"
                )
        for s, plan in plans.items():
            r = plan.global_plan.arenas.get(m)
            if r is None:
                continue
            timed_out |= r.stopped_by == "time"
            lines.append(
                f"{m:<14} {'global':<10} {s:<10} {r.size:>14,} {r.lower_bound:>14,} "
                f"{r.ratio:>10.4f} {plan.global_plan.timings.get('total', 0.0):>8.3f}  "
                f"{r.method} ({r.stopped_by})"
            )
        r = last.global_plan.arenas.get(m)
        if r is not None:
            lines.append(f"{m:<14} {'no reuse':<10} {'global':<10} {r.naive:>14,}")
    for cmp in last.memories():
        if not cmp.partitions:
            lines.append(
                f"{cmp.memory}: staging copies only (no partition runs there): global "
                f"{cmp.global_size:,} B"
            )
            continue
        who = "1 partition" if cmp.partitions == 1 else f"{cmp.partitions} partitions share it"
        lines.append(
            f"{cmp.memory}: {who}: global {cmp.global_size:,} B vs {cmp.per_partition_size:,} B "
            f"per-partition ({-100 * cmp.saving:+.1f}%, {strategy})"
        )
    if timed_out:
        lines.append(
            "note: a time limit cut the search short; results may vary between runs "
            "(use --node-limit for reproducible output)"
        )
    return "\n".join(lines) + "\n"


def partitioned_json(name: str, memories_from: str, plan: PartitionedPlan, strategy: str) -> str:
    """The ``plan-memory BUNDLE -o X.json`` document (sorted keys, no timings).

    ``global`` is an ``arena.json`` document of the global plan (partition-scope ``tensor`` =
    index in the partition file); ``partitions`` gives every partition's own arena and offsets
    by partition-file tensor; ``comparison`` the per-memory figures.
    """
    pb = plan.buffers
    parts: dict[str, Any] = {}
    for p, prob, tensors in zip(
        pb.partitions, pb.partition_problems, pb.partition_tensors, strict=True
    ):
        pp = plan.partition_plans[p.id]
        arena = pp.arenas.get(p.memory)
        parts[p.id] = {
            "unit": p.unit,
            "memory": p.memory,
            "size": 0 if arena is None else arena.size,
            "lower_bound": 0 if arena is None else arena.lower_bound,
            "buffers": [
                {
                    "tensor": int(tensors[i]),
                    "offset": int(pp.offsets[bid]),
                    "size": int(prob.size[i]),
                    "lifetime": [int(prob.lower[i]), int(prob.upper[i])],
                }
                for i, bid in enumerate(prob.ids)
            ],
        }
    doc = {
        "format": PLAN_FORMAT,
        "version": 1,
        "bundle": name,
        "strategy": strategy,
        "memories_from": memories_from,
        "global": arena_document(pb, plan.global_plan, strategy),
        "partitions": parts,
        "comparison": {
            c.memory: {
                "partitions": c.partitions,
                "per_partition_size": c.per_partition_size,
                "per_partition_lower_bound": c.per_partition_bound,
                "global_size": c.global_size,
                "global_lower_bound": c.global_bound,
            }
            for c in plan.memories()
        },
    }
    return json.dumps(doc, sort_keys=True, indent=1) + "\n"
