"""Split rewrites on hand-built models: shapes, weights, per-channel quantization, collectives,
refusals with their reasons, the editor's guarantees. Real-model equivalence is in
``test_split_corpus.py``."""

from __future__ import annotations

import numpy as np
import pytest

from edgepart.errors import UnsupportedOpError, UsageError
from edgepart.ir import analysis
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.split import (
    FLOAT_GRANULE,
    SplitSpec,
    block_candidates,
    shard_sizes,
    split_extent,
    split_model,
    split_modes,
)
from edgepart.ir.values import Quantization
from edgepart.ir.verify import verify_model
from edgepart.tflite.reader import read_model_bytes
from edgepart.tflite.writer import write_model
from tests._litert import interpreter, run


def _q(scale, zp=0, dim=0):
    scale = np.atleast_1d(np.asarray(scale, np.float32))
    zp = np.full(len(scale), zp, np.int64)
    return Quantization(scale=scale, zero_point=zp, quantized_dimension=dim)


def conv_model(cout=24, act="RELU6"):
    rng = np.random.default_rng(1)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 8, 8, 5))
    w = g.constant("w", rng.standard_normal((cout, 3, 3, 5)).astype(np.float32))
    b = g.constant("b", rng.standard_normal(cout).astype(np.float32))
    y = g.tensor("y", DType.FLOAT32, (1, 8, 8, cout))
    g.op(
        "CONV_2D",
        [x, w, b],
        [y],
        options={"padding": "SAME", "stride_w": 1, "stride_h": 1, "fused_activation_function": act},
    )
    z = g.tensor("z", DType.FLOAT32, (1, 8, 8, cout))
    g.op("TANH", [y], [z])
    g.output(z)
    mb.add_signature("serving_default", 0, [("x", x)], [("z", z)])
    return mb.build()


def int8_conv_model(cout=20):
    rng = np.random.default_rng(2)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.INT8, (1, 6, 6, 4), quantization=_q(0.05, 3))
    wq = _q(rng.uniform(0.001, 0.01, cout), 0, 0)
    w = g.constant("w", rng.integers(-127, 127, (cout, 3, 3, 4)).astype(np.int8), quantization=wq)
    bq = _q(wq.scale * 0.05, 0, 0)
    b = g.constant("b", rng.integers(-500, 500, cout).astype(np.int32), quantization=bq)
    y = g.tensor("y", DType.INT8, (1, 6, 6, cout), quantization=_q(0.1, -2))
    opts = {"padding": "SAME", "stride_w": 1, "stride_h": 1}
    g.op("CONV_2D", [x, w, b], [y], options=opts, version=3)
    g.output(y)
    return mb.build()


def fc_model(k=40, n=32, rows=1, act="RELU", dtype=np.float32):
    rng = np.random.default_rng(3)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (rows, k))
    w = g.constant("w", rng.standard_normal((n, k)).astype(dtype))
    b = g.constant("b", rng.standard_normal(n).astype(np.float32))
    y = g.tensor("y", DType.FLOAT32, (rows, n))
    g.op("FULLY_CONNECTED", [x, w, b], [y], options={"fused_activation_function": act})
    g.output(y)
    return mb.build()


def dw_model(cin=12, dm=2):
    rng = np.random.default_rng(4)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 7, 7, cin))
    w = g.constant("w", rng.standard_normal((1, 3, 3, cin * dm)).astype(np.float32))
    b = g.constant("b", rng.standard_normal(cin * dm).astype(np.float32))
    y = g.tensor("y", DType.FLOAT32, (1, 7, 7, cin * dm))
    g.op(
        "DEPTHWISE_CONV_2D",
        [x, w, b],
        [y],
        options={"padding": "SAME", "depth_multiplier": dm, "stride_w": 1, "stride_h": 1},
    )
    g.output(y)
    return mb.build()


def bmm_model(const_b=False):
    rng = np.random.default_rng(5)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    a = g.input("a", DType.FLOAT32, (2, 3, 5, 16))
    if const_b:
        b = g.constant("b", rng.standard_normal((2, 3, 16, 24)).astype(np.float32))
    else:
        b = g.input("b", DType.FLOAT32, (2, 3, 16, 24))
    y = g.tensor("y", DType.FLOAT32, (2, 3, 5, 24))
    g.op("BATCH_MATMUL", [a, b], [y])
    g.output(y)
    return mb.build()


