"""Claiming speed: edgepart's TFLite partitioning model on generated graphs of 1,000-100,000 ops.

For each delegate, times ``edgepart.claim.delegation.claim`` (per-op support with memoization,
TFLite epochs, the delegate's selection and the replacement run) on a generated CNN-like graph:
residual blocks of CONV_2D / DEPTHWISE_CONV_2D / ADD / activation ops with a refused op (CUMSUM)
every 40 ops, float32 for the float delegates and int8 for the 8-bit ones. Baselines in the same
run:

* LiteRT itself: constructing an ``Interpreter`` and ``allocate_tensors()`` (which applies XNNPACK)
  on the same float model written with edgepart's writer, for sizes up to 10,000 ops;
* a literal port of TFLite's quadratic ``PartitionGraphIntoIndependentNodeSubsets`` loop
  (tests/claim/_tflite_reference.py) against edgepart's epoch partitioner.

Timing loop: one warm-up, then ``--repeat`` runs (default 5); medians are reported. Growth from
1,000 to 100,000 ops is compared with n log n. Usage: ``python benchmarks/claim.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from edgepart.claim.delegation import claim
from edgepart.claim.epochs import partition_independent_subsets
from edgepart.devices.delegate import load_delegate
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.values import Quantization
from edgepart.tflite.writer import save_model

FLOAT_DELEGATES = ["xnnpack", "gpu", "gpu_mldrift", "nnapi"]
INT8_DELEGATES = ["hexagon", "edgetpu", "npu"]


def generate(n_ops: int, *, int8: bool, seed: int = 0):
    """A residual CNN-like graph with about ``n_ops`` ops (weights shared per block kind)."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    c = 16
    s = (1, 16, 16, c)
    dt = DType.INT8 if int8 else DType.FLOAT32
    q = Quantization(np.array([0.05], np.float32), np.array([0], np.int64)) if int8 else None
    wq = Quantization(np.full(c, 0.01, np.float32), np.zeros(c, np.int64)) if int8 else None
    bq = Quantization(np.full(c, 0.0005, np.float32), np.zeros(c, np.int64)) if int8 else None
    wdt = np.int8 if int8 else np.float32
    w = g.constant("w", rng.standard_normal((c, 1, 1, c)).astype(wdt), quantization=wq)
    dw = g.constant(
        "dw",
        rng.standard_normal((1, 3, 3, c)).astype(wdt),
        quantization=Quantization(wq.scale, wq.zero_point, 3) if int8 else None,
    )
    b = g.constant("b", np.zeros(c, np.int32 if int8 else np.float32), quantization=bq)
    ax = g.constant("ax", np.array(3, np.int32))
    x = g.input("x", dt, s, quantization=q)
    cur, skip, i = x, x, 0
    while i < n_ops:
        y = g.tensor(f"t{i}", dt, s, quantization=q)
        k = i % 40
        if k == 39:
            g.op("CUMSUM", [cur, ax], [y])
        elif k % 4 == 0:
            g.op(
                "CONV_2D",
                [cur, w, b],
                [y],
                options={
                    "padding": "SAME",
                    "stride_h": 1,
                    "stride_w": 1,
                    "fused_activation_function": "RELU6",
                },
            )
        elif k % 4 == 1:
            g.op(
                "DEPTHWISE_CONV_2D",
                [cur, dw, b],
                [y],
                options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1},
            )
        elif k % 4 == 2:
            g.op("ADD", [cur, skip], [y])
            skip = y
        else:
            g.op("LOGISTIC" if int8 else "HARD_SWISH", [cur], [y])
        cur = y
        i += 1
    g.output(cur)
    return mb.build()


def _times(fn, repeat: int) -> list[float]:
    fn()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return ts


def _median_time(fn, repeat: int) -> float:
    return statistics.median(_times(fn, repeat))


def _litert_time(model, repeat: int) -> float:
    from ai_edge_litert.interpreter import Interpreter

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.tflite"
        save_model(model, path)

        def run():
            it = Interpreter(model_path=str(path), num_threads=1)
            it.allocate_tensors()

        return _median_time(run, repeat)


