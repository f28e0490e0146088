"""Single-layer splits (:mod:`edgepart.ir.split`): the shard ops of CONV_2D, DEPTHWISE_CONV_2D,
FULLY_CONNECTED and BATCH_MATMUL, the input slices and per-shard weights they read, and the
collectives (CONCATENATION all-gather, ADD all-reduce) that join them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgepart.ir._split_core import (
    Ctx,
    Ops,
    Weight,
)
from edgepart.ir.dtypes import DType
from edgepart.ir.edit import NewOp, SubgraphEditor
from edgepart.ir.values import Quantization

_GATHER_FANIN = 4  # beyond 5 inputs XNNPACK refuses CONCATENATION: gather in groups of 4


def local_input(ctx: Ctx, ed: SubgraphEditor, ops: Ops, x: int, s: int) -> int:
    """The tensor shard ``s`` reads for activation ``x``.

    When ``x`` is the all-gathered output of a split applied before this one, every shard but
    the first gets its own CONCATENATION of that split's shards (a true all-gather: each unit
    assembles the whole tensor itself) instead of waiting for the one gather and its partition.
    """
    found = ctx.gathers.get(x)
    if s == 0 or found is None:
        return x
    key = (x, s)
    if key not in ops.local:
        src, axis = found
        t = act_tensor(ctx, ed, x, s, axis, ctx.shape(x)[axis], ".gathered")
        op = ed.op(
            "CONCATENATION",
            src.shard_outputs,
            [t],
            options={"axis": axis},
            version=op_version("CONCATENATION", ctx.dtype(x)),
        )
        ops.add_replica(op, src)
        ops.local[key] = t
    return ops.local[key]


def out_axis(ctx: Ctx, op: int, mode: str) -> int:
    out = ctx.sg.op_outputs.row_tuple(op)[0]
    r = len(ctx.shape(out))
    return r - 3 if mode == "batch" else r - 1


def bounds(sizes: Sequence[int]) -> list[tuple[int, int]]:
    edges = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    return [(int(edges[s]), int(edges[s + 1])) for s in range(len(sizes))]


def slice_quant(q: Quantization | None, axis: int, a: int, b: int) -> Quantization | None:
    """Per-channel parameters along ``axis`` restricted to ``[a, b)``; others unchanged."""
    if q is None or not q.is_per_channel or q.quantized_dimension != axis:
        return q
    n = len(q.scale)

    def cut(v: np.ndarray | None) -> np.ndarray | None:
        return None if v is None or len(v) != n else np.ascontiguousarray(v[a:b])

    zp = q.zero_point if len(q.zero_point) != n else np.ascontiguousarray(q.zero_point[a:b])
    return Quantization(
        scale=np.ascontiguousarray(q.scale[a:b]),
        zero_point=zp,
        quantized_dimension=q.quantized_dimension,
        min=cut(q.min),
        max=cut(q.max),
        details=q.details,
    )


def const_slice(ctx: Ctx, ed: SubgraphEditor, t: int, axis: int, a: int, b: int, s: int) -> int:
    """A new constant: constant ``t`` sliced to ``[a, b)`` along ``axis``."""
    sg = ctx.sg
    value = sg.tensor(t).numpy()
    part = np.ascontiguousarray(np.take(value, np.arange(a, b), axis=axis))
    return ed.constant(
        f"{sg.tensor_names[t]}.shard{s}",
        part,
        dtype=ctx.dtype(t),
        quantization=slice_quant(sg.tensor_quantization[t], axis, a, b),
    )


def weight_slice(
    ctx: Ctx,
    ed: SubgraphEditor,
    w: Weight,
    axis: int,
    a: int,
    b: int,
    s: int,
    ops: Ops,
) -> int:
    """The weights of shard ``s``: a sliced constant, decompressed by a per-shard DEQUANTIZE
    when the layer read a DEQUANTIZE of a constant."""
    c = const_slice(ctx, ed, w.const, axis, a, b, s)
    if w.dequant is None:
        return c
    sg = ctx.sg
    shape = list(ctx.shape(w.tensor))
    shape[axis] = b - a
    t = ed.tensor(f"{sg.tensor_names[w.tensor]}.shard{s}", w.dtype, shape)
    code = sg.opcodes[int(sg.op_opcode[w.dequant])]
    ops.add(NewOp(code, (c,), (t,), sg.op_options[w.dequant], sg.op_options2[w.dequant]), s)
    return t


def drop_dequant(ctx: Ctx, w: Weight | str, op: int, deleted: list[int]) -> None:
    """Delete the layer's DEQUANTIZE when the layer was its only reader."""
    if (
        isinstance(w, Weight)
        and w.dequant is not None
        and ctx.only_reader(w.tensor, op)
        and w.dequant not in deleted
    ):
        deleted.append(w.dequant)


