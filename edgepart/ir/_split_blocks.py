"""Megatron blocks (:mod:`edgepart.ir.split`): the transformer MLP (column-split
FULLY_CONNECTED, activations per shard, row-split FULLY_CONNECTED, one all-reduce) and
attention split by heads (projections by head columns, the per-head ops cloned per group of
heads, the output projection by rows, one all-reduce)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgepart.errors import UnsupportedOpError, UsageError
from edgepart.ir._split_core import (
    NO_INT8_ROWS,
    UNARY,
    Ctx,
    Ops,
    Pending,
    SplitSpec,
    check_op,
    check_sizes,
    is_float,
)
from edgepart.ir._split_layers import act_tensor, all_reduce, bounds, fc_columns, fc_rows
from edgepart.ir.edit import NewOp, SubgraphEditor

# ---------------------------------------------------------------------- Megatron MLP


@dataclass(frozen=True)
class Mlp:
    fc1: int
    acts: tuple[int, ...]
    fc2: int
    hidden: int


def find_mlp(ctx: Ctx, fc1: int) -> Mlp | str:
    """The block ``fc1 -> unary elementwise ops -> fc2`` starting at ``fc1``, or why not."""
    sg = ctx.sg
    if sg.op_name(fc1) != "FULLY_CONNECTED":
        return "the first op is not a FULLY_CONNECTED"
    why = check_op(ctx, fc1, "columns")
    if why:
        return why
    t = sg.op_outputs.row_tuple(fc1)[0]
    if not is_float(ctx.dtype(t)):
        return NO_INT8_ROWS
    hidden = ctx.shape(t)[-1]
    acts: list[int] = []
    while True:
        readers = ctx.readers(t)
        if ctx.is_output[t] or len(readers) != 1:
            return "the hidden activation is read by more than one op"
        r = readers[0]
        name = sg.op_name(r)
        if name == "FULLY_CONNECTED":
            if sg.op_inputs.row_tuple(r)[0] != t:
                return "the second FULLY_CONNECTED reads the hidden activation as weights"
            why = check_op(ctx, r, "rows")
            if why:
                return why
            if ctx.shape(sg.op_inputs.row_tuple(r)[1])[1] != hidden:
                return "the layers' hidden sizes differ"
            return Mlp(fc1, tuple(acts), r, hidden)
        if name not in UNARY:
            return f"{sg.describe_op(r)} between the layers is not an elementwise activation"
        ins = [x for x in sg.op_inputs.row_tuple(r) if x >= 0]
        outs = sg.op_outputs.row_tuple(r)
        if ins != [t] or len(outs) != 1 or ctx.shape(outs[0]) != ctx.shape(t):
            return f"{sg.describe_op(r)} is not a one-input elementwise op"
        acts.append(r)
        t = outs[0]


def apply_mlp(ctx: Ctx, ed: SubgraphEditor, spec: SplitSpec) -> Pending:
    sg = ctx.sg
    if len(spec.ops) != 2:
        raise UsageError(f"an mlp split names its two FULLY_CONNECTED ops, got {list(spec.ops)}")
    fc1, fc2 = spec.ops
    blk = find_mlp(ctx, fc1)
    if isinstance(blk, str):
        raise UnsupportedOpError(f"{sg.describe_op(fc1)} does not start a splittable MLP: {blk}")
    if blk.fc2 != fc2:
        raise UnsupportedOpError(
            f"{sg.describe_op(fc1)} feeds {sg.describe_op(blk.fc2)}, not op {fc2}"
        )
    for o in (*blk.acts, fc2):
        if ed.replaced(o):
            raise UsageError(f"{sg.describe_op(o)} is in two splits")
    check_sizes(sg, fc1, spec.sizes, blk.hidden, 1, "mlp")
    k = len(spec.sizes)
    ops = Ops(k)
    deleted: list[int] = []
    # first layer by columns
    hid, x_in = fc_columns(ctx, ed, fc1, spec.sizes, ops, deleted)
    # the activations per shard
    shard_bounds = bounds(spec.sizes)
    for r in blk.acts:
        code = sg.opcodes[int(sg.op_opcode[r])]
        t_out = sg.op_outputs.row_tuple(r)[0]
        nxt = []
        for s, (a, b) in enumerate(shard_bounds):
            y = act_tensor(ctx, ed, t_out, s, len(ctx.shape(t_out)) - 1, b - a)
            ops.add(NewOp(code, (hid[s],), (y,), sg.op_options[r], sg.op_options2[r]), s)
            nxt.append(y)
        hid = nxt
    # second layer by rows, then the all-reduce
    partials, _ = fc_rows(ctx, ed, fc2, spec.sizes, ops, deleted, x_shards=hid)
    out = sg.op_outputs.row_tuple(fc2)[0]
    all_reduce(
        ctx, ed, partials, out, ctx.options(fc2).get("fused_activation_function", "NONE"), ops
    )
    for o in (fc1, *blk.acts, *deleted):
        ed.replace(o, [])
    ed.replace(fc2, ops.ops)
    ops.commit(fc2)
    names = tuple(sg.op_name(o) for o in (fc1, *blk.acts, fc2))
    return Pending(
        spec=spec,
        op_names=names,
        source_ops=tuple(sorted({fc1, *blk.acts, fc2, *deleted})),
        anchor=fc2,
        shard_pos=ops.shard,
        collective_pos=ops.collective,
        shard_outputs=partials,
        collective="all_reduce",
        output=out,
        inputs=x_in,
        exact=False,
    )


# ---------------------------------------------------------------------- Megatron attention


@dataclass(frozen=True)
class Heads:
    out_fc: int
    entries: tuple[int, ...]  # the query/key/value FULLY_CONNECTED ops
    region: tuple[int, ...]  # the ops between them and the output projection, in order
    axis: dict[int, tuple[str, int]]  # tensor -> ("split", head axis) | ("merged", last axis)
    num_heads: int
    head_dim: int


HEAD_ELEMENTWISE = frozenset({"MUL", "ADD", "SUB", "DIV"})


def find_heads(ctx: Ctx, out_fc: int) -> Heads | str:
    """The attention block whose output projection is ``out_fc``, or why there is none.

    Walks back from the projection's input (``[..., H*D]``) through the per-head ops, tracking
    which axis of each tensor indexes the heads, to the RESHAPEs that split the query, key and
    value projections into heads; every op in between must keep heads apart.
    """
    sg = ctx.sg
    why = check_op(ctx, out_fc, "rows")
    if why:
        return why
    x = sg.op_inputs.row_tuple(out_fc)[0]
    p = int(ctx.prod[x])
    if p < 0 or sg.op_name(p) != "RESHAPE" or not ctx.only_reader(x, out_fc):
        return "the output projection's input is not a reshape of heads"
    merged_in = sg.op_inputs.row_tuple(p)[0]
    shp = ctx.shape(merged_in)
    if len(shp) < 3 or int(np.prod(shp[-2:])) != ctx.shape(x)[-1]:
        return "the output projection's input is not [..., heads, head size] merged"
    num_heads, head_dim = shp[-2], shp[-1]
    if num_heads < 2:
        return "there is one head"
    axis: dict[int, tuple[str, int]] = {x: ("merged", len(ctx.shape(x)) - 1)}
    region: set[int] = {p}
    entries: set[int] = set()
    stack = [(merged_in, len(shp) - 2)]
    axis[merged_in] = ("split", len(shp) - 2)
    while stack:
        t, ax = stack.pop()
        q = int(ctx.prod[t])
        if q < 0:
            return f"{sg.describe_tensor(t)} enters the heads from outside the block"
        name = sg.op_name(q)
        outs = sg.op_outputs.row_tuple(q)
        if len(outs) != 1:
            return f"{sg.describe_op(q)} has several outputs"
        ins = sg.op_inputs.row_tuple(q)
        if name == "RESHAPE":
            src = ins[0]
            s_shape, t_shape = ctx.shape(src), ctx.shape(t)
            if (
                ax == len(t_shape) - 2
                and s_shape[:-1] == t_shape[:-2]
                and s_shape[-1] == num_heads * head_dim
                and t_shape[-2:] == (num_heads, head_dim)
            ):
                # the heads are split off a projection's output: the block's entry
                f = int(ctx.prod[src])
                if f < 0 or sg.op_name(f) != "FULLY_CONNECTED" or not ctx.only_reader(src, q):
                    return f"{sg.describe_tensor(src)} is not a projection read only by its reshape"
                why = check_op(ctx, f, "columns")
                if why:
                    return f"{sg.describe_op(f)}: {why}"
                if not is_float(ctx.dtype(src)):
                    return NO_INT8_ROWS
                entries.add(f)
                region.add(q)
                axis[src] = ("merged", len(s_shape) - 1)
                continue
            return f"{sg.describe_op(q)} reshapes across heads"
        if name == "TRANSPOSE":
            perm_t = ins[1]
            if not sg.tensor_is_constant[perm_t]:
                return f"{sg.describe_op(q)} has a dynamic permutation"
            perm = [int(v) for v in sg.tensor(perm_t).numpy().reshape(-1).tolist()]
            src_ax = perm[ax]
            nxt = [(ins[0], src_ax)]
        elif name == "BATCH_MATMUL":
            r = len(ctx.shape(t))
            if ax >= r - 2:
                return f"{sg.describe_op(q)} multiplies along the heads"
            nxt = []
            for operand in ins[:2]:
                ro = len(ctx.shape(operand))
                oa = ax - (r - ro)
                if oa < 0 or ctx.shape(operand)[oa] == 1:
                    continue  # broadcast over the heads: shared, not split
                nxt.append((operand, oa))
        elif name == "SOFTMAX":
            if ax == len(ctx.shape(t)) - 1:
                return f"{sg.describe_op(q)} normalizes across heads"
            nxt = [(ins[0], ax)]
        elif name in HEAD_ELEMENTWISE:
            nxt = []
            r = len(ctx.shape(t))
            for operand in ins:
                ro = len(ctx.shape(operand))
                oa = ax - (r - ro)
                if oa < 0 or ctx.shape(operand)[oa] == 1:
                    continue  # the same for every head (a scale, a mask): shared
                if sg.tensor_is_constant[operand]:
                    return f"{sg.describe_op(q)} has a per-head constant"
                nxt.append((operand, oa))
        else:
            return f"{sg.describe_op(q)} ({name}) is not a per-head op"
        region.add(q)
        for src, sa in nxt:
            prev = axis.get(src)
            if prev is not None:
                if prev != ("split", sa):
                    return f"{sg.describe_tensor(src)} is used with its heads on two axes"
                continue
            axis[src] = ("split", sa)
            stack.append((src, sa))
    if len(entries) < 1:
        return "no projection feeds the heads"
    # every tensor made inside the block is read only inside it
    inside = region | entries
    for q in region | entries:
        for t2 in sg.op_outputs.row_tuple(q):
            if ctx.is_output[t2]:
                return f"{sg.describe_tensor(t2)} inside the block is a model output"
            for r in ctx.readers(t2):
                if r not in inside and r != out_fc:
                    return (
                        f"{sg.describe_tensor(t2)} inside the block is read by {sg.describe_op(r)}"
                    )
    if not any(sg.op_name(q) == "BATCH_MATMUL" for q in region):
        return "the block has no per-head matmul"
    order = sorted(region)
    return Heads(out_fc, tuple(sorted(entries)), tuple(order), axis, num_heads, head_dim)


def apply_heads(ctx: Ctx, ed: SubgraphEditor, spec: SplitSpec) -> Pending:
    sg = ctx.sg
    if len(spec.ops) != 1:
        raise UsageError(f"a heads split names the output projection, got {list(spec.ops)}")
    out_fc = spec.ops[0]
    blk = find_heads(ctx, out_fc)
    if isinstance(blk, str):
        raise UnsupportedOpError(
            f"{sg.describe_op(out_fc)} is not the output projection of a splittable attention "
            f"block: {blk}"
        )
    for o in (*blk.entries, *blk.region):
        if ed.replaced(o):
            raise UsageError(f"{sg.describe_op(o)} is in two splits")
    check_sizes(sg, out_fc, spec.sizes, blk.num_heads, 1, "heads")
    k = len(spec.sizes)
    ops = Ops(k)
    deleted: list[int] = []
    d = blk.head_dim
    cols = [s * d for s in spec.sizes]
    # entry projections by columns (whole heads)
    shard_of: dict[int, list[int]] = {}
    inputs: list[int] = []
    for f in blk.entries:
        outs, xin = fc_columns(ctx, ed, f, cols, ops, deleted)
        shard_of[sg.op_outputs.row_tuple(f)[0]] = outs
        inputs.extend(t for t in xin if t not in inputs)
    heads_b = bounds(spec.sizes)
    for q in blk.region:
        code = sg.opcodes[int(sg.op_opcode[q])]
        ins = sg.op_inputs.row_tuple(q)
        t_out = sg.op_outputs.row_tuple(q)[0]
        kind, ax = blk.axis[t_out]
        name = sg.op_name(q)
        new_outs = []
        for s, (a, b) in enumerate(heads_b):
            n = b - a
            size = n * d if kind == "merged" else n
            y = act_tensor(ctx, ed, t_out, s, ax, size)
            new_ins = []
            for j, t in enumerate(ins):
                if t in shard_of:
                    new_ins.append(shard_of[t][s])
                elif name == "RESHAPE" and j == 1 and t >= 0:
                    new_ins.append(_reshape_shape(ctx, ed, t, ax, size, s))
                else:
                    new_ins.append(t)
                    if t >= 0 and not sg.tensor_is_constant[t] and t not in inputs:
                        inputs.append(t)
            opts = sg.op_options[q]
            if name == "RESHAPE" and opts is not None and "new_shape" in opts:
                ns = opts["new_shape"]
                if ns:
                    opts = opts.replace(new_shape=tuple(_resize_dims(ns, ax, size)))
            ops.add(NewOp(code, tuple(new_ins), (y,), opts, sg.op_options2[q]), s)
            new_outs.append(y)
        shard_of[t_out] = new_outs
    x_o = sg.op_inputs.row_tuple(out_fc)[0]
    partials, _ = fc_rows(ctx, ed, out_fc, cols, ops, deleted, x_shards=shard_of[x_o])
    out = sg.op_outputs.row_tuple(out_fc)[0]
    act = ctx.options(out_fc).get("fused_activation_function", "NONE")
    all_reduce(ctx, ed, partials, out, act, ops)
    for o in (*blk.entries, *blk.region, *deleted):
        ed.replace(o, [])
    ed.replace(out_fc, ops.ops)
    ops.commit(out_fc)
    all_ops = (*blk.entries, *blk.region, out_fc)
    order = sorted(all_ops)
    return Pending(
        spec=spec,
        op_names=tuple(sg.op_name(o) for o in order),
        source_ops=tuple(sorted({*all_ops, *deleted})),
        anchor=out_fc,
        shard_pos=ops.shard,
        collective_pos=ops.collective,
        shard_outputs=partials,
        collective="all_reduce",
        output=out,
        inputs=inputs,
        exact=False,
    )


def _resize_dims(dims: Sequence[int], axis: int, size: int) -> list[int]:
    """A reshape target with the heads axis set to ``size`` (a ``-1`` there stays)."""
    out = [int(v) for v in dims]
    if 0 <= axis < len(out) and out[axis] != -1:
        out[axis] = size
    return out


def _reshape_shape(ctx: Ctx, ed: SubgraphEditor, t: int, axis: int, size: int, s: int) -> int:
    """A per-shard copy of a RESHAPE's target-shape constant (heads axis resized)."""
    sg = ctx.sg
    if not sg.tensor_is_constant[t]:
        raise UnsupportedOpError(
            f"{sg.describe_tensor(t)}: a reshape in the attention block has a dynamic shape"
        )
    value = sg.tensor(t).numpy().reshape(-1)
    resized = np.asarray(_resize_dims(value.tolist(), axis, size), dtype=value.dtype)
    return ed.constant(f"{sg.tensor_names[t]}.heads{s}", resized, dtype=ctx.dtype(t))
