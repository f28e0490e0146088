"""Kernel decomposition: XNNPACK's fusion and elision rules, builtin kernels, features."""

from __future__ import annotations

import numpy as np
import pytest

from edgepart.claim.delegation import claim
from edgepart.cost.kernels import FEATURES, decompose
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model

F = {n: k for k, n in enumerate(FEATURES)}
F32 = DType.FLOAT32
CONV = {"padding": "SAME", "stride_h": 1, "stride_w": 1}


class G:
    """A small graph builder for these tests."""

    def __init__(self, shape: tuple[int, ...] = (1, 16, 16, 8)) -> None:
        self.mb = ModelBuilder()
        self.g = self.mb.subgraph("main")
        self.x0 = self.g.input("x", F32, shape)
        self.rng = np.random.default_rng(0)
        self.n = 0

    def t(self, shape: tuple[int, ...]) -> int:
        self.n += 1
        return self.g.tensor(f"t{self.n}", F32, shape)

    def c(self, value: np.ndarray) -> int:
        self.n += 1
        return self.g.constant(f"c{self.n}", value)

    def conv(self, x: int, shape: tuple[int, ...], cout: int, k: int = 3, **opts: object) -> int:
        n, h, w, c = shape
        o = {**CONV, **opts}
        s = int(o.get("stride_h", 1))  # type: ignore[call-overload]
        if o["padding"] == "SAME":
            ho, wo = -(-h // s), -(-w // s)
        else:
            ho, wo = (h - k) // s + 1, (w - k) // s + 1
        y = self.t((n, ho, wo, cout))
        wt = self.c(self.rng.standard_normal((cout, k, k, c)).astype(np.float32))
        self.g.op("CONV_2D", [x, wt, self.c(np.zeros(cout, np.float32))], [y], options=o)
        return y

    def unary(self, op: str, x: int, shape: tuple[int, ...]) -> int:
        y = self.t(shape)
        self.g.op(op, [x], [y])
        return y

    def add(self, a: int, b: int, shape: tuple[int, ...]) -> int:
        y = self.t(shape)
        self.g.op("ADD", [a, b], [y])
        return y

    def reshape(self, x: int, new: tuple[int, ...]) -> int:
        y = self.t(new)
        s = self.c(np.array(new, np.int32))
        self.g.op("RESHAPE", [x, s], [y], options={"new_shape": list(new)})
        return y

    def pad(self, x: int, shape: tuple[int, ...], p: int = 1, channel: bool = False) -> int:
        n, h, w, c = shape
        pads = [[0, 0], [p, p], [p, p], [0, 0]] if not channel else [[0, 0]] * 3 + [[0, p]]
        out = (n, h + 2 * p, w + 2 * p, c) if not channel else (n, h, w, c + p)
        y = self.t(out)
        self.g.op("PAD", [x, self.c(np.array(pads, np.int32))], [y])
        return y

    def build(self, *outs: int) -> Model:
        self.g.output(*outs)
        outputs = [(f"y{i}", o) for i, o in enumerate(outs)]
        self.mb.add_signature("serving_default", 0, [("x", self.x0)], outputs)
        return self.mb.build()


S = (1, 16, 16, 8)


def test_conv_then_relu_is_one_xnnpack_kernel_and_two_builtin_ones():
    g = G()
    y = g.conv(g.x0, S, 8)
    z = g.unary("RELU", y, S)
    m = g.build(z)
    k = decompose(m, "xnnpack")
    assert k.types == ["xnn.conv"]
    assert k.ops == [(0, 1)]
    assert k.partitions == {"xnnpack": 1}
    b = decompose(m, "builtin")
    assert b.types == ["tfl.conv", "tfl.unary"]
    assert b.partitions == {}


def test_relu_after_add_stays_a_kernel_and_a_read_output_is_not_fused():
    g = G()
    a = g.add(g.x0, g.x0, S)
    r = g.unary("RELU", a, S)
    y = g.conv(g.x0, S, 8)
    r2 = g.unary("RELU6", y, S)
    m = g.build(r, r2, y)  # the conv's output is a model output: the clamp cannot merge
    k = decompose(m, "xnnpack")
    assert sorted(k.types) == ["xnn.binary", "xnn.conv", "xnn.unary", "xnn.unary"]


def test_spatial_pad_merges_into_a_valid_conv_but_not_a_same_one():
    g = G()
    p = g.pad(g.x0, S)
    y = g.conv(p, (1, 18, 18, 8), 8, padding="VALID")
    m = g.build(y)
    k = decompose(m, "xnnpack")
    assert k.types == ["xnn.conv"] and sorted(k.ops[0]) == [0, 1]
    # the kernel reads the pad's input, writes the conv's output
    assert k.features[0, F["in_bytes"]] == 16 * 16 * 8 * 4
    g2 = G()
    p2 = g2.pad(g2.x0, S)
    y2 = g2.conv(p2, (1, 18, 18, 8), 8, padding="SAME")
    assert decompose(g2.build(y2), "xnnpack").types == ["xnn.pad", "xnn.conv"]
    g3 = G()
    p3 = g3.pad(g3.x0, S, 8, channel=True)  # a channel pad is a kernel of its own
    y3 = g3.conv(p3, (1, 16, 16, 16), 8, padding="VALID")
    assert decompose(g3.build(y3), "xnnpack").types == ["xnn.pad", "xnn.conv"]


def test_reshape_costs_nothing_inside_a_partition_and_copies_at_its_boundary():
    g = G()
    a = g.add(g.x0, g.x0, S)
    r = g.reshape(a, (1, 256, 8))
    b = g.unary("LOGISTIC", r, (1, 256, 8))
    k = decompose(g.build(b), "xnnpack")
    assert k.types == ["xnn.binary", "xnn.math"]
    assert k.op_kernel[1] == -1  # the reshape
    g2 = G()
    r2 = g2.reshape(g2.x0, (1, 256, 8))  # model input to model output: a real copy
    assert decompose(g2.build(r2), "xnnpack").types == ["xnn.copy"]


def test_dequantized_and_densified_weights_are_folded():
    g = G()
    w16 = g.g.constant("w16", np.ones((8, 3, 3, 8), np.float16))
    w = g.t((8, 3, 3, 8))
    g.g.op("DEQUANTIZE", [w16], [w])
    y = g.t(S)
    g.g.op("CONV_2D", [g.x0, w, g.c(np.zeros(8, np.float32))], [y], options=CONV)
    m = g.build(y)
    for ex in ("xnnpack", "builtin"):
        k = decompose(m, ex)
        assert len(k) == 1 and k.op_kernel[0] == -1
        assert k.features[0, F["w_bytes"]] > 0 and k.features[0, F["macs"]] == 16 * 16 * 8 * 72


def test_the_builtin_dequantize_of_a_densified_weight_runs_each_invocation():
    # a sparse fp16 weight: DENSIFY (once) then DEQUANTIZE of its output, which LiteRT's
    # builtin kernel converts again on every invocation (its input is not a read-only
    # constant); XNNPACK unpacks both once
    from edgepart.ir.values import DimensionMetadata, Sparsity

    g = G()
    dense = np.zeros((8, 1, 1, 8), np.float16)
    dense[:, 0, 0, ::2] = 1.0
    sp = Sparsity(
        (0, 1, 2, 3),
        (),
        (
            DimensionMetadata("DENSE", 8),
            DimensionMetadata("DENSE", 1),
            DimensionMetadata("DENSE", 1),
            DimensionMetadata(
                "SPARSE_CSR",
                0,
                np.arange(0, 33, 4, dtype=np.uint8),
                np.tile(np.arange(0, 8, 2, dtype=np.uint8), 8),
            ),
        ),
    )
    packed = g.g.constant("w", dense[dense != 0], sparsity=sp, shape=dense.shape)
    w16 = g.g.tensor("w16", DType.FLOAT16, dense.shape)
    g.g.op("DENSIFY", [packed], [w16])
    w = g.t(dense.shape)
    g.g.op("DEQUANTIZE", [w16], [w])
    y = g.t(S)
    g.g.op("CONV_2D", [g.x0, w, g.c(np.zeros(8, np.float32))], [y], options=CONV)
    m = g.build(y)
    b = decompose(m, "builtin")
    assert b.types == ["tfl.unary_f16", "tfl.conv"]
    assert b.op_kernel.tolist() == [-1, 0, 1]  # DENSIFY is free, DEQUANTIZE is not
    assert b.features[0, F["dtype"]] == int(DType.FLOAT16)
    assert b.features[0, F["in_bytes"]] == 64 * 2 and b.features[0, F["out_bytes"]] == 64 * 4
    x = decompose(m, "xnnpack")
    assert x.types == ["xnn.conv"] and x.op_kernel.tolist() == [-1, -1, 0]
    # LiteRT reads the encoding as written: the dense weight it computes is the one above
    from edgepart.profiling.timing import make_interpreter
    from edgepart.tflite.writer import write_model

    it = make_interpreter(bytes(write_model(m)), "builtin", 1, preserve_all_tensors=True)
    it.set_tensor(it.get_input_details()[0]["index"], np.ones(S, np.float32))
    it.invoke()
    assert np.array_equal(it.get_tensor(w), dense.astype(np.float32))
    assert np.allclose(it.get_tensor(y), 4.0)


def test_conv_features():
    g = G((1, 32, 32, 8))
    y = g.conv(g.x0, (1, 32, 32, 8), 24, k=3, stride_h=2, stride_w=2)
    k = decompose(g.build(y), "xnnpack")
    f = k.features[0]
    assert (f[F["h"]], f[F["w"]], f[F["cin"]], f[F["cout"]]) == (16, 16, 8, 24)
    assert (f[F["kh"]], f[F["kw"]], f[F["sh"]], f[F["sw"]]) == (3, 3, 2, 2)
    assert f[F["macs"]] == 16 * 16 * 24 * 9 * 8
    assert f[F["rows"]] == 256 and f[F["red"]] == 72
    assert f[F["ctx_bytes"]] > f[F["w_bytes"]]


def test_int8_kernels_have_their_own_types():
    from edgepart.profiling.kernel_gen import ChainSpec, build_chain

    m = build_chain(ChainSpec(seed=3, family="q8", length=3, homogeneous="conv"))
    k = decompose(m, "xnnpack")
    assert any(t == "xnn.conv_q8" for t in k.types)
    assert not any(t == "xnn.conv" for t in k.types)


@pytest.mark.parametrize("executor", ["builtin", "xnnpack"])
def test_int8_data_movement_shares_the_float_type_but_arithmetic_does_not(executor):
    """Slices, transposes, pads ... run the same code for every element type; their 8-bit
    kernels are typed as the float ones (the dtype is a feature). 8-bit arithmetic, and
    concatenation (it requantizes inputs of other scales), keep types of their own."""
    from edgepart.cost.kernels import DTYPE_BLIND
    from edgepart.ir.values import Quantization

    q = Quantization(scale=np.array([0.05], np.float32), zero_point=np.array([0], np.int64))
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.INT8, (1, 5, 1, 64), quantization=q)
    outs = []
    for op, ins, shape in (
        ("STRIDED_SLICE", [np.array([0, 1, 0, 0], np.int32), np.array([1, 5, 1, 64], np.int32),
                           np.ones(4, np.int32)], (1, 4, 1, 64)),
        ("TRANSPOSE", [np.array([0, 2, 1, 3], np.int32)], (1, 1, 5, 64)),
        ("PAD", [np.array([[0, 0], [1, 1], [0, 0], [0, 0]], np.int32)], (1, 7, 1, 64)),
        ("CONCATENATION", [], (1, 10, 1, 64)),
        ("ADD", [], (1, 5, 1, 64)),
    ):  # fmt: skip
        y = g.tensor(f"y_{op}", DType.INT8, shape, quantization=q)
        extra = [g.constant(f"c_{op}{i}", v) for i, v in enumerate(ins)]
        opts = {"axis": 1} if op == "CONCATENATION" else {}
        g.op(op, [x, *extra] if op not in ("CONCATENATION", "ADD") else [x, x], [y],
             options=opts)  # fmt: skip
        outs.append(y)
    g.output(*outs)
    mb.add_signature("serving_default", 0, [("x", x)], [(f"o{i}", o) for i, o in enumerate(outs)])
    k = decompose(mb.build(), executor)
    p = "tfl" if executor == "builtin" else "xnn"
    assert sorted(k.types) == sorted(
        [f"{p}.slice", f"{p}.transpose", f"{p}.pad", f"{p}.concat_q8", f"{p}.binary_q8"]
    )
    # the dtype feature still tells the 8-bit kernels apart
    assert {int(v) for v in k.features[:, F["dtype"]]} == {int(DType.INT8)}
    assert {"slice", "transpose", "pad"} <= DTYPE_BLIND and "concat" not in DTYPE_BLIND


