"""Apply a placement of a model: partitions as op sets, the plan keys, and the bundle.

The solver decides on fused nodes; this module maps its decision back to ops
(:func:`placed_partitions`), describes it for the bundle (:func:`partition_specs`,
:func:`plan_extra`), plans the memory (:func:`arena_document`) and writes everything with the
bundle API (:func:`write_plan_bundle`). Deciding and applying stay separate steps: nothing here
changes the placement.

Weight-decompression helpers are cloned into every partition that reads them (by
:func:`edgepart.ir.extract.extract`); the plan lists each helper once, in the *earliest*
partition (creation order) reading it, so no partition's op set gets a path that leaves it and
comes back.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from edgepart.deploy.memory_plan import ArenaPartition, global_arena
from edgepart.ir import analysis
from edgepart.ir.graph import Subgraph
from edgepart.lowering.default_placement import DefaultPlacement
from edgepart.lowering.from_model import ModelProblem
from edgepart.placement.evaluate import Evaluation
from edgepart.placement.plan_doc import (
    PLAN_VERSION,
    _eval_summary,
    _f,
    _memory_rows,
    _processor_rows,
    _solver_doc,
    _speedup,
    _transfer_rows,
)
from edgepart.placement.solve import Solution

if TYPE_CHECKING:
    from edgepart.bundle.format import Bundle
    from edgepart.bundle.write import PartitionSpec

__all__ = [
    "PlacedPartition",
    "arena_document",
    "arena_partitions",
    "cpu_forced",
    "partition_specs",
    "placed_partitions",
    "plan_extra",
    "write_plan_bundle",
]


@dataclass(frozen=True)
class PlacedPartition:
    """One partition of a placed model (creation order = a dependency order)."""

    index: int
    id: str
    proc: int
    unit: int  # global unit index of the cost graph
    nodes: tuple[int, ...]
    ops: tuple[int, ...]  # ops the plan assigns here (members + helpers owned here), ascending
    file_ops: tuple[int, ...]  # ops in the partition file (execution order)
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


def placed_partitions(problem: ModelProblem, ev: Evaluation) -> list[PlacedPartition]:
    """The partitions of ``ev`` as op sets with their boundary tensors."""
    fz, sg = problem.fusion, problem.model.subgraphs[problem.subgraph]
    nq = ev.num_partitions
    order = np.argsort(ev.part_of, kind="stable")
    cut = np.searchsorted(ev.part_of[order], np.arange(nq + 1))
    # helper owner: the earliest partition reading it
    owner: dict[int, int] = {}
    hp, hi = fz.helpers.ptr.tolist(), fz.helpers.idx.tolist()
    part_of = ev.part_of.tolist()
    for v in range(fz.num_nodes):
        q = part_of[v]
        for h in hi[hp[v] : hp[v + 1]]:
            if h not in owner or q < owner[h]:
                owner[h] = q
    topo = analysis.topological_order(sg)
    pos = np.empty(sg.num_ops, dtype=np.int64)
    pos[topo] = np.arange(sg.num_ops)
    prod = analysis.producers(sg)
    const = sg.tensor_is_constant
    var = sg.tensor_is_variable
    is_out = np.zeros(sg.num_tensors, dtype=bool)
    is_out[sg.outputs.astype(np.int64)] = True
    # per op: the partition whose file holds it as a member (helpers: -1)
    op_part = np.full(sg.num_ops, -1, dtype=np.int64)
    mem_rows = fz.members.row_ids()
    op_part[fz.members.idx] = ev.part_of[mem_rows]
    readers = analysis.consumers(sg)
    out: list[PlacedPartition] = []
    for q in range(nq):
        nodes = order[cut[q] : cut[q + 1]]
        members = np.concatenate([fz.members.row(int(v)) for v in nodes.tolist()])
        helpers = np.unique(
            np.concatenate([fz.helpers.row(int(v)) for v in nodes.tolist()] + [np.zeros(0, int)])
        ).astype(np.int64)
        own_h = [h for h in helpers.tolist() if owner.get(h) == q]
        ops = np.union1d(members, np.asarray(own_h, dtype=np.int64))
        file_ops = np.union1d(members, helpers)
        file_ops = file_ops[np.argsort(pos[file_ops], kind="stable")]
        inside = np.zeros(sg.num_ops, dtype=bool)
        inside[file_ops] = True
        ins = sg.op_inputs.take(file_ops).idx.astype(np.int64)
        ins = np.unique(ins[ins >= 0])
        ins = ins[~const[ins] & ~var[ins]]
        ins = ins[(prod[ins] < 0) | ~inside[np.maximum(prod[ins], 0)]]
        made = sg.op_outputs.take(members).idx.astype(np.int64)
        made = np.unique(made[made >= 0])
        keep = []
        for t in made.tolist():
            if is_out[t] or (~inside[readers.row(t)]).any():
                keep.append(t)
        u = int(ev.part_unit[q])
        out.append(
            PlacedPartition(
                index=q,
                id=f"p{q}",
                proc=int(problem.graph.unit_proc[u]),
                unit=u,
                nodes=tuple(nodes.tolist()),
                ops=tuple(ops.tolist()),
                file_ops=tuple(file_ops.tolist()),
                inputs=tuple(ins.tolist()),
                outputs=tuple(keep),
            )
        )
    return out


def partition_specs(
    problem: ModelProblem, ev: Evaluation, parts: Sequence[PlacedPartition]
) -> list[PartitionSpec]:
    """Bundle partition specs (ids ``p0, p1, ...`` in creation order, with predictions)."""
    from edgepart.bundle.write import PartitionSpec

    g, prof = problem.graph, problem.profile
    out = []
    for p in parts:
        proc = prof.processors[p.proc]
        disp = float(g.proc_dispatch[p.proc])
        dur = float(ev.part_duration[p.index])
        out.append(
            PartitionSpec(
                ops=list(p.ops),
                processor=proc.name,
                unit=int(g.unit_index[p.unit]),
                delegate=proc.delegate,
                id=p.id,
                threads=int(proc.threads.value) if proc.kind == "cpu" else None,
                predicted={
                    "start_s": _f(float(ev.part_start[p.index])),
                    "end_s": _f(float(ev.part_end[p.index])),
                    "duration_s": _f(dur),
                    "dispatch_s": _f(disp),
                    "compute_s": _f(dur - disp),
                },
                extra={"nodes": list(p.nodes)},
            )
        )
    return out


def cpu_forced(problem: ModelProblem, ev: Evaluation) -> list[dict[str, Any]]:
    """Ops placed on a CPU that some other processor refuses, grouped by processor and TFLite's
    ``"OPNAME: reason"`` line, with edgepart's detail for the first op of each group."""
    g, sup, fz = problem.graph, problem.support, problem.fusion
    cpu_units = np.flatnonzero(np.asarray(g.proc_kinds)[g.unit_proc] == "cpu")
    on_cpu = np.isin(ev.units, cpu_units)
    groups: dict[tuple[str, str], list[int]] = {}
    first: dict[tuple[str, str], str] = {}
    for v in np.flatnonzero(on_cpu).tolist():
        for op in fz.node_ops(v).tolist():
            for p, kind in enumerate(g.proc_kinds):
                if kind == "cpu" or sup.supported[op, p]:
                    continue
                key = (g.proc_names[p], sup.reasons[p].get(op) or sup.why(op, p))
                groups.setdefault(key, []).append(op)
                first.setdefault(key, sup.why(op, p))
    return [
        {"processor": proc, "reason": why, "detail": first[(proc, why)], "ops": sorted(set(ops))}
        for (proc, why), ops in sorted(groups.items(), key=lambda kv: (kv[0][0], min(kv[1])))
    ]