def _same(model, split, xnnpack=True, exact=True, rtol=1e-5):
    ref = interpreter(write_model(model), xnnpack=xnnpack)
    got = interpreter(write_model(split), xnnpack=xnnpack)
    rng = np.random.default_rng(0)
    inputs = []
    for d in ref.get_input_details():
        if np.issubdtype(d["dtype"], np.floating):
            inputs.append(rng.standard_normal(d["shape"]).astype(d["dtype"]))
        else:
            inputs.append(rng.integers(-100, 100, d["shape"]).astype(d["dtype"]))
    for a, b in zip(run(ref, inputs), run(got, inputs), strict=True):
        if exact:
            np.testing.assert_array_equal(a, b)
        else:
            assert np.abs(a - b).max() <= rtol * np.abs(a).max()


# ---------------------------------------------------------------------- sizes


def test_shard_sizes_follow_ratios_on_granule_boundaries():
    assert shard_sizes(96, [0.7, 0.3]) == (67, 29)
    assert shard_sizes(100, [0.7, 0.3], 8) == (72, 28)
    assert shard_sizes(32, [1, 1, 1, 1], 8) == (8, 8, 8, 8)
    for total in range(9, 80):
        for ratios in ([0.4, 0.3, 0.2, 0.1], [0.01, 1, 1], [5, 1]):
            s = shard_sizes(total, ratios, 8) if total > 8 * (len(ratios) - 1) else None
            if s is None:
                continue
            assert sum(s) == total and min(s) >= 1 and all(x % 8 == 0 for x in s[:-1])
    with pytest.raises(UsageError, match="too small"):
        shard_sizes(16, [1, 1, 1], 8)
    with pytest.raises(UsageError, match="2 to 16 shards"):
        shard_sizes(10, [1])
    with pytest.raises(UsageError, match="positive"):
        shard_sizes(10, [1, 0])


def test_extent_and_granule_per_layer_type():
    assert split_extent(conv_model(), 0, "output_channels") == (24, FLOAT_GRANULE)
    assert split_extent(int8_conv_model(), 0, "output_channels") == (20, 1)
    assert split_extent(dw_model(), 0, "output_channels") == (24, 2)
    assert split_extent(fc_model(), 0, "columns") == (32, FLOAT_GRANULE)
    assert split_extent(fc_model(), 0, "rows") == (40, 1)
    assert split_extent(bmm_model(), 0, "batch") == (3, 1)
    assert split_extent(bmm_model(), 0, "rows") == (16, 1)


# ---------------------------------------------------------------------- rewrites


@pytest.mark.parametrize("xnnpack", [True, False])
def test_conv_output_channels_exact_and_well_formed(xnnpack):
    m = conv_model()
    res = split_model(m, [SplitSpec((0,), "output_channels", (8, 16))])
    sg = res.model.main
    assert verify_model(res.model) == []
    assert [sg.op_name(i) for i in range(sg.num_ops)] == [
        "CONV_2D",
        "CONV_2D",
        "CONCATENATION",
        "TANH",
    ]
    (rec,) = res.records
    assert rec.collective == "all_gather" and rec.exact
    assert rec.shards == ((0,), (1,)) and rec.collective_ops == (2,)
    assert rec.output == m.main.op_outputs.row_tuple(0)[0]  # the same tensor index
    shapes = [sg.tensor_shape.row_tuple(t) for t in rec.shard_outputs]
    assert shapes == [(1, 8, 8, 8), (1, 8, 8, 16)]
    w0 = sg.tensor(sg.op_inputs.row_tuple(0)[1]).numpy()
    np.testing.assert_array_equal(w0, m.main.tensor(1).numpy()[:8])
    assert sg.op(2).options["axis"] == 3
    # the original weights are gone from the file (no second copy)
    assert res.model.buffers.length.sum() == m.buffers.length.sum()
    back = read_model_bytes(write_model(res.model))
    assert verify_model(back) == [] and back.main.num_ops == 4
    _same(m, res.model, xnnpack=xnnpack)


