"""Write IR models as ``.tflite`` flatbuffers.

The encoder is driven by the generated schema tables, so every field the reader decodes is
written back (``write_model(read_model(f))`` is the same model). Output is deterministic: the
same model gives byte-identical bytes.

Models whose flatbuffer would exceed 2 GB (flatbuffers use 32-bit offsets) are written in the
*offset-buffer* layout: constant data is appended after the flatbuffer, 16-byte aligned, and each
``Buffer`` holds its absolute ``offset`` and ``size``. ``offset_buffers=True`` forces that layout
for smaller models, so it can be tested.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from typing import Any

import flatbuffers
import numpy as np
from flatbuffers import number_types
from flatbuffers.builder import OffsetArithmeticError

from edgepart.errors import ModelFormatError
from edgepart.fileio import atomic_write_chunks
from edgepart.ir.graph import Model, Subgraph
from edgepart.ir.values import OpCode, Options, Quantization, Sparsity
from edgepart.schema import opnames
from edgepart.schema.tables import ENUMS, TABLES
from edgepart.tflite.flatbuf import SCALARS

__all__ = ["save_model", "serialize", "write_model"]

FILE_IDENTIFIER = b"TFL3"
# Flatbuffers address with signed 32-bit offsets; stay clear of the limit.
FLATBUFFER_LIMIT = 2**31 - 2**24
_ALIGN = 16

_ENUM_CODES = {name: {v: k for k, v in members.items()} for name, members in ENUMS.items()}
_NP = {name: dtype for name, (dtype, _) in SCALARS.items()}  # numpy dtype per scalar type


def save_model(model: Model, path: str | os.PathLike[str], **kwargs: Any) -> None:
    """Write ``model`` to ``path`` atomically (see :func:`write_model` for options).

    Constant data is streamed from the model's memory to the file, so saving a model with
    gigabytes of weights needs no second copy of them in memory.
    """
    atomic_write_chunks(path, serialize(model, **kwargs))


def write_model(model: Model, *, offset_buffers: bool | None = None) -> bytes:
    """Serialize ``model`` to ``.tflite`` bytes.

    Parameters
    ----------
    model
        The model to write.
    offset_buffers
        ``True`` stores constant data after the flatbuffer (the >2 GB layout), ``False``
        inline; ``None`` (default) chooses inline unless the result would not fit in 2 GB.
    """
    return b"".join(serialize(model, offset_buffers=offset_buffers))


def serialize(model: Model, *, offset_buffers: bool | None = None) -> list[Any]:
    """The file's contents as a list of byte chunks, in order (see :func:`write_model`)."""
    const_bytes = int(model.buffers.length.sum())
    if offset_buffers is None:
        offset_buffers = const_bytes + _overhead(model) > FLATBUFFER_LIMIT
    if not offset_buffers:
        if const_bytes > FLATBUFFER_LIMIT:
            raise ModelFormatError(
                f"{model.source or 'model'}: {const_bytes} bytes of constants do not fit an "
                "inline flatbuffer; write with offset_buffers=True"
            )
        return [_Writer(model, None).build()]
    outside = _outside_buffers(model)
    # Pass 1 with placeholder offsets sizes the flatbuffer: uint64 fields have a fixed width,
    # so the real offsets written in pass 2 do not change the layout.
    placeholder = {i: (2, max(1, int(model.buffers.length[i]))) for i in outside}
    size = len(_Writer(model, placeholder).build())
    layout: dict[int, tuple[int, int]] = {}
    cursor = _round_up(size, _ALIGN)
    for i in outside:
        n = int(model.buffers.length[i])
        layout[i] = (cursor, n)
        cursor = _round_up(cursor + n, _ALIGN)
    head = _Writer(model, layout).build()
    if len(head) != size:
        raise AssertionError("offset-buffer layout changed size between passes")
    chunks: list[Any] = [head]
    at = len(head)
    for i, (off, n) in layout.items():
        chunks.append(bytes(off - at))  # 16-byte alignment padding
        chunks.append(model.buffers.data(i))  # a view: no copy until written
        at = off + n
    chunks.append(bytes(cursor + _ALIGN - at))  # padding, then 16 trailing zero bytes
    return chunks


def _overhead(model: Model) -> int:
    """A generous bound on the flatbuffer bytes besides constant data (tables, names, vtables)."""
    return (1 << 20) + 512 * _items(model)


def _items(model: Model) -> int:
    return len(model.buffers) + sum(sg.num_ops + 2 * sg.num_tensors for sg in model.subgraphs)


