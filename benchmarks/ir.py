"""The cost of edgepart's columnar IR on large graphs: parse, analyses, memory.

Builds (with edgepart's builder and writer) DNN-like graphs of 1,000 / 10,000 / 100,000 ops:
a ladder of element-wise ops where every fourth op also reads a tensor from eight steps back (a
residual), so the graph is not a plain chain. For each size it times, in one run:

  parse            read_model on the file (mmap, verify, columns)
  producers        analysis.producers
  consumers        analysis.consumers
  topo order       analysis.topological_order (file order checked valid)
  topo (shuffled)  Kahn's algorithm on the same graph with ops in reverse file order
  convexity        analysis.is_convex on the first half of the ops
  boundary         analysis.boundary_tensors of the first half
  live bytes       analysis.live_bytes_lower_bound
  views            building every Op view (what a per-op-object IR would cost up front)

and the memory the parsed IR holds (tracemalloc, excluding the mmapped file), per op. For
comparison on the 10,000-op graph it also measures TensorFlow's flatc object API
(``flatbuffer_utils.read_model``), which builds one Python object per op and tensor.

    python benchmarks/ir.py [--sizes 1000 10000 100000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np

from edgepart.ir import analysis
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model, Subgraph
from edgepart.tflite.reader import read_model
from edgepart.tflite.writer import write_model

OPS = ("ADD", "MUL", "SUB", "MAXIMUM")


def ladder(n_ops: int, *, reverse: bool = False) -> Model:
    mb = ModelBuilder()
    g = mb.subgraph("main")
    shape = (1, 16)
    x = g.input("x", DType.FLOAT32, shape)
    c = g.constant("c", np.full(shape, 0.5, np.float32))
    outs = [x]
    rows = []
    for i in range(n_ops):
        y = g.tensor(f"t{i}", DType.FLOAT32, shape)
        other = outs[-8] if i % 4 == 3 and len(outs) >= 8 else c
        rows.append((OPS[i % len(OPS)], [outs[-1], other], [y]))
        outs.append(y)
    for op, ins, o in reversed(rows) if reverse else rows:
        g.op(op, ins, o)
    g.output(outs[-1])
    return mb.build()


def timed(fn: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(path: Path, sg: Subgraph, rev: Subgraph, half: list[int]) -> dict[str, float]:
    n = sg.num_ops
    return {
        "ops": n,
        "tensors": sg.num_tensors,
        "file_mb": path.stat().st_size / 1e6,
        "parse_ms": timed(lambda: read_model(path)) * 1e3,
        "producers_ms": timed(lambda: analysis.producers(sg)) * 1e3,
        "consumers_ms": timed(lambda: analysis.consumers(sg)) * 1e3,
        "topo_ms": timed(lambda: analysis.topological_order(sg)) * 1e3,
        "topo_shuffled_ms": timed(lambda: analysis.topological_order(rev)) * 1e3,
        "convexity_ms": timed(lambda: analysis.is_convex(sg, half)) * 1e3,
        "boundary_ms": timed(lambda: analysis.boundary_tensors(sg, half)) * 1e3,
        "live_bytes_ms": timed(lambda: analysis.live_bytes_lower_bound(sg)) * 1e3,
        "all_op_views_ms": timed(lambda: [sg.op(i) for i in range(n)], 1) * 1e3,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--json")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            path = Path(tmp) / f"ladder_{n}.tflite"
            t0 = time.perf_counter()
            path.write_bytes(write_model(ladder(n)))
            build_s = time.perf_counter() - t0
            shuffled = Path(tmp) / f"ladder_{n}_rev.tflite"
            shuffled.write_bytes(write_model(ladder(n, reverse=True)))
            tracemalloc.start()
            model = read_model(path)
            ir_bytes = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            sg = model.main
            rev = read_model(shuffled).main
            half = list(range(n // 2))
            row = measure(path, sg, rev, half)
            row["build_and_write_s"] = build_s
            row["ir_bytes_per_op"] = ir_bytes / n
            if n == 10_000:
                from tensorflow.lite.tools import flatbuffer_utils

                tracemalloc.start()
                t0 = time.perf_counter()
                obj = flatbuffer_utils.read_model(str(path))
                row["object_api_parse_ms"] = (time.perf_counter() - t0) * 1e3
                row["object_api_bytes_per_op"] = tracemalloc.get_traced_memory()[0] / n
                tracemalloc.stop()
                del obj
            results.append(row)
            print(json.dumps(row, sort_keys=True))
    keys = [
        "parse_ms",
        "producers_ms",
        "consumers_ms",
        "topo_ms",
        "topo_shuffled_ms",
        "convexity_ms",
        "boundary_ms",
        "live_bytes_ms",
        "all_op_views_ms",
        "ir_bytes_per_op",
    ]
    print(f"\n{'ops':>8}" + "".join(f"{k.replace('_ms', ''):>14}" for k in keys))
    for r in results:
        print(f"{r['ops']:>8}" + "".join(f"{r[k]:>14.2f}" for k in keys))
    for r in results:
        if "object_api_parse_ms" in r:
            print(
                f"\n10,000 ops: flatc object API parse {r['object_api_parse_ms']:.0f} ms and "
                f"{r['object_api_bytes_per_op']:.0f} B/op; edgepart {r['parse_ms']:.1f} ms and "
                f"{r['ir_bytes_per_op']:.0f} B/op"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.exit(main())
