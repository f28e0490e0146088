"""Placement at scale: operator graphs of 200-10,000 nodes, default settings against every method.

Instances (all seeded and deterministic):

* generated operator-level networks (:mod:`edgepart.placement.synth_nets`): transformer
  encoders, residual CNNs, encoder-decoder stacks and inception-style graphs, some with a
  colocated backward node per forward node (training), on a phone (CPU cores, GPU, NPU, DSP),
  CPU plus ``k`` identical memory-limited accelerators, or groups of CPU, GPU and NPU units;
  2-16 units; accelerator memory that binds; some with every processor running one partition
  per unit (``single_partition``: the MILP is then exact and can prove optima) or copying
  with its own cores (``transfers_on_unit``);
* corpus models at operator granularity (no fusion) under every device profile, with TFLite's
  default placement on that device as the reference;
* optionally (``--fiddle DIR``) the published device-placement graphs of Tarnawski et al.
  (msr-fiddle/dnn-partitioning, fetched by the user; never committed), converted to cost graphs:
  ``k`` identical accelerators with their own memories (a self-link between them) and
  transfers charged to the accelerators, one partition per accelerator.

For each instance and objective:

* **default**: :func:`~edgepart.placement.solve.partition_costgraph` with default settings
  (timed; load average printed);
* **long**: the heuristic with ``--long-effort`` (default 6) times the budget and another seed,
  latency also the MILP (HiGHS, ``--milp-time`` seconds, warm-started from the best plan, graphs
  up to ``--milp-max-nodes``); throughput also the stage DP over ideals (the contiguous-split
  optimum) where it runs under ``--dp-pairs`` pairs, and over blocks;
* **bounds**: critical path, load and LP relaxations
  (:mod:`~edgepart.placement.lower_bounds`), and the MILP's dual bound when its model is exact;
* **baselines**: TFLite's default placement and every processor alone (with fallbacks).

Printed per size bucket: latency gap of the default to the best any method found (median,
worst), the share of instances whose optimum is proven (best = bound) where the default has it,
the gap of the default to the best lower bound (median, worst), throughput default vs. the DP
optimum (count at or below it), default times (median, max) and the times at about 1,000 and
10,000 nodes. Predicted times are the evaluation function's (synthetic costs, or the cost model
with estimated profile numbers for the corpus), not device measurements.

Usage::

    python benchmarks/placement_scale.py [--quick] [--only SUBSTR] [--fiddle DIR]
        [--json out.jsonl] [--resume]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from edgepart.placement.baseline import Baseline, best_baseline, tflite_baselines
from edgepart.placement.constraints import admissible
from edgepart.placement.costgraph import CostGraph, costgraph_from_dict
from edgepart.placement.evaluate import evaluate, objective_key
from edgepart.placement.heuristic import solve_heuristic
from edgepart.placement.lower_bounds import lower_bound
from edgepart.placement.milp import solve_milp
from edgepart.placement.placement_check import check_evaluation
from edgepart.placement.solve import SolveOptions, partition_costgraph
from edgepart.placement.stages import plan_stages
from edgepart.placement.starts import single_starts
from edgepart.placement.synth_nets import network_costgraph_doc

BUCKETS = ((0, 200), (200, 500), (500, 1000), (1000, 3000), (3000, 20000))


def synthetic_specs() -> list[dict[str, Any]]:
    """The generated instances: 8 per size, families, platforms, units and options rotated."""
    fams = ("transformer", "resnet", "encdec", "branchy")
    plats = ("accel", "phone", "hetero")
    units = (2, 3, 4, 6, 8, 12, 16)
    specs = []
    i = 0
    for size in (250, 400, 700, 1000, 2000, 4000, 10000):
        per = 8 if size < 10000 else 4
        for j in range(per):
            fam = fams[j % 4]
            plat = plats[i % 3]
            k = units[(i * 3 + j) % len(units)]
            if plat == "phone":
                k = max(4, min(k, 6))
            if plat == "hetero":
                k = max(3, k)
            specs.append(
                {
                    "family": fam,
                    "nodes": size,
                    "units": k,
                    "seed": i,
                    "platform": plat,
                    "training": j % 3 == 2,
                    "single": i % 4 == 1,
                    "copies": i % 5 == 3,
                }
            )
            i += 1
    return specs


def synthetic_cases(specs: list[dict[str, Any]]) -> Iterator[tuple[str, CostGraph, Any]]:
    for s in specs:
        doc = network_costgraph_doc(
            s["family"],
            s["nodes"],
            s["units"],
            s["seed"],
            platform=s["platform"],
            training=s["training"],
            transfers_on_unit=s["copies"],
            single_partition=s["single"],
        )
        if s["single"]:
            for p in doc["processors"]:  # every processor: the MILP is exact
                p["single_partition"] = True
        g = costgraph_from_dict(doc)
        yield doc["name"], g, None


def corpus_cases(names: tuple[str, ...]) -> Iterator[tuple[str, CostGraph, Baseline]]:
    """Corpus models without fusion under every device profile (TFLite default as reference)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    import build_corpus

    from edgepart.devices.profile import profile_names
    from edgepart.lowering.default_placement import profile_default_baseline
    from edgepart.lowering.from_model import model_costgraph
    from edgepart.tflite.reader import read_model

    out = build_corpus.default_out_dir()
    for name in names:
        model = read_model(build_corpus.ensure(name, out))
        for prof in profile_names():
            problem = model_costgraph(model, prof, fusion=False)
            yield f"{name}@{prof}", problem.graph, profile_default_baseline(problem).baseline


