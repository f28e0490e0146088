"""TFLite tensor element types.

:class:`DType` mirrors the schema's ``TensorType`` enum value for value, so a dtype read from a
file is the enum member itself. ``bits`` is the storage width per element (sub-byte types pack
several elements per byte), ``numpy`` the NumPy dtype a tensor of that type is viewed as (or
``None`` where NumPy has no equivalent: int4/int2/uint4, float8, resource, variant, string).
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

__all__ = ["DType"]


class DType(enum.IntEnum):
    """Element type of a tensor, numbered as in the TFLite schema's ``TensorType``."""

    FLOAT32 = 0
    FLOAT16 = 1
    INT32 = 2
    UINT8 = 3
    INT64 = 4
    STRING = 5
    BOOL = 6
    INT16 = 7
    COMPLEX64 = 8
    INT8 = 9
    FLOAT64 = 10
    COMPLEX128 = 11
    UINT64 = 12
    RESOURCE = 13
    VARIANT = 14
    UINT32 = 15
    UINT16 = 16
    INT4 = 17
    BFLOAT16 = 18
    INT2 = 19
    UINT4 = 20
    FLOAT8_E4M3FN = 21
    FLOAT8_E5M2 = 22

    @property
    def bits(self) -> int:
        """Storage bits per element; 0 for types without a fixed element size."""
        return _BITS[self]

    @property
    def numpy(self) -> np.dtype[Any] | None:
        """The NumPy dtype elements are viewed as, or ``None`` if NumPy has none."""
        return _NUMPY.get(self)

    @property
    def is_float(self) -> bool:
        return self in _FLOATS

    @property
    def is_quantized_int(self) -> bool:
        """Integer types that carry affine-quantized real values in TFLite models."""
        return self in (DType.INT8, DType.UINT8, DType.INT16, DType.INT4, DType.UINT4, DType.INT2)

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any] | type) -> DType:
        """The DType for a NumPy dtype; raises ``KeyError`` for types TFLite lacks."""
        return _FROM_NUMPY[np.dtype(dtype)]

    def nbytes(self, num_elements: int) -> int:
        """Bytes needed to store ``num_elements`` elements (sub-byte types packed)."""
        return (num_elements * self.bits + 7) // 8


_BITS = {
    DType.FLOAT32: 32,
    DType.FLOAT16: 16,
    DType.INT32: 32,
    DType.UINT8: 8,
    DType.INT64: 64,
    DType.STRING: 0,
    DType.BOOL: 8,
    DType.INT16: 16,
    DType.COMPLEX64: 64,
    DType.INT8: 8,
    DType.FLOAT64: 64,
    DType.COMPLEX128: 128,
    DType.UINT64: 64,
    DType.RESOURCE: 0,
    DType.VARIANT: 0,
    DType.UINT32: 32,
    DType.UINT16: 16,
    DType.INT4: 4,
    DType.BFLOAT16: 16,
    DType.INT2: 2,
    DType.UINT4: 4,
    DType.FLOAT8_E4M3FN: 8,
    DType.FLOAT8_E5M2: 8,
}

_NUMPY: dict[DType, np.dtype[Any]] = {
    DType.FLOAT32: np.dtype("<f4"),
    DType.FLOAT16: np.dtype("<f2"),
    DType.INT32: np.dtype("<i4"),
    DType.UINT8: np.dtype("u1"),
    DType.INT64: np.dtype("<i8"),
    DType.BOOL: np.dtype("?"),
    DType.INT16: np.dtype("<i2"),
    DType.COMPLEX64: np.dtype("<c8"),
    DType.INT8: np.dtype("i1"),
    DType.FLOAT64: np.dtype("<f8"),
    DType.COMPLEX128: np.dtype("<c16"),
    DType.UINT64: np.dtype("<u8"),
    DType.UINT32: np.dtype("<u4"),
    DType.UINT16: np.dtype("<u2"),
}

_FROM_NUMPY: dict[np.dtype[Any], DType] = {v.newbyteorder("="): k for k, v in _NUMPY.items()}
_FROM_NUMPY.update({v: k for k, v in _NUMPY.items()})

_FLOATS = frozenset(
    {
        DType.FLOAT32,
        DType.FLOAT16,
        DType.FLOAT64,
        DType.BFLOAT16,
        DType.FLOAT8_E4M3FN,
        DType.FLOAT8_E5M2,
    }
)