def test_partitions_follow_the_claim():
    g = G()
    a = g.add(g.x0, g.x0, S)
    c = g.t(S)
    g.g.op("CAST", [a], [c])  # float -> float CAST: XNNPACK refuses it
    b = g.add(c, c, S)
    k = decompose(g.build(b), "xnnpack")
    assert k.partitions == {"xnnpack": 2}
    assert k.types == ["xnn.binary", "tfl.unary", "xnn.binary"]


@pytest.mark.parametrize("executor", ["xnnpack", "builtin"])
def test_every_op_is_in_one_kernel_or_free(executor):
    from edgepart.profiling.kernel_gen import build_chain, draw_specs

    for spec in draw_specs(np.random.default_rng(1), 12):
        m = build_chain(spec)
        k = decompose(m, executor)
        covered = [o for ops in k.ops for o in ops]
        assert len(covered) == len(set(covered))
        for i in range(m.main.num_ops):
            assert (k.op_kernel[i] >= 0) == (i in covered)


def test_unknown_executor_is_refused():
    g = G()
    with pytest.raises(ValueError, match="unknown executor"):
        decompose(g.build(g.add(g.x0, g.x0, S)), "tpu9000")


def test_an_fft_is_its_own_kernel_class_with_n_log_n_work():
    # a spectrogram front end: frames of 2048 samples -> RFFT2D -> magnitude
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", F32, (1, 43, 1, 2048))
    length = g.constant("len", np.array([1, 2048], np.int32))
    spec = g.tensor("spec", DType.COMPLEX64, (1, 43, 1, 1025))
    g.op("RFFT2D", [x, length], [spec])
    mag = g.tensor("mag", F32, (1, 43, 1, 1025))
    g.op("COMPLEX_ABS", [spec], [mag])
    g.output(mag)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", mag)])
    for executor in ("xnnpack", "builtin"):
        k = decompose(mb.build(), executor)
        # XNNPACK takes neither: both run as builtin kernels; the magnitudes are a class of
        # their own (30 times the cost per value of the real part)
        assert k.types == ["tfl.fft", "tfl.magnitude"]
        f = k.features[0]
        assert f[F["rows"]] == 43 and f[F["red"]] == 2048
        assert f[F["macs"]] == pytest.approx(43 * 2048 * 11 / 2)


