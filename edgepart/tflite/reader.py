"""Read ``.tflite`` flatbuffers into the IR, zero-copy and verified.

The file is memory-mapped; constant data stays in the mapping (``Tensor.data`` is a view), so a
model with gigabytes of weights parses in milliseconds and costs no resident memory for them.
Everything is verified before it is trusted (see :mod:`edgepart.tflite.flatbuf`) and then checked
for meaning (indices in range, buffers inside the file); any defect raises
:class:`~edgepart.errors.ModelFormatError` naming the byte offset or the op and tensor.

>>> from edgepart.tflite.reader import read_model      # doctest: +SKIP
>>> m = read_model("mobilenet_v2.tflite")              # doctest: +SKIP
>>> m.main.num_ops, m.main.op(0).name                  # doctest: +SKIP
(65, 'CONV_2D')
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from edgepart.errors import ModelFormatError
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
from edgepart.tflite._schema import ENUMS, TABLES
from edgepart.tflite.flatbuf import FlatBuffer, Tables, decode_table, verify_union_column

__all__ = ["read_model", "read_model_bytes"]

FILE_IDENTIFIER = b"TFL3"
_MAX_DTYPE = 22


def read_model(path: str | os.PathLike[str]) -> Model:
    """Parse a ``.tflite`` file (memory-mapped; weights are never copied).

    Raises
    ------
    ModelFormatError
        If the file is missing, empty, or not a well-formed TFLite model.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                raise ModelFormatError(f"{path}: file is empty; expected a .tflite model")
            data: Any = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise ModelFormatError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ModelFormatError(f"{path}: is a directory, expected a .tflite file") from None
    except PermissionError as err:
        raise ModelFormatError(f"{path}: cannot read the file ({err.strerror})") from None
    return read_model_bytes(data, source=path)


def read_model_bytes(data: Any, source: str = "<bytes>") -> Model:
    """Parse a model held in memory (``bytes``, ``bytearray``, ``mmap`` or ``memoryview``)."""
    fb = FlatBuffer(data, source)
    root = fb.root("Model", FILE_IDENTIFIER)
    return _Parser(fb, root).model()


