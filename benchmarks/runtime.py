#!/usr/bin/env python3
"""Benchmark of the partitioned runtime against LiteRT's own interpreter, in one run.

(a) MobileNetV2 (the corpus ``mobilenet_v2``, 96x96 alpha 0.35, and ``mobilenet_v2_224``) cut
    into 4 contiguous partitions, all on XNNPACK with 1 thread, against the monolithic
    interpreter with 1 thread: median latency ratio (target <= 1.05).
(b) ``mobilenet_v2_224`` cut into 2 stages balanced by measured stage time, each stage one
    1-thread interpreter on its own unit, inputs streamed with ``run_stream``: throughput
    against one 1-thread interpreter (target >= 1.8x) and one 2-thread interpreter. Also
    measured in the same rounds: two independent whole-model interpreters in two threads, the
    most any 2-way split can get from the cores the host actually gives us at that moment.
(c) predicted against measured latency for each case. The partitioner does not write model
    plans yet, so the predictions come from edgepart's cost model (``edgepart.cost``, roofline
    on the ``x86_host`` profile, which models the CPU with its 2 threads) and are written into
    the bundles exactly as the partitioner will write its own (``PartitionSpec.predicted``,
    ``plan_extra["predicted"]``); they are labelled as such.

Timing loop (``edgepart.runtime.bench.time_calls``): per round, ``warmup`` untimed calls then
``repeat`` timed calls, median per round; rounds alternate which contender goes first and
the figures are the median over rounds of the per-round medians (and of the per-round
ratios). Throughput: per round, stream ``items`` inputs (after a short warm-up stream) and
divide; the single interpreters run the same number of sequential invokes. The host has 2
cores and is shared: read ratios, not absolute times, and expect noise.

Usage: ``python benchmarks/runtime.py [--rounds 15] [--quick] [--json out.json]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import build_corpus  # noqa: E402
from ai_edge_litert.interpreter import Interpreter  # noqa: E402

from edgepart.bundle import PartitionSpec, build_bundle  # noqa: E402
from edgepart.errors import UsageError  # noqa: E402
from edgepart.ir import analysis  # noqa: E402
from edgepart.ir.extract import extract  # noqa: E402
from edgepart.runtime import PartitionedInterpreter  # noqa: E402
from edgepart.runtime.bench import time_calls  # noqa: E402
from edgepart.tflite.reader import read_model  # noqa: E402


def cuts_for(model: Any, k: int) -> list[list[int]]:
    """k contiguous pieces of a topological order, as even in op count as extract allows."""
    order = analysis.topological_order(model.main).tolist()
    n = len(order)
    bounds = [0]
    for i in range(1, k):
        target = round(n * i / k)
        for c in sorted(range(bounds[-1] + 1, n), key=lambda c: abs(c - target)):
            try:
                extract(model, order[bounds[-1] : c])
                extract(model, order[c:])
            except UsageError:
                continue
            bounds.append(c)
            break
    bounds.append(n)
    return [order[a:b] for a, b in itertools.pairwise(bounds)]


def predictions(path: Path, pieces: list[list[int]]) -> tuple[list[float], float]:
    """Cost-model estimate per piece (seconds) and for the whole model on the x86_host CPU."""
    from edgepart.cost.hardware import load_hardware
    from edgepart.cost.model import CostModel

    model = read_model(path)
    gc = CostModel(load_hardware("x86_host")).costs(model.main, model)
    per = [gc.partition_latency(p, "cpu").seconds for p in pieces]
    whole = gc.partition_latency(range(model.main.num_ops), "cpu").seconds
    return per, whole


def bundle_with_predictions(path: Path, pieces: list[list[int]], units: list[int]) -> Any:
    per, _ = predictions(path, pieces)
    specs, t = [], 0.0
    for p, u, d in zip(pieces, units, per, strict=True):
        specs.append(
            PartitionSpec(p, unit=u, predicted={"start_s": t, "end_s": t + d, "duration_s": d})
        )
        t += d
    extra = {
        "predicted": {
            "latency_s": t,
            "period_s": max(per),
            "source": "edgepart.cost roofline, x86_host (stand-in for the partitioner's plan)",
        }
    }
    return build_bundle(path, specs, plan_extra=extra)


def feed(it: Any, x: np.ndarray) -> None:
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()


def single(path: Path, threads: int) -> Any:
    it = Interpreter(model_path=str(path), num_threads=threads)
    return it


def case_a(name: str, rounds: int, repeat: int) -> dict[str, Any]:
    path = build_corpus.ensure(name)
    model = read_model(path)
    pieces = cuts_for(model, 4)
    bundle = bundle_with_predictions(path, pieces, [0, 0, 0, 0])
    mono = single(path, 1)
    part = PartitionedInterpreter(bundle=bundle, num_threads=1)
    x = (
        np.random.default_rng(0)
        .standard_normal([int(d) for d in part.get_input_details()[0]["shape"]])
        .astype(np.float32)
    )
    feed(mono, x)
    feed(part, x)
    assert np.array_equal(
        part.get_tensor(part.get_output_details()[0]["index"]),
        mono.get_tensor(mono.get_output_details()[0]["index"]),
    )
    meds: dict[str, list[float]] = {"mono": [], "part": []}
    ratios = []
    for r in range(rounds):
        order = [("mono", mono), ("part", part)][:: 1 if r % 2 == 0 else -1]
        got = {}
        for key, it in order:
            got[key] = time_calls(it.invoke, warmup=5, repeat=repeat).median_s
            meds[key].append(got[key])
        ratios.append(got["part"] / got["mono"])
    part_alone = [time_calls(p.invoke, warmup=5, repeat=repeat).median_s for p in part._parts]
    pred = part.plan.predicted or {}
    part.close()
    return {
        "model": name,
        "partitions": [len(p) for p in pieces],
        "mono_median_s": float(np.median(meds["mono"])),
        "partitioned_median_s": float(np.median(meds["part"])),
        "ratio_median": float(np.median(ratios)),
        "ratio_of_medians": float(np.median(meds["part"]) / np.median(meds["mono"])),
        "partition_alone_median_s": part_alone,
        "predicted_latency_s": pred.get("latency_s"),
        "predicted_partition_s": [p.predicted["duration_s"] for p in part.plan.partitions],
    }


def balanced_cut(path: Path, repeat: int) -> tuple[list[list[int]], list[float]]:
    """Two pieces whose measured 1-thread times are closest (bisection on the cut point)."""
    model = read_model(path)
    order = analysis.topological_order(model.main).tolist()
    n = len(order)
    x = None
    lo, hi = 1, n - 1
    best: tuple[float, list[list[int]], list[float]] | None = None
    while lo <= hi:
        c = (lo + hi) // 2
        pieces = [order[:c], order[c:]]
        try:
            bundle = build_bundle(path, [PartitionSpec(p) for p in pieces])
        except UsageError:
            lo = c + 1
            continue
        pi = PartitionedInterpreter(bundle=bundle, num_threads=1)
        if x is None:
            x = (
                np.random.default_rng(1)
                .standard_normal([int(d) for d in pi.get_input_details()[0]["shape"]])
                .astype(np.float32)
            )
        feed(pi, x)
        t = [time_calls(p.invoke, warmup=3, repeat=repeat).median_s for p in pi._parts]
        pi.close()
        if best is None or abs(t[0] - t[1]) < best[0]:
            best = (abs(t[0] - t[1]), pieces, t)
        if t[0] < t[1]:
            lo = c + 1
        else:
            hi = c - 1
    assert best is not None
    return best[1], best[2]


def case_b(name: str, rounds: int, items: int, repeat: int) -> dict[str, Any]:
    path = build_corpus.ensure(name)
    pieces, stage_s = balanced_cut(path, max(10, repeat // 2))
    bundle = bundle_with_predictions(path, pieces, [0, 1])
    part = PartitionedInterpreter(bundle=bundle, num_threads=1)
    one, two = single(path, 1), single(path, 2)
    x = (
        np.random.default_rng(2)
        .standard_normal([int(d) for d in part.get_input_details()[0]["shape"]])
        .astype(np.float32)
    )
    for it in (one, two, part):
        feed(it, x)
    want = one.get_tensor(one.get_output_details()[0]["index"])
    stream_items = [[x]] * items

    def stream() -> float:
        for _ in part.run_stream(stream_items[:4]):
            pass
        t0 = time.perf_counter()
        n, last = 0, None
        for y in part.run_stream(stream_items):
            n += 1
            last = y
        assert last is not None and np.array_equal(last[0], want)
        return n / (time.perf_counter() - t0)

    def sequential(it: Any) -> float:
        for _ in range(3):
            it.invoke()
        t0 = time.perf_counter()
        for _ in range(items):
            it.invoke()
        return items / (time.perf_counter() - t0)

    twins = [single(path, 1), single(path, 1)]
    for it in twins:
        feed(it, x)

    def ceiling() -> float:
        """Two whole-model interpreters in two threads: what 2 cores give right now."""
        import threading

        half = items // 2
        ths = [
            threading.Thread(target=lambda it=it: [it.invoke() for _ in range(half)])
            for it in twins
        ]
        t0 = time.perf_counter()
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        return 2 * half / (time.perf_counter() - t0)

    tp: dict[str, list[float]] = {"stream": [], "one": [], "two": [], "ceiling": []}
    for r in range(rounds):
        jobs = [
            ("stream", stream),
            ("one", lambda: sequential(one)),
            ("two", lambda: sequential(two)),
            ("ceiling", ceiling),
        ]
        for key, fn in jobs[r % 4 :] + jobs[: r % 4]:
            tp[key].append(fn())
    pred = part.plan.predicted or {}
    part.close()
    med = {k: float(np.median(v)) for k, v in tp.items()}
    return {
        "model": name,
        "stage_ops": [len(p) for p in pieces],
        "stage_alone_median_s": stage_s,
        "throughput_stream_per_s": med["stream"],
        "throughput_1thread_per_s": med["one"],
        "throughput_2thread_per_s": med["two"],
        "speedup_vs_1thread": med["stream"] / med["one"],
        "speedup_vs_2thread": med["stream"] / med["two"],
        "speedup_vs_1thread_per_round_median": float(
            np.median(np.array(tp["stream"]) / np.array(tp["one"]))
        ),
        "throughput_two_interpreters_in_parallel_per_s": med["ceiling"],
        "host_parallel_ceiling": med["ceiling"] / med["one"],
        "predicted_period_s": pred.get("period_s"),
        "measured_period_s": 1.0 / med["stream"],
        "predicted_partition_s": [p.predicted["duration_s"] for p in part.plan.partitions],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--repeat", type=int, default=60, help="timed invokes per round")
    ap.add_argument("--items", type=int, default=60, help="streamed inputs per round")
    ap.add_argument("--quick", action="store_true", help="fewer rounds, small model only")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.repeat, args.items = 5, 30, 20
    print(f"host: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    results: dict[str, Any] = {"a": [], "b": None}
    names = ["mobilenet_v2"] if args.quick else ["mobilenet_v2", "mobilenet_v2_224"]
    print("(a) 4 partitions on XNNPACK (1 thread each) vs the monolithic interpreter (1 thread)")
    for name in names:
        r = case_a(name, args.rounds, args.repeat)
        results["a"].append(r)
        mono_ms, part_ms = r["mono_median_s"] * 1e3, r["partitioned_median_s"] * 1e3
        print(
            f"  {name:<18} partitions {r['partitions']} ops: monolithic "
            f"{mono_ms:.3f} ms, partitioned {part_ms:.3f} ms, ratio {r['ratio_median']:.3f} "
            f"(median of {args.rounds} per-round ratios; target <= 1.05)"
        )
        alone = ", ".join(f"{t * 1e3:.3f}" for t in r["partition_alone_median_s"])
        pred = ", ".join(f"{t * 1e3:.3f}" for t in r["predicted_partition_s"])
        print(
            f"  {'':<18} (c) predicted {r['predicted_latency_s'] * 1e3:.3f} ms (cost model) vs "
            f"measured {r['partitioned_median_s'] * 1e3:.3f} ms; per partition predicted "
            f"[{pred}] vs measured alone [{alone}] ms"
        )
    name = names[-1]
    print(f"(b) 2 balanced pipeline stages, 1 thread each, streamed ({name})")
    r = case_b(name, args.rounds, args.items, args.repeat)
    results["b"] = r
    print(
        f"  stages {r['stage_ops']} ops, measured alone "
        f"{[round(t * 1e3, 3) for t in r['stage_alone_median_s']]} ms"
    )
    print(
        f"  throughput: stream {r['throughput_stream_per_s']:.1f}/s, one 1-thread interpreter "
        f"{r['throughput_1thread_per_s']:.1f}/s, one 2-thread interpreter "
        f"{r['throughput_2thread_per_s']:.1f}/s"
    )
    print(
        f"  speedup vs 1-thread {r['speedup_vs_1thread']:.2f}x (target >= 1.8), vs 2-thread "
        f"{r['speedup_vs_2thread']:.2f}x"
    )
    print(
        f"  host ceiling: two whole-model 1-thread interpreters in two threads reach "
        f"{r['host_parallel_ceiling']:.2f}x one interpreter (2.00 = two free cores)"
    )
    print(
        f"  (c) predicted period {r['predicted_period_s'] * 1e3:.3f} ms (cost model) vs measured "
        f"{r['measured_period_s'] * 1e3:.3f} ms"
    )
    print(f"host load average {os.getloadavg()[0]:.2f} at the end")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
