"""Vectorized, verifying flatbuffer access driven by the generated schema tables.

A :class:`Tables` value is a *column* of flatbuffer tables of one type (for example every tensor
of every subgraph). Reading a field reads it for all of them at once with NumPy gathers, so the
cost of parsing a model is a few hundred array operations whatever its size.

Every position is checked before it is trusted: tables, vtables, fields, vectors and strings must
lie inside the file and be aligned to their size (as flatbuffers' own verifier requires), or a
:class:`~edgepart.errors.ModelFormatError` names the byte offset and what was being read. The
total number of vector elements gathered is bounded by the file size, so a file whose vectors all
alias one large region cannot make the reader allocate much more than the file itself. Tables are
never shared by a TFLite writer, and a file listing one table many times would cost memory per
reference rather than per byte, so a table referenced twice is refused (:meth:`FlatBuffer.claim`).
"""

from __future__ import annotations

import struct
import sys
from typing import Any

import numpy as np

from edgepart.errors import ModelFormatError
from edgepart.schema.tables import ENUMS, TABLES

try:  # the optional C accelerator (same checks, same results; see _fbcore.c)
    from edgepart.tflite import _fbcore  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - exercised when the extension is not built
    _fbcore = None
if sys.byteorder != "little":  # pragma: no cover - the accelerator reads little-endian natively
    _fbcore = None

__all__ = [
    "SCALARS",
    "FlatBuffer",
    "Tables",
    "decode_table",
    "first_outside",
    "verify_union_column",
]

# (numpy dtype, byte size) per scalar schema type
SCALARS: dict[str, tuple[str, int]] = {
    "bool": ("u1", 1),
    "int8": ("i1", 1),
    "uint8": ("u1", 1),
    "utype": ("u1", 1),
    "int16": ("<i2", 2),
    "uint16": ("<u2", 2),
    "int32": ("<i4", 4),
    "uint32": ("<u4", 4),
    "int64": ("<i8", 8),
    "uint64": ("<u8", 8),
    "float32": ("<f4", 4),
    "float64": ("<f8", 8),
}
_SHIFT = {1: 0, 2: 1, 4: 2, 8: 3}


class _Field:
    __slots__ = ("default", "enum", "name", "size", "slot", "type")

    def __init__(self, name: str, slot: int, ftype: str, default: Any, enum: str | None) -> None:
        self.name = name
        self.slot = slot
        self.type = ftype
        self.default = default
        self.enum = enum
        self.size = SCALARS[ftype][1] if ftype in SCALARS else 4


_FIELDS: dict[str, dict[str, _Field]] = {
    t: {f[0]: _Field(*f) for f in fields} for t, fields in TABLES.items()
}
# Per table type: byte size of each vtable slot's inline value, and the slot's field name.
_SLOT_SIZES: dict[str, np.ndarray] = {}
_SLOT_NAMES: dict[str, dict[int, str]] = {}
for _t, _fs in _FIELDS.items():
    _n = max((f.slot for f in _fs.values()), default=-1) + 1
    _sizes = np.ones(_n, dtype=np.int64)
    for _f in _fs.values():
        _sizes[_f.slot] = _f.size
    _SLOT_SIZES[_t] = _sizes
    _SLOT_NAMES[_t] = {f.slot: f.name for f in _fs.values()}


