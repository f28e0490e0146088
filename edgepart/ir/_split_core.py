"""The shared core of the split rewrites (:mod:`edgepart.ir.split`): modes, specs and records,
the source-subgraph context, which layers can be split and how finely, and the bookkeeping of
a split's new ops."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgepart.errors import UsageError
from edgepart.ir import analysis
from edgepart.ir.dtypes import DType
from edgepart.ir.edit import NewOp
from edgepart.ir.graph import Model, Subgraph

MODES = ("output_channels", "columns", "batch", "rows", "mlp", "heads")
OP_MODES: dict[str, tuple[str, ...]] = {
    "CONV_2D": ("output_channels",),
    "DEPTHWISE_CONV_2D": ("output_channels",),
    "FULLY_CONNECTED": ("columns", "rows"),
    "BATCH_MATMUL": ("columns", "batch", "rows"),
}
"""Single-layer modes per op type."""
BLOCK_MODES = ("mlp", "heads")
EXACT_MODES = frozenset({"output_channels", "columns", "batch"})
"""Modes whose output is bit-identical to the unsplit layer's (all-gather of exact shards)."""
COLLECTIVE_OF = {
    "output_channels": "all_gather",
    "columns": "all_gather",
    "batch": "all_gather",
    "rows": "all_reduce",
    "mlp": "all_reduce",
    "heads": "all_reduce",
}
MAX_SHARDS = 16

# fused activations ADD can carry (the all-reduce's last ADD takes the layer's activation)
ADD_ACTIVATIONS = frozenset({"NONE", "RELU", "RELU_N1_TO_1", "RELU6"})
# elementwise unary ops a Megatron MLP may have between its two layers
UNARY = frozenset(
    {
        "GELU",
        "RELU",
        "RELU6",
        "RELU_N1_TO_1",
        "RELU_0_TO_1",
        "TANH",
        "LOGISTIC",
        "HARD_SWISH",
        "LEAKY_RELU",
        "ELU",
        "EXP",
        "ABS",
        "NEG",
        "SQUARE",
        "SQRT",
        "RSQRT",
    }
)


@dataclass(frozen=True)
class SplitSpec:
    """What to split: anchor op(s) of the source subgraph, a mode and the shard sizes.

    ``ops`` is one op for the single-layer modes; ``(first, second)`` FULLY_CONNECTED for
    ``mlp``; the output projection for ``heads``. ``sizes`` has one entry per shard (2 to
    :data:`MAX_SHARDS`): output channels, columns, batch entries, input rows, hidden units
    (``mlp``) or heads (``heads``); they sum to the layer's extent.
    """

    ops: tuple[int, ...]
    mode: str
    sizes: tuple[int, ...]

    def to_doc(self) -> dict[str, Any]:
        return {"ops": list(self.ops), "mode": self.mode, "sizes": list(self.sizes)}


@dataclass(frozen=True)
class SplitRecord:
    """One applied split; op indices are the split model's, tensor indices its subgraph's.

    ``source_ops`` are the source ops the split replaced (the anchors plus a block's inner ops
    and deleted weight decompressions). ``shards[s]`` lists shard ``s``'s ops (input slices,
    weight decompression, the layer, per-shard activations), ``shard_outputs[s]`` the tensor it
    hands to the collective. ``collective_ops`` are the CONCATENATION (all-gather) or ADD
    (all-reduce) ops writing ``output``, the source layer's output tensor. ``inputs`` are the
    non-constant tensors the shards read from outside the split (each is broadcast to every
    shard that reads it).
    """

    spec: SplitSpec
    op_names: tuple[str, ...]
    source_ops: tuple[int, ...]
    shards: tuple[tuple[int, ...], ...]
    shard_outputs: tuple[int, ...]
    collective: str
    collective_ops: tuple[int, ...]
    output: int
    inputs: tuple[int, ...]
    exact: bool

    @property
    def ops(self) -> tuple[int, ...]:
        """Every op of the split model that belongs to this split, ascending."""
        return tuple(sorted({o for s in self.shards for o in s} | set(self.collective_ops)))


@dataclass(frozen=True, eq=False)
class SplitResult:
    """The split model and one record per spec (in the order given)."""

    model: Model
    records: tuple[SplitRecord, ...]
    op_map: np.ndarray  # source op -> split-model op (-1 for replaced ops)


# ---------------------------------------------------------------------- internals


