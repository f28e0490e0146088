"""Delegate-specific node selection that happens before partitioning.

:func:`select_nodes` applies a delegate's helper (its file's ``claiming.helper``); it is the one
place that tells the helpers apart, for claiming and for per-op processor support alike.

* :func:`xnnpack_nodes_to_delegate`: ``Delegate::PrepareOpsToDelegate`` of XNNPACK. DEQUANTIZE
  (fp16 or int8) and DENSIFY of constants are "static unpack" nodes: their outputs become
  quasi-static weights, and the node is delegated unless a refused node consumes its output.
  VAR_HANDLE is delegated when a READ_VARIABLE or ASSIGN_VARIABLE of its resource is.
* :func:`fp16_dequant_map`: ``FP16GraphPartitionHelper`` (GPU, NNAPI): DEQUANTIZE nodes of fp16
  constants are refused and their consumers are checked as if they read the fp16 constant.
* :func:`prefix_cut_nodes`: the Edge TPU compiler's single cut at the first unsupported op.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgepart.claim.support import SupportTable, evaluate_support
from edgepart.devices.capability import OpView
from edgepart.devices.delegate import DelegateSpec
from edgepart.devices.xnnpack_types import check_type_class
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Subgraph

__all__ = [
    "SHAPE_INPUTS",
    "NodeSelection",
    "dynamic_tensor",
    "fp16_dequant_map",
    "prefix_cut_nodes",
    "select_nodes",
    "xnnpack_nodes_to_delegate",
]


def _ops_named(sg: Subgraph, names: Sequence[str]) -> np.ndarray:
    """Boolean per op: its op name is one of ``names``."""
    hit = np.array([c.name in names for c in sg.opcodes], dtype=bool)
    return hit[sg.op_opcode] if len(hit) else np.zeros(sg.num_ops, dtype=bool)


@dataclass(frozen=True, eq=False)
class NodeSelection:
    """What a delegate's helper proposes before partitioning.

    ``support`` is the per-op verdict; ``mask`` holds, per position of the plan, whether the
    helper proposes that node (fp16 DEQUANTIZE nodes refused); ``remap`` gives the inputs of
    consumers that read an fp16 constant instead of its DEQUANTIZE, and ``dequant`` those
    DEQUANTIZE nodes, which join the delegate with their consumers. ``direct``: the helper
    replaces the proposed nodes itself, with no preview and no partition cap (XNNPACK).
    """

    support: SupportTable
    mask: np.ndarray
    remap: dict[int, tuple[int, ...]] = field(default_factory=dict)
    dequant: frozenset[int] = frozenset()
    direct: bool = False


def select_nodes(
    sg: Subgraph,
    spec: DelegateSpec,
    plan: Sequence[int],
    n_ops: int,
    context: Mapping[str, Any],
    overrides: Mapping[int, tuple[int, ...]] | None = None,
) -> NodeSelection:
    """Apply ``spec``'s helper to the nodes of ``plan`` (op indices below ``n_ops``).

    ``overrides`` are inputs already remapped by earlier delegates (fp16 helpers).
    """
    if spec.policy.helper == "xnnpack":
        support, mask = xnnpack_nodes_to_delegate(sg, spec, plan, n_ops, context)
        return NodeSelection(support, mask, direct=True)
    plan_arr = np.asarray(plan, dtype=np.int64)
    plan_pos = np.flatnonzero(plan_arr < n_ops)
    ops = plan_arr[plan_pos]
    remap: dict[int, tuple[int, ...]] = {}
    dequant: set[int] = set()
    if spec.policy.helper == "fp16_graph_partition":
        remap, dequant = fp16_dequant_map(sg, ops.tolist(), overrides or {})
    support = evaluate_support(
        sg, spec, ops=ops, context=context, input_overrides={**(overrides or {}), **remap}
    )
    mask = np.zeros(len(plan), dtype=bool)
    if len(ops):
        mask[plan_pos] = support.supported[ops]
        if dequant:
            where = {int(node): i for i, node in enumerate(plan)}
            for op in dequant:
                mask[where[op]] = False
    return NodeSelection(support, mask, remap, frozenset(dequant))


def xnnpack_nodes_to_delegate(
    sg: Subgraph,
    spec: DelegateSpec,
    plan: Sequence[int],
    n_ops: int,
    context: Mapping[str, Any],
) -> tuple[SupportTable, np.ndarray]:
    """XNNPACK's node selection; returns (per-op support, mask over plan positions)."""
    plan_arr = np.asarray(plan, dtype=np.int64)
    plan_pos = np.flatnonzero(plan_arr < n_ops)
    ops = plan_arr[plan_pos]
    unpack_kind = _ops_named(sg, ("DEQUANTIZE", "DENSIFY"))
    quasi: set[int] = set()
    producer: dict[int, int] = {}  # quasi-static tensor -> unpack op
    unpack: set[int] = set()
    for op in ops[unpack_kind[ops]].tolist():  # plan order: a chain unpacks in order
        ins, outs = sg.op_inputs.row_tuple(op), sg.op_outputs.row_tuple(op)
        if _is_static_unpack(sg, op, ins, outs, quasi):
            unpack.add(op)
            producer[outs[0]] = op
            quasi.add(outs[0])
    visit = ops[~np.isin(ops, np.asarray(sorted(unpack), dtype=np.int64))] if unpack else ops
    base = evaluate_support(sg, spec, ops=visit, context=context, static=frozenset(quasi))
    supported = base.supported.copy()
    reasons, details = dict(base.reasons), dict(base.details)
    var_ops = visit[_ops_named(sg, ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"))[visit]]
    if len(var_ops):
        _resource_variables(sg, var_ops.tolist(), supported, reasons, details)
    if producer:
        refused = visit[~supported[visit]]
        for op in refused.tolist():  # the C++ loop erases producers of refused consumers
            for t in sg.op_inputs.row_tuple(op):
                if t in producer:
                    unpack.discard(producer[t])
    for op in unpack:
        supported[op] = True
    mask = np.zeros(len(plan), dtype=bool)
    mask[plan_pos] = supported[ops]
    for op in set(producer.values()) - unpack:
        reasons[op] = details[op] = (
            f"{sg.op_name(op)}: unpacks a constant consumed by an op XNNPACK refuses"
        )
    return SupportTable(spec.name, supported, reasons, details), mask


def _is_static_unpack(
    sg: Subgraph, op: int, ins: tuple[int, ...], outs: tuple[int, ...], quasi: set[int]
) -> bool:
    if len(ins) != 1 or len(outs) != 1 or ins[0] < 0:
        return False
    x, y = ins[0], outs[0]
    xt, yt = DType(int(sg.tensor_dtype[x])), DType(int(sg.tensor_dtype[y]))
    const = bool(sg.tensor_is_constant[x])
    sparse = sg.tensor_sparsity[x] is not None
    kind = sg.op_name(op)
    if kind == "DEQUANTIZE":
        int8_ok = xt == DType.INT8 and sg.tensor_quantization[x] is not None
        return (
            not sparse
            and (const or x in quasi)
            and (xt == DType.FLOAT16 or int8_ok)
            and yt == DType.FLOAT32
        )
    if kind == "DENSIFY":
        return const and sparse and xt in (DType.FLOAT16, DType.INT8, DType.FLOAT32) and yt == xt
    return False


def _resource_variables(
    sg: Subgraph,
    visit: Sequence[int],
    supported: np.ndarray,
    reasons: dict[int, str],
    details: dict[int, str],
) -> None:
    """VAR_HANDLE / READ_VARIABLE / ASSIGN_VARIABLE coupling of ``PrepareOpsToDelegate``."""
    handle_of: dict[int, int] = {}  # resource tensor -> VAR_HANDLE op (first seen)
    proxy: dict[int, int] = {}  # resource tensor -> value tensor fixing type and shape
    for op in visit:
        kind = sg.op_name(op)
        if kind not in ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"):
            continue
        ins, outs = sg.op_inputs.row_tuple(op), sg.op_outputs.row_tuple(op)
        view = OpView(sg, op)
        ok, why = False, ""
        need = {"VAR_HANDLE": (0, 1), "READ_VARIABLE": (1, 1), "ASSIGN_VARIABLE": (2, 0)}[kind]
        if len(ins) < need[0] or len(outs) < need[1] or min((*ins, *outs), default=0) < 0:
            why = f"has {len(ins)} inputs and {len(outs)} outputs; the op is malformed"
        elif kind == "VAR_HANDLE":
            handle_of.setdefault(outs[0], op)
            why = "VAR_HANDLE is delegated only with a delegated read or assignment"
        else:
            res, value = (ins[0], outs[0]) if kind == "READ_VARIABLE" else (ins[0], ins[1])
            if kind == "READ_VARIABLE" and len(sg.tensor_shape.row_tuple(value)) == 0:
                why = "unranked or scalar variable value"
            elif (err := check_type_class(view, value, "F32_OR_Q8")) is not None:
                why = err
            elif res not in handle_of:
                why = "resource not created by a VAR_HANDLE earlier in this subgraph"
            elif res in proxy and (
                sg.tensor_dtype[proxy[res]] != sg.tensor_dtype[value]
                or sg.tensor_shape.row_tuple(proxy[res]) != sg.tensor_shape.row_tuple(value)
            ):
                why = "variable used with different types or shapes"
            else:
                proxy.setdefault(res, value)
                ok = True
        supported[op] = ok
        if ok:
            reasons.pop(op, None)
            details.pop(op, None)
        else:
            reasons[op] = details[op] = f"{kind}: {why}"
    for res in proxy:
        h = handle_of[res]
        supported[h] = True
        reasons.pop(h, None)
        details.pop(h, None)


def fp16_dequant_map(
    sg: Subgraph, ops: Sequence[int], overrides: Mapping[int, tuple[int, ...]]
) -> tuple[dict[int, tuple[int, ...]], set[int]]:
    """FP16GraphPartitionHelper: (remapped inputs per consumer op, fp16 DEQUANTIZE ops).

    ``ops`` are the original ops of the current plan, in plan order.
    """
    dq_out: dict[int, int] = {}  # dequant output tensor -> fp16 constant input
    dq_ops: set[int] = set()
    remap: dict[int, tuple[int, ...]] = {}
    arr = np.asarray(ops, dtype=np.int64)
    if not len(arr) or not _ops_named(sg, ("DEQUANTIZE",))[arr].any():
        return remap, dq_ops
    fp16_const = (sg.tensor_dtype == int(DType.FLOAT16)) & sg.tensor_is_constant
    for op in arr.tolist():
        ins = overrides.get(op) or sg.op_inputs.row_tuple(op)
        if sg.op_name(op) == "DEQUANTIZE" and ins and ins[0] >= 0 and fp16_const[ins[0]]:
            dq_out[sg.op_outputs.row_tuple(op)[0]] = ins[0]
            dq_ops.add(op)
            continue
        if dq_out and any(t in dq_out for t in ins):
            remap[op] = tuple(dq_out.get(t, t) for t in ins)
    return remap, dq_ops


def prefix_cut_nodes(
    sg: Subgraph, plan: Sequence[int], n_ops: int, supported: np.ndarray
) -> np.ndarray:
    """Plan positions the Edge TPU compiler maps: supported ops up to the first refused one.

    Leading QUANTIZE ops of float inputs stay on the CPU without ending the prefix (the compiler
    leaves input quantization to the CPU).
    """
    mask = np.zeros(len(plan), dtype=bool)
    started = False
    for pos, op in enumerate(plan):
        if op >= n_ops:
            break
        if supported[op]:
            mask[pos] = True
            started = True
            continue
        if not started and sg.op_name(op) == "QUANTIZE":
            ins = sg.op_inputs.row_tuple(op)
            if ins and ins[0] >= 0 and int(sg.tensor_dtype[ins[0]]) == int(DType.FLOAT32):
                continue
        break
    return mask


# Inputs whose values decide the output shape; non-constant ones make the output dynamic when the
# kernel prepares (SetTensorToDynamic). Ops listed with () always produce dynamic outputs.
SHAPE_INPUTS: dict[str, tuple[int, ...]] = {
    "RESHAPE": (1,),
    "TILE": (1,),
    "SLICE": (1, 2),
    "STRIDED_SLICE": (1, 2, 3),
    "PAD": (1,),
    "PADV2": (1,),
    "MIRROR_PAD": (1,),
    "BROADCAST_TO": (1,),
    "FILL": (0,),
    "RANGE": (0, 1, 2),
    "ONE_HOT": (1,),
    "TRANSPOSE": (1,),
    "SPLIT": (0,),
    "SPLIT_V": (1, 2),
    "RESIZE_BILINEAR": (1,),
    "RESIZE_NEAREST_NEIGHBOR": (1,),
    "MEAN": (1,),
    "SUM": (1,),
    "REDUCE_MAX": (1,),
    "REDUCE_MIN": (1,),
    "REDUCE_PROD": (1,),
    "REDUCE_ANY": (1,),
    "REDUCE_ALL": (1,),
    "EXPAND_DIMS": (1,),
    "TOPK_V2": (1,),
    "TRANSPOSE_CONV": (0,),
    "SPACE_TO_BATCH_ND": (1, 2),
    "BATCH_TO_SPACE_ND": (1, 2),
    "ARG_MAX": (1,),
    "ARG_MIN": (1,),
    "GATHER_ND": (),
    "WHERE": (),
    "UNIQUE": (),
    "NON_MAX_SUPPRESSION_V4": (),
    "NON_MAX_SUPPRESSION_V5": (),
}


def dynamic_tensor(sg: Subgraph) -> int | None:
    """A tensor TFLite would make dynamic at prepare time, or None (a documented approximation).

    Outputs are dynamic when an op's shape-deciding input is not a constant (or the op always
    produces data-dependent shapes). RESHAPE whose output shape is fully known from the model is
    kept static, as the kernel does.
    """
    info = sg.shape_info
    if info is not None:  # shape propagation mirrored LiteRT's prepare exactly
        return info.dynamic_tensor  # type: ignore[no-any-return]
    const = sg.tensor_is_constant
    cand = np.flatnonzero(_ops_named(sg, tuple(SHAPE_INPUTS)))
    for op in cand.tolist():
        ins = sg.op_inputs.row_tuple(op)
        name = sg.op_name(op)
        keys = SHAPE_INPUTS[name]
        outs = sg.op_outputs.row_tuple(op)
        if not keys:
            return outs[0] if outs else None
        for k in keys:
            if k < len(ins) and ins[k] >= 0 and not const[ins[k]]:
                if name == "RESHAPE" and not sg.tensor_has_signature[outs[0]]:
                    continue
                return outs[0] if outs else None
    return None
