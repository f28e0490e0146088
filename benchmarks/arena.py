"""Static arena planner benchmark: peak / lower bound of the TFLite baseline, portfolio, search.

Four parts, all in one run, results printed as tables and written as JSON (sorted keys):

1. *Hard instances*: a full ``T x M`` rectangle (time x memory, memory in 64-byte units) is cut
   by random guillotine cuts into 150-450 pieces; each piece is a buffer. Every time step is
   fully covered, so the lower bound equals ``M * 64`` and is reachable by construction.
   Reported: the share solved at the lower bound by the TFLite baseline, the portfolio, and
   the search with a 1 s and a long (default 60 s) budget per instance, plus median ratios.
2. *Scale*: planning 10,000 buffers with the default settings (median of repeats), random
   model-like lifetimes.
3. *Corpus models*, single partition per subgraph (main subgraph reported), TFLite lifetimes.
4. *Partitioned corpus models*: every corpus model partitioned by the partitioner under two
   phone profiles (default ``pixel8`` and ``vivo_x100_pro``; the int8 models also under
   ``coral_devboard``) in four modes: the partitioner's own latency plan, its throughput
   (pipelining) plan, a forced ``--edge-cut 3`` split, and TFLite's default placement. The
   profiles' cost estimates keep the latency plan on one processor for these small models, so
   the other three modes are what produce multi-partition plans. Per memory domain: the
   per-partition arenas (each partition alone, as its own TFLite interpreter; summed) and the
   global arena across partitions (:mod:`edgepart.memory.partitioned`), peak / lower bound
   for the TFLite baseline, the portfolio and the search.

Usage::

    python benchmarks/arena.py                       # full run (long budget 60 s)
    python benchmarks/arena.py --quick               # 20 instances, long budget 5 s
    python benchmarks/arena.py --instances 100 --long 60 --jobs 2 --json arena.json
    python benchmarks/arena.py --skip hard scale corpus   # only the partitioned part
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import build_corpus  # noqa: E402

from edgepart.memory import MemoryProblem, check_plan, plan_arena  # noqa: E402

CORPUS = build_corpus.default_names()  # densenet_tiny included: long-lived concat inputs

CORPUS_ON_DEMAND = ["resnet50", "ops_300", "mobilenet_v2_224", "big_graph_4k"]


def cut_rectangle(seed: int, n: int, t: int, m: int, unit: int = 64) -> MemoryProblem:
    """``n`` buffers from random guillotine cuts of a full ``t x m`` rectangle (tight bound)."""
    rng = np.random.default_rng(seed)
    pieces = [(0, t, 0, m)]
    while len(pieces) < n:
        areas = np.array([(p[1] - p[0]) * (p[3] - p[2]) for p in pieces], dtype=float)
        k = int(rng.choice(len(pieces), p=areas / areas.sum()))
        t0, t1, m0, m1 = pieces[k]
        can_t, can_m = t1 - t0 > 1, m1 - m0 > 1
        if not (can_t or can_m):
            continue
        if can_t and (not can_m or rng.random() < 0.5):
            c = int(rng.integers(t0 + 1, t1))
            pieces[k : k + 1] = [(t0, c, m0, m1), (c, t1, m0, m1)]
        else:
            c = int(rng.integers(m0 + 1, m1))
            pieces[k : k + 1] = [(t0, t1, m0, c), (t0, t1, c, m1)]
    perm = rng.permutation(len(pieces))
    return MemoryProblem.from_arrays(
        ids=[f"b{i}" for i in range(n)],
        lower=[pieces[i][0] for i in perm],
        upper=[pieces[i][1] for i in perm],
        size=[(pieces[i][3] - pieces[i][2]) * unit for i in perm],
    )


def _hard_one(args: tuple[int, int, float, int, int]) -> dict[str, Any]:
    seed, n, long_budget, t, m = args
    p = cut_rectangle(seed, n, t, m)
    row: dict[str, Any] = {"seed": seed, "buffers": n}
    for name, strategy, limit in (
        ("tflite", "tflite", None),
        ("portfolio", "portfolio", None),
        ("search_1s", "search", 1.0),
        ("search_long", "search", long_budget),
    ):
        t0 = time.perf_counter()
        plan = plan_arena(p, strategy=strategy, time_limit=limit)
        took = time.perf_counter() - t0
        check_plan(p, plan.offsets)
        r = plan.arenas["default"]
        row[name] = {
            "peak": r.size,
            "ratio": r.ratio,
            "at_bound": r.size == r.lower_bound,
            "seconds": took,
            "stopped_by": r.stopped_by,
        }
        row["lower_bound"] = r.lower_bound
    return row


def hard_instances(count: int, long_budget: float, jobs: int, t: int, m: int) -> dict[str, Any]:
    rng = np.random.default_rng(12345)
    sizes = rng.integers(150, 451, count).tolist()
    work = [(seed, n, long_budget, t, m) for seed, n in enumerate(sizes)]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            rows = list(pool.map(_hard_one, work))
    else:
        rows = [_hard_one(w) for w in work]
    summary = {}
    for key in ("tflite", "portfolio", "search_1s", "search_long"):
        ratios = [r[key]["ratio"] for r in rows]
        summary[key] = {
            "share_at_bound": sum(r[key]["at_bound"] for r in rows) / len(rows),
            "median_ratio": statistics.median(ratios),
            "max_ratio": max(ratios),
            "median_seconds": statistics.median(r[key]["seconds"] for r in rows),
        }
    return {"grid": [t, m], "long_budget_s": long_budget, "instances": rows, "summary": summary}


def scale(n: int, repeats: int) -> dict[str, Any]:
    """Default-settings planning time for ``n`` buffers with model-like random lifetimes."""
    rng = np.random.default_rng(0)
    lo = np.sort(rng.integers(0, n, n))
    length = np.minimum(rng.geometric(1 / 20, n), n - lo + 5)
    size = np.exp(rng.uniform(np.log(1e3), np.log(1e6), n)).astype(np.int64)
    out: dict[str, Any] = {"buffers": n}
    for strategy in ("tflite", "portfolio", "search"):
        times, ratios = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            p = MemoryProblem.from_arrays(ids=range(n), lower=lo, upper=lo + length, size=size)
            plan = plan_arena(p, strategy=strategy)  # default time limit
            times.append(time.perf_counter() - t0)
            ratios.append(plan.arenas["default"].ratio)
        out[strategy] = {
            "median_seconds": statistics.median(times),
            "max_seconds": max(times),
            "ratio": ratios[-1],
        }
    return out


def corpus(names: list[str], budget: float) -> list[dict[str, Any]]:
    from edgepart.memory.model_problem import model_buffers

    rows = []
    for name in names:
        path = build_corpus.ensure(name, build_corpus.default_out_dir())
        mb = model_buffers(path, subgraphs=[0])
        row: dict[str, Any] = {"model": name, "buffers": int((mb.problem.memory == 0).sum())}
        for strategy in ("tflite", "portfolio", "search"):
            t0 = time.perf_counter()
            plan = plan_arena(mb.problem, strategy=strategy, time_limit=budget)
            r = plan.arenas["sg0"]
            row[strategy] = {"peak": r.size, "ratio": r.ratio, "seconds": time.perf_counter() - t0}
            row["lower_bound"] = r.lower_bound
            row["naive"] = r.naive
        rows.append(row)
    return rows


PROFILES = ["pixel8", "vivo_x100_pro"]
INT8_PROFILES = ["coral_devboard"]  # only int8 models can use the Edge TPU
MODES = ["latency", "throughput", "edge-cut-3", "tflite-default"]
STRATEGIES = ("tflite", "portfolio", "search")


def _placements(model: Any, profile: str, modes: list[str]) -> dict[str, tuple[Any, Any]]:
    """``mode -> (model problem, evaluation)`` from the partitioner's API."""
    from edgepart.lowering.default_placement import profile_default_baseline
    from edgepart.lowering.from_model import model_costgraph
    from edgepart.placement.solve import SolveOptions, partition_costgraph

    problem = model_costgraph(model, profile)
    default = profile_default_baseline(problem)
    solvers = {
        "latency": ("heuristic", SolveOptions()),
        "throughput": ("heuristic", SolveOptions(objective="throughput")),
        "edge-cut-3": ("edge-cut", SolveOptions(edge_cut_k=3)),
    }
    out = {}
    for mode in modes:
        if mode == "tflite-default":
            out[mode] = (problem, default.baseline.evaluation)
        else:
            method, opts = solvers[mode]
            sol = partition_costgraph(problem.graph, method, opts, reference=default.baseline)
            out[mode] = (problem, sol.evaluation)
    return out