def fiddle_cases(root: str) -> Iterator[tuple[str, CostGraph, Any]]:
    """Tarnawski et al.'s published graphs converted to cost graphs (see the module docstring),
    with their human-expert split (as a placement) where one is published."""
    for sub in ("latency-inputs", "throughput-inputs"):
        base = Path(root) / sub
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.json")):
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            name = f"fiddle:{sub.split('-')[0]}:{path.parent.name}/{path.stem}"
            g = costgraph_from_dict(fiddle_costgraph_doc(doc, path.stem))
            expert = None
            stem = path.stem.replace("_inference", "").replace("_training", "")
            kind = "training" if "training" in path.stem else "inference"
            ex = Path(root) / "human-experts" / f"{stem}_{kind}_expert.json"
            if path.parent.name == "LayerGraphs" and ex.is_file():
                with open(ex, encoding="utf-8") as f:
                    expert = _expert_units(g, json.load(f))
            yield name, g, expert


def _expert_units(g: CostGraph, split: dict[str, Any]) -> np.ndarray | None:
    """A published split (node ids per accelerator; the rest on the CPU) as a placement; None
    when it names nodes the graph does not have (training splits list forward nodes only:
    a backward node then follows its colocation group, or stays on the CPU)."""
    pos = {nid: i for i, nid in enumerate(g.ids)}
    units = np.full(g.num_nodes, int(g.proc_first_unit[0]), dtype=np.int64)
    f0 = int(g.proc_first_unit[1])
    fpgas = split.get("fpgas", [])
    if len(fpgas) > int(g.proc_units[1]):
        return None
    for k, fp in enumerate(fpgas):
        for nid in fp.get("nodes", []):
            if nid not in pos:
                return None
            units[pos[nid]] = f0 + k
    for gi in range(len(g.coloc_names)):
        mem = np.flatnonzero(g.coloc == gi)
        accel = mem[units[mem] != units[mem[0]]]
        if len(accel):
            units[mem] = units[accel[0]]
    return units


