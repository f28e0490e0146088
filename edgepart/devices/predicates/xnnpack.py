"""Predicates of the XNNPACK delegate (``xnnpack_delegate.cc``), found by the delegate's name.

XNNPACK decides support in ``Subgraph::VisitNode``: tensor-type checks (the type classes of
:mod:`edgepart.devices.xnnpack_types`, applied by ``xnn_types``), shape checks
(``CheckTensorShape``: rank range and every dimension > 0), static-allocation checks and the
op-specific parameter rules of the ``Visit*Node`` functions. The reasons paraphrase the
delegate's (normally suppressed) log messages.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from edgepart.devices.capability import OK, OpView, Support, predicate
from edgepart.devices.predicates.common import opt, slot_tensors
from edgepart.devices.xnnpack_types import (
    XNN_MAX_TENSOR_DIMS,
    affine_params,
    check_type_class,
    quant_scale,
)
from edgepart.ir.dtypes import DType

__all__: list[str] = []

_f32 = np.float32


def _values(op: OpView, k: int) -> np.ndarray | None:
    t = op.inputs[k] if k < len(op.inputs) else -1
    return op.const_values(t)


def _shape_tensor_1d(op: OpView, t: int, squeeze: bool) -> str | None:
    """``CheckShapeTensorShape``: a 1-D tensor (or, squeezing, leading dims all 1)."""
    shp = op.shape(t)
    if len(shp) == 1:
        return None
    if squeeze and all(d == 1 for d in shp[:-1]):
        return None
    return f"unexpected shape {list(shp)} of shape tensor #{t}: expected a 1D tensor"


@predicate("xnn_leaky_relu")
def xnn_leaky_relu(op: OpView) -> Support:
    """LEAKY_RELU: alpha normal and non-zero; quantized scale ratios within XNNPACK's range."""
    alpha = float(opt(op, "alpha", 0.0))
    if not (math.isfinite(alpha) and alpha != 0.0 and abs(alpha) >= np.finfo(_f32).tiny):
        return Support(False, f"unsupported alpha {alpha:g}")
    x, y = op.inputs[0], op.outputs[0]
    if op.dtype(x) in (DType.INT8, DType.UINT8) and op.dtype(y) in (DType.INT8, DType.UINT8):
        pos = _f32(quant_scale(op, x)) / _f32(quant_scale(op, y))
        if pos < _f32(1.0 / 256.0) or pos > _f32(128.0):
            return Support(False, f"unsupported positive input-to-output scale {pos:g}")
        neg = pos * _f32(alpha)
        if neg < _f32(-127.99609375) or neg > _f32(128.0) or abs(neg) < _f32(1.0 / 256.0):
            return Support(False, f"unsupported negative input-to-output scale {neg:g}")
    return OK


@predicate("xnn_quantize")
def xnn_quantize(op: OpView) -> Support:
    """QUANTIZE: from f32, or requantize int8->int8 / uint8->uint8 with scale ratio in range."""
    x, y = op.inputs[0], op.outputs[0]
    xt, yt = op.dtype(x), op.dtype(y)
    if xt == DType.FLOAT32:
        return OK
    if xt == yt and xt in (DType.INT8, DType.UINT8):
        r = _f32(quant_scale(op, x)) / _f32(quant_scale(op, y))
        if r < _f32(1.0 / 256.0) or r > _f32(128.0):
            return Support(False, "unsupported input-to-output scale in QUANTIZE")
        return OK
    return Support(
        False,
        f"unsupported combination of input type ({xt.name}) and output type "
        f"({yt.name}) in QUANTIZE",
    )


def _legacy(op: OpView, t: int) -> tuple[float, int]:
    a = affine_params(op, t)
    if a is None or len(a[0]) != 1:
        return 0.0, 0
    return float(a[0][0]), int(a[1][0])


