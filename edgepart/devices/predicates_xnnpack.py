"""Predicates that mirror the XNNPACK delegate's per-node checks (``xnnpack_delegate.cc``).

XNNPACK decides support in ``Subgraph::VisitNode`` with a family of tensor-type checks
(``CheckTensorFloat32OrQUInt8Type`` and friends), shape checks (``CheckTensorShape``: rank range and
every dimension > 0), static-allocation checks and op-specific parameter checks. The predicates
below reproduce those checks; the reasons paraphrase the delegate's (normally suppressed) log
messages. Type classes used in ``xnn_types``:

``F32``, ``FLOAT`` (f32/f16), ``F32_OR_QS8``, ``QS8_OR_QU8``, ``F32_OR_Q8`` (f32, per-tensor int8 or
uint8; the delegate's misnamed ``CheckTensorFloat32OrQUInt8Type``), ``F32_OR_QC8@d`` (filters,
per-channel int8 along dim ``d``), ``F32_OR_F16_OR_QC4_OR_QC8@d``, ``F32_OR_F16_OR_QC32`` (biases),
``INT32``, ``INT32_OR_INT64``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from edgepart.devices.capability import OK, OpView, Support, predicate
from edgepart.devices.predicates import opt, slot_tensors
from edgepart.ir.dtypes import DType

__all__ = ["XNN_MAX_TENSOR_DIMS", "check_type_class", "type_classes"]

XNN_MAX_TENSOR_DIMS = 6
_F32, _F16, _I8, _U8, _I32, _I64, _I4 = (
    DType.FLOAT32,
    DType.FLOAT16,
    DType.INT8,
    DType.UINT8,
    DType.INT32,
    DType.INT64,
    DType.INT4,
)


def _normal_positive(x: float) -> bool:
    return math.isfinite(x) and x > 0 and x >= np.finfo(np.float32).tiny


def _affine(op: OpView, t: int) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(scales, zero points, quantized dim) if TFLite would see affine quantization."""
    q = op.tensor(t).quantization
    if q is None or len(q.scale) == 0 or q.details is not None:
        return None
    return q.scale, q.zero_point, q.quantized_dimension


def _blockwise(op: OpView, t: int) -> Any:
    q = op.tensor(t).quantization
    if q is not None and q.details is not None and q.details.type == "BlockwiseQuantization":
        return q.details
    return None


def _bad_type(op: OpView, t: int) -> str:
    return f"unsupported type {op.dtype(t).name} in tensor #{t}"


def _per_tensor_q8(op: OpView, t: int, unsigned: bool) -> str | None:
    a = _affine(op, t)
    if a is None or a[2] != 0 or len(a[0]) != 1 or (unsigned and len(a[1]) != 1):
        return f"unsupported quantization in tensor #{t}"
    return None


def _qs8_or_qu8(op: OpView, t: int) -> str | None:
    dt = op.dtype(t)
    if dt in (_I8, _U8):
        return _per_tensor_q8(op, t, dt == _U8)
    return _bad_type(op, t)


def _f32_or_q8(op: OpView, t: int) -> str | None:
    return None if op.dtype(t) == _F32 else _qs8_or_qu8(op, t)


def _f32_or_qs8(op: OpView, t: int) -> str | None:
    dt = op.dtype(t)
    if dt == _F32:
        return None
    return _per_tensor_q8(op, t, False) if dt == _I8 else _bad_type(op, t)


def _f32_or_qc8(op: OpView, t: int, dim: int) -> str | None:
    dt = op.dtype(t)
    if dt == _F32:
        return None
    if dt == _I8:
        a = _affine(op, t)
        if a is None:
            return f"unsupported quantization type in tensor #{t}"
        scale, zp, qdim = a
        if len(scale) > 1:
            shp = op.shape(t)
            if qdim != dim:
                return f"unsupported quantized dimension {qdim} in tensor #{t}"
            if (
                qdim >= len(shp)
                or shp[qdim] != len(scale)
                or int(zp[0]) != 0
                or not all(_normal_positive(float(s)) for s in scale)
            ):
                return f"channelwise quantized tensor #{t} has invalid quantization parameters"
            return None
        if not -128 <= int(zp[0]) <= 127 or not _normal_positive(float(scale[0])):
            return f"quantized tensor #{t} has invalid quantization parameters"
        return None
    if dt == _U8:
        err = _per_tensor_q8(op, t, True)
        if err:
            return err
        a = _affine(op, t)
        assert a is not None
        if not 0 <= int(a[1][0]) <= 255 or not _normal_positive(float(a[0][0])):
            return f"quantized tensor #{t} has invalid quantization parameters"
        return None
    return _bad_type(op, t)


def _f32_f16_qc4_qc8(op: OpView, t: int, dim: int) -> str | None:
    dt = op.dtype(t)
    if dt in (_F32, _F16):
        return None
    if dt in (_I8, _I4):
        bw = _blockwise(op, t)
        if bw is not None:
            if int(bw.get("block_size", bw.get("blocksize", 0))) % 32 != 0:
                return f"blocksize must be a multiple of 32 in tensor #{t}"
            return None
        a = _affine(op, t)
        if a is None:
            return None  # the delegate logs "unsupported quantization type" but accepts it
        scale, _, qdim = a
        if len(scale) > 1 and qdim != dim:
            return f"unsupported quantized dimension {qdim} in tensor #{t}"
        shp = op.shape(t)
        if dt == _I4 and (qdim >= len(shp) or len(scale) != shp[qdim]):
            return f"4 bit weights must be per channel quantized in tensor #{t}"
        return None
    if dt == _U8:
        return _per_tensor_q8(op, t, True)
    return _bad_type(op, t)