def _outside_buffers(model: Model) -> list[int]:
    """Buffers stored after the flatbuffer: tensor data, not metadata (read inline by LiteRT)."""
    meta = {m.buffer for m in model.metadata} | set((model.extra or {}).get("metadata_buffer", ()))
    return [i for i in range(len(model.buffers)) if model.buffers.length[i] > 0 and i not in meta]


def _round_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


class _Writer:
    """One serialization pass; ``layout`` maps buffer index to (offset, size) if outside."""

    def __init__(self, model: Model, layout: Mapping[int, tuple[int, int]] | None) -> None:
        self.m = model
        self.layout = layout
        inline = int(model.buffers.length.sum()) if layout is None else 0
        # Room for everything at once: growing doubles the buffer and copies it, which for
        # hundreds of megabytes of inline constants took longer than the rest of the write
        # (tables take far less than 512 bytes an item; a small model that still outgrows
        # this copies little). The size cannot change the bytes: flatbuffers lay out and
        # align from the end.
        room = inline + 4096 + 512 * _items(model)
        self.b = flatbuffers.Builder(min(room, flatbuffers.Builder.MAX_BUFFER_SIZE))

    def build(self) -> memoryview:
        """The finished flatbuffer: a view of the builder's memory (``Builder.Output`` would
        copy it, and :func:`write_model` copies it once into its result anyway)."""
        m, b = self.m, self.b
        buffers = [self.buffer(i) for i in range(len(m.buffers))]
        subgraphs = [self.subgraph(sg) for sg in m.subgraphs]
        codes = [self.opcode(c) for c in m.opcodes]
        fields: dict[str, Any] = {
            "version": m.version,
            "operator_codes": _Offsets(codes),
            "subgraphs": _Offsets(subgraphs),
            "buffers": _Offsets(buffers),
            "metadata": [{"name": md.name, "buffer": md.buffer} for md in m.metadata],
            "signature_defs": [
                {
                    "signature_key": s.key,
                    "subgraph_index": s.subgraph,
                    "inputs": [{"name": k, "tensor_index": v} for k, v in s.inputs],
                    "outputs": [{"name": k, "tensor_index": v} for k, v in s.outputs],
                }
                for s in m.signature_defs
            ],
        }
        if m.description is not None:
            fields["description"] = m.description
        extra = m.extra or {}
        if "metadata_buffer" in extra:
            fields["metadata_buffer"] = list(extra["metadata_buffer"])
        root = self.table("Model", fields)
        b.Finish(root, file_identifier=FILE_IDENTIFIER)
        return memoryview(b.Bytes)[b.Head() :]

    # ------------------------------------------------------------------ model parts
    def buffer(self, i: int) -> int:
        b = self.b
        n = int(self.m.buffers.length[i])
        if self.layout is not None and i in self.layout:
            off, size = self.layout[i]
            return self.table("Buffer", {"offset": off, "size": size})
        if n == 0:
            if i > 0 and self.m.buffers.present[i]:
                # an empty data vector keeps the tensor a constant for LiteRT
                b.StartVector(1, 0, _ALIGN)
                return self.table("Buffer", {"data": _Offset(b.EndVector())})
            return self.table("Buffer", {})
        data = self.m.buffers.data(i)
        b.StartVector(1, n, _ALIGN)
        b.head = b.head - n
        b.Bytes[b.head : b.head + n] = data.data  # one copy (tobytes made two)
        vec = b.EndVector()
        return self.table("Buffer", {"data": _Offset(vec)})

    def opcode(self, c: OpCode) -> int:
        fields: dict[str, Any] = {
            "deprecated_builtin_code": min(c.builtin, opnames.PLACEHOLDER_FOR_GREATER_OP_CODES),
            "builtin_code": c.builtin,
            "version": c.version,
        }
        if c.custom_code is not None:
            fields["custom_code"] = c.custom_code
        return self.table("OperatorCode", fields)

    def subgraph(self, sg: Subgraph) -> int:
        tensors = [self.tensor(sg, i) for i in range(sg.num_tensors)]
        ops = [self.operator(sg, i) for i in range(sg.num_ops)]
        fields: dict[str, Any] = {
            "tensors": _Offsets(tensors),
            "inputs": _Array(sg.inputs, "int32"),
            "outputs": _Array(sg.outputs, "int32"),
            "operators": _Offsets(ops),
        }
        if sg.name is not None:
            fields["name"] = sg.name
        if sg.debug_metadata_index != -1:
            fields["debug_metadata_index"] = sg.debug_metadata_index
        return self.table("SubGraph", fields)

    def tensor(self, sg: Subgraph, i: int) -> int:
        fields: dict[str, Any] = {
            "shape": _Array(sg.tensor_shape.row(i), "int32"),
            "type": int(sg.tensor_dtype[i]),
            "buffer": int(sg.tensor_buffer[i]),
            "name": sg.tensor_names[i],
            "is_variable": bool(sg.tensor_is_variable[i]),
            "has_rank": bool(sg.tensor_has_rank[i]),
        }
        q = sg.tensor_quantization[i]
        if q is not None:
            fields["quantization"] = _quantization(q)
        sp = sg.tensor_sparsity[i]
        if sp is not None:
            fields["sparsity"] = _sparsity(sp)
        if sg.tensor_has_signature[i]:
            fields["shape_signature"] = _Array(sg.tensor_signature.row(i), "int32")
        fields.update(sg.tensor_extra[i])
        return self.table("Tensor", fields)

    def operator(self, sg: Subgraph, i: int) -> int:
        fields: dict[str, Any] = {
            "opcode_index": int(sg.op_opcode[i]),
            "inputs": _Array(sg.op_inputs.row(i), "int32"),
            "outputs": _Array(sg.op_outputs.row(i), "int32"),
        }
        if sg.op_intermediates.ptr[i + 1] > sg.op_intermediates.ptr[i]:
            fields["intermediates"] = _Array(sg.op_intermediates.row(i), "int32")
        opt = sg.op_options[i]
        if opt is not None:
            fields["builtin_options"] = opt
        opt2 = sg.op_options2[i]
        if opt2 is not None:
            fields["builtin_options2"] = opt2
        custom = sg.op_custom_options[i]
        if custom is not None:
            fields["custom_options"] = bytes(custom)
        for k, v in sg.op_extra[i].items():
            if k != "large_custom_options":
                fields[k] = v
        return self.table("Operator", fields)

    # ------------------------------------------------------------------ generic encoding
    def table(self, tname: str, values: Mapping[str, Any]) -> int:
        """Encode one table from a mapping of field name to value (missing = default)."""
        b = self.b
        objects, slots, numfields = _plan(tname)
        offsets: dict[str, int] = {}
        utypes: dict[str, int] = {}
        for name, ftype in objects:
            v = values.get(name)
            if v is None:
                continue
            if isinstance(v, _Offset):
                offsets[name] = v.off
            elif isinstance(v, _Offsets):
                offsets[name] = self._offset_vector(v.offs)
            elif ftype == "string":
                offsets[name] = b.CreateString(str(v))
            elif ftype.startswith("union:"):
                member, member_values = _union_value(v)
                utypes[name + "_type"] = _ENUM_CODES[ftype.split(":", 1)[1]][member]
                offsets[name] = self.table(member, member_values)
            elif ftype.startswith("["):
                offsets[name] = self._vector(ftype[1:-1], v)
            else:
                offsets[name] = self.table(ftype, v)
        b.StartObject(numfields)
        for name, slot, kind, flags, default, enum in slots:
            if kind == _SLOT_OFFSET:
                off = offsets.get(name)
                if off is not None and off != 0:
                    _prepend_uoffset(b, off)
                    b.current_vtable[slot] = len(b.Bytes) - b.head
                continue
            if kind == _SLOT_UTYPE:
                v = utypes.get(name)
            else:
                v = values.get(name)
                if v is not None:
                    if enum is not None and isinstance(v, str):
                        v = _ENUM_CODES[enum][v]
                    if flags is number_types.BoolFlags:
                        v = bool(v)
            if v is None:
                continue
            # Builder.Prepend<T>Slot(slot, v, default), its layers of calls flattened (the
            # writer's hottest path): the same range check, the same bytes
            number_types.enforce_number(v, flags)
            if v != default:
                width = flags.bytewidth
                b.Prep(width, 0)
                head = b.head - width
                b.head = head
                flags.packer_type.pack_into(b.Bytes, head, v)
                b.current_vtable[slot] = len(b.Bytes) - head
        return int(b.EndObject())

    def _vector(self, etype: str, values: Any) -> int:
        b = self.b
        if isinstance(values, _Array):
            arr = np.ascontiguousarray(values.values, dtype=_NP[values.etype])
            return int(b.CreateNumpyVector(arr))
        if etype in _NP:
            if isinstance(values, (bytes, bytearray, memoryview)):
                return int(b.CreateByteVector(bytes(values)))
            arr = np.ascontiguousarray(np.asarray(values), dtype=_NP[etype])
            return int(b.CreateNumpyVector(arr))
        if etype == "string":
            offs = [b.CreateString(str(s)) for s in values]
        else:
            offs = [self.table(etype, v) for v in values]
        return self._offset_vector(offs)

    def _offset_vector(self, offs: Sequence[int]) -> int:
        b = self.b
        b.StartVector(4, len(offs), 4)
        for o in reversed(offs):
            _prepend_uoffset(b, o)
        return int(b.EndVector())