def _partitioned_row(problem: Any, ev: Any, budget: float) -> dict[str, Any]:
    from edgepart.bundle import build_bundle, plan_bundle_arena
    from edgepart.deploy.apply import partition_specs, placed_partitions
    from edgepart.memory.global_plan import plan_partitioned

    parts = placed_partitions(problem, ev)
    bundle = build_bundle(
        problem.model,
        partition_specs(problem, ev, parts),
        subgraph=problem.subgraph,
        profile=problem.profile,
    )
    sg = problem.model.subgraphs[problem.subgraph]
    # the partitioner's buffers (what arena.json plans); each strategy is timed on them below
    pb = plan_bundle_arena(bundle, source=sg, profile=problem.profile).buffers
    assert pb is not None
    row: dict[str, Any] = {
        "partitions": len(parts),
        "units": [p.unit for p in pb.partitions],
        "concurrent_pairs": len(pb.concurrent),
        "global_buffers": len(pb.problem),
        "memories": {},
    }
    mems: dict[str, dict[str, Any]] = row["memories"]
    for s in STRATEGIES:
        t0 = time.perf_counter()
        plan = plan_partitioned(pb, strategy=s, time_limit=budget)
        took = time.perf_counter() - t0
        check_plan(pb.problem, plan.global_plan.offsets)  # again, independently of the planner
        for prob, pp in zip(pb.partition_problems, plan.partition_plans.values(), strict=True):
            check_plan(prob, pp.offsets)
        for c in plan.memories():
            m = mems.setdefault(
                c.memory,
                {
                    "partitions": c.partitions,
                    "per_partition_bound": c.per_partition_bound,
                    "global_bound": c.global_bound,
                    "per_partition": {},
                    "global": {},
                },
            )
            m["per_partition"][s] = c.per_partition_size
            m["global"][s] = c.global_size
        row.setdefault("seconds", {})[s] = took
    return row