@predicate("xnn_same_quantization", arg=list)
def xnn_same_quantization(op: OpView, slots: tuple[str, ...]) -> Support:
    """For uint8 (CONCATENATION) or 8-bit (RESHAPE) outputs: inputs share the output's params."""
    y = op.outputs[0]
    kinds = (DType.UINT8,) if "uint8_only" in slots else (DType.UINT8, DType.INT8)
    if op.dtype(y) not in kinds:
        return OK
    want = _legacy(op, y)
    ins = op.inputs if "inputs" in slots else op.inputs[:1]
    for t in ins:
        if t >= 0 and _legacy(op, t) != want:
            return Support(
                False,
                "mismatching quantization scale or zero point across the input and the output",
            )
    return OK


@predicate("xnn_axes")
def xnn_axes(op: OpView) -> Support:
    """Reductions: the axes (input 1) are a static INT32 tensor of rank <= 1."""
    t = op.inputs[1]
    if op.dtype(t) != DType.INT32:
        return Support(False, f"unsupported type {op.dtype(t).name} in axes tensor #{t}")
    if len(op.shape(t)) > 1:
        return Support(False, f"unexpected rank of axes tensor #{t}: expected a 1D tensor")
    if not op.sg.tensor_is_constant[t]:
        return Support(False, f"axes tensor #{t} must be static")
    return OK


@predicate("xnn_pad")
def xnn_pad(op: OpView) -> Support:
    """PAD: static INT32 paddings of shape [rank, 2], all non-negative."""
    x, p = op.inputs[0], op.inputs[1]
    if op.dtype(p) != DType.INT32:
        return Support(False, f"unsupported type {op.dtype(p).name} in paddings tensor #{p}")
    shp = op.shape(p)
    if len(shp) != 2 or shp[0] != len(op.shape(x)) or shp[1] != 2:
        return Support(False, f"unexpected paddings shape {list(shp)}")
    if not op.sg.tensor_is_constant[p]:
        return Support(False, f"paddings tensor #{p} must be static")
    vals = _values(op, 1)
    if vals is not None and (vals < 0).any():
        return Support(False, "invalid negative padding")
    return OK


@predicate("xnn_reshape")
def xnn_reshape(op: OpView) -> Support:
    """RESHAPE: a new-shape input must be a static INT32 1-D (or squeezable) tensor."""
    if len(op.inputs) != 2:
        return OK
    t = op.inputs[1]
    if t < 0:
        return Support(False, "omitted new-shape input")
    if op.dtype(t) != DType.INT32:
        return Support(False, f"unsupported type {op.dtype(t).name} in shape tensor #{t}")
    err = _shape_tensor_1d(op, t, squeeze=True)
    if err:
        return Support(False, err)
    if not op.sg.tensor_is_constant[t]:
        return Support(False, f"shape tensor #{t} must be static")
    return OK


@predicate("xnn_resize_bilinear")
def xnn_resize_bilinear(op: OpView) -> Support:
    """RESIZE_BILINEAR: static INT32 1-D size tensor with positive values."""
    t = op.inputs[1]
    if op.dtype(t) != DType.INT32:
        return Support(False, f"unsupported type {op.dtype(t).name} in size tensor #{t}")
    err = _shape_tensor_1d(op, t, squeeze=False)
    if err:
        return Support(False, err)
    if not op.sg.tensor_is_constant[t]:
        return Support(False, f"size tensor #{t} must be static")
    vals = _values(op, 1)
    if vals is not None and (vals <= 0).any():
        return Support(False, "invalid output dimension")
    return OK


