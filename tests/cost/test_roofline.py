"""Roofline math: max(FLOPs / peak(dtype), bytes / bandwidth) + overhead, intensity, bound."""

from __future__ import annotations

import math

import numpy as np
import pytest

from edgepart.cost.hardware import Hardware, LinkSpec, ProcessorSpec
from edgepart.cost.roofline import roofline, roofline_time
from edgepart.cost.work import OpWork
from edgepart.ir.dtypes import DType

CPU = ProcessorSpec(
    "cpu",
    peak_ops={"FLOAT32": 100e9, "INT8": 400e9},
    bandwidth=10e9,
    op_overhead_s=1e-6,
    invoke_overhead_s=5e-6,
)
NPU = ProcessorSpec("npu", kind="npu", peak_ops={"INT8": 4e12}, bandwidth=50e9, domain="sram")


def work(flops, nbytes, dtypes):
    n = len(flops)
    return OpWork(
        macs=np.zeros(n, np.int64),
        flops=np.asarray(flops, np.float64),
        act_read=np.asarray(nbytes, np.int64),
        act_written=np.zeros(n, np.int64),
        weight_read=np.zeros(n, np.int64),
        dtype=np.asarray(dtypes, np.int8),
        known=np.ones(n, bool),
        folded=np.zeros(n, bool),
    )


def test_compute_and_memory_bound():
    # op 0: 1 GFLOP, 1 MB fp32 -> compute 10 ms vs memory 0.1 ms: compute-bound
    # op 1: 1 MFLOP, 100 MB -> memory 10 ms: memory-bound
    w = work([1e9, 1e6], [1e6, 100e6], [DType.FLOAT32, DType.FLOAT32])
    r = roofline(w, (CPU,))
    assert r.compute_s[0, 0] == pytest.approx(1e-2)
    assert r.memory_s[1, 0] == pytest.approx(1e-2)
    assert r.time_s[:, 0] == pytest.approx([1e-2 + 1e-6, 1e-2 + 1e-6])
    assert r.compute_bound[:, 0].tolist() == [True, False]
    assert r.intensity.tolist() == pytest.approx([1000.0, 0.01])


def test_dtype_selects_the_peak():
    w = work([4e9, 4e9], [1, 1], [DType.FLOAT32, DType.INT8])
    r = roofline(w, (CPU,))
    assert r.compute_s[:, 0] == pytest.approx([0.04, 0.01])


def test_float_on_an_int8_only_processor_is_infinite():
    w = work([1e6, 1e6], [10, 10], [DType.FLOAT32, DType.INT8])
    r = roofline(w, (CPU, NPU))
    assert math.isinf(r.time_s[0, 1])
    assert r.time_s[1, 1] == pytest.approx(1e6 / 4e12)


def test_fp16_falls_back_to_fp32_peak_and_int16_to_int8():
    assert CPU.peak(DType.FLOAT16) == 100e9
    assert CPU.peak(DType.INT16) == 400e9
    assert NPU.peak(DType.FLOAT16) == 0.0


def test_scalar_roofline_time_matches_matrix():
    w = work([3e8], [2e6], [DType.FLOAT32])
    assert roofline_time(3e8, 2e6, DType.FLOAT32, CPU) == pytest.approx(
        float(roofline(w, (CPU,)).time_s[0, 0])
    )


def test_ridge_point():
    assert CPU.ridge == pytest.approx(10.0)


def test_link_cost_and_lookup():
    hw = Hardware("dev", (CPU, NPU), (LinkSpec("dram", "sram", 1e9, 1e-4),))
    link = hw.link("sram", "dram")  # only one direction listed: used both ways
    assert link is not None and link.cost(1e6) == pytest.approx(1e-4 + 1e-3)
    assert hw.link("dram", "dram") is None
