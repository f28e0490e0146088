"""Models and bundles for the report tests, built without TensorFlow.

``branchy_model(blocks)`` is a generated graph of ``7 * blocks + blocks // 5`` ops: each block
forks into two branches (ADD then TANH, MUL then LOGISTIC), joins them and feeds a residual
(MUL, ADD); one block in ten ends in a CUMSUM (refused by NNAPI and XNNPACK) and another in a
REVERSE_V2 (refused by the GPU and XNNPACK), so the per-op table has refusal reasons and the
plan has cuts to make.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.tflite.writer import write_model

F32 = DType.FLOAT32


def branchy_model(path: Path, blocks: int = 180, width: int = 4096) -> Path:
    """Write the generated model to ``path`` (deterministic) and return ``path``."""
    rng = np.random.default_rng(3)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    s = (1, width)
    x = g.input("x", F32, s)
    n = 0

    def t(name: str) -> int:
        nonlocal n
        n += 1
        return g.tensor(f"{name}_{n}", F32, s)

    for b in range(blocks):
        c1 = g.constant(f"c1_{b}", rng.uniform(-1, 1, s).astype(np.float32))
        c2 = g.constant(f"c2_{b}", rng.uniform(0.5, 1.5, s).astype(np.float32))
        a, m = t("add"), t("mul")
        g.op("ADD", [x, c1], [a])
        g.op("MUL", [x, c2], [m])
        ta, tb = t("tanh"), t("sigm")
        g.op("TANH", [a], [ta])
        g.op("LOGISTIC", [m], [tb])
        j = t("join")
        g.op("ADD", [ta, tb], [j])
        r = t("res")
        g.op("MUL", [j, x], [r])
        y = t("out")
        g.op("ADD", [r, j], [y])
        x = y
        if b % 10 == 4:  # the NPU (NNAPI) refuses CUMSUM
            z = t("cumsum")
            g.op("CUMSUM", [x, g.constant(f"axis_{b}", np.array(1, np.int32))], [z])
            x = z
        if b % 10 == 9:  # the GPU refuses REVERSE_V2
            z = t("reverse")
            g.op("REVERSE_V2", [x, g.constant(f"axis_{b}", np.array([1], np.int32))], [z])
            x = z
    g.output(x)
    path.write_bytes(bytes(write_model(mb.build())))
    return path
