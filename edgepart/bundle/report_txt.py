"""The short human summary written as ``report.txt`` in every bundle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgepart.bundle.plan_graph import PlanGraph, tensor_nbytes
from edgepart.timefmt import format_seconds

if TYPE_CHECKING:
    from edgepart.bundle.format import Arena, Plan

__all__ = ["format_report"]


def _ms(v: Any) -> str:
    return "-" if v is None else format_seconds(float(v))


def format_report(plan: Plan, arena: Arena | None = None) -> str:
    """Partitions, boundary traffic, concurrency, predictions and the arena, in a few lines."""
    graph = PlanGraph.from_plan(plan)
    lines = [
        f"edgepart bundle of {plan.source_name} (subgraph {plan.subgraph}, {plan.num_ops} ops)"
        f" for device profile {plan.device_profile or '(none)'}",
        f"{len(plan.partitions)} partitions in dependency order:",
        f"  {'id':<8} {'unit':<12} {'delegate':<12} {'ops':>5} {'in':>4} {'out':>4} "
        f"{'bytes in':>10} {'predicted':>12}",
    ]
    for p in plan.partitions:
        nbytes = sum(tensor_nbytes(t.dtype, t.shape) for t in p.inputs)
        pred = None if p.predicted is None else p.predicted.get("duration_s")
        if pred is None and p.predicted is not None:
            s, e = p.predicted.get("start_s"), p.predicted.get("end_s")
            pred = None if s is None or e is None else e - s
        ex = "" if p.executor is None else f" [{p.executor.kind}]"
        lines.append(
            f"  {p.id:<8} {p.unit_name:<12} {p.delegate + ex:<12} {len(p.ops):>5} "
            f"{len(p.inputs):>4} {len(p.outputs):>4} {nbytes:>10} {_ms(pred):>12}"
        )
    staged = graph.staged_tensors()
    moved = sum(
        tensor_nbytes(t.dtype, t.shape)
        for p in plan.partitions
        for t in p.inputs
        if t.tensor in graph.producer
    )
    pairs = sum(
        1
        for a in range(len(plan.partitions))
        for b in range(a + 1, len(plan.partitions))
        if graph.concurrent(a, b) and plan.partitions[a].unit_name != plan.partitions[b].unit_name
    )
    lines.append(
        f"boundary: {len(staged)} staged tensors, {moved} bytes passed between partitions per "
        f"inference; {pairs} partition pairs may run concurrently on different units"
    )
    pred = plan.predicted or {}
    if pred:
        base = pred.get("baseline_latency_s")
        if base is None and isinstance(plan.extra.get("baseline"), dict):
            base = plan.extra["baseline"].get("latency_s")
        lines.append(
            f"predicted: latency {_ms(pred.get('latency_s'))}, period {_ms(pred.get('period_s'))}"
            f", TFLite default {_ms(base)}"
        )
    else:
        lines.append("predicted: none (the plan carries no predictions)")
    if arena is None:
        lines.append("arena: none (the runtime allocates one staging buffer per tensor)")
    else:
        for name, mem in sorted(arena.memories.items()):
            lb = mem["lower_bound"]
            ratio = f"{mem['size'] / lb:.3f}" if lb else "-"
            lines.append(
                f"arena {name}: {mem['size']} bytes, lower bound {lb} (x{ratio}), "
                f"{sum(1 for b in arena.buffers if b.memory == name)} buffers"
            )
    return "\n".join(lines) + "\n"