class Ctx:
    """The source subgraph with the analyses the rules need (computed once)."""

    def __init__(self, model: Model, sg: Subgraph) -> None:
        self.model = model
        self.sg = sg
        self.prod = analysis.producers(sg)
        self.cons = analysis.consumers(sg)
        self.folded = analysis.constant_producers(sg)
        out = np.zeros(sg.num_tensors, dtype=bool)
        out[sg.outputs.astype(np.int64)] = True
        self.is_output = out
        # tensors an applied split all-gathers with one CONCATENATION: tensor -> (split, axis)
        self.gathers: dict[int, tuple[Pending, int]] = {}

    def readers(self, t: int) -> list[int]:
        return [int(x) for x in self.cons.row(t).tolist()]

    def only_reader(self, t: int, op: int) -> bool:
        return not self.is_output[t] and self.readers(t) == [op]

    def dtype(self, t: int) -> DType:
        return DType(int(self.sg.tensor_dtype[t]))

    def shape(self, t: int) -> tuple[int, ...]:
        return self.sg.tensor_shape.row_tuple(t)

    def signature(self, t: int) -> tuple[int, ...] | None:
        sg = self.sg
        return sg.tensor_signature.row_tuple(t) if sg.tensor_has_signature[t] else None

    def options(self, op: int) -> dict[str, Any]:
        o = self.sg.op_options[op]
        return dict(o) if o is not None else {}

    def weight(self, t: int) -> Weight | str:
        """The constant behind input ``t``: a constant, or a DEQUANTIZE of one."""
        sg = self.sg
        if t < 0:
            return "the weights are missing"
        if sg.tensor_is_constant[t]:
            if sg.tensor_sparsity[t] is not None:
                return "the weights are stored sparse"
            return Weight(t, t, None, self.dtype(t))
        p = int(self.prod[t])
        if p >= 0 and self.folded[p] and sg.op_name(p) == "DEQUANTIZE":
            src = int(sg.op_inputs.row(p)[0])
            if sg.tensor_is_constant[src] and sg.tensor_sparsity[src] is None:
                return Weight(t, src, p, self.dtype(t))
            return "the weights are decompressed from a sparse tensor (DENSIFY)"
        if p >= 0 and self.folded[p]:
            return "the weights are decompressed from a sparse tensor (DENSIFY)"
        return "the weights are not a constant"


_QUERY_CTX: weakref.WeakKeyDictionary[Subgraph, Ctx] = weakref.WeakKeyDictionary()


def query_ctx(model: Model, sg: Subgraph) -> Ctx:
    """A cached context for read-only questions (eligibility, extents) about ``sg``: the
    partitioner asks them for every layer, and each context analyses the whole subgraph.
    :func:`edgepart.ir.split.split_model` builds its own (it records gathers as it goes)."""
    ctx = _QUERY_CTX.get(sg)
    if ctx is None or ctx.model is not model:
        ctx = Ctx(model, sg)
        _QUERY_CTX[sg] = ctx
    return ctx


@dataclass(frozen=True)
class Weight:
    tensor: int  # the tensor the layer reads (float after a DEQUANTIZE)
    const: int  # the constant holding the data
    dequant: int | None  # the DEQUANTIZE op between them, if any
    dtype: DType  # type the layer sees


def is_float(d: DType) -> bool:
    return d in (DType.FLOAT32, DType.FLOAT16)


def why_not(model: Model, sg: Subgraph, op: int, mode: str) -> str:
    if not 0 <= op < sg.num_ops:
        return f"op {op} does not exist (the subgraph has {sg.num_ops} ops)"
    name = sg.op_name(op)
    if mode not in OP_MODES.get(name, ()):
        modes = OP_MODES.get(name)
        return f"{name} has no {mode} split" + (
            f" (its modes: {', '.join(modes)})" if modes else ""
        )
    if model.metadata_bytes("model_control_dependencies") is not None:
        return "the model carries control dependencies between ops, which a rewrite would break"
    return check_op(query_ctx(model, sg), op, mode)


