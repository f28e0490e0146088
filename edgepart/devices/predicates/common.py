"""The generic constraint predicates, available to every delegate file.

Each predicate checks one rule a delegate applies to an op and returns :data:`OK` or a
:class:`Support` with the reason. Reasons follow the delegates' own log wording where there is one
(e.g. XNNPACK's ``unsupported fused activation (Tanh)``). A delegate's own predicates live in the
module of this package named after it (``xnnpack.py``, ``gpu.py``, ``nnapi.py``), which
:mod:`edgepart.devices.capability` imports when a delegate of that name is loaded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgepart.devices.capability import OK, OpView, Support, predicate
from edgepart.ir.dtypes import DType

__all__ = ["ACTIVATIONS", "opt", "slot_tensors"]

ACTIVATIONS = ("NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH", "SIGN_BIT")
_ACT_WORDS = {
    "RELU": "Relu",
    "RELU_N1_TO_1": "ReluMinus1To1",
    "RELU6": "Relu6",
    "TANH": "Tanh",
    "SIGN_BIT": "Sign",
}
_SLOT_HELP = "in<k>, out<k>, inputs or outputs"


def opt(op: OpView, key: str, default: Any = 0) -> Any:
    """An option value, with TFLite's zero default when the op has no options table."""
    return op.option(key, default)


def slot_tensors(op: OpView, slot: str) -> list[int]:
    """Tensor indices named by a slot: ``in0``, ``out1``, ``inputs`` or ``outputs`` (-1 skipped)."""
    if slot == "inputs":
        return [t for t in op.inputs if t >= 0]
    if slot == "outputs":
        return [t for t in op.outputs if t >= 0]
    if slot.startswith("in") and slot[2:].isdigit():
        k = int(slot[2:])
        return [op.inputs[k]] if k < len(op.inputs) and op.inputs[k] >= 0 else []
    if slot.startswith("out") and slot[3:].isdigit():
        k = int(slot[3:])
        return [op.outputs[k]] if k < len(op.outputs) and op.outputs[k] >= 0 else []
    raise ValueError(f"bad tensor slot {slot!r}; use {_SLOT_HELP}")


def _count_ok(n: int, spec: Any) -> bool:
    if isinstance(spec, int):
        return n == spec
    lo, hi = spec
    return bool(lo <= n <= hi)


@predicate("num_inputs", arg=(int, list))
def num_inputs(op: OpView, spec: Any) -> Support:
    """The op has exactly N inputs, or a count in [min, max] (omitted optional inputs count)."""
    n = len(op.inputs)
    if _count_ok(n, spec):
        return OK
    return Support(False, f"unexpected number of inputs ({n}), expected {spec}")


@predicate("num_outputs", arg=(int, list))
def num_outputs(op: OpView, spec: Any) -> Support:
    """The op has exactly N outputs, or a count in [min, max]."""
    n = len(op.outputs)
    if _count_ok(n, spec):
        return OK
    return Support(False, f"unexpected number of outputs ({n}), expected {spec}")


@predicate("fused_activation_in", arg=list, choices=ACTIVATIONS)
def fused_activation_in(op: OpView, allowed: tuple[str, ...]) -> Support:
    """The fused activation is one of the listed ones (ops without the option pass)."""
    act = op.option("fused_activation_function", "NONE")
    if act in allowed:
        return OK
    return Support(False, f"unsupported fused activation ({_ACT_WORDS.get(act, act)})")


@predicate("no_fused_activation")
def no_fused_activation(op: OpView) -> Support:
    """The op has no fused activation."""
    act = op.option("fused_activation_function", "NONE")
    return OK if act == "NONE" else Support(False, f"fused activation {act} is not supported")


@predicate("softmax_beta_is_1")
def softmax_beta_is_1(op: OpView) -> Support:
    """SOFTMAX beta must be 1."""
    beta = float(opt(op, "beta", 0.0))
    if np.float32(beta) == np.float32(1.0):
        return OK
    return Support(False, f"unsupported beta value {beta:.7f}")


@predicate("depth_multiplier_is_1")
def depth_multiplier_is_1(op: OpView) -> Support:
    """DEPTHWISE_CONV_2D depth_multiplier must be 1."""
    dm = int(opt(op, "depth_multiplier", 0))
    return OK if dm == 1 else Support(False, f"depth multiplier {dm} is not supported, only 1")


