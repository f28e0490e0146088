"""XNNPACK's tensor type classes (the ``CheckTensor*Type`` checks of ``xnnpack_delegate.cc``).

Type classes used in the ``xnn_types`` predicate and by XNNPACK's node selection
(:mod:`edgepart.claim.helpers`):

``F32``, ``FLOAT`` (f32/f16), ``F32_OR_QS8``, ``QS8_OR_QU8``, ``F32_OR_Q8`` (f32, per-tensor int8 or
uint8; the delegate's misnamed ``CheckTensorFloat32OrQUInt8Type``), ``F32_OR_QC8@d`` (filters,
per-channel int8 along dim ``d``), ``F32_OR_F16_OR_QC4_OR_QC8@d``, ``F32_OR_F16_OR_QC32`` (biases),
``INT32``, ``INT32_OR_INT64``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from edgepart.devices.capability import OpView
from edgepart.ir.dtypes import DType

__all__ = [
    "XNN_MAX_TENSOR_DIMS",
    "affine_params",
    "check_type_class",
    "quant_scale",
    "type_classes",
]

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


def affine_params(op: OpView, t: int) -> tuple[np.ndarray, np.ndarray, int] | None:
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
    a = affine_params(op, t)
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
        a = affine_params(op, t)
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
        a = affine_params(op, t)
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
        a = affine_params(op, t)
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
        a = affine_params(op, t)
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


def quant_scale(op: OpView, t: int) -> float:
    """The per-tensor scale of ``t`` (0.0 when it is not per-tensor quantized)."""
    a = affine_params(op, t)
    return float(a[0][0]) if a is not None and len(a[0]) == 1 else 0.0
