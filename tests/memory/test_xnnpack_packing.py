"""XNNPACK's packed weights in the host kernels' output-channel tiles
(:mod:`edgepart.devices.xnnpack_packing`, :func:`edgepart.memory.runtime.runtime_memory`).

The LiteRT checks build chains of one op kind at channel counts the host's tiles pad (and at
counts they do not) and measure what LiteRT allocates per op beyond what runtime_memory models
(``tools/measure_bookkeeping.py``): with the padding modelled, that residue is the op's
bookkeeping whatever the channel count. Without it, a 3x3 float convolution of 40 channels on
an AVX-512 host left 39.4 KB per op against 4.7 KB at 32 channels.
"""

from __future__ import annotations

import platform

import measure_bookkeeping
import numpy as np
import pytest

from edgepart.devices.xnnpack_packing import GemmTile, host_packing, packing_for_flags
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.memory.runtime import runtime_memory

SKX = {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx2", "fma", "avx"}


def test_tiles_follow_the_cpu_flags() -> None:
    amx = packing_for_flags(SKX | {"avx512_vnni", "amx_int8", "amx_tile"})
    assert (amx.qs8, amx.f32) == (GemmTile(64, 4), GemmTile(32, 1, 16))
    assert "amx" in amx.isa and "avx512f" in amx.isa
    zen4 = packing_for_flags(SKX | {"avx512_vnni"})
    assert zen4.qs8 == GemmTile(16, 8) and zen4.qu8 == GemmTile(16, 8)
    avx2 = packing_for_flags({"avx2", "fma", "avx"})
    assert (avx2.qs8, avx2.f32) == (GemmTile(8, 8), GemmTile(16, 1, 8))
    assert packing_for_flags(set()).f32 == GemmTile(8, 1, 2)  # SSE2, the x86-64 baseline
    arm = packing_for_flags({"asimddp"}, "aarch64")
    assert arm.qs8 == arm.f32 == GemmTile() and "not modelled" in arm.isa


@pytest.mark.parametrize(
    "outputs,fully_connected,nr",
    [
        (8, False, 16),  # the main float kernel (32) is wider than the channels
        (24, False, 16),
        (40, False, 32),  # convolutions keep it once it is not
        (40, True, 16),  # fully connected: the narrower kernel pads 8, the main one 24
        (56, True, 32),  # both pad 8: the main kernel stays
        (1001, True, 16),  # pads 7 against 23 (more than 1% of 1001)
        (3208, True, 32),  # pads 24 against 8, but under 1% of 3208: the main kernel stays
    ],
)
def test_float_kernels_take_the_narrower_tile_as_xnnpack_does(
    outputs: int, fully_connected: bool, nr: int
) -> None:
    p = packing_for_flags(SKX)
    assert p.output_tile("f32", outputs, fully_connected=fully_connected).nr == nr
    assert p.output_tile("qs8", outputs, fully_connected=fully_connected).nr == 16  # no nr2


def test_padded_channels_add_their_weights_bias_and_scale() -> None:
    """A 3x3 int8 convolution of 32 -> 32 channels packs 64 channels in AMX's tiles: each
    padded channel holds 3 x 3 x 32 weight bytes, an int32 bias and a float scale."""
    m = measure_bookkeeping.chain(["CONV_2D"], 1, DType.INT8, 32)
    amx = packing_for_flags(SKX | {"amx_int8", "amx_tile"})
    zen4 = packing_for_flags(SKX | {"avx512_vnni"})
    a = runtime_memory(m, executor="xnnpack", packing=amx)
    b = runtime_memory(m, executor="xnnpack", packing=zen4)
    assert a.xnnpack_packed - b.xnnpack_packed == 32 * (9 * 32 + 4 + 4)
    assert "amx" in a.packing and a.to_dict()["packing"] == a.packing
    # reductions are padded to the tile's kr: 3 input channels in groups of 8
    m3 = _conv(3, 16)
    c = runtime_memory(m3, executor="xnnpack", packing=zen4)
    assert c.xnnpack_packed == 16 * (9 * 8 + 4 + 4)


def _conv(cin: int, cout: int):  # type: ignore[no-untyped-def]
    mb = ModelBuilder()
    g = mb.subgraph("main")
    q = measure_bookkeeping._Q8
    x = g.input("x", DType.INT8, (1, 4, 4, cin), quantization=q)
    w = measure_bookkeeping._weights(g, "w", DType.INT8, (cout, 3, 3, cin), 0)
    b = measure_bookkeeping._bias(g, "b", DType.INT8, cout)
    y = g.tensor("y", DType.INT8, (1, 4, 4, cout), quantization=q)
    g.op("CONV_2D", [x, w, b], [y], options={"padding": "SAME", "stride_w": 1, "stride_h": 1})
    g.output(y)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", y)])
    return mb.build()


X86 = platform.machine().lower() in ("x86_64", "amd64")


@pytest.mark.slow
@pytest.mark.skipif(not X86, reason="XNNPACK's packing tiles are tabulated for x86-64 only")
@pytest.mark.parametrize(
    "kind,dtype,channels",
    [
        ("CONV_2D", DType.FLOAT32, (8, 24, 40)),
        ("CONV_2D_1X1", DType.FLOAT32, (40, 112)),
        ("FULLY_CONNECTED", DType.FLOAT32, (8, 40)),
        ("CONV_2D", DType.INT8, (16, 80)),
        ("FULLY_CONNECTED", DType.INT8, (16, 80)),
    ],
    ids=["conv_f32", "pointwise_f32", "fc_f32", "conv_int8", "fc_int8"],
)
def test_what_litert_packs_at_channel_counts_the_tiles_pad(
    kind: str, dtype: DType, channels: tuple[int, ...]
) -> None:
    """Per op, what LiteRT allocates beyond the modelled data is about the same at 64 channels
    (padded by no tile here) and at counts this host's tiles pad. About: the 8-bit rows grow by
    some 17 bytes per channel that nothing models (4.7 KB at 16 channels, 5.6 KB at 64, 5.8 KB
    at 80 on an AMX host), while the padding they would otherwise show is 7.3 KB at 16 channels
    and 14.5 KB at 80."""
    reference = measure_bookkeeping.op_row(kind, "xnnpack", dtype, copies=4, channels=64)["heap"]
    got = {
        c: measure_bookkeeping.op_row(kind, "xnnpack", dtype, copies=4, channels=c)["heap"]
        for c in channels
    }
    tiles = host_packing()
    assert all(abs(v - reference) <= 0.2 * reference for v in got.values()), (
        tiles.isa,
        reference,
        got,
    )
    assert np.isfinite(reference) and reference > 0
