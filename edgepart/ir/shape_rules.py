"""Per-op rules of shape propagation (:mod:`edgepart.ir.shapes`): output shapes, small values
(what shape-computing chains need, evaluated with NumPy) and LiteRT's prepare-time behaviour.

Each shape rule takes a :class:`Ctx` (the op, its inputs' shapes and known values) and returns
the output shapes; it also records what LiteRT's kernel does in ``Prepare``: ``ctx.dynamic``
when the output cannot be sized there (a shape input whose value is neither a constant nor
computed in ``Prepare``), ``ctx.persistent`` when the kernel computes the output there (LiteRT's
persistent read-only tensors). The conditions follow ``tflite/kernels/<op>.cc``: ``SHAPE``
always; ``RESHAPE``, ``STRIDED_SLICE``, ``GATHER``, ``CONCATENATION``, ``MUL``, ``TILE``,
``RANGE`` and ``REDUCE_PROD`` when their inputs are known there; ``PACK``, ``CAST`` and ``ADD``
never. The tests compare every tensor with LiteRT on the corpora.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from edgepart.errors import UsageError
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Subgraph

__all__ = [
    "FLOW",
    "MAX_VALUE_ELEMENTS",
    "RULES",
    "VALUES",
    "Ctx",
    "Shape",
    "Unknown",
    "fmt_shape",
    "np_dtype",
]

Shape = tuple[int, ...]

# Values are computed for tensors at most this big (shape vectors, scalars, small index lists).
MAX_VALUE_ELEMENTS = 4096


def fmt_shape(shape: Sequence[int]) -> str:
    """``[1,224,224,3]``."""
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


class Unknown(Exception):
    """The output shape depends on values not known before a run."""


class State(Protocol):
    """What the propagation keeps per subgraph (``edgepart.ir.shapes``)."""

    sg: Subgraph
    shapes: list[Shape]
    values: dict[int, np.ndarray]
    pk: np.ndarray  # LiteRT knows the value in Prepare
    known: np.ndarray  # the shape is the run-time shape
    handles: dict[int, tuple[str, str]]


class Ctx:
    """What a shape rule sees of one op: ``run`` is the propagation (for control flow),
    ``st`` the subgraph state (shapes, values, what LiteRT knows in Prepare)."""

    def __init__(
        self,
        run: Any,
        st: State,
        k: int,
        op: int,
        name: str,
        ins: tuple[int, ...],
        outs: tuple[int, ...],
    ) -> None:
        self.run = run
        self.st = st
        self.k = k
        self.op = op
        self.name = name
        self.ins = ins
        self.outs = outs
        self.options: Mapping[str, Any] = st.sg.op_options[op] or {}
        self.dynamic = False  # LiteRT makes the outputs dynamic in Prepare
        self.persistent = False  # LiteRT computes the outputs in Prepare

    # inputs
    def n(self) -> int:
        return len(self.ins)

    def shape(self, i: int) -> Shape:
        t = self.ins[i]
        if t < 0:
            raise UsageError(f"{self.where()}: input {i} is missing")
        return self.st.shapes[t]

    def has(self, i: int) -> bool:
        return i < len(self.ins) and self.ins[i] >= 0

    def value(self, i: int) -> np.ndarray:
        """The input's value, or raise Unknown."""
        t = self.ins[i] if i < len(self.ins) else -1
        v = self.st.values.get(t) if t >= 0 else None
        if v is None:
            raise Unknown()
        return v

    def ints(self, i: int) -> list[int]:
        return [int(x) for x in np.asarray(self.value(i)).reshape(-1).tolist()]

    def pk(self, i: int) -> bool:
        t = self.ins[i] if i < len(self.ins) else -1
        return bool(t >= 0 and self.st.pk[t])

    def unspecified(self, t: int) -> bool:
        """LiteRT's ``HasUnspecifiedDimension``: a -1 in the tensor's shape signature."""
        sg = self.st.sg
        return bool(sg.tensor_has_signature[t]) and -1 in sg.tensor_signature.row_tuple(t)

    def stored_out(self, i: int = 0) -> Shape:
        return self.st.sg.tensor_shape.row_tuple(self.outs[i])

    def out_dtype(self, i: int = 0) -> np.dtype[Any]:
        return np_dtype(self.st.sg, self.outs[i])

    def where(self) -> str:
        sub = f"subgraph {self.k} " if self.k else ""
        return f"{sub}op {self.op} {self.name}"

    def fail(self, why: str) -> UsageError:
        shapes = ", ".join(fmt_shape(self.st.shapes[t]) for t in self.ins if t >= 0)
        return UsageError(
            f"{self.where()} cannot run at these input sizes: {why} (input shapes {shapes})"
        )

    # LiteRT prepare-time behaviour
    def needs_known(self, *slots: int) -> None:
        """The output is dynamic in LiteRT unless these inputs are known at prepare."""
        for i in slots:
            if self.has(i) and not self.pk(i):
                self.dynamic = True

    def persist_if_known(self, *slots: int) -> None:
        """LiteRT computes the output in Prepare when these inputs are known there."""
        if all(self.has(i) and self.pk(i) for i in slots):
            self.persistent = True


