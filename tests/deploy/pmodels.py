"""Models for the partitioner's tests, built with edgepart's own builder (no TensorFlow)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model
from edgepart.ir.values import Quantization

sys.path.append(str(Path(__file__).resolve().parents[1] / "runtime"))
# the runtime tests own this builder; their folder is put on sys.path just above
from rt_models import branchy_mlp

__all__ = ["branchy_fp32", "int8_mlp"]


def _q(scale: float, n: int = 1) -> Quantization:
    return Quantization(np.full(n, scale, np.float32), np.zeros(n, np.int64))


def int8_mlp(*, width: int = 1024, depth: int = 12, seed: int = 0) -> Model:
    """A fully int8 chain of ``depth`` FULLY_CONNECTED+RELU layers of ``width x width`` int8
    weights (``width * width`` bytes each: 12 x 1 MiB by default, more than the Edge TPU's 8 MB
    parameter memory), int8 input and output, per-tensor quantization."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    s_act, s_w = 0.05, 0.004
    x = g.input("x", DType.INT8, (1, width), quantization=_q(s_act))
    h = x
    for d in range(depth):
        w = g.constant(
            f"w{d}",
            rng.integers(-127, 128, (width, width), dtype=np.int8),
            quantization=_q(s_w),
        )
        b = g.constant(
            f"b{d}",
            rng.integers(-2000, 2000, width).astype(np.int32),
            quantization=_q(s_act * s_w),
        )
        out = g.tensor(f"h{d}", DType.INT8, (1, width), quantization=_q(s_act))
        g.op(
            "FULLY_CONNECTED",
            [h, w, b],
            [out],
            options={"fused_activation_function": "RELU"},
            version=4,
        )
        h = out
    g.output(h)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", h)])
    return mb.build()


def branchy_fp32(*, width: int = 256, depth: int = 3, branches: int = 2, seed: int = 0) -> Model:
    """``x -> branches x (depth FULLY_CONNECTED+RELU) -> ADD chain -> y`` in float32, with a
    ``serving_default`` signature: the runtime tests' ``branchy_mlp`` (one builder for both).

    Ops are laid out branch by branch (branch ``b`` is ops ``b*depth .. b*depth+depth-1``),
    then the ADDs: whole branches can run concurrently on different units.
    """
    return branchy_mlp(width=width, depth=depth, branches=branches, seed=seed, signature=True)