@predicate("xnn_slice")
def xnn_slice(op: OpView) -> Support:
    """SLICE: static 1-D INT32/INT64 begin and size of equal length, sizes positive."""
    b, s = op.inputs[1], op.inputs[2]
    for t in (b, s):
        err = _shape_tensor_1d(op, t, squeeze=False)
        if err:
            return Support(False, err)
        if not op.sg.tensor_is_constant[t]:
            return Support(False, f"tensor #{t} must be static")
        if op.dtype(t) not in (DType.INT32, DType.INT64):
            return Support(False, f"unsupported type {op.dtype(t).name} in tensor #{t}")
    if op.shape(b)[0] != op.shape(s)[0]:
        return Support(False, "begin and size lengths differ")
    size = _values(op, 2)
    if size is not None and (size[: op.shape(b)[0]] <= 0).any():
        return Support(False, "size must be positive in SLICE")
    return OK


@predicate("xnn_block_size")
def xnn_block_size(op: OpView) -> Support:
    """DEPTH_TO_SPACE / SPACE_TO_DEPTH: block size > 1 (SPACE_TO_DEPTH: divides H and W)."""
    bs = int(opt(op, "block_size"))
    if bs <= 1:
        return Support(False, f"invalid block size ({bs})")
    if op.name == "SPACE_TO_DEPTH":
        shp = op.shape(op.inputs[0])
        if len(shp) < 3 or shp[1] % bs or shp[2] % bs:
            return Support(False, f"input height/width {list(shp)} not divisible by {bs}")
    return OK


@predicate("xnn_split")
def xnn_split(op: OpView) -> Support:
    """SPLIT: num_splits equals the outputs (2..4); the split axis is a static INT32 tensor."""
    if int(opt(op, "num_splits")) != len(op.outputs):
        return Support(False, "num_splits does not match the number of outputs")
    if len(op.inputs) != 2 or not 2 <= len(op.outputs) <= 4:
        return Support(False, f"unexpected number of outputs ({len(op.outputs)})")
    t = op.inputs[0]
    if op.dtype(t) != DType.INT32 or not op.sg.tensor_is_constant[t]:
        return Support(False, f"split axis tensor #{t} must be a static INT32 tensor")
    return OK


@predicate("xnn_strided_slice")
def xnn_strided_slice(op: OpView) -> Support:
    """STRIDED_SLICE: no ellipsis/new-axis/shrink masks, static INT32 params, unit strides."""
    for mask in ("ellipsis_mask", "new_axis_mask", "shrink_axis_mask"):
        if int(opt(op, mask)):
            return Support(False, f"{mask} is not supported")
    x = op.inputs[0]
    rank = len(op.shape(x))
    for k in (3, 1, 2):
        t = op.inputs[k]
        err = _shape_tensor_1d(op, t, squeeze=False)
        if err:
            return Support(False, err)
        if not op.sg.tensor_is_constant[t]:
            return Support(False, f"tensor #{t} must be static")
        if op.dtype(t) != DType.INT32:
            return Support(False, f"unsupported type {op.dtype(t).name} in tensor #{t}")
        if k == 3:
            st = _values(op, 3)
            if st is not None and (st != 1).any():
                return Support(False, "stride must be 1 in STRIDED_SLICE")
    for k in (1, 2, 3):
        shp = op.shape(op.inputs[k])
        if len(shp) != 1 or shp[0] != rank:
            return Support(False, "begin/end/stride length must equal the input rank")
    begin, end = _values(op, 1), _values(op, 2)
    if begin is None or end is None:
        return OK
    dims = op.shape(x)
    bm, em, off = int(opt(op, "begin_mask")), int(opt(op, "end_mask")), bool(opt(op, "offset"))
    for i in range(min(rank, XNN_MAX_TENSOR_DIMS)):
        b = 0 if bm & (1 << i) else int(begin[i])
        e = 0 if em & (1 << i) else (int(end[i]) + b if off else int(end[i]))
        offset = b + dims[i] if b < 0 else b
        size = e + dims[i] - offset if e <= 0 else e - offset
        if offset + size > dims[i]:
            return Support(False, f"offset {offset} + size {size} exceeds extent {dims[i]}")
    return OK


