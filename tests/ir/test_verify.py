"""verify_model names every broken invariant; well-formed models pass."""

from __future__ import annotations

import numpy as np

from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.values import Quantization
from edgepart.ir.verify import verify_model


def base():
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 4))
    y = g.tensor("y", DType.FLOAT32, (1, 4))
    return mb, g, x, y


def test_well_formed_model_passes():
    mb, g, x, y = base()
    g.op("RELU", [x], [y])
    g.output(y)
    assert verify_model(mb.build()) == []


def test_each_broken_invariant_is_reported():
    mb, g, x, y = base()
    z = g.tensor("z", DType.FLOAT32, (1, 4))
    ghost = g.tensor("ghost", DType.FLOAT32, (1, 4))
    g.op("RELU", [x], [y])
    g.op("TANH", [x], [y])  # y produced twice
    g.op("ADD", [ghost, y], [z])  # ghost never defined
    g.op("RELU", [z], [x])  # produces a subgraph input
    g.op("RELU", [x], [99])  # out of range
    g.output(z)
    problems = verify_model(mb.build())
    assert any("names tensor 99" in p for p in problems), problems
    mb2, g2, x2, y2 = base()
    z2 = g2.tensor("z", DType.FLOAT32, (1, 4))
    ghost2 = g2.tensor("ghost", DType.FLOAT32, (1, 4))
    g2.op("RELU", [x2], [y2])
    g2.op("TANH", [x2], [y2])
    g2.op("ADD", [ghost2, y2], [z2])
    g2.op("RELU", [z2], [x2])
    g2.output(z2)
    text = "\n".join(verify_model(mb2.build()))
    assert "tensor 1 'y' is produced by 2 ops" in text
    assert "tensor 3 'ghost' is read but never defined" in text
    assert "subgraph input tensor 0 'x' is also produced by an op" in text


def test_quantization_and_constant_size_checks():
    mb, g, x, y = base()
    q = Quantization(
        scale=np.ones(3, np.float32), zero_point=np.zeros(3, np.int64), quantized_dimension=0
    )
    w = g.constant("w", np.ones((4, 4), np.int8), quantization=q)
    short = g.constant("short", np.ones(2, np.float32), shape=(4,))
    g.op("FULLY_CONNECTED", [x, w, -1], [y])
    g.op("ADD", [y, short], [g.tensor("o", DType.FLOAT32, (1, 4))])
    text = "\n".join(verify_model(mb.build()))
    assert "has 3 scales on dimension 0 of shape [4, 4]" in text
    assert "holds 8 bytes, its shape [4] of FLOAT32 needs 16" in text


def test_execution_order_and_signature_checks():
    mb, g, x, y = base()
    z = g.tensor("z", DType.FLOAT32, (1, 4))
    g.op("RELU", [y], [z])  # reads y before it is produced
    g.op("RELU", [x], [y])
    g.output(z)
    mb.add_signature("s", 3, [("x", 0)], [("z", 2)])
    text = "\n".join(verify_model(mb.build()))
    assert "not in a valid execution order" in text
    assert "signature 's' names subgraph 3" in text


def test_control_flow_recursion_is_reported():
    mb = ModelBuilder()
    main = mb.subgraph("main")
    body = mb.subgraph("body")
    x = main.input("x", DType.FLOAT32, (1,))
    y = main.tensor("y", DType.FLOAT32, (1,))
    main.op("CALL_ONCE", [], [], options={"init_subgraph_index": 1})
    main.op("RELU", [x], [y])
    main.output(y)
    body.op("CALL_ONCE", [], [], options={"init_subgraph_index": 1})
    text = "\n".join(verify_model(mb.build()))
    assert "subgraph 1 calls itself" in text