def pad_rows(in_shape, out_shape, executor="xnnpack"):
    """(type, rows, red, macs) of the kernel of one float PAD from ``in_shape`` to
    ``out_shape`` (padded at the end of each dimension that grows)."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", F32, in_shape)
    pads = np.array([[0, o - i] for i, o in zip(in_shape, out_shape, strict=True)], np.int32)
    y = g.tensor("y", F32, out_shape)
    g.op("PAD", [x, g.constant("p", pads)], [y])
    g.output(y)
    k = decompose(mb.build(), executor)
    f = k.features[0]
    return k.types[0], f[F["rows"]], f[F["red"]], f[F["macs"]]


def test_a_pads_rows_run_through_its_last_padded_dimension():
    # along the width: a row per output pixel, whatever the channels (XNNPACK: 612 us for
    # [1,172,273,1] -> [1,172,309,1], 9.8 along the height)
    assert pad_rows((1, 172, 273, 1), (1, 172, 309, 1)) == ("xnn.pad", 172 * 309, 1, 172 * 309)
    assert pad_rows((1, 172, 273, 8), (1, 172, 309, 8))[1:3] == (172 * 309, 8)
    # along the height: the width and channels after it are one run
    assert pad_rows((1, 172, 273, 8), (1, 176, 273, 8))[1:3] == (176, 273 * 8)
    # the channels (the innermost dimension): a row per pixel
    assert pad_rows((1, 16, 16, 3), (1, 16, 16, 8))[1:3] == (256, 8)
    assert pad_rows((1, 100), (1, 120))[1:3] == (1, 120)
    # the builtin kernel copies a row before the last padded dimension at a time (6.4 us for
    # that width pad, 394 along the channels): its work is those rows
    assert pad_rows((1, 172, 273, 1), (1, 172, 309, 1), "builtin") == ("tfl.pad", 172 * 309, 1, 172)
    assert pad_rows((1, 16, 16, 3), (1, 16, 16, 8), "builtin")[3] == 256
    assert pad_rows((1, 172, 273, 8), (1, 176, 273, 8), "builtin")[3] == 1


def _pieces(shapes, axis, op="CONCATENATION", executor="xnnpack"):
    """Type, rows, pieces and MACs of one concatenation of ``shapes`` (or one split of their
    concatenation into them)."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    joined = list(shapes[0])
    joined[axis] = sum(s[axis] for s in shapes)
    if op == "CONCATENATION":
        ins = [g.input(f"x{i}", F32, s) for i, s in enumerate(shapes)]
        y = g.tensor("y", F32, tuple(joined))
        g.op(op, ins, [y], options={"axis": axis})
        g.output(y)
    else:
        x = g.input("x", F32, tuple(joined))
        ax = g.constant("axis", np.array([axis], np.int32))
        ys = [g.tensor(f"y{i}", F32, s) for i, s in enumerate(shapes)]
        g.op("SPLIT", [ax, x], ys, options={"num_splits": len(shapes)})
        g.output(*ys)
    k = decompose(mb.build(), executor)
    f = k.features[0]
    return k.types[0], f[F["rows"]], f[F["n_in"]], f[F["macs"]]