@predicate("xnn_transpose_conv")
def xnn_transpose_conv(op: OpView) -> Support:
    """TRANSPOSE_CONV: static 4-element output shape, channel agreement, padding geometry."""
    shp_t, w, x = op.inputs[0], op.inputs[1], op.inputs[2]
    if op.dtype(shp_t) != DType.INT32:
        return Support(False, "output shape tensor must be INT32")
    if len(op.shape(shp_t)) != 1 or not op.sg.tensor_is_constant[shp_t]:
        return Support(False, "output shape must be a static 1-D tensor")
    if op.shape(shp_t)[0] != 4:
        return Support(False, "4 output shape dimensions expected")
    out = _values(op, 0)
    wd, xd = op.shape(w), op.shape(x)
    if out is None or len(wd) != 4 or len(xd) != 4:
        return OK
    oc, kh, kw, ic = wd
    if oc != int(out[3]):
        return Support(False, "kernel output channels do not match the output shape")
    if ic != xd[3]:
        return Support(False, "kernel input channels do not match the input")
    sh, sw = int(opt(op, "stride_h")), int(opt(op, "stride_w"))
    oh, ow = int(out[1]), int(out[2])
    if opt(op, "padding", "SAME") == "VALID":
        if kh > oh or kw > ow:
            return Support(False, "output smaller than effective kernel with VALID padding")
        return OK
    if sh <= 0 or sw <= 0:
        return Support(False, "invalid strides")
    # SAME: the input size implied by the output must be the actual input size.
    if (oh + sh - 1) // sh != xd[1] or (ow + sw - 1) // sw != xd[2]:
        return Support(False, "inconsistent combination of parameters for TRANSPOSE_CONV")
    if kh < sh or kw < sw:
        return Support(False, "strides larger than effective kernel dimensions")
    return OK


@predicate("xnn_batch_matmul")
def xnn_batch_matmul(op: OpView) -> Support:
    """BATCH_MATMUL: both operands have rank >= 2."""
    for k in (0, 1):
        r = len(op.shape(op.inputs[k]))
        if r < 2:
            return Support(False, f"unsupported number of dimensions {r}, must be at least 2")
    return OK


@predicate("xnn_sdpa")
def xnn_sdpa(op: OpView) -> Support:
    """odml.scaled_dot_product_attention: f32 q/k/v(/mask), matching head dimensions."""
    ts = [t for t in op.inputs if t >= 0] + [op.outputs[0]]
    for t in ts:
        if op.dtype(t) != DType.FLOAT32:
            return Support(False, f"unsupported type {op.dtype(t).name} in tensor #{t}")
    q, k, v = (op.shape(op.inputs[i]) for i in range(3))
    if not q or not k or not v or not (q[-1] == k[-1] == v[-1]):
        return Support(False, "head dimensions of query, key and value differ")
    if len(op.inputs) > 3 and op.inputs[3] >= 0:
        m = op.shape(op.inputs[3])
        if len(k) < 2 or len(v) < 2 or not m or k[1] != m[-1] or v[1] != m[-1]:
            return Support(False, "mask does not match the key/value sequence length")
    return OK


@predicate("xnn_composite_sdpa")
def xnn_composite_sdpa(op: OpView) -> Support:
    """STABLEHLO_COMPOSITE: only ``odml.scaled_dot_product_attention`` is accepted."""
    name = op.option("name", "")
    if name != "odml.scaled_dot_product_attention":
        return Support(False, f"unsupported stablehlo.composite operator type {name!r}")
    return xnn_sdpa(op)


@predicate("xnn_types", arg=dict)
def xnn_types(op: OpView, spec: dict[str, str]) -> Support:
    """Each slot's tensors pass the named XNNPACK type class (``{in0: F32_OR_Q8, ...}``)."""
    for slot, cls in spec.items():
        for t in slot_tensors(op, slot):
            err = check_type_class(op, t, cls)
            if err:
                return Support(False, err)
    return OK


