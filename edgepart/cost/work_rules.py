"""The work rules themselves (registered into :data:`edgepart.cost.rules.RULES` on import)."""

from __future__ import annotations

import numpy as np

from edgepart.cost.rules import Ctx, Result, mac_dtype, rule

# ------------------------------------------------------------------ MAC kernels


@rule("CONV_2D")
def _conv2d(c: Ctx, ops: np.ndarray) -> Result:
    # filter [O, kh, kw, I/groups]
    x, w, y = c.inp(ops, 0), c.inp(ops, 1), c.out(ops)
    k = c.dim(w, 1) * c.dim(w, 2) * c.dim(w, 3)
    return Result(macs=c.n(y) * k, dtype=mac_dtype(c, ops, x, w))


@rule("DEPTHWISE_CONV_2D")
def _dwconv(c: Ctx, ops: np.ndarray) -> Result:
    # filter [1, kh, kw, O]: one kh*kw dot product per output element
    x, w, y = c.inp(ops, 0), c.inp(ops, 1), c.out(ops)
    return Result(macs=c.n(y) * c.dim(w, 1) * c.dim(w, 2), dtype=mac_dtype(c, ops, x, w))


@rule("CONV_3D")
def _conv3d(c: Ctx, ops: np.ndarray) -> Result:
    # filter [kd, kh, kw, I, O]
    x, w, y = c.inp(ops, 0), c.inp(ops, 1), c.out(ops)
    k = c.dim(w, 0) * c.dim(w, 1) * c.dim(w, 2) * c.dim(w, 3)
    return Result(macs=c.n(y) * k, dtype=mac_dtype(c, ops, x, w))


@rule("TRANSPOSE_CONV")
def _tconv(c: Ctx, ops: np.ndarray) -> Result:
    # inputs: output_shape, weights [O, kh, kw, I], input; every input element scatters kh*kw*O
    w, x = c.inp(ops, 1), c.inp(ops, 2)
    k = c.dim(w, 0) * c.dim(w, 1) * c.dim(w, 2)
    return Result(macs=c.n(x) * k, dtype=mac_dtype(c, ops, x, w))


@rule("CONV_3D_TRANSPOSE")
def _tconv3d(c: Ctx, ops: np.ndarray) -> Result:
    # inputs: output_shape, filter [kd, kh, kw, O, I], input
    w, x = c.inp(ops, 1), c.inp(ops, 2)
    k = c.dim(w, 0) * c.dim(w, 1) * c.dim(w, 2) * c.dim(w, 3)
    return Result(macs=c.n(x) * k, dtype=mac_dtype(c, ops, x, w))


@rule("FULLY_CONNECTED")
def _fc(c: Ctx, ops: np.ndarray) -> Result:
    # weights [O, K]; keep_num_dims only changes the output's shape, not the work
    x, w, y = c.inp(ops, 0), c.inp(ops, 1), c.out(ops)
    return Result(macs=c.n(y) * c.dim(w, -1), dtype=mac_dtype(c, ops, x, w))


@rule("BATCH_MATMUL")
def _bmm(c: Ctx, ops: np.ndarray) -> Result:
    x, w, y = c.inp(ops, 0), c.inp(ops, 1), c.out(ops)
    adj_x = np.asarray(c.options(ops, "adj_x", False), dtype=bool)
    k = np.where(adj_x, c.dim(x, -2), c.dim(x, -1))
    return Result(macs=c.n(y) * k, dtype=mac_dtype(c, ops, x, w))


def _recurrent(c: Ctx, ops: np.ndarray, weights: tuple[int, ...], feature_dim: int) -> Result:
    """Steps (batch x time) times the weight matrices' elements (each used once per step)."""
    x = c.inp(ops, 0)
    steps = c.n(x) // np.maximum(c.dim(x, feature_dim), 1)
    per_step = np.zeros(len(ops), dtype=np.int64)
    for k in weights:
        per_step += c.n(c.inp(ops, k))
    return Result(macs=steps * per_step, dtype=mac_dtype(c, ops, x, c.inp(ops, weights[0])))


_LSTM_W = (1, 2, 3, 4, 5, 6, 7, 8, 16)  # input-to-gate, recurrent-to-gate, projection


@rule("LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM")
def _lstm(c: Ctx, ops: np.ndarray) -> Result:
    return _recurrent(c, ops, _LSTM_W, -1)


@rule("BIDIRECTIONAL_SEQUENCE_LSTM")
def _bilstm(c: Ctx, ops: np.ndarray) -> Result:
    return _recurrent(c, ops, (*_LSTM_W, 18, 19, 20, 21, 22, 23, 24, 25, 33), -1)