@pytest.mark.parametrize("executor", ["xnnpack", "builtin"])
def test_a_concatenation_or_split_works_a_copy_per_piece_per_row(executor):
    # along the channels of a 192 x 96 image: 18,432 rows, a copy of each input per row
    # (17 inputs of 2.9 MB took 1.6 ms on both executors; the same bytes along the height 112 us)
    typ, rows, pieces, macs = _pieces([(1, 192, 96, 2), (1, 192, 96, 3)], 3, executor=executor)
    assert typ.endswith(".concat") and (rows, pieces, macs) == (18432, 2, 2 * 18432)
    # along the height: one row, a copy per input
    assert _pieces([(1, 100, 96, 3), (1, 92, 96, 3)], 1, executor=executor)[1:] == (1, 2, 2)
    typ, rows, pieces, macs = _pieces([(1, 8, 8, 4)] * 4, 3, "SPLIT", executor)
    assert typ.endswith(".split") and (rows, pieces, macs) == (64, 4, 256)


def _slice_work(op, shape, begin, size, executor):
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", F32, shape)
    b = g.constant("b", np.array(begin, np.int32))
    y = g.tensor("y", F32, tuple(size))
    if op == "SLICE":
        g.op(op, [x, b, g.constant("s", np.array(size, np.int32))], [y])
    else:
        e = g.constant("e", np.array([i + n for i, n in zip(begin, size, strict=True)], np.int32))
        g.op(op, [x, b, e, g.constant("st", np.ones(len(shape), np.int32))], [y])
    g.output(y)
    k = decompose(mb.build(), executor)
    return k.types[0], k.features[0][F["rows"]], k.features[0][F["macs"]]


