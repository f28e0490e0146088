"""Which XNNPACK kernels run as one task (edgepart.cost.xnn_tasks), on one-op models built with
edgepart's builder and decomposed as the predictors see them."""

from __future__ import annotations

import numpy as np
import pytest

from edgepart.cost.kernels import FEATURES, decompose
from edgepart.cost.xnn_tasks import one_task, one_task_of
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType

F32 = DType.FLOAT32
CONV = {"stride_h": 1, "stride_w": 1, "dilation_h_factor": 1, "dilation_w_factor": 1}


def verdict(
    op, inputs, out_shape, options=None, *, consts=None, executor="xnnpack", gemm_outputs=None
):
    """(kernel type, one task?) of a model of one float op (``gemm_outputs``: the measured
    one-task widths of the host's GEMM tiles)."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    ins = []
    for k, shape in enumerate(inputs):
        if shape is None:
            ins.append(-1)
        elif consts and k in consts:
            ins.append(g.constant(f"c{k}", consts[k]))
        else:
            ins.append(g.input(f"in{k}", F32, shape))
    y = g.tensor("y", F32, out_shape)
    g.op(op, ins, [y], options=options)
    g.output(y)
    k = decompose(mb.build(), executor)
    assert len(k) == 1
    return k.types[0], bool(one_task(k.types, k.features, gemm_outputs)[0])


def dwconv(in_shape, taps, channels, out_shape, padding="VALID"):
    w = np.zeros((1, taps[0], taps[1], channels), np.float32)
    b = np.zeros(channels, np.float32)
    return verdict("DEPTHWISE_CONV_2D", [in_shape, w.shape, b.shape], out_shape,
                   {"padding": padding, "depth_multiplier": 1, **CONV},
                   consts={1: w, 2: b})  # fmt: skip


def test_a_depthwise_convolution_is_one_task_per_output_row_and_channel_tile():
    # a streaming layer: 13 frames in, one out (measured: the same time on one and two threads)
    assert dwconv((1, 13, 1, 64), (13, 1), 64, (1, 1, 1, 64)) == ("xnn.dwconv", True)
    # thirteen output rows: thirteen tasks
    assert dwconv((1, 13, 1, 64), (13, 1), 64, (1, 13, 1, 64), "SAME") == ("xnn.dwconv", False)
    # a one-dimensional convolution laid out along the width: the width is inside a task
    assert dwconv((1, 1, 40, 64), (1, 5), 64, (1, 1, 36, 64))[1]
    # 25 float taps: 32 KiB hold the working set of 154 channels (25 * 8 + 8 + 4 bytes each)
    assert dwconv((1, 5, 5, 154), (5, 5), 154, (1, 1, 1, 154))[1]
    assert not dwconv((1, 5, 5, 200), (5, 5), 200, (1, 1, 1, 200))[1]
    # more taps than the largest primary tile: multipass, not claimed
    assert not dwconv((1, 27, 1, 8), (27, 1), 8, (1, 1, 1, 8))[1]


def fc(rows, k, n, gemm_outputs=None):
    w = np.zeros((n, k), np.float32)
    return verdict("FULLY_CONNECTED", [(rows, k), w.shape, None], (rows, n), consts={1: w},
                   gemm_outputs=gemm_outputs)  # fmt: skip


def test_a_gemm_of_one_row_and_few_outputs_is_one_tile_on_every_instruction_set():
    assert fc(1, 64, 8) == ("xnn.fc", True)
    assert fc(1, 64, 9) == ("xnn.fc", False)  # two tiles where the tile is 8 wide (SSE)
    assert fc(2, 64, 8) == ("xnn.fc", False)


def test_a_measured_tile_width_claims_wider_one_row_gemms_and_never_narrower_ones():
    amx = {"": 32.0, "_q8": 64.0, "_hy": 64.0}  # an Intel Xeon with AMX, measured
    assert fc(1, 64, 32, amx) == ("xnn.fc", True)
    assert fc(1, 64, 33, amx) == ("xnn.fc", False)
    assert fc(2, 64, 8, amx) == ("xnn.fc", False)  # rows still split
    assert fc(1, 64, 8, {"": 2.0}) == ("xnn.fc", True)  # below the safe width: the safe width
    # 8-bit and dynamically quantized GEMMs, by the kernel type's suffix
    q8 = np.zeros((5, len(FEATURES)))
    q8[:, FEATURES.index("rows")] = [1, 1, 1, 1, 2]
    q8[:, FEATURES.index("cout")] = [4, 5, 64, 65, 4]
    assert one_task_of("xnn.conv_q8", q8).tolist() == [True, False, False, False, False]
    assert one_task_of("xnn.conv_q8", q8, amx).tolist() == [True, True, True, False, False]
    # a dynamically quantized GEMM has no safe width: one task only where measured
    assert not one_task_of("xnn.fc_hy", q8).any()
    assert one_task_of("xnn.fc_hy", q8, amx).tolist() == [True, True, True, False, False]
    # and a width says nothing of other kernels (a hybrid depthwise convolution)
    assert not one_task_of("xnn.dwconv_hy", q8, amx).any()


@pytest.mark.parametrize(
    ("shapes", "out", "one"),
    [
        ([(1, 4096), (1, 4096)], (1, 4096), True),  # 16 KiB of output: one tile
        ([(1, 4097), (1, 4097)], (1, 4097), False),
        ([(1, 4096), (1,)], (1, 4096), True),  # a scalar operand compresses to one dimension
        ([(1, 4, 4, 16), (16,)], (1, 4, 4, 16), False),  # a vector broadcast: outer dims split
    ],
)
def test_an_elementwise_op_is_one_task_up_to_16_kib(shapes, out, one):
    typ, got = verdict("ADD", shapes, out)
    assert typ == "xnn.binary" and got is one


def test_unary_math_softmax_and_pooling():
    assert verdict("TANH", [(1, 4096)], (1, 4096)) == ("xnn.math", True)
    assert verdict("TANH", [(2, 4096)], (2, 4096)) == ("xnn.math", False)
    assert verdict("SOFTMAX", [(1, 100)], (1, 100), {"beta": 1.0}) == ("xnn.softmax", True)
    assert verdict("SOFTMAX", [(2, 100)], (2, 100), {"beta": 1.0}) == ("xnn.softmax", False)
    pool = {"padding": "VALID", "stride_h": 2, "stride_w": 2, "filter_height": 2,
            "filter_width": 2}  # fmt: skip
    assert verdict("MAX_POOL_2D", [(1, 2, 2, 8)], (1, 1, 1, 8), pool) == ("xnn.pool", True)
    assert verdict("MAX_POOL_2D", [(1, 4, 4, 8)], (1, 2, 2, 8), pool) == ("xnn.pool", False)


def test_builtin_kernels_are_never_claimed():
    typ, got = verdict("ADD", [(1, 16), (1, 16)], (1, 16), executor="builtin")
    assert typ == "tfl.binary" and not got


def slice_op(in_shape, begin, size):
    b, s = np.array(begin, np.int32), np.array(size, np.int32)
    return verdict("SLICE", [in_shape, b.shape, s.shape], tuple(size), consts={1: b, 2: s})


def test_a_slice_is_one_task_when_it_is_one_contiguous_run_of_at_most_16_kib():
    # a streaming layer's state update: frames 1.. of the window, channels whole (measured:
    # the same time on one and two threads up to 64 x 64 floats, 3.3x past it)
    assert slice_op((1, 20, 1, 64), (0, 1, 0, 0), (1, 19, 1, 64)) == ("xnn.slice", True)
    assert slice_op((1, 65, 1, 64), (0, 1, 0, 0), (1, 64, 1, 64))[1]  # 16 KiB
    assert not slice_op((1, 66, 1, 64), (0, 1, 0, 0), (1, 65, 1, 64))[1]
    # rows of an image: whole rows are one run
    assert slice_op((1, 4, 4, 64), (0, 1, 0, 0), (1, 3, 4, 64))[1]
    # half the channels of every pixel: four runs (measured: 22 times slower on two threads)
    assert not slice_op((1, 2, 2, 64), (0, 0, 0, 32), (1, 2, 2, 32))[1]


def test_a_slices_rows_are_its_contiguous_runs():
    def runs(in_shape, size):
        mb = ModelBuilder()
        g = mb.subgraph("main")
        x = g.input("x", F32, in_shape)
        y = g.tensor("y", F32, size)
        g.op("SLICE", [x, g.constant("b", np.zeros(len(size), np.int32)),
                       g.constant("s", np.array(size, np.int32))], [y])  # fmt: skip
        g.output(y)
        f = decompose(mb.build(), "xnnpack").features[0]
        return f[FEATURES.index("rows")], f[FEATURES.index("red")]

    assert runs((1, 20, 1, 64), (1, 19, 1, 64)) == (1, 19 * 64)
    assert runs((1, 2, 2, 64), (1, 2, 2, 32)) == (4, 32)
    assert runs((3, 8, 8), (3, 8, 4)) == (24, 4)
    assert runs((4, 8, 8), (2, 8, 8)) == (1, 128)
    assert runs((4, 8, 8), (2, 4, 8)) == (2, 32)


def test_a_concatenation_is_one_task_when_it_joins_one_row_of_at_most_16_kib():
    assert verdict("CONCATENATION", [(1, 4, 1, 64), (1, 1, 1, 64)], (1, 5, 1, 64),
                   {"axis": 1}) == ("xnn.concat", True)  # fmt: skip
    assert verdict("CONCATENATION", [(1, 1, 1, 4096), (1, 1, 1, 1)], (1, 1, 1, 4097),
                   {"axis": 3})[1] is False  # fmt: skip
    # channels of four pixels: a row per pixel
    assert not verdict("CONCATENATION", [(1, 2, 2, 32), (1, 2, 2, 32)], (1, 2, 2, 64),
                       {"axis": 3})[1]  # fmt: skip
