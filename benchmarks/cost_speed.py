#!/usr/bin/env python3
"""Costing speed: a 100,000-op graph on a 4-processor device, vectorized vs a per-op loop.

Builds a synthetic chain of CONV_2D / DEPTHWISE_CONV_2D / ADD / MAX_POOL_2D / RELU ops with 8
channel widths (so there are many distinct signatures), writes it to a .tflite file and reads
it back (so options decode lazily, as for any real model), then times:

- ``op_work``: FLOPs and bytes of every op;
- ``CostModel.costs``: the ``[ops, processors]`` latency matrix, roofline only and with a latency
  table (measured here, with the host profiler, on a 16-op model with the same op kinds), first
  call and cached;
- the baseline: the same roofline computed op by op in Python (``roofline_time`` per op and
  processor after ``op_work``), the obvious implementation.

The device is the shipped profile with the most processors; if it has fewer than 4, copies of
its CPU are added, clearly named, to reach 4 (the cost model treats processors alike).

With ``--predictor FILE`` (a latency predictor, e.g. from ``edgepart calibrate --host``) it also
times ``CostModel.costs`` with the predictor backing every processor it has a configuration for
(kernels found with the executor's fusion rules, then one prediction per distinct kernel).

Usage: ``python benchmarks/cost_speed.py [--ops 100000] [--profile NAME] [--predictor FILE]``
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def synthetic(n_ops: int):
    from edgepart.ir.builder import ModelBuilder
    from edgepart.ir.dtypes import DType

    f32 = DType.FLOAT32
    mb = ModelBuilder()
    g = mb.subgraph("main")
    widths = [8, 12, 16, 20, 24, 28, 32, 40]
    x = g.input("x", f32, (1, 16, 16, widths[0]))
    consts = {}
    for c in widths:
        consts[c] = (
            g.constant(f"w{c}", np.zeros((c, 1, 1, c), np.float32)),
            g.constant(f"d{c}", np.zeros((1, 3, 3, c), np.float32)),
            g.constant(f"b{c}", np.zeros(c, np.float32)),
        )
    cur, c = x, widths[0]
    conv = {
        "padding": "SAME",
        "stride_h": 1,
        "stride_w": 1,
        "dilation_h_factor": 1,
        "dilation_w_factor": 1,
    }
    for i in range(n_ops):
        kind = i % 5
        if kind == 0:  # 1x1 conv to the next width
            c2 = widths[(i // 5) % len(widths)]
            w = (
                g.constant(f"cw{i % 64}_{c}_{c2}", np.zeros((c2, 1, 1, c), np.float32))
                if (c, c2, i % 64) not in consts
                else consts[(c, c2, i % 64)]
            )
            consts[(c, c2, i % 64)] = w
            y = g.tensor(f"t{i}", f32, (1, 16, 16, c2))
            g.op("CONV_2D", [cur, w, consts[c2][2]], [y], options=conv)
            c = c2
        elif kind == 1:
            y = g.tensor(f"t{i}", f32, (1, 16, 16, c))
            g.op(
                "DEPTHWISE_CONV_2D",
                [cur, consts[c][1], consts[c][2]],
                [y],
                options={**conv, "depth_multiplier": 1},
            )
        elif kind == 2:
            y = g.tensor(f"t{i}", f32, (1, 16, 16, c))
            g.op("ADD", [cur, cur], [y])
        elif kind == 3:
            y = g.tensor(f"t{i}", f32, (1, 16, 16, c))
            g.op(
                "MAX_POOL_2D",
                [cur],
                [y],
                options={
                    "padding": "SAME",
                    "stride_h": 1,
                    "stride_w": 1,
                    "filter_height": 3,
                    "filter_width": 3,
                },
            )
        else:
            y = g.tensor(f"t{i}", f32, (1, 16, 16, c))
            g.op("RELU", [cur], [y])
        cur = y
    g.output(cur)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", cur)])
    return mb.build()


def four_processors(name: str | None):
    from edgepart.cost.hardware import load_hardware
    from edgepart.devices.profile import profile_names

    names = [name] if name else profile_names()
    hws = [load_hardware(n) for n in names]
    hw = max(hws, key=lambda h: len(h.processors))
    procs = list(hw.processors)
    cpu = procs[0]
    k = 1
    while len(procs) < 4:
        procs.append(dataclasses.replace(cpu, name=f"{cpu.name}_copy{k}"))
        k += 1
    return dataclasses.replace(hw, processors=tuple(procs))


def best(fn, repeats: int = 5) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--profile")
    ap.add_argument("--predictor", help="latency predictor file to time as well")
    args = ap.parse_args()

    from edgepart.cost.model import CostModel
    from edgepart.cost.roofline import roofline_time
    from edgepart.cost.work import op_work
    from edgepart.profiling.host import ProfileConfig, profile_model
    from edgepart.profiling.timing import TimingConfig
    from edgepart.tflite.reader import read_model
    from edgepart.tflite.writer import write_model

    hw = four_processors(args.profile)
    print(f"device {hw.name}: processors {[p.name for p in hw.processors]}")
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        path = Path(d) / "big.tflite"
        path.write_bytes(write_model(synthetic(args.ops)))
        build_s = time.perf_counter() - t0
        small = Path(d) / "small.tflite"
        small.write_bytes(write_model(synthetic(16)))

        def fresh():
            return read_model(path)

        m = fresh()
        print(
            f"graph: {m.main.num_ops} ops, {m.main.num_tensors} tensors (built and written "
            f"in {build_s:.1f} s)"
        )
        res = profile_model(
            read_model(small), ProfileConfig(timing=TimingConfig(budget_s=0.01)), name="small"
        )
        table = res.table
        tname = res.processor
        print(
            f"latency table: {len(table.processors[tname].entries)} entries measured on "
            f"this host in {res.elapsed_s:.1f} s"
        )

        rows = []
        # each measurement uses a freshly read model: options decode lazily on first use
        t_work, _w = best(lambda: op_work(fresh().main), 3)
        rows.append(("op_work (FLOPs, bytes), includes read", t_work))
        t_read, _ = best(fresh, 3)
        rows.append(("read_model alone", t_read))

        def decode_options():
            sg = fresh().main
            opts = sg.op_options
            for i in range(sg.num_ops):
                opts[i]

        t_opts, _ = best(decode_options, 3)
        rows.append(("read + decode every op's options (the IR's lazy decode)", t_opts))

        def cost_roofline():
            mm = fresh()
            return CostModel(hw).costs(mm.main, mm)

        t_rf, gc = best(cost_roofline, 3)
        rows.append(("CostModel.costs, roofline, 4 procs (incl. read)", t_rf))

        def cost_table():
            mm = fresh()
            cm = CostModel(hw, table, table_for={hw.processors[0].name: tname})
            return cm.costs(mm.main, mm)

        t_tb, gct = best(cost_table, 3)
        rows.append(("CostModel.costs, table on cpu + roofline (incl. read)", t_tb))
        if args.predictor:
            from edgepart.cost.predictor import load_predictor

            pred = load_predictor(args.predictor)

            def cost_predictor():
                mm = fresh()
                return CostModel(hw, predictor=pred).costs(mm.main, mm)

            t_pr, gcp = best(cost_predictor, 3)
            rows.append(("CostModel.costs, predictor where it has a config (incl. read)", t_pr))
            print(f"predicted sources on {hw.processors[0].name}: {gcp.source_counts(0)}")
        mm = fresh()
        cm = CostModel(hw, table, table_for={hw.processors[0].name: tname})
        cm.costs(mm.main, mm)
        t_cached, _ = best(lambda: cm.costs(mm.main, mm), 5)
        rows.append(("CostModel.costs, cached", t_cached))
        ops = range(0, 1000)
        t_q, _ = best(
            lambda: [cm.costs(mm.main, mm).partition_latency(ops, p) for p in hw.processor_names], 5
        )
        rows.append(("partition_latency of 1000 ops x 4 procs", t_q))

        wk = op_work(mm.main)
        n_base = min(args.ops, 20_000)

        def baseline():
            return [
                [
                    roofline_time(float(wk.flops[i]), float(wk.bytes[i]), int(wk.dtype[i]), p)
                    for p in hw.processors
                ]
                for i in range(n_base)
            ]

        t_base, base = best(baseline, 1)
        t_base_full = t_base * mm.main.num_ops / n_base
        rows.append((f"baseline per-op Python roofline (extrapolated from {n_base})", t_base_full))
        ok = np.allclose(np.array(base), gc.latency[:n_base], rtol=1e-12)
        print()
        for label, t in rows:
            print(f"{label:<58} {t * 1e3:>9.1f} ms")
        print()
        vec = t_rf - t_read
        print(
            f"roofline matrix: vectorized {vec * 1e3:.1f} ms vs per-op loop "
            f"{t_base_full * 1e3:.0f} ms: {t_base_full / max(vec, 1e-9):.0f}x faster; "
            f"same values: {ok}"
        )
        counts = gct.source_counts(hw.processors[0].name)
        print(f"sources on {hw.processors[0].name}: {counts}")
        target = t_tb
        print(
            f"costing {mm.main.num_ops} ops on {len(hw.processors)} processors with a table: "
            f"{target:.3f} s including reading the model (target < 1 s): "
            f"{'met' if target < 1.0 else 'NOT met'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