def test_a_slice_works_a_copy_per_run_and_a_builtin_strided_slice_an_element_at_a_time():
    # half the channels of a 192 x 96 image: 18,432 runs of 24 values
    args = ((1, 192, 96, 48), [0, 0, 0, 0], [1, 192, 96, 24])
    for executor in ("xnnpack", "builtin"):
        assert _slice_work("SLICE", *args, executor)[1:] == (18432, 18432)
    assert _slice_work("STRIDED_SLICE", *args, "xnnpack") == ("xnn.slice", 18432, 18432)
    # LiteRT's builtin STRIDED_SLICE: every element (8.3 ns each on x86, SLICE 0.3 here)
    args = ((1, 1000, 64), [0, 0, 0], [1, 500, 64])
    assert _slice_work("STRIDED_SLICE", *args, "builtin") == ("tfl.slice", 1, 32000)
    assert _slice_work("SLICE", *args, "builtin") == ("tfl.slice", 1, 1)


@pytest.mark.parametrize(("rate", "bins_read"), [(16000, 64), (8000, 127), (None, 64)])
def test_mfcc_reads_the_bins_between_its_frequency_limits(rate, bins_read):
    """TFLite's Mfcc filters the bins from the lower to the upper frequency limit, steps of
    rate / 2 / (bins - 1): 20 to 4000 Hz of 129 bins are bins 1..64 at 16 kHz, 2..128 at
    8 kHz; a rate that is not a constant is taken as 16 kHz."""
    from flatbuffers import flexbuffers

    mb = ModelBuilder()
    g = mb.subgraph("main")
    spec = g.input("spec", F32, (1, 30, 129))
    r = (
        g.input("rate", DType.INT32, ())
        if rate is None
        else g.constant("rate", np.array(rate, np.int32))
    )
    y = g.tensor("y", F32, (1, 30, 13))
    opts = {"dct_coefficient_count": 13, "filterbank_channel_count": 40,
            "lower_frequency_limit": 20.0, "upper_frequency_limit": 4000.0}  # fmt: skip
    g.op("Mfcc", [spec, r], [y], custom_options=flexbuffers.Dumps(opts))
    g.output(y)
    k = decompose(mb.build(), "builtin")
    f = k.features[0]
    assert k.types == ["tfl.mfcc"]
    assert (f[F["rows"]], f[F["red"]], f[F["w"]], f[F["cin"]]) == (30, bins_read, 129, 40)
    assert f[F["macs"]] == 30 * (129 + 40 * 13)  # the filterbank is set up for every bin