@predicate("stride_le", arg=int)
def stride_le(op: OpView, limit: int) -> Support:
    """Both strides are at most N."""
    sh, sw = int(opt(op, "stride_h")), int(opt(op, "stride_w"))
    if sh <= limit and sw <= limit:
        return OK
    return Support(False, f"stride {sh}x{sw} exceeds {limit}")


@predicate("dilation_is_1")
def dilation_is_1(op: OpView) -> Support:
    """No dilation (both dilation factors 1)."""
    dh, dw = int(opt(op, "dilation_h_factor", 1)), int(opt(op, "dilation_w_factor", 1))
    return OK if dh == dw == 1 else Support(False, f"dilation {dh}x{dw} is not supported")


@predicate("dilation_only_at_stride_1")
def dilation_only_at_stride_1(op: OpView) -> Support:
    """Dilation is allowed only when both strides are 1."""
    dh, dw = int(opt(op, "dilation_h_factor", 1)), int(opt(op, "dilation_w_factor", 1))
    sh, sw = int(opt(op, "stride_h")), int(opt(op, "stride_w"))
    if (dh == dw == 1) or (sh == sw == 1):
        return OK
    return Support(False, "dilation is only supported with stride 1")


@predicate("padding_in", arg=list, choices=("SAME", "VALID"))
def padding_in(op: OpView, allowed: tuple[str, ...]) -> Support:
    """The padding mode is one of the listed ones."""
    pad = op.option("padding", "SAME")
    return OK if pad in allowed else Support(False, f"invalid padding mode ({pad})")


@predicate("constant_inputs", arg=list)
def constant_inputs(op: OpView, slots: tuple[Any, ...]) -> Support:
    """The listed inputs (indices) are constant (or quasi-static) when present."""
    for k in slots:
        if k < len(op.inputs) and op.inputs[k] >= 0 and not op.is_static(op.inputs[k]):
            return Support(False, f"input {k} (tensor {op.inputs[k]}) must be a constant")
    return OK


@predicate("constant_filter_and_bias")
def constant_filter_and_bias(op: OpView) -> Support:
    """Filter (input 1) and bias (input 2) are constants and the bias is present."""
    if len(op.inputs) < 3 or op.inputs[2] < 0:
        return Support(False, "a bias input is required")
    for k, what in ((1, "filter"), (2, "bias")):
        if not op.is_static(op.inputs[k]):
            return Support(False, f"{what} (tensor {op.inputs[k]}) must be a constant")
    return OK


@predicate("bias_required")
def bias_required(op: OpView) -> Support:
    """The optional bias input (input 2) is present."""
    if len(op.inputs) >= 3 and op.inputs[2] >= 0:
        return OK
    return Support(False, f"unsupported {op.name} node without bias")


@predicate("rank_le", arg=dict(slot=str, max=int))
def rank_le(op: OpView, a: dict[str, Any]) -> Support:
    """Every tensor in the slot has at most ``max`` dimensions."""
    for t in slot_tensors(op, a["slot"]):
        r = len(op.shape(t))
        if r > a["max"]:
            return Support(False, f"tensor {t} has rank {r}; at most {a['max']} supported")
    return OK


@predicate("rank_in", arg=dict(slot=str, min=int, max=int))
def rank_in(op: OpView, a: dict[str, Any]) -> Support:
    """Every tensor in the slot has a rank in [min, max]."""
    lo, hi = a.get("min", 0), a.get("max", 8)
    for t in slot_tensors(op, a["slot"]):
        r = len(op.shape(t))
        if not lo <= r <= hi:
            want = f"{lo}" if lo == hi else f"{lo}..{hi}"
            return Support(
                False,
                f"unsupported number of shape dimensions ({r}) in tensor {t}: {want} expected",
            )
    return OK


@predicate("same_dtype", arg=list)
def same_dtype(op: OpView, slots: tuple[str, ...]) -> Support:
    """All tensors in the listed slots share one dtype."""
    types = {op.dtype(t) for s in slots for t in slot_tensors(op, s)}
    if len(types) <= 1:
        return OK
    return Support(False, f"unsupported mixed types in {op.name} operator")


@predicate("max_elements", arg=dict(slot=str, max=int))
def max_elements(op: OpView, a: dict[str, Any]) -> Support:
    """Tensors in the slot have at most ``max`` elements."""
    for t in slot_tensors(op, a["slot"]):
        n = int(np.prod(op.shape(t), dtype=np.int64))
        if n > a["max"]:
            return Support(False, f"tensor {t} has {n} elements; at most {a['max']} supported")
    return OK