BRANCHY = {  # the partitioner's test model (tests/deploy/pmodels.py): concurrent branches
    "branchy_2x4": {"width": 1024, "depth": 4, "branches": 2},
    "branchy_4x4": {"width": 1024, "depth": 4, "branches": 4},
    "branchy_3x6": {"width": 2048, "depth": 6, "branches": 3},
}


def partitioned(
    names: list[str], profiles: list[str], modes: list[str], budget: float
) -> list[dict[str, Any]]:
    """Per-partition and global plans of every model under every profile and mode, then the
    branchy models (latency and throughput plans) whose branches the partitioner runs
    concurrently on different units."""
    from edgepart.tflite.reader import read_model

    models: list[tuple[str, Any, list[str], list[str]]] = []
    for name in names:
        path = build_corpus.ensure(name, build_corpus.default_out_dir())
        profs = profiles + (INT8_PROFILES if "int8" in name else [])
        models.append((name, read_model(path), profs, modes))
    sys.path.insert(0, str(ROOT / "tests" / "deploy"))
    from pmodels import branchy_fp32

    for name, kw in BRANCHY.items():
        own = [m for m in modes if m in ("latency", "throughput")]
        models.append((name, branchy_fp32(**kw), profiles, own))
    rows = []
    for name, model, profs, ms in models:
        for prof in profs:
            for mode, (problem, ev) in _placements(model, prof, ms).items():
                row = _partitioned_row(problem, ev, budget)
                rows.append({"model": name, "profile": prof, "mode": mode, **row})
                _print_partitioned(rows[-1])
    return rows


