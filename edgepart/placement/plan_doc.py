"""A :class:`~.solve.Solution` as JSON: the plan document, the rows both plan formats share,
and a short report.

Two documents describe a placement. The cost-graph plan (format ``edgepart-plan``, version 1,
``docs/costgraph.md``) is :func:`plan_to_dict` / :func:`plan_json`, checked by
:func:`validate_costgraph_plan`. A bundle's ``plan.json`` is written by the bundle writer
(:func:`edgepart.bundle.write.build_bundle`); the partitioner's keys in it
(:func:`edgepart.deploy.plan_keys.partitioner_keys`) are built from the same row builders
(:func:`evaluation_summary`, :func:`transfer_rows`, :func:`memory_rows`,
:func:`processor_rows`, :func:`solver_record`, :func:`speedup`), so both formats say the same
thing the same way. Floats are rounded to 12 significant digits (:func:`json_float`) and keys
are sorted, so the same input and options give byte-identical JSON. Wall-clock times are left
out of the documents (they go in the report).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from edgepart import jsondoc
from edgepart.errors import PlanError
from edgepart.placement.costgraph import CostGraph
from edgepart.placement.evaluate import Evaluation, objective_key
from edgepart.placement.solve import Solution

__all__ = [
    "PLAN_FORMAT",
    "PLAN_VERSION",
    "evaluation_summary",
    "format_report",
    "json_float",
    "memory_rows",
    "plan_json",
    "plan_to_dict",
    "processor_rows",
    "solver_record",
    "speedup",
    "transfer_rows",
    "validate_costgraph_plan",
]

PLAN_FORMAT = "edgepart-plan"
PLAN_VERSION = 1


def json_float(x: float) -> float | None:
    """12 significant digits; None for infinities (JSON has none)."""
    if not math.isfinite(x):
        return None
    return float(f"{x:.12g}")


def _boundary(g: CostGraph, ev: Evaluation) -> tuple[list[list[int]], list[list[int]]]:
    """Per partition: tensors read from outside it, tensors it provides outside (ascending)."""
    nq = ev.num_partitions
    tc = g.tensor_consumers
    t = tc.row_ids()
    src = g.tensor_src[t]
    ps = np.where(src >= 0, ev.part_of[np.maximum(src, 0)], -1)
    pc = ev.part_of[tc.idx]
    cross = ps != pc
    ins: list[set[int]] = [set() for _ in range(nq)]
    outs: list[set[int]] = [set() for _ in range(nq)]
    for tt, a, b in zip(t[cross].tolist(), ps[cross].tolist(), pc[cross].tolist(), strict=True):
        ins[b].add(tt)
        if a >= 0:
            outs[a].add(tt)
    for tt in g.output_tensors.tolist():
        outs[int(ev.part_of[g.tensor_src[tt]])].add(tt)
    return [sorted(x) for x in ins], [sorted(x) for x in outs]


def evaluation_summary(ev: Evaluation) -> dict[str, Any]:
    """Latency, period, serial latency, partition count, feasibility and violations of ``ev``."""
    return {
        "latency_s": json_float(ev.latency_s),
        "period_s": json_float(ev.period_s),
        "serial_latency_s": json_float(ev.serial_latency_s),
        "partitions": ev.num_partitions,
        "feasible": ev.feasible,
        "violations": list(ev.violations),
    }


def transfer_rows(
    g: CostGraph,
    ev: Evaluation,
    tensor: Callable[[int], Any],
    partition: Callable[[int], Any],
) -> list[dict[str, Any]]:
    """One row per transfer of ``ev``; ``tensor`` and ``partition`` name a cost-graph tensor and a
    source partition (the source is None for model inputs)."""
    rows = []
    for i in range(len(ev.xfer_tensor)):
        t = int(ev.xfer_tensor[i])
        sp = int(ev.xfer_src_part[i])
        rows.append(
            {
                "tensor": tensor(t),
                "bytes": int(g.tensor_bytes[t]),
                "from_partition": None if sp < 0 else partition(sp),
                "from_domain": g.domain_names[int(ev.xfer_src_dom[i])],
                "to_domain": g.domain_names[int(ev.xfer_dst_dom[i])],
                "start_s": json_float(float(ev.xfer_start[i])),
                "end_s": json_float(float(ev.xfer_end[i])),
            }
        )
    return rows


def memory_rows(g: CostGraph, ev: Evaluation, arena_key: str) -> list[dict[str, Any]]:
    """One row per unit: weights, the arena (under ``arena_key``), capacity, partitions, load."""
    counts = np.bincount(ev.part_unit, minlength=g.num_units)
    rows = []
    for u in range(g.num_units):
        cap = g.proc_memory[g.unit_proc[u]]
        w, a = int(ev.unit_weight_bytes[u]), int(ev.unit_arena_bytes[u])
        rows.append(
            {
                "unit": g.unit_name(u),
                "weight_bytes": w,
                arena_key: a,
                "total_bytes": w + a,
                "capacity_bytes": int(cap) if math.isfinite(cap) else None,
                "partitions": int(counts[u]),
                "load_s": json_float(float(ev.unit_load[u])),
            }
        )
    return rows


def speedup(sol: Solution) -> float | None:
    """The baseline's objective over the solution's (None without a baseline or for a zero)."""
    if sol.baseline is None:
        return None
    k_b = objective_key(sol.baseline.evaluation, sol.options.objective)[0]
    k_p = objective_key(sol.evaluation, sol.options.objective)[0]
    return json_float(k_b / k_p) if k_p > 0 else None


def solver_record(sol: Solution, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Method, choice, optimality, seed and effort, then ``extra``, then the solver's info."""
    solver: dict[str, Any] = {
        "method": sol.method,
        "chosen": sol.chosen,
        "optimal": sol.optimal,
        "seed": sol.options.seed,
        "effort": sol.options.effort,
        **(extra or {}),
    }
    solver.update({k: v for k, v in sol.info.items() if k != "seconds"})
    return solver


