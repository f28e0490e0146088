"""Tensor parallelism as IR rewrites: one layer split into shards plus the collective that
joins them (Megatron-LM's column and row splits; ``docs/tensor_parallel.md``).

:func:`split_model` is a pure function ``Model -> Model``: each :class:`SplitSpec` names a layer
(or a block of layers), a mode and the shard sizes; the result replaces the layer by its shards
and one collective, and returns a :class:`SplitRecord` per split saying which new ops are which.
Tensor indices of the source stay valid (:mod:`edgepart.ir.edit`); the layer's output tensor
keeps its index and is now written by the collective. Every result passes
:func:`edgepart.ir.verify.check_model`.

Modes (``sizes`` counts what each shard gets):

``output_channels``
    CONV_2D and DEPTHWISE_CONV_2D: filters, biases and per-channel quantization sliced along the
    output channels; a depthwise shard reads the matching input channels through a SLICE. Shards
    are joined by CONCATENATION on the channel axis (the all-gather). Exact: every output
    channel is computed by the same kernel from the same data.
``columns``
    FULLY_CONNECTED (weight rows = output columns) and BATCH_MATMUL (the right operand's
    columns, sliced by a SLICE op when it is not a constant); all-gather as above. Exact.
``batch``
    BATCH_MATMUL by its last batch dimension (an attention matmul by heads); both operands are
    sliced, the all-gather concatenates the batch dimension. Exact.
``rows``
    FULLY_CONNECTED and BATCH_MATMUL by the reduction dimension: each shard multiplies a slice
    of the input by a slice of the weights into a float partial sum; an ADD chain (the
    all-reduce) sums them, carrying the fused activation, and the bias is added once (by shard
    0). Float only, and not exact: the sum is re-associated (``docs/tensor_parallel.md`` gives
    the measured tolerance).
``mlp``
    A Megatron MLP block ``FULLY_CONNECTED -> elementwise activations -> FULLY_CONNECTED``: the
    first layer split by columns, the activations per shard, the second by rows, one
    all-reduce. Float only (its row part).
``heads``
    A Megatron attention block, named by its output projection: the query/key/value projections
    split by columns along head boundaries, every op between them (reshapes, transposes,
    matmuls, scalings, softmax) cloned per group of heads, the output projection split by rows,
    one all-reduce. Float only.

Why no int8 row splits: a quantized FULLY_CONNECTED or BATCH_MATMUL accumulates in int32 but
writes an int8 (or int16) output, rescaled and rounded by the op itself; TFLite has no
quantized op whose output is the raw int32 accumulator (an int32-output FULLY_CONNECTED does not
exist). A row shard would therefore round its partial sum to the output's 8 bits, and the ADD
that sums the partials rounds again: the result differs from the unsplit op by up to a few
quantization steps and saturates differently at the ends of the range. Column and channel
splits of int8 layers stay exact and are offered; row splits of them are not. Hybrid
(dynamic-range) layers, int8 weights with float activations, are refused for row splits too:
their kernels quantize each input slice with that slice's own scale.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgepart.errors import UnsupportedOpError, UsageError
from edgepart.ir._split_blocks import Heads, Mlp, apply_heads, apply_mlp, find_heads, find_mlp
from edgepart.ir._split_core import (
    BLOCK_MODES,
    COLLECTIVE_OF,
    EXACT_MODES,
    FLOAT_GRANULE,
    INT_DEPTHWISE_GRANULE,
    MAX_SHARDS,
    MODES,
    OP_MODES,
    Ctx,
    Ops,
    Pending,
    SplitRecord,
    SplitResult,
    SplitSpec,
    check_op,
    check_sizes,
    extent,
    why_not,
)
from edgepart.ir._split_layers import (
    all_gather,
    all_reduce,
    bmm_shards,
    conv_shards,
    fc_columns,
    fc_rows,
    out_axis,
)
from edgepart.ir.edit import SubgraphEditor
from edgepart.ir.graph import Model
from edgepart.ir.verify import check_model

__all__ = [
    "BLOCK_MODES",
    "COLLECTIVE_OF",
    "EXACT_MODES",
    "FLOAT_GRANULE",
    "INT_DEPTHWISE_GRANULE",
    "MAX_SHARDS",
    "MODES",
    "OP_MODES",
    "SplitRecord",
    "SplitResult",
    "SplitSpec",
    "block_candidates",
    "shard_sizes",
    "split_extent",
    "split_model",
    "split_modes",
]

# ---------------------------------------------------------------------- sizes


def shard_sizes(total: int, ratios: Sequence[float], granule: int = 1) -> tuple[int, ...]:
    """Split ``total`` into ``len(ratios)`` shards close to ``ratios``, every shard but the
    last a positive multiple of ``granule`` (the last takes the rest, so shard boundaries fall
    on multiples of ``granule``, see :func:`split_extent`).

    >>> shard_sizes(96, [0.7, 0.3]), shard_sizes(10, [0.5, 0.3, 0.2])
    ((67, 29), (5, 3, 2))
    >>> shard_sizes(32, [0.5, 0.3, 0.2], 8), shard_sizes(100, [0.7, 0.3], 8)
    ((16, 8, 8), (72, 28))

    Raises
    ------
    UsageError
        Fewer than 2 or more than :data:`MAX_SHARDS` ratios, a ratio not positive, or
        ``total`` too small for that many shards of that granule.
    """
    k = len(ratios)
    if k < 2 or k > MAX_SHARDS:
        raise UsageError(f"a split needs 2 to {MAX_SHARDS} shards, got {k}")
    if any(not r > 0 for r in ratios):
        raise UsageError(f"shard ratios must be positive, got {list(ratios)}")
    g = max(1, int(granule))
    if total < g * (k - 1) + 1:
        raise UsageError(
            f"{total} cannot be split into {k} shards on {g}-element boundaries (too small; "
            f"it needs at least {g * (k - 1) + 1})"
        )
    w = np.asarray(ratios, dtype=np.float64)
    want = w / w.sum() * total
    # boundaries: cumulative targets rounded to the granule, each shard at least one granule
    cuts = []
    prev = 0
    for s in range(k - 1):
        hi = (total - g * (k - 2 - s) - 1) // g * g  # room for the shards after this one
        c = round(float(want[: s + 1].sum()) / g) * g
        c = min(max(c, prev + g), hi)
        cuts.append(c)
        prev = c
    edges = [0, *cuts, total]
    return tuple(edges[s + 1] - edges[s] for s in range(k))


def split_extent(model: Model, op: int, mode: str, subgraph: int = 0) -> tuple[int, int]:
    """``(extent, granule)``: what a split of ``op`` in ``mode`` divides (output channels,
    columns, batch entries, input rows) and the multiple its shard boundaries fall on.

    The granule keeps shards exact on every CPU kernel: TFLite's builtin float convolution and
    matrix multiply (Eigen/ruy GEMM) compute the output channels in blocks of 8 on this class
    of CPU (AVX, and a multiple of NEON's 4), with the last, partial block on a different code
    path; a boundary inside a block would move channels onto that path and change their
    rounding. Integer convolutions and matrix multiplies accumulate and requantize exactly
    (granule 1); a depthwise shard takes whole depth multipliers, and an integer one whole
    blocks of 8 input channels (the builtin per-channel kernel requantizes in blocks of 8 and
    rounds the remainder differently).

    Parameters
    ----------
    model, op, subgraph
        The layer: op ``op`` of ``model.subgraphs[subgraph]``.
    mode
        A single-layer mode of its op type (:data:`OP_MODES`).

    Returns
    -------
    tuple of int
        ``(extent, granule)``; feed them to :func:`shard_sizes`.

    Raises
    ------
    UnsupportedOpError
        The op cannot be split this way (the message says why).
    """
    sg = model.subgraphs[subgraph]
    why = why_not(model, sg, op, mode)
    if why:
        raise UnsupportedOpError(f"{sg.describe_op(op)} cannot be split by {mode}: {why}")
    return extent(model, sg, op, mode)


def split_modes(model: Model, op: int, subgraph: int = 0) -> dict[str, str]:
    """Which single-layer splits op ``op`` of ``model.subgraphs[subgraph]`` allows.

    Parameters
    ----------
    model, op, subgraph
        The layer.

    Returns
    -------
    dict
        Per mode of the op's type (:data:`OP_MODES`): ``""`` if the op can be split that
        way, else the reason it cannot (one sentence). Ops of other types give ``{}``; block
        modes are found by :func:`block_candidates`.
    """
    sg = model.subgraphs[subgraph]
    out: dict[str, str] = {}
    for mode in OP_MODES.get(sg.op_name(op), ()):
        out[mode] = why_not(model, sg, op, mode)
    return out


def block_candidates(
    model: Model, subgraph: int = 0
) -> list[tuple[str, tuple[int, ...], int, int]]:
    """Megatron blocks of the subgraph that can be split: ``(mode, anchor ops, extent,
    granule)`` with ``mode`` ``"mlp"`` (anchors: the two FULLY_CONNECTED; extent: hidden
    units) or ``"heads"`` (anchor: the output projection; extent: the number of heads)."""
    sg = model.subgraphs[subgraph]
    out: list[tuple[str, tuple[int, ...], int, int]] = []
    ctx = Ctx(model, sg)
    for i in range(sg.num_ops):
        if sg.op_name(i) != "FULLY_CONNECTED":
            continue
        mlp = find_mlp(ctx, i)
        if isinstance(mlp, Mlp):
            out.append(("mlp", (mlp.fc1, mlp.fc2), mlp.hidden, FLOAT_GRANULE))
        heads = find_heads(ctx, i)
        if isinstance(heads, Heads):
            out.append(("heads", (i,), heads.num_heads, 1))
    return out


# ---------------------------------------------------------------------- the rewrite


def split_model(model: Model, specs: Sequence[SplitSpec], subgraph: int = 0) -> SplitResult:
    """Apply ``specs`` to ``model.subgraphs[subgraph]`` (see the module docstring).

    Parameters
    ----------
    model
        The source model (unchanged).
    specs
        The splits; their ops (anchors and a block's inner ops) must not overlap.
    subgraph
        The subgraph the op indices refer to.

    Returns
    -------
    SplitResult
        The new model (checked by :func:`edgepart.ir.verify.check_model`) and one
        :class:`SplitRecord` per spec, in order.

    Raises
    ------
    UnsupportedOpError
        An op cannot be split in the mode asked (names the op and the reason).
    UsageError
        Bad sizes (wrong sum, not whole depth multipliers or heads, too many shards) or
        overlapping specs.
    """
    if not 0 <= subgraph < len(model.subgraphs):
        raise UsageError(
            f"subgraph {subgraph} does not exist; the model has {len(model.subgraphs)}"
        )
    sg = model.subgraphs[subgraph]
    ed = SubgraphEditor(model, subgraph)
    ctx = Ctx(model, sg)
    # applied in op order, so a split can see the all-gathers of the splits before it
    order = sorted(range(len(specs)), key=lambda i: (max(specs[i].ops, default=0), i))
    pending: dict[int, Pending] = {}
    for i in order:
        pending[i] = apply_spec(ctx, ed, specs[i])
    res = ed.build()
    records = tuple(pending[i].record(res.new_ops, res.op_map) for i in range(len(specs)))
    check_model(res.model)
    return SplitResult(res.model, records, res.op_map)


def apply_spec(ctx: Ctx, ed: SubgraphEditor, spec: SplitSpec) -> Pending:
    sg = ctx.sg
    mode = spec.mode
    if mode not in MODES:
        raise UsageError(f"split mode {mode!r} is not known; use one of {', '.join(MODES)}")
    k = len(spec.sizes)
    if not 2 <= k <= MAX_SHARDS:
        raise UsageError(f"a split needs 2 to {MAX_SHARDS} shards, got {k}")
    if any(s <= 0 for s in spec.sizes):
        raise UsageError(f"shard sizes must be positive, got {list(spec.sizes)}")
    for o in spec.ops:
        if not 0 <= o < sg.num_ops:
            raise UsageError(f"op {o} does not exist (the subgraph has {sg.num_ops} ops)")
        if ed.replaced(o):
            raise UsageError(f"{sg.describe_op(o)} is in two splits")
    if ctx.model.metadata_bytes("model_control_dependencies") is not None:
        raise UnsupportedOpError(
            f"{sg.describe_op(spec.ops[0])} cannot be split: the model carries control "
            "dependencies between ops, which a rewrite would break"
        )
    if mode == "mlp":
        return apply_mlp(ctx, ed, spec)
    if mode == "heads":
        return apply_heads(ctx, ed, spec)
    if len(spec.ops) != 1:
        raise UsageError(f"a {mode} split names one op, got {list(spec.ops)}")
    op = spec.ops[0]
    if mode in OP_MODES.get(sg.op_name(op), ()):
        why = check_op(ctx, op, mode)
    else:
        why = f"{sg.op_name(op)} has no {mode} split"
    if why:
        raise UnsupportedOpError(f"{sg.describe_op(op)} cannot be split by {mode}: {why}")
    total, granule = extent(ctx.model, sg, op, mode)
    check_sizes(sg, op, spec.sizes, total, granule, mode)
    ops = Ops(k)
    deleted: list[int] = []
    name = sg.op_name(op)
    if name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        shard_out, inputs = conv_shards(ctx, ed, op, spec.sizes, ops, deleted)
    elif name == "FULLY_CONNECTED" and mode == "columns":
        shard_out, inputs = fc_columns(ctx, ed, op, spec.sizes, ops, deleted)
    elif name == "FULLY_CONNECTED":
        shard_out, inputs = fc_rows(ctx, ed, op, spec.sizes, ops, deleted)
    else:
        shard_out, inputs = bmm_shards(ctx, ed, op, mode, spec.sizes, ops, deleted)
    out = sg.op_outputs.row_tuple(op)[0]
    if COLLECTIVE_OF[mode] == "all_gather":
        all_gather(ctx, ed, shard_out, out, out_axis(ctx, op, mode), ops)
    else:
        act = ctx.options(op).get("fused_activation_function", "NONE")
        all_reduce(ctx, ed, shard_out, out, act, ops)
    for d in deleted:
        ed.replace(d, [])
    ed.replace(op, ops.ops)
    ops.commit(op)
    pending = Pending(
        spec=spec,
        op_names=(name,),
        source_ops=tuple(sorted([op, *deleted])),
        anchor=op,
        shard_pos=ops.shard,
        collective_pos=ops.collective,
        shard_outputs=shard_out,
        collective=COLLECTIVE_OF[mode],
        output=out,
        inputs=inputs,
        exact=mode in EXACT_MODES,
    )
    if pending.collective == "all_gather" and len(ops.collective) == 1:
        ctx.gathers[out] = (pending, out_axis(ctx, op, mode))
    return pending
