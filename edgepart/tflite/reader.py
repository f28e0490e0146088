"""Read ``.tflite`` flatbuffers into the IR, zero-copy and verified.

The file is memory-mapped; constant data stays in the mapping (``Tensor.data`` is a view), so a
model with gigabytes of weights parses in milliseconds and costs no resident memory for them.
Everything is verified before it is trusted (see :mod:`edgepart.tflite.flatbuf`) and then checked
for meaning (indices in range, buffers inside the file); any defect raises
:class:`~edgepart.errors.ModelFormatError` naming the byte offset or the op and tensor. One part
is verified later: the ``Buffer`` tables, which sit next to the weights all over the file, are
located at parse time and verified and read on first use of ``model.buffers`` (a tensor's
data, constness, the writer), so a parse touches only the pages that hold the graph.

>>> from edgepart.tflite.reader import read_model
>>> m = read_model("examples/models/mobilenet_v2.tflite")
>>> m.main.num_ops, m.main.op(0).name
(65, 'CONV_2D')
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from edgepart.errors import ModelFormatError
from edgepart.fileio import open_regular
from edgepart.ir.graph import BufferTable, LazySeq, Model, Subgraph, subgraph_refs
from edgepart.ir.values import (
    Csr,
    DimensionMetadata,
    Metadata,
    OpCode,
    Options,
    Quantization,
    SignatureDef,
    Sparsity,
)
from edgepart.schema.tables import ENUMS, TABLES
from edgepart.tflite.columns import RawModel, buffer_columns, numpy_columns
from edgepart.tflite.flatbuf import FlatBuffer, Tables, decode_table, first_outside
from edgepart.tflite.walk import native_columns

__all__ = ["read_model", "read_model_bytes"]

FILE_IDENTIFIER = b"TFL3"
MAX_ELEMENTS_LOG2 = 56
"""A tensor holds at most 2^56 elements: with 16-byte elements its size fits in 2^60 bytes, so
sums of tensor sizes stay far from the int64 limit."""
_MAX_DTYPE = 22


def read_model(path: str | os.PathLike[str]) -> Model:
    """Parse a ``.tflite`` file (memory-mapped; weights are never copied).

    Raises
    ------
    ModelFormatError
        If the file is missing, empty, or not a well-formed TFLite model.
    """
    path = os.fspath(path)
    data = _map_file(path)
    release = len(data) >= RELEASE_MIN_SIZE
    model = _read(data, path, release)
    if release:
        _release_pages(data)
    return model


def _map_file(path: str) -> mmap.mmap:
    """The whole file, mapped read-only (a regular file only: a FIFO or device is refused
    without blocking, see :func:`edgepart.fileio.open_regular`)."""
    fd = open_regular(path, what=".tflite model", error=ModelFormatError)
    try:
        if os.fstat(fd).st_size == 0:
            raise ModelFormatError(f"{path}: file is empty; expected a .tflite model")
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except OSError as err:  # the mapping failed
        raise ModelFormatError(f"{path}: cannot map the file ({err.strerror})") from None
    finally:
        os.close(fd)


# Parsing a file at least this large ends by releasing the pages it touched (see below).
RELEASE_MIN_SIZE = 32 << 20


def _release_pages(data: mmap.mmap) -> None:
    """Unmap the pages parsing touched; the file's data stays readable.

    In a large file, tables sit next to the weights (buffer tables always do), and the page
    cache holds the file in large folios, so reading a 12-byte table maps up to 2 MiB of
    weights into this process. The IR keeps only columns and views, so after the parse, and
    after the buffer tables' first use, those pages are not needed: dropping them (a read-only
    shared mapping refaults from the page cache on the next access) keeps resident memory at
    what the program goes on to use.
    """
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if advice is not None:
        data.madvise(advice)


def read_model_bytes(data: Any, source: str = "<bytes>") -> Model:
    """Parse a model held in memory (``bytes``, ``bytearray``, ``mmap`` or ``memoryview``)."""
    return _read(data, source, release=False)


def _read(data: Any, source: str, release: bool) -> Model:
    fb = FlatBuffer(data, source)
    root = fb.root_position(FILE_IDENTIFIER)
    raw = native_columns(fb, root) if ACCELERATE else None
    if raw is None:  # no C walker, or a defect: the NumPy reader names it precisely
        raw = numpy_columns(fb, fb.root("Model", FILE_IDENTIFIER))
    return _Assembler(fb, raw, release).model()


# Use the C walker when it is built (tests switch it off to check both paths agree).
ACCELERATE = True


class _Assembler:
    """Builds the IR from raw columns, checking what the bytes mean (indices, ranges)."""

    def __init__(self, fb: FlatBuffer, raw: RawModel, release: bool = False) -> None:
        self.fb = fb
        self.raw = raw
        self.release = release  # release the pages the buffer tables' first use touches

    def fail(self, msg: str) -> ModelFormatError:
        return ModelFormatError(f"{self.fb.source}: {msg}")

    def text(self, span: np.ndarray | Sequence[int]) -> str | None:
        start, length = int(span[0]), int(span[1])
        if length < 0:
            return None
        return bytes(self.fb.data[start : start + length]).decode("utf-8", "replace")

    def model(self) -> Model:
        raw = self.raw
        if len(raw.sg_tensor_ptr) < 2:
            raise self.fail("the model has no subgraphs")
        opcodes = self.opcodes()
        buffers = self.buffers()
        subgraphs = self.subgraphs(opcodes, buffers)
        extra: dict[str, Any] = {}
        if len(raw.metadata_buffer):
            extra["metadata_buffer"] = tuple(raw.metadata_buffer.tolist())
        return Model(
            subgraphs=tuple(subgraphs),
            opcodes=opcodes,
            buffers=buffers,
            metadata=self.metadata(len(buffers)),
            signature_defs=self.signatures(subgraphs),
            description=self.text(raw.description),
            version=raw.version,
            source=self.fb.source,
            extra=extra or None,
        )

    # ------------------------------------------------------------------ tables
    def check_sizes(self, ptr: np.ndarray, dims: np.ndarray) -> None:
        """Refuse shapes whose element count does not fit 64-bit byte arithmetic.

        Sizes downstream (``tensor_nbytes``, arenas, costs) are int64; a shape such as
        ``[2^31-1, 2^31-1]`` would wrap them negative.
        """
        rows = np.flatnonzero(np.diff(ptr) > 0)
        if not len(dims) or not len(rows):
            return
        logs = np.log2(np.maximum(dims.astype(np.float64), 1.0))
        per = np.add.reduceat(logs, ptr[:-1][rows])
        for r in rows[per > MAX_ELEMENTS_LOG2 - 1].tolist():  # exact check of the few near it
            shape = [int(d) for d in dims[ptr[r] : ptr[r + 1]]]
            numel = 1
            for d in shape:
                numel *= max(d, 0)
            if numel > 1 << MAX_ELEMENTS_LOG2:
                raise self.fail(
                    f"tensor #{r} has shape {shape}: {numel:.3g} elements, more than any memory "
                    f"holds (at most 2^{MAX_ELEMENTS_LOG2}); the file is corrupted"
                )

    def opcodes(self) -> tuple[OpCode, ...]:
        raw = self.raw
        out = []
        for i, (dep, code, version, span) in enumerate(
            zip(
                raw.oc_deprecated.tolist(),
                raw.oc_builtin.tolist(),
                raw.oc_version.tolist(),
                raw.oc_custom.tolist(),
                strict=True,
            )
        ):
            builtin = max(dep, code)
            if builtin < 0:
                raise self.fail(f"operator_codes[{i}] has negative builtin code {code}")
            out.append(OpCode(builtin, self.text(span) if span[1] >= 0 else None, version))
        return tuple(out)

    def buffers(self) -> BufferTable:
        """The buffer table, read on first use.

        Buffer tables sit next to the weights they describe, spread over the whole file, so
        reading them at parse time would fault in a page of weights per buffer. The walk has
        located them and checked that each lies in the file; their fields are verified and
        read when something first asks for a buffer's extent (a tensor's data, constness, the
        writer), and a defect raises :class:`ModelFormatError` then.
        """
        return BufferTable.deferred(len(self.raw.buf_pos), (self.fb.data,), self.load_buffers)

    def load_buffers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(mem, start, length, external) of every buffer, verified."""
        spans, offset, size = buffer_columns(self.fb, self.raw.buf_pos)
        start = spans[:, 0].copy()
        length = spans[:, 1].copy()
        offset = offset.astype(np.uint64)
        size = size.astype(np.uint64)
        # "offset > 1" marks data stored after the flatbuffer (the >2 GB layout); 1 is a
        # placeholder some writers use while sizing the flatbuffer.
        ext = offset > 1
        if ext.any():
            end = offset[ext] + size[ext]
            bad = (end > np.uint64(self.fb.n)) | (end < offset[ext])
            if bad.any():
                i = int(np.flatnonzero(ext)[np.argmax(bad)])
                raise self.fail(
                    f"buffers[{i}] points outside the file (offset {int(offset[i])}, "
                    f"size {int(size[i])}); the file is truncated"
                )
            start[ext] = offset[ext].astype(np.int64)
            length[ext] = size[ext].astype(np.int64)
        if self.release:
            _release_pages(self.fb.data)
        return np.zeros(len(start), dtype=np.int32), start, length, ext

    def metadata(self, num_buffers: int) -> tuple[Metadata, ...]:
        raw = self.raw
        out = []
        for i, (span, buf) in enumerate(
            zip(raw.md_name.tolist(), raw.md_buffer.tolist(), strict=True)
        ):
            if not 0 <= buf < num_buffers:
                raise self.fail(f"metadata[{i}] names buffer {buf} of {num_buffers}")
            out.append(Metadata(self.text(span) or "", int(buf)))
        return tuple(out)

    def signatures(self, subgraphs: Sequence[Subgraph]) -> tuple[SignatureDef, ...]:
        raw = self.raw
        sub = raw.sd_subgraph.tolist()
        sides = (
            ("inputs", raw.sd_inputs_ptr.tolist(), raw.in_map_name, raw.in_map_tensor.tolist()),
            ("outputs", raw.sd_outputs_ptr.tolist(), raw.out_map_name, raw.out_map_tensor.tolist()),
        )
        out = []
        for i in range(len(sub)):
            if not 0 <= sub[i] < len(subgraphs):
                raise self.fail(f"signature_defs[{i}] names subgraph {sub[i]}")
            nt = subgraphs[sub[i]].num_tensors
            io = []
            for field, ptr, names, idx in sides:
                rows = []
                for j in range(ptr[i], ptr[i + 1]):
                    name = self.text(names[j]) or ""
                    if not 0 <= idx[j] < nt:
                        raise self.fail(
                            f"signature_defs[{i}].{field} {name!r} names tensor {idx[j]} "
                            f"of subgraph {sub[i]}, which has {nt} tensors"
                        )
                    rows.append((name, int(idx[j])))
                io.append(tuple(rows))
            out.append(SignatureDef(self.text(raw.sd_key[i]) or "", int(sub[i]), io[0], io[1]))
        return tuple(out)

    # ------------------------------------------------------------------ subgraphs
    def subgraphs(self, opcodes: tuple[OpCode, ...], buffers: BufferTable) -> list[Subgraph]:
        fb, raw = self.fb, self.raw
        dtype = raw.t_dtype
        tbuf = raw.t_buffer.astype(np.int64, copy=False)  # (the NumPy path reads uint32)
        i = first_outside(dtype, 0, _MAX_DTYPE + 1)
        if i >= 0:
            raise self.fail(f"tensor #{i} has unknown type {dtype[i]}")
        i = first_outside(tbuf, 0, len(buffers))
        if i >= 0:
            raise self.fail(
                f"tensor #{i} names buffer {tbuf[i]} but the model has {len(buffers)} buffers"
            )
        dtype = dtype.astype(np.int8)
        shp_ptr, shp = raw.t_shape
        i = first_outside(shp, -1, 1 << 62)
        if i >= 0:
            raise self.fail(f"a tensor shape has dimension {int(shp[i])}")
        self.check_sizes(shp_ptr, shp)
        opc = raw.o_opcode
        i = first_outside(opc, 0, len(opcodes))
        if i >= 0:
            raise self.fail(f"operator #{i} uses opcode {opc[i]} of {len(opcodes)}")
        opc = opc.astype(np.int32)
        options = _OptionsColumn(fb, "BuiltinOptions", raw.o_options)
        options2 = _OptionsColumn(fb, "BuiltinOptions2", raw.o_options2)
        quant = _QuantColumn(fb, raw)
        is_var = raw.t_is_variable.astype(bool)
        has_rank = raw.t_has_rank.astype(bool)
        sig_ptr, sig = raw.t_signature
        iptr, ins = raw.sg_inputs
        outptr, outs = raw.sg_outputs
        in_ptr, in_idx = raw.o_inputs
        out_ptr, out_idx = raw.o_outputs
        im_ptr, im_idx = raw.o_intermediates
        dbg = raw.sg_debug.tolist()
        no_extra: list[dict[str, Any]] = [{}]  # shared by the ops of this model that set none
        extra = self.op_extra(no_extra)

        out: list[Subgraph] = []
        tp, op_ = raw.sg_tensor_ptr.tolist(), raw.sg_op_ptr.tolist()
        # (the walk verified every union code names a known options table)
        calls = np.flatnonzero(
            _CALLING_MASK["BuiltinOptions"][raw.o_options[:, 0]]
            | _CALLING_MASK["BuiltinOptions2"][raw.o_options2[:, 0]]
        ).tolist()
        for s in range(len(tp) - 1):
            t0, t1 = tp[s], tp[s + 1]
            o0, o1 = op_[s], op_[s + 1]
            nt = t1 - t0
            op_in = _slice_csr(in_ptr, in_idx, o0, o1)
            op_out = _slice_csr(out_ptr, out_idx, o0, o1)
            op_im = _slice_csr(im_ptr, im_idx, o0, o1)
            sg_in = ins[iptr[s] : iptr[s + 1]].astype(np.int32)
            sg_out = outs[outptr[s] : outptr[s + 1]].astype(np.int32)
            for idx, lo, what in (
                (op_in.idx, -1, "an operator input"),
                (op_out.idx, 0, "an operator output"),
                (op_im.idx, 0, "an operator intermediate"),
                (sg_in, 0, "a subgraph input"),
                (sg_out, 0, "a subgraph output"),
            ):
                i = first_outside(idx, lo, nt)
                if i >= 0:
                    raise self.fail(
                        f"subgraph {s}: {what} names tensor {idx[i]}, but the subgraph has "
                        f"{nt} tensors"
                    )
            out.append(
                Subgraph(
                    name=self.text(raw.sg_name[s]),
                    inputs=sg_in,
                    outputs=sg_out,
                    op_opcode=opc[o0:o1],
                    op_inputs=op_in,
                    op_outputs=op_out,
                    op_intermediates=op_im,
                    op_options=LazySeq(o1 - o0, options.decoder(o0)),
                    op_options2=LazySeq(o1 - o0, options2.decoder(o0)),
                    op_custom_options=LazySeq(o1 - o0, _custom_options_decoder(fb, raw, o0)),
                    op_extra=extra[o0:o1] if extra else no_extra * (o1 - o0),
                    tensor_dtype=dtype[t0:t1],
                    tensor_buffer=tbuf[t0:t1],
                    tensor_shape=_slice_csr(shp_ptr, shp, t0, t1),
                    tensor_signature=_slice_csr(sig_ptr, sig, t0, t1),
                    tensor_has_signature=raw.t_has_signature[t0:t1],
                    tensor_is_variable=is_var[t0:t1],
                    tensor_has_rank=has_rank[t0:t1],
                    tensor_names=LazySeq(nt, _name_decoder(fb, raw.t_name, t0)),
                    tensor_quantization=LazySeq(nt, quant.decoder(t0)),
                    tensor_sparsity=LazySeq(nt, _sparsity_decoder(fb, raw.t_sparsity_pos, t0)),
                    tensor_extra=LazySeq(nt, _tensor_extra_decoder(fb, raw, t0)),
                    opcodes=opcodes,
                    buffers=buffers,
                    debug_metadata_index=int(dbg[s]),
                )
            )
        if calls:
            owner = np.searchsorted(raw.sg_op_ptr, np.array(calls), side="right") - 1
            self.check_control_flow(
                out,
                [(int(o), int(k - raw.sg_op_ptr[o])) for o, k in zip(owner, calls, strict=True)],
            )
        return out

    def op_extra(self, no_extra: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """Rarely set op fields, as a dict per op of the whole model (a shared empty dict for
        the common case), or None when no op sets any."""
        raw = self.raw
        fmt, lco_off, lco_size, dbg = (
            raw.o_custom_format,
            raw.o_large_offset,
            raw.o_large_size,
            raw.o_debug,
        )
        mv_ptr, mv = raw.o_mutating
        if (
            mv_ptr[-1] == 0
            and first_outside(fmt, 0, 1) < 0
            and first_outside(lco_off, 0, 2) < 0
            and first_outside(dbg, -1, 0) < 0
        ):
            return None  # the common case: no op sets any of them
        unusual = np.flatnonzero(
            (fmt != 0) | (mv_ptr[1:] != mv_ptr[:-1]) | (lco_off > 1) | (dbg != -1)
        ).tolist()
        if not unusual:
            return None
        rows = no_extra * len(fmt)
        for i in unusual:
            d: dict[str, Any] = {}
            if fmt[i] != 0:
                d["custom_options_format"] = int(fmt[i])
            if mv_ptr[i + 1] > mv_ptr[i]:
                d["mutating_variable_inputs"] = tuple(
                    bool(b) for b in mv[mv_ptr[i] : mv_ptr[i + 1]].tolist()
                )
            if lco_off[i] > 1:
                end = int(lco_off[i]) + int(lco_size[i])
                if end > self.fb.n:
                    raise self.fail(
                        f"operator #{i}'s large custom options lie outside the file "
                        f"(offset {int(lco_off[i])}, size {int(lco_size[i])})"
                    )
                d["large_custom_options"] = (int(lco_off[i]), int(lco_size[i]))
            if dbg[i] != -1:
                d["debug_metadata_index"] = int(dbg[i])
            rows[i] = d
        return rows

    def check_control_flow(
        self, subgraphs: Sequence[Subgraph], calls: Sequence[tuple[int, int]]
    ) -> None:
        """Subgraph indices named by control-flow options must exist."""
        for s, i in calls:
            sg = subgraphs[s]
            refs = subgraph_refs(sg.op_options[i]) + subgraph_refs(sg.op_options2[i])
            for r in refs:
                if not 0 <= r < len(subgraphs):
                    raise self.fail(
                        f"subgraph {s} {sg.describe_op(i)} calls subgraph {r}, but the "
                        f"model has {len(subgraphs)}"
                    )


# Options tables that name subgraphs (IF/WHILE bodies, CALL_ONCE init, composites, ...).
_CALLING_OPTIONS = frozenset(
    t for t, fields in TABLES.items() if any(f[0].endswith("subgraph_index") for f in fields)
)


# ---------------------------------------------------------------------- helpers
def _slice_csr(ptr: np.ndarray, idx: np.ndarray, r0: int, r1: int) -> Csr:
    if r0 == 0 and r1 == len(ptr) - 1:  # the whole column (a model with one subgraph)
        return Csr(ptr, idx.astype(np.int32, copy=False))
    p = ptr[r0 : r1 + 1]
    base = int(p[0])
    return Csr(p - base, idx[base : int(p[-1])].astype(np.int32, copy=False))


# Per options enum: a lookup table, true at the codes of options that name subgraphs.
_CALLING_MASK = {
    enum: np.isin(
        np.arange(max(ENUMS[enum]) + 1),
        [c for c, t in ENUMS[enum].items() if t in _CALLING_OPTIONS],
    )
    for enum in ("BuiltinOptions", "BuiltinOptions2")
}


def _code_names(enum: str, codes: np.ndarray) -> list[str | None]:
    names = ENUMS[enum]
    return [names[c] if c else None for c in codes.tolist()]


class _OptionsColumn:
    """Builtin options of every op, decoded one options *type* at a time.

    The first time an op of type T is asked for, the scalar fields of every T-op are read as
    NumPy columns (one gather per field); each op's ``Options`` is then a dict built from those
    columns. Types with vectors, strings or nested tables decode those fields per op.
    """

    def __init__(self, fb: FlatBuffer, enum: str, union: np.ndarray) -> None:
        self.fb = fb
        self.enum = enum
        self.codes = union[:, 0]
        self.pos = union[:, 1]
        self._types: list[str | None] | None = None
        self.columns: dict[str, tuple[dict[int, int], dict[str, list[Any]], list[str]]] = {}

    @property
    def types(self) -> list[str | None]:
        if self._types is None:
            self._types = _code_names(self.enum, self.codes)
        return self._types

    def _columns(self, tname: str) -> tuple[dict[int, int], dict[str, list[Any]], list[str]]:
        cols = self.columns.get(tname)
        if cols is None:
            rows = [k for k, t in enumerate(self.types) if t == tname]
            table = Tables(self.fb, tname, self.pos[np.asarray(rows, dtype=np.int64)], tname)
            values: dict[str, list[Any]] = {}
            other: list[str] = []
            for name, _, ftype, _default, enum in TABLES[tname]:
                if ftype == "utype":
                    continue
                if ftype not in _SCALAR_TYPES:
                    other.append(name)
                    continue
                col = table.scalar(name)
                if ftype == "bool":
                    values[name] = col.astype(bool).tolist()
                elif enum is not None:
                    names = ENUMS[enum]
                    values[name] = [names.get(v, v) for v in col.tolist()]
                else:
                    values[name] = col.tolist()
            cols = self.columns[tname] = ({r: k for k, r in enumerate(rows)}, values, other)
        return cols

    def decoder(self, base: int) -> Any:
        def decode(i: int) -> Options | None:
            j = base + i
            tname = self.types[j]
            if tname is None:
                return None
            index, values, other = self._columns(tname)
            if other:  # vectors, strings, nested tables: the per-op decoder has them all
                return Options(
                    tname, decode_table(self.fb, tname, int(self.pos[j])), canonical=True
                )
            k = index[j]
            return Options(tname, {name: col[k] for name, col in values.items()}, canonical=True)

        return decode


_SCALAR_TYPES = frozenset(
    {
        "bool",
        "int8",
        "uint8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "uint64",
        "float32",
        "float64",
    }
)


def _custom_options_decoder(fb: FlatBuffer, raw: RawModel, base: int) -> Any:
    """Custom options bytes, inline or stored after the flatbuffer (large custom options)."""
    spans, large_offset, large_size = raw.o_custom, raw.o_large_offset, raw.o_large_size

    def decode(i: int) -> bytes | None:
        j = base + i
        start, n = int(spans[j, 0]), int(spans[j, 1])
        if n <= 0:
            if large_offset[j] > 1 and large_size[j] > 0:
                s = int(large_offset[j])
                return bytes(fb.u8[s : s + int(large_size[j])])
            return None
        return bytes(fb.u8[start : start + n])

    return decode


def _name_decoder(fb: FlatBuffer, spans: np.ndarray, base: int) -> Any:
    def decode(i: int) -> str:
        start, n = int(spans[base + i, 0]), int(spans[base + i, 1])
        if n < 0:
            return ""
        return bytes(fb.u8[start : start + n]).decode("utf-8", "replace")

    return decode


class _QuantColumn:
    """Quantization of every tensor: decoded as columns at parse time, objects on demand."""

    def __init__(self, fb: FlatBuffer, raw: RawModel, release: bool = False) -> None:
        self.fb = fb
        self.raw = raw
        self.release = release  # release the pages the buffer tables' first use touches
        self.details_names = ENUMS["QuantizationDetails"]

    def decoder(self, base: int) -> Any:
        raw = self.raw

        def decode(i: int) -> Quantization | None:
            r = int(raw.t_quant_row[base + i])
            if r < 0:
                return None
            details = None
            code = int(raw.q_details[r, 0])
            tname = self.details_names.get(code) if code else None
            if tname is not None:
                fields = decode_table(self.fb, tname, int(raw.q_details[r, 1]))
                details = Options(tname, fields, canonical=True)
            return Quantization(
                scale=_row(raw.q_scale, r),
                zero_point=_row(raw.q_zero_point, r),
                quantized_dimension=int(raw.q_dim[r]),
                min=_row(raw.q_min, r) if raw.q_min_has[r] else None,
                max=_row(raw.q_max, r) if raw.q_max_has[r] else None,
                details=details,
            )

        return decode


def _row(csr: tuple[np.ndarray, np.ndarray], r: int) -> np.ndarray:
    ptr, vals = csr
    return vals[ptr[r] : ptr[r + 1]]


def _sparsity_decoder(fb: FlatBuffer, positions: np.ndarray, base: int) -> Any:
    def decode(i: int) -> Sparsity | None:
        pos = int(positions[base + i])
        if pos < 0:
            return None
        d = decode_table(fb, "SparsityParameters", pos)
        dims = []
        for k, m in enumerate(d["dim_metadata"] or ()):
            if not isinstance(m["format"], str):  # a code DimensionType does not have
                kinds = ", ".join(ENUMS["DimensionType"].values())
                raise ModelFormatError(
                    f"{fb.source}: tensor {i}: sparsity.dim_metadata[{k}].format is "
                    f"{m['format']}, not a DimensionType ({kinds}); the file is corrupted"
                )
            seg = m["array_segments"]
            ind = m["array_indices"]
            dims.append(
                DimensionMetadata(
                    format=str(m["format"]),
                    dense_size=int(m["dense_size"]),
                    array_segments=None if seg is None else _index_vector(seg),
                    array_indices=None if ind is None else _index_vector(ind),
                )
            )
        return Sparsity(
            traversal_order=tuple(d["traversal_order"] or ()),
            block_map=tuple(d["block_map"] or ()),
            dim_metadata=tuple(dims),
        )

    return decode


_INDEX_DTYPES = {"Int32Vector": np.int32, "Uint16Vector": np.uint16, "Uint8Vector": np.uint8}


def _index_vector(u: dict[str, Any]) -> np.ndarray:
    values = u.get("values")
    if isinstance(values, bytes):
        return np.frombuffer(values, np.uint8)
    return np.asarray(values or (), dtype=_INDEX_DTYPES[u["type"]])


def _tensor_extra_decoder(fb: FlatBuffer, raw: RawModel, base: int) -> Any:
    empty: dict[str, Any] = {}
    ext_buf, variants, positions = raw.t_external_buffer, raw.t_variant_count, raw.t_pos

    def decode(i: int) -> dict[str, Any]:
        j = base + i
        if ext_buf[j] == 0 and variants[j] <= 0:
            return empty
        d = decode_table(fb, "Tensor", int(positions[j]))
        out: dict[str, Any] = {}
        if ext_buf[j]:
            out["external_buffer"] = int(ext_buf[j])
        if d.get("variant_tensors"):
            out["variant_tensors"] = d["variant_tensors"]
        return out

    return decode