def _r(size: int, bound: int) -> str:
    return f"{size / bound:.3f}" if bound else "  -  "


def _print_partitioned(r: dict[str, Any]) -> None:
    for mem, m in sorted(r["memories"].items()):
        pp, gl = m["per_partition"], m["global"]
        per = " ".join(f"{_r(pp[s], m['per_partition_bound']):>6}" for s in STRATEGIES)
        glo = " ".join(f"{_r(gl[s], m['global_bound']):>6}" for s in STRATEGIES)
        vs = f"{gl['search'] / pp['search']:.3f}" if pp["search"] else "  -  "
        print(
            f"{r['model']:<21}{r['profile']:<15}{r['mode']:<15}{r['partitions']:>5}"
            f"{r['concurrent_pairs']:>3} {mem:<12}{m['partitions']:>3}"
            f"{m['per_partition_bound']:>11,} {per} {m['global_bound']:>11,} {glo} {vs:>7}",
            flush=True,
        )


def _partitioned_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    cells = [(r, mem, m) for r in rows for mem, m in r["memories"].items()]
    multi = [c for c in cells if c[0]["partitions"] >= 2]
    shared = [c for c in multi if c[2]["partitions"] >= 2]
    worse = [
        f"{r['model']}/{r['profile']}/{r['mode']}/{mem}"
        for r, mem, m in cells
        for kind in ("per_partition", "global")
        if not m[kind]["search"] <= m[kind]["portfolio"] <= m[kind]["tflite"]
    ]

    def ratios(kind: str, s: str, group: list[Any]) -> list[float]:
        bound = "per_partition_bound" if kind == "per_partition" else "global_bound"
        return [m[kind][s] / m[bound] for _, _, m in group if m[bound]]

    out: dict[str, Any] = {
        "plans": len(rows),
        "multi_partition_plans": len({id(c[0]) for c in multi}),
        "shared_memories": len(shared),
        "shared_global_smaller": sum(
            m["global"]["search"] < m["per_partition"]["search"] for _, _, m in shared
        ),
        "shared_global_not_larger": sum(
            m["global"]["search"] <= m["per_partition"]["search"] for _, _, m in shared
        ),
        "shared_global_over_per_partition_median": statistics.median(
            [m["global"]["search"] / m["per_partition"]["search"] for _, _, m in shared]
        )
        if shared
        else None,
        "worse_than_baseline": worse,
    }
    for kind in ("per_partition", "global"):
        for s in STRATEGIES:
            rs = ratios(kind, s, multi)
            out[f"{kind}_{s}"] = {
                "at_bound": sum(x <= 1.0 for x in rs) / len(rs) if rs else None,
                "max_ratio": max(rs) if rs else None,
                "median_ratio": statistics.median(rs) if rs else None,
            }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", type=int, default=100)
    ap.add_argument("--long", type=float, default=60.0, help="long search budget per instance (s)")
    ap.add_argument("--grid", type=int, nargs=2, default=(64, 256), metavar=("T", "M"))
    ap.add_argument("--jobs", type=int, default=1, help="parallel instances (one core each)")
    ap.add_argument("--scale", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--corpus-budget", type=float, default=5.0)
    ap.add_argument("--on-demand", action="store_true", help="also the large on-demand models")
    ap.add_argument("--quick", action="store_true", help="20 instances, 5 s long budget")
    ap.add_argument(
        "--skip", nargs="*", default=[], choices=["hard", "scale", "corpus", "partitioned"]
    )
    ap.add_argument("--profiles", nargs="+", default=PROFILES, help="partitioned part")
    ap.add_argument("--modes", nargs="+", default=MODES, choices=MODES, help="partitioned part")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here as JSON")
    args = ap.parse_args()
    if args.quick:
        args.instances, args.long = 20, 5.0
    result: dict[str, Any] = {}
    if "hard" not in args.skip:
        hard = hard_instances(args.instances, args.long, args.jobs, *args.grid)
        result["hard"] = hard
        print(
            f"\nHard instances: {args.instances} cut rectangles, grid {args.grid[0]}x"
            f"{args.grid[1]} (64-byte units), 150-450 buffers, bound tight by construction"
        )
        print(f"{'strategy':<14}{'at bound':>10}{'median peak/LB':>16}{'max':>8}{'median s':>10}")
        for key, label in (
            ("tflite", "tflite"),
            ("portfolio", "portfolio"),
            ("search_1s", "search 1 s"),
            ("search_long", f"search {args.long:g} s"),
        ):
            s = hard["summary"][key]
            print(
                f"{label:<14}{s['share_at_bound']:>10.0%}{s['median_ratio']:>16.4f}"
                f"{s['max_ratio']:>8.3f}{s['median_seconds']:>10.2f}"
            )
    if "scale" not in args.skip:
        sc = scale(args.scale, args.repeats)
        result["scale"] = sc
        print(f"\nScale: {args.scale:,} buffers, default settings (median of {args.repeats})")
        for strategy in ("tflite", "portfolio", "search"):
            s = sc[strategy]
            print(
                f"{strategy:<10} {s['median_seconds']:.3f} s (max {s['max_seconds']:.3f}),"
                f" peak/LB {s['ratio']:.4f}"
            )
    if "corpus" not in args.skip:
        names = CORPUS + (CORPUS_ON_DEMAND if args.on_demand else [])
        rows = corpus(names, args.corpus_budget)
        result["corpus"] = rows
        print("\nCorpus models, single partition (subgraph 0), TFLite lifetimes")
        print(
            f"{'model':<22}{'buffers':>8}{'bound B':>12}{'tflite':>8}{'portf.':>8}"
            f"{'search':>8}{'naive/LB':>9}"
        )
        for r in rows:
            print(
                f"{r['model']:<22}{r['buffers']:>8}{r['lower_bound']:>12,}"
                f"{r['tflite']['ratio']:>8.3f}{r['portfolio']['ratio']:>8.3f}"
                f"{r['search']['ratio']:>8.3f}{r['naive'] / max(r['lower_bound'], 1):>9.2f}"
            )
    if "partitioned" not in args.skip:
        names = CORPUS + (CORPUS_ON_DEMAND if args.on_demand else [])
        print(
            "\nPartitioned corpus models: per memory, per-partition arenas (summed) and the global"
            " arena, peak / lower bound\n(parts = partitions, cc = concurrent pairs, mp = "
            "partitions using the memory; global/pp = global / per-partition, search)"
        )
        print(
            f"{'model':<21}{'profile':<15}{'mode':<15}{'parts':>5}{'cc':>3} {'memory':<12}"
            f"{'mp':>3}{'pp bound':>11} {'tflite':>6} {'portf.':>6} {'search':>6}"
            f"{'gl bound':>12} {'tflite':>6} {'portf.':>6} {'search':>6} {'gl/pp':>7}"
        )
        rows = partitioned(names, args.profiles, args.modes, args.corpus_budget)
        summ = _partitioned_summary(rows)
        result["partitioned"] = {"rows": rows, "summary": summ}
        print(
            f"\n{summ['plans']} plans, {summ['multi_partition_plans']} with 2+ partitions; "
            f"{summ['shared_memories']} (plan, memory) pairs shared by 2+ partitions: global "
            f"smaller than the per-partition sum in {summ['shared_global_smaller']}, not larger "
            f"in {summ['shared_global_not_larger']}, median global/per-partition "
            f"{summ['shared_global_over_per_partition_median']}"
        )
        for kind in ("per_partition", "global"):
            for s in STRATEGIES:
                x = summ[f"{kind}_{s}"]
                if x["at_bound"] is None:
                    continue
                print(
                    f"  {kind:<14}{s:<10} at bound {x['at_bound']:>6.1%}  median peak/LB "
                    f"{x['median_ratio']:.4f}  max {x['max_ratio']:.4f}  (multi-partition plans)"
                )
        print(f"  worse than the baseline: {summ['worse_than_baseline'] or 'none'}")
    if args.json is not None:
        args.json.write_text(json.dumps(result, sort_keys=True, indent=1) + "\n")
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
