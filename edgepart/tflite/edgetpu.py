"""What a compiled Edge TPU program says about itself: the ``edgetpu-custom-op``'s options.

``edgetpu_compiler`` replaces the ops it maps with one custom op, ``edgetpu-custom-op``, whose
``custom_options`` hold the whole compiled program: a FlexBuffers map (``"1"`` version, ``"4"``
the serialized executable, ``"5"`` execution preference, ``"6"``/``"7"`` chip versions and extra
executables; libedgetpu ``tflite/custom_op_data.cc``). The executable is a DarwiNN ``Package``
flatbuffer (file identifier ``DWN1``, libedgetpu ``executable/executable.fbs``) holding one or
more ``Executable`` tables: the parameters (the model's weights, in the TPU's layout), the
instruction bitstreams, the input and output layers, and the compiler's own estimate of the run
time in cycles.

:func:`decode_edgetpu_program` reads what it can of that, bounds-checked (the bytes come from a
file: a defect stops the decoding and is reported in ``error``, it never raises), so ``inspect``
can count the program's parameters as the model's parameters and show its layers. Nothing here
runs the program: that needs the Edge TPU and libedgetpu.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from flatbuffers import flexbuffers

__all__ = ["EDGETPU_OP", "EdgeTpuExecutable", "EdgeTpuProgram", "decode_edgetpu_program"]

EDGETPU_OP = "edgetpu-custom-op"
"""The custom code of a compiled Edge TPU program."""

_EXECUTABLE_TYPES = {0: "STAND_ALONE", 1: "PARAMETER_CACHING", 2: "EXECUTION_ONLY"}


@dataclass(frozen=True)
class EdgeTpuLayer:
    """An input or output of a compiled executable (the TPU's y/x/z view of the tensor)."""

    name: str
    size_bytes: int
    dims: tuple[int, int, int]


@dataclass(frozen=True)
class EdgeTpuExecutable:
    """One compiled executable of the program."""

    type: str
    name: str
    chip: str
    parameter_bytes: int
    instruction_bytes: int
    scratch_bytes: int
    estimated_cycles: int
    inputs: tuple[EdgeTpuLayer, ...] = ()
    outputs: tuple[EdgeTpuLayer, ...] = ()


@dataclass(frozen=True)
class EdgeTpuProgram:
    """What :func:`decode_edgetpu_program` decoded (``error`` says where it stopped, if it did)."""

    total_bytes: int
    version: int | None = None
    compiler_version: str = ""
    executables: tuple[EdgeTpuExecutable, ...] = ()
    error: str | None = None
    extra_executables: int = 0

    @property
    def parameter_bytes(self) -> int:
        """Bytes of parameters (weights) across the executables."""
        return sum(e.parameter_bytes for e in self.executables)

    @property
    def estimated_cycles(self) -> int | None:
        """The compiler's cycle estimate of one inference (the run-time executable's), if any."""
        runs = [e for e in self.executables if e.type != "PARAMETER_CACHING"]
        est = [e.estimated_cycles for e in runs if e.estimated_cycles > 0]
        return max(est) if est else None

    def describe(self) -> str:
        """One line: compiler, chip, executables, parameters, cycle estimate, layers."""
        parts = [f"Edge TPU program {self.total_bytes:,} B"]
        if any(c.isdigit() for c in self.compiler_version):
            parts.append(f"compiler {self.compiler_version}")
        for e in self.executables:
            io = ", ".join(f"{x.name or '?'} {'x'.join(map(str, x.dims))}" for x in e.inputs)
            oo = ", ".join(f"{x.name or '?'} {'x'.join(map(str, x.dims))}" for x in e.outputs)
            text = (
                f"{e.type.lower()} executable{' ' + repr(e.name) if e.name else ''} for "
                f"{e.chip or 'an unnamed chip'}: parameters {e.parameter_bytes:,} B, "
                f"instructions {e.instruction_bytes:,} B"
            )
            if e.estimated_cycles:
                text += f", {e.estimated_cycles:,} cycles estimated by the compiler"
            if io or oo:
                text += f"; in {io or '-'} -> out {oo or '-'}"
            parts.append(text)
        if self.extra_executables:
            parts.append(f"{self.extra_executables} more executable(s) for other chips")
        if self.error:
            parts.append(f"not decoded further: {self.error}")
        return "; ".join(parts)


class _Bad(Exception):
    pass


class _Fb:
    """Bounds-checked reads of a flatbuffer held in ``data``."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def _unpack(self, fmt: str, pos: int) -> int:
        size = struct.calcsize(fmt)
        if pos < 0 or pos + size > len(self.data):
            raise _Bad(f"read of {size} bytes at {pos} is outside the {len(self.data)} bytes")
        return int(struct.unpack_from(fmt, self.data, pos)[0])

    def root(self) -> int:
        return self._unpack("<I", 0)

    def field(self, table: int, fid: int) -> int | None:
        """Absolute position of field ``fid`` of the table at ``table``, or None if absent."""
        vt = table - self._unpack("<i", table)
        vt_size = self._unpack("<H", vt)
        slot = 4 + 2 * fid
        if slot + 2 > vt_size:
            return None
        off = self._unpack("<H", vt + slot)
        return table + off if off else None

    def scalar(self, table: int, fid: int, fmt: str, default: int = 0) -> int:
        pos = self.field(table, fid)
        return default if pos is None else self._unpack(fmt, pos)

    def ref(self, table: int, fid: int) -> int | None:
        pos = self.field(table, fid)
        return None if pos is None else pos + self._unpack("<I", pos)

    def vector(self, table: int, fid: int) -> tuple[int, int] | None:
        """(start of elements, length) of a vector field."""
        at = self.ref(table, fid)
        if at is None:
            return None
        n = self._unpack("<I", at)
        if n > len(self.data):  # elements are at least a byte each
            raise _Bad(f"vector at {at} claims {n} elements")
        return at + 4, n

    def blob(self, table: int, fid: int) -> bytes:
        v = self.vector(table, fid)
        if v is None:
            return b""
        start, n = v
        if start + n > len(self.data):
            raise _Bad(f"byte vector at {start} runs past the end")
        return self.data[start : start + n]

    def string(self, table: int, fid: int) -> str:
        return self.blob(table, fid).decode("utf-8", "replace")

    def tables(self, table: int, fid: int) -> list[int]:
        v = self.vector(table, fid)
        if v is None:
            return []
        start, n = v
        return [start + 4 * i + self._unpack("<I", start + 4 * i) for i in range(n)]

    def strings_at(self, table: int, fid: int) -> list[bytes]:
        out = []
        for at in self.tables(table, fid):
            n = self._unpack("<I", at)
            if at + 4 + n > len(self.data):
                raise _Bad(f"string at {at} runs past the end")
            out.append(self.data[at + 4 : at + 4 + n])
        return out


def _layers(fb: _Fb, exe: int, fid: int) -> tuple[EdgeTpuLayer, ...]:
    out = []
    for layer in fb.tables(exe, fid):
        dims = (
            fb.scalar(layer, 2, "<i"),
            fb.scalar(layer, 3, "<i"),
            fb.scalar(layer, 4, "<i"),
        )
        out.append(EdgeTpuLayer(fb.string(layer, 0), fb.scalar(layer, 1, "<i"), dims))
    return tuple(out)


def _executable(data: bytes) -> EdgeTpuExecutable:
    fb = _Fb(data)
    exe = fb.root()
    bitstreams = fb.tables(exe, 5)
    instr = sum(len(fb.blob(b, 0)) for b in bitstreams)
    cycles = fb.scalar(exe, 16, "<q") or fb.scalar(exe, 11, "<i")
    return EdgeTpuExecutable(
        type=_EXECUTABLE_TYPES.get(fb.scalar(exe, 13, "<h"), "UNKNOWN"),
        name=fb.string(exe, 1),
        chip=fb.string(exe, 10),
        parameter_bytes=len(fb.blob(exe, 6)),
        instruction_bytes=instr,
        scratch_bytes=fb.scalar(exe, 4, "<i"),
        estimated_cycles=int(cycles),
        inputs=_layers(fb, exe, 8),
        outputs=_layers(fb, exe, 9),
    )


def decode_edgetpu_program(custom_options: bytes) -> EdgeTpuProgram:
    """Decode an ``edgetpu-custom-op``'s ``custom_options`` as far as it goes (never raises)."""
    total = len(custom_options)
    try:
        root = flexbuffers.GetRoot(bytearray(custom_options))
        if not root.IsMap:
            return EdgeTpuProgram(total, error="the options are not a FlexBuffers map")
        mp = root.AsMap
        keys = [mp.Keys[i].AsKey for i in range(len(mp.Keys))]
        values = {k: mp.Values[i] for i, k in enumerate(keys)}
        version = values["1"].AsInt if "1" in values and values["1"].IsInt else None
        if "4" not in values:
            return EdgeTpuProgram(total, version, error="no executable (key '4')")
        package = bytes(values["4"].AsStringBytes)
        extra = len(values["7"].AsVector) if "7" in values and values["7"].IsVector else 0
    except Exception as err:  # FlexBuffers' reader raises anything on a defect
        return EdgeTpuProgram(total, error=f"the options do not decode ({type(err).__name__})")
    if package[4:8] != b"DWN1":
        return EdgeTpuProgram(total, version, error="the executable is not a DWN1 package")
    fb = _Fb(package)
    compiler = ""
    exes: list[EdgeTpuExecutable] = []
    try:
        pkg = fb.root()
        compiler = fb.string(pkg, 4)
        multi = fb.blob(pkg, 1)
        mfb = _Fb(multi)
        for blob in mfb.strings_at(mfb.root(), 0):
            exes.append(_executable(blob))
    except (_Bad, struct.error, UnicodeError) as err:
        return EdgeTpuProgram(total, version, compiler, tuple(exes), str(err), extra)
    return EdgeTpuProgram(total, version, compiler, tuple(exes), None, extra)
