"""Per-op profiles measured on a device, turned into latency-table entries (cost model format).

:func:`attribute_rows` maps every regular-run row of the main subgraph to the model ops it
covers. A row of a model operator carries its op index as the ``:N`` suffix of its name. A row of
a delegate kernel (``TfLiteXNNPackDelegate``, ``TfLiteGpuDelegateV2`` ...) covers a whole
delegated partition; which ops, the runtime-info proto says (``delegate_node_details``). Without
it (binaries before 2024), the delegated ops are the ones no CPU row names, and they are split
into partitions the way TFLite splits them
(:func:`edgepart.claim.epochs.partition_independent_subsets`, greedy, with TFLite's control
edges); the k-th delegated partition is the k-th delegate node,
because TFLite appends delegate nodes in partition order.

:func:`processor_table` then builds one :class:`~edgepart.cost.table.ProcessorTable`: an ``op``
entry per CPU row and a ``group`` entry (``role: delegate_partition``) per delegate row, keyed by
the op and group signatures the host profiler uses, so host and phone tables share keys.

The tool reports per op the mean over the regular runs (and, in the proto, min, max and standard
deviation), never a median or percentiles. Entries therefore hold the mean in ``median_s``,
``p10_s`` and ``p90_s``, the minimum in ``min_s`` where known, and say so in ``stats_note``;
``avg_s``, ``max_s``, ``std_s`` and ``first_s`` are kept as extra fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgepart.android.bm_op_profile import OpProfile, OpRow, ProfileBlock, infer_node_indices
from edgepart.android.bm_proto import RuntimeInfo
from edgepart.android.bm_run_log import BenchmarkRun
from edgepart.claim.control import might_have_side_effect, model_control_edges
from edgepart.claim.epochs import partition_independent_subsets, side_effect_control_edges
from edgepart.cost.signature import group_signature, op_signatures
from edgepart.cost.stats import STAT_GETTERS
from edgepart.cost.table import Entry, ProcessorTable, Stats
from edgepart.cost.work import op_work
from edgepart.errors import BenchmarkOutputError
from edgepart.ir.graph import Model, Subgraph

__all__ = ["Attributed", "attribute_rows", "model_entry", "processor_table"]

OP_STATS_NOTE = (
    "benchmark_model reports per-op mean, min, max and std only: median_s, p10_s and p90_s "
    "hold the mean"
)
CPU_KERNELS = frozenset({"cpu", "TfLiteXNNPackDelegate"})


@dataclass(frozen=True)
class Attributed:
    """One profile row joined to the model ops it covers (``ops`` ascending)."""

    ops: tuple[int, ...]
    node_index: int
    executed_by: str
    row: OpRow
    count: int
    group: bool


def _run_block(profile: OpProfile) -> ProfileBlock:
    for block in profile.blocks:
        if block.phase == "run" and not block.delegate_internal and block.subgraph_index == 0:
            return block
    raise BenchmarkOutputError(f"{profile.source}: no regular-run profile of the main subgraph")


def attribute_rows(
    profile: OpProfile, runtime: RuntimeInfo | None, model: Model
) -> list[Attributed]:
    """Join the main subgraph's regular-run rows to model ops (see the module docstring).

    Raises
    ------
    BenchmarkOutputError
        Naming the row, when a row names no op, contradicts the runtime info, two rows claim
        one op, or delegate rows cannot be attributed without runtime info.
    """
    sg = model.subgraphs[0]
    block = _run_block(profile)
    rows = [r for r in block.run_order if r.kind in ("op", "delegate_kernel")]
    if rows and all(r.node_index is None for r in rows):
        rows = [r for r in _run_block(infer_node_indices(profile)).run_order if r.kind == "op"]
    runs = block.timings.count if block.timings is not None else 0
    out: list[Attributed] = []
    if runtime is not None:
        out = _with_runtime(profile, runtime, rows, runs, sg.num_ops)
    else:
        out = _without_runtime(profile, rows, runs, model)
    seen: dict[int, str] = {}
    for a in out:
        for op in a.ops:
            if op in seen:
                raise BenchmarkOutputError(
                    f"{profile.source}: op {op} is covered by row {seen[op]!r} and by row "
                    f"{a.row.name!r}; the profile and the model do not match"
                )
            seen[op] = a.row.name
    return out


def _count(row: OpRow, runs: int) -> int:
    return max(row.count or runs or row.times_called, 1)


def _check_op_row(profile: OpProfile, row: OpRow, num_ops: int) -> int:
    idx = row.node_index
    if idx is None or not 0 <= idx < num_ops:
        raise BenchmarkOutputError(
            f"{profile.source}: row {row.name!r} ({row.node_type}) names op {idx}, but the "
            f"model's main subgraph has {num_ops} ops; profile the same model file"
        )
    return idx


def _with_runtime(
    profile: OpProfile, runtime: RuntimeInfo, rows: Sequence[OpRow], runs: int, num_ops: int
) -> list[Attributed]:
    sub = next((s for s in runtime.subgraphs if s.index == 0), None)
    if sub is None:
        raise BenchmarkOutputError(f"{runtime.source}: no runtime info for subgraph 0")
    nodes = {n.id: n for n in sub.nodes}
    out = []
    for r in rows:
        node = nodes.get(r.node_index) if r.node_index is not None else None
        if r.kind == "op":
            idx = _check_op_row(profile, r, num_ops)
            if node is not None and node.delegated_to is not None:
                raise BenchmarkOutputError(
                    f"{profile.source}: row {r.name!r} times op {idx} on the CPU, but "
                    f"{runtime.source} says node {node.delegated_to} took it"
                )
            out.append(Attributed((idx,), idx, "cpu", r, _count(r, runs), False))
        else:
            if node is None or node.delegate is None:
                raise BenchmarkOutputError(
                    f"{profile.source}: delegate row {r.name!r} names node {r.node_index}, which "
                    f"{runtime.source} does not list as a delegate node"
                )
            ops = tuple(sorted(node.replaced))
            out.append(Attributed(ops, node.id, node.delegate, r, _count(r, runs), True))
    return out


def _without_runtime(
    profile: OpProfile, rows: Sequence[OpRow], runs: int, model: Model
) -> list[Attributed]:
    sg = model.subgraphs[0]
    out = []
    for r in rows:
        if r.kind == "op":
            idx = _check_op_row(profile, r, sg.num_ops)
            out.append(Attributed((idx,), idx, "cpu", r, _count(r, runs), False))
    kernels = sorted(
        (r for r in rows if r.kind == "delegate_kernel"), key=lambda r: r.node_index or 0
    )
    if not kernels:
        return out
    if len({r.node_type for r in kernels}) > 1 or any(r.node_index is None for r in kernels):
        kinds = ", ".join(sorted({r.node_type for r in kernels}))
        raise BenchmarkOutputError(
            f"{profile.source}: rows of several delegates ({kinds}) "
            "cannot be told apart without runtime info; use a benchmark_model that has "
            "--export_model_runtime_info (2024 or later)"
        )
    cpu_ops = {a.ops[0] for a in out}
    parts = _delegated_partitions(sg, model, cpu_ops)
    if len(parts) != len(kernels):
        raise BenchmarkOutputError(
            f"{profile.source}: {len(kernels)} delegate rows, but the ops no CPU row names form "
            f"{len(parts)} partitions; without runtime info the rows cannot be attributed: use "
            "a benchmark_model that has --export_model_runtime_info"
        )
    for r, ops in zip(kernels, parts, strict=True):
        out.append(Attributed(ops, r.node_index or 0, r.node_type, r, _count(r, runs), True))
    return out


def _delegated_partitions(sg: Subgraph, model: Model, cpu_ops: set[int]) -> list[tuple[int, ...]]:
    """TFLite's partitions of the ops outside ``cpu_ops`` (greedy, with its control edges)."""
    supported = np.ones(sg.num_ops, dtype=bool)
    supported[list(cpu_ops)] = False
    meta = model_control_edges(model)
    edges = meta[0] if meta is not None else side_effect_control_edges(might_have_side_effect(sg))
    subsets = partition_independent_subsets(
        sg.op_inputs,
        sg.op_outputs,
        supported,
        num_tensors=sg.num_tensors,
        graph_outputs=[int(t) for t in sg.outputs],
        control_edges=edges,
    )
    return [tuple(sorted(s.nodes)) for s in subsets if s.kind == "delegated"]


