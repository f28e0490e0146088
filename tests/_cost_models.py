"""Small hand-built models shared by the cost tests."""

from __future__ import annotations

import numpy as np

from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model

F32 = DType.FLOAT32


def conv_chain(n: int = 3, size: int = 8, channels: int = 8, seed: int = 0) -> Model:
    """x -> [CONV_2D 3x3 -> RELU]... -> ADD(x) : a runnable float model with a signature."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", F32, (1, size, size, channels))
    cur = x
    for j in range(n):
        w = g.constant(f"w{j}", rng.normal(0, 0.1, (channels, 3, 3, channels)).astype(np.float32))
        b = g.constant(f"b{j}", np.zeros(channels, np.float32))
        c = g.tensor(f"conv{j}", F32, (1, size, size, channels))
        g.op(
            "CONV_2D",
            [cur, w, b],
            [c],
            options={
                "padding": "SAME",
                "stride_h": 1,
                "stride_w": 1,
                "dilation_h_factor": 1,
                "dilation_w_factor": 1,
            },
        )
        r = g.tensor(f"relu{j}", F32, (1, size, size, channels))
        g.op("RELU", [c], [r])
        cur = r
    y = g.tensor("y", F32, (1, size, size, channels))
    g.op("ADD", [cur, x], [y])
    g.output(y)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", y)])
    return mb.build()