def test_int8_per_channel_quantization_is_sliced():
    m = int8_conv_model()
    res = split_model(m, [SplitSpec((0,), "output_channels", (7, 6, 7))])
    sg = res.model.main
    src_w = m.main.tensor_quantization[1]
    src_b = m.main.tensor_quantization[2]
    lo = 0
    for k, size in enumerate((7, 6, 7)):
        w, b = sg.op_inputs.row_tuple(k)[1:3]
        qw, qb = sg.tensor_quantization[w], sg.tensor_quantization[b]
        np.testing.assert_array_equal(qw.scale, src_w.scale[lo : lo + size])
        np.testing.assert_array_equal(qb.scale, src_b.scale[lo : lo + size])
        assert len(qw.zero_point) == size and qw.quantized_dimension == 0
        assert sg.tensor_quantization[sg.op_outputs.row_tuple(k)[0]].scale[0] == np.float32(0.1)
        lo += size
    assert res.model.opcodes[int(sg.op_opcode[3])].version == 2  # int8 CONCATENATION
    for xnnpack in (True, False):
        _same(m, res.model, xnnpack=xnnpack)


def test_depthwise_slices_its_input_by_whole_multipliers():
    m = dw_model(cin=12, dm=2)
    with pytest.raises(UsageError, match="multiple of 2"):
        split_model(m, [SplitSpec((0,), "output_channels", (5, 19))])
    res = split_model(m, [SplitSpec((0,), "output_channels", (6, 8, 10))])
    sg = res.model.main
    names = [sg.op_name(i) for i in range(sg.num_ops)]
    assert names.count("SLICE") == 3 and names.count("DEPTHWISE_CONV_2D") == 3
    for xnnpack in (True, False):
        _same(m, res.model, xnnpack=xnnpack)


def test_fc_columns_exact_and_rows_within_tolerance():
    m = fc_model(k=40, n=32, rows=3)
    cols = split_model(m, [SplitSpec((0,), "columns", (16, 8, 8))])
    for xnnpack in (True, False):
        _same(m, cols.model, xnnpack=xnnpack)
    rows = split_model(m, [SplitSpec((0,), "rows", (25, 15))])
    sg = rows.model.main
    assert [sg.op_name(i) for i in range(sg.num_ops)] == [
        "SLICE",
        "FULLY_CONNECTED",
        "SLICE",
        "FULLY_CONNECTED",
        "ADD",
    ]
    (rec,) = rows.records
    assert rec.collective == "all_reduce" and not rec.exact
    # bias once (shard 0), activation moved onto the ADD
    assert sg.op_inputs.row_tuple(3)[2] == -1 and sg.op_inputs.row_tuple(1)[2] >= 0
    assert sg.op(1).options["fused_activation_function"] == "NONE"
    assert sg.op(4).options["fused_activation_function"] == "RELU"
    _same(m, rows.model, exact=False)


def test_fp16_weights_get_a_dequantize_per_shard():
    rng = np.random.default_rng(6)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 16))
    w16 = g.constant("w16", rng.standard_normal((24, 16)).astype(np.float16))
    w = g.tensor("w", DType.FLOAT32, (24, 16))
    g.op("DEQUANTIZE", [w16], [w], version=3)
    y = g.tensor("y", DType.FLOAT32, (1, 24))
    g.op("FULLY_CONNECTED", [x, w, -1], [y])
    g.output(y)
    m = mb.build()
    res = split_model(m, [SplitSpec((1,), "columns", (16, 8))])
    sg = res.model.main
    assert [sg.op_name(i) for i in range(sg.num_ops)] == [
        "DEQUANTIZE",
        "FULLY_CONNECTED",
        "DEQUANTIZE",
        "FULLY_CONNECTED",
        "CONCATENATION",
    ]
    assert res.records[0].source_ops == (0, 1)  # the shared DEQUANTIZE was replaced too
    assert sg.tensor_dtype[sg.op_inputs.row_tuple(0)[0]] == DType.FLOAT16
    _same(m, res.model)


def test_batch_matmul_columns_batch_and_rows():
    for const_b in (False, True):
        m = bmm_model(const_b)
        for mode, sizes in (("columns", (16, 8)), ("batch", (1, 2))):
            res = split_model(m, [SplitSpec((0,), mode, sizes)])
            for xnnpack in (True, False):
                _same(m, res.model, xnnpack=xnnpack)
        res = split_model(m, [SplitSpec((0,), "rows", (10, 6))])
        _same(m, res.model, exact=False)