def test_binary_broadcasts_are_told_apart():
    g = G((1, 16, 32))
    same = g.add(g.x0, g.x0, (1, 16, 32))
    scalar = g.add(same, g.c(np.ones(1, np.float32)), (1, 16, 32))
    channel = g.add(scalar, g.c(np.ones(32, np.float32)), (1, 16, 32))
    mean = g.t((1, 16, 1))
    g.g.op("MEAN", [channel, g.c(np.array([2], np.int32))], [mean], options={"keep_dims": True})
    row = g.add(channel, mean, (1, 16, 32))
    m = g.build(row)
    for ex in ("xnnpack", "builtin"):
        k = decompose(m, ex)
        bc = {k.ops[i][0]: k.features[i][F["bcast"]] for i in range(len(k))}
        assert [bc[0], bc[1], bc[2], bc[4]] == [0, 1, 2, 3], (ex, bc)


def test_builtin_kernels_after_a_dynamically_quantized_xnnpack_kernel_are_typed_apart():
    from edgepart.cost.kernels import AFTER_QD8, after_dynamic_quantization

    types = ["tfl.gather", "xnn.conv_hy", "tfl.dwconv_hy", "tfl.pad", "xnn.conv", "tfl.pad"]
    out = after_dynamic_quantization(types, np.arange(len(types)))
    # dirty until the next XNNPACK kernel of another kind; the state carries over to the next
    # invocation's first kernels only when the invocation ends dirty (here it does not)
    assert out == ["tfl.gather", "xnn.conv_hy", "tfl.dwconv_hy@qd8", "tfl.pad@qd8",
                   "xnn.conv", "tfl.pad"]  # fmt: skip
    # in execution order, not list order: with the hybrid conv last, the invocation ends
    # dirty and the next one starts so, up to the float XNNPACK conv
    when = np.array([0, 5, 1, 2, 3, 4])
    out = after_dynamic_quantization(types, when)
    assert out == [t + AFTER_QD8 for t in types[:1]] + ["xnn.conv_hy"] + [
        t + AFTER_QD8 for t in types[2:4]
    ] + ["xnn.conv", "tfl.pad"]
    assert after_dynamic_quantization(["tfl.conv", "tfl.pad"], np.arange(2)) == [
        "tfl.conv",
        "tfl.pad",
    ]