def check_op(ctx: Ctx, op: int, mode: str) -> str:
    sg = ctx.sg
    name = sg.op_name(op)
    ins = sg.op_inputs.row_tuple(op)
    outs = sg.op_outputs.row_tuple(op)
    if len(outs) != 1:
        return "it has more than one output"
    out = outs[0]
    sig = ctx.signature(out)
    o = ctx.options(op)
    if name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        if len(ins) < 2:
            return "it has no filter input"
        w = ctx.weight(ins[1])
        if isinstance(w, str):
            return w
        x = ins[0]
        if len(ctx.shape(x)) != 4 or len(ctx.shape(ins[1])) != 4:
            return "its input or filter is not 4-D"
        if len(ins) > 2 and ins[2] >= 0 and isinstance(ctx.weight(ins[2]), str):
            return "its bias is not a constant"
        if sig is not None and sig[3] == -1:
            return "its channel dimension is dynamic"
        if name == "CONV_2D" and ctx.shape(ins[1])[3] != ctx.shape(x)[3]:
            return "it is a grouped convolution"
        if name == "DEPTHWISE_CONV_2D":
            cin, cout = ctx.shape(x)[3], ctx.shape(ins[1])[3]
            if cin <= 0 or cout % cin:
                return "its output channels are not a multiple of its input channels"
            if ctx.dtype(x) == DType.FLOAT32 and w.dtype in (DType.INT8, DType.INT4):
                return (
                    "it is a hybrid (dynamic-range) kernel, which would quantize each shard's "
                    "input slice with its own scale"
                )
            xsig = ctx.signature(x)
            if xsig is not None and xsig[3] == -1:
                return "its input channel dimension is dynamic"
        return ""
    if name == "FULLY_CONNECTED":
        if len(ins) < 2:
            return "it has no weights input"
        if o.get("weights_format", "DEFAULT") != "DEFAULT":
            return f"its weights format is {o.get('weights_format')}"
        w = ctx.weight(ins[1])
        if isinstance(w, str):
            return w
        if len(ctx.shape(ins[1])) != 2:
            return "its weights are not 2-D"
        if len(ins) > 2 and ins[2] >= 0 and isinstance(ctx.weight(ins[2]), str):
            return "its bias is not a constant"
        if sig is not None and sig[-1] == -1:
            return "its output dimension is dynamic"
        if mode == "rows":
            return check_rows_fc(ctx, op, w)
        return ""
    if name == "BATCH_MATMUL":
        a, b = ins[0], ins[1]
        ra, rb, ro = len(ctx.shape(a)), len(ctx.shape(b)), len(ctx.shape(out))
        if min(ra, rb) < 2:
            return "an operand has fewer than 2 dimensions"
        if not sg.tensor_is_constant[b] and ctx.prod[b] >= 0 and ctx.folded[ctx.prod[b]]:
            w = ctx.weight(b)
            if isinstance(w, str):
                return w
        adj_x, adj_y = bool(o.get("adj_x")), bool(o.get("adj_y"))
        if mode == "columns":
            if sig is not None and sig[-1] == -1:
                return "its column dimension is dynamic"
            return dynamic_axis(ctx, b, rb - 2 if adj_y else rb - 1, "column")
        if mode == "batch":
            if ro < 3:
                return "it has no batch dimension"
            ax = ro - 3
            if sig is not None and sig[ax] == -1:
                return "its batch dimension is dynamic"
            if ctx.shape(out)[ax] < 2:
                return "its last batch dimension has fewer than 2 entries"
            for t, r in ((a, ra), (b, rb)):
                if r >= 3 and ctx.shape(t)[r - 3] not in (1, ctx.shape(out)[ax]):
                    return "an operand's batch dimension does not match the output's"
            return ""
        # rows
        if not is_float(ctx.dtype(a)):
            return NO_INT8_ROWS
        if not is_float(ctx.dtype(b)):
            return NO_HYBRID_ROWS
        return dynamic_axis(ctx, a, ra - 2 if adj_x else ra - 1, "reduction")
    return f"{name} cannot be split"


NO_INT8_ROWS = (
    "row splits need float partial sums: an int8 layer rounds its int32 accumulator to 8 bits "
    "in every shard and the all-reduce rounds again, so the result would not be exact"
)
NO_HYBRID_ROWS = (
    "row splits of hybrid (dynamic-range) layers would quantize each input slice with its own scale"
)


def dynamic_axis(ctx: Ctx, t: int, axis: int, what: str) -> str:
    sig = ctx.signature(t)
    if sig is not None and sig[axis] == -1:
        return f"its {what} dimension is dynamic"
    return ""


def check_rows_fc(ctx: Ctx, op: int, w: Weight) -> str:
    ins = ctx.sg.op_inputs.row_tuple(op)
    x = ins[0]
    if not (is_float(ctx.dtype(x)) and w.dtype in (DType.FLOAT32, DType.FLOAT16)):
        if ctx.dtype(x) == DType.FLOAT32:
            return NO_HYBRID_ROWS
        return NO_INT8_ROWS
    k = ctx.shape(ins[1])[1]
    if ctx.shape(x)[-1] != k:
        return (
            f"its input's last dimension ({ctx.shape(x)[-1]}) is not the weights' {k} "
            "(the input is flattened), so it cannot be sliced by rows"
        )
    act = ctx.options(op).get("fused_activation_function", "NONE")
    if act not in ADD_ACTIVATIONS:
        return f"its fused activation {act} cannot move onto the all-reduce's ADD"
    return dynamic_axis(ctx, x, len(ctx.shape(x)) - 1, "reduction")