def _f32_f16_qc32(op: OpView, t: int) -> str | None:
    dt = op.dtype(t)
    if dt in (_F32, _F16):
        return None
    if dt == _I32:
        a = _affine(op, t)
        if a is None or a[2] != 0:
            return f"unsupported quantization type in tensor #{t}"
        scale, zp, _ = a
        shp = op.shape(t)
        if len(scale) > 1:
            if not shp or shp[0] != len(scale) or any(int(z) != 0 for z in zp[:1]):
                return f"channelwise quantized tensor #{t} has invalid quantization parameters"
            if not all(_normal_positive(float(s)) for s in scale):
                return f"channelwise quantized tensor #{t} has invalid quantization parameters"
            return None
        if int(zp[0]) != 0 or not _normal_positive(float(scale[0])):
            return f"quantized tensor #{t} has invalid quantization parameters"
        return None
    return _bad_type(op, t)


def _exact(*types: DType) -> Any:
    def check(op: OpView, t: int) -> str | None:
        return None if op.dtype(t) in types else _bad_type(op, t)

    return check


_CLASSES: dict[str, Any] = {
    "F32": _exact(_F32),
    "FLOAT": _exact(_F32, _F16),
    "F32_OR_QS8": _f32_or_qs8,
    "QS8_OR_QU8": _qs8_or_qu8,
    "F32_OR_Q8": _f32_or_q8,
    "F32_OR_F16_OR_QC32": _f32_f16_qc32,
    "INT32": _exact(_I32),
    "INT32_OR_INT64": _exact(_I32, _I64),
}
_DIM_CLASSES: dict[str, Any] = {
    "F32_OR_QC8": _f32_or_qc8,
    "F32_OR_F16_OR_QC4_OR_QC8": _f32_f16_qc4_qc8,
}


def type_classes() -> list[str]:
    """Names accepted by ``xnn_types`` (``@d`` classes take a dimension or ``adj_y``)."""
    return sorted(_CLASSES) + [f"{k}@d" for k in sorted(_DIM_CLASSES)]


def check_type_class(op: OpView, t: int, cls: str) -> str | None:
    """Apply one XNNPACK type class to tensor ``t``; None if it passes, else the reason."""
    if "@" in cls:
        base, dim_s = cls.split("@", 1)
        if dim_s == "adj_y":  # BATCH_MATMUL's B: channels are the last or second-last dim
            rank = len(op.shape(t))
            dim = rank - 2 if op.option("adj_y", False) else rank - 1
        else:
            dim = int(dim_s)
        return _DIM_CLASSES[base](op, t, dim)  # type: ignore[no-any-return]
    return _CLASSES[cls](op, t)  # type: ignore[no-any-return]


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


def _scale(op: OpView, t: int) -> float:
    a = _affine(op, t)
    return float(a[0][0]) if a is not None and len(a[0]) == 1 else 0.0


@predicate("xnn_binary_scales")
def xnn_binary_scales(op: OpView) -> Support:
    """ADD/SUB: input/output scale ratio in [1/1024, 256); MUL: product/output in [2^-16, 256)."""
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if op.dtype(a) != op.dtype(b) or op.dtype(a) != op.dtype(y):
        return OK
    if op.dtype(a) not in (_I8, _U8):
        return OK
    f32 = np.float32
    if op.name == "MUL":
        r = f32(f32(_scale(op, a)) * f32(_scale(op, b))) / f32(_scale(op, y))
        if not f32(1.0 / 65536.0) <= r < f32(256.0):
            return Support(False, "unsupported input-product-to-output scale")
        return OK
    for t in (a, b):
        r = f32(_scale(op, t)) / f32(_scale(op, y))
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
    dynamic = op.context.get("xnnpack_latest_operators", True) and x == _F32 and w == _I8
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
    err = _f32_or_q8(op, x)
    if err:
        return Support(False, err)
    s = xnn_shape(op, {"slot": "in1", "min": 2, "max": 2})
    if not s.ok:
        return s
    if not (dyn_fc and op.dtype(w) == _F32):
        err = _f32_f16_qc4_qc8(op, w, 0)
        if err:
            return Support(False, err)
        if not op.is_static(w):
            return Support(False, f"invalid allocation type in tensor #{w}: expected static")
    oc, ic = op.shape(w)
    if len(op.inputs) >= 3 and op.inputs[2] >= 0:
        b = op.inputs[2]
        if not (dyn_fc and op.dtype(b) == _F32):
            n = int(np.prod(op.shape(b), dtype=np.int64))
            if n != oc:
                return Support(False, f"mismatch between {n} bias elements and {oc} channels")
            err = _f32_f16_qc32(op, b)
            if err:
                return Support(False, err)
            if not op.is_static(b):
                return Support(False, f"invalid allocation type in tensor #{b}: expected static")
    err = _f32_or_q8(op, y)
    if err:
        return Support(False, err)
    xt, wt, yt = op.dtype(x), op.dtype(w), op.dtype(y)
    latest = op.context.get("xnnpack_latest_operators", True)
    dynamic = latest and xt == _F32 and wt in (_I4, _I8)
    srq = xt == _I8 and wt in (_I4, _I8)
    if xt != yt or (xt != wt and not (dynamic or srq)):
        return Support(False, "unsupported mixed types in FULLY_CONNECTED operator")
    if wt == _I4 and ic % 2 == 1:
        return Support(False, f"unsupported odd number of input channels ({ic})")
    return OK
