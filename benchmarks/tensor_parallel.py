#!/usr/bin/env python3
"""Tensor parallelism on this host: one layer split across two single-thread units.

Two one-layer models, built with edgepart's builder (seeded random weights):

* **FC**: FULLY_CONNECTED 4096 -> 4096 at batch 1 (64 MiB of float32 weights, so each inference
  streams the weights from memory);
* **conv**: CONV_2D 3x3, 128 -> 256 channels on a 56x56 input (1.85 G multiply-adds).

For each, three contenders run the same input:

1. the model in one LiteRT interpreter with 1 thread (XNNPACK);
2. the model in one LiteRT interpreter with 2 threads (XNNPACK's own intra-op parallelism);
3. the bundle edgepart's partitioner writes for ``examples/profiles/host_2x1t.yaml`` (the two
   cores as two single-thread units): the layer split into two shards (the FC by columns, the
   conv by output channels) on ``cpu:0`` and ``cpu:1``, run concurrently by edgepart's
   runtime, joined by an all-gather (CONCATENATION). The script checks that the partitioner
   took the split and that the bundle's outputs are bit-identical to the model's before
   timing anything.

Timing (``edgepart.runtime.latency.time_calls``): per round, each contender's median over
``repeat`` calls after a warm-up; the contenders' order rotates every round, so a change in
host load hits them alike. Reported: the median over rounds of each contender's per-round
median, and the medians over rounds of the per-round ratios. Each round also records the load:
how many CPUs other processes kept busy while it ran (``/proc/stat`` minus this process) and
the 1-minute load average. The host has 2 cores and is shared; read the ratios beside the load.

Usage: ``python benchmarks/tensor_parallel.py [--rounds 15] [--repeat 20] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ai_edge_litert.interpreter import Interpreter  # noqa: E402
from runtime import HostCpu  # noqa: E402  (benchmarks/runtime.py: other processes' CPU use)

import edgepart  # noqa: E402
from edgepart.ir.builder import ModelBuilder  # noqa: E402
from edgepart.ir.dtypes import DType  # noqa: E402
from edgepart.ir.graph import Model  # noqa: E402
from edgepart.runtime import PartitionedInterpreter  # noqa: E402
from edgepart.runtime.latency import time_calls  # noqa: E402
from edgepart.tflite.writer import save_model  # noqa: E402

PROFILE = ROOT / "examples" / "profiles" / "host_2x1t.yaml"


def fc_model(k: int = 4096, n: int = 4096) -> Model:
    rng = np.random.default_rng(1)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, k))
    w = g.constant("w", (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float32))
    b = g.constant("b", (rng.standard_normal(n) * 0.1).astype(np.float32))
    y = g.tensor("y", DType.FLOAT32, (1, n))
    g.op("FULLY_CONNECTED", [x, w, b], [y], options={"fused_activation_function": "RELU"})
    g.output(y)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", y)])
    return mb.build()


def conv_model(h: int = 56, cin: int = 128, cout: int = 256) -> Model:
    rng = np.random.default_rng(2)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, h, h, cin))
    w = g.constant(
        "w", (rng.standard_normal((cout, 3, 3, cin)) / np.sqrt(9 * cin)).astype(np.float32)
    )
    b = g.constant("b", (rng.standard_normal(cout) * 0.1).astype(np.float32))
    y = g.tensor("y", DType.FLOAT32, (1, h, h, cout))
    g.op(
        "CONV_2D",
        [x, w, b],
        [y],
        options={"padding": "SAME", "stride_w": 1, "stride_h": 1,
                 "fused_activation_function": "RELU"},
    )  # fmt: skip
    g.output(y)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", y)])
    return mb.build()


def _prep(it: Any, x: np.ndarray) -> Any:
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it


def _out(it: Any) -> np.ndarray:
    return it.get_tensor(it.get_output_details()[0]["index"]).copy()


def case(name: str, model: Model, work: Path, rounds: int, repeat: int) -> dict[str, Any]:
    path = work / f"{name}.tflite"
    save_model(model, path)
    compiled = edgepart.compile(path, str(PROFILE))
    splits = compiled.plan.splits
    if not splits:
        raise SystemExit(f"{name}: the partitioner took no split:\n{compiled.report()}")
    bundle = work / f"{name}_bundle"
    compiled.save(bundle)
    x = (
        np.random.default_rng(3)
        .standard_normal(
            [int(d) for d in model.main.tensor_shape.row_tuple(int(model.main.inputs[0]))]
        )
        .astype(np.float32)
    )
    one = _prep(Interpreter(model_path=str(path), num_threads=1), x)
    two = _prep(Interpreter(model_path=str(path), num_threads=2), x)
    tp = _prep(PartitionedInterpreter(str(bundle), num_threads=1), x)
    assert tp.parallel and all(g.concurrent for g in tp.splits), "shards not concurrent"
    ref = _out(one)
    for it in (two, tp):
        if not np.array_equal(ref, _out(it)):
            raise SystemExit(f"{name}: outputs differ from the 1-thread interpreter")
    contenders = {"1 thread": one, "2 threads": two, "split 2x1": tp}
    keys = list(contenders)
    per: dict[str, list[float]] = {k: [] for k in keys}
    ratios: dict[str, list[float]] = {"split/1t": [], "split/2t": [], "2t/1t": []}
    others: list[float] = []
    loads: list[float] = []
    for r in range(rounds):
        order = keys[r % len(keys) :] + keys[: r % len(keys)]
        cpu = HostCpu()
        got = {}
        for k in order:
            got[k] = time_calls(contenders[k].invoke, warmup=3, repeat=repeat).median_s
            per[k].append(got[k])
        o = cpu.others()
        if o is not None:
            others.append(o)
        loads.append(os.getloadavg()[0])
        ratios["split/1t"].append(got["split 2x1"] / got["1 thread"])
        ratios["split/2t"].append(got["split 2x1"] / got["2 threads"])
        ratios["2t/1t"].append(got["2 threads"] / got["1 thread"])
        print(
            f"  {name} round {r + 1:2d}: "
            + ", ".join(f"{k} {got[k] * 1e3:7.3f} ms" for k in keys)
            + f"; other processes used {o if o is not None else float('nan'):.2f} CPUs",
            flush=True,
        )
    tp.close()
    st = splits[0]
    return {
        "case": name,
        "split": {"mode": st.mode, "sizes": list(st.sizes), "predicted": st.predicted},
        "predicted_unsplit_s": compiled.plan.extra["tensor_parallel"]["unsplit_latency_s"],
        "predicted_split_s": compiled.plan.extra["tensor_parallel"]["latency_s"],
        "median_s": {k: float(np.median(v)) for k, v in per.items()},
        "ratio_median": {k: float(np.median(v)) for k, v in ratios.items()},
        "other_cpus_median": float(np.median(others)) if others else None,
        "other_cpus_max": float(np.max(others)) if others else None,
        "loadavg_median": float(np.median(loads)),
        "rounds": rounds,
        "repeat": repeat,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    print(f"host: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    results = []
    with tempfile.TemporaryDirectory(prefix="edgepart-tp-") as tmp:
        for name, model in (("fc_4096", fc_model()), ("conv_56x128x256", conv_model())):
            results.append(case(name, model, Path(tmp), args.rounds, args.repeat))
    print()
    print(
        "| layer | 1 thread (ms) | 2 threads (ms) | split on 2 units (ms) | split/1t | "
        "split/2t | 2t/1t | other CPUs busy (median, max) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        m, q = r["median_s"], r["ratio_median"]
        print(
            f"| {r['case']} | {m['1 thread'] * 1e3:.3f} | {m['2 threads'] * 1e3:.3f} | "
            f"{m['split 2x1'] * 1e3:.3f} | {q['split/1t']:.3f} | {q['split/2t']:.3f} | "
            f"{q['2t/1t']:.3f} | {r['other_cpus_median']:.2f}, {r['other_cpus_max']:.2f} |"
        )
    for r in results:
        q = r["ratio_median"]
        names = {"1 thread": "one 1-thread interpreter", "2 threads": "one 2-thread "
                 "interpreter", "split 2x1": "the split on two units"}  # fmt: skip
        best = names[min(r["median_s"], key=lambda k: r["median_s"][k])]
        print(
            f"{r['case']}: fastest here is {best} (split {q['split/1t']:.2f}x the 1-thread time, "
            f"{q['split/2t']:.2f}x the 2-thread time); the cost model predicted "
            f"{r['predicted_unsplit_s'] * 1e3:.3f} ms unsplit and "
            f"{r['predicted_split_s'] * 1e3:.3f} ms split on host_2x1t (a roofline, not this run)"
        )
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
