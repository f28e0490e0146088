#!/usr/bin/env python3
"""Parse, claim and partition speed of two commits, measured in one run, as ratios.

A refactoring must not make edgepart slower. This script checks out a base commit in a temporary
git worktree (its C accelerators built in place, as ``tools/compare_bundles.py`` does) and runs
three benchmarks of each tree with that tree's own copy of the script and that tree on
``PYTHONPATH``:

* ``benchmarks/parse.py``: reading every default corpus model (edgepart's warm median, ms);
* ``benchmarks/claim.py --quick``: claiming 1,000- and 10,000-op models per delegate (median);
* ``benchmarks/partition_speed.py``: loading a generated cost graph and placing it with the
  heuristic (1,000 and 10,000 nodes), and a generated 10,000-op model's cost graph, TFLite
  claim and heuristic.

The trees alternate (base, head, then head, base, ...) for ``--rounds`` rounds, so a slow spell
of this shared machine hits both alike. Each figure is the median over the rounds of that
benchmark's own median; the ratio is head / base (below 1: head is faster). ``spread`` is the
larger of the two trees' max/min over the rounds: a ratio within ``1 +/- (spread - 1)`` is
within this run's noise. ``min ratio`` compares the fastest round of each tree, the figure least
touched by other processes when the machine is busy (a millisecond figure is bimodal under
contention: untouched, or one scheduler slice longer). Summary lines give the geometric mean of
the median ratios per benchmark.

    python tools/compare_speed.py --base 2ceb7a3 [--rounds 3] [--json out.json]

Like ``compare_bundles.py`` it imports nothing from ``edgepart``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from compare_bundles import REPO, base_worktree

Figures = dict[str, float]


def _parse(doc: dict[str, Any]) -> Figures:
    return {f"parse {r['model']} ms": r["edgepart_ms"] for r in doc["rows"]}


def _claim(doc: dict[str, Any]) -> Figures:
    return {
        f"claim {name} {n} ops ms": t * 1e3
        for name, by_size in doc["claim_s"].items()
        for n, t in by_size.items()
    }


def _partition(doc: dict[str, Any]) -> Figures:
    out = {}
    for r in doc["costgraphs"]:
        out[f"partition load {r['nodes']} nodes s"] = r["load_s"]
        out[f"partition heuristic {r['nodes']} nodes s"] = r["heuristic_s"]
    for r in doc["models"]:
        out[f"partition model {r['ops']} ops: cost graph s"] = r["costgraph_s"]
        out[f"partition model {r['ops']} ops: claim s"] = r["claim_gpu_s"]
        out[f"partition model {r['ops']} ops: heuristic s"] = r["heuristic_s"]
    return out


# (command, repeats inside one run, figures). parse.py times TensorFlow's flatbuffer_utils beside
# edgepart in every repeat, and that baseline (seconds per model) is most of its run: 2 repeats
# keep a round short; the rounds give the median.
BENCHMARKS: dict[str, tuple[list[str], int, Callable[[dict[str, Any]], Figures]]] = {
    "parse": (["benchmarks/parse.py", "--skip-large"], 2, _parse),
    "claim": (["benchmarks/claim.py", "--quick"], 3, _claim),
    "partition": (
        ["benchmarks/partition_speed.py", "--sizes", "1000", "10000", "--model-sizes", "10000"],
        3,
        _partition,
    ),
}


def _run(tree: Path, bench: str, repeat: int | None, work: Path) -> Figures:
    argv, default_repeat, extract = BENCHMARKS[bench]
    out = work / f"{bench}-{tree.name}.json"
    cmd = [sys.executable, *argv, "--json", str(out), "--repeat", str(repeat or default_repeat)]
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=3600)
    # claim.py exits 1 when a speed target is missed on a loaded machine; the figures count
    if not out.is_file():
        raise SystemExit(
            f"{tree.name}: {' '.join(argv)} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
        )
    figures = extract(json.loads(out.read_text()))
    out.unlink()
    return figures


def _gmean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def _table(
    runs: dict[str, dict[str, list[float]]], rounds: int, base: str, load: list[float]
) -> str:
    names = [n for n in runs["head"] if n in runs["base"]]
    width = max(len(n) for n in names)
    lines = [
        f"{'figure':<{width}} {'base':>10} {'head':>10} {'head/base':>9} {'spread':>7} "
        f"{'min ratio':>9}  "
        f"(medians of {rounds} interleaved rounds; base {base}, load average "
        f"{min(load):.1f}-{max(load):.1f} on {os.cpu_count()} CPUs)"
    ]
    per_bench: dict[str, list[float]] = defaultdict(list)
    per_bench_min: dict[str, list[float]] = defaultdict(list)
    for n in names:
        b, h = statistics.median(runs["base"][n]), statistics.median(runs["head"][n])
        spread = max(
            max(v) / min(v) if min(v) > 0 else math.inf for v in (runs["base"][n], runs["head"][n])
        )
        ratio = h / b if b > 0 else math.nan
        lo_b, lo_h = min(runs["base"][n]), min(runs["head"][n])
        lo = lo_h / lo_b if lo_b > 0 else math.nan
        per_bench[n.split()[0]].append(ratio)
        per_bench_min[n.split()[0]].append(lo)
        lines.append(f"{n:<{width}} {b:>10.4g} {h:>10.4g} {ratio:>9.3f} {spread:>7.2f} {lo:>9.3f}")
    for bench, ratios in per_bench.items():
        ok = [r for r in ratios if r > 0 and math.isfinite(r)]
        lo = [r for r in per_bench_min[bench] if r > 0 and math.isfinite(r)]
        lines.append(
            f"{bench}: geometric mean head/base {_gmean(ok):.3f} over {len(ok)} figures "
            f"(min {min(ok):.3f}, max {max(ok):.3f}); of the min ratios {_gmean(lo):.3f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="HEAD~1", help="commit to compare with (default HEAD~1)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--repeat", type=int, help="repeats inside each benchmark (default 2-3)")
    ap.add_argument("--only", choices=sorted(BENCHMARKS), action="append", help="one benchmark")
    ap.add_argument("--json", help="write every round's figures here (rewritten after each round)")
    args = ap.parse_args(argv)
    benches = args.only or list(BENCHMARKS)
    runs: dict[str, dict[str, list[float]]] = {"base": defaultdict(list), "head": defaultdict(list)}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="edgepart-speed-") as tmp:
        work = Path(tmp)
        with base_worktree(args.base, work) as base:
            trees = {"base": base, "head": REPO}
            for k in range(args.rounds):
                for bench in benches:
                    order = ("base", "head") if k % 2 == 0 else ("head", "base")
                    for side in order:
                        for name, value in _run(trees[side], bench, args.repeat, work).items():
                            runs[side][name].append(value)
                load.append(os.getloadavg()[0])
                # each round's table: a run cut short still leaves its figures so far
                print(f"after round {k + 1} of {args.rounds}:", file=sys.stderr)
                print(_table(runs, k + 1, args.base, load), file=sys.stderr, flush=True)
                if args.json:
                    doc = {"base": args.base, "rounds": k + 1, "load": load, "runs": runs}
                    Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    print(_table(runs, args.rounds, args.base, load))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