def act_tensor(
    ctx: Ctx, ed: SubgraphEditor, like: int, s: int, axis: int, size: int, suffix: str = ""
) -> int:
    """A new activation shaped like source tensor ``like`` with ``axis`` resized to ``size``
    (same type, quantization and dynamic dimensions)."""
    shape = list(ctx.shape(like))
    shape[axis] = size
    sig = ctx.signature(like)
    if sig is not None:
        sig = tuple(size if d == axis else v for d, v in enumerate(sig))
    return ed.tensor(
        f"{ctx.sg.tensor_names[like]}{suffix}.shard{s}",
        ctx.dtype(like),
        shape,
        signature=sig,
        quantization=ctx.sg.tensor_quantization[like],
    )


def slice_op(
    ctx: Ctx,
    ed: SubgraphEditor,
    x: int,
    axis: int,
    a: int,
    b: int,
    s: int,
    ops: Ops,
    *,
    like: int | None = None,
) -> int:
    """A SLICE of activation ``x`` to ``[a, b)`` along ``axis`` for shard ``s``; ``like`` is
    the source tensor ``x`` stands for (its own copy of a gathered tensor), default ``x``."""
    src = x if like is None else like
    shape = ctx.shape(src)
    sig = ctx.signature(src)
    begin = [0] * len(shape)
    begin[axis] = a
    size = [(-1 if sig is not None and sig[d] == -1 else int(n)) for d, n in enumerate(shape)]
    size[axis] = b - a
    name = ctx.sg.tensor_names[src]
    bt = ed.constant(f"{name}.slice{s}.begin", np.asarray(begin, np.int32))
    st = ed.constant(f"{name}.slice{s}.size", np.asarray(size, np.int32))
    y = act_tensor(ctx, ed, src, s, axis, b - a, ".slice")
    ops.add(ed.op("SLICE", [x, bt, st], [y], version=op_version("SLICE", ctx.dtype(src))), s)
    return y


def bias_slice(
    ctx: Ctx,
    ed: SubgraphEditor,
    op: int,
    bias: int,
    a: int,
    b: int,
    s: int,
    ops: Ops,
    deleted: list[int],
) -> int:
    """Shard ``s``'s bias (sliced like the weights; decompressed per shard if it was)."""
    if bias < 0:
        return -1
    w = ctx.weight(bias)
    assert isinstance(w, Weight)
    if s == 0:
        drop_dequant(ctx, w, op, deleted)
    return weight_slice(ctx, ed, w, 0, a, b, s, ops)