def _stats(a: Attributed, warmup: int) -> tuple[Stats, dict[str, Any]]:
    r = a.row
    mean = r.avg_ms / 1e3
    low = min(r.min_us / 1e6, mean) if r.min_us is not None else mean
    extra: dict[str, Any] = {"avg_s": mean, "first_s": r.first_ms / 1e3}
    if r.max_us is not None:
        extra["max_s"] = max(r.max_us / 1e6, mean)
    if r.std_us is not None:
        extra["std_s"] = r.std_us / 1e6
    return Stats(mean, mean, mean, low, a.count, warmup, 1), extra


def _merge(a: Stats, b: Stats) -> Stats:
    n = a.count + b.count
    mean = (a.median_s * a.count + b.median_s * b.count) / n
    low = min(a.min_s, b.min_s, mean)
    return Stats(mean, mean, mean, low, n, a.warmup, 1)


def processor_table(
    name: str,
    model: Model,
    attributed: Sequence[Attributed],
    *,
    device: str,
    executor: str,
    threads: int,
    source: str,
    statistic: str,
    warmup: int = 0,
) -> ProcessorTable:
    """A table of ``attributed`` rows: ``op`` entries for CPU rows, ``group`` for delegate rows.

    Rows with the same signature (identical ops) are merged: count-weighted mean, lowest min.
    """
    sg = model.subgraphs[0]
    sigs = op_signatures(sg)
    work = op_work(sg, model)
    get = STAT_GETTERS[statistic]
    pt = ProcessorTable(
        name=name,
        device=device,
        executor=executor,
        threads=threads,
        source=source,
        statistic=statistic,
    )
    merged: dict[str, tuple[str, str, list[int], Stats, dict[str, Any]]] = {}
    for a in attributed:
        ops = list(a.ops)
        if a.group:
            g = group_signature(sg, ops, [sigs[i] for i in ops])
            key, family = g.key, g.family
        else:
            key, family = sigs[ops[0]].key, sigs[ops[0]].family
        stats, extra = _stats(a, warmup)
        if key in merged:
            kind, fam, first_ops, old, old_extra = merged[key]
            old_extra["op_indices"].append(ops)
            old_extra["instances"] += 1
            merged[key] = (kind, fam, first_ops, _merge(old, stats), old_extra)
            continue
        extra.update(
            op=sg.op_name(ops[0]),
            ops=len(ops),
            role="delegate_partition" if a.group else "unit",
            executed_by=a.executed_by,
            node_type=a.row.node_type,
            op_indices=[ops],
            instances=1,
            stats_note=OP_STATS_NOTE,
        )
        merged[key] = ("group" if a.group else "op", family, ops, stats, extra)
    for key, (kind, family, ops, stats, extra) in merged.items():
        pt.add(
            Entry(
                key,
                family,
                kind,
                float(work.flops[ops].sum()),
                float(work.bytes[ops].sum()),
                stats,
                max(float(get(stats)), 0.0),
                extra,
            )
        )
    return pt