def plan_extra(
    problem: ModelProblem,
    sol: Solution,
    parts: Sequence[PlacedPartition],
    default: DefaultPlacement | None,
) -> dict[str, Any]:
    """The partitioner's top-level plan keys (documented in ``docs/partitioning.md``)."""
    g, ev, prof, fz = problem.graph, sol.evaluation, problem.profile, problem.fusion
    o = sol.options
    pid = {p.index: p.id for p in parts}
    b = sol.baseline
    how: dict[str, Any] = {}
    if sol.method == "exact":
        how["time_limit_s"] = o.time_limit
    if sol.method == "edge-cut":
        how["edge_cut"] = {"k": o.edge_cut_k, "method": o.edge_cut_method}
    base_doc = None
    if b is not None:
        base_doc = {"name": b.name, **_eval_summary(b.evaluation)}
        if default is not None and b.name == default.baseline.name:
            base_doc["delegates"] = list(default.delegates)
            base_doc["split_nodes"] = default.split_nodes
    sources = {
        name: problem.costs.source_counts(p) for p, name in enumerate(problem.costs.processors)
    }
    return {
        "predicted": {
            "latency_s": _f(ev.latency_s),
            "period_s": _f(ev.period_s),
            "serial_latency_s": _f(ev.serial_latency_s),
            "baseline_latency_s": None if b is None else _f(b.evaluation.latency_s),
            "throughput_per_s": _f(1.0 / ev.period_s) if ev.period_s > 0 else None,
            "transferred_bytes": int(g.tensor_bytes[ev.xfer_tensor].sum()),
            "partitions": ev.num_partitions,
        },
        "partitioner": {
            "version": PLAN_VERSION,
            "objective": o.objective,
            "solver": _solver_doc(sol, how),
            "processors": [
                {
                    **row,
                    "delegate": prof.processors[p].delegate,
                    "memory_bytes": int(g.proc_memory[p])
                    if math.isfinite(g.proc_memory[p])
                    else None,
                }
                for p, row in enumerate(_processor_rows(g))
            ],
            "cost_graph": {
                "ops": fz.num_ops,
                "nodes": g.num_nodes,
                "edges": g.num_edges,
                "tensors": len(g.tensor_src),
                "shrink": _f(fz.shrink),
                "merged": dict(sorted(fz.merged.items())),
                "fused_activations": fz.fused_activations,
            },
            "cost_sources": sources,
        },
        "transfers": _transfer_rows(
            g, ev, lambda t: int(problem.tensor_index[t]), lambda q: pid[q]
        ),
        "memory": _memory_rows(g, ev, "arena_estimate_bytes"),
        "baseline": base_doc,
        "baselines": [{"name": x.name, **_eval_summary(x.evaluation)} for x in sol.baselines],
        "speedup_over_baseline": _speedup(sol),
        "cpu_forced": cpu_forced(problem, ev),
    }


