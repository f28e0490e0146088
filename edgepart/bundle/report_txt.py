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
        f"edgepart bundle of {plan.source_name} (subgraph {plan.subgraph}, "
        f"{plan.source_num_ops} ops)"
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
    lines.extend(_split_lines(plan))
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


def _split_lines(plan: Plan) -> list[str]:
    """Tensor parallelism: every split, where its shards run, its collectives."""
    if not plan.splits:
        return []
    unit = {p.id: p.unit_name for p in plan.partitions}
    lines = [
        f"tensor parallelism: {len(plan.splits)} split layer(s), {plan.num_ops} ops after the "
        "splits (plan.json version 2):"
    ]
    for s in plan.splits:
        shards = ", ".join(f"{sh.partition} ({unit[sh.partition]})" for sh in s.shards)
        coll = next(c for c in plan.collectives if c.id == s.collective)
        gain = ""
        pr = s.predicted or {}
        if pr.get("split_s") is not None:
            gain = f"; predicted {_ms(pr.get('unsplit_s'))} -> {_ms(pr.get('split_s'))}"
            if pr.get("gain") is not None:
                gain += f" (gain {float(pr['gain']) * 100:.1f} %)"
        lines.append(
            f"  {s.id} {'+'.join(dict.fromkeys(s.op_names))} op {','.join(map(str, s.ops))} by "
            f"{s.mode} {list(s.sizes)} ({s.reason}): shards in {shards}; "
            f"{coll.kind.replace('_', '-')} in {coll.destination[0]}{gain}"
        )
    kinds: dict[str, list[int]] = {}
    for c in plan.collectives:
        kinds.setdefault(c.kind, []).append(c.bytes)
    lines.append(
        "  collectives: "
        + ", ".join(
            f"{len(v)} {k.replace('_', '-')} ({sum(v)} bytes)"
            for k, v in sorted(kinds.items(), key=lambda kv: _KIND_ORDER.index(kv[0]))
        )
    )
    return lines


_KIND_ORDER = ("broadcast", "send_recv", "all_gather", "all_reduce")