def test_megatron_mlp_and_attention_heads_are_found_and_split(get_corpus_model):
    from edgepart.tflite.reader import read_model

    m = read_model(get_corpus_model("transformer"))
    found = block_candidates(m)
    modes = sorted((mode, ops) for mode, ops, _, _ in found)
    assert modes == [("heads", (16,)), ("heads", (57,)), ("mlp", (28, 30)), ("mlp", (69, 71))]
    res = split_model(
        m,
        [
            SplitSpec((28, 30), "mlp", (40, 24)),
            SplitSpec((57,), "heads", (3, 1)),
        ],
    )
    mlp, heads = res.records
    assert mlp.op_names == ("FULLY_CONNECTED", "GELU", "FULLY_CONNECTED")
    assert len(mlp.collective_ops) == 1 and mlp.collective == "all_reduce"
    assert heads.op_names.count("BATCH_MATMUL") == 2 and len(heads.source_ops) == 16
    sg = res.model.main
    # every shard of the attention block runs 3 projections, 2 matmuls and its projection part
    for shard in heads.shards:
        kinds = [sg.op_name(o) for o in shard]
        assert kinds.count("FULLY_CONNECTED") == 4 and kinds.count("BATCH_MATMUL") == 2
    _same(m, res.model, exact=False)


def test_refusals_say_why():
    q = int8_conv_model()
    assert split_modes(q, 0) == {"output_channels": ""}
    int8_fc = ModelBuilder()
    g = int8_fc.subgraph("main")
    x = g.input("x", DType.INT8, (1, 8), quantization=_q(0.1))
    w = g.constant("w", np.ones((4, 8), np.int8), quantization=_q(0.02))
    y = g.tensor("y", DType.INT8, (1, 4), quantization=_q(0.2))
    g.op("FULLY_CONNECTED", [x, w, -1], [y])
    g.output(y)
    modes = split_modes(int8_fc.build(), 0)
    assert modes["columns"] == ""
    assert "int32 accumulator to 8 bits" in modes["rows"]
    hybrid = fc_model()
    hw = ModelBuilder()
    g = hw.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 8))
    w = g.constant("w", np.ones((4, 8), np.int8), quantization=_q(0.02))
    y = g.tensor("y", DType.FLOAT32, (1, 4))
    g.op("FULLY_CONNECTED", [x, w, -1], [y], options={"asymmetric_quantize_inputs": True})
    g.output(y)
    assert "own scale" in split_modes(hw.build(), 0)["rows"]
    del hybrid
    flat = ModelBuilder()
    g = flat.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 2, 4))
    w = g.constant("w", np.ones((3, 8), np.float32))
    y = g.tensor("y", DType.FLOAT32, (1, 3))
    g.op("FULLY_CONNECTED", [x, w, -1], [y])
    g.output(y)
    assert "flattened" in split_modes(flat.build(), 0)["rows"]
    with pytest.raises(UnsupportedOpError, match="op 1 TANH cannot be split"):
        split_model(conv_model(), [SplitSpec((1,), "columns", (1, 1))])
    with pytest.raises(UsageError, match="sum to 20"):
        split_model(conv_model(), [SplitSpec((0,), "output_channels", (8, 12))])
    with pytest.raises(UsageError, match="in two splits"):
        split_model(
            conv_model(),
            [
                SplitSpec((0,), "output_channels", (8, 16)),
                SplitSpec((0,), "output_channels", (16, 8)),
            ],
        )


def test_several_splits_keep_every_other_op_and_tensor():
    m = conv_model()
    res = split_model(m, [SplitSpec((0,), "output_channels", (8, 8, 8))])
    src, sg = m.main, res.model.main
    # source tensors keep their indices; TANH is the same op, moved
    assert res.op_map.tolist() == [-1, 4]
    assert sg.op_inputs.row_tuple(4) == src.op_inputs.row_tuple(1)
    for t in range(src.num_tensors):
        assert sg.tensor_names[t] == src.tensor_names[t]
    assert analysis.is_topologically_sorted(sg)
    # a pure function: the source is untouched
    assert m.main.num_ops == 2 and m.buffers.length.sum() > 0


def test_splitting_is_deterministic():
    m = fc_model(rows=2)
    spec = [SplitSpec((0,), "columns", (8, 24))]
    assert write_model(split_model(m, spec).model) == write_model(split_model(m, spec).model)