def arena_partitions(
    problem: ModelProblem, parts: Sequence[PlacedPartition]
) -> tuple[Subgraph, list[ArenaPartition], str, list[int]]:
    """What the memory planner needs of ``parts``: the source subgraph, the partitions with
    their units and memory domains, the host domain and the model outputs."""
    g = problem.graph
    sg = problem.model.subgraphs[problem.subgraph]
    aparts = [
        ArenaPartition(
            id=p.id,
            unit=g.unit_name(p.unit),
            domain=g.domain_names[int(g.proc_domain[p.proc])],
            file_ops=p.file_ops,
            inputs=p.inputs,
            outputs=p.outputs,
        )
        for p in parts
    ]
    outs = sg.outputs.astype(np.int64)
    return sg, aparts, g.domain_names[g.host_domain], [int(t) for t in outs[outs >= 0].tolist()]


def arena_document(problem: ModelProblem, parts: Sequence[PlacedPartition]) -> dict[str, Any]:
    """The global arena plan (``arena.json``) for ``parts``
    (:func:`edgepart.deploy.memory_plan.global_arena`)."""
    sg, aparts, host, outs = arena_partitions(problem, parts)
    return global_arena(sg, aparts, host_domain=host, model_outputs=outs)


def write_plan_bundle(
    out_dir: str | os.PathLike[str],
    problem: ModelProblem,
    sol: Solution,
    default: DefaultPlacement | None = None,
    *,
    arena: bool = True,
    source_path: str | os.PathLike[str] | None = None,
) -> tuple[Bundle, list[PlacedPartition], dict[str, Any] | None]:
    """Write the bundle of a solved model: plan, partition files, arena, report, manifest.

    Returns the loaded bundle, the partitions and the arena document (None without ``arena``).
    """
    from edgepart.bundle.write import write_bundle

    parts = placed_partitions(problem, sol.evaluation)
    specs = partition_specs(problem, sol.evaluation, parts)
    extra = plan_extra(problem, sol, parts, default)
    doc = arena_document(problem, parts) if arena else None
    bundle = write_bundle(
        out_dir,
        problem.model,
        specs,
        subgraph=problem.subgraph,
        profile=problem.profile,
        plan_extra=extra,
        arena=doc,
        source_path=source_path,
    )
    from edgepart.placement.plan_schema import validate_bundle_plan

    validate_bundle_plan(bundle.plan.to_doc(), str(os.path.join(out_dir, "plan.json")))
    return bundle, parts, doc
