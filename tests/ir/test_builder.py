"""Hand-built models written by edgepart's writer run in LiteRT with the expected results."""

from __future__ import annotations

import numpy as np
from _litert import interpreter, run

from edgepart.ir.builder import ModelBuilder, default_options
from edgepart.ir.dtypes import DType
from edgepart.ir.values import Quantization
from edgepart.tflite.reader import read_model_bytes
from edgepart.tflite.writer import write_model


def test_add_relu_chain_runs_in_litert():
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 4))
    c = g.constant("c", np.array([[1, -2, 3, -4]], np.float32))
    y = g.tensor("y", DType.FLOAT32, (1, 4))
    z = g.tensor("z", DType.FLOAT32, (1, 4))
    g.op("ADD", [x, c], [y], options={"fused_activation_function": "RELU"})
    g.op("MUL", [y, c], [z])
    g.output(z)
    mb.add_signature("serving_default", 0, [("x", x)], [("z", z)])
    blob = write_model(mb.build())
    for xnn in (True, False):
        (out,) = run(interpreter(blob, xnnpack=xnn), [np.array([[1, 1, 1, 1]], np.float32)])
        np.testing.assert_array_equal(out, [[2, 0, 12, 0]])
    again = read_model_bytes(blob)
    assert again.main.op(0).options["fused_activation_function"] == "RELU"
    assert again.signature_defs[0].inputs == (("x", 0),)


def test_op_codes_above_127_and_custom_ops_roundtrip():
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 4))
    axis = g.constant("axis", np.array(1, np.int32))
    y = g.tensor("y", DType.FLOAT32, (1, 4))
    z = g.tensor("z", DType.FLOAT32, (1, 4))
    g.op("CUMSUM", [x, axis], [y])  # builtin code 128
    g.op("edgetpu-custom-op", [y], [z], custom_options=b"\x01\x02")
    g.output(z)
    m = read_model_bytes(write_model(mb.build()))
    assert m.main.op(0).name == "CUMSUM" and m.main.op(0).opcode.builtin == 128
    assert m.main.op(1).name == "edgetpu-custom-op" and m.main.op(1).opcode.is_custom
    assert m.main.op(1).custom_options == b"\x01\x02"


def test_quantized_per_channel_constant_roundtrip():
    mb = ModelBuilder()
    g = mb.subgraph("main")
    q = Quantization(
        scale=np.array([0.5, 0.25], np.float32),
        zero_point=np.zeros(2, np.int64),
        quantized_dimension=0,
    )
    w = g.constant("w", np.array([[1, 2], [3, 4]], np.int8), quantization=q)
    g.output(w)
    t = read_model_bytes(write_model(mb.build())).main.tensor(w)
    assert t.quantization is not None and t.quantization.is_per_channel
    np.testing.assert_array_equal(t.quantization.scale, [0.5, 0.25])
    np.testing.assert_array_equal(t.numpy(), [[1, 2], [3, 4]])


def test_default_options_fill_schema_defaults():
    o = default_options("Conv2DOptions", stride_w=2)
    assert o["stride_w"] == 2 and o["dilation_h_factor"] == 1 and o["padding"] == "SAME"
