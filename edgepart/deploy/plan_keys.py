"""The partitioner's keys of a bundle's ``plan.json`` (documented in ``docs/partitioning.md``).

The bundle writer (:func:`edgepart.bundle.write.build_bundle`) writes ``plan.json`` and checks
it, these keys included, against ``plan.schema.json``; this module says what the keys hold, from
the row builders the cost-graph plan uses too (:mod:`edgepart.placement.plan_doc`), plus what
only a model has: each processor's delegate and memory, the fusion summary, where the costs came
from, the TFLite default's delegates and the ops forced onto the CPU with TFLite's reasons.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from edgepart.deploy.apply import PlacedPartition
from edgepart.deploy.splits import TensorParallel
from edgepart.lowering.default_placement import DefaultPlacement
from edgepart.lowering.from_model import ModelProblem
from edgepart.placement.evaluate import Evaluation
from edgepart.placement.plan_doc import (
    PLAN_VERSION,
    evaluation_summary,
    json_float,
    memory_rows,
    processor_rows,
    solver_record,
    speedup,
    transfer_rows,
)
from edgepart.placement.solve import Solution

__all__ = ["cpu_forced", "partitioner_keys", "tensor_parallel_key"]


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


def partitioner_keys(
    problem: ModelProblem,
    sol: Solution,
    parts: Sequence[PlacedPartition],
    default: DefaultPlacement | None,
) -> dict[str, Any]:
    """The partitioner's top-level ``plan.json`` keys for ``sol`` cut into ``parts``.

    Parameters
    ----------
    problem
        The model under its device profile as a cost graph.
    sol
        The checked solution of ``problem.graph``.
    parts
        ``sol``'s partitions (:func:`edgepart.deploy.apply.placed_partitions`).
    default
        TFLite's default placement on the device, named as the baseline when it is.

    Returns
    -------
    dict
        ``predicted``, ``partitioner``, ``transfers``, ``memory``, ``baseline``,
        ``baselines``, ``speedup_over_baseline`` and ``cpu_forced`` (``docs/partitioning.md``).
    """
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
        base_doc = {"name": b.name, **evaluation_summary(b.evaluation)}
        if default is not None and b.name == default.baseline.name:
            base_doc["delegates"] = list(default.delegates)
            base_doc["split_nodes"] = default.split_nodes
    sources = {
        name: problem.costs.source_counts(p) for p, name in enumerate(problem.costs.processors)
    }
    return {
        "predicted": {
            "latency_s": json_float(ev.latency_s),
            "period_s": json_float(ev.period_s),
            "serial_latency_s": json_float(ev.serial_latency_s),
            "baseline_latency_s": None if b is None else json_float(b.evaluation.latency_s),
            "throughput_per_s": json_float(1.0 / ev.period_s) if ev.period_s > 0 else None,
            "transferred_bytes": int(g.tensor_bytes[ev.xfer_tensor].sum()),
            "partitions": ev.num_partitions,
        },
        "partitioner": {
            "version": PLAN_VERSION,
            "objective": o.objective,
            "solver": solver_record(sol, how),
            "processors": [
                {
                    **row,
                    "delegate": prof.processors[p].delegate,
                    "memory_bytes": int(g.proc_memory[p])
                    if math.isfinite(g.proc_memory[p])
                    else None,
                }
                for p, row in enumerate(processor_rows(g))
            ],
            "cost_graph": {
                "ops": fz.num_ops,
                "nodes": g.num_nodes,
                "edges": g.num_edges,
                "tensors": len(g.tensor_src),
                "shrink": json_float(fz.shrink),
                "merged": dict(sorted(fz.merged.items())),
                "fused_activations": fz.fused_activations,
            },
            "cost_sources": sources,
        },
        "transfers": transfer_rows(g, ev, lambda t: int(problem.tensor_index[t]), lambda q: pid[q]),
        "memory": memory_rows(g, ev, "arena_estimate_bytes"),
        "baseline": base_doc,
        "baselines": [{"name": x.name, **evaluation_summary(x.evaluation)} for x in sol.baselines],
        "speedup_over_baseline": speedup(sol),
        "cpu_forced": cpu_forced(problem, ev),
    }


def tensor_parallel_key(tp: TensorParallel) -> dict[str, Any]:
    """The ``tensor_parallel`` key of a plan that takes splits: the best placement without
    them, with them, the gain, the threshold it passed and the candidates weighed."""
    return {
        "unsplit_latency_s": None
        if tp.unsplit_latency_s is None
        else json_float(tp.unsplit_latency_s),
        "latency_s": None if tp.split_latency_s is None else json_float(tp.split_latency_s),
        "gain": None if tp.gain is None else json_float(tp.gain),
        "threshold": tp.threshold,
        "candidates": tp.considered,
        "splits": len(tp.taken),
    }