def fiddle_costgraph_doc(src: dict[str, Any], name: str) -> dict[str, Any]:
    """A Tarnawski-format instance as a cost graph (see the module docstring).

    Their model: ``maxFPGAs`` accelerators with ``maxSizePerFPGA`` bytes each, ``maxCPUs`` CPU
    cores; per node a CPU and an accelerator latency, support, size, colocation class; per edge
    the time to move the source's output between an accelerator and CPU memory, paid by the
    accelerator that sends or receives it (an accelerator-to-accelerator move pays on both).
    Here: processor ``fpga`` (``maxFPGAs`` units, own memory domain, ``transfers_on_unit``,
    ``single_partition``), processor ``cpu`` (``maxCPUs`` units), links
    ``dram <-> fpga_mem`` and the self-link ``fpga_mem -> fpga_mem`` costing each tensor's
    ``cost`` (given per edge as ``transfer_s``); colocation classes as colocation groups.
    """
    nodes = src["nodes"]
    ids = [nd["id"] for nd in nodes]
    cost: dict[int, float] = {}
    for e in src["edges"]:
        cost[e["sourceId"]] = float(e["cost"])
    classes: dict[Any, list[int]] = {}
    for nd in nodes:
        if "colorClass" in nd:
            classes.setdefault(nd["colorClass"], []).append(nd["id"])
    out_nodes = []
    for nd in nodes:
        lat = {
            "cpu": float(nd["cpuLatency"]) * 1e-3,
            "fpga": float(nd["fpgaLatency"]) * 1e-3 if nd["supportedOnFpga"] else "unsupported",
        }
        item: dict[str, Any] = {
            "id": nd["id"],
            "latency_s": lat,
            "weight_bytes": int(nd.get("size", 0)),
            "output_bytes": 0,
        }
        if nd.get("name"):
            item["name"] = str(nd["name"])
        cc = nd.get("colorClass")
        if cc is not None and len(classes.get(cc, ())) > 1:
            item["colocation"] = f"c{cc}"
        out_nodes.append(item)
    edges = []
    for e in src["edges"]:
        c = cost[e["sourceId"]] * 1e-3
        edges.append(
            {
                "src": e["sourceId"],
                "dst": e["destId"],
                "bytes": 0,
                "transfer_s": {
                    "dram->fpga_mem": c,
                    "fpga_mem->dram": c,
                    "fpga_mem->fpga_mem": c,
                },
            }
        )
    return {
        "format": "edgepart-costgraph",
        "version": 1,
        "name": name,
        "processors": [
            {"name": "cpu", "kind": "cpu", "units": int(src["maxCPUs"]), "memory_domain": "dram"},
            {
                "name": "fpga",
                "kind": "npu",
                "units": int(src["maxFPGAs"]),
                "memory_bytes": int(src["maxSizePerFPGA"]),
                "memory_domain": "fpga_mem",
                "transfers_on_unit": True,
                "single_partition": True,
            },
        ],
        "links": [
            {"src": "dram", "dst": "fpga_mem", "latency_s": 0.0},
            {"src": "fpga_mem", "dst": "fpga_mem", "latency_s": 0.0},
        ],
        "nodes": out_nodes,
        "edges": edges,
        "metadata": {"ids": len(ids)},
    }


def _primary(ev: Any, objective: str) -> float:
    return objective_key(ev, objective)[0]


