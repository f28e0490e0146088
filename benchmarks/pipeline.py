#!/usr/bin/env python3
"""Benchmark of the pipeline runtime (stages in threads, bounded queues) against its stages.

Per model: the stage planner's plan on the ``x86_host`` profile with 1-thread CPU stages (two
stages on the two cores), its bundle, then ``--rounds`` interleaved rounds of

1. each stage's interpreter invoked alone, stages alternating (``--repeat`` calls each): the
   isolated stage times (median per round);
2. ``--items`` inputs streamed through the pipeline runtime (queue depth 2): the measured
   steady-state period (mean completion interval once both stages are busy) and per-item
   latency;
3. the stream simulated on the isolated stage times of the same round, and on the stage
   times the run itself observed (its stages' median invoke times while both ran at once);
4. the two stage interpreters invoked ``--items`` times each in two threads with no hand-off:
   what the host gave two concurrent stages at that moment (the stream's throughput over it
   is the pipeline's own efficiency).

Printed per model: the medians over rounds of the measured throughput over ``1 / slowest
isolated stage`` (target >= 0.95) and over the concurrent ceiling, and of the simulated period
over the measured one (target within 10 %), with the per-round figures, and ``uptime`` before
and after (the host has 2 cores shared with other work: read ratios taken in the same round).
Outputs of every stream are checked bit-identical to one whole-model interpreter.

Usage: ``python benchmarks/pipeline.py [--models resnet50 mobilenet_v2_224] [--rounds 7]
[--items 40] [--repeat 8] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))

import build_corpus  # noqa: E402
from ai_edge_litert.interpreter import Interpreter  # noqa: E402

from edgepart.api.pipelines import plan_pipeline  # noqa: E402
from edgepart.placement.schedules import StageCosts, simulate  # noqa: E402
from edgepart.runtime.stage_threads import StageWorker, run_stages, stage_specs  # noqa: E402


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def isolated(workers: list[StageWorker], tensors: list[dict[int, Any]], repeat: int) -> list[float]:
    clock = time.perf_counter
    got: list[list[float]] = [[] for _ in workers]
    for w, t in zip(workers, tensors, strict=True):
        w(t)  # warm
    for _ in range(repeat):
        for w, t, g in zip(workers, tensors, got, strict=True):
            t0 = clock()
            w(t)
            g.append(clock() - t0)
    return [float(np.median(g)) for g in got]


def concurrent(workers: list[StageWorker], tensors: list[dict[int, Any]], n: int) -> float:
    """Items per second of the slower of the stages invoked n times each in their own thread."""
    import threading

    ends: list[float] = []

    def loop(w: StageWorker, t: dict[int, Any]) -> None:
        for _ in range(n):
            w(t)
        ends.append(time.perf_counter())

    ths = [threading.Thread(target=loop, args=a) for a in zip(workers, tensors, strict=True)]
    t0 = time.perf_counter()
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    return n / (max(ends) - t0)


def case(name: str, rounds: int, items: int, repeat: int) -> dict[str, Any]:
    path = build_corpus.ensure(name)
    plan = plan_pipeline(path, "x86_host", cpu_threads=1)
    bundle = plan.bundle()
    workers = [StageWorker(s) for s in stage_specs(bundle)]
    one = Interpreter(model_path=str(path), num_threads=1)
    one.allocate_tensors()
    d = one.get_input_details()[0]
    x = np.random.default_rng(1).standard_normal(d["shape"]).astype(np.float32)
    one.set_tensor(d["index"], x)
    one.invoke()
    want = one.get_tensor(one.get_output_details()[0]["index"])
    # the tensor map each stage sees in a stream, for the isolated timings
    tmap: dict[int, Any] = {bundle.plan.inputs[0].tensor: x}
    per_stage = []
    for w in workers:
        per_stage.append(dict(tmap))
        tmap.update(w(tmap))
    out_t = bundle.plan.outputs[0].tensor
    assert np.array_equal(tmap[out_t], want)
    rows = []
    for r in range(rounds):
        iso = isolated(workers, per_stage, repeat)
        run = run_stages(bundle, [[x]] * items, queue_depth=2, workers=workers)
        assert all(np.array_equal(o[0], want) for o in run.outputs)
        sim = simulate(StageCosts(tuple(iso)), "stream", items, queue_depth=2)
        ceiling = concurrent(workers, per_stage, items)
        meas = run.measured
        lat = sorted(meas.latency_s)
        rows.append(
            {
                "round": r,
                "isolated_s": iso,
                "in_run_s": list(run.stage_s),
                "measured_period_s": meas.period_s,
                "simulated_period_s": sim.period_s,
                "measured_latency_median_s": lat[len(lat) // 2],
                "simulated_latency_median_s": sorted(sim.latency_s)[items // 2],
                "throughput_vs_slowest": max(iso) / meas.period_s,
                "sim_over_measured": sim.period_s / meas.period_s,
                "sim_in_run_over_measured": run.simulated.period_s / meas.period_s,
                "throughput_vs_concurrent": 1.0 / meas.period_s / ceiling,
            }
        )
        print(
            f"  round {r}: stages {', '.join(f'{t * 1e3:.2f}' for t in iso)} ms alone, "
            f"period {meas.period_s * 1e3:.2f} ms measured / {sim.period_s * 1e3:.2f} simulated, "
            f"throughput/(1/slowest) {rows[-1]['throughput_vs_slowest']:.3f}, /concurrent "
            f"{rows[-1]['throughput_vs_concurrent']:.3f}; in-run stages "
            f"{', '.join(f'{t * 1e3:.2f}' for t in run.stage_s)} ms, simulated on them "
            f"{run.simulated.period_s * 1e3:.2f} ms",
            flush=True,
        )
    med = {
        k: float(np.median([row[k] for row in rows]))
        for k in (
            "throughput_vs_slowest",
            "sim_over_measured",
            "sim_in_run_over_measured",
            "throughput_vs_concurrent",
            "measured_period_s",
            "simulated_period_s",
            "measured_latency_median_s",
            "simulated_latency_median_s",
        )
    }
    return {
        "model": name,
        "stages": len(workers),
        "stage_ops": [len(o) for o in plan.stage_ops],
        "predicted_stage_s": plan.stage_times,
        "rounds": rows,
        "median": med,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["resnet50", "mobilenet_v2_224"])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--items", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=8)
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args()
    before = uptime()
    print(f"uptime before: {before}")
    results = []
    for name in args.models:
        print(f"{name}:", flush=True)
        res = case(name, args.rounds, args.items, args.repeat)
        m = res["median"]
        print(
            f"{name}: {res['stages']} stages x 1 thread ({res['stage_ops']} ops), medians of "
            f"{args.rounds} rounds: throughput / (1 / slowest stage) "
            f"{m['throughput_vs_slowest']:.3f} "
            f"(target >= 0.95), over two stages run concurrently without hand-off "
            f"{m['throughput_vs_concurrent']:.3f}; simulated / measured period "
            f"{m['sim_over_measured']:.3f} on isolated stage times, "
            f"{m['sim_in_run_over_measured']:.3f} on in-run stage times (target 0.90-1.10); "
            f"period {m['measured_period_s'] * 1e3:.2f} ms measured, "
            f"{m['simulated_period_s'] * 1e3:.2f} ms simulated; per-item latency median "
            f"{m['measured_latency_median_s'] * 1e3:.2f} ms measured, "
            f"{m['simulated_latency_median_s'] * 1e3:.2f} ms simulated",
            flush=True,
        )
        results.append(res)
    after = uptime()
    print(f"uptime after: {after}")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"uptime": [before, after], "results": results}, indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