FLOAT_GRANULE = 8
"""Shard boundaries of float layers fall on multiples of this (see :func:`split_extent`)."""
INT_DEPTHWISE_GRANULE = 8
"""Input channels per shard boundary of an integer depthwise convolution: TFLite's builtin
per-channel int8 depthwise kernel requantizes channels in blocks of 8, and the remainder of a
block rounds differently (measured: a 22/10 split of a 32-channel int8 depthwise changed
channels 16-21 and 30-31 by one step with builtin kernels; 24/8, 16/16 and 8/24 were
bit-identical; XNNPACK was bit-identical at any boundary)."""


def extent(model: Model, sg: Subgraph, op: int, mode: str) -> tuple[int, int]:
    ctx = query_ctx(model, sg)
    ins = sg.op_inputs.row_tuple(op)
    out = sg.op_outputs.row_tuple(op)[0]
    name = sg.op_name(op)
    w = ctx.weight(ins[1])
    float_w = (w.dtype if isinstance(w, Weight) else ctx.dtype(ins[1])) in (
        DType.FLOAT32,
        DType.FLOAT16,
    )
    g = FLOAT_GRANULE if float_w else 1
    if name == "CONV_2D":
        return ctx.shape(ins[1])[0], g
    if name == "DEPTHWISE_CONV_2D":
        cout = ctx.shape(ins[1])[3]
        mult = cout // ctx.shape(ins[0])[3]  # a shard takes whole depth multipliers
        return cout, mult if float_w else mult * INT_DEPTHWISE_GRANULE
    if name == "FULLY_CONNECTED":
        wshape = ctx.shape(ins[1])
        return (wshape[0], g) if mode == "columns" else (wshape[1], 1)
    o = ctx.options(op)
    if mode == "columns":
        return ctx.shape(out)[-1], g
    if mode == "batch":
        return ctx.shape(out)[-3], 1
    a = ctx.shape(ins[0])
    return (a[-2] if o.get("adj_x") else a[-1]), 1


@dataclass
class Pending:
    """A split whose new ops are known by position in the replacement lists until build."""

    spec: SplitSpec
    op_names: tuple[str, ...]
    source_ops: tuple[int, ...]
    anchor: int  # the source op whose replacement holds the new ops
    shard_pos: list[list[int]]  # positions in the anchor's replacement
    collective_pos: list[int]
    shard_outputs: list[int]
    collective: str
    output: int
    inputs: list[int]
    exact: bool
    # all-gather copies made for a later split's shards: (that split's anchor, position)
    replica_refs: list[tuple[int, int]] = field(default_factory=list)

    def record(self, new_ops: Any, op_map: np.ndarray) -> SplitRecord:
        ids = new_ops[self.anchor]
        replicas = tuple(new_ops[a][p] for a, p in self.replica_refs)
        return SplitRecord(
            spec=self.spec,
            op_names=self.op_names,
            source_ops=self.source_ops,
            shards=tuple(tuple(ids[p] for p in s) for s in self.shard_pos),
            shard_outputs=tuple(self.shard_outputs),
            collective=self.collective,
            collective_ops=tuple(ids[p] for p in self.collective_pos) + replicas,
            output=self.output,
            inputs=tuple(self.inputs),
            exact=self.exact,
        )


class Ops:
    """The replacement list of one split, with each op's role.

    ``replicas`` are all-gathers of an earlier split made for this split's shards (the
    earlier split's collective ops, placed here so they run where the shard runs);
    ``local`` maps ``(tensor, shard)`` to the copy made for it.
    """

    def __init__(self, k: int) -> None:
        self.ops: list[NewOp] = []
        self.shard: list[list[int]] = [[] for _ in range(k)]
        self.collective: list[int] = []
        self.replicas: list[tuple[int, Pending]] = []
        self.local: dict[tuple[int, int], int] = {}

    def add(self, op: NewOp, shard: int | None) -> None:
        if shard is None:
            self.collective.append(len(self.ops))
        else:
            self.shard[shard].append(len(self.ops))
        self.ops.append(op)

    def add_replica(self, op: NewOp, source: Pending) -> None:
        self.replicas.append((len(self.ops), source))
        self.ops.append(op)

    def commit(self, anchor: int) -> None:
        """Tell the earlier splits where their copies went (call after ``replace``)."""
        for pos, src in self.replicas:
            src.replica_refs.append((anchor, pos))


def check_sizes(
    sg: Subgraph, op: int, sizes: Sequence[int], total: int, granule: int, mode: str
) -> None:
    if sum(sizes) != total:
        raise UsageError(
            f"{sg.describe_op(op)}: {mode} shard sizes {list(sizes)} sum to {sum(sizes)}, "
            f"the layer has {total}"
        )
    if any(s % granule for s in sizes[:-1]):
        raise UsageError(
            f"{sg.describe_op(op)}: {mode} shard sizes {list(sizes)}: every shard but the last "
            f"must be a multiple of {granule} (see split_extent)"
        )