def run_instance(
    name: str,
    g: CostGraph,
    ref: Baseline | None,
    args: argparse.Namespace,
    expert: np.ndarray | None = None,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": name,
        "nodes": g.num_nodes,
        "edges": g.num_edges,
        "units": g.num_units,
        "processors": g.num_procs,
    }
    adm = admissible(g)
    singles = single_starts(g, adm)
    bl = tflite_baselines(g) + ([ref] if ref is not None else [])
    for objective in ("latency", "throughput"):
        o: dict[str, Any] = {}
        t0 = time.perf_counter()
        sol = partition_costgraph(
            g, "heuristic", SolveOptions(objective=objective), baselines=[ref] if ref else []
        )
        o["default_s"] = time.perf_counter() - t0
        check_evaluation(g, sol.evaluation)
        d_val = _primary(sol.evaluation, objective)
        o["default"] = d_val
        cands = {"default": d_val}
        # baselines: TFLite default(s) and each processor alone (with fallbacks)
        base = ref if ref is not None and ref.feasible else best_baseline(bl, objective)
        o["tflite"] = _primary(base.evaluation, objective) if base is not None else math.inf
        o["single"] = [_primary(evaluate(g, s), objective) for s in singles]
        o["worse_than_single"] = sum(
            d_val > x * (1 + 1e-9) for x in o["single"] if math.isfinite(x)
        )
        o["worse_than_tflite"] = bool(d_val > o["tflite"] * (1 + 1e-9))
        if expert is not None:
            ev_x = evaluate(g, expert)
            o["expert"] = _primary(ev_x, objective) if ev_x.feasible else math.inf
        # long runs
        t1 = time.perf_counter()
        h = solve_heuristic(
            g,
            objective,
            seed=1,
            effort=args.long_effort,
            extra_starts=[("default", sol.units)] + [(b.name, b.units) for b in bl if b.feasible],
        )
        cands["long"] = _primary(h.evaluation, objective)
        o["long_s"] = time.perf_counter() - t1
        best_units = sol.units if d_val <= cands["long"] else h.units
        o["milp"] = None
        bound_extra = -math.inf
        if objective == "latency" and g.num_nodes <= args.milp_max_nodes and args.milp_time > 0:
            r = solve_milp(g, time_limit=args.milp_time, start=best_units)
            o["milp"] = {
                "status": r.status,
                "value": r.evaluation.latency_s if r.evaluation is not None else None,
                "bound": r.bound if r.exact else None,
                "exact": r.exact,
                "seconds": r.seconds,
            }
            if r.evaluation is not None and r.evaluation.feasible:
                cands["milp"] = r.evaluation.latency_s
            if r.exact:
                bound_extra = r.bound
        if objective == "throughput":
            dp = {}
            runs = [(True, args.dp_pairs, ""), (False, args.dp_pairs, "")]
            if g.num_nodes <= args.dp_ext_max_nodes:
                runs += [
                    (True, args.dp_pairs_extended, "-ext"),
                    (False, args.dp_pairs_extended, "-ext"),
                ]
            for count, cap, tag in runs:
                t2 = time.perf_counter()
                plan = plan_stages(
                    g,
                    count_transfers=count,
                    max_pairs=cap,
                    max_ideals=args.dp_ideals,
                    method="ideals",
                )
                if plan is None and not tag:
                    plan = plan_stages(g, count_transfers=count, method="blocks")
                if plan is None:
                    continue
                ev = evaluate(g, plan.units)
                key = ("comm" if count else "nocomm") + tag
                dp[key] = {
                    "method": plan.method,
                    "model_period": plan.period_s,
                    "eval_period": ev.period_s if ev.feasible else math.inf,
                    "pairs": plan.pairs,
                    "seconds": time.perf_counter() - t2,
                }
                if ev.feasible:
                    cands[f"dp-{key}"] = ev.period_s
            o["dp"] = dp
        best = min(cands.values())
        lb = lower_bound(g, objective, time_limit=args.lp_time)
        o["bound_parts"] = lb.parts
        o["bound"] = max(lb.value, bound_extra)
        o["best"] = best
        o["best_by"] = min(cands, key=lambda k: (cands[k], k))
        o["gap_to_best"] = d_val / best - 1.0
        o["gap_to_bound"] = d_val / o["bound"] - 1.0 if o["bound"] > 0 else math.inf
        o["proven"] = bool(best <= o["bound"] * (1 + 1e-6))
        o["default_optimal"] = bool(o["proven"] and d_val <= best * (1 + 1e-9))
        row[objective] = o
    return row


def _bucket(n: int) -> str:
    for lo, hi in BUCKETS:
        if lo <= n < hi:
            return f"{lo}-{hi}"
    return "?"


def _pct(x: float) -> str:
    return "inf" if not math.isfinite(x) else f"{100 * x:.2f}%"


