"""Static arena planner benchmark: peak / lower bound of the TFLite baseline, portfolio, search.

Three parts, all in one run, results printed as tables and written as JSON (sorted keys):

1. *Hard instances*: a full ``T x M`` rectangle (time x memory, memory in 64-byte units) is cut
   by random guillotine cuts into 150-450 pieces; each piece is a buffer. Every time step is
   fully covered, so the lower bound equals ``M * 64`` and is reachable by construction.
   Reported: the share solved at the lower bound by the TFLite baseline, the portfolio, and
   the search with a 1 s and a long (default 60 s) budget per instance, plus median ratios.
2. *Scale*: planning 10,000 buffers with the default settings (median of repeats), random
   model-like lifetimes.
3. *Corpus models*, single partition per subgraph (main subgraph reported), TFLite lifetimes.

Usage::

    python benchmarks/arena.py                       # full run (long budget 60 s)
    python benchmarks/arena.py --quick               # 20 instances, long budget 5 s
    python benchmarks/arena.py --instances 100 --long 60 --jobs 2 --json arena.json
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

from edgepart.memory import MemoryProblem, check_plan, plan_arena  # noqa: E402

CORPUS = [
    "mobilenet_v2",
    "mobilenet_v2_int8",
    "mobilenet_v2_dynamic",
    "mobilenet_v2_fp16",
    "sparse_mlp",
    "custom_op",
    "cond",
    "while_loop",
    "resource_vars",
    "lstm",
    "transformer",
    "dynamic_batch",
    "multi_signature",
    "densenet_tiny",
]
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
    import build_corpus

    from edgepart.memory.model import model_buffers

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
    ap.add_argument("--skip", nargs="*", default=[], choices=["hard", "scale", "corpus"])
    ap.add_argument("--json", type=Path, default=Path("arena.json"), help="write results here")
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
        print(
            "Partitioned plans (per-partition and global): not run here; they need the"
            " partitioner's plan format (see edgepart/memory docs)."
        )
    args.json.write_text(json.dumps(result, sort_keys=True, indent=1) + "\n")
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
