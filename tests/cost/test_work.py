"""Hand-computed FLOPs and bytes for one op of each kind (models built with edgepart's builder)."""

from __future__ import annotations

import numpy as np
import pytest

from edgepart.cost.work import op_work
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.values import Quantization

F32 = DType.FLOAT32


def one_op(op, inputs, outputs, options=None, *, consts=None, extra_ops=()):
    """A model with one op: ``inputs``/``outputs`` are (dtype, shape); ``consts`` maps input
    positions to constant arrays. Returns (model, work)."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    consts = consts or {}
    ins = []
    for k, spec in enumerate(inputs):
        if spec is None:
            ins.append(-1)
        elif k in consts:
            ins.append(g.constant(f"c{k}", consts[k]))
        else:
            ins.append(g.input(f"in{k}", spec[0], spec[1]))
    outs = [g.tensor(f"out{k}", dt, shp) for k, (dt, shp) in enumerate(outputs)]
    g.op(op, ins, outs, options=options)
    g.output(*outs)
    m = mb.build()
    return m, op_work(m.main, m)


def test_conv2d():
    # 1x8x8x4 -> 1x8x8x16 with 3x3 kernel: MACs = 8*8*16 * 3*3*4
    w = np.zeros((16, 3, 3, 4), np.float32)
    b = np.zeros(16, np.float32)
    _m, wk = one_op(
        "CONV_2D",
        [(F32, (1, 8, 8, 4)), (F32, w.shape), (F32, b.shape)],
        [(F32, (1, 8, 8, 16))],
        {"padding": "SAME"},
        consts={1: w, 2: b},
    )
    assert wk.macs[0] == 8 * 8 * 16 * 9 * 4
    assert wk.flops[0] == 2 * 8 * 8 * 16 * 9 * 4
    assert wk.act_read[0] == 8 * 8 * 4 * 4
    assert wk.act_written[0] == 8 * 8 * 16 * 4
    assert wk.weight_read[0] == w.nbytes + b.nbytes
    assert wk.dtype[0] == DType.FLOAT32 and wk.known[0]


def test_depthwise_conv2d():
    w = np.zeros((1, 3, 3, 8), np.float32)
    _, wk = one_op(
        "DEPTHWISE_CONV_2D",
        [(F32, (1, 10, 10, 8)), (F32, w.shape), None],
        [(F32, (1, 5, 5, 8))],
        {"stride_h": 2, "stride_w": 2, "depth_multiplier": 1},
        consts={1: w},
    )
    assert wk.macs[0] == 5 * 5 * 8 * 9


def test_transpose_conv():
    # inputs: output_shape, weights [O, kh, kw, I], input; each input element scatters kh*kw*O
    w = np.zeros((6, 3, 3, 4), np.float32)
    shape = np.array([1, 8, 8, 6], np.int32)
    _, wk = one_op(
        "TRANSPOSE_CONV",
        [(DType.INT32, (4,)), (F32, w.shape), (F32, (1, 4, 4, 4))],
        [(F32, (1, 8, 8, 6))],
        {"padding": "SAME", "stride_h": 2, "stride_w": 2},
        consts={0: shape, 1: w},
    )
    assert wk.macs[0] == 4 * 4 * 4 * 3 * 3 * 6


def test_conv3d():
    w = np.zeros((2, 3, 3, 4, 5), np.float32)  # kd, kh, kw, I, O
    _, wk = one_op(
        "CONV_3D",
        [(F32, (1, 6, 6, 6, 4)), (F32, w.shape)],
        [(F32, (1, 6, 6, 6, 5))],
        {"padding": "SAME"},
        consts={1: w},
    )
    assert wk.macs[0] == 6 * 6 * 6 * 5 * (2 * 3 * 3 * 4)


@pytest.mark.parametrize("keep", [False, True])
def test_fully_connected_batch_and_keep_num_dims(keep):
    w = np.zeros((10, 32), np.float32)
    out_shape = (2, 3, 10) if keep else (6, 10)
    _, wk = one_op(
        "FULLY_CONNECTED",
        [(F32, (2, 3, 32)), (F32, w.shape), None],
        [(F32, out_shape)],
        {"keep_num_dims": keep},
        consts={1: w},
    )
    assert wk.macs[0] == 6 * 32 * 10  # same work either way
    assert wk.weight_read[0] == 10 * 32 * 4


def test_fully_connected_hybrid_computes_in_int8():
    w = np.zeros((10, 32), np.int8)
    _, wk = one_op(
        "FULLY_CONNECTED",
        [(F32, (1, 32)), (DType.INT8, w.shape), None],
        [(F32, (1, 10))],
        consts={1: w},
    )
    assert wk.dtype[0] == DType.INT8
    assert wk.weight_read[0] == 320


@pytest.mark.parametrize("adj_x", [False, True])
def test_batch_matmul(adj_x):
    x_shape = (2, 7, 5) if adj_x else (2, 5, 7)  # K = 7 either way
    _, wk = one_op(
        "BATCH_MATMUL", [(F32, x_shape), (F32, (2, 7, 3))], [(F32, (2, 5, 3))], {"adj_x": adj_x}
    )
    assert wk.macs[0] == 2 * 5 * 3 * 7


@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
def test_pooling(op):
    _, wk = one_op(
        op,
        [(F32, (1, 8, 8, 3))],
        [(F32, (1, 4, 4, 3))],
        {"filter_height": 3, "filter_width": 2, "stride_h": 2, "stride_w": 2},
    )
    assert wk.flops[0] == 4 * 4 * 3 * 3 * 2
    assert wk.macs[0] == 0


def test_elementwise_broadcast():
    # ADD [1,4,4,8] + [8] -> [1,4,4,8]: one FLOP per output element; bytes of both inputs
    _, wk = one_op("ADD", [(F32, (1, 4, 4, 8)), (F32, (8,))], [(F32, (1, 4, 4, 8))])
    assert wk.flops[0] == 128
    assert wk.act_read[0] == (128 + 8) * 4 and wk.act_written[0] == 128 * 4


def test_unary_activation_counts():
    _, wk = one_op("LOGISTIC", [(F32, (3, 5))], [(F32, (3, 5))])
    assert wk.flops[0] == 4 * 15  # neg, exp, add, divide
    _, wk = one_op("HARD_SWISH", [(F32, (3, 5))], [(F32, (3, 5))])
    assert wk.flops[0] == 5 * 15


@pytest.mark.parametrize("op", ["SOFTMAX", "LOG_SOFTMAX"])
def test_softmax(op):
    _, wk = one_op(op, [(F32, (2, 10))], [(F32, (2, 10))])
    assert wk.flops[0] == 5 * 20


def test_reduction():
    axes = np.array([1, 2], np.int32)
    _, wk = one_op(
        "MEAN", [(F32, (1, 7, 7, 16)), (DType.INT32, (2,))], [(F32, (1, 16))], consts={1: axes}
    )
    assert wk.flops[0] == 7 * 7 * 16


def test_resize():
    size = np.array([8, 8], np.int32)
    _, wk = one_op(
        "RESIZE_BILINEAR",
        [(F32, (1, 4, 4, 2)), (DType.INT32, (2,))],
        [(F32, (1, 8, 8, 2))],
        consts={1: size},
    )
    assert wk.flops[0] == 9 * 128
    _, wk = one_op(
        "RESIZE_NEAREST_NEIGHBOR",
        [(F32, (1, 4, 4, 2)), (DType.INT32, (2,))],
        [(F32, (1, 8, 8, 2))],
        consts={1: size},
    )
    assert wk.flops[0] == 0 and wk.act_written[0] == 128 * 4


@pytest.mark.parametrize("op", ["CONCATENATION", "PACK"])
def test_data_movement_moves_bytes_only(op):
    out = (1, 4, 6) if op == "CONCATENATION" else (2, 4, 3)
    _, wk = one_op(op, [(F32, (1, 4, 3)), (F32, (1, 4, 3))], [(F32, out)])
    assert wk.flops[0] == 0
    assert wk.act_read[0] == 2 * 12 * 4 and wk.act_written[0] == 24 * 4


def test_slice_reads_only_the_slice():
    begin = np.array([0, 2], np.int32)
    size = np.array([4, 3], np.int32)
    _, wk = one_op(
        "SLICE",
        [(F32, (4, 100)), (DType.INT32, (2,)), (DType.INT32, (2,))],
        [(F32, (4, 3))],
        consts={1: begin, 2: size},
    )
    assert wk.act_read[0] == 12 * 4  # not the 400-element input
    assert wk.weight_read[0] == 16


def test_gather_reads_only_the_rows():
    table = np.zeros((1000, 16), np.float32)
    _, wk = one_op(
        "GATHER", [(F32, table.shape), (DType.INT32, (5,))], [(F32, (5, 16))], consts={0: table}
    )
    assert wk.weight_read[0] == 5 * 16 * 4
    assert wk.act_read[0] == 5 * 4


def test_embedding_lookup():
    table = np.zeros((100, 8), np.float32)
    _, wk = one_op(
        "EMBEDDING_LOOKUP",
        [(DType.INT32, (3,)), (F32, table.shape)],
        [(F32, (3, 8))],
        consts={1: table},
    )
    assert wk.weight_read[0] == 3 * 8 * 4 and wk.act_read[0] == 12


def test_pad_and_mirror_pad():
    pads = np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32)
    for op in ("PAD", "MIRROR_PAD"):
        _, wk = one_op(
            op,
            [(F32, (1, 4, 4, 2)), (DType.INT32, (4, 2))],
            [(F32, (1, 6, 6, 2))],
            consts={1: pads},
        )
        assert wk.flops[0] == 0
        assert wk.act_read[0] == 32 * 4 and wk.act_written[0] == 72 * 4


def test_unidirectional_lstm():
    # 5 steps x batch 2, 6 inputs, 4 cells, no projection: 8 weight matrices per step
    n_in, n_cell, steps, batch = 6, 4, 5, 2
    inputs = [(F32, (steps, batch, n_in))]
    consts = {}
    for k in range(1, 5):
        consts[k] = np.zeros((n_cell, n_in), np.float32)
        inputs.append((F32, (n_cell, n_in)))
    for k in range(5, 9):
        consts[k] = np.zeros((n_cell, n_cell), np.float32)
        inputs.append((F32, (n_cell, n_cell)))
    inputs += [None, None, None]  # peepholes
    for k in range(12, 16):
        consts[k] = np.zeros(n_cell, np.float32)
        inputs.append((F32, (n_cell,)))
    inputs += [None, None]  # projection
    inputs += [(F32, (batch, n_cell)), (F32, (batch, n_cell))]  # states
    _, wk = one_op(
        "UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [(F32, (steps, batch, n_cell))], consts=consts
    )
    assert wk.macs[0] == steps * batch * (4 * n_cell * n_in + 4 * n_cell * n_cell)


def test_rnn():
    inputs = [(F32, (3, 5)), (F32, (7, 5)), (F32, (7, 7)), (F32, (7,)), (F32, (3, 7))]
    consts = {
        1: np.zeros((7, 5), np.float32),
        2: np.zeros((7, 7), np.float32),
        3: np.zeros(7, np.float32),
    }
    _, wk = one_op("RNN", inputs, [(F32, (3, 7))], consts=consts)
    assert wk.macs[0] == 3 * (7 * 5 + 7 * 7)


def test_quantize():
    q = Quantization(np.array([0.1], np.float32), np.array([0], np.int64))
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", F32, (4, 4))
    y = g.tensor("y", DType.INT8, (4, 4), quantization=q)
    g.op("QUANTIZE", [x], [y])
    g.output(y)
    m = mb.build()
    wk = op_work(m.main, m)
    assert wk.flops[0] == 2 * 16
    assert wk.act_read[0] == 64 and wk.act_written[0] == 16


def test_dequantize_of_constant_is_folded_and_becomes_weight():
    # fp16 weights: DEQUANTIZE runs once at preparation; FC reads its output as weights
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", F32, (1, 8))
    w16 = g.constant("w16", np.zeros((4, 8), np.float16))
    w = g.tensor("w", F32, (4, 8))
    y = g.tensor("y", F32, (1, 4))
    g.op("DEQUANTIZE", [w16], [w])
    g.op("FULLY_CONNECTED", [x, w, -1], [y])
    g.output(y)
    m = mb.build()
    wk = op_work(m.main, m)
    assert wk.folded.tolist() == [True, False]
    assert wk.flops[0] == 0 and wk.bytes[0] == 0
    assert wk.weight_read[1] == 4 * 8 * 4 and wk.act_read[1] == 32
    assert wk.macs[1] == 32


def test_unknown_custom_op_is_flagged_and_conservative():
    _, wk = one_op("MyCustomThing", [(F32, (10,))], [(F32, (20,))])
    assert not wk.known[0]
    assert wk.flops[0] == 30  # one per element read or written
    assert wk.bytes[0] == 120


def test_if_costs_the_dearer_branch():
    mb = ModelBuilder()
    main = mb.subgraph("main")
    cond = main.input("c", DType.BOOL, (1,))
    x = main.input("x", F32, (1, 8))
    y = main.tensor("y", F32, (1, 8))
    main.op("IF", [cond, x], [y], options={"then_subgraph_index": 1, "else_subgraph_index": 2})
    main.output(y)
    for k, ops in ((1, 1), (2, 3)):  # else branch: three ADDs
        b = mb.subgraph(f"b{k}")
        cur = b.input("x", F32, (1, 8))
        for j in range(ops):
            nxt = b.tensor(f"t{j}", F32, (1, 8))
            b.op("ADD", [cur, cur], [nxt])
            cur = nxt
        b.output(cur)
    m = mb.build()
    wk = op_work(m.main, m)
    assert wk.flops[0] == 3 * 8 and wk.known[0]
    assert not op_work(m.main).known[0]  # without the model the branches are unknown


def test_vectorized_equals_per_op():
    # costing a 3-op subset gives the same numbers as the whole graph for those ops
    w = np.zeros((4, 1, 1, 4), np.float32)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    cur = g.input("x", F32, (1, 6, 6, 4))
    wc = g.constant("w", w)
    for j in range(3):
        nxt = g.tensor(f"t{j}", F32, (1, 6, 6, 4))
        g.op("CONV_2D", [cur, wc, -1], [nxt])
        cur = nxt
    g.output(cur)
    m = mb.build()
    wk = op_work(m.main, m)
    assert wk.macs.tolist() == [36 * 4 * 4] * 3
    sub = wk.take(np.array([2, 0]))
    assert sub.macs.tolist() == [576, 576]
