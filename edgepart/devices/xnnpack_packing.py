"""How XNNPACK lays out packed weights on a host CPU: the output-channel tile of its GEMMs.

XNNPACK packs the static weights of every matrix product it runs (convolutions, fully connected
and transposed convolutions) for one micro-kernel, chosen per instruction set when the library
starts (``src/configs/gemm-config.c``). The kernel computes ``nr`` output channels at a time, so
the packed buffer holds the output channels rounded up to ``nr``, each with its reduction rounded
up to ``kr`` (zeros), its bias and, for 8-bit weights, its scale. On a CPU with AMX the 8-bit
kernels take 64 output channels at a time: a 3x3 convolution of 32 to 32 channels packs twice
its weights (measured with LiteRT 2.3.0 on an Intel Xeon with AMX: 14,465 bytes per such op
where 5,350 had been measured on AMD hosts, whose kernels take 16 or 8).

Float matrix products switch to a second, narrower kernel (``nr2``) when that wastes less:
convolutions when the main kernel is wider than the output channels, fully connected layers
by XNNPACK's ``xnn_use_nr2`` rule (the narrower kernel pads less and the main one pads more than
1% of the channels). The 8-bit kernels have no second one.

The tables are XNNPACK's x86-64 selections, checked against this LiteRT's allocations on an
Intel Xeon with AMX (``tests/memory/test_xnnpack_packing.py``); elsewhere (Arm hosts, or a CPU
the tables do not know) :func:`host_packing` returns tiles of one: no padding is modelled, and
:attr:`XnnpackPacking.isa` says so.
"""

from __future__ import annotations

import functools
import platform
from dataclasses import dataclass

__all__ = ["GemmTile", "XnnpackPacking", "cpu_flags", "host_packing", "packing_for_flags"]


@dataclass(frozen=True)
class GemmTile:
    """One micro-kernel family's packing: ``nr`` output channels per tile, the reduction in
    groups of ``kr``, and ``nr2`` the narrower float kernel (``None``: there is none)."""

    nr: int = 1
    kr: int = 1
    nr2: int | None = None


@dataclass(frozen=True)
class XnnpackPacking:
    """The tiles XNNPACK packs weights for on one CPU: float (``f32``, fp16 weights included:
    they are packed to fp32), signed 8-bit (``qs8``, per-tensor and per-channel) and unsigned
    8-bit (``qu8``) matrix products."""

    isa: str
    f32: GemmTile = GemmTile()
    qs8: GemmTile = GemmTile()
    qu8: GemmTile = GemmTile()

    def output_tile(self, dtype: str, outputs: int, *, fully_connected: bool) -> GemmTile:
        """The tile an operator with ``outputs`` channels packs for: ``dtype`` is ``"f32"``,
        ``"qs8"`` or ``"qu8"``; float operators may take the narrower kernel."""
        tile: GemmTile = getattr(self, dtype)
        if tile.nr2 is None:
            return tile
        narrow = GemmTile(tile.nr2, tile.kr)
        if fully_connected:
            waste = (tile.nr - outputs % tile.nr) % tile.nr
            waste2 = (tile.nr2 - outputs % tile.nr2) % tile.nr2
            if tile.nr > outputs or (waste2 < waste and waste * 100 > outputs):
                return narrow
            return tile
        return narrow if tile.nr > outputs else tile


# XNNPACK's x86-64 choices, most capable first: (CPU flags all required, tiles). Linux names
# the flags in /proc/cpuinfo; XNNPACK's "avx512skx" is AVX-512 F, BW, DQ and VL.
_SKX = ("avx512f", "avx512bw", "avx512dq", "avx512vl")
_X86_QS8 = (
    (("amx_int8", "amx_tile"), "amx", GemmTile(64, 4)),
    (("avx512_vnni", *_SKX), "avx512vnni", GemmTile(16, 8)),
    (("avx_vnni",), "avxvnni", GemmTile(8, 8)),
    (_SKX, "avx512skx", GemmTile(16, 8)),
    (("avx2",), "avx2", GemmTile(8, 8)),
    (("avx",), "avx", GemmTile(4, 8)),
    ((), "sse", GemmTile(4, 8)),
)
_X86_QU8 = (
    (_SKX, "avx512skx", GemmTile(16, 8)),
    (("avx2",), "avx2", GemmTile(8, 8)),
    ((), "sse", GemmTile(4, 8)),
)
_X86_F32 = (
    (("avx512f",), "avx512f", GemmTile(32, 1, 16)),
    (("fma",), "fma3", GemmTile(16, 1, 8)),
    (("avx",), "avx", GemmTile(16, 1, 8)),
    ((), "sse2", GemmTile(8, 1, 2)),
)


def packing_for_flags(flags: frozenset[str] | set[str], machine: str = "x86_64") -> XnnpackPacking:
    """The packing XNNPACK chooses on a CPU with these ``/proc/cpuinfo`` flags."""
    if machine.lower() not in ("x86_64", "amd64"):
        return XnnpackPacking(f"{machine}: packing tiles not tabulated, padding not modelled")

    def first(table: tuple[tuple[tuple[str, ...], str, GemmTile], ...]) -> tuple[str, GemmTile]:
        _, name, tile = next(row for row in table if all(f in flags for f in row[0]))
        return name, tile

    qs8_name, qs8 = first(_X86_QS8)
    _, qu8 = first(_X86_QU8)
    f32_name, f32 = first(_X86_F32)
    return XnnpackPacking(
        f"x86-64 {f32_name} float (tiles of {f32.nr}), {qs8_name} 8-bit (tiles of {qs8.nr})",
        f32=f32,
        qs8=qs8,
        qu8=qu8,
    )


@functools.cache
def cpu_flags() -> frozenset[str] | None:
    """This machine's CPU flags as Linux lists them (``/proc/cpuinfo``; ``None``: unreadable)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        return None
    return frozenset()


@functools.cache
def host_packing() -> XnnpackPacking:
    """The packing XNNPACK chooses on this machine (its CPU flags from ``/proc/cpuinfo``)."""
    machine = platform.machine() or "unknown"
    flags = cpu_flags()
    if flags is None:
        return XnnpackPacking(f"{machine}: CPU flags unknown, padding not modelled")
    return packing_for_flags(flags, machine)