def _prepend_uoffset(b: flatbuffers.Builder, off: int) -> None:
    """``Builder.PrependUOffsetTRelative(off)`` in one call instead of five (the same bytes)."""
    b.Prep(4, 0)
    at = len(b.Bytes) - b.head
    if not off <= at:
        raise OffsetArithmeticError("flatbuffers: Offset arithmetic error.")
    head = b.head - 4
    b.head = head
    _UOFFSET.pack_into(b.Bytes, head, at - off + 4)


_SLOT_OFFSET, _SLOT_UTYPE, _SLOT_SCALAR = range(3)
_UOFFSET = number_types.UOffsetTFlags.packer_type
_FLAGS = {
    "bool": number_types.BoolFlags,
    "int8": number_types.Int8Flags,
    "uint8": number_types.Uint8Flags,
    "utype": number_types.Uint8Flags,
    "int16": number_types.Int16Flags,
    "uint16": number_types.Uint16Flags,
    "int32": number_types.Int32Flags,
    "uint32": number_types.Uint32Flags,
    "int64": number_types.Int64Flags,
    "uint64": number_types.Uint64Flags,
    "float32": number_types.Float32Flags,
    "float64": number_types.Float64Flags,
}


@functools.cache
def _plan(tname: str) -> tuple[tuple[tuple[str, str], ...], tuple[Any, ...], int]:
    """How :meth:`_Writer.table` encodes table ``tname``, worked out once from the schema: the
    fields built as objects before the table (name, type), then every slot in schema order
    (name, slot, kind, number flags, default, enum), and the number of slots."""
    fields = TABLES[tname]
    objects = tuple((f[0], f[2]) for f in fields if f[2] not in _FLAGS)
    slots: list[tuple[Any, ...]] = []
    for name, slot, ftype, default, enum in fields:
        if ftype == "utype":
            slots.append((name, slot, _SLOT_UTYPE, _FLAGS[ftype], 0, None))
        elif ftype in _FLAGS:
            d = 0 if default is None else default
            if ftype == "bool":
                d = bool(d)
            slots.append((name, slot, _SLOT_SCALAR, _FLAGS[ftype], d, enum))
        else:
            slots.append((name, slot, _SLOT_OFFSET, None, 0, None))
    return objects, tuple(slots), max((f[1] for f in fields), default=-1) + 1