class _Views:
    """``fb.views[type]``: the file as an array of that scalar type, created on first use."""

    __slots__ = ("fb",)

    def __init__(self, fb: FlatBuffer) -> None:
        self.fb = fb

    def __getitem__(self, code: str) -> np.ndarray:
        cache = self.fb._views
        view = cache.get(code)
        if view is None:
            dt, size = SCALARS[code]
            view = cache[code] = np.frombuffer(self.fb.data, dt, count=self.fb.n // size)
        return view


class FlatBuffer:
    """A file's bytes with typed little-endian views, for aligned vectorized reads."""

    def __init__(self, data: Any, source: str) -> None:
        self.data = data
        self.source = source
        self.n = len(data)
        self.u8 = np.frombuffer(data, np.uint8)
        # Total vector elements the reader may gather: a well-formed file spends at least one
        # byte per element, so more than that means vectors alias each other.
        self.budget = self.n + 4096
        self._views: dict[str, np.ndarray] = {}
        self._claimed: np.ndarray | None = None

    @property
    def views(self) -> _Views:
        """Typed little-endian views of the file, one per scalar type (made on first use)."""
        return _Views(self)

    def fail(self, what: str, offset: int) -> ModelFormatError:
        return ModelFormatError(
            f"{self.source}: {what} at byte offset {offset} "
            f"(file is {self.n} bytes); the file is truncated or corrupted, re-export it"
        )

    def check(self, bad: np.ndarray, where: np.ndarray, what: str) -> None:
        """Raise for the first element where ``bad`` holds."""
        if bad.any():
            i = int(np.argmax(bad))
            raise self.fail(what, int(where[i]))

    def spend(self, count: int, what: str, offset: int) -> None:
        self.budget -= count
        if self.budget < 0:
            raise self.fail(
                f"{what}: vectors overlap (more elements than the file can hold)", offset
            )

    def claim(self, pos: np.ndarray, what: str) -> None:
        """Mark the tables at ``pos`` as read; a table referenced twice is an error.

        Positions outside the file or misaligned are left to :class:`Tables`, which names
        them precisely.
        """
        if not len(pos):
            return
        idx = pos[(pos >= 0) & (pos <= self.n - 4) & ((pos & 3) == 0)].astype(np.int64)
        order = np.sort(idx)
        dup = order[1:] == order[:-1]
        # The positions claimed so far, sorted: memory follows the tables, not the file (a
        # flag per 4 bytes of file would be 540 MB for a 2 GB model of one weight table).
        claimed = self._claimed if self._claimed is not None else order[:0]
        seen = np.zeros(len(idx), dtype=bool)
        if len(claimed):
            seen = claimed[np.minimum(np.searchsorted(claimed, idx), len(claimed) - 1)] == idx
        if dup.any() or seen.any():
            first = int(order[1:][dup][0]) if dup.any() else int(idx[np.argmax(seen)])
            raise self.fail(f"{what}: a table referenced twice (shared tables)", first)
        self._claimed = np.insert(claimed, np.searchsorted(claimed, order), order)

    def root(self, table: str, identifier: bytes) -> Tables:
        """The root table, after checking the file identifier."""
        return Tables(self, table, np.array([self.root_position(identifier)]), "model")

    def root_position(self, identifier: bytes) -> int:
        """Byte position of the root table, after checking the file identifier."""
        if self.n < 8:
            raise ModelFormatError(
                f"{self.source}: file is {self.n} bytes, too small to be a TFLite model"
            )
        ident = bytes(self.u8[4:8])
        if ident != identifier:
            raise ModelFormatError(
                f"{self.source}: not a TFLite flatbuffer: file identifier is {ident!r}, "
                f"expected {identifier!r}; is this a .tflite file?"
            )
        return int.from_bytes(self.data[0:4], "little")


class Tables:
    """A column of tables of one schema type at byte positions ``pos``, verified on creation.

    Construction checks, for every table at once: the table and its vtable lie inside the file,
    every present field lies inside its table and is aligned, and every offset field (string,
    vector, sub-table, union value) points inside the file with its whole extent (vector
    elements, string terminator). Field reads afterwards are plain gathers. Sub-tables are
    checked when their own column is built (:meth:`table`, :meth:`tables`, :meth:`verify`).

    Columns of at most :data:`SMALL` tables (the model root, its few subgraphs, signatures) take
    a scalar ``struct`` path, since NumPy's per-call overhead would dominate there. Both paths
    apply the same checks; the tests run the corpus and the fuzzer through each.
    """

    __slots__ = (
        "_any",
        "_col",
        "_ent",
        "_len",
        "_small",
        "_tgt",
        "fb",
        "fields",
        "path",
        "pos",
        "type",
    )

    def __init__(self, fb: FlatBuffer, ttype: str, pos: np.ndarray, path: str) -> None:
        self.fb = fb
        self.type = ttype
        self.fields = _FIELDS[ttype]
        self.pos = pos
        self.path = path
        layout = _LAYOUTS[ttype]
        self._col = layout.col
        self._small = len(pos) <= SMALL
        if _fbcore is not None and ACCELERATE and self._init_native(layout):
            return
        if self._small:
            self._init_small(layout)
        else:
            self._init_vectorized(layout)

    # ------------------------------------------------------------------ construction
    def _init_native(self, layout: _Layout) -> bool:
        """The C accelerator's version of the checks below; False sends us to the NumPy path."""
        k, m, nslots = len(self.pos), len(layout.off_slots_l), len(layout.sizes_l)
        pos = np.ascontiguousarray(self.pos, dtype=np.int64)
        ent = np.empty((k, nslots), dtype=np.int64)
        tgt = np.empty((k, m), dtype=np.int64)
        length = np.empty((k, m), dtype=np.int64)
        ok = _fbcore.table_column(
            self.fb.data,
            pos,
            layout.sizes,
            layout.off_slots,
            layout.esize,
            layout.sized_i,
            layout.is_str,
            ent,
            tgt,
            length,
        )
        if ok is None:
            return False
        self.pos = pos
        self._ent, self._tgt, self._len = ent, tgt, length
        self._any = (ent != 0).any(axis=0).tolist()
        return True

    def _vtable_entries(
        self, layout: _Layout, vt: int, pos_mod8: int, row: int, where: int
    ) -> tuple[list[int], int]:
        """Check one vtable (for tables at positions congruent to ``pos_mod8`` mod 8).

        Returns the vtable entry of every slot (0 = absent) and the table's inline size.
        Flatbuffers share vtables between tables, so this runs once per distinct vtable.
        """
        fb, data, n = self.fb, self.fb.data, self.fb.n
        if vt < 0 or vt > n - 4 or vt & 1:
            raise fb.fail(f"{self.path}[{row}]: {self.type} vtable", where)
        vts, osz = _U16x2.unpack_from(data, vt)
        if vts < 4 or vts & 1 or vt + vts > n or osz < 4:
            raise fb.fail(f"{self.path}[{row}]: {self.type} vtable size", where)
        sizes = layout.sizes_l
        k = min(len(sizes), (vts - 4) // 2)
        ent = list(struct.unpack_from(f"<{k}H", data, vt + 4)) + [0] * (len(sizes) - k)
        for c, e in enumerate(ent):
            if e and (e < 4 or e + sizes[c] > osz or (pos_mod8 + e) & (sizes[c] - 1)):
                raise self._field_error(row, c, where + e)
        return ent, osz

    def _init_vectorized(self, layout: _Layout) -> None:
        fb, pos, n = self.fb, self.pos, self.fb.n
        # positions come from unsigned offsets, so they are never negative
        fb.check((pos > n - 4) | ((pos & 3) != 0), pos, f"{self.path}: {self.type} table")
        vt = pos - fb.views["int32"][pos >> 2]
        ukey, first, inv = np.unique((vt << 3) | (pos & 7), return_index=True, return_inverse=True)
        ents, oszs = [], []
        for key, r in zip(ukey.tolist(), first.tolist(), strict=True):
            ent, osz = self._vtable_entries(layout, key >> 3, key & 7, r, int(pos[r]))
            ents.append(ent)
            oszs.append(osz)
        osz_rows = np.array(oszs, dtype=np.int64)[inv]
        fb.check(pos + osz_rows > n, pos, f"{self.path}: {self.type} table size")
        nslots = len(layout.sizes_l)
        ent_u = np.array(ents, dtype=np.int64).reshape(len(ents), nslots)
        self._ent = ent_u[inv]
        self._any = (ent_u != 0).any(axis=0).tolist()
        self._offsets_vectorized(layout)

    def _offsets_vectorized(self, layout: _Layout) -> None:
        """Check and record the target of every present offset field (strings, vectors, ...)."""
        fb, pos, n = self.fb, self.pos, self.fb.n
        m = len(layout.off_slots_l)
        self._tgt = np.zeros((len(pos), m), dtype=np.int64)
        self._len = np.full((len(pos), m), -1, dtype=np.int64)
        cols = [c for c, slot in enumerate(layout.off_slots_l) if self._any[slot]]
        if not cols:
            return
        cidx = np.array(cols, dtype=np.int64)
        e = self._ent[:, layout.off_slots[cidx]]
        has = e != 0
        a = pos[:, None] + e
        tgt = np.where(has, a + fb.views["uint32"][a >> 2], 0)
        bad = has & ((tgt > n - 4) | ((tgt & 3) != 0))
        if bad.any():
            r, c = np.unravel_index(int(np.argmax(bad)), bad.shape)
            raise self._offset_error(int(r), cols[c], int(tgt[r, c]))
        sized = has & layout.sized[cidx][None, :]
        length = np.where(sized, fb.views["uint32"][tgt >> 2], 0).astype(np.int64)
        esize = layout.esize[cidx][None, :]
        is_str = layout.is_str[cidx][None, :]
        end = tgt + 4 + length * esize
        bad = sized & ((end + is_str > n) | (((tgt + 4) & layout.amask[cidx][None, :]) != 0))
        if bad.any():
            r, c = np.unravel_index(int(np.argmax(bad)), bad.shape)
            raise self._offset_error(int(r), cols[c], int(tgt[r, c]))
        if layout.has_str:
            strs = has & (is_str != 0)
            if strs.any():
                term = fb.u8[end[strs]] != 0
                if term.any():
                    rr, cc = np.nonzero(strs)
                    k = int(np.argmax(term))
                    raise self._offset_error(
                        int(rr[k]), cols[cc[k]], int(tgt[rr[k], cc[k]]), " terminator"
                    )
        self._tgt[:, cidx] = tgt
        self._len[:, cidx] = np.where(has, length, -1)

    def _init_small(self, layout: _Layout) -> None:
        fb, data, n = self.fb, self.fb.data, self.fb.n
        nslots = len(layout.sizes_l)
        ents, tgts, lens = [], [], []
        for r, p in enumerate(self.pos.tolist()):
            if p > n - 4 or p & 3:
                raise fb.fail(f"{self.path}: {self.type} table", p)
            ent, osz = self._vtable_entries(layout, p - _I32.unpack_from(data, p)[0], p & 7, r, p)
            if p + osz > n:
                raise fb.fail(f"{self.path}: {self.type} table size", p)
            trow, lrow = [], []
            for c, slot in enumerate(layout.off_slots_l):
                e = ent[slot]
                if not e:
                    trow.append(0)
                    lrow.append(-1)
                    continue
                t = p + e + _U32.unpack_from(data, p + e)[0]
                if t > n - 4 or t & 3:
                    raise self._offset_error(r, c, t)
                ln = 0
                if layout.sized_l[c]:
                    ln = _U32.unpack_from(data, t)[0]
                    end = t + 4 + ln * layout.esize_l[c]
                    if end + layout.is_str_l[c] > n or (t + 4) & layout.amask_l[c]:
                        raise self._offset_error(r, c, t)
                    if layout.is_str_l[c] and data[end] != 0:
                        raise self._offset_error(r, c, t, " terminator")
                trow.append(t)
                lrow.append(ln)
            ents.append(ent)
            tgts.append(trow)
            lens.append(lrow)
        k = len(ents)
        m = len(layout.off_slots_l)
        self._ent = np.array(ents, dtype=np.int64).reshape(k, nslots)
        self._tgt = np.array(tgts, dtype=np.int64).reshape(k, m)
        self._len = np.array(lens, dtype=np.int64).reshape(k, m)
        self._any = [any(r[c] for r in ents) for c in range(nslots)]

    def _field_error(self, row: int, slot: int, offset: int) -> ModelFormatError:
        name = _SLOT_NAMES[self.type].get(slot, slot)
        return self.fb.fail(f"{self.path}[{row}]: {self.type}.{name} out of its table", offset)

    def _offset_error(self, row: int, col: int, offset: int, what: str = "") -> ModelFormatError:
        slot = _LAYOUTS[self.type].off_slots_l[col]
        name = _SLOT_NAMES[self.type].get(slot, slot)
        return self.fb.fail(
            f"{self.path}[{row}]: {self.type}.{name} points outside the file{what}", offset
        )

    def __len__(self) -> int:
        return len(self.pos)

    # ------------------------------------------------------------------ scalars
    def scalar(self, name: str) -> np.ndarray:
        """The field's value for every table (its default where absent)."""
        f = self.fields[name]
        dt, size = SCALARS[f.type]
        default = 0 if f.default is None else f.default
        npdt = np.dtype(dt).newbyteorder("=")
        if not self._any[f.slot]:
            return np.full(len(self.pos), default, dtype=npdt)
        ent = self._ent[:, f.slot]
        if _fbcore is not None and ACCELERATE:
            out = np.full(len(self.pos), default, dtype=npdt)
            if _fbcore.scalar(self.fb.data, self.pos, np.ascontiguousarray(ent), size, out):
                return out
        if self._small:
            st = _STRUCTS[f.type]
            data = self.fb.data
            vals = [
                st.unpack_from(data, p + e)[0] if e else default
                for p, e in zip(self.pos.tolist(), ent.tolist(), strict=True)
            ]
            return np.array(vals, dtype=npdt)
        vals = self.fb.views[f.type][(self.pos + ent) >> _SHIFT[size]].astype(npdt)
        return np.where(ent != 0, vals, np.asarray(default, dtype=npdt))

    # ------------------------------------------------------------------ offsets
    def _targets(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(present mask, absolute target position) of an offset field."""
        c = self._col[name]
        length = self._len[:, c]
        return length >= 0, self._tgt[:, c]

    def vector_spans(self, name: str, elem_size: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(start, length) of a vector field per table; absent vectors have length 0."""
        c = self._col[name]
        length = self._len[:, c]
        if not self._any[self.fields[name].slot]:
            return np.zeros(len(length), dtype=np.int64), np.zeros(len(length), dtype=np.int64)
        has = length >= 0
        return np.where(has, self._tgt[:, c] + 4, 0), np.where(has, length, 0)

    def vector(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """A scalar vector field as CSR ``(ptr, values)`` over the tables."""
        f = self.fields[name]
        etype = f.type[1:-1]
        if not self._any[f.slot]:
            return np.zeros(len(self.pos) + 1, dtype=np.int64), self.fb.views[etype][:0].copy()
        start, length = self.vector_spans(name)
        return self._gather(etype, SCALARS[etype][1], start, length, name)

    def _gather(
        self, etype: str, size: int, start: np.ndarray, length: np.ndarray, name: str
    ) -> tuple[np.ndarray, np.ndarray]:
        ptr = np.zeros(len(start) + 1, dtype=np.int64)
        np.cumsum(length, out=ptr[1:])
        total = int(ptr[-1])
        view = self.fb.views[etype]
        if total == 0:
            return ptr, view[:0].copy()
        self.fb.spend(total, f"{self.path}: {self.type}.{name}", int(start[0]))
        shift = _SHIFT[size]
        if _fbcore is not None and ACCELERATE:
            out = np.empty(total, dtype=view.dtype)
            if _fbcore.gather(self.fb.data, start, length, size, out):
                return ptr, out
        if self._small:
            parts = [
                view[s >> shift : (s >> shift) + ln]
                for s, ln in zip(start.tolist(), length.tolist(), strict=True)
                if ln
            ]
            return ptr, parts[0].copy() if len(parts) == 1 else np.concatenate(parts)
        word = np.repeat((start >> shift) - ptr[:-1], length) + np.arange(total, dtype=np.int64)
        return ptr, view[word]

    def strings(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(start, length) of a string field per table; absent strings have length -1."""
        c = self._col[name]
        return self._tgt[:, c] + 4, self._len[:, c]

    def element_positions(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """For a vector of offsets: CSR ptr and each element's absolute target position."""
        start, length = self.vector_spans(name)
        if _fbcore is not None and ACCELERATE:
            ptr = np.zeros(len(start) + 1, dtype=np.int64)
            np.cumsum(length, out=ptr[1:])
            total = int(ptr[-1])
            if total:
                self.fb.spend(total, f"{self.path}: {self.type}.{name}", int(start[0]))
            out = np.empty(total, dtype=np.int64)
            if _fbcore.element_positions(self.fb.data, start, length, out):
                return ptr, out
            self.fb.budget += total  # the NumPy path below spends it again
        ptr, offs = self._gather("uint32", 4, start, length, name)
        elem_pos = np.repeat(start - 4 * ptr[:-1], length) + 4 * np.arange(ptr[-1])
        return ptr, elem_pos + offs.astype(np.int64)

    def string_vector(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A ``[string]`` field: CSR ptr plus (start, length) per string."""
        ptr, tgt = self.element_positions(name)
        fb = self.fb
        what = f"{self.path}: {self.type}.{name} string"
        fb.check((tgt > fb.n - 4) | ((tgt & 3) != 0), tgt, what)
        length = fb.views["uint32"][tgt >> 2].astype(np.int64)
        fb.check(tgt + 4 + length >= fb.n, tgt, what)
        fb.check(fb.u8[tgt + 4 + length] != 0, tgt, what + " terminator")
        return ptr, tgt + 4, length

    def table(self, name: str) -> tuple[np.ndarray, Tables]:
        """A sub-table field: (present mask, column of the present sub-tables)."""
        has, tgt = self._targets(name)
        path = f"{self.path}.{name}"
        self.fb.claim(tgt[has], path)
        return has, Tables(self.fb, self.fields[name].type, tgt[has], path)

    def tables(self, name: str) -> tuple[np.ndarray, Tables]:
        """A ``[Table]`` field: CSR ptr over this column and the column of all elements."""
        ptr, tgt = self.element_positions(name)
        return ptr, self.column(name, tgt)

    def column(self, name: str, tgt: np.ndarray) -> Tables:
        """The column of the tables at ``tgt`` (from :meth:`element_positions` of ``name``)."""
        path = f"{self.path}.{name}"
        self.fb.claim(tgt, path)
        return Tables(self.fb, self.fields[name].type[1:-1], tgt, path)

    def union_raw(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """A union field's (type code, value position) per table; values not yet verified."""
        if not self._any[self.fields[name].slot]:
            z = np.zeros(len(self.pos), dtype=np.int64)
            return z, z
        codes = self.scalar(name + "_type")
        has, tgt = self._targets(name)
        codes = np.where(has, codes, 0)
        return codes, np.where(codes != 0, tgt, 0)

    def union(
        self, name: str
    ) -> tuple[np.ndarray, np.ndarray, dict[str, tuple[np.ndarray, Tables]]]:
        """A union field: (type code per table, value position per table, columns per type)."""
        enum = ENUMS[self.fields[name].type.split(":", 1)[1]]
        codes, tgt = self.union_raw(name)
        groups: dict[str, tuple[np.ndarray, Tables]] = {}
        present = codes != 0
        if present.any():
            for code in np.unique(codes[present]).tolist():
                tname = enum.get(int(code))
                rows = np.flatnonzero(codes == code)
                if tname is None or tname not in _FIELDS:
                    raise self.fb.fail(
                        f"{self.path}: {self.type}.{name} has unknown union type {code}",
                        int(self.pos[rows[0]]),
                    )
                groups[tname] = (rows, Tables(self.fb, tname, tgt[rows], f"{self.path}.{name}"))
        return codes, tgt, groups

    # ------------------------------------------------------------------ verification
    def verify(self, skip: frozenset[str] = frozenset(), depth: int = 0) -> None:
        """Check the nested tables and string vectors of every field not in ``skip``.

        Scalars, strings and scalar vectors are already checked on construction.
        """
        if depth > 32:
            raise self.fb.fail(f"{self.path}: tables nested too deeply", int(self.pos[0]))
        if not len(self.pos):
            return
        for f in self.fields.values():
            if f.name in skip or not self._any[f.slot]:
                continue
            kind = f.type
            if kind in SCALARS or kind == "string":
                continue
            if kind == "[string]":
                self.string_vector(f.name)
            elif kind.startswith("union:"):
                for _, sub in self.union(f.name)[2].values():
                    sub.verify(depth=depth + 1)
            elif kind.startswith("["):
                if kind[1:-1] not in SCALARS:
                    self.tables(f.name)[1].verify(depth=depth + 1)
            else:
                self.table(f.name)[1].verify(depth=depth + 1)


class _Layout:
    """Per table type: slot sizes and the description of its offset fields."""

    def __init__(self, ttype: str) -> None:
        fields = sorted(_FIELDS[ttype].values(), key=lambda f: f.slot)
        self.sizes = _SLOT_SIZES[ttype]
        self.sizes_l = self.sizes.tolist()
        offs = [f for f in fields if f.type not in SCALARS]
        self.off_slots = np.array([f.slot for f in offs], dtype=np.int64)
        self.off_slots_l = self.off_slots.tolist()
        self.col = {f.name: i for i, f in enumerate(offs)}
        esize, sized, is_str = [], [], []
        for f in offs:
            if f.type == "string":
                esize.append(1)
                sized.append(True)
                is_str.append(1)
            elif f.type.startswith("["):
                elem = f.type[1:-1]
                esize.append(SCALARS[elem][1] if elem in SCALARS else 4)
                sized.append(True)
                is_str.append(0)
            else:  # sub-table or union value: checked by its own column
                esize.append(0)
                sized.append(False)
                is_str.append(0)
        self.esize = np.array(esize, dtype=np.int64)
        self.sized = np.array(sized, dtype=bool)
        self.sized_i = self.sized.astype(np.int64)
        self.is_str = np.array(is_str, dtype=np.int64)
        self.amask = np.maximum(np.minimum(self.esize, 8), 1) - 1
        self.esize_l = esize
        self.sized_l = sized
        self.is_str_l = is_str
        self.amask_l = self.amask.tolist()
        self.has_str = any(is_str)


_LAYOUTS = {t: _Layout(t) for t in _FIELDS}


# ---------------------------------------------------------------------- union columns
_UNION_TABLES: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, frozenset[int]]] = {}


def _union_tables(enum: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, frozenset[int]]:
    """Per union member code: slot sizes, kinds (0/1 vector/2 string/3 nested), element sizes."""
    if enum in _UNION_TABLES:
        return _UNION_TABLES[enum]
    members = ENUMS[enum]
    width = max([len(_SLOT_SIZES[t]) for t in members.values() if t in _SLOT_SIZES] + [1])
    ncodes = max(members) + 1
    sizes = np.ones((ncodes, width), dtype=np.int64)
    kinds = np.zeros((ncodes, width), dtype=np.int64)
    esize = np.ones((ncodes, width), dtype=np.int64)
    nested = set()
    for code, tname in members.items():
        for f in _FIELDS.get(tname, {}).values():
            sizes[code, f.slot] = f.size
            if f.type in SCALARS:
                continue
            if f.type == "string":
                kinds[code, f.slot] = 2
            elif f.type.startswith("[") and f.type[1:-1] in SCALARS:
                kinds[code, f.slot] = 1
                esize[code, f.slot] = SCALARS[f.type[1:-1]][1]
            else:
                kinds[code, f.slot] = 3
                nested.add(code)
    # unknown member codes (NONE, or newer than the schema) get no row: reject them
    valid = np.zeros(ncodes, dtype=bool)
    valid[[c for c, t in members.items() if t in _FIELDS]] = True
    sizes[~valid] = 0
    _UNION_TABLES[enum] = (sizes, kinds, esize, frozenset(nested))
    return _UNION_TABLES[enum]


def verify_union_column(
    fb: FlatBuffer, enum: str, codes: np.ndarray, pos: np.ndarray, path: str
) -> None:
    """Verify a column of union values of mixed member types.

    Tables sharing a vtable (and member type) share their layout, so the layout checks run once
    per distinct (vtable, type); only members with strings, vectors or sub-tables (rare among
    builtin options) are then checked row by row through a :class:`Tables` of their type.
    """
    sel = np.flatnonzero(codes)
    if not len(sel):
        return
    members = ENUMS[enum]
    codes = codes[sel].astype(np.int64)
    pos = pos[sel]
    if _fbcore is not None and ACCELERATE:
        sizes, kinds, esize, nested = _union_tables(enum)
        if _fbcore.union_column(fb.data, pos, codes, sizes, kinds, esize, sizes.shape[1]):
            for code in nested.intersection(np.unique(codes).tolist()):
                rows = codes == code
                Tables(fb, members[code], pos[rows], path).verify()
            return
    n = fb.n
    fb.check((pos > n - 4) | ((pos & 3) != 0), pos, f"{path}: table")
    vt = pos - fb.views["int32"][pos >> 2]
    key = (((vt << 3) | (pos & 7)) << 8) | codes
    ukey, first, inv = np.unique(key, return_index=True, return_inverse=True)
    oszs = []
    deep: list[int] = []
    for u, (k, r) in enumerate(zip(ukey.tolist(), first.tolist(), strict=True)):
        code = k & 255
        tname = members.get(code)
        if tname is None or tname not in _LAYOUTS:
            raise fb.fail(f"{path}[{r}]: unknown union type {code}", int(pos[r]))
        probe = Tables.__new__(Tables)
        probe.fb, probe.type, probe.path = fb, tname, path
        layout = _LAYOUTS[tname]
        ent, osz = probe._vtable_entries(layout, k >> 11, (k >> 8) & 7, r, int(pos[r]))
        oszs.append(osz)
        if any(ent[s] for s in layout.off_slots_l):
            deep.append(u)
    fb.check(pos + np.array(oszs, dtype=np.int64)[inv] > n, pos, f"{path}: table size")
    for u in deep:
        rows = inv == u
        tname = members[int(ukey[u]) & 255]
        Tables(fb, tname, pos[rows], path).verify()


# ---------------------------------------------------------------------- single-table decoding
def decode_table(fb: FlatBuffer, ttype: str, pos: int) -> dict[str, Any]:
    """Decode one (already verified) table into a dict of every field, defaults included.

    Enum fields become member names, vectors tuples (``bytes`` for ``[uint8]``), sub-tables
    dicts, unions ``{"type": name, **fields}``. Used for the lazily decoded parts of the IR
    (builtin options, quantization details, sparsity), one op at a time.
    """
    data = fb.data
    vt = pos - _I32.unpack_from(data, pos)[0]
    vts = _U16.unpack_from(data, vt)[0]
    out: dict[str, Any] = {}
    fields = _FIELDS[ttype]
    for f in fields.values():
        if f.type == "utype":
            continue
        e = 4 + 2 * f.slot
        off = _U16.unpack_from(data, vt + e)[0] if e < vts else 0
        if f.type in SCALARS:
            if off == 0:
                v: Any = f.default
            else:
                v = _STRUCTS[f.type].unpack_from(data, pos + off)[0]
            if f.type == "bool":
                v = bool(v)
            elif f.enum is not None and isinstance(v, int):
                v = ENUMS[f.enum].get(v, v)
            out[f.name] = v
            continue
        if off == 0:
            out[f.name] = None
            continue
        at = pos + off
        tgt = at + _U32.unpack_from(data, at)[0]
        if f.type == "string":
            n = _U32.unpack_from(data, tgt)[0]
            out[f.name] = bytes(data[tgt + 4 : tgt + 4 + n]).decode("utf-8", "replace")
        elif f.type.startswith("union:"):
            code = 0
            tf = fields.get(f.name + "_type")
            if tf is not None:
                te = 4 + 2 * tf.slot
                toff = _U16.unpack_from(data, vt + te)[0] if te < vts else 0
                code = data[pos + toff] if toff else 0
            tname = ENUMS[f.type.split(":", 1)[1]].get(code)
            out[f.name] = (
                None
                if not code or tname is None
                else {
                    "type": tname,
                    **decode_table(fb, tname, tgt),
                }
            )
        elif f.type.startswith("["):
            etype = f.type[1:-1]
            n = _U32.unpack_from(data, tgt)[0]
            if etype == "uint8":
                out[f.name] = bytes(data[tgt + 4 : tgt + 4 + n])
            elif etype in SCALARS:
                arr = np.frombuffer(data, SCALARS[etype][0], n, tgt + 4)
                out[f.name] = tuple(arr.tolist())
            elif etype == "string":
                items = []
                for k in range(n):
                    p = tgt + 4 + 4 * k
                    s = p + _U32.unpack_from(data, p)[0]
                    m = _U32.unpack_from(data, s)[0]
                    items.append(bytes(data[s + 4 : s + 4 + m]).decode("utf-8", "replace"))
                out[f.name] = tuple(items)
            else:
                items2 = []
                for k in range(n):
                    p = tgt + 4 + 4 * k
                    items2.append(decode_table(fb, etype, p + _U32.unpack_from(data, p)[0]))
                out[f.name] = tuple(items2)
        else:
            out[f.name] = decode_table(fb, f.type, tgt)
    return out


SMALL = 8
# Use the C accelerator when it is built (tests switch it off to check both paths agree).
ACCELERATE = True
_I32 = struct.Struct("<i")
_U16x2 = struct.Struct("<HH")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_STRUCTS = {
    k: struct.Struct("<" + c)
    for k, c in {
        "bool": "?",
        "int8": "b",
        "uint8": "B",
        "utype": "B",
        "int16": "h",
        "uint16": "H",
        "int32": "i",
        "uint32": "I",
        "int64": "q",
        "uint64": "Q",
        "float32": "f",
        "float64": "d",
    }.items()
}


def first_outside(values: np.ndarray, lo: int, hi: int) -> int:
    """Index of the first of ``values`` outside ``[lo, hi)``, or -1."""
    if _fbcore is not None:
        try:
            return int(_fbcore.first_outside(values, lo, hi))
        except (TypeError, BufferError, ValueError):  # a dtype or layout it does not scan
            pass
    bad = (values < lo) | (values >= hi)
    return int(np.argmax(bad)) if bad.any() else -1