class _Parser:
    def __init__(self, fb: FlatBuffer, root: Tables) -> None:
        self.fb = fb
        self.root = root

    def fail(self, msg: str) -> ModelFormatError:
        return ModelFormatError(f"{self.fb.source}: {msg}")

    def model(self) -> Model:
        root = self.root
        opcodes = self.opcodes()
        buffers = self.buffers()
        _, sgs = root.tables("subgraphs")
        if len(sgs) == 0:
            raise self.fail("the model has no subgraphs")
        subgraphs = self.subgraphs(sgs, opcodes, buffers)
        metadata = self.metadata(len(buffers))
        signatures = self.signatures(subgraphs)
        desc_start, desc_len = root.strings("description")
        description = self.text(int(desc_start[0]), int(desc_len[0]))
        extra: dict[str, Any] = {}
        _, mb = root.vector("metadata_buffer")
        if len(mb):
            extra["metadata_buffer"] = tuple(mb.tolist())
        # Newest schema fields: verify them so nothing unchecked is left, keep them verbatim.
        root.verify(
            skip=frozenset({"operator_codes", "subgraphs", "buffers", "metadata", "signature_defs"})
        )
        return Model(
            subgraphs=tuple(subgraphs),
            opcodes=opcodes,
            buffers=buffers,
            metadata=metadata,
            signature_defs=signatures,
            description=description,
            version=int(root.scalar("version")[0]),
            source=self.fb.source,
            extra=extra or None,
        )

    def text(self, start: int, length: int) -> str | None:
        if length < 0:
            return None
        return bytes(self.fb.u8[start : start + length]).decode("utf-8", "replace")

    # ------------------------------------------------------------------ tables
    def opcodes(self) -> tuple[OpCode, ...]:
        _, oc = self.root.tables("operator_codes")
        dep = oc.scalar("deprecated_builtin_code").astype(np.int64)
        code = oc.scalar("builtin_code").astype(np.int64)
        version = oc.scalar("version").tolist()
        builtin = np.maximum(dep, code).tolist()
        cs, cl = oc.strings("custom_code")
        bad = np.flatnonzero(np.maximum(dep, code) < 0)
        if len(bad):
            raise self.fail(f"operator_codes[{bad[0]}] has negative builtin code {code[bad[0]]}")
        return tuple(
            OpCode(int(builtin[i]), self.text(int(cs[i]), int(cl[i])), int(version[i]))
            for i in range(len(oc))
        )

    def buffers(self) -> BufferTable:
        _, bt = self.root.tables("buffers")
        start, length = bt.vector_spans("data", 1)
        offset = bt.scalar("offset").astype(np.uint64)
        size = bt.scalar("size").astype(np.uint64)
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
            start = start.copy()
            length = length.copy()
            start[ext] = offset[ext].astype(np.int64)
            length[ext] = size[ext].astype(np.int64)
        return BufferTable(
            mems=(self.fb.data,),
            mem=np.zeros(len(start), dtype=np.int32),
            start=start,
            length=length,
            external=ext,
        )

    def metadata(self, num_buffers: int) -> tuple[Metadata, ...]:
        _, md = self.root.tables("metadata")
        ns, nl = md.strings("name")
        buf = md.scalar("buffer").tolist()
        out = []
        for i in range(len(md)):
            if not 0 <= buf[i] < num_buffers:
                raise self.fail(f"metadata[{i}] names buffer {buf[i]} of {num_buffers}")
            out.append(Metadata(self.text(int(ns[i]), int(nl[i])) or "", int(buf[i])))
        return tuple(out)

    def signatures(self, subgraphs: Sequence[Subgraph]) -> tuple[SignatureDef, ...]:
        _, sd = self.root.tables("signature_defs")
        ks, kl = sd.strings("signature_key")
        sub = sd.scalar("subgraph_index").tolist()
        maps = []
        for field in ("inputs", "outputs"):
            ptr, tm = sd.tables(field)
            s, n = tm.strings("name")
            idx = tm.scalar("tensor_index").tolist()
            names = [self.text(int(s[j]), int(n[j])) or "" for j in range(len(tm))]
            maps.append((ptr.tolist(), names, idx))
        out = []
        for i in range(len(sd)):
            if not 0 <= sub[i] < len(subgraphs):
                raise self.fail(f"signature_defs[{i}] names subgraph {sub[i]}")
            nt = subgraphs[sub[i]].num_tensors
            io = []
            for field, (ptr, names, idx) in zip(("inputs", "outputs"), maps, strict=True):
                rows = []
                for j in range(ptr[i], ptr[i + 1]):
                    if not 0 <= idx[j] < nt:
                        raise self.fail(
                            f"signature_defs[{i}].{field} {names[j]!r} names tensor {idx[j]} "
                            f"of subgraph {sub[i]}, which has {nt} tensors"
                        )
                    rows.append((names[j], int(idx[j])))
                io.append(tuple(rows))
            key = self.text(int(ks[i]), int(kl[i])) or ""
            out.append(SignatureDef(key, int(sub[i]), io[0], io[1]))
        return tuple(out)

    # ------------------------------------------------------------------ subgraphs
    def subgraphs(
        self, sgs: Tables, opcodes: tuple[OpCode, ...], buffers: BufferTable
    ) -> list[Subgraph]:
        fb = self.fb
        tptr, tens = sgs.tables("tensors")
        optr, ops = sgs.tables("operators")
        iptr, ins = sgs.vector("inputs")
        outptr, outs = sgs.vector("outputs")
        ns, nl = sgs.strings("name")
        dbg = sgs.scalar("debug_metadata_index").tolist()

        # ---- tensor columns, all subgraphs at once
        shp_ptr, shp = tens.vector("shape")
        sig_has, _ = tens._targets("shape_signature")
        sig_ptr, sig = tens.vector("shape_signature")
        dtype = tens.scalar("type")
        tbuf = tens.scalar("buffer").astype(np.int64)
        name_s, name_l = tens.strings("name")
        is_var = tens.scalar("is_variable")
        has_rank = tens.scalar("has_rank")
        ext_buf = tens.scalar("external_buffer")
        q_has, qt = tens.table("quantization")
        quant = _QuantColumn(qt, q_has)
        sp_has, spt = tens.table("sparsity")
        spt.verify()
        vt_has, vtt = tens.tables("variant_tensors")
        vtt.verify()
        if len(dtype):
            bad = (dtype < 0) | (dtype > _MAX_DTYPE)
            if bad.any():
                raise self.fail(f"tensor #{int(np.argmax(bad))} has unknown type {dtype[bad][0]}")
            bad = (tbuf >= len(buffers)) | (tbuf < 0)
            if bad.any():
                i = int(np.argmax(bad))
                raise self.fail(
                    f"tensor #{i} names buffer {tbuf[i]} but the model has {len(buffers)} buffers"
                )
        if len(shp) and (shp < -1).any():
            raise self.fail(f"a tensor shape has dimension {int(shp.min())}")

        # ---- op columns
        opc = ops.scalar("opcode_index").astype(np.int64)
        in_ptr, in_idx = ops.vector("inputs")
        out_ptr, out_idx = ops.vector("outputs")
        im_ptr, im_idx = ops.vector("intermediates")
        opt_code, opt_pos = ops.union_raw("builtin_options")
        opt2_code, opt2_pos = ops.union_raw("builtin_options2")
        verify_union_column(fb, "BuiltinOptions", opt_code, opt_pos, "operators.builtin_options")
        verify_union_column(
            fb, "BuiltinOptions2", opt2_code, opt2_pos, "operators.builtin_options2"
        )
        opt_type = _code_names("BuiltinOptions", opt_code)
        opt2_type = _code_names("BuiltinOptions2", opt2_code)
        options = _OptionsColumn(fb, opt_type, opt_pos)
        options2 = _OptionsColumn(fb, opt2_type, opt2_pos)
        co_s, co_l = ops.vector_spans("custom_options", 1)
        co_fmt = ops.scalar("custom_options_format")
        mv_s, mv_l = ops.vector_spans("mutating_variable_inputs", 1)
        lco_off = ops.scalar("large_custom_options_offset")
        lco_size = ops.scalar("large_custom_options_size")
        op_dbg = ops.scalar("debug_metadata_index")
        if len(opc) and ((opc < 0) | (opc >= len(opcodes))).any():
            i = int(np.argmax((opc < 0) | (opc >= len(opcodes))))
            raise self.fail(f"operator #{i} uses opcode {opc[i]} of {len(opcodes)}")

        out: list[Subgraph] = []
        tp, op_ = tptr.tolist(), optr.tolist()
        calls = [k for k, t in enumerate(opt_type) if t in _CALLING_OPTIONS] + [
            k for k, t in enumerate(opt2_type) if t in _CALLING_OPTIONS
        ]
        for s in range(len(sgs)):
            t0, t1 = tp[s], tp[s + 1]
            o0, o1 = op_[s], op_[s + 1]
            nt = t1 - t0
            op_in = _slice_csr(in_ptr, in_idx, o0, o1)
            op_out = _slice_csr(out_ptr, out_idx, o0, o1)
            op_im = _slice_csr(im_ptr, im_idx, o0, o1)
            sg_in = ins[iptr[s] : iptr[s + 1]].astype(np.int32)
            sg_out = outs[outptr[s] : outptr[s + 1]].astype(np.int32)
            where = f"subgraph {s}"
            _check_indices(self, op_in.idx, nt, -1, f"{where}: an operator input")
            _check_indices(self, op_out.idx, nt, 0, f"{where}: an operator output")
            _check_indices(self, op_im.idx, nt, 0, f"{where}: an operator intermediate")
            _check_indices(self, sg_in, nt, 0, f"{where}: a subgraph input")
            _check_indices(self, sg_out, nt, 0, f"{where}: a subgraph output")
            extra_rows = self.op_extra(o0, o1, co_fmt, mv_s, mv_l, lco_off, lco_size, op_dbg)
            out.append(
                Subgraph(
                    name=self.text(int(ns[s]), int(nl[s])),
                    inputs=sg_in,
                    outputs=sg_out,
                    op_opcode=opc[o0:o1].astype(np.int32),
                    op_inputs=op_in,
                    op_outputs=op_out,
                    op_intermediates=op_im,
                    op_options=LazySeq(o1 - o0, options.decoder(o0)),
                    op_options2=LazySeq(o1 - o0, options2.decoder(o0)),
                    op_custom_options=LazySeq(
                        o1 - o0, _custom_options_decoder(fb, co_s, co_l, lco_off, lco_size, o0)
                    ),
                    op_extra=extra_rows,
                    tensor_dtype=dtype[t0:t1],
                    tensor_buffer=tbuf[t0:t1],
                    tensor_shape=_slice_csr(shp_ptr, shp, t0, t1),
                    tensor_signature=_slice_csr(sig_ptr, sig, t0, t1),
                    tensor_has_signature=sig_has[t0:t1],
                    tensor_is_variable=is_var[t0:t1].astype(bool),
                    tensor_has_rank=has_rank[t0:t1].astype(bool),
                    tensor_names=LazySeq(nt, _name_decoder(fb, name_s, name_l, t0)),
                    tensor_quantization=LazySeq(nt, quant.decoder(t0)),
                    tensor_sparsity=LazySeq(nt, _sparsity_decoder(fb, sp_has, spt, t0)),
                    tensor_extra=LazySeq(nt, _tensor_extra_decoder(fb, ext_buf, vt_has, tens, t0)),
                    opcodes=opcodes,
                    buffers=buffers,
                    debug_metadata_index=int(dbg[s]),
                )
            )
        if calls:
            owner = np.searchsorted(optr, np.array(calls), side="right") - 1
            self.check_control_flow(
                out, [(int(o), int(k - optr[o])) for o, k in zip(owner, calls, strict=True)]
            )
        return out

    def op_extra(
        self,
        o0: int,
        o1: int,
        fmt: np.ndarray,
        mv_s: np.ndarray,
        mv_l: np.ndarray,
        lco_off: np.ndarray,
        lco_size: np.ndarray,
        dbg: np.ndarray,
    ) -> Sequence[dict[str, Any]]:
        """Rarely set op fields, as a dict per op (shared empty dict for the common case)."""
        empty: dict[str, Any] = {}
        rows: list[dict[str, Any]] = [empty] * (o1 - o0)
        unusual = (fmt[o0:o1] != 0) | (mv_l[o0:o1] > 0) | (lco_off[o0:o1] > 1) | (dbg[o0:o1] != -1)
        for k in np.flatnonzero(unusual).tolist():
            i = o0 + k
            d: dict[str, Any] = {}
            if fmt[i] != 0:
                d["custom_options_format"] = int(fmt[i])
            if mv_l[i] > 0:
                d["mutating_variable_inputs"] = tuple(
                    bool(b) for b in self.fb.u8[mv_s[i] : mv_s[i] + mv_l[i]].tolist()
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
            rows[k] = d
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
    p = ptr[r0 : r1 + 1]
    base = int(p[0])
    return Csr(p - base, idx[base : int(p[-1])].astype(np.int32, copy=False))


def _check_indices(parser: _Parser, idx: np.ndarray, n: int, lo: int, what: str) -> None:
    if len(idx):
        bad = (idx < lo) | (idx >= n)
        if bad.any():
            v = int(idx[np.argmax(bad)])
            raise parser.fail(f"{what} names tensor {v}, but the subgraph has {n} tensors")


def _code_names(enum: str, codes: np.ndarray) -> list[str | None]:
    names = ENUMS[enum]
    return [names[c] if c else None for c in codes.tolist()]


def _group_types(n: int, groups: dict[str, tuple[np.ndarray, Tables]]) -> list[str | None]:
    types: list[str | None] = [None] * n
    for tname, (rows, _) in groups.items():
        for r in rows.tolist():
            types[r] = tname
    return types


class _OptionsColumn:
    """Builtin options of every op, decoded one options *type* at a time.

    The first time an op of type T is asked for, the scalar fields of every T-op are read as
    NumPy columns (one gather per field); each op's ``Options`` is then a dict built from those
    columns. Types with vectors, strings or nested tables decode those fields per op.
    """

    def __init__(self, fb: FlatBuffer, types: list[str | None], pos: np.ndarray) -> None:
        self.fb = fb
        self.types = types
        self.pos = pos
        self.columns: dict[str, tuple[dict[int, int], dict[str, list[Any]], list[str]]] = {}

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


def _custom_options_decoder(
    fb: FlatBuffer,
    start: np.ndarray,
    length: np.ndarray,
    large_offset: np.ndarray,
    large_size: np.ndarray,
    base: int,
) -> Any:
    """Custom options bytes, inline or stored after the flatbuffer (large custom options)."""

    def decode(i: int) -> bytes | None:
        j = base + i
        n = int(length[j])
        if n == 0:
            if large_offset[j] > 1 and large_size[j] > 0:
                s = int(large_offset[j])
                return bytes(fb.u8[s : s + int(large_size[j])])
            return None
        s = int(start[j])
        return bytes(fb.u8[s : s + n])

    return decode


def _name_decoder(fb: FlatBuffer, start: np.ndarray, length: np.ndarray, base: int) -> Any:
    def decode(i: int) -> str:
        n = int(length[base + i])
        if n < 0:
            return ""
        s = int(start[base + i])
        return bytes(fb.u8[s : s + n]).decode("utf-8", "replace")

    return decode


class _QuantColumn:
    """Quantization of every tensor, decoded vectorized at parse time."""

    def __init__(self, qt: Tables, has: np.ndarray) -> None:
        self.row = np.full(len(has), -1, dtype=np.int64)
        self.row[has] = np.arange(int(has.sum()))
        self.scale = qt.vector("scale")
        self.zero_point = qt.vector("zero_point")
        self.min = qt.vector("min")
        self.max = qt.vector("max")
        self.min_has = qt._targets("min")[0]
        self.max_has = qt._targets("max")[0]
        self.qdim = qt.scalar("quantized_dimension")
        _, self.details_pos, self.details = qt.union("details")
        for _, g in self.details.values():
            g.verify()
        self.details_type = _group_types(len(qt), self.details)
        self.fb = qt.fb

    def decoder(self, base: int) -> Any:
        def decode(i: int) -> Quantization | None:
            r = int(self.row[base + i])
            if r < 0:
                return None
            details = None
            tname = self.details_type[r]
            if tname is not None:
                details = Options(tname, decode_table(self.fb, tname, int(self.details_pos[r])))
            return Quantization(
                scale=_row(self.scale, r),
                zero_point=_row(self.zero_point, r),
                quantized_dimension=int(self.qdim[r]),
                min=_row(self.min, r) if self.min_has[r] else None,
                max=_row(self.max, r) if self.max_has[r] else None,
                details=details,
            )

        return decode


def _row(csr: tuple[np.ndarray, np.ndarray], r: int) -> np.ndarray:
    ptr, vals = csr
    return vals[ptr[r] : ptr[r + 1]]


def _sparsity_decoder(fb: FlatBuffer, has: np.ndarray, spt: Tables, base: int) -> Any:
    rows = np.full(len(has), -1, dtype=np.int64)
    rows[has] = np.arange(int(has.sum()))

    def decode(i: int) -> Sparsity | None:
        r = int(rows[base + i])
        if r < 0:
            return None
        d = decode_table(fb, "SparsityParameters", int(spt.pos[r]))
        dims = []
        for m in d["dim_metadata"] or ():
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


def _tensor_extra_decoder(
    fb: FlatBuffer, ext_buf: np.ndarray, vt_has: np.ndarray, tens: Tables, base: int
) -> Any:
    empty: dict[str, Any] = {}

    def decode(i: int) -> dict[str, Any]:
        j = base + i
        if ext_buf[j] == 0 and vt_has[j] == vt_has[j + 1]:
            return empty
        d = decode_table(fb, "Tensor", int(tens.pos[j]))
        out: dict[str, Any] = {}
        if ext_buf[j]:
            out["external_buffer"] = int(ext_buf[j])
        if d.get("variant_tensors"):
            out["variant_tensors"] = d["variant_tensors"]
        return out

    return decode
