"""Small immutable value types of the IR: CSR index lists, op codes, options, quantization.

These are the per-item values the columnar :class:`~edgepart.ir.graph.Subgraph` hands out. They
are frozen and cheap; NumPy arrays inside them are read-only views and must not be mutated.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgepart.schema import opnames
from edgepart.schema.tables import TABLES

__all__ = [
    "Csr",
    "DimensionMetadata",
    "Metadata",
    "OpCode",
    "Options",
    "Quantization",
    "SignatureDef",
    "Sparsity",
]


@dataclass(frozen=True, slots=True, eq=False)
class Csr:
    """Rows of integers stored as one flat array ``idx`` cut at offsets ``ptr``.

    Row ``i`` is ``idx[ptr[i]:ptr[i + 1]]``. Used for op inputs/outputs and tensor shapes, so a
    100,000-op graph is a handful of arrays rather than 300,000 tuples.
    """

    ptr: np.ndarray
    idx: np.ndarray

    def __len__(self) -> int:
        return len(self.ptr) - 1

    def row(self, i: int) -> np.ndarray:
        return self.idx[self.ptr[i] : self.ptr[i + 1]]

    def row_tuple(self, i: int) -> tuple[int, ...]:
        return tuple(self.idx[self.ptr[i] : self.ptr[i + 1]].tolist())

    def lengths(self) -> np.ndarray:
        return np.diff(self.ptr)

    def row_ids(self) -> np.ndarray:
        """For every element of ``idx``, the row it belongs to."""
        return np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.ptr))

    def tolist(self) -> list[tuple[int, ...]]:
        flat = self.idx.tolist()
        p = self.ptr.tolist()
        return [tuple(flat[p[i] : p[i + 1]]) for i in range(len(p) - 1)]

    def take(self, rows: np.ndarray | Sequence[int]) -> Csr:
        """The CSR of the given rows, in the given order."""
        rows = np.asarray(rows, dtype=np.int64)
        lens = (self.ptr[rows + 1] - self.ptr[rows]) if len(rows) else np.zeros(0, np.int64)
        ptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lens, out=ptr[1:])
        if ptr[-1] == 0:
            return Csr(ptr, self.idx[:0].copy())
        starts = np.repeat(self.ptr[rows], lens)
        within = np.arange(ptr[-1], dtype=np.int64) - np.repeat(ptr[:-1], lens)
        return Csr(ptr, self.idx[starts + within])

    @staticmethod
    def from_rows(rows: Sequence[Sequence[int]], dtype: Any = np.int32) -> Csr:
        lens = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        ptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lens, out=ptr[1:])
        flat = [v for r in rows for v in r]
        return Csr(ptr, np.asarray(flat, dtype=dtype).reshape(-1))


@dataclass(frozen=True, slots=True)
class OpCode:
    """An entry of the model's operator-code table.

    ``builtin`` is the real builtin code, ``max(builtin_code, deprecated_builtin_code)``;
    ``custom_code`` is set for ``CUSTOM`` ops (and for Flex and Edge TPU ops).
    """

    builtin: int
    custom_code: str | None = None
    version: int = 1

    @property
    def name(self) -> str:
        """``CONV_2D`` for builtins; the custom code (``edgetpu-custom-op``) for custom ops."""
        if self.builtin == opnames.CUSTOM and self.custom_code is not None:
            return self.custom_code
        return opnames.builtin_name(self.builtin)

    @property
    def is_custom(self) -> bool:
        return self.builtin == opnames.CUSTOM


class Options(Mapping[str, Any]):
    """Decoded builtin options of one op: a read-only mapping with the options table's name.

    Enum fields hold the enum member's name (``"RELU6"``, ``"SAME"``), vectors hold tuples, byte
    vectors hold ``bytes``. Options are hashable, so support and cost decisions can be memoized
    on them.

    >>> o = Options("SoftmaxOptions", {"beta": 1.0})
    >>> o.type, o["beta"]
    ('SoftmaxOptions', 1.0)
    """

    __slots__ = ("_fields", "_hash", "type")

    def __init__(self, type: str, fields: Mapping[str, Any], *, canonical: bool = False) -> None:
        self.type = type
        # Fields are kept in schema slot order, so equal options hash equal without sorting.
        # The reader decodes in that order already and passes canonical=True.
        if canonical:
            self._fields = dict(fields)
        else:
            order = _SLOT_ORDER.get(type, {})
            self._fields = dict(
                sorted(fields.items(), key=lambda kv: (order.get(kv[0], 1 << 30), kv[0]))
            )
        self._hash: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __hash__(self) -> int:
        if self._hash is None:
            items = tuple(self._fields.items())
            try:  # scalars, strings and tuples hash as they are (equal options, equal values)
                self._hash = hash((self.type, items))
            except TypeError:  # nested tables (dicts) or lists: hash a frozen copy
                self._hash = hash((self.type, _freeze(items)))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Options):
            return NotImplemented
        return self.type == other.type and self._fields == other._fields

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._fields.items())
        return f"{self.type}({inner})"

    def replace(self, **changes: Any) -> Options:
        return Options(self.type, {**self._fields, **changes})


def _freeze(v: Any) -> Any:
    """A hashable stand-in for option values (nested tables are dicts, vectors tuples)."""
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    return v


_SLOT_ORDER: dict[str, dict[str, int]] = {
    t: {f[0]: f[1] for f in fields} for t, fields in TABLES.items()
}


@dataclass(frozen=True, slots=True, eq=False)
class Quantization:
    """Affine quantization: ``real = scale * (q - zero_point)``.

    Per-tensor when ``scale`` has one entry; per-channel along ``quantized_dimension`` when it has
    one per channel. ``details`` carries the schema's custom/blockwise variants undecoded.
    """

    scale: np.ndarray
    zero_point: np.ndarray
    quantized_dimension: int = 0
    min: np.ndarray | None = None
    max: np.ndarray | None = None
    details: Options | None = None

    @property
    def is_per_channel(self) -> bool:
        return len(self.scale) > 1

    @property
    def is_empty(self) -> bool:
        """True for the placeholder quantization the converter puts on float tensors."""
        return (
            len(self.scale) == 0
            and len(self.zero_point) == 0
            and (self.min is None or len(self.min) == 0)
            and (self.max is None or len(self.max) == 0)
            and self.details is None
        )

    def key(self) -> tuple[Any, ...]:
        """A hashable summary (for memoization and equality checks)."""
        return (
            tuple(self.scale.tolist()),
            tuple(self.zero_point.tolist()),
            self.quantized_dimension,
            None if self.min is None else tuple(self.min.tolist()),
            None if self.max is None else tuple(self.max.tolist()),
            self.details,
        )


@dataclass(frozen=True, slots=True, eq=False)
class DimensionMetadata:
    """One dimension of a sparse tensor's TACO-style encoding."""

    format: str  # "DENSE" or "SPARSE_CSR"
    dense_size: int = 0
    array_segments: np.ndarray | None = None
    array_indices: np.ndarray | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Sparsity:
    """Sparse storage of a constant tensor (consumed by a DENSIFY op)."""

    traversal_order: tuple[int, ...]
    block_map: tuple[int, ...]
    dim_metadata: tuple[DimensionMetadata, ...]


@dataclass(frozen=True, slots=True)
class Metadata:
    """A named metadata entry; ``buffer`` indexes the model's buffer table."""

    name: str
    buffer: int


@dataclass(frozen=True, slots=True)
class SignatureDef:
    """A named entry point: input and output names mapped to tensor indices of a subgraph."""

    key: str
    subgraph: int
    inputs: tuple[tuple[str, int], ...] = field(default=())
    outputs: tuple[tuple[str, int], ...] = field(default=())