def summarize(rows: list[dict[str, Any]]) -> None:
    print(f"\n== {len(rows)} instances")
    head = (
        f"{'bucket':>10} {'n':>3} | latency: gap-to-best med/worst, proven, default optimal, "
        "gap-to-bound med/worst, time med/max | throughput: gap-to-best med/worst, <= DP, "
        "gap-to-bound med/worst, time med/max"
    )
    print(head)
    for lo, hi in BUCKETS:
        sub = [r for r in rows if lo <= r["nodes"] < hi]
        if not sub:
            continue
        lat = [r["latency"] for r in sub]
        thr = [r["throughput"] for r in sub]
        g1 = [x["gap_to_best"] for x in lat]
        b1 = [x["gap_to_bound"] for x in lat]
        proven = [x for x in lat if x["proven"]]
        opt = sum(x["default_optimal"] for x in proven)
        t1 = [x["default_s"] for x in lat]
        g2 = [x["gap_to_best"] for x in thr]
        b2 = [x["gap_to_bound"] for x in thr]
        t2 = [x["default_s"] for x in thr]
        dp_ok = dp_n = 0
        for x in thr:
            evals = [
                d["eval_period"]
                for k, d in x.get("dp", {}).items()
                if d["method"] == "ideals" and not k.endswith("-ext")
            ]
            if evals:
                dp_n += 1
                dp_ok += x["default"] <= min(evals) * (1 + 1e-9)
        print(
            f"{lo:>4}-{hi:<5} {len(sub):>3} | {_pct(statistics.median(g1))} / {_pct(max(g1))}, "
            f"{len(proven)}, {opt}/{len(proven)}, {_pct(statistics.median(b1))} / "
            f"{_pct(max(b1))}, {statistics.median(t1):.2f}/{max(t1):.2f} s | "
            f"{_pct(statistics.median(g2))} / {_pct(max(g2))}, {dp_ok}/{dp_n}, "
            f"{_pct(statistics.median(b2))} / {_pct(max(b2))}, "
            f"{statistics.median(t2):.2f}/{max(t2):.2f} s"
        )
    for obj in ("latency", "throughput"):
        worse_s = [r["name"] for r in rows if r[obj]["worse_than_single"]]
        worse_t = [r["name"] for r in rows if r[obj]["worse_than_tflite"]]
        print(
            f"{obj}: worse than a processor alone: {len(worse_s)} {worse_s[:4]}; worse than "
            f"TFLite's default: {len(worse_t)} {worse_t[:4]}"
        )
    for ext, label in (("", "default caps"), ("-ext", "extended caps")):
        ideal_rows = []
        for r in rows:
            dp = r["throughput"].get("dp", {})
            ideal = [
                d
                for k, d in dp.items()
                if d["method"] == "ideals" and k.endswith(ext) and (ext or not k.endswith("-ext"))
            ]
            if ideal:
                ideal_rows.append(
                    (r, min(d["model_period"] for d in ideal), min(d["eval_period"] for d in ideal))
                )
        if ideal_rows:
            le_model = sum(r["throughput"]["default"] <= m * (1 + 1e-9) for r, m, _ in ideal_rows)
            le_eval = sum(r["throughput"]["default"] <= e * (1 + 1e-9) for r, _, e in ideal_rows)
            worst = max(r["throughput"]["default"] / e - 1 for r, _, e in ideal_rows)
            print(
                f"throughput vs the exact stage DP over ideals, {label} ({len(ideal_rows)} "
                f"instances where it runs): default <= its optimum (stage model) on "
                f"{le_model}, <= its plan as evaluated on {le_eval}; worst "
                f"{_pct(worst)} above the plan"
            )
    ex = [r for r in rows if "expert" in r["latency"]]
    if ex:
        for obj in ("latency", "throughput"):
            finite = [r for r in ex if math.isfinite(r[obj]["expert"])]
            wins = sum(r[obj]["default"] <= r[obj]["expert"] * (1 + 1e-9) for r in finite)
            print(
                f"{obj}: default at or below the published expert split on {wins} of "
                f"{len(finite)} (scored in edgepart's model; {len(ex) - len(finite)} "
                "infeasible in it)"
            )
    for target in (1000, 10000):
        near = [r for r in rows if abs(r["nodes"] - target) <= 0.1 * target]
        if near:
            ts = [r["latency"]["default_s"] for r in near] + [
                r["throughput"]["default_s"] for r in near
            ]
            print(
                f"default time at ~{target} nodes ({len(near)} graphs x 2 objectives): "
                f"median {statistics.median(ts):.2f} s, max {max(ts):.2f} s"
            )


