"""This host's roofs for its device profile: compute peaks, memory bandwidth, capacity.

Measured the way the old hand-written ``x86_host`` profile was: peak float32 and int8
throughput as the best of several runs of a stack of eight 1024x1024 ``FULLY_CONNECTED`` ops
on a batch of 64 rows under LiteRT's XNNPACK with every core (the GEMM path every convolution
also takes); bandwidth as the best of five NumPy copies of 256 MiB (bytes copied per second);
capacity from ``/proc/meminfo``.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.values import Quantization
from edgepart.profiling.timing import fill_inputs, make_interpreter
from edgepart.tflite.writer import write_model

__all__ = ["fc_stack_model", "measure_bandwidth", "measure_peak", "memory_bytes"]


def fc_stack_model(int8: bool, layers: int = 8, width: int = 1024, batch: int = 64) -> bytes:
    """A stack of ``layers`` FULLY_CONNECTED ops (float32, or int8 with int8 I/O)."""
    rng = np.random.default_rng(3)
    mb = ModelBuilder(description="edgepart host peak probe")
    g = mb.subgraph("main")

    def q(s: float) -> Quantization | None:
        return Quantization(np.array([s], np.float32), np.array([0], np.int64)) if int8 else None

    dt = DType.INT8 if int8 else DType.FLOAT32
    x = x0 = g.input("x", dt, (batch, width), quantization=q(0.05))
    for k in range(layers):
        if int8:
            w = g.constant(
                f"w{k}",
                rng.integers(-100, 100, (width, width), dtype=np.int8),
                quantization=q(0.001),
            )
            b = g.constant(f"b{k}", np.zeros(width, np.int32), quantization=q(0.00005))
        else:
            w = g.constant(f"w{k}", rng.standard_normal((width, width)).astype(np.float32) * 0.03)
            b = g.constant(f"b{k}", np.zeros(width, np.float32))
        y = g.tensor(f"y{k}", dt, (batch, width), quantization=q(0.05))
        g.op("FULLY_CONNECTED", [x, w, b], [y], options={"fused_activation_function": "RELU"})
        x = y
    g.output(x)
    mb.add_signature("serving_default", 0, [("x", x0)], [("y", x)])
    return write_model(mb.build())


def measure_peak(int8: bool, threads: int, runs: int = 15) -> dict[str, Any]:
    """Best and median operations per second of the FC stack (2 ops per MAC)."""
    layers, width, batch = 8, 1024, 64
    it = make_interpreter(fc_stack_model(int8, layers, width, batch), "xnnpack", threads)
    fill_inputs(it, 0)
    it.invoke()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        it.invoke()
        times.append(time.perf_counter() - t0)
    ops = 2.0 * layers * width * width * batch
    return {
        "best": ops / min(times),
        "median": ops / float(np.median(times)),
        "source": (
            f"LiteRT XNNPACK {'int8' if int8 else 'fp32'} stack of {layers} {width}x{width} "
            f"FULLY_CONNECTED, batch {batch}, {threads} thread(s), best of {runs} "
            f"(median {ops / float(np.median(times)) / 1e9:.1f} G op/s)"
        ),
    }


def measure_bandwidth(mib: int = 256, runs: int = 5) -> float:
    """Bytes copied per second by ``numpy.copyto`` of ``mib`` MiB, best of ``runs``."""
    a = np.ones(mib << 18, dtype=np.float32)
    b = np.empty_like(a)
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t0)
    return float(a.nbytes / best)


def memory_bytes() -> tuple[int, int]:
    """Total and available memory (``/proc/meminfo``; the physical pages count elsewhere)."""
    total = avail = 0
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                k, _, v = line.partition(":")
                kb = int(v.split()[0]) * 1024 if v.split() else 0
                if k == "MemTotal":
                    total = kb
                elif k == "MemAvailable":
                    avail = kb
    except OSError:
        pass
    if not total:
        total = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        avail = total // 2
    return total, avail or total // 2
