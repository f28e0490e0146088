"""Heuristic placement speed on generated graphs of 1,000 / 10,000 / 100,000 nodes, 4 processors.

For each size: generate a seeded DNN-shaped cost graph (``edgepart.partition.synth``) with a CPU,
GPU, NPU and DSP, load it through the validating loader, then time (median of ``--repeat`` runs
for sizes up to 10,000, one run above):

* ``heuristic``: ``solve_heuristic`` (admissibility, Band units, chain DP, greedy start,
  single-processor starts, local search with its size-scaled evaluation budget), the figure the
  targets apply to (issue 5: <= 1 s at 10,000 and <= 10 s at 100,000 nodes);
* reference tools in the same run: computing TFLite's default placements (the baselines) and
  METIS 4-way via ``pymetis`` (when installed), plus one evaluation of a placement.

Also printed: the heuristic's predicted latency against the best baseline's, and ratios.

Usage::

    python benchmarks/partition_speed.py [--sizes 1000 10000 100000] [--repeat 3] [--json f]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from edgepart.partition.baseline import best_baseline, tflite_baselines
from edgepart.partition.costgraph import costgraph_from_dict
from edgepart.partition.heuristic import solve_heuristic
from edgepart.partition.schedule import evaluate
from edgepart.partition.synth import random_costgraph_doc

TARGETS = {10_000: 1.0, 100_000: 10.0}


def _time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _metis_time(g: Any, repeat: int) -> float | None:
    try:
        import pymetis  # noqa: F401
    except ImportError:
        return None
    import numpy as np

    from edgepart.partition.edgecut import _metis_blocks

    w = np.where(np.isfinite(g.latency), g.latency, np.inf).min(axis=1)
    t, _ = _time(lambda: _metis_blocks(g, w, 4, 0.05, 0), repeat)
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the series here")
    args = ap.parse_args(argv)
    print(f"host: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    rows = []
    for n in args.sizes:
        rep = args.repeat if n <= 10_000 else 1
        t0 = time.perf_counter()
        doc = random_costgraph_doc(n, 4, args.seed)
        t_gen = time.perf_counter() - t0
        t0 = time.perf_counter()
        g = costgraph_from_dict(doc)
        t_load = time.perf_counter() - t0
        del doc
        t_base, bl = _time(lambda g=g: tflite_baselines(g), rep)
        t_heur, h = _time(
            lambda g=g, bl=bl: solve_heuristic(
                g, extra_starts=[(b.name, b.units) for b in bl if b.feasible]
            ),
            rep,
        )
        t_eval, _ = _time(lambda g=g, h=h: evaluate(g, h.units), rep)
        t_metis = _metis_time(g, rep)
        base = best_baseline(bl, "latency")
        row = {
            "nodes": n,
            "edges": g.num_edges,
            "generate_s": t_gen,
            "load_s": t_load,
            "heuristic_s": t_heur,
            "baselines_s": t_base,
            "evaluate_s": t_eval,
            "metis4_s": t_metis,
            "evaluations": h.stats["evaluations"],
            "partitions": h.evaluation.num_partitions,
            "heuristic_latency_s": h.evaluation.latency_s,
            "baseline_latency_s": base.evaluation.latency_s if base else None,
            "target_s": TARGETS.get(n),
        }
        rows.append(row)
        metis = f"{t_metis:.3f} s" if t_metis is not None else "n/a (pymetis missing)"
        verdict = ""
        if n in TARGETS:
            verdict = f"  target <= {TARGETS[n]:g} s: {'MET' if t_heur <= TARGETS[n] else 'MISSED'}"
        print(
            f"n={n:>7} edges={g.num_edges:>7} load {t_load:.3f} s | heuristic {t_heur:.3f} s "
            f"({h.stats['evaluations']} evaluations, {h.evaluation.num_partitions} partitions)"
            f" | baselines {t_base:.3f} s, one evaluation {t_eval:.3f} s, METIS k=4 {metis}"
            f"{verdict}",
            flush=True,
        )
        if base is not None:
            print(
                f"          predicted latency {h.evaluation.latency_s * 1e3:.1f} ms vs TFLite "
                f"default ({base.name}) {base.evaluation.latency_s * 1e3:.1f} ms: "
                f"{base.evaluation.latency_s / h.evaluation.latency_s:.2f}x; heuristic time / "
                f"baselines time {t_heur / t_base:.1f}"
            )
    print(
        "series (nodes: heuristic seconds): "
        + ", ".join(f"{r['nodes']}: {r['heuristic_s']:.3f}" for r in rows)
    )
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