def processor_rows(g: CostGraph) -> list[dict[str, Any]]:
    """One row per processor: name, kind, units, memory domain, dispatch overhead."""
    return [
        {
            "name": g.proc_names[p],
            "kind": g.proc_kinds[p],
            "units": int(g.proc_units[p]),
            "memory_domain": g.domain_names[int(g.proc_domain[p])],
            "dispatch_s": json_float(float(g.proc_dispatch[p])),
        }
        for p in range(g.num_procs)
    ]


def plan_to_dict(sol: Solution, source: dict[str, Any] | None = None) -> dict[str, Any]:
    """The plan document as plain JSON values (see the module docstring)."""
    g, ev = sol.graph, sol.evaluation
    ins, outs = _boundary(g, ev)
    order = np.argsort(ev.part_of, kind="stable")
    cut = np.searchsorted(ev.part_of[order], np.arange(ev.num_partitions + 1))
    parts = []
    for q in range(ev.num_partitions):
        u = int(ev.part_unit[q])
        p = int(g.unit_proc[u])
        nodes = order[cut[q] : cut[q + 1]]
        parts.append(
            {
                "index": q,
                "processor": g.proc_names[p],
                "unit": int(g.unit_index[u]),
                "nodes": [g.ids[v] for v in nodes.tolist()],
                "inputs": [g.tensor_name(t) for t in ins[q]],
                "outputs": [g.tensor_name(t) for t in outs[q]],
                "start_s": json_float(float(ev.part_start[q])),
                "end_s": json_float(float(ev.part_end[q])),
                "dispatch_s": json_float(float(g.proc_dispatch[p])),
                "compute_s": json_float(float(ev.part_duration[q] - g.proc_dispatch[p])),
            }
        )
    b = sol.baseline
    return {
        "format": PLAN_FORMAT,
        "version": PLAN_VERSION,
        "source": dict(source or {"kind": "costgraph", "name": g.name}),
        "objective": sol.options.objective,
        "solver": solver_record(sol),
        "processors": processor_rows(g),
        "partitions": parts,
        "transfers": transfer_rows(g, ev, g.tensor_name, int),
        "predicted": {
            **evaluation_summary(ev),
            "throughput_per_s": json_float(1.0 / ev.period_s) if ev.period_s > 0 else None,
            "transferred_bytes": int(g.tensor_bytes[ev.xfer_tensor].sum()),
        },
        "memory": memory_rows(g, ev, "arena_bytes"),
        "baseline": None if b is None else {"name": b.name, **evaluation_summary(b.evaluation)},
        "baselines": [{"name": x.name, **evaluation_summary(x.evaluation)} for x in sol.baselines],
        "speedup_over_baseline": speedup(sol),
    }