def _reference_partition_time(model, repeat: int) -> tuple[float, float]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "claim"))
    from _tflite_reference import reference_partition

    sg = model.main
    sup = np.array([sg.op_name(i) != "CUMSUM" for i in range(sg.num_ops)])
    ins, outs = sg.op_inputs.tolist(), sg.op_outputs.tolist()
    nt, go = sg.num_tensors, sg.outputs.tolist()
    fast = _median_time(
        lambda: partition_independent_subsets(
            sg.op_inputs, sg.op_outputs, sup, num_tensors=nt, graph_outputs=go
        ),
        repeat,
    )
    ref = _median_time(lambda: reference_partition(ins, outs, sup, nt, go), 1)
    return fast, ref


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="sizes 1k and 10k only")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", help="also write the results to this JSON file")
    args = ap.parse_args()
    sizes = [1000, 10000] if args.quick else [1000, 3000, 10000, 30000, 100000]
    specs = {n: load_delegate(n) for n in FLOAT_DELEGATES + INT8_DELEGATES}
    results: dict[str, dict[int, float]] = {n: {} for n in specs}
    fastest: dict[str, dict[int, float]] = {n: {} for n in specs}
    litert: dict[int, float] = {}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"claim time per delegate, median of {args.repeat} runs (ms); "
        f"load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"{'ops':>8} " + " ".join(f"{n:>11}" for n in specs) + f" {'LiteRT+XNN':>11}")
    for n in sizes:
        fmodel, qmodel = generate(n, int8=False), generate(n, int8=True)
        row = []
        for name, spec in specs.items():
            model = qmodel if name in INT8_DELEGATES else fmodel
            if name == "xnnpack":
                fn = lambda m=model, s=spec: claim(m, [], default_delegate=s)  # noqa: E731
            else:
                fn = lambda m=model, s=spec: claim(m, [s], default_delegate=None)  # noqa: E731
            ts = _times(fn, args.repeat)
            t = statistics.median(ts)
            results[name][n] = t
            fastest[name][n] = min(ts)
            row.append(f"{t * 1e3:11.2f}")
        lt = ""
        if n <= 10000:
            litert[n] = _litert_time(fmodel, max(1, args.repeat // 2))
            lt = f"{litert[n] * 1e3:11.2f}"
        print(f"{n:>8} " + " ".join(row) + f" {lt:>11}")
    n10 = 10000
    print()
    print("at 10,000 ops: " + ", ".join(f"{k} {v[n10] * 1e3:.1f} ms" for k, v in results.items()))
    worst = max(v[n10] for v in results.values())
    worst_min = max(v[n10] for v in fastest.values())
    print(
        f"slowest delegate at 10,000 ops: median {worst * 1e3:.1f} ms, fastest run "
        f"{worst_min * 1e3:.1f} ms (target < 50 ms): {'OK' if worst < 0.05 else 'MISSED'}"
    )
    cold = []
    for name, spec in specs.items():  # first claim on a fresh model: derived columns built too
        model = generate(n10, int8=name in INT8_DELEGATES, seed=1)
        user = [] if name == "xnnpack" else [spec]
        t = time.perf_counter()
        claim(model, user, default_delegate=spec if name == "xnnpack" else None)
        cold.append(f"{name} {(time.perf_counter() - t) * 1e3:.0f}")
    print(
        "first claim on a fresh 10,000-op model (per-subgraph columns computed, then cached), "
        "ms: " + ", ".join(cold)
    )
    if n10 in litert:
        x = results["xnnpack"][n10]
        print(
            f"LiteRT Interpreter+allocate_tensors (applies XNNPACK) at 10,000 ops: "
            f"{litert[n10] * 1e3:.1f} ms; edgepart's XNNPACK prediction is "
            f"{litert[n10] / x:.1f}x faster"
        )
    lo, hi = sizes[0], sizes[-1]
    nlogn = (hi * math.log(hi)) / (lo * math.log(lo))
    print(
        f"growth {lo} -> {hi} ops (n log n would be {nlogn:.1f}x; medians, then fastest runs"
        " which are less sensitive to other load on the machine):"
    )
    ok = True
    for name, v in results.items():
        g = v[hi] / v[lo]
        gm = fastest[name][hi] / fastest[name][lo]
        ok &= min(g, gm) <= nlogn
        verdict = "<= n log n" if min(g, gm) <= nlogn else "> n log n"
        print(f"  {name:<12} {g:6.1f}x  {gm:6.1f}x  {verdict}")
    fast, ref = _reference_partition_time(generate(3000, int8=False), args.repeat)
    print(
        f"partitioning 3,000 ops: edgepart epochs {fast * 1e3:.2f} ms, literal TFLite loop "
        f"{ref * 1e3:.1f} ms ({ref / fast:.0f}x)"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "claim_s": {k: {str(n): t for n, t in v.items()} for k, v in results.items()},
                    "claim_fastest_s": {
                        k: {str(n): t for n, t in v.items()} for k, v in fastest.items()
                    },
                    "litert_s": {str(n): t for n, t in litert.items()},
                    "reference_partition_3000": {"edgepart_s": fast, "tflite_loop_s": ref},
                },
                indent=2,
                sort_keys=True,
            )
        )
    return 0 if ok and worst < 0.05 else 1


if __name__ == "__main__":
    raise SystemExit(main())
