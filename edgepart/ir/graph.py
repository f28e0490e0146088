"""The op-graph IR: :class:`Model`, :class:`Subgraph`, and the :class:`Tensor` / :class:`Op` views.

A subgraph is stored *by column*: one NumPy array per scalar attribute (op code, tensor dtype,
buffer index, ...) and :class:`~edgepart.ir.values.Csr` arrays for the variable-length ones (op
inputs and outputs, tensor shapes). Indices are the flatbuffer's own tensor and op indices, so
everything maps back to the file.

Why columns and not one object per op: the reader fills these arrays with a few dozen vectorized
NumPy calls whatever the model size (MobileNetV2 parses in well under a millisecond, 100,000 ops
in tens of milliseconds), and graph analyses (producers, consumers, topological order, live
bytes) run on arrays. Per-item objects are still there for humans: ``sg.op(i)`` and
``sg.tensor(i)`` build frozen :class:`Op` / :class:`Tensor` values on demand. Attributes that are
costly to decode and rarely needed (names, options, quantization, sparsity) are decoded lazily,
once, after the reader has verified their bytes.

The IR is immutable: transformations build new subgraphs (see :mod:`edgepart.ir.builder` and
:func:`edgepart.ir.slicing.extract`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, TypeVar, overload

import numpy as np

from edgepart.ir.dtypes import DType
from edgepart.ir.values import (
    Csr,
    Metadata,
    OpCode,
    Options,
    Quantization,
    SignatureDef,
    Sparsity,
)

__all__ = ["BufferTable", "LazySeq", "Model", "Op", "Subgraph", "Tensor"]

T = TypeVar("T")


class LazySeq(Sequence[T], Generic[T]):
    """A read-only sequence whose items are decoded on first access and then cached."""

    __slots__ = ("_cache", "_decode", "_n")

    _MISSING: Any = object()

    def __init__(self, n: int, decode: Callable[[int], T]) -> None:
        self._n = n
        self._decode = decode
        self._cache: list[Any] = [LazySeq._MISSING] * n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[T]: ...

    def __getitem__(self, i: int | slice) -> T | Sequence[T]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        v = self._cache[i]
        if v is LazySeq._MISSING:
            v = self._cache[i] = self._decode(i)
        return v  # type: ignore[no-any-return]


_BUFFER_COLUMNS = frozenset({"mem", "start", "length", "external"})


class BufferTable:
    """The model's buffers, each a byte range of one of a few backing memories.

    ``mems`` are the backing objects (the mmapped file for a read model, ``bytes`` for built
    data); buffer ``i`` is ``mems[mem[i]][start[i] : start[i] + length[i]]``. ``external[i]`` is
    true when the file stored it after the flatbuffer (the offset/size layout of >2 GB models).
    Reading data through :meth:`data` never copies.

    A table made by :meth:`deferred` knows only how many buffers there are until one of the
    columns is first read; then it calls its loader once (the reader verifies the file's
    Buffer tables there, so a defect in them raises at that point).
    """

    __slots__ = ("_count", "_load", "external", "length", "mem", "mems", "start")

    mems: tuple[Any, ...]
    mem: np.ndarray
    start: np.ndarray
    length: np.ndarray
    external: np.ndarray

    def __init__(
        self,
        mems: tuple[Any, ...],
        mem: np.ndarray,
        start: np.ndarray,
        length: np.ndarray,
        external: np.ndarray,
    ) -> None:
        self.mems = mems
        self.mem, self.start, self.length, self.external = mem, start, length, external
        self._count = len(start)
        self._load: Callable[[], tuple[np.ndarray, ...]] | None = None

    @classmethod
    def deferred(
        cls, count: int, mems: tuple[Any, ...], load: Callable[[], tuple[np.ndarray, ...]]
    ) -> BufferTable:
        """A table of ``count`` buffers whose columns ``load()`` returns on first use, as
        ``(mem, start, length, external)``. If ``load`` raises, the next use calls it again."""
        table = cls.__new__(cls)
        table.mems = mems
        table._count = count
        table._load = load
        return table

    def __getattr__(self, name: str) -> Any:
        # Reached only while a column slot is unset, that is before a deferred table's load.
        load = self._load
        if load is None or name not in _BUFFER_COLUMNS:
            raise AttributeError(name)
        self.mem, self.start, self.length, self.external = load()
        self._load = None
        return getattr(self, name)

    def __len__(self) -> int:
        return self._count

    @property
    def present(self) -> np.ndarray:
        """Per buffer: True if it has a data vector (even an empty one) or external data.

        LiteRT makes a tensor read-only constant whenever its buffer's ``data`` vector is
        present, also when that vector is empty (the zero-element shape tensor of a RESHAPE to
        a scalar); an absent vector makes it an activation. The reader keeps the distinction as
        ``start > 0`` for empty vectors (absent ones have ``start == 0``).
        """
        out: np.ndarray = (self.length > 0) | (self.start > 0) | self.external
        return out

    def data(self, i: int) -> np.ndarray:
        """Buffer ``i`` as a read-only uint8 view (empty for buffers without data)."""
        n = int(self.length[i])
        if n == 0:
            return np.zeros(0, np.uint8)
        return np.frombuffer(self.mems[int(self.mem[i])], np.uint8, n, int(self.start[i]))

    @staticmethod
    def from_blobs(blobs: Sequence[bytes | np.ndarray | None]) -> BufferTable:
        """A table over freshly built data (``None`` for empty buffers).

        Each blob stays its own backing memory (arrays are viewed as bytes, not copied), so
        building a model with gigabytes of weights costs no second copy of them.
        """
        mems: list[Any] = [b""]
        mem = np.zeros(len(blobs), dtype=np.int32)
        lengths = np.zeros(len(blobs), dtype=np.int64)
        starts = np.zeros(len(blobs), dtype=np.int64)
        for i, b in enumerate(blobs):
            if b is None:
                continue
            view = np.ascontiguousarray(b).reshape(-1).view(np.uint8)
            if len(view) == 0:
                starts[i] = 1 if i > 0 else 0  # an empty but present data vector
                continue
            mem[i] = len(mems)
            mems.append(view)
            lengths[i] = len(view)
        return BufferTable(
            mems=tuple(mems),
            mem=mem,
            start=starts,
            length=lengths,
            external=np.zeros(len(blobs), dtype=bool),
        )


@dataclass(frozen=True, slots=True, eq=False)
class Tensor:
    """One tensor of a subgraph (a view built on demand by :meth:`Subgraph.tensor`)."""

    index: int
    name: str
    dtype: DType
    shape: tuple[int, ...]
    shape_signature: tuple[int, ...] | None
    buffer: int
    is_constant: bool
    quantization: Quantization | None
    is_variable: bool = False
    sparsity: Sparsity | None = None
    has_rank: bool = False
    nbytes: int = 0
    data: np.ndarray | None = None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_dynamic(self) -> bool:
        """True if the shape signature has an unknown (-1) dimension."""
        return self.shape_signature is not None and -1 in self.shape_signature

    def numpy(self) -> np.ndarray:
        """The constant's value as a read-only array of its shape (no copy)."""
        if self.data is None:
            raise ValueError(f"tensor {self.index} ({self.name!r}) is not a constant")
        np_dtype = self.dtype.numpy
        if np_dtype is None or self.sparsity is not None:
            return self.data
        out: np.ndarray = self.data.view(np_dtype).reshape(self.shape)
        return out