def plan_json(sol: Solution, source: dict[str, Any] | None = None) -> str:
    """:func:`plan_to_dict` serialized with sorted keys and a final newline, after checking it
    against ``edgepart/schemas/plan_costgraph.schema.json``."""
    doc = plan_to_dict(sol, source)
    validate_costgraph_plan(json.loads(json.dumps(doc)), "plan document (being written)")
    return json.dumps(doc, sort_keys=True, indent=1) + "\n"


def validate_costgraph_plan(doc: Any, where: str = "plan.json") -> None:
    """Check a cost-graph plan document against ``plan_costgraph.schema.json``.

    Raises
    ------
    PlanError
        One line naming ``where`` and the JSON path of the first problem.
    """
    jsondoc.validate(doc, "plan_costgraph.schema.json", where, error=PlanError)


def _ms(x: float) -> str:
    return f"{x * 1e3:.3f} ms" if math.isfinite(x) else "infeasible"


def format_report(sol: Solution, *, max_rows: int = 12) -> str:
    """A short human summary: method, prediction against the baseline, partitions, memory."""
    g, ev, o = sol.graph, sol.evaluation, sol.options
    lines = [
        f"graph {g.name or g.source!r}: {g.num_nodes} nodes, {g.num_edges} edges, "
        f"{g.num_procs} processors, {g.num_units} units; objective {o.objective}",
    ]
    how = f"method {sol.method}"
    if sol.method == "exact":
        secs = sol.info.get("seconds", 0.0)
        how += (
            f": optimality {'proven' if sol.optimal else 'NOT proven'} in {secs:.2f} s "
            f"({sol.info.get('nodes_explored', 0)} search nodes, limit {o.time_limit:g} s)"
        )
    elif sol.method == "heuristic":
        how += f": {sol.info.get('evaluations', 0)} evaluations, best start {sol.info.get('start')}"
    elif sol.method == "edge-cut":
        how += (
            f": {sol.info.get('partitioner')} k={sol.info.get('k')}, "
            f"cut {sol.info.get('raw_cut_bytes')}"
            f" bytes before repair, {sol.info.get('cut_bytes')} after"
        )
    if sol.chosen != sol.method:
        how += f"; the baseline {sol.chosen} was better and is returned"
    lines.append(how)
    pred = f"predicted latency {_ms(ev.latency_s)}, period {_ms(ev.period_s)}"
    if sol.baseline is not None:
        b = sol.baseline.evaluation
        k_b = objective_key(b, o.objective)[0]
        k_p = objective_key(ev, o.objective)[0]
        pred += (
            f"; TFLite default ({sol.baseline.name}): latency {_ms(b.latency_s)}, period "
            f"{_ms(b.period_s)}, run serially {_ms(b.serial_latency_s)}; "
            f"speedup {k_b / k_p:.3f}x"
        )
    else:
        pred += "; no feasible TFLite default placement to compare with"
    lines.append(pred)
    lines.append(
        f"{ev.num_partitions} partitions, {len(ev.xfer_tensor)} transfers "
        f"({int(g.tensor_bytes[ev.xfer_tensor].sum())} bytes)"
    )
    for q in range(min(ev.num_partitions, max_rows)):
        u = int(ev.part_unit[q])
        lines.append(
            f"  #{q:<3} {g.unit_name(u):<10} {int((ev.part_of == q).sum()):>6} nodes  "
            f"{ev.part_start[q] * 1e3:9.3f} -> {ev.part_end[q] * 1e3:9.3f} ms"
        )
    if ev.num_partitions > max_rows:
        lines.append(f"  ... {ev.num_partitions - max_rows} more in the plan")
    mem = []
    for u in np.flatnonzero(np.bincount(ev.units, minlength=g.num_units)).tolist():
        cap = g.proc_memory[g.unit_proc[u]]
        tot = int(ev.unit_weight_bytes[u] + ev.unit_arena_bytes[u])
        mem.append(
            f"{g.unit_name(u)} {tot} B" + (f" of {int(cap)} B" if math.isfinite(cap) else "")
        )
    lines.append("memory per unit: " + ", ".join(mem))
    return "\n".join(lines) + "\n"