@predicate("xnn_shape", arg=dict(slot=str, min=int, max=int))
def xnn_shape(op: OpView, a: dict[str, Any]) -> Support:
    """``CheckTensorShape``: rank in [min, max] and every dimension > 0."""
    lo, hi = a.get("min", 0), a.get("max", XNN_MAX_TENSOR_DIMS)
    for t in slot_tensors(op, a["slot"]):
        shp = op.shape(t)
        if not lo <= len(shp) <= hi:
            want = f"{lo}" if lo == hi else (f"at least {lo}" if len(shp) < lo else f"at most {hi}")
            return Support(
                False,
                f"unsupported number of shape dimensions ({len(shp)}) in tensor #{t}: "
                f"{want} dimensions expected",
            )
        for i, d in enumerate(shp):
            if d <= 0:
                return Support(False, f"invalid num of elements ({d}) in dimension #{i} of #{t}")
    return OK


@predicate("xnn_static", arg=list)
def xnn_static(op: OpView, slots: tuple[str, ...]) -> Support:
    """Tensors are static read-only (constants, or quasi-static unpacked weights)."""
    for slot in slots:
        for t in slot_tensors(op, slot):
            if not op.is_static(t):
                return Support(
                    False,
                    f"invalid allocation type in tensor #{t}: expected static read-only tensor",
                )
    return OK


@predicate("xnn_static_strict", arg=list)
def xnn_static_strict(op: OpView, slots: tuple[str, ...]) -> Support:
    """Tensors are buffer-backed constants (quasi-static ones do not count)."""
    for slot in slots:
        for t in slot_tensors(op, slot):
            if not op.sg.tensor_is_constant[t]:
                return Support(
                    False,
                    f"invalid allocation type in tensor #{t}: expected static read-only tensor",
                )
    return OK


@predicate("xnn_binary_scales")
def xnn_binary_scales(op: OpView) -> Support:
    """ADD/SUB: input/output scale ratio in [1/1024, 256); MUL: product/output in [2^-16, 256)."""
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if op.dtype(a) != op.dtype(b) or op.dtype(a) != op.dtype(y):
        return OK
    if op.dtype(a) not in (DType.INT8, DType.UINT8):
        return OK
    f32 = np.float32
    if op.name == "MUL":
        r = f32(f32(quant_scale(op, a)) * f32(quant_scale(op, b))) / f32(quant_scale(op, y))
        if not f32(1.0 / 65536.0) <= r < f32(256.0):
            return Support(False, "unsupported input-product-to-output scale")
        return OK
    for t in (a, b):
        r = f32(quant_scale(op, t)) / f32(quant_scale(op, y))
        if not f32(1.0 / 1024.0) <= r < f32(256.0):
            return Support(False, "unsupported input-to-output scale")
    return OK


@predicate("xnn_conv_params")
def xnn_conv_params(op: OpView) -> Support:
    """Strides and dilation factors are positive."""
    for k in ("stride_w", "stride_h", "dilation_w_factor", "dilation_h_factor"):
        if int(opt(op, k)) <= 0:
            return Support(False, f"invalid {k} {opt(op, k)}")
    return OK


@predicate("xnn_depthwise_params")
def xnn_depthwise_params(op: OpView) -> Support:
    """Positive strides/dilations; depth multiplier positive and dividing the output channels."""
    s = xnn_conv_params(op)
    if not s.ok:
        return s
    dm = int(opt(op, "depth_multiplier"))
    if dm <= 0:
        return Support(False, f"invalid depth multiplier {dm}")
    oc = op.shape(op.inputs[1])[3]
    if oc % dm != 0:
        return Support(False, f"depth multiplier {dm} is incompatible with {oc} output channels")
    return OK