@rule("RNN", "UNIDIRECTIONAL_SEQUENCE_RNN")
def _rnn(c: Ctx, ops: np.ndarray) -> Result:
    return _recurrent(c, ops, (1, 2), -1)


@rule("BIDIRECTIONAL_SEQUENCE_RNN")
def _birnn(c: Ctx, ops: np.ndarray) -> Result:
    return _recurrent(c, ops, (1, 2, 5, 6), -1)


@rule("SVDF")
def _svdf(c: Ctx, ops: np.ndarray) -> Result:
    return _recurrent(c, ops, (1, 2), -1)


# ------------------------------------------------------------------ element-wise

_ELEMENTWISE: dict[float, tuple[str, ...]] = {
    1.0: (
        "ADD",
        "SUB",
        "MUL",
        "DIV",
        "MAXIMUM",
        "MINIMUM",
        "RELU",
        "RELU6",
        "RELU_N1_TO_1",
        "RELU_0_TO_1",
        "ABS",
        "NEG",
        "FLOOR",
        "CEIL",
        "ROUND",
        "SQUARE",
        "SIGN",
        "SQRT",
        "RSQRT",
        "EXP",
        "LOG",
        "SIN",
        "COS",
        "TANH",
        "POW",
        "FLOOR_DIV",
        "FLOOR_MOD",
        "EQUAL",
        "NOT_EQUAL",
        "LESS",
        "LESS_EQUAL",
        "GREATER",
        "GREATER_EQUAL",
        "LOGICAL_AND",
        "LOGICAL_OR",
        "LOGICAL_NOT",
        "SELECT",
        "SELECT_V2",
        "CAST",
        "ATAN2",
        "BITWISE_XOR",
        "RIGHT_SHIFT",
        "CUMSUM",
        "ZEROS_LIKE",
        "FILL",
        "COMPLEX_ABS",
        "REAL",
        "IMAG",
    ),
    2.0: ("SQUARED_DIFFERENCE", "LEAKY_RELU", "PRELU", "ELU", "DEQUANTIZE", "QUANTIZE"),
    3.0: ("FAKE_QUANT",),
    4.0: ("LOGISTIC",),
    5.0: ("HARD_SWISH",),
    8.0: ("GELU",),
}


def _per_output(k: float) -> object:
    def fn(c: Ctx, ops: np.ndarray) -> Result:
        return Result(flops=k * c.n(c.out(ops)))

    return fn


for _k, _names in _ELEMENTWISE.items():
    rule(*_names)(_per_output(_k))  # type: ignore[arg-type]


@rule("ADD_N")
def _add_n(c: Ctx, ops: np.ndarray) -> Result:
    nin = c.in_ptr[ops + 1] - c.in_ptr[ops]
    return Result(flops=np.maximum(nin - 1, 0) * c.n(c.out(ops)))


# ------------------------------------------------------------------ reductions, normalizations


@rule(
    "MEAN",
    "SUM",
    "REDUCE_MAX",
    "REDUCE_MIN",
    "REDUCE_PROD",
    "REDUCE_ANY",
    "REDUCE_ALL",
    "ARG_MAX",
    "ARG_MIN",
    "UNSORTED_SEGMENT_SUM",
    "UNSORTED_SEGMENT_MAX",
    "UNSORTED_SEGMENT_MIN",
    "UNSORTED_SEGMENT_PROD",
    "SEGMENT_SUM",
)
def _reduce(c: Ctx, ops: np.ndarray) -> Result:
    return Result(flops=c.n(c.inp(ops, 0)))


@rule("SOFTMAX", "LOG_SOFTMAX")
def _softmax(c: Ctx, ops: np.ndarray) -> Result:
    # max, subtract, exp, sum, scale: five per element
    return Result(flops=5 * c.n(c.inp(ops, 0)))


@rule("L2_NORMALIZATION")
def _l2norm(c: Ctx, ops: np.ndarray) -> Result:
    return Result(flops=3 * c.n(c.inp(ops, 0)))


@rule("LOCAL_RESPONSE_NORMALIZATION")
def _lrn(c: Ctx, ops: np.ndarray) -> Result:
    radius = np.asarray(c.options(ops, "radius", 5), dtype=np.int64)
    return Result(flops=(2 * radius + 1 + 4) * c.n(c.inp(ops, 0)))