@dataclass(frozen=True, slots=True, eq=False)
class Op:
    """One operator of a subgraph (a view built on demand by :meth:`Subgraph.op`).

    ``inputs`` uses -1 for an omitted optional input, as in the file.
    """

    index: int
    opcode: OpCode
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    intermediates: tuple[int, ...] = ()
    options: Options | None = None
    options2: Options | None = None
    custom_options: bytes | None = None
    custom_options_format: str = "FLEXBUFFERS"
    mutating_variable_inputs: tuple[bool, ...] = ()
    debug_metadata_index: int = -1

    @property
    def name(self) -> str:
        return self.opcode.name

    @property
    def subgraph_refs(self) -> tuple[int, ...]:
        """Subgraphs this op calls (IF/WHILE/CALL_ONCE bodies, composite decompositions)."""
        return subgraph_refs(self.options) + subgraph_refs(self.options2)


def subgraph_refs(options: Options | None) -> tuple[int, ...]:
    """Subgraph indices named by an options table (fields ending in ``subgraph_index``)."""
    if options is None:
        return ()
    return tuple(
        int(v)
        for k, v in options.items()
        if (k.endswith("subgraph_index") or k.endswith("subgraph_indices")) and isinstance(v, int)
    )


@dataclass(frozen=True, eq=False)
class Subgraph:
    """One subgraph of a model, stored by column (see the module docstring).

    Tensor columns have one entry per tensor, op columns one per op. ``opcodes`` and ``buffers``
    are the owning model's tables, shared, so a subgraph can describe its ops and constants alone.
    """

    name: str | None
    inputs: np.ndarray
    outputs: np.ndarray
    # ---- ops
    op_opcode: np.ndarray  # int32 index into opcodes
    op_inputs: Csr
    op_outputs: Csr
    op_intermediates: Csr
    op_options: Sequence[Options | None]
    op_options2: Sequence[Options | None]
    op_custom_options: Sequence[bytes | None]
    op_extra: Sequence[dict[str, Any]]  # rarely used fields, {} for most ops
    # ---- tensors
    tensor_dtype: np.ndarray  # int8 TensorType
    tensor_buffer: np.ndarray  # int64
    tensor_shape: Csr
    tensor_signature: Csr  # rows empty where has_signature is false
    tensor_has_signature: np.ndarray
    tensor_is_variable: np.ndarray
    tensor_has_rank: np.ndarray
    tensor_names: Sequence[str]
    tensor_quantization: Sequence[Quantization | None]
    tensor_sparsity: Sequence[Sparsity | None]
    tensor_extra: Sequence[dict[str, Any]]
    # ---- shared model tables
    opcodes: tuple[OpCode, ...]
    buffers: BufferTable
    debug_metadata_index: int = -1
    # what shape propagation learned (edgepart.ir.shapes.SubgraphShapes), or None when the
    # shapes are the file's own
    shape_info: Any = None

    # ------------------------------------------------------------------ sizes
    @property
    def num_ops(self) -> int:
        return len(self.op_opcode)

    @property
    def num_tensors(self) -> int:
        return len(self.tensor_dtype)

    # ------------------------------------------------------------------ derived columns
    @cached_property
    def op_builtin(self) -> np.ndarray:
        """Builtin code per op (``CUSTOM`` = 32 for custom ops)."""
        codes = np.array([c.builtin for c in self.opcodes], dtype=np.int32)
        return codes[self.op_opcode] if len(codes) else np.zeros(0, np.int32)

    @cached_property
    def op_version(self) -> np.ndarray:
        versions = np.array([c.version for c in self.opcodes], dtype=np.int32)
        return versions[self.op_opcode] if len(versions) else np.zeros(0, np.int32)

    @cached_property
    def tensor_is_constant(self) -> np.ndarray:
        """A tensor is constant when its buffer (not the sentinel buffer 0) has a data vector,
        even an empty one, or lies outside the flatbuffer: what LiteRT's InterpreterBuilder
        makes read-only.

        The converter gives every activation its own buffer *without* a data vector, so
        ``buffer != 0`` is not the test.
        """
        b = self.tensor_buffer
        ok = (b > 0) & (b < len(self.buffers))
        out = np.zeros(len(b), dtype=bool)
        out[ok] = self.buffers.present[b[ok]]
        return out

    @cached_property
    def tensor_numel(self) -> np.ndarray:
        """Element count per tensor from ``shape`` (the concrete default shape)."""
        shp = self.tensor_shape
        vals = np.maximum(shp.idx.astype(np.int64), 0)
        out = np.ones(len(shp), dtype=np.int64)
        nz = shp.lengths() > 0
        if nz.any():
            out[nz] = np.multiply.reduceat(vals, shp.ptr[:-1][nz])
        return out

    @cached_property
    def tensor_nbytes(self) -> np.ndarray:
        """Bytes per tensor: packed element bytes, or the buffer size for strings/constants."""
        bits = np.array([DType(t).bits if t in _DTYPE_VALUES else 0 for t in range(32)])
        dt = self.tensor_dtype.astype(np.int64)
        b = bits[np.clip(dt, 0, 31)]
        out: np.ndarray = (self.tensor_numel * b + 7) // 8
        const = self.tensor_is_constant
        var = b == 0
        if var.any():
            idx = np.flatnonzero(var & const)
            out[idx] = self.buffers.length[self.tensor_buffer[idx]]
        return out

    # ------------------------------------------------------------------ views
    def op(self, i: int) -> Op:
        """The op at index ``i`` as a frozen :class:`Op`."""
        i = int(i)
        extra = self.op_extra[i]
        return Op(
            index=i,
            opcode=self.opcodes[int(self.op_opcode[i])],
            inputs=self.op_inputs.row_tuple(i),
            outputs=self.op_outputs.row_tuple(i),
            intermediates=self.op_intermediates.row_tuple(i),
            options=self.op_options[i],
            options2=self.op_options2[i],
            custom_options=self.op_custom_options[i],
            custom_options_format=extra.get("custom_options_format", "FLEXBUFFERS"),
            mutating_variable_inputs=tuple(extra.get("mutating_variable_inputs", ())),
            debug_metadata_index=extra.get("debug_metadata_index", -1),
        )

    def tensor(self, i: int) -> Tensor:
        """The tensor at index ``i`` as a frozen :class:`Tensor` (constants carry a data view)."""
        i = int(i)
        const = bool(self.tensor_is_constant[i])
        buf = int(self.tensor_buffer[i])
        return Tensor(
            index=i,
            name=self.tensor_names[i],
            dtype=DType(int(self.tensor_dtype[i])),
            shape=self.tensor_shape.row_tuple(i),
            shape_signature=self.tensor_signature.row_tuple(i)
            if self.tensor_has_signature[i]
            else None,
            buffer=buf,
            is_constant=const,
            quantization=self.tensor_quantization[i],
            is_variable=bool(self.tensor_is_variable[i]),
            sparsity=self.tensor_sparsity[i],
            has_rank=bool(self.tensor_has_rank[i]),
            nbytes=int(self.tensor_nbytes[i]),
            data=self.buffers.data(buf) if const else None,
        )

    @property
    def ops(self) -> Sequence[Op]:
        return _Views(self.num_ops, self.op)

    @property
    def tensors(self) -> Sequence[Tensor]:
        return _Views(self.num_tensors, self.tensor)

    def op_name(self, i: int) -> str:
        return self.opcodes[int(self.op_opcode[i])].name

    def describe_op(self, i: int) -> str:
        """``op 12 CONV_2D`` style label for messages."""
        return f"op {i} {self.op_name(i)}"

    def describe_tensor(self, i: int) -> str:
        return f"tensor {i} {self.tensor_names[i]!r}"