@predicate("xnn_pool_params")
def xnn_pool_params(op: OpView) -> Support:
    """Pooling: positive strides/filter, stride <= filter, no 1x1 filter with stride > 1."""
    sw, sh = int(opt(op, "stride_w")), int(opt(op, "stride_h"))
    fw, fh = int(opt(op, "filter_width")), int(opt(op, "filter_height"))
    if min(sw, sh, fw, fh) <= 0:
        return Support(False, f"invalid pooling parameters (stride {sh}x{sw}, filter {fh}x{fw})")
    if sw > fw or sh > fh:
        return Support(False, f"unsupported stride {sh}x{sw} exceeding filter {fh}x{fw}")
    if fw == 1 and fh == 1 and max(sw, sh) > 1:
        return Support(False, f"unsupported pooling with 1x1 filter and {sw}x{sh} stride")
    return OK


@predicate("xnn_conv_types")
def xnn_conv_types(op: OpView) -> Support:
    """CONV_2D: input and output types match the filter's, or f32 input with int8 filter."""
    x, w, y = op.dtype(op.inputs[0]), op.dtype(op.inputs[1]), op.dtype(op.outputs[0])
    latest = op.context.get("xnnpack_latest_operators", True)
    dynamic = latest and x == DType.FLOAT32 and w == DType.INT8
    if x != y or (x != w and not dynamic):
        return Support(False, f"unsupported mixed types in {op.name} operator")
    if op.name == "CONV_2D":
        cin = op.shape(op.inputs[1])[3]
        if cin <= 0 or op.shape(op.inputs[0])[3] // cin == 0:
            return Support(False, "groups of zero is not supported by CONV_2D")
    return OK


@predicate("xnn_fully_connected")
def xnn_fully_connected(op: OpView) -> Support:
    """FULLY_CONNECTED: weights format, filter/bias types and staticness, mixed-type rules."""
    if op.version == 8:
        return Support(False, "Unsupported version 8 of FullyConnected")
    if opt(op, "weights_format", "DEFAULT") != "DEFAULT":
        return Support(False, "unsupported non-default weights format")
    dyn_fc = bool(op.context.get("xnnpack_dynamic_fully_connected", False))
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    err = check_type_class(op, x, "F32_OR_Q8")
    if err:
        return Support(False, err)
    s = xnn_shape(op, {"slot": "in1", "min": 2, "max": 2})
    if not s.ok:
        return s
    if not (dyn_fc and op.dtype(w) == DType.FLOAT32):
        err = check_type_class(op, w, "F32_OR_F16_OR_QC4_OR_QC8@0")
        if err:
            return Support(False, err)
        if not op.is_static(w):
            return Support(False, f"invalid allocation type in tensor #{w}: expected static")
    oc, ic = op.shape(w)
    if len(op.inputs) >= 3 and op.inputs[2] >= 0:
        b = op.inputs[2]
        if not (dyn_fc and op.dtype(b) == DType.FLOAT32):
            n = int(np.prod(op.shape(b), dtype=np.int64))
            if n != oc:
                return Support(False, f"mismatch between {n} bias elements and {oc} channels")
            err = check_type_class(op, b, "F32_OR_F16_OR_QC32")
            if err:
                return Support(False, err)
            if not op.is_static(b):
                return Support(False, f"invalid allocation type in tensor #{b}: expected static")
    err = check_type_class(op, y, "F32_OR_Q8")
    if err:
        return Support(False, err)
    xt, wt, yt = op.dtype(x), op.dtype(w), op.dtype(y)
    latest = op.context.get("xnnpack_latest_operators", True)
    dynamic = latest and xt == DType.FLOAT32 and wt in (DType.INT4, DType.INT8)
    srq = xt == DType.INT8 and wt in (DType.INT4, DType.INT8)
    if xt != yt or (xt != wt and not (dynamic or srq)):
        return Support(False, "unsupported mixed types in FULLY_CONNECTED operator")
    if wt == DType.INT4 and ic % 2 == 1:
        return Support(False, f"unsupported odd number of input channels ({ic})")
    return OK
