"""Placement quality: heuristic vs exact optimum vs TFLite's default placement, in one run.

Instances: seeded random DNN-shaped cost graphs (``edgepart.placement.synth``), 10-40 fused nodes,
2-4 processors, random support gaps, dispatch overheads, link costs, sometimes a memory-limited
accelerator. For each instance, under the latency objective (or ``--objective``):

* baseline: the best TFLite default placement (one delegate + CPU, or CPU only);
* heuristic: ``solve_heuristic`` with the baselines among its starts;
* exact: branch and bound with a time limit, seeded with the heuristic and the baselines.

Printed: mean and worst gap of the heuristic to the exact result (over instances where the exact
solver proved optimality, and over all), the share proven optimal, the geometric-mean speedup of
the heuristic and of the exact plan over the baseline (overall and per processor count), the
number of instances where the heuristic is slower than the baseline (must be 0), and timings.

Targets (issue 5): mean gap <= 1 %, worst <= 3 %, never slower than the baseline.

Second part: the fused corpus models (``tools/build_corpus.py``, the default corpus) under every
device profile in ``device_profiles/``: each model's main subgraph becomes a cost graph
(``edgepart.lowering.from_model``: exact claim rules, the cost model's roofline estimates
since no phone was measured, the fusion pre-pass), and the same three solvers run, the baseline
being TFLite's default placement on that device (the profile's default delegates then XNNPACK,
from the exact claim model). The exact solver runs on every instance with its time limit; the
printout says which instances it proved. Printed per device profile: the geometric-mean speedup
of the heuristic (and exact) plan over the TFLite default. These are predictions of the cost
model with estimated device numbers, not measurements on the devices.

Usage::

    python benchmarks/partition_quality.py [--instances 200] [--time-limit 20]
        [--corpus-time-limit 20] [--no-corpus] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from edgepart.placement.baseline import Baseline, best_baseline, tflite_baselines
from edgepart.placement.costgraph import CostGraph, costgraph_from_dict
from edgepart.placement.evaluate import objective_key
from edgepart.placement.exact import solve_exact
from edgepart.placement.heuristic import solve_heuristic
from edgepart.placement.placement_check import check_evaluation
from edgepart.placement.synth import random_costgraph_doc


def synthetic_cases(count: int, seed: int) -> Iterator[tuple[str, CostGraph]]:
    for i in range(count):
        rng = np.random.default_rng([seed, i])
        n = int(rng.integers(10, 41))
        procs = int(rng.integers(2, 5))
        doc = random_costgraph_doc(
            n,
            procs,
            seed * 100_000 + i,
            memory_pressure=bool(rng.random() < 0.2),
            colocation=bool(rng.random() < 0.1),
        )
        yield f"synthetic-{i}", costgraph_from_dict(doc)


def corpus_cases() -> Iterator[tuple[str, CostGraph, Baseline]]:
    """Fused corpus models under every device profile, with TFLite's default as the baseline.

    Yields ``(f"{model}@{profile}", cost_graph, tflite_default)``.
    """
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    import build_corpus

    from edgepart.devices.profile import profile_names
    from edgepart.lowering.default_placement import profile_default_baseline
    from edgepart.lowering.from_model import model_costgraph
    from edgepart.tflite.reader import read_model

    out = build_corpus.default_out_dir()
    for name in build_corpus.default_names():
        model = read_model(build_corpus.ensure(name, out))
        for prof in profile_names():
            problem = model_costgraph(model, prof)
            yield f"{name}@{prof}", problem.graph, profile_default_baseline(problem).baseline


def run_instance(
    name: str,
    g: CostGraph,
    objective: str,
    time_limit: float,
    reference: Baseline | None = None,
) -> dict[str, Any]:
    bl = tflite_baselines(g) + ([reference] if reference is not None else [])
    base = best_baseline(bl, objective)
    if reference is not None and reference.feasible:
        base = reference
    t0 = time.perf_counter()
    h = solve_heuristic(g, objective, extra_starts=[(b.name, b.units) for b in bl if b.feasible])
    t1 = time.perf_counter()
    inc = [h.units] + [b.units for b in bl if b.feasible]
    ex = solve_exact(g, objective, time_limit=time_limit, incumbents=inc)
    for ev in (h.evaluation, ex.evaluation):
        check_evaluation(g, ev)
    hk = objective_key(h.evaluation, objective)[0]
    ek = objective_key(ex.evaluation, objective)[0]
    bk = objective_key(base.evaluation, objective)[0] if base is not None else math.nan
    if hk < ek * (1 - 1e-9):
        raise AssertionError(f"{name}: heuristic {hk} beats the exact result {ek}: exact is wrong")
    return {
        "name": name,
        "profile": name.split("@")[1] if "@" in name else None,
        "nodes": g.num_nodes,
        "processors": g.num_procs,
        "baseline": base.name if base is not None else None,
        "baseline_s": bk,
        "heuristic_s": hk,
        "exact_s": ek,
        "proven": ex.optimal,
        "gap": hk / ek - 1.0,
        "heuristic_time_s": t1 - t0,
        "exact_time_s": ex.seconds,
        "exact_nodes": ex.nodes_explored,
    }


def _geo(xs: list[float]) -> float:
    return float(math.exp(statistics.fmean(math.log(x) for x in xs))) if xs else math.nan


def summarize(rows: list[dict[str, Any]], label: str) -> None:
    proven = [r for r in rows if r["proven"]]
    gaps_p = [r["gap"] for r in proven]
    gaps = [r["gap"] for r in rows]
    with_base = [r for r in rows if not math.isnan(r["baseline_s"])]
    slower = [r["name"] for r in with_base if r["heuristic_s"] > r["baseline_s"] * (1 + 1e-12)]
    print(f"== {label}: {len(rows)} instances")
    print(
        f"   proven optimal: {len(proven)}/{len(rows)} "
        f"({100 * len(proven) / max(1, len(rows)):.1f} %)"
    )
    if gaps_p:
        print(
            f"   heuristic gap to proven optimum: mean {100 * statistics.fmean(gaps_p):.3f} %, "
            f"worst {100 * max(gaps_p):.3f} %, median {100 * statistics.median(gaps_p):.3f} %, "
            f"zero-gap share {100 * sum(x < 1e-9 for x in gaps_p) / len(gaps_p):.1f} %"
        )
    print(
        f"   heuristic gap to best known (all): mean {100 * statistics.fmean(gaps):.3f} %, "
        f"worst {100 * max(gaps):.3f} %"
    )
    print(
        f"   geo-mean speedup over TFLite default: heuristic "
        f"{_geo([r['baseline_s'] / r['heuristic_s'] for r in with_base]):.3f}x, exact "
        f"{_geo([r['baseline_s'] / r['exact_s'] for r in with_base]):.3f}x"
    )
    by = "profile" if any(r.get("profile") for r in with_base) else "processors"
    for p in sorted({r[by] for r in with_base}):
        sub = [r for r in with_base if r[by] == p]
        label = f"{p} processors" if by == "processors" else f"profile {p}"
        print(
            f"     {label} ({len(sub)}): heuristic "
            f"{_geo([r['baseline_s'] / r['heuristic_s'] for r in sub]):.3f}x, exact "
            f"{_geo([r['baseline_s'] / r['exact_s'] for r in sub]):.3f}x"
        )
    print(f"   slower than baseline: {len(slower)} {slower[:5]}")
    ht = [r["heuristic_time_s"] for r in rows]
    et = [r["exact_time_s"] for r in rows]
    print(
        f"   time per instance: heuristic median {statistics.median(ht):.3f} s (max {max(ht):.2f}),"
        f" exact median {statistics.median(et):.3f} s (max {max(et):.2f})"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=20.0, help="exact solver, per instance")
    ap.add_argument(
        "--corpus-time-limit", type=float, default=20.0, help="exact solver, per corpus instance"
    )
    ap.add_argument("--no-corpus", action="store_true", help="skip the corpus part")
    ap.add_argument("--objective", choices=("latency", "throughput"), default="latency")
    ap.add_argument("--json", help="write per-instance rows here")
    args = ap.parse_args(argv)
    rows = []
    t0 = time.perf_counter()
    for name, g in synthetic_cases(args.instances, args.seed):
        r = run_instance(name, g, args.objective, args.time_limit)
        rows.append(r)
        print(
            f"{name:>14} n={r['nodes']:>2} p={r['processors']} gap {100 * r['gap']:6.3f} % "
            f"{'proven' if r['proven'] else 'UNPROVEN'} speedup "
            f"{r['baseline_s'] / r['heuristic_s']:.3f}x ({r['baseline']})",
            flush=True,
        )
    print(
        f"objective {args.objective}, seed {args.seed}, exact time limit {args.time_limit:g} s, "
        f"wall {time.perf_counter() - t0:.0f} s"
    )
    if rows:
        summarize(rows, "synthetic DNN-shaped DAGs")
    corpus = []
    if not args.no_corpus:
        t1 = time.perf_counter()
        for n, g, ref in corpus_cases():
            r = run_instance(n, g, args.objective, args.corpus_time_limit, ref)
            corpus.append(r)
            print(
                f"{n:>38} nodes={r['nodes']:>3} gap {100 * r['gap']:6.3f} % "
                f"{'proven' if r['proven'] else 'UNPROVEN'} speedup "
                f"{r['baseline_s'] / r['heuristic_s']:.3f}x over {r['baseline']} "
                f"(heuristic {r['heuristic_time_s']:.2f} s, exact {r['exact_time_s']:.2f} s)",
                flush=True,
            )
        print(
            f"corpus: exact time limit {args.corpus_time_limit:g} s, "
            f"wall {time.perf_counter() - t1:.0f} s; latencies are cost-model predictions "
            "(roofline with estimated profile numbers), not device measurements"
        )
        summarize(corpus, "fused corpus models x device profiles")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"args": vars(args), "rows": rows + corpus}, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