def model_entry(
    name: str, num_ops: int, run: BenchmarkRun, predicted_s: float, adb: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The table's ``models`` item for a whole-model run (``None`` without timings).

    The tool prints median, p5 and p95 of the whole model: they are stored as ``median_s``,
    ``p10_s`` and ``p90_s`` (a slightly wider band), as ``stats_note`` says.
    """
    st = run.inference
    if st is None or st.avg is None:
        return None
    med = st.median if st.median is not None else st.avg
    low = st.min if st.min is not None else med
    p_lo = st.p5 if st.p5 is not None else low
    p_hi = st.p95 if st.p95 is not None else (st.max if st.max is not None else med)
    stats = Stats(
        median_s=med / 1e6,
        p10_s=min(p_lo, med) / 1e6,
        p90_s=max(p_hi, med) / 1e6,
        min_s=min(low, p_lo, med) / 1e6,
        count=max(st.count, 1),
        warmup=run.warmup.count if run.warmup else 0,
    )
    return {
        "name": name,
        "ops": num_ops,
        "stats": stats.to_json(),
        "predicted_s": predicted_s,
        "stats_note": "benchmark_model's whole-model median, p5 and p95 (as p10_s/p90_s), and "
        "min; taken with op profiling on, which adds the profiler's own cost",
        "adb": dict(adb),
    }
