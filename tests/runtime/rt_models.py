"""Small models built with edgepart's own builder (no TensorFlow), run by the real LiteRT."""

from __future__ import annotations

import numpy as np

from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model

__all__ = ["branchy_mlp"]


def branchy_mlp(
    *, width: int = 64, depth: int = 3, branches: int = 2, seed: int = 0, signature: bool = True
) -> Model:
    """``x -> [branches] x (depth FULLY_CONNECTED+RELU) -> ADD chain -> y``.

    Ops are laid out branch by branch, so branch ``b`` is ops ``b*depth .. b*depth+depth-1``
    and the ADDs follow. Branches share no ops: partitions made of whole branches can run
    concurrently.
    """
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, width))
    ends = []
    for b in range(branches):
        h = x
        for d in range(depth):
            w = g.constant(
                f"w{b}_{d}",
                (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32),
            )
            bias = g.constant(f"b{b}_{d}", rng.standard_normal(width).astype(np.float32) * 0.1)
            out = g.tensor(f"h{b}_{d}", DType.FLOAT32, (1, width))
            g.op(
                "FULLY_CONNECTED",
                [h, w, bias],
                [out],
                options={"fused_activation_function": "RELU"},
            )
            h = out
        ends.append(h)
    acc = ends[0]
    for k, e in enumerate(ends[1:]):
        out = g.tensor(f"sum{k}", DType.FLOAT32, (1, width))
        g.op("ADD", [acc, e], [out])
        acc = out
    g.output(acc)
    if signature:
        mb.add_signature("serving_default", 0, [("x", x)], [("y", acc)])
    return mb.build()


def gather_model(*, size: int = 16, seed: int = 0) -> Model:
    """``y = FC(x) + GATHER(table, idx)``: invoke fails inside LiteRT when ``idx`` is out of range.

    Ops: 0 FULLY_CONNECTED (x), 1 GATHER (idx), 2 ADD. Partitions {0} and {1} are independent.
    """
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, size))
    idx = g.input("idx", DType.INT32, (1,))
    w = g.constant("w", rng.standard_normal((size, size)).astype(np.float32))
    h = g.tensor("h", DType.FLOAT32, (1, size))
    g.op("FULLY_CONNECTED", [x, w, -1], [h])
    table = g.constant("table", rng.standard_normal((4, size)).astype(np.float32))
    row = g.tensor("row", DType.FLOAT32, (1, size))
    g.op("GATHER", [table, idx], [row], options={"axis": 0})
    y = g.tensor("y", DType.FLOAT32, (1, size))
    g.op("ADD", [h, row], [y])
    g.output(y)
    mb.add_signature("serving_default", 0, [("x", x), ("idx", idx)], [("y", y)])
    return mb.build()
