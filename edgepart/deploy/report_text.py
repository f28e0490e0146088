"""The short human report of ``edgepart partition MODEL --profile DEVICE``.

Partitions (unit, delegate, ops, predicted times), the predicted latency against TFLite's default
placement, transfers, memory per unit and per memory domain, and which ops were forced onto the
CPU and why (TFLite's ``"OPNAME: reason"`` lines from the claim rules). Deterministic text: no
wall-clock times (the CLI prints those separately).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from edgepart.deploy.apply import PlacedPartition
from edgepart.deploy.plan_keys import cpu_forced
from edgepart.deploy.splits import TensorParallel
from edgepart.lowering.default_placement import DefaultPlacement
from edgepart.lowering.from_model import ModelProblem
from edgepart.placement.evaluate import objective_key
from edgepart.placement.solve import Solution
from edgepart.timefmt import format_seconds

__all__ = ["format_model_report", "format_split_report"]


def _ms(x: float) -> str:
    return format_seconds(x) if math.isfinite(x) else "infeasible"


def _kb(n: float) -> str:
    return f"{n / 1024:.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.2f} MiB"


def format_model_report(
    problem: ModelProblem,
    sol: Solution,
    parts: Sequence[PlacedPartition],
    default: DefaultPlacement | None = None,
    arena: Mapping[str, Any] | None = None,
    *,
    max_rows: int = 16,
) -> str:
    """The report text (see the module docstring)."""
    g, ev, o, fz, prof = problem.graph, sol.evaluation, sol.options, problem.fusion, problem.profile
    name = os.path.basename(problem.model.source or "model")
    units = ", ".join(
        f"{g.proc_names[p]} ({prof.processors[p].delegate}, {int(g.proc_units[p])} unit"
        f"{'s' if g.proc_units[p] > 1 else ''})"
        for p in range(g.num_procs)
    )
    merged = ", ".join(f"{k} {v}" for k, v in sorted(fz.merged.items()) if v) or "nothing merged"
    lines = [
        f"model {name}: {fz.num_ops} ops -> {g.num_nodes} nodes after fusion "
        f"(x{fz.shrink:.2f}: {merged}); profile {prof.name}: {units}; objective {o.objective}",
    ]
    how = f"method {sol.method}"
    if sol.method == "exact":
        how += (
            f": optimality {'proven' if sol.optimal else 'NOT proven'} "
            f"(limit {o.time_limit:g} s, {sol.info.get('nodes_explored', 0)} search nodes)"
        )
    elif sol.method == "heuristic":
        how += f": {sol.info.get('evaluations', 0)} evaluations, best start {sol.info.get('start')}"
    elif sol.method == "edge-cut":
        how += f": {sol.info.get('partitioner')} k={sol.info.get('k')}"
    if sol.chosen != sol.method:
        how += f"; the baseline {sol.chosen} was at least as good and is returned"
    lines.append(how)
    pred = f"predicted latency {_ms(ev.latency_s)}, period {_ms(ev.period_s)}"
    b = sol.baseline
    if b is not None:
        k_b = objective_key(b.evaluation, o.objective)[0]
        k_p = objective_key(ev, o.objective)[0]
        label = b.name
        if default is not None and b.name == default.baseline.name:
            label = "TFLite default (" + " then ".join([*default.delegates, "xnnpack"]) + ")"
        else:
            label = f"best TFLite-style baseline {b.name}"
        if o.objective == "throughput":  # compare like with like: the period first
            pred += (
                f"; {label}: period {_ms(b.evaluation.period_s)}, latency "
                f"{_ms(b.evaluation.latency_s)} (run serially "
                f"{_ms(b.evaluation.serial_latency_s)}), throughput gain {k_b / k_p:.3f}x"
            )
        else:
            pred += (
                f"; {label}: latency {_ms(b.evaluation.latency_s)} "
                f"(run serially {_ms(b.evaluation.serial_latency_s)}), "
                f"speedup {k_b / k_p:.3f}x"
            )
    if default is not None and not default.baseline.feasible:
        pred += (
            f"; the TFLite default is infeasible here: {default.baseline.evaluation.violations[0]}"
        )
    lines.append(pred)
    unknown = problem.costs.unknown_why
    if unknown:
        op, why = next(iter(sorted(unknown.items())))
        lines.append(
            f"predicted times leave out {len(unknown)} op(s) of unknown cost: op {op} {why}"
        )
    lines.append(
        f"{ev.num_partitions} partitions, {len(ev.xfer_tensor)} transfers "
        f"({_kb(float(g.tensor_bytes[ev.xfer_tensor].sum()))} per inference)"
    )
    for p in parts[:max_rows]:
        q = p.index
        lines.append(
            f"  {p.id:<5} {g.unit_name(p.unit):<11} {prof.processors[p.proc].delegate:<9} "
            f"{len(p.ops):>5} ops  {_ms(float(ev.part_start[q])):>9} -> "
            f"{_ms(float(ev.part_end[q])):>9}"
        )
    if len(parts) > max_rows:
        lines.append(f"  ... {len(parts) - max_rows} more in plan.json")
    pid = {p.index: p.id for p in parts}
    nx = len(ev.xfer_tensor)
    for i in range(min(nx, max_rows)):
        t, sp = int(ev.xfer_tensor[i]), int(ev.xfer_src_part[i])
        lines.append(
            f"  transfer tensor {int(problem.tensor_index[t])} ({_kb(float(g.tensor_bytes[t]))}) "
            f"{pid[sp] if sp >= 0 else 'input'}: {g.domain_names[int(ev.xfer_src_dom[i])]} -> "
            f"{g.domain_names[int(ev.xfer_dst_dom[i])]}  {_ms(float(ev.xfer_start[i]))} -> "
            f"{_ms(float(ev.xfer_end[i]))}"
        )
    if nx > max_rows:
        lines.append(f"  ... {nx - max_rows} more transfers in plan.json")
    mem = []
    for u in np.flatnonzero(np.bincount(ev.units, minlength=g.num_units)).tolist():
        cap = g.proc_memory[g.unit_proc[u]]
        tot = int(ev.unit_weight_bytes[u] + ev.unit_arena_bytes[u])
        mem.append(
            f"{g.unit_name(u)} {_kb(tot)} (weights {_kb(int(ev.unit_weight_bytes[u]))})"
            + (f" of {_kb(cap)}" if math.isfinite(cap) else "")
        )
    lines.append("memory per unit (weights + arena estimate): " + ", ".join(mem))
    if arena is not None:
        lines.append(
            "arena per memory domain: "
            + ", ".join(
                f"{m} {_kb(d['size'])} (lower bound {_kb(d['lower_bound'])})"
                for m, d in sorted(arena["memories"].items())
            )
        )
    forced = cpu_forced(problem, ev)
    if forced:
        n_ops = len({op for f in forced for op in f["ops"]})
        lines.append(f"ops on the CPU that another processor refuses: {n_ops}")
        for f in forced[:max_rows]:
            ops = f["ops"]
            shown = ", ".join(str(x) for x in ops[:6]) + (", ..." if len(ops) > 6 else "")
            lines.append(f"  {f['processor']}: {f['reason']} (ops {shown})")
            if f["detail"] != f["reason"]:
                lines.append(f"      e.g. {f['detail']}")
        if len(forced) > max_rows:
            lines.append(f"  ... {len(forced) - max_rows} more reasons in plan.json")
    else:
        lines.append("no op was forced onto the CPU by a refusal")
    return "\n".join(lines) + "\n"


def format_split_report(
    problem: ModelProblem,
    parts: Sequence[PlacedPartition],
    tp: TensorParallel | None,
    *,
    max_rows: int = 16,
) -> str:
    """The tensor-parallel lines of the report: every split taken, where its shards run and the
    gain it was predicted to bring ("" when no split is taken, so reports of unsplit plans are
    unchanged)."""
    if tp is None or not tp.taken:
        return ""
    g = problem.graph
    owner = {op: p for p in parts for op in p.ops}
    head = f"tensor parallelism: {len(tp.taken)} split layer(s)"
    if tp.unsplit_latency_s is not None and tp.split_latency_s is not None:
        head += (
            f"; predicted latency without splits {_ms(tp.unsplit_latency_s)}, with "
            f"{_ms(tp.split_latency_s)} (gain {(tp.gain or 0.0) * 100:.1f} %, threshold "
            f"{tp.threshold * 100:.0f} %)"
        )
    else:
        head += "; the model fits no placement without them (layers larger than any unit)"
    lines = [head]
    for st in tp.taken[:max_rows]:
        rec = st.record
        shards = ", ".join(
            f"{owner[sh[-1]].id} on {g.unit_name(owner[sh[-1]].unit)} ({size})"
            for sh, size in zip(rec.shards, rec.spec.sizes, strict=True)
        )
        coll = owner[rec.collective_ops[-1]]
        pr = st.predicted
        if pr["unsplit_s"] is not None and pr["gain"] is not None:
            gain = (
                f"layer {_ms(float(pr['unsplit_s']))} -> {_ms(float(pr['split_s'] or 0.0))} "
                f"(gain {float(pr['gain']) * 100:.1f} %)"
            )
        else:
            gain = f"layer {_ms(float(pr['split_s'] or 0.0))} split (fits no unit whole)"
        lines.append(
            f"  {st.id} op {','.join(map(str, rec.spec.ops))} "
            f"{'+'.join(dict.fromkeys(rec.op_names))} by {rec.spec.mode}, {st.choice.reason}: "
            f"{shards}; {rec.collective.replace('_', '-')} in {coll.id}; {gain}"
        )
    if len(tp.taken) > max_rows:
        lines.append(f"  ... {len(tp.taken) - max_rows} more splits in plan.json")
    return "\n".join(lines) + "\n"