_DTYPE_VALUES = frozenset(int(d) for d in DType)


class _Views(Sequence[T]):
    __slots__ = ("_get", "_n")

    def __init__(self, n: int, get: Callable[[int], T]) -> None:
        self._n = n
        self._get = get

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._get(j) for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        return self._get(i)

    def __iter__(self) -> Iterator[T]:
        return (self._get(i) for i in range(self._n))


@dataclass(frozen=True, eq=False)
class Model:
    """A TFLite model: subgraphs (``subgraphs[0]`` is the main graph) plus shared tables.

    ``source`` names where it came from, for messages. ``extra`` keeps rarely used model-level
    fields (``metadata_buffer``, external buffer groups) so that a read model writes back whole.
    """

    subgraphs: tuple[Subgraph, ...]
    opcodes: tuple[OpCode, ...]
    buffers: BufferTable
    metadata: tuple[Metadata, ...] = ()
    signature_defs: tuple[SignatureDef, ...] = ()
    description: str | None = None
    version: int = 3
    source: str | None = None
    extra: dict[str, Any] | None = None

    @property
    def main(self) -> Subgraph:
        return self.subgraphs[0]

    def metadata_bytes(self, name: str) -> bytes | None:
        """The contents of the named metadata entry, or ``None`` if absent."""
        for m in self.metadata:
            if m.name == name and 0 <= m.buffer < len(self.buffers):
                return self.buffers.data(m.buffer).tobytes()
        return None

    def signature(self, key: str | None = None) -> SignatureDef:
        """The signature with this key (the only one if ``key`` is None)."""
        if key is None and len(self.signature_defs) == 1:
            return self.signature_defs[0]
        for s in self.signature_defs:
            if s.key == key:
                return s
        keys = [s.key for s in self.signature_defs]
        raise KeyError(f"no signature {key!r}; the model has {keys}")