class _Offset:
    """An already-built flatbuffer object to reference from a field."""

    __slots__ = ("off",)

    def __init__(self, off: int) -> None:
        self.off = off


class _Offsets:
    """Already-built tables to reference as a vector."""

    __slots__ = ("offs",)

    def __init__(self, offs: Sequence[int]) -> None:
        self.offs = offs


class _Array:
    """A scalar vector given as an array, written in one copy."""

    __slots__ = ("etype", "values")

    def __init__(self, values: np.ndarray, etype: str) -> None:
        self.values = values
        self.etype = etype


def _union_value(v: Any) -> tuple[str, Mapping[str, Any]]:
    if isinstance(v, Options):
        return v.type, v
    if isinstance(v, Mapping):
        return str(v["type"]), {k: x for k, x in v.items() if k != "type"}
    raise TypeError(f"cannot encode union value {v!r}")


def _quantization(q: Quantization) -> dict[str, Any]:
    fields: dict[str, Any] = {"quantized_dimension": q.quantized_dimension}
    if len(q.scale):
        fields["scale"] = _Array(q.scale, "float32")
    if len(q.zero_point):
        fields["zero_point"] = _Array(q.zero_point, "int64")
    if q.min is not None:
        fields["min"] = _Array(q.min, "float32")
    if q.max is not None:
        fields["max"] = _Array(q.max, "float32")
    if q.details is not None:
        fields["details"] = q.details
    return fields


_INDEX_TYPES = {
    np.dtype(np.int32): "Int32Vector",
    np.dtype(np.uint16): "Uint16Vector",
    np.dtype(np.uint8): "Uint8Vector",
}


def _sparsity(sp: Sparsity) -> dict[str, Any]:
    dims = []
    for d in sp.dim_metadata:
        dm: dict[str, Any] = {"format": d.format, "dense_size": d.dense_size}
        for key, arr in (("array_segments", d.array_segments), ("array_indices", d.array_indices)):
            if arr is not None:
                kind = _INDEX_TYPES[np.dtype(arr.dtype)]
                dm[key] = {"type": kind, "values": _Array(arr, str(np.dtype(arr.dtype)))}
        dims.append(dm)
    return {
        "traversal_order": list(sp.traversal_order),
        "block_map": list(sp.block_map),
        "dim_metadata": dims,
    }