def np_dtype(sg: Subgraph, t: int) -> np.dtype[Any]:
    dt = DType(int(sg.tensor_dtype[t])).numpy
    return np.dtype(dt) if dt is not None else np.dtype(np.uint8)


# Shape rules.
# --------------------------------------------------------------------------------------------

Rule = Callable[[Ctx], Sequence[Shape | None]]
RULES: dict[str, Rule] = {}
VALUES: dict[str, Callable[[Ctx], Sequence[np.ndarray | None] | None]] = {}
FLOW = frozenset({"IF", "WHILE", "CALL_ONCE"})


def _rule(*names: str) -> Callable[[Rule], Rule]:
    def deco(fn: Rule) -> Rule:
        for n in names:
            RULES[n] = fn
        return fn

    return deco


def _value(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        for n in names:
            VALUES[n] = fn
        return fn

    return deco


def _numel(s: Sequence[int]) -> int:
    return int(math.prod(s))


def _broadcast(ctx: Ctx, *shapes: Shape) -> Shape:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise ctx.fail("the operand shapes do not broadcast") from None


_UNARY = (
    "ABS", "CAST", "CEIL", "COS", "DENSIFY", "DEQUANTIZE", "ELU", "EXP", "FLOOR", "GELU",
    "HARD_SWISH", "L2_NORMALIZATION", "LEAKY_RELU", "LOCAL_RESPONSE_NORMALIZATION", "LOG",
    "LOGICAL_NOT", "LOGISTIC", "LOG_SOFTMAX", "NEG", "QUANTIZE", "RELU", "RELU6", "RELU_0_TO_1",
    "RELU_N1_TO_1", "ROUND", "RSQRT", "SIGN", "SIN", "SOFTMAX", "SQRT", "SQUARE", "TANH",
    "ZEROS_LIKE", "ONES_LIKE", "REVERSE_V2", "COMPLEX_ABS", "REAL", "IMAG", "IDENTITY",
    "REVERSE_SEQUENCE", "CUMSUM", "BITCAST", "BITWISE_XOR", "RIGHT_SHIFT",
)  # fmt: skip


@_rule(*_UNARY)
def _unary(ctx: Ctx) -> list[Shape | None]:
    return [ctx.shape(0)] * len(ctx.outs)


_BINARY = (
    "ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "POW", "FLOOR_DIV",
    "FLOOR_MOD", "EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL",
    "LOGICAL_AND", "LOGICAL_OR", "PRELU", "ATAN2",
)  # fmt: skip


@_rule(*_BINARY)
def _binary(ctx: Ctx) -> list[Shape | None]:
    if ctx.name == "MUL":
        ctx.persist_if_known(0, 1)
    if ctx.name == "PRELU":
        return [_broadcast(ctx, ctx.shape(0), ctx.shape(1))]
    return [_broadcast(ctx, ctx.shape(0), ctx.shape(1))]


@_rule("SELECT", "SELECT_V2")
def _select(ctx: Ctx) -> list[Shape | None]:
    if ctx.name == "SELECT":
        return [ctx.shape(1)]
    return [_broadcast(ctx, ctx.shape(0), ctx.shape(1), ctx.shape(2))]


@_rule("ADD_N")
def _add_n(ctx: Ctx) -> list[Shape | None]:
    return [ctx.shape(0)]


def _window(size: int, k: int, stride: int, dilation: int, padding: str) -> int:
    eff = (k - 1) * dilation + 1
    if padding == "SAME":
        return (size + stride - 1) // stride
    return (size - eff + stride) // stride


@_rule("CONV_2D", "DEPTHWISE_CONV_2D")
def _conv(ctx: Ctx) -> list[Shape | None]:
    x, w = ctx.shape(0), ctx.shape(1)
    if len(x) != 4 or len(w) != 4:
        raise ctx.fail("input and filter must be 4-D")
    o = ctx.options
    pad = str(o.get("padding", "SAME"))
    h = _window(x[1], w[1], int(o.get("stride_h", 1)), int(o.get("dilation_h_factor", 1)), pad)
    wd = _window(x[2], w[2], int(o.get("stride_w", 1)), int(o.get("dilation_w_factor", 1)), pad)
    if h < 1 or wd < 1:
        raise ctx.fail(f"the {w[1]}x{w[2]} window does not fit the {x[1]}x{x[2]} input")
    ch = w[0] if ctx.name == "CONV_2D" else w[3]
    return [(x[0], h, wd, ch)]


@_rule("CONV_3D")
def _conv3d(ctx: Ctx) -> list[Shape | None]:
    x, w = ctx.shape(0), ctx.shape(1)
    o = ctx.options
    pad = str(o.get("padding", "SAME"))
    d = _window(x[1], w[0], int(o.get("stride_d", 1)), int(o.get("dilation_d_factor", 1)), pad)
    h = _window(x[2], w[1], int(o.get("stride_h", 1)), int(o.get("dilation_h_factor", 1)), pad)
    wd = _window(x[3], w[2], int(o.get("stride_w", 1)), int(o.get("dilation_w_factor", 1)), pad)
    return [(x[0], d, h, wd, w[4])]


@_rule("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D")
def _pool(ctx: Ctx) -> list[Shape | None]:
    x = ctx.shape(0)
    if len(x) != 4:
        raise ctx.fail("the input must be 4-D")
    o = ctx.options
    pad = str(o.get("padding", "SAME"))
    h = _window(x[1], int(o.get("filter_height", 1)), int(o.get("stride_h", 1)), 1, pad)
    w = _window(x[2], int(o.get("filter_width", 1)), int(o.get("stride_w", 1)), 1, pad)
    if h < 1 or w < 1:
        raise ctx.fail("the pooling window does not fit the input")
    return [(x[0], h, w, x[3])]


@_rule("TRANSPOSE_CONV")
def _transpose_conv(ctx: Ctx) -> list[Shape | None]:
    ctx.needs_known(0)
    return [tuple(ctx.ints(0))]


@_rule("FULLY_CONNECTED")
def _fc(ctx: Ctx) -> list[Shape | None]:
    x, w = ctx.shape(0), ctx.shape(1)
    if len(w) != 2:
        raise ctx.fail("the weights must be 2-D")
    units, depth = w
    if depth == 0 or _numel(x) % depth:
        raise ctx.fail(f"{_numel(x)} input elements are not a multiple of the weights' {depth}")
    if ctx.options.get("keep_num_dims"):
        if x[-1] != depth:
            raise ctx.fail(f"the last input dimension must be {depth}")
        return [(*x[:-1], units), *[None] * (len(ctx.outs) - 1)]
    return [(_numel(x) // depth, units), *[None] * (len(ctx.outs) - 1)]


@_rule("BATCH_MATMUL")
def _batch_matmul(ctx: Ctx) -> list[Shape | None]:
    a, b = ctx.shape(0), ctx.shape(1)
    if len(a) < 2 or len(b) < 2:
        raise ctx.fail("operands must be at least 2-D")
    m, ka = (a[-1], a[-2]) if ctx.options.get("adj_x") else (a[-2], a[-1])
    kb, n = (b[-1], b[-2]) if ctx.options.get("adj_y") else (b[-2], b[-1])
    if ka != kb:
        raise ctx.fail(f"inner dimensions differ ({ka} vs {kb})")
    batch = _broadcast(ctx, a[:-2], b[:-2])
    return [(*batch, m, n)]


@_rule("RESHAPE")
def _reshape(ctx: Ctx) -> list[Shape | None]:
    x = ctx.shape(0)
    st = ctx.st
    from_tensor = (
        ctx.n() == 2
        and ctx.has(1)
        and len(ctx.shape(1)) == 1
        and st.sg.tensor_dtype[ctx.ins[1]] == int(DType.INT32)
    )
    if ctx.n() == 1 or not ctx.has(1) or ctx.pk(1):
        if ctx.pk(0):
            ctx.persistent = True
    else:
        ctx.dynamic = True
    if from_tensor:
        want = ctx.ints(1)
    else:
        new = ctx.options.get("new_shape")
        if new is None:
            return [ctx.stored_out()]
        want = [int(d) for d in new]
        if want == [0]:
            want = []
    total = _numel(x)
    if want.count(-1) > 1:
        raise ctx.fail(f"the new shape {want} has more than one -1")
    if -1 in want:
        rest = _numel([d for d in want if d != -1])
        if rest == 0 or total % rest:
            raise ctx.fail(f"{total} elements cannot be reshaped to {want}")
        want = [total // rest if d == -1 else d for d in want]
    if _numel(want) != total:
        raise ctx.fail(f"{total} elements cannot be reshaped to {want}")
    return [tuple(want)]


@_rule("SQUEEZE")
def _squeeze(ctx: Ctx) -> list[Shape | None]:
    x = ctx.shape(0)
    dims = [int(d) % max(len(x), 1) for d in ctx.options.get("squeeze_dims", ()) or ()]
    if not dims:
        return [tuple(d for d in x if d != 1)]
    for d in dims:
        if x[d] != 1:
            raise ctx.fail(f"dimension {d} is {x[d]}, not 1")
    return [tuple(s for i, s in enumerate(x) if i not in dims)]


@_rule("EXPAND_DIMS")
def _expand_dims(ctx: Ctx) -> list[Shape | None]:
    ctx.needs_known(1)
    x = ctx.shape(0)
    axis = ctx.ints(1)[0]
    if axis < 0:
        axis += len(x) + 1
    if not 0 <= axis <= len(x):
        raise ctx.fail(f"axis {axis} is out of range")
    return [(*x[:axis], 1, *x[axis:])]


@_rule("CONCATENATION")
def _concat(ctx: Ctx) -> list[Shape | None]:
    shapes = [ctx.shape(i) for i in range(ctx.n())]
    ctx.persist_if_known(*range(ctx.n()))
    first = shapes[0]
    if not first:
        return [(len(shapes),)]
    axis = int(ctx.options.get("axis", 0))
    if axis < 0:
        axis += len(first)
    total = 0
    for s in shapes:
        if len(s) != len(first) or any(
            a != b for i, (a, b) in enumerate(zip(s, first, strict=True)) if i != axis
        ):
            raise ctx.fail(f"the inputs' shapes differ outside axis {axis}")
        total += s[axis]
    return [(*first[:axis], total, *first[axis + 1 :])]


@_rule("PACK")
def _pack(ctx: Ctx) -> list[Shape | None]:
    first = ctx.shape(0)
    for i in range(1, ctx.n()):
        if ctx.shape(i) != first:
            raise ctx.fail("the packed inputs differ in shape")
    axis = int(ctx.options.get("axis", 0))
    if axis < 0:
        axis += len(first) + 1
    return [(*first[:axis], ctx.n(), *first[axis:])]


@_rule("UNPACK")
def _unpack(ctx: Ctx) -> list[Shape | None]:
    x = ctx.shape(0)
    axis = int(ctx.options.get("axis", 0)) % max(len(x), 1)
    out = (*x[:axis], *x[axis + 1 :])
    return [out] * len(ctx.outs)


@_rule("SPLIT")
def _split(ctx: Ctx) -> list[Shape | None]:
    ctx.needs_known(0)
    x = ctx.shape(1)
    axis = ctx.ints(0)[0] % max(len(x), 1)
    n = len(ctx.outs)
    if x[axis] % n:
        raise ctx.fail(f"dimension {axis} ({x[axis]}) does not split into {n}")
    return [(*x[:axis], x[axis] // n, *x[axis + 1 :])] * n


@_rule("SPLIT_V")
def _split_v(ctx: Ctx) -> list[Shape | None]:
    ctx.needs_known(1, 2)
    x = ctx.shape(0)
    sizes = ctx.ints(1)
    axis = ctx.ints(2)[0] % max(len(x), 1)
    if sizes.count(-1) == 1:
        rest = sum(s for s in sizes if s != -1)
        sizes = [x[axis] - rest if s == -1 else s for s in sizes]
    if sum(sizes) != x[axis]:
        raise ctx.fail(f"split sizes {sizes} do not add up to dimension {axis} ({x[axis]})")
    return [(*x[:axis], s, *x[axis + 1 :]) for s in sizes]


@_rule("SLICE")
def _slice(ctx: Ctx) -> list[Shape | None]:
    # slice.cc: an output whose signature is fully known keeps its stored shape; otherwise
    # non-constant bounds or a -1 in the input's signature postpone sizing to Eval
    if ctx.unspecified(ctx.outs[0]):
        ctx.needs_known(1, 2)
        if ctx.unspecified(ctx.ins[0]):
            ctx.dynamic = True
    x = ctx.shape(0)
    begin, size = ctx.ints(1), ctx.ints(2)
    out = []
    for d, b, s in zip(x, begin, size, strict=False):
        s = d - b if s == -1 else s
        if b < 0 or s < 0 or b + s > d:
            raise ctx.fail(f"begin {begin} and size {size} do not fit the input")
        out.append(s)
    return [tuple(out)]


def _strided_index(ctx: Ctx, rank: int) -> tuple[Any, ...]:
    begin, end = ctx.ints(1), ctx.ints(2)
    strides = ctx.ints(3) if ctx.has(3) else [1] * len(begin)
    o = ctx.options
    bm, em = int(o.get("begin_mask", 0)), int(o.get("end_mask", 0))
    ell, new, shrink = (
        int(o.get("ellipsis_mask", 0)),
        int(o.get("new_axis_mask", 0)),
        int(o.get("shrink_axis_mask", 0)),
    )
    offset = bool(o.get("offset", False))
    index: list[Any] = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides, strict=False)):
        bit = 1 << i
        if ell & bit:
            index.append(Ellipsis)
        elif new & bit:
            index.append(None)
        elif shrink & bit:
            index.append(b)
        else:
            if s == 0:
                raise ctx.fail("a stride is 0")
            if offset:
                e = b + e
            index.append(slice(None if bm & bit else b, None if em & bit else e, s))
    return tuple(index)


@_rule("STRIDED_SLICE")
def _strided_slice(ctx: Ctx) -> list[Shape | None]:
    offset = bool(ctx.options.get("offset", False))
    if not (ctx.has(3) and ctx.pk(3)) or not (offset or (ctx.pk(1) and ctx.pk(2))):
        ctx.dynamic = True
    elif ctx.pk(0) and ctx.pk(1) and ctx.pk(2):
        ctx.persistent = True
    x = ctx.shape(0)
    probe = np.broadcast_to(np.zeros((), dtype=bool), x)
    try:
        return [tuple(int(d) for d in probe[_strided_index(ctx, len(x))].shape)]
    except IndexError as err:
        raise ctx.fail(f"the slice does not fit the input ({err})") from None


@_rule("GATHER")
def _gather(ctx: Ctx) -> list[Shape | None]:
    ctx.persist_if_known(0, 1)
    x, idx = ctx.shape(0), ctx.shape(1)
    axis = int(ctx.options.get("axis", 0))
    if axis < 0:
        axis += len(x)
    bd = int(ctx.options.get("batch_dims", 0))
    if bd < 0:
        bd += len(idx)
    return [(*x[:axis], *idx[bd:], *x[axis + 1 :])]


@_rule("GATHER_ND")
def _gather_nd(ctx: Ctx) -> list[Shape | None]:
    x, idx = ctx.shape(0), ctx.shape(1)
    return [(*idx[:-1], *x[idx[-1] :])]


@_rule("EMBEDDING_LOOKUP")
def _embedding_lookup(ctx: Ctx) -> list[Shape | None]:
    ids, table = ctx.shape(0), ctx.shape(1)
    return [(*ids, *table[1:])]


@_rule("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY", "REDUCE_ALL")
def _reduce(ctx: Ctx) -> list[Shape | None]:
    ctx.needs_known(1)
    x = ctx.shape(0)
    axes = {a % max(len(x), 1) for a in ctx.ints(1)}
    keep = bool(ctx.options.get("keep_dims", False))
    out = tuple(1 if i in axes else d for i, d in enumerate(x) if keep or i not in axes)
    if ctx.name == "REDUCE_PROD" and ctx.pk(0) and ctx.pk(1) and _numel(out) <= 8:
        ctx.persistent = True  # reduce.cc: only PrepareProd computes a constant reduction
    return [out]


@_rule("ARG_MAX", "ARG_MIN")
def _arg(ctx: Ctx) -> list[Shape | None]:
    ctx.needs_known(1)
    x = ctx.shape(0)
    axis = ctx.ints(1)[0] % max(len(x), 1)
    return [(*x[:axis], *x[axis + 1 :])]


@_rule("PAD", "PADV2", "MIRROR_PAD")
def _pad(ctx: Ctx) -> list[Shape | None]:
    ctx.needs_known(1)
    x = ctx.shape(0)
    p = np.asarray(ctx.value(1)).reshape(-1, 2)
    if len(p) != len(x):
        raise ctx.fail(f"paddings are for {len(p)} dimensions, the input has {len(x)}")
    return [tuple(int(d + a + b) for d, (a, b) in zip(x, p.tolist(), strict=True))]


@_rule("TRANSPOSE")
def _transpose(ctx: Ctx) -> list[Shape | None]:
    ctx.needs_known(1)
    x = ctx.shape(0)
    perm = ctx.ints(1)
    if sorted(p % max(len(x), 1) for p in perm) != list(range(len(x))):
        raise ctx.fail(f"{perm} is not a permutation of the input's {len(x)} dimensions")
    return [tuple(x[p] for p in perm)]


@_rule("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR")
def _resize(ctx: Ctx) -> list[Shape | None]:
    ctx.needs_known(1)
    x = ctx.shape(0)
    h, w = ctx.ints(1)[:2]
    return [(x[0], h, w, x[3])]


@_rule("DEPTH_TO_SPACE")
def _d2s(ctx: Ctx) -> list[Shape | None]:
    x = ctx.shape(0)
    b = int(ctx.options.get("block_size", 1))
    if x[3] % (b * b):
        raise ctx.fail(f"depth {x[3]} is not a multiple of {b * b}")
    return [(x[0], x[1] * b, x[2] * b, x[3] // (b * b))]


@_rule("SPACE_TO_DEPTH")
def _s2d(ctx: Ctx) -> list[Shape | None]:
    x = ctx.shape(0)
    b = int(ctx.options.get("block_size", 1))
    if x[1] % b or x[2] % b:
        raise ctx.fail(f"height and width must be multiples of {b}")
    return [(x[0], x[1] // b, x[2] // b, x[3] * b * b)]


@_rule("TILE")
def _tile(ctx: Ctx) -> list[Shape | None]:
    ctx.needs_known(1)
    if not ctx.dynamic:
        ctx.persist_if_known(0, 1)
    x = ctx.shape(0)
    m = ctx.ints(1)
    return [tuple(d * k for d, k in zip(x, m, strict=False))]


@_rule("BROADCAST_TO")
def _broadcast_to(ctx: Ctx) -> list[Shape | None]:
    ctx.needs_known(1)
    return [_broadcast(ctx, ctx.shape(0), tuple(ctx.ints(1)))]


@_rule("FILL")
def _fill(ctx: Ctx) -> list[Shape | None]:
    ctx.needs_known(0)
    return [tuple(ctx.ints(0))]


@_rule("RANGE")
def _range(ctx: Ctx) -> list[Shape | None]:
    if ctx.pk(0) and ctx.pk(1) and ctx.pk(2):
        ctx.persistent = True
    else:
        ctx.dynamic = True
    start, limit, delta = (float(np.asarray(ctx.value(i)).reshape(-1)[0]) for i in range(3))
    if delta == 0:
        raise ctx.fail("delta is 0")
    return [(max(0, math.ceil((limit - start) / delta)),)]


@_rule("SHAPE")
def _shape(ctx: Ctx) -> list[Shape | None]:
    ctx.persistent = True
    return [(len(ctx.shape(0)),)]


@_rule("RANK")
def _rank(ctx: Ctx) -> list[Shape | None]:
    return [()]


@_rule("RFFT2D")
def _rfft2d(ctx: Ctx) -> list[Shape | None]:
    ctx.needs_known(1)
    x = ctx.shape(0)
    fh, fw = ctx.ints(1)[:2]
    return [(*x[:-2], fh, fw // 2 + 1)]


@_rule("TOPK_V2")
def _topk(ctx: Ctx) -> list[Shape | None]:
    ctx.needs_known(1)
    x = ctx.shape(0)
    k = ctx.ints(1)[0]
    return [(*x[:-1], k), (*x[:-1], k)]


@_rule("ONE_HOT")
def _one_hot(ctx: Ctx) -> list[Shape | None]:
    ctx.needs_known(1)
    x = ctx.shape(0)
    depth = ctx.ints(1)[0]
    axis = int(ctx.options.get("axis", -1))
    if axis < 0:
        axis += len(x) + 1
    return [(*x[:axis], depth, *x[axis:])]


@_rule("UNIDIRECTIONAL_SEQUENCE_LSTM", "UNIDIRECTIONAL_SEQUENCE_RNN", "LSTM")
def _lstm(ctx: Ctx) -> list[Shape | None]:
    x = ctx.shape(0)
    out = ctx.stored_out()
    return [(*x[:-1], out[-1])] + [None] * (len(ctx.outs) - 1)


@_rule("WHERE", "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", "UNIQUE")
def _data_dependent(ctx: Ctx) -> list[Shape | None]:
    ctx.dynamic = True
    raise Unknown()


def _resource_key(ctx: Ctx, i: int) -> tuple[str, str] | None:
    return ctx.st.handles.get(ctx.ins[i]) if ctx.has(i) else None


@_rule("VAR_HANDLE")
def _var_handle(ctx: Ctx) -> list[Shape | None]:
    key = (str(ctx.options.get("container", "")), str(ctx.options.get("shared_name", "")))
    ctx.st.handles[ctx.outs[0]] = key
    return [ctx.stored_out()]


@_rule("ASSIGN_VARIABLE")
def _assign_variable(ctx: Ctx) -> list[Shape | None]:
    key = _resource_key(ctx, 0)
    if key is not None and ctx.has(1):
        ctx.run.variables[key] = ctx.shape(1)
    return []


@_rule("READ_VARIABLE")
def _read_variable(ctx: Ctx) -> list[Shape | None]:
    # read_variable.cc: a scalar (or unranked) output is made dynamic in Prepare
    if len(ctx.stored_out()) == 0:
        ctx.dynamic = True
    key = _resource_key(ctx, 0)
    if key is not None and key in ctx.run.variables:
        return [ctx.run.variables[key]]
    return [ctx.stored_out()]


@_rule("CALL_ONCE")
def _call_once(ctx: Ctx) -> list[Shape | None]:
    k = int(ctx.options.get("init_subgraph_index", -1))
    if 0 <= k < len(ctx.run.model.subgraphs):
        ctx.run.subgraph(k, {}, caller=ctx.where())
    return []


def _call(ctx: Ctx, k: int, args: Sequence[int]) -> Any:
    """Propagate subgraph ``k`` with its inputs set from the caller's tensors ``args``."""
    sub = ctx.run.model.subgraphs[k]
    st = ctx.st
    inputs = {
        int(t): st.shapes[a] for t, a in zip(sub.inputs.tolist(), args, strict=False) if a >= 0
    }
    return ctx.run.subgraph(k, inputs, caller=ctx.where())


@_rule("IF")
def _if(ctx: Ctx) -> list[Shape | None]:
    o = ctx.options
    then_k, else_k = int(o.get("then_subgraph_index", -1)), int(o.get("else_subgraph_index", -1))
    args = ctx.ins[1:]
    runs = [_call(ctx, then_k, args), _call(ctx, else_k, args)]
    outs = [[r.shapes[int(t)] for t in r.sg.outputs.tolist()] for r in runs]
    if any(r.has_dynamic for r in runs) or outs[0] != outs[1]:
        ctx.dynamic = True
    cond = ctx.st.values.get(ctx.ins[0])
    if outs[0] == outs[1]:
        pick = 0
    elif cond is not None:
        pick = 0 if bool(np.asarray(cond).reshape(-1)[0]) else 1
    else:
        raise Unknown()
    known = [bool(r.known[int(t)]) for r in runs[pick : pick + 1] for t in r.sg.outputs.tolist()]
    return [s if ok else None for s, ok in zip(outs[pick], known, strict=False)]


@_rule("WHILE")
def _while(ctx: Ctx) -> list[Shape | None]:
    o = ctx.options
    cond_k, body_k = int(o.get("cond_subgraph_index", -1)), int(o.get("body_subgraph_index", -1))
    _call(ctx, cond_k, ctx.ins)
    body = _call(ctx, body_k, ctx.ins)
    ins = [ctx.st.shapes[t] if t >= 0 else () for t in ctx.ins]
    outs = [body.shapes[int(t)] for t in body.sg.outputs.tolist()]
    if body.has_dynamic:
        ctx.dynamic = True
    for a, b in zip(ins, outs, strict=False):
        if a != b and (a[0] if a else 0) + (b[0] if b else 0) != 1:
            ctx.dynamic = True
            raise Unknown()  # the loop grows a tensor: its size depends on the trip count
    return [tuple(s) for s in outs]


# --------------------------------------------------------------------------------------------
# Value rules (NumPy, for small tensors: what shape-computing chains need).
# --------------------------------------------------------------------------------------------


def _out(ctx: Ctx, v: Any, i: int = 0) -> np.ndarray:
    out: np.ndarray = np.asarray(v).astype(ctx.out_dtype(i), copy=False)
    return out.reshape(ctx.st.shapes[ctx.outs[i]])


@_value("SHAPE")
def _v_shape(ctx: Ctx) -> list[np.ndarray]:
    return [_out(ctx, np.asarray(ctx.shape(0), dtype=np.int64))]


@_value("RANK")
def _v_rank(ctx: Ctx) -> list[np.ndarray]:
    return [_out(ctx, len(ctx.shape(0)))]


@_value("CAST", "QUANTIZE", "DEQUANTIZE")
def _v_cast(ctx: Ctx) -> list[np.ndarray] | None:
    if ctx.name != "CAST":
        return None
    return [_out(ctx, ctx.value(0))]


@_value("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
def _v_reshape(ctx: Ctx) -> list[np.ndarray]:
    return [_out(ctx, np.asarray(ctx.value(0)).reshape(ctx.st.shapes[ctx.outs[0]]))]


@_value("STRIDED_SLICE")
def _v_strided_slice(ctx: Ctx) -> list[np.ndarray]:
    x = np.asarray(ctx.value(0))
    return [_out(ctx, x[_strided_index(ctx, x.ndim)])]


@_value("SLICE")
def _v_slice(ctx: Ctx) -> list[np.ndarray]:
    x = np.asarray(ctx.value(0))
    begin, size = ctx.ints(1), ctx.ints(2)
    idx = tuple(slice(b, None if s == -1 else b + s) for b, s in zip(begin, size, strict=False))
    return [_out(ctx, x[idx])]


@_value("GATHER")
def _v_gather(ctx: Ctx) -> list[np.ndarray] | None:
    if int(ctx.options.get("batch_dims", 0)):
        return None
    x, idx = np.asarray(ctx.value(0)), np.asarray(ctx.value(1))
    return [_out(ctx, np.take(x, idx, axis=int(ctx.options.get("axis", 0))))]


@_value("PACK")
def _v_pack(ctx: Ctx) -> list[np.ndarray]:
    vals = [np.asarray(ctx.value(i)) for i in range(ctx.n())]
    return [_out(ctx, np.stack(vals, axis=int(ctx.options.get("axis", 0))))]


@_value("UNPACK")
def _v_unpack(ctx: Ctx) -> list[np.ndarray]:
    x = np.asarray(ctx.value(0))
    axis = int(ctx.options.get("axis", 0))
    return [_out(ctx, np.take(x, i, axis=axis), i) for i in range(len(ctx.outs))]


@_value("SPLIT")
def _v_split(ctx: Ctx) -> list[np.ndarray]:
    x = np.asarray(ctx.value(1))
    parts = np.split(x, len(ctx.outs), axis=ctx.ints(0)[0])
    return [_out(ctx, v, i) for i, v in enumerate(parts)]


@_value("SPLIT_V")
def _v_split_v(ctx: Ctx) -> list[np.ndarray]:
    x = np.asarray(ctx.value(0))
    axis = ctx.ints(2)[0] % max(x.ndim, 1)
    sizes = [ctx.st.shapes[t][axis] for t in ctx.outs]
    cuts = np.cumsum(sizes)[:-1].tolist()
    return [_out(ctx, v, i) for i, v in enumerate(np.split(x, cuts, axis=axis))]


@_value("CONCATENATION")
def _v_concat(ctx: Ctx) -> list[np.ndarray]:
    vals = [np.asarray(ctx.value(i)) for i in range(ctx.n())]
    if vals[0].ndim == 0:
        return [_out(ctx, np.stack(vals))]
    return [_out(ctx, np.concatenate(vals, axis=int(ctx.options.get("axis", 0))))]


def _ints_or_floats(a: np.ndarray) -> np.ndarray:
    return a


_ARITH: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "ADD": np.add,
    "SUB": np.subtract,
    "MUL": np.multiply,
    "MAXIMUM": np.maximum,
    "MINIMUM": np.minimum,
    "FLOOR_DIV": np.floor_divide,
    "FLOOR_MOD": np.mod,
    "EQUAL": np.equal,
    "NOT_EQUAL": np.not_equal,
    "LESS": np.less,
    "LESS_EQUAL": np.less_equal,
    "GREATER": np.greater,
    "GREATER_EQUAL": np.greater_equal,
    "LOGICAL_AND": np.logical_and,
    "LOGICAL_OR": np.logical_or,
}


@_value(*_ARITH, "DIV")
def _v_arith(ctx: Ctx) -> list[np.ndarray] | None:
    a, b = np.asarray(ctx.value(0)), np.asarray(ctx.value(1))
    if ctx.name in ("ADD", "SUB", "MUL", "DIV") and str(
        ctx.options.get("fused_activation_function", "NONE")
    ) not in ("NONE", "None"):
        return None
    if a.dtype.kind not in "iub" and ctx.name not in ("MAXIMUM", "MINIMUM"):
        return None  # float arithmetic: leave it to the run (rounding differs)
    if ctx.name == "DIV":
        if a.dtype.kind in "iu":
            with np.errstate(all="ignore"):
                q = np.trunc(np.true_divide(a, b))
            return [_out(ctx, q)]
        return None
    return [_out(ctx, _ARITH[ctx.name](a, b))]


@_value("NEG")
def _v_neg(ctx: Ctx) -> list[np.ndarray] | None:
    a = np.asarray(ctx.value(0))
    return [_out(ctx, -a)] if a.dtype.kind in "iu" else None


@_value("LOGICAL_NOT")
def _v_not(ctx: Ctx) -> list[np.ndarray]:
    return [_out(ctx, np.logical_not(ctx.value(0)))]


@_value("SELECT", "SELECT_V2")
def _v_select(ctx: Ctx) -> list[np.ndarray]:
    return [_out(ctx, np.where(ctx.value(0), ctx.value(1), ctx.value(2)))]


@_value("FILL")
def _v_fill(ctx: Ctx) -> list[np.ndarray]:
    return [_out(ctx, np.full(ctx.ints(0), np.asarray(ctx.value(1)).reshape(-1)[0]))]


@_value("RANGE")
def _v_range(ctx: Ctx) -> list[np.ndarray] | None:
    s, lim, d = (np.asarray(ctx.value(i)).reshape(-1)[0] for i in range(3))
    if np.asarray(s).dtype.kind not in "iu":
        return None
    return [_out(ctx, np.arange(s, lim, d))]


@_value("SUM", "REDUCE_PROD", "REDUCE_MAX", "REDUCE_MIN")
def _v_reduce(ctx: Ctx) -> list[np.ndarray] | None:
    x = np.asarray(ctx.value(0))
    if x.dtype.kind not in "iu":
        return None
    fns: dict[str, Callable[..., Any]] = {
        "SUM": np.sum,
        "REDUCE_PROD": np.prod,
        "REDUCE_MAX": np.max,
        "REDUCE_MIN": np.min,
    }
    fn = fns[ctx.name]
    axes = tuple(sorted({a % max(x.ndim, 1) for a in ctx.ints(1)}))
    return [_out(ctx, fn(x, axis=axes, keepdims=bool(ctx.options.get("keep_dims", False))))]


@_value("TILE")
def _v_tile(ctx: Ctx) -> list[np.ndarray]:
    return [_out(ctx, np.tile(ctx.value(0), ctx.ints(1)))]


@_value("TRANSPOSE")
def _v_transpose(ctx: Ctx) -> list[np.ndarray]:
    return [_out(ctx, np.transpose(ctx.value(0), ctx.ints(1)))]


@_value("BROADCAST_TO")
def _v_broadcast_to(ctx: Ctx) -> list[np.ndarray]:
    return [_out(ctx, np.broadcast_to(ctx.value(0), ctx.ints(1)))]


@_value("ZEROS_LIKE")
def _v_zeros_like(ctx: Ctx) -> list[np.ndarray]:
    return [_out(ctx, np.zeros(ctx.shape(0)))]


@_value("ONES_LIKE")
def _v_ones_like(ctx: Ctx) -> list[np.ndarray]:
    return [_out(ctx, np.ones(ctx.shape(0)))]