@predicate("static_shapes")
def static_shapes(op: OpView) -> Support:
    """No input or output has an unknown (-1) dimension in its shape signature, unless the
    user fixed the size of every dynamic input (``--input-shape``): then the model runs at
    the propagated, fixed shapes."""
    info = op.sg.shape_info
    if info is not None and info.fixed:
        return OK
    for t in list(op.inputs) + list(op.outputs):
        if t >= 0 and op.sg.tensor_has_signature[t] and -1 in op.sg.tensor_signature.row_tuple(t):
            # one reason for every op (the report groups them): the fix, not the tensor
            return Support(
                False,
                "dynamic shape (a -1 in a shape signature); give every dynamic input a size "
                "with --input-shape NAME=D0,D1,... (input_shapes= in the API)",
            )
    return OK


@predicate("innermost_dims_le_3")
def innermost_dims_le_3(op: OpView) -> Support:
    """Activation tensors are 1-3D, or only their 3 innermost dimensions exceed 1 (Edge TPU)."""
    for t in list(op.inputs) + list(op.outputs):
        if t < 0 or op.sg.tensor_is_constant[t]:  # weights (4-D filters) are exempt
            continue
        shp = op.shape(t)
        if len(shp) > 3 and any(d > 1 for d in shp[:-3]):
            return Support(
                False, f"tensor {t} shape {list(shp)}: only the 3 innermost dimensions may exceed 1"
            )
    return OK


@predicate("api_level_ge", arg=int)
def api_level_ge(op: OpView, level: int) -> Support:
    """The device's Android API level (``android_api_level`` in the context) is at least N."""
    have = op.context.get("android_api_level")
    if have is None or int(have) >= level:
        return OK
    return Support(False, f"Android API level {level} required, device has {have}")


@predicate("feature_level_ge", arg=int)
def feature_level_ge(op: OpView, level: int) -> Support:
    """The NNAPI feature level (``nnapi_feature_level`` in the context) is at least N."""
    have = op.context.get("nnapi_feature_level")
    if have is None or int(have) >= level:
        return OK
    return Support(False, f"NNAPI feature level {level} required, device has {have}")


@predicate("option_in", arg=dict(key=str, values=list))
def option_in(op: OpView, a: dict[str, Any]) -> Support:
    """The builtin option ``key`` takes one of ``values``."""
    v = op.option(a["key"], None)
    if v in a["values"]:
        return OK
    return Support(False, f"{a['key']}={v!r} is not supported")


@predicate("constant_values_nonneg", arg=int)
def constant_values_nonneg(op: OpView, k: int) -> Support:
    """Input k is a constant whose values are all >= 0 (e.g. paddings)."""
    t = op.inputs[k] if k < len(op.inputs) else -1
    vals = op.const_values(t)
    if vals is None:
        return Support(False, f"input {k} must be a constant")
    return OK if (vals >= 0).all() else Support(False, f"input {k} has negative values")


@predicate("filter_height_ge", arg=int)
def filter_height_ge(op: OpView, n: int) -> Support:
    """The filter (input 1, OHWI/1HWO layout) has height at least N."""
    t = op.inputs[1] if len(op.inputs) > 1 else -1
    if t < 0:
        return Support(False, "missing filter")
    shp = op.shape(t)
    if len(shp) == 4 and shp[1] >= n:
        return OK
    return Support(False, f"filter height must be at least {n}")


@predicate("output_hw_le", arg=int)
def output_hw_le(op: OpView, n: int) -> Support:
    """The output's height and width are at most N (NHWC)."""
    t = op.outputs[0]
    shp = op.shape(t)
    if len(shp) == 4 and shp[1] <= n and shp[2] <= n:
        return OK
    return Support(False, f"output size {list(shp)} exceeds {n}")


@predicate("never", arg=str)
def never(op: OpView, reason: str) -> Support:
    """Always refuses, with the given reason (ops a delegate parses but never accepts)."""
    return Support(False, reason)


@predicate("quantized_activations")
def quantized_activations(op: OpView) -> Support:
    """Every non-constant tensor is 8-bit with quantization parameters."""
    for t in list(op.inputs) + list(op.outputs):
        if t < 0 or op.sg.tensor_is_constant[t]:
            continue
        if op.dtype(t) not in (DType.INT8, DType.UINT8):
            return Support(False, f"tensor {t} is {op.dtype(t).name}; only 8-bit quantized tensors")
        q = op.tensor(t).quantization
        if q is None or len(q.scale) == 0:
            return Support(False, f"tensor {t} has no quantization parameters")
    return OK
