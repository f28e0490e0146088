"""XNNPACK kernels of one task cost the same on two threads as on one; split ones do not.

The rule behind :func:`edgepart.cost.xnn_tasks.one_task`, which multi-thread predictors use to
price such kernels with their one-thread model, checked on the real runtime: for each case a
model of ``N`` identical kernels and one of a single kernel are timed with ai-edge-litert
(XNNPACK, 1 and 2 threads, back-to-back invocations, best of several rounds); the difference
over ``N - 1`` is the time per kernel (per layer, where a layer is several kernels: then "one
task" means all of them). Printed per case: what ``one_task`` says, the time per kernel on
one and two threads, and their ratio.

One-task kernels should show a ratio near 1.0 (the pool is never woken); split kernels below
1.0 when the second thread pays off, above it when waking and joining the pool costs more than
the split saves (small kernels on a virtual machine).

Usage::

    python benchmarks/xnn_one_task.py [--kernels 20] [--rounds 9]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from edgepart.cost.kernels import decompose
from edgepart.cost.xnn_tasks import one_task
from edgepart.ir.builder import ModelBuilder, SubgraphBuilder
from edgepart.ir.dtypes import DType
from edgepart.tflite.reader import read_model_bytes
from edgepart.tflite.writer import write_model

F32 = DType.FLOAT32
Layer = Callable[[SubgraphBuilder, int, int], int]  # (graph, input, index) -> output


def stack(shape: tuple[int, ...], n: int, layer: Layer) -> bytes:
    """A float model of ``n`` kernels, each ``layer(graph, x, k)`` -> y of ``shape``."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", F32, shape)
    cur = x
    for k in range(n):
        cur = layer(g, cur, k)
    g.output(cur)
    return write_model(mb.build())


def add(shape: tuple[int, ...]) -> Layer:
    def f(g: SubgraphBuilder, x: int, k: int) -> int:
        y = g.tensor(f"y{k}", F32, shape)
        g.op("ADD", [x, x], [y])
        return y

    return f


def tanh(shape: tuple[int, ...]) -> Layer:
    def f(g: SubgraphBuilder, x: int, k: int) -> int:
        y = g.tensor(f"y{k}", F32, shape)
        g.op("TANH", [x], [y])
        return y

    return f


def dwconv(shape: tuple[int, ...], taps: tuple[int, int]) -> Layer:
    rng = np.random.default_rng(0)
    c = shape[-1]

    def f(g: SubgraphBuilder, x: int, k: int) -> int:
        w = g.constant(f"w{k}", rng.normal(0, 0.2, (1, *taps, c)).astype(np.float32))
        b = g.constant(f"b{k}", np.zeros(c, np.float32))
        y = g.tensor(f"y{k}", F32, shape)
        g.op("DEPTHWISE_CONV_2D", [x, w, b], [y],
             options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1,
                      "dilation_h_factor": 1, "dilation_w_factor": 1})  # fmt: skip
        return y

    return f


def fc(rows: int, n: int) -> Layer:
    rng = np.random.default_rng(0)

    def f(g: SubgraphBuilder, x: int, k: int) -> int:
        w = g.constant(f"w{k}", rng.normal(0, 0.2, (n, n)).astype(np.float32))
        y = g.tensor(f"y{k}", F32, (rows, n))
        g.op("FULLY_CONNECTED", [x, w, -1], [y])
        return y

    return f


def rotate(shape: tuple[int, ...], axis: int) -> Layer:
    """Two slices of ``shape`` along ``axis`` (all but the first element, the first) joined
    again: three kernels, the state update of a streaming layer."""

    def f(g: SubgraphBuilder, x: int, k: int) -> int:
        n = shape[axis]
        parts = []
        for j, (lo, hi) in enumerate(((1, n), (0, 1))):
            begin = [0] * len(shape)
            begin[axis] = lo
            size = list(shape)
            size[axis] = hi - lo
            t = g.tensor(f"s{k}_{j}", F32, tuple(size))
            g.op("SLICE", [x, g.constant(f"b{k}_{j}", np.array(begin, np.int32)),
                           g.constant(f"z{k}_{j}", np.array(size, np.int32))], [t])  # fmt: skip
            parts.append(t)
        y = g.tensor(f"y{k}", F32, shape)
        g.op("CONCATENATION", parts, [y], options={"axis": axis})
        return y

    return f


CASES: list[tuple[str, tuple[int, ...], Layer]] = [
    ("ADD 16 KiB", (1, 4096), add((1, 4096))),
    ("ADD 64 KiB", (1, 16384), add((1, 16384))),
    ("TANH 4 KiB", (1, 1024), tanh((1, 1024))),
    ("TANH 64 KiB", (4, 4096), tanh((4, 4096))),
    ("depthwise 1x5, one row of 40, 64 ch", (1, 1, 40, 64), dwconv((1, 1, 40, 64), (1, 5))),
    ("depthwise 3x3, 8 rows of 8, 64 ch", (1, 8, 8, 64), dwconv((1, 8, 8, 64), (3, 3))),
    ("fully connected 1 x 8 -> 8", (1, 8), fc(1, 8)),
    ("fully connected 1 x 128 -> 128", (1, 128), fc(1, 128)),
    ("slices + concat, frames of 20 x 64", (1, 20, 1, 64), rotate((1, 20, 1, 64), 1)),
    ("slices + concat, frames of 65 x 64", (1, 65, 1, 64), rotate((1, 65, 1, 64), 1)),
    ("slices + concat, frames of 66 x 64", (1, 66, 1, 64), rotate((1, 66, 1, 64), 1)),
    ("slices + concat, channels of 2 x 2 x 64", (1, 2, 2, 64), rotate((1, 2, 2, 64), 3)),
]


def per_run_ns(content: bytes, threads: int, rounds: int, reps: int) -> float:
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_content=content, num_threads=threads)
    it.allocate_tensors()
    for _ in range(reps // 4):
        it.invoke()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(reps):
            it.invoke()
        best = min(best, (time.perf_counter_ns() - t0) / reps)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=20, help="kernels in the long model")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--reps", type=int, default=2000, help="invocations per round")
    args = ap.parse_args()
    n = args.kernels
    print("XNNPACK, ai-edge-litert on this host; time per kernel, best of "
          f"{args.rounds} rounds of {args.reps} invocations")  # fmt: skip
    print(f"{'kernel':<40} {'one task':>8} {'1 thread':>10} {'2 threads':>10} {'2t / 1t':>8}")
    for name, shape, layer in CASES:
        long, short = stack(shape, n, layer), stack(shape, 1, layer)
        k = decompose(read_model_bytes(short), "xnnpack")
        claim = bool(one_task(k.types, k.features).all()) if len(k) else False
        t = {
            th: (per_run_ns(long, th, args.rounds, args.reps)
                 - per_run_ns(short, th, args.rounds, args.reps)) / (n - 1)
            for th in (1, 2)
        }  # fmt: skip
        print(f"{name:<40} {'yes' if claim else 'no':>8} {t[1]:8.0f} ns {t[2]:8.0f} ns "
              f"{t[2] / t[1]:8.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
