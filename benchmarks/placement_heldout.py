"""Placement on held-out graphs: the generated families of ``placement_scale.py`` with fresh seeds.

``placement_scale.py``'s generated instances are the ones the search was developed against; this
draws the same families (transformer, residual CNN, encoder-decoder, inception-style; phone, k
accelerators, CPU/GPU/NPU groups; training graphs with a colocated backward node per forward
node; one-partition-per-unit and copying processors) with seeds from 1000 on (``--seed``), at
about 300, 700 and 1,500 nodes, and compares for each objective:

* **default**: :func:`~edgepart.placement.solve.partition_costgraph` with default settings;
* **long**: the heuristic at 6x the budget with another seed, the default's plan among its starts;
* **growth**: local search from every node on the first processor (the CPU, whose memory does
  not bind) with 3x the budget: the accelerators fill move by move, each move feasible. It
  shares no start with the others, so it shows where the starts lead the search astray (memory
  that binds tightly: packed starts leave no room to move).

With ``--reference`` an earlier run's ``--json`` rows join the best known (plans found by an
earlier version of the search). Printed: per instance the default's gap to the best known, and
per objective the median and worst gap. Predicted times are the evaluation function's (synthetic
costs), not measurements.

Usage::

    python benchmarks/placement_heldout.py [--sizes 300 700 1500] [--seed 1000] [--json out.jsonl]
        [--reference earlier.jsonl]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import numpy as np
from placement_scale import synthetic_cases

from edgepart.placement.constraints import admissible
from edgepart.placement.evaluate import objective_key
from edgepart.placement.heuristic import evaluation_budget, solve_heuristic
from edgepart.placement.localsearch import local_search
from edgepart.placement.solve import SolveOptions, partition_costgraph
from edgepart.placement.starts import band_units

FAMILIES = ("transformer", "resnet", "encdec", "branchy")
PLATFORMS = ("accel", "phone", "hetero")
UNITS = (3, 6, 8, 12, 16)


def specs(sizes: list[int], seed: int = 1000) -> list[dict[str, Any]]:
    """placement_scale's instance specs (its ``synthetic_cases`` builds them), seeds from
    ``seed`` on (placement_scale's own are below 100)."""
    out = []
    i = 0
    for size in sizes:
        for j in range(8):
            plat = PLATFORMS[(i + j) % 3]
            k = UNITS[(i * 2 + j) % 5]
            if plat == "phone":
                k = max(4, min(k, 6))
            out.append(
                {
                    "family": FAMILIES[j % 4],
                    "nodes": size,
                    "units": k,
                    "seed": seed + i,
                    "platform": plat,
                    "training": j % 3 == 1,
                    "copies": i % 5 == 2,
                    "single": i % 4 == 3,
                }
            )
            i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[300, 700, 1500])
    ap.add_argument("--seed", type=int, default=1000, help="first seed (default 1000)")
    ap.add_argument("--json", help="append one JSON row per instance and objective here")
    ap.add_argument(
        "--reference",
        help="a --json file of an earlier run: its plans' values join the best known",
    )
    args = ap.parse_args(argv)
    known: dict[tuple[str, str], float] = {}
    if args.reference:
        with open(args.reference, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                known[(r["name"], r["objective"])] = min(r["default"], r["long"], r["growth"])
    rows: list[dict[str, Any]] = []
    for name, g, _ in synthetic_cases(specs(args.sizes, args.seed)):
        adm = admissible(g)
        band_of, _ = band_units(g, adm)
        for obj in ("latency", "throughput"):
            t0 = time.perf_counter()
            sol = partition_costgraph(g, "heuristic", SolveOptions(objective=obj))
            secs = time.perf_counter() - t0
            d = objective_key(sol.evaluation, obj)[0]
            long = solve_heuristic(g, obj, seed=1, effort=6, extra_starts=[("default", sol.units)])
            lv = objective_key(long.evaluation, obj)[0]
            first = np.full(g.num_nodes, int(g.proc_first_unit[0]), dtype=np.int64)
            if adm[:, 0].all():
                _, gev, _ = local_search(
                    g, adm, band_of, first, obj, max_evals=3 * evaluation_budget(g), seed=2
                )
                gv = objective_key(gev, obj)[0]
            else:
                gv = float("inf")
            ref = known.get((name, obj), float("inf"))
            best = min(d, lv, gv, ref)
            row: dict[str, Any] = {
                "name": name,
                "nodes": g.num_nodes,
                "units": g.num_units,
                "objective": obj,
                "default": d,
                "long": lv,
                "growth": gv,
                "gap": d / best - 1.0,
                "best_by": min(
                    (("default", d), ("long", lv), ("growth", gv), ("reference", ref)),
                    key=lambda x: x[1],
                )[0],
                "default_s": secs,
            }
            rows.append(row)
            print(
                f"{row['name']:<42} {obj:<10} gap {100 * row['gap']:8.2f} % "
                f"(best: {row['best_by']}) default {secs:5.2f} s",
                flush=True,
            )
            if args.json:
                with open(args.json, "a", encoding="utf-8") as f:
                    f.write(json.dumps(row, sort_keys=True) + "\n")
    for obj in ("latency", "throughput"):
        gaps = [r["gap"] for r in rows if r["objective"] == obj]
        worst = max((r for r in rows if r["objective"] == obj), key=lambda r: r["gap"])
        print(
            f"{obj}: {len(gaps)} instances, default vs the best known: median "
            f"{100 * statistics.median(gaps):.2f} %, worst {100 * max(gaps):.2f} % "
            f"({worst['name']}, best by {worst['best_by']})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