@rule("AVERAGE_POOL_2D", "MAX_POOL_2D")
def _pool(c: Ctx, ops: np.ndarray) -> Result:
    fh = np.asarray(c.options(ops, "filter_height", 1), dtype=np.int64)
    fw = np.asarray(c.options(ops, "filter_width", 1), dtype=np.int64)
    return Result(flops=c.n(c.out(ops)) * fh * fw)


@rule("L2_POOL_2D")
def _l2pool(c: Ctx, ops: np.ndarray) -> Result:
    fh = np.asarray(c.options(ops, "filter_height", 1), dtype=np.int64)
    fw = np.asarray(c.options(ops, "filter_width", 1), dtype=np.int64)
    return Result(flops=c.n(c.out(ops)) * (2 * fh * fw + 1))


@rule("RESIZE_BILINEAR")
def _bilinear(c: Ctx, ops: np.ndarray) -> Result:
    # four taps blended by three lerps (a subtract, a multiply and an add each)
    return Result(flops=9 * c.n(c.out(ops)))


# ------------------------------------------------------------------ data movement (no FLOPs)


@rule(
    "RESIZE_NEAREST_NEIGHBOR",
    "CONCATENATION",
    "SPLIT",
    "SPLIT_V",
    "RESHAPE",
    "SQUEEZE",
    "EXPAND_DIMS",
    "TRANSPOSE",
    "PACK",
    "UNPACK",
    "PAD",
    "PADV2",
    "MIRROR_PAD",
    "TILE",
    "BROADCAST_TO",
    "DEPTH_TO_SPACE",
    "SPACE_TO_DEPTH",
    "SPACE_TO_BATCH_ND",
    "BATCH_TO_SPACE_ND",
    "REVERSE_V2",
    "REVERSE_SEQUENCE",
    "ONE_HOT",
    "RANGE",
    "DYNAMIC_UPDATE_SLICE",
    "BROADCAST_ARGS",
    "MATRIX_DIAG",
    "MATRIX_SET_DIAG",
    "BITCAST",
    "READ_VARIABLE",
    "ASSIGN_VARIABLE",
    "VAR_HANDLE",
    "DENSIFY",
    "SCATTER_ND",
    "SPARSE_TO_DENSE",
    "DILATE",
)
def _movement(c: Ctx, ops: np.ndarray) -> Result:
    return Result()


@rule("SHAPE", "RANK")
def _meta(c: Ctx, ops: np.ndarray) -> Result:
    # reads only the input's dimensions, not its data
    return Result(act_read=np.zeros(len(ops), dtype=np.int64))


def _partial(c: Ctx, ops: np.ndarray, src: int, rest: tuple[int, ...]) -> Result:
    """Reads of input ``src`` limited to what lands in the output (gathers, slices)."""
    t = c.inp(ops, src)
    part = np.minimum(c.b(t), c.b(c.out(ops)))
    const = (t >= 0) & c.weight_like[np.maximum(t, 0)]
    act = np.where(const, 0, part)
    wgt = np.where(const, part, 0)
    for k in rest:
        r = c.inp(ops, k)
        rc = (r >= 0) & c.weight_like[np.maximum(r, 0)]
        act += np.where(rc, 0, c.b(r))
        wgt += np.where(rc, c.b(r), 0)
    dt = c.dtype_of(t).astype(np.int8)
    return Result(act_read=act, weight_read=wgt, dtype=dt)


@rule("GATHER", "GATHER_ND")
def _gather(c: Ctx, ops: np.ndarray) -> Result:
    return _partial(c, ops, 0, (1,))


@rule("EMBEDDING_LOOKUP")
def _embedding(c: Ctx, ops: np.ndarray) -> Result:
    return _partial(c, ops, 1, (0,))


@rule("SLICE", "STRIDED_SLICE")
def _slice(c: Ctx, ops: np.ndarray) -> Result:
    return _partial(c, ops, 0, (1, 2, 3))


# ------------------------------------------------------------------ selection, sorting


@rule("TOPK_V2")
def _topk(c: Ctx, ops: np.ndarray) -> Result:
    # a heap of k per row: n log2(k) comparisons
    x, y = c.inp(ops, 0), c.out(ops)
    k = np.maximum(c.dim(y, -1), 2)
    return Result(flops=c.n(x) * np.log2(k))


@rule("WHERE", "UNIQUE", "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5")
def _data_dependent(c: Ctx, ops: np.ndarray) -> Result:
    # output sizes depend on the data: the static shapes bound them, so this is an upper bound
    return Result(flops=c.n(c.inp(ops, 0)), exact=False)
