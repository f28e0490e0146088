"""The report document: every number the HTML page draws, as one JSON-able dict.

:func:`report_document` turns a :class:`~edgepart.report.plan_view.PlanView` (and measured
schedules, if any) into plain lists and dicts, columnar per op so a 100,000-op model stays a few
MB. Floats are rounded to 5 significant digits and nothing depends on time, paths outside the
inputs or dict order, so the same inputs give the same document, byte for byte.

Layout (``version`` 1): ``meta``; ``processors`` (name, kind, delegate, color, domain, roofs);
``units``; ``types``; ``ops`` (per op: type, name, partition, processor under edgepart and under
TFLite's default, fused group, topological position, FLOPs, bytes; per processor: latency in
microseconds, its source, support, the refusal reason); ``reasons``; ``io`` (model inputs and
outputs as graph nodes); ``edges`` (``[src node, dst node, tensor, bytes]``: ops are nodes
``0..N-1``, inputs and outputs follow); ``partitions``; ``schedules`` (edgepart's prediction,
TFLite's default, measured runs: bars on unit and link rows); ``throughput``; ``arena``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from edgepart.cost.table import INTERPOLATED, MEASURED, PREDICTED, ROOFLINE, UNKNOWN
from edgepart.deploy.apply import placed_partitions
from edgepart.ir import analysis
from edgepart.report.measured import MeasuredSchedule
from edgepart.report.plan_view import PlanView
from edgepart.timefmt import format_seconds

__all__ = ["DOC_VERSION", "PALETTE", "report_document"]

DOC_VERSION = 1

PALETTE = {"cpu": "#4e79a7", "gpu": "#59a14f", "npu": "#f28e2b", "dsp": "#b07aa1"}
"""Processor colors by kind (colorblind-safe Tableau 10 hues); a second processor of the same
kind takes the next free color of :data:`_EXTRA`."""
_EXTRA = ("#e15759", "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#bab0ac")
# the order of GraphCosts.source codes (edgepart.cost.model)
_SOURCES = (MEASURED, INTERPOLATED, PREDICTED, ROOFLINE, UNKNOWN)


def _r(x: float | None, digits: int = 5) -> float | None:
    """A float rounded to ``digits`` significant digits (None for inf/nan/None)."""
    if x is None:
        return None
    x = float(x)
    if not math.isfinite(x):
        return None
    return float(f"{x:.{digits}g}")


def _colors(kinds: Sequence[str]) -> list[str]:
    used: set[str] = set()
    out = []
    extra = iter(_EXTRA)
    for k in kinds:
        c = PALETTE.get(k)
        if c is None or c in used:
            c = next((e for e in extra if e not in used), "#888888")
        used.add(c)
        out.append(c)
    return out


def report_document(view: PlanView, measured: Sequence[MeasuredSchedule] = ()) -> dict[str, Any]:
    """The report document of ``view`` (see the module docstring)."""
    pr = view.problem
    prof, g, gc, sup, fz = pr.profile, pr.graph, pr.costs, pr.support, pr.fusion
    sg = view.model.subgraphs[pr.subgraph]
    n = sg.num_ops
    procs = [p.name for p in prof.processors]
    pidx = {name: k for k, name in enumerate(procs)}
    colors = _colors([p.kind for p in prof.processors])
    hw = gc.cm.hardware

    # ---------------------------------------------------------------- ops
    names = [sg.op_name(i) for i in range(n)]
    types = sorted(set(names))
    tix = {t: k for k, t in enumerate(types)}
    part_of = np.full(n, -1, dtype=np.int64)
    proc_of = np.full(n, -1, dtype=np.int64)
    for k, p in enumerate(view.partitions):
        part_of[list(p.ops)] = k
        proc_of[list(p.ops)] = pidx[p.processor]
    topo = analysis.topological_order(sg)
    pos = np.empty(n, dtype=np.int64)
    pos[topo] = np.arange(n)
    outs = sg.op_outputs
    labels = [sg.tensor_names[int(outs.row(i)[0])] if len(outs.row(i)) else "" for i in range(n)]
    reasons: list[str] = []
    rix: dict[str, int] = {}
    why: list[dict[str, int]] = []
    for q in range(len(procs)):
        d: dict[str, int] = {}
        for op in np.flatnonzero(~sup.supported[:, q]).tolist():
            text = sup.why(op, q) or "refused"
            if text not in rix:
                rix[text] = len(reasons)
                reasons.append(text)
            d[str(op)] = rix[text]
        why.append(d)
    lat_us = np.asarray(gc.latency, dtype=np.float64) * 1e6
    ops_doc = {
        "type": [tix[t] for t in names],
        "name": labels,
        "part": part_of.tolist(),
        "proc": proc_of.tolist(),
        "dproc": [int(x) for x in view.default.op_processor.tolist()],
        "group": [int(x) for x in fz.node_of.tolist()],
        "topo": pos.tolist(),
        "flops": [_r(x) for x in gc.work.flops.tolist()],
        "bytes": [int(x) for x in gc.work.bytes.tolist()],
        "lat": [[_r(x, 4) for x in lat_us[:, p].tolist()] for p in range(len(procs))],
        "src": [[int(x) for x in gc.source[:, p].tolist()] for p in range(len(procs))],
        "ok": [[int(x) for x in sup.supported[:, p].tolist()] for p in range(len(procs))],
        "why": why,
    }

    # ---------------------------------------------------------------- graph edges and io
    prod = analysis.producers(sg)
    const = sg.tensor_is_constant
    nbytes = sg.tensor_nbytes
    ins = [int(t) for t in sg.inputs.tolist() if t >= 0]
    outs_t = [int(t) for t in sg.outputs.tolist() if t >= 0]
    io = [{"kind": "input", "tensor": t, "name": sg.tensor_names[t]} for t in ins]
    io += [{"kind": "output", "tensor": t, "name": sg.tensor_names[t]} for t in outs_t]
    in_node = {t: n + k for k, t in enumerate(ins)}
    edges: set[tuple[int, int, int]] = set()
    for i in range(n):
        for t in sg.op_inputs.row(i).tolist():
            if t < 0 or const[t]:
                continue
            src = int(prod[t])
            if src >= 0:
                edges.add((src, i, t))
            elif t in in_node:
                edges.add((in_node[t], i, t))
    for k, t in enumerate(outs_t):
        node = n + len(ins) + k
        if prod[t] >= 0:
            edges.add((int(prod[t]), node, t))
        elif t in in_node:
            edges.add((in_node[t], node, t))
    edge_doc = [[s, d, t, int(nbytes[t])] for s, d, t in sorted(edges)]

    # ---------------------------------------------------------------- partitions
    sizes = {t: int(nbytes[t]) for p in view.partitions for t in (*p.inputs, *p.outputs)}
    parts_doc = []
    for p in view.partitions:
        pred = p.predicted
        start, end = pred.get("start_s"), pred.get("end_s")
        parts_doc.append(
            {
                "id": p.id,
                "proc": pidx[p.processor],
                "unit": p.unit_name,
                "delegate": p.delegate,
                "ops": len(p.ops),
                "start_s": _r(start),
                "end_s": _r(end),
                "duration_s": _r(pred.get("duration_s")),
                "dispatch_s": _r(pred.get("dispatch_s")),
                "in_bytes": sum(sizes[t] for t in p.inputs),
                "out_bytes": sum(sizes[t] for t in p.outputs),
                "depends_on": list(p.depends_on),
            }
        )

    # ---------------------------------------------------------------- schedules
    units = [g.unit_name(u) for u in range(g.num_units)]
    unit_proc = {g.unit_name(u): int(g.unit_proc[u]) for u in range(g.num_units)}
    predicted_bars = [
        {
            "row": p["unit"],
            "label": p["id"],
            "proc": p["proc"],
            "start": p["start_s"],
            "end": p["end_s"],
            "kind": "partition",
        }
        for p in parts_doc
        if p["start_s"] is not None and p["end_s"] is not None
    ]
    for tr in view.extra.get("transfers", []) or []:
        predicted_bars.append(
            {
                "row": f"{tr['from_domain']} \u2192 {tr['to_domain']}",
                "label": f"t{tr['tensor']}",
                "proc": -1,
                "start": _r(tr.get("start_s")),
                "end": _r(tr.get("end_s")),
                "kind": "transfer",
                "bytes": int(tr.get("bytes", 0)),
                "from": tr.get("from_partition"),
            }
        )
    pred = view.predicted
    schedules = [
        {
            "name": "edgepart",
            "label": f"edgepart's plan, predicted for {prof.name}",
            "kind": "predicted",
            "latency_s": _r(pred.get("latency_s")),
            "bars": predicted_bars,
            "notes": [],
        },
        _default_schedule(view, units),
    ]
    for ms in measured:
        part_unit = {p.id: p.unit_name for p in view.partitions}
        host = set(ms.host_partitions)
        schedules.append(
            {
                "name": f"measured{len(schedules) - 1}",
                "label": ms.label,
                "kind": ms.kind,
                "latency_s": _r(ms.latency_s),
                "bars": [
                    {
                        "row": part_unit[pid],
                        "label": f"{pid} (host)" if pid in host else pid,
                        "proc": unit_proc[part_unit[pid]],
                        "start": _r(a),
                        "end": _r(b),
                        "kind": "partition",
                    }
                    for pid, a, b in ms.bars
                ],
                "notes": list(ms.notes),
            }
        )

    # ---------------------------------------------------------------- throughput, arena, meta
    partitioner = view.extra.get("partitioner") or {}
    objective = partitioner.get("objective", "latency")
    period = pred.get("period_s")
    throughput = None
    if objective == "throughput" and period:
        throughput = {"period_s": _r(period), "latency_s": _r(pred.get("latency_s")), "inputs": 4}
    arena = _arena(view)
    sources = {
        name: {s: int(v) for s, v in gc.source_counts(k).items()} for k, name in enumerate(procs)
    }
    base = view.extra.get("baseline") or {}
    meta = {
        "model": os.path.basename(view.model.source or view.path),
        "target": os.path.basename(os.path.normpath(view.path)),
        "kind": view.kind,
        "profile": prof.name,
        "profile_title": prof.title,
        "subgraph": pr.subgraph,
        "num_ops": n,
        "num_partitions": len(view.partitions),
        "objective": objective,
        "latency_s": _r(pred.get("latency_s")),
        "period_s": _r(period),
        "baseline_latency_s": _r(pred.get("baseline_latency_s") or base.get("latency_s")),
        "transferred_bytes": pred.get("transferred_bytes"),
        "cost_sources": sources,
        "notes": _notes(view, sources),
    }
    doc: dict[str, Any] = {
        "version": DOC_VERSION,
        "meta": meta,
        "processors": [
            {
                "name": p.name,
                "kind": p.kind,
                "delegate": p.delegate,
                "color": colors[k],
                "domain": p.memory_domain,
                "bandwidth": _r(hw.processors[k].bandwidth),
                "table": gc.cm.table_name(p.name),
                "peaks": {dt: _r(v) for dt, v in sorted(hw.processors[k].peak_ops.items())},
            }
            for k, p in enumerate(prof.processors)
        ],
        "units": units,
        "types": types,
        "ops": ops_doc,
        "reasons": reasons,
        "sources": list(_SOURCES),
        "io": io,
        "edges": edge_doc,
        "partitions": parts_doc,
        "schedules": schedules,
        "throughput": throughput,
        "arena": arena,
    }
    if view.splits:  # only plans with splits carry the key: other documents stay as they were
        doc["tensor_parallel"] = _tensor_parallel(view)
    return doc


def _tensor_parallel(view: PlanView) -> dict[str, Any]:
    """Splits (with their shards' partitions and units, predictions) and collectives."""
    unit = {p.id: p.unit_name for p in view.partitions}
    splits = []
    for s in view.splits:
        pr = s.get("predicted") or {}
        splits.append(
            {
                "id": s["id"],
                "layer": "+".join(dict.fromkeys(s["op_names"])),
                "ops": list(s["ops"]),
                "mode": s["mode"],
                "sizes": list(s["sizes"]),
                "reason": s["reason"],
                "exact": s["exact"],
                "shards": [
                    {"partition": sh["partition"], "unit": unit.get(sh["partition"], "")}
                    for sh in s["shards"]
                ],
                "collective": s["collective"],
                "unsplit_s": _r(pr.get("unsplit_s")),
                "split_s": _r(pr.get("split_s")),
                "gain": _r(pr.get("gain")),
            }
        )
    colls = [
        {
            "id": c["id"],
            "kind": c["kind"],
            "split": c["split"],
            "tensor": c["tensor"],
            "from": list(c["from"]),
            "to": list(c["to"]),
            "bytes": c["bytes"],
            "links": list(c["links"]),
            "cost_s": _r(c["cost_s"]),
        }
        for c in view.collectives
    ]
    return {"splits": splits, "collectives": colls, "summary": view.extra.get("tensor_parallel")}


def _default_schedule(view: PlanView, units: Sequence[str]) -> dict[str, Any]:
    """TFLite's default placement on the same cost model, as Gantt bars."""
    pr, d = view.problem, view.default
    g = pr.graph
    ev = d.baseline.evaluation
    bars: list[dict[str, Any]] = []
    for p in placed_partitions(pr, ev):
        bars.append(
            {
                "row": g.unit_name(p.unit),
                "label": f"d{p.index}",
                "proc": int(p.proc),
                "start": _r(float(ev.part_start[p.index])),
                "end": _r(float(ev.part_end[p.index])),
                "kind": "partition",
                "ops": len(p.ops),
            }
        )
    for i in range(len(ev.xfer_tensor)):
        t = int(ev.xfer_tensor[i])
        bars.append(
            {
                "row": f"{g.domain_names[int(ev.xfer_src_dom[i])]} \u2192 "
                f"{g.domain_names[int(ev.xfer_dst_dom[i])]}",
                "label": f"t{int(pr.tensor_index[t])}",
                "proc": -1,
                "start": _r(float(ev.xfer_start[i])),
                "end": _r(float(ev.xfer_end[i])),
                "kind": "transfer",
                "bytes": int(g.tensor_bytes[t]),
            }
        )
    names = list(d.delegates)
    if not names or names[-1] != "xnnpack":
        names.append("xnnpack")  # XNNPACK takes what the user delegates leave, lazily
    return {
        "name": "default",
        "label": f"TFLite's default ({' then '.join(names)}), predicted",
        "kind": "predicted",
        "latency_s": _r(ev.latency_s),
        "serial_latency_s": _r(ev.serial_latency_s),
        "bars": bars,
        "notes": [
            "TFLite runs the delegate partitions one after another: "
            f"{format_seconds(ev.serial_latency_s)} serially"
        ],
    }


def _arena(view: PlanView) -> dict[str, Any] | None:
    doc = view.arena
    if not doc:
        return None
    mems = sorted(doc.get("memories", {}))
    mix = {m: k for k, m in enumerate(mems)}
    pix = {p.id: k for k, p in enumerate(view.partitions)}
    bufs = []
    for b in doc.get("buffers", []):
        life = b.get("lifetime")
        if life is None:
            continue
        part = b.get("partition")
        bufs.append(
            [
                mix[b["memory"]],
                int(b["offset"]),
                int(b["size"]),
                int(life[0]),
                int(life[1]),
                pix.get(part, -1) if part is not None else -1,
                int(b["tensor"]),
            ]
        )
    bufs.sort()
    return {
        "memories": [
            {
                "name": m,
                "size": int(doc["memories"][m].get("size", 0)),
                "lower_bound": doc["memories"][m].get("lower_bound"),
                "naive": doc["memories"][m].get("naive"),
            }
            for m in mems
        ],
        "buffers": bufs,
        "strategy": doc.get("strategy"),
    }


def _notes(view: PlanView, sources: dict[str, dict[str, int]]) -> list[str]:
    notes = list(view.notes)
    total = {s: sum(v.get(s, 0) for v in sources.values()) for s in _SOURCES}
    if total["measured"] == 0:
        notes.append(
            "every latency is a prediction of the cost model (roofline and profile figures, no "
            "measured latency table): no phone or accelerator was measured for it"
        )
    return notes
