"""benchmarks/in_context.py's cuts: one prefix per kernel, in op order, every prefix a model."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import in_context  # noqa: E402  (benchmarks/ on sys.path)

from edgepart.cost.kernels import decompose  # noqa: E402
from edgepart.ir.builder import ModelBuilder  # noqa: E402
from edgepart.ir.dtypes import DType  # noqa: E402
from edgepart.tflite.reader import read_model_bytes  # noqa: E402
from edgepart.tflite.writer import write_model  # noqa: E402

F32 = DType.FLOAT32


def _model():
    """x -> FULLY_CONNECTED -> ADD(bias) -> TANH -> RESHAPE -> output: XNNPACK fuses nothing
    here but the reshape is free, so 4 ops make 3 kernels."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", F32, (1, 16))
    w = g.constant("w", np.full((8, 16), 0.1, np.float32))
    y = g.tensor("y", F32, (1, 8))
    g.op("FULLY_CONNECTED", [x, w, -1], [y])
    b = g.constant("b", np.ones((1, 8), np.float32))
    z = g.tensor("z", F32, (1, 8))
    g.op("ADD", [y, b], [z])
    t = g.tensor("t", F32, (1, 8))
    g.op("TANH", [z], [t])
    s = g.constant("s", np.array([8], np.int32))
    r = g.tensor("r", F32, (8,))
    g.op("RESHAPE", [t, s], [r])
    g.output(r)
    return read_model_bytes(write_model(mb.build()))


def test_one_prefix_per_kernel_in_op_order_and_each_is_a_model():
    model = _model()
    k = decompose(model, "xnnpack")
    cuts = in_context.kernel_cuts(k)
    ends = [n for n, _ in cuts]
    assert ends == sorted(ends) and len({j for _, ks in cuts for j in ks}) == len(k)
    for n, kernels in cuts:  # a cut comes after every op of its kernels
        assert all(max(k.ops[j]) < n for j in kernels)
    pieces = in_context.prefix_models(model, cuts)
    assert [p[1] for p in pieces] == [ks for _, ks in cuts]
    for n, _, content in pieces:
        if n < model.main.num_ops:
            assert read_model_bytes(content).main.num_ops == n
        else:  # the whole model is timed from its own file
            assert content == b""


def test_a_prefix_that_cannot_stand_alone_joins_the_next(monkeypatch):
    model = _model()
    cuts = in_context.kernel_cuts(decompose(model, "xnnpack"))
    first = cuts[0][0]
    real = in_context.extract

    def picky(m, ops, **kw):
        if len(ops) == first:
            raise ValueError("cannot cut here")
        return real(m, ops, **kw)

    monkeypatch.setattr(in_context, "extract", picky)
    pieces = in_context.prefix_models(model, cuts)
    assert len(pieces) == len(cuts) - 1
    assert pieces[0][1] == cuts[0][1] + cuts[1][1]