def timing(specs: list[dict[str, Any]]) -> int:
    """Default-settings time near 1,000 and 10,000 nodes, with the load average.

    Wall time and the process's CPU time are both printed: on a shared host the wall time
    grows with the load, while the CPU time is close to what a quiet host's wall time would
    be (the default search is single-threaded)."""
    near = [s for s in specs if s["nodes"] in (1000, 10000)]
    out: dict[int, list[tuple[float, float]]] = {1000: [], 10000: []}
    for name, g, _ in synthetic_cases(near):
        for objective in ("latency", "throughput"):
            load0 = os.getloadavg()[0]
            t0, c0 = time.perf_counter(), time.process_time()
            partition_costgraph(g, "heuristic", SolveOptions(objective=objective))
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            size = 1000 if g.num_nodes < 5000 else 10000
            out[size].append((dt, dc))
            print(
                f"{name:>40} {objective:>10}: wall {dt:6.2f} s, CPU {dc:6.2f} s (load average "
                f"{load0:.1f} before, {os.getloadavg()[0]:.1f} after)",
                flush=True,
            )
    for size, ts in out.items():
        if ts:
            limit = 2.0 if size == 1000 else 20.0
            for i, label in ((0, "wall"), (1, "CPU")):
                v = [t[i] for t in ts]
                print(
                    f"~{size} nodes, {label}: median {statistics.median(v):.2f} s, max "
                    f"{max(v):.2f} s (limit {limit:g} s; {sum(t <= limit for t in v)}/{len(v)} "
                    "within)"
                )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="sizes up to 1,000 and no corpus")
    ap.add_argument("--only", help="run instances whose name contains this")
    ap.add_argument("--min-nodes", type=int, default=0, help="skip smaller graphs")
    ap.add_argument("--max-nodes", type=int, default=10**9, help="skip larger graphs")
    ap.add_argument("--no-corpus", action="store_true")
    ap.add_argument("--corpus", nargs="*", default=["ops_300", "big_graph_4k"])
    ap.add_argument("--fiddle", help="directory of msr-fiddle/dnn-partitioning (user-fetched)")
    ap.add_argument("--long-effort", type=float, default=6.0)
    ap.add_argument("--milp-time", type=float, default=90.0)
    ap.add_argument("--milp-max-nodes", type=int, default=1200)
    ap.add_argument("--dp-pairs", type=int, default=30_000, help="the stage DP's default cap")
    ap.add_argument("--dp-pairs-extended", type=int, default=400_000)
    ap.add_argument("--dp-ext-max-nodes", type=int, default=2500)
    ap.add_argument("--dp-ideals", type=int, default=3000)
    ap.add_argument("--lp-time", type=float, default=60.0)
    ap.add_argument("--json", help="append one JSON row per instance here")
    ap.add_argument("--resume", action="store_true", help="skip instances already in --json")
    ap.add_argument("--summary-only", action="store_true", help="summarize --json and exit")
    ap.add_argument(
        "--timing",
        action="store_true",
        help="only time the default solver on the graphs of about 1,000 and 10,000 nodes",
    )
    args = ap.parse_args(argv)
    done: dict[str, dict[str, Any]] = {}
    if args.json and (args.resume or args.summary_only) and os.path.exists(args.json):
        with open(args.json, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                done[r["name"]] = r
    if args.summary_only:
        summarize(list(done.values()))
        return 0
    print(f"host: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    specs = synthetic_specs()
    if args.quick:
        specs = [s for s in specs if s["nodes"] <= 1000]
    cases: list[Iterator[tuple[str, CostGraph, Any]]] = [synthetic_cases(specs)]
    if not args.no_corpus and not args.quick:
        cases.append(corpus_cases(tuple(args.corpus)))
    if args.fiddle:
        cases.append(fiddle_cases(args.fiddle))
    if args.timing:
        return timing(specs)
    rows = list(done.values())
    for it in cases:
        for name, g, ref in it:
            if args.only and args.only not in name:
                continue
            if not args.min_nodes <= g.num_nodes <= args.max_nodes:
                continue
            if name in done:
                continue
            t0 = time.perf_counter()
            r = run_instance(
                name,
                g,
                ref if isinstance(ref, Baseline) else None,
                args,
                ref if isinstance(ref, np.ndarray) else None,
            )
            r["wall_s"] = time.perf_counter() - t0
            r["load"] = os.getloadavg()[0]
            rows.append(r)
            lat, thr = r["latency"], r["throughput"]
            print(
                f"{name:>44} n={r['nodes']:>5} u={r['units']:>2} | lat gap "
                f"{_pct(lat['gap_to_best'])} (best {lat['best_by']}"
                f"{', proven' if lat['proven'] else ''}) bound gap "
                f"{_pct(lat['gap_to_bound'])} {lat['default_s']:.2f}s | thr gap "
                f"{_pct(thr['gap_to_best'])} (best {thr['best_by']}) bound gap "
                f"{_pct(thr['gap_to_bound'])} {thr['default_s']:.2f}s | load {r['load']:.1f}",
                flush=True,
            )
            if args.json:
                with open(args.json, "a", encoding="utf-8") as f:
                    f.write(json.dumps(r, sort_keys=True, default=float) + "\n")
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    summarize(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