def conv_shards(
    ctx: Ctx, ed: SubgraphEditor, op: int, sizes: Sequence[int], ops: Ops, deleted: list[int]
) -> tuple[list[int], list[int]]:
    sg = ctx.sg
    ins = sg.op_inputs.row_tuple(op)
    x, wt = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else -1
    out = sg.op_outputs.row_tuple(op)[0]
    w = ctx.weight(wt)
    assert isinstance(w, Weight)
    dw = sg.op_name(op) == "DEPTHWISE_CONV_2D"
    waxis = 3 if dw else 0
    dm = ctx.shape(wt)[3] // ctx.shape(x)[3] if dw else 1
    code = sg.opcodes[int(sg.op_opcode[op])]
    outs = []
    for s, (a, b) in enumerate(bounds(sizes)):
        xl = local_input(ctx, ed, ops, x, s)
        xs = slice_op(ctx, ed, xl, 3, a // dm, b // dm, s, ops, like=x) if dw else xl
        ws = weight_slice(ctx, ed, w, waxis, a, b, s, ops)
        bs = bias_slice(ctx, ed, op, bias, a, b, s, ops, deleted)
        ys = act_tensor(ctx, ed, out, s, 3, b - a)
        new_ins = [xs, ws, bs, *ins[3:]] if len(ins) > 2 else [xs, ws]
        ops.add(NewOp(code, tuple(new_ins), (ys,), sg.op_options[op], sg.op_options2[op]), s)
        outs.append(ys)
    drop_dequant(ctx, w, op, deleted)
    return outs, [x]


def fc_columns(
    ctx: Ctx, ed: SubgraphEditor, op: int, sizes: Sequence[int], ops: Ops, deleted: list[int]
) -> tuple[list[int], list[int]]:
    sg = ctx.sg
    ins = sg.op_inputs.row_tuple(op)
    x, wt = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else -1
    out = sg.op_outputs.row_tuple(op)[0]
    w = ctx.weight(wt)
    assert isinstance(w, Weight)
    code = sg.opcodes[int(sg.op_opcode[op])]
    axis = len(ctx.shape(out)) - 1
    outs = []
    for s, (a, b) in enumerate(bounds(sizes)):
        ws = weight_slice(ctx, ed, w, 0, a, b, s, ops)
        bs = bias_slice(ctx, ed, op, bias, a, b, s, ops, deleted)
        ys = act_tensor(ctx, ed, out, s, axis, b - a)
        xs = local_input(ctx, ed, ops, x, s)
        new_ins = (xs, ws, bs, *ins[3:]) if len(ins) > 2 else (xs, ws)
        ops.add(NewOp(code, new_ins, (ys,), sg.op_options[op], sg.op_options2[op]), s)
        outs.append(ys)
    drop_dequant(ctx, w, op, deleted)
    return outs, [x]


def partial_sum(ctx: Ctx, ed: SubgraphEditor, out: int, s: int) -> int:
    """A float partial sum shaped like ``out``."""
    sig = ctx.signature(out)
    return ed.tensor(
        f"{ctx.sg.tensor_names[out]}.partial{s}",
        ctx.dtype(out),
        ctx.shape(out),
        signature=sig,
    )


def fc_rows(
    ctx: Ctx,
    ed: SubgraphEditor,
    op: int,
    sizes: Sequence[int],
    ops: Ops,
    deleted: list[int],
    x_shards: Sequence[int] | None = None,
) -> tuple[list[int], list[int]]:
    """Row shards of a FULLY_CONNECTED: shard ``s`` reads input slice ``s`` (a SLICE of the
    input, or ``x_shards[s]`` when a block already made it) and writes a partial sum."""
    sg = ctx.sg
    ins = sg.op_inputs.row_tuple(op)
    x, wt = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else -1
    out = sg.op_outputs.row_tuple(op)[0]
    w = ctx.weight(wt)
    assert isinstance(w, Weight)
    code = sg.opcodes[int(sg.op_opcode[op])]
    opts = sg.op_options[op]
    opts = opts.replace(fused_activation_function="NONE") if opts is not None else None
    rank = len(ctx.shape(x))
    outs = []
    for s, (a, b) in enumerate(bounds(sizes)):
        if x_shards is not None:
            xs = x_shards[s]
        else:
            xl = local_input(ctx, ed, ops, x, s)
            xs = slice_op(ctx, ed, xl, rank - 1, a, b, s, ops, like=x)
        ws = weight_slice(ctx, ed, w, 1, a, b, s, ops)
        bs = bias if s == 0 else -1
        ys = partial_sum(ctx, ed, out, s)
        new_ins = (xs, ws, bs, *ins[3:]) if len(ins) > 2 else (xs, ws)
        ops.add(NewOp(code, new_ins, (ys,), opts, sg.op_options2[op]), s)
        outs.append(ys)
    drop_dequant(ctx, w, op, deleted)
    return outs, ([x] if x_shards is None else [])


def bmm_shards(
    ctx: Ctx,
    ed: SubgraphEditor,
    op: int,
    mode: str,
    sizes: Sequence[int],
    ops: Ops,
    deleted: list[int],
) -> tuple[list[int], list[int]]:
    sg = ctx.sg
    ins = sg.op_inputs.row_tuple(op)
    a_t, b_t = ins[0], ins[1]
    out = sg.op_outputs.row_tuple(op)[0]
    o = ctx.options(op)
    adj_x, adj_y = bool(o.get("adj_x")), bool(o.get("adj_y"))
    ra, rb, ro = len(ctx.shape(a_t)), len(ctx.shape(b_t)), len(ctx.shape(out))
    code = sg.opcodes[int(sg.op_opcode[op])]
    b_w = ctx.weight(b_t)  # a string when the right operand is an activation
    b_const = isinstance(b_w, Weight)

    def operand(t: int, w: Weight | str, axis: int, lo: int, hi: int, s: int) -> int:
        if isinstance(w, Weight):
            return weight_slice(ctx, ed, w, axis, lo, hi, s, ops)
        return act_slice(t, axis, lo, hi, s)

    def act_slice(t: int, axis: int, lo: int, hi: int, s: int) -> int:
        return slice_op(ctx, ed, local_input(ctx, ed, ops, t, s), axis, lo, hi, s, ops, like=t)

    def whole(t: int, s: int) -> int:
        return t if b_const and t == b_t else local_input(ctx, ed, ops, t, s)

    outs = []
    inputs = [t for t in (a_t, b_t) if not (b_const and t == b_t)]
    for s, (lo, hi) in enumerate(bounds(sizes)):
        if mode == "columns":
            new_a = whole(a_t, s)
            new_b = operand(b_t, b_w, rb - 2 if adj_y else rb - 1, lo, hi, s)
            ys = act_tensor(ctx, ed, out, s, ro - 1, hi - lo)
        elif mode == "batch":
            ax = ro - 3
            n = ctx.shape(out)[ax]
            new_a = whole(a_t, s)
            if ra >= 3 and ctx.shape(a_t)[ra - 3] == n:
                new_a = act_slice(a_t, ra - 3, lo, hi, s)
            new_b = whole(b_t, s)
            if rb >= 3 and ctx.shape(b_t)[rb - 3] == n:
                new_b = operand(b_t, b_w, rb - 3, lo, hi, s)
            ys = act_tensor(ctx, ed, out, s, ax, hi - lo)
        else:
            new_a = act_slice(a_t, ra - 2 if adj_x else ra - 1, lo, hi, s)
            new_b = operand(b_t, b_w, rb - 1 if adj_y else rb - 2, lo, hi, s)
            ys = partial_sum(ctx, ed, out, s)
        ops.add(
            NewOp(code, (new_a, new_b, *ins[2:]), (ys,), sg.op_options[op], sg.op_options2[op]), s
        )
        outs.append(ys)
    if b_const:
        drop_dequant(ctx, b_w, op, deleted)
    return outs, inputs


def op_version(op: str, dtype: DType) -> int:
    """The op version TFLite's converter gives ``op`` for inputs of ``dtype`` (the rules of
    ``tflite/tools/versioning/op_version.cc`` for the ops the rewrites emit)."""
    if op == "CONCATENATION":
        return {DType.INT8: 2, DType.INT16: 3, DType.UINT32: 4}.get(dtype, 1)
    if op == "SLICE":
        return {DType.INT8: 2, DType.INT16: 4, DType.UINT32: 6}.get(dtype, 1)
    if op == "ADD":
        return {DType.INT8: 2, DType.INT64: 4}.get(dtype, 1)
    return 1


def all_gather(
    ctx: Ctx, ed: SubgraphEditor, parts: Sequence[int], out: int, axis: int, ops: Ops
) -> None:
    """All-gather: CONCATENATION of the shards along ``axis`` into ``out`` (in groups of
    :data:`_GATHER_FANIN` first when there are more than 5 shards)."""
    dt = ctx.dtype(out)
    level = list(parts)
    g = 0
    while len(level) > 5:
        nxt = []
        for i in range(0, len(level), _GATHER_FANIN):
            group = level[i : i + _GATHER_FANIN]
            if len(group) == 1:
                nxt.append(group[0])
                continue
            size = sum(ed.shape(t)[axis] for t in group)
            t = act_tensor(ctx, ed, out, g, axis, size, ".gather")
            g += 1
            ops.add(
                ed.op(
                    "CONCATENATION",
                    group,
                    [t],
                    options={"axis": axis},
                    version=op_version("CONCATENATION", dt),
                ),
                None,
            )
            nxt.append(t)
        level = nxt
    ops.add(
        ed.op(
            "CONCATENATION",
            level,
            [out],
            options={"axis": axis},
            version=op_version("CONCATENATION", dt),
        ),
        None,
    )


def all_reduce(
    ctx: Ctx, ed: SubgraphEditor, parts: Sequence[int], out: int, act: str, ops: Ops
) -> None:
    """All-reduce: an ADD chain over the partial sums into ``out``; the last ADD carries the
    layer's fused activation."""
    acc = parts[0]
    for s in range(1, len(parts)):
        last = s == len(parts) - 1
        t = out if last else partial_sum(ctx, ed, out, 100 + s)
        ops.add(
            ed.op(
                "ADD",
                [acc, parts[s]],
                [t],
                options={"fused_activation_function": act if last else "NONE"},
                version=op_version("ADD", DType.FLOAT32),
            ),
            None,
        )
        acc = t