def _hybrid_block(independent_relu: bool) -> Model:
    """A hybrid 1x1 conv (XNNPACK) feeding a hybrid depthwise conv (builtin kernel); with
    ``independent_relu``, a RELU of the input that joins the conv's XNNPACK partition and runs
    after it there."""
    from edgepart.ir.values import Quantization

    def q(n: int) -> Quantization:
        return Quantization(scale=np.full(n, 0.01, np.float32), zero_point=np.zeros(n, np.int64))

    g = G((1, 6, 6, 16))
    rng = np.random.default_rng(0)
    wc = rng.integers(-127, 128, (144, 1, 1, 16)).astype(np.int8)
    wd = rng.integers(-127, 128, (1, 3, 3, 144)).astype(np.int8)
    qd = Quantization(scale=np.full(144, 0.01, np.float32), zero_point=np.zeros(144, np.int64),
                      quantized_dimension=3)  # fmt: skip
    y = g.t((1, 6, 6, 144))
    g.g.op("CONV_2D", [g.x0, g.g.constant("wc", wc, quantization=q(144)),
                       g.c(np.zeros(144, np.float32))], [y], options={**CONV})  # fmt: skip
    z = g.t((1, 6, 6, 144))
    g.g.op("DEPTHWISE_CONV_2D", [y, g.g.constant("wd", wd, quantization=qd),
                                 g.c(np.zeros(144, np.float32))], [z],
           options={**CONV, "depth_multiplier": 1})  # fmt: skip
    if not independent_relu:
        return g.build(z)
    return g.build(z, g.unary("RELU", g.x0, (1, 6, 6, 16)))


def test_the_hybrid_depthwise_conv_after_xnnpack_hybrid_conv_is_typed_by_the_plan():
    k = decompose(_hybrid_block(False), "xnnpack")
    assert k.types == ["xnn.conv_hy", "tfl.dwconv_hy@qd8"]
    assert k.partitions == {"xnnpack": 1}
    # the RELU joins the conv's DELEGATE node, which runs before the depthwise conv: the node
    # ends with the RELU (op 2), a float kernel, so the depthwise conv runs at its usual speed
    m = _hybrid_block(True)
    k = decompose(m, "xnnpack")
    assert sorted(k.types) == ["tfl.dwconv_hy", "xnn.conv_hy", "xnn.unary"]
    assert k.partitions == {"xnnpack": 1}
    # a delegation given rather than predicted (calibration reads LiteRT's) types the same
    # kernels by the same plan, not by op order (op order would mark the depthwise conv)
    owner = list(claim(m, ()).owner)
    given = decompose(m, "xnnpack", delegated=owner, partitions={"xnnpack": 1})
    assert given.types == k.types
    assert decompose(_hybrid_block(False), "builtin").types == ["tfl.conv_hy", "tfl.dwconv_hy"]


@pytest.mark.parametrize("executor", ["xnnpack", "builtin"])
def test_a_fully_connected_layer_on_sparse_weights_says_it_is_priced_as_dense(corpus, executor):
    from edgepart.tflite.reader import read_model

    # sparse_mlp: layer 2's weights are stored 1x4-block sparse and read by FULLY_CONNECTED
    # itself (layer 1's go through DENSIFY: dense to the layer); XNNPACK leaves it to LiteRT
    k = decompose(read_model(corpus["sparse_mlp"]), executor)
    sparse = [n for n in k.notes if "sparse weights, priced as dense" in n]
    assert len(sparse) == 1 and sparse[0].startswith("op 2 (FULLY_CONNECTED)")
    assert k.types[k.op_kernel[2]] == "tfl.fc"
    dense = decompose(read_model(corpus["mobilenet_v2"]), executor)
    assert not [n for n in dense.notes if "sparse" in n]
