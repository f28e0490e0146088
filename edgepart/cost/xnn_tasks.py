"""Which XNNPACK kernels run as one task, on any number of threads.

XNNPACK hands every operator to pthreadpool as a range of tasks (output rows, tiles of a
GEMM, 16 KiB blocks of an element-wise op). When the whole range is one task, pthreadpool
runs it on the calling thread and never wakes the others (``pthreadpool_parallelize_*``:
"range <= tile"). Such a kernel takes on N threads what it takes on one; a kernel of two
tasks or more pays for waking the pool and joining it, which on a small kernel costs more
than the split saves.

Measured on the calibration host (a Zen 4 guest, LiteRT 2.3.0, XNNPACK, back-to-back
invocations, 2026-12-04): 20 float depthwise convolutions of 64 channels over 13
frames with one output row took 143 ns each on one thread and 144 ns on two; with 13 output
rows, 1,183 ns and 3,210 ns. A fully connected layer of one row took 77 / 76 ns with 32
outputs and 210 / 799 ns with 64 (two 32-wide tiles on AVX-512); an ``ADD`` of 16 KiB 615 /
614 ns, of 64 KiB 2.9 / 8.5 us. Twenty-five minutes later the fully connected layer of 128
outputs took 838 / 913 ns (before: 833 / 1,997) and the 64 KiB ``ADD`` 2.9 / 2.3 us: what
waking the pool costs on this guest varies, whether it is paid does not
(``benchmarks/xnn_one_task.py``).

:func:`one_task` says which kernels are one task whatever the machine. The rules follow
XNNPACK's ``reshape`` functions (``src/operators/*.c``) and stay on the safe side where the
split depends on the machine (a GEMM's tile width is 8 to 32 floats, 4 to 16 8-bit values,
by instruction set): a kernel not claimed here is left to the fitted multi-thread model.

- depthwise convolution (``reshape_dwconv``): tasks over batch x output rows x channel
  tiles; a channel tile is the channels whose taps, weights and output fit 32 KiB
  (``primary_tile`` taps of input and weights, bias and scale, one output), the primary tile
  being 9 or 25 taps on x86 and Arm (kernels of more than 25 taps run multipass: not claimed);
- pooling (``max-pooling-nhwc.c``, ``average-pooling-nhwc.c``): batch x output rows;
- soft-max (``softmax-nc.c``): one task per row;
- element-wise binary ops (``binary-elementwise-nd.c``): tiles of 16 KiB of output once the
  shapes are compressed to one or two dimensions (equal shapes, a scalar operand, or one value
  per row); other broadcasts split over outer dimensions: not claimed;
- element-wise unary ops (``unary-elementwise-nc.c``): tiles of 16 KiB of input; 8-bit
  functions by lookup table (``math_q8``) tiles of 1 KiB;
- slices (``slice-nd.c``) and concatenations (a copy per input): a task per run of the output
  that is contiguous in the input (a slice) or per outer row (a concatenation), and runs split
  further in tiles of copies. Measured (LiteRT 2.3.0, float, one against two threads, an
  Intel Xeon guest, 2026-12-05; two slices of a window of frames and their concatenation):
  slices of one run took the same on two threads up to 16 KiB (64 frames of 64 floats sliced
  from 65: 314 / 317 ns) and 3.3 times as long past it (65 of 66: 472 / 1,573 ns); half the
  channels of two pixels (two runs of 32 floats), 97 / 2,151 ns. Claimed: one run (one
  outer row) of at most 16 KiB;
- convolution and fully connected (GEMM, ``xnn_gemm_best_tile_size``): tiles of ``mr`` rows
  by ``nr`` or more outputs: one row and at most 8 float (4 8-bit) outputs is one tile on
  every instruction set XNNPACK has. Where the tile width of this host was measured
  (``gemm_outputs``: :func:`edgepart.profiling.gemm_tiles.measure_task_widths`, recorded by
  ``calibrate --host``), one row of at most that many outputs: 32 float and 64 8-bit or
  dynamically quantized outputs on an Intel Xeon with AMX, where the safe widths left the
  64-channel one-row convolutions of the wake-word models to the split model (priced
  2.2-2.6 times what they cost on two threads).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from edgepart.cost.kernels import FEATURES

__all__ = [
    "EW_TILE_BYTES",
    "GEMM_SAFE_OUTPUTS",
    "LUT_TILE_BYTES",
    "gemm_one_task_outputs",
    "gemm_row_tile",
    "gemm_type",
    "one_task",
    "one_task_of",
    "type_suffix",
]

EW_TILE_BYTES = 16 * 1024  # element-wise ops: bytes per task (XNNPACK's get_tile_size)
LUT_TILE_BYTES = 1024  # 8-bit lookup-table ops with more than one thread
DWCONV_CACHE_BYTES = 32 * 1024  # the working set a depthwise channel tile is sized to
# outputs one GEMM tile holds on every instruction set, by kernel type suffix (dynamically
# quantized GEMMs only where measured)
GEMM_SAFE_OUTPUTS: Mapping[str, float] = {"": 8.0, "_q8": 4.0}
_F = {n: k for k, n in enumerate(FEATURES)}


def _dwconv_channel_tile(taps: np.ndarray, elem: float) -> np.ndarray:
    """Channels per task of a unipass depthwise convolution (no rounding up: the smaller)."""
    primary = np.where(taps <= 9, 9.0, 25.0)
    per_channel = primary * 2 * elem + 8 + elem  # input and weight taps, bias + scale, output
    out: np.ndarray = np.floor(DWCONV_CACHE_BYTES / per_channel)
    return out


def gemm_type(typ: str) -> bool:
    """Whether kernels of ``typ`` are XNNPACK matrix products computed in tiles of rows:
    convolutions and fully connected layers, any data type
    (:mod:`edgepart.profiling.gemm_tiles`)."""
    prefix, _, cls = typ.partition(".")
    return prefix == "xnn" and "@" not in cls and cls.split("_")[0] in ("conv", "fc")


def type_suffix(typ: str) -> str:
    """The data-type suffix of kernel type ``typ`` (:mod:`edgepart.cost.kernels`): ``_q8``
    (8-bit), ``_hy`` (float input, 8-bit weights) or ``""`` (float)."""
    for suffix in ("_q8", "_hy"):
        if typ.endswith(suffix):
            return suffix
    return ""


def gemm_row_tile(typ: str, tiles: int | Mapping[str, int]) -> int:
    """The rows of the GEMM tile kernels of ``typ`` compute at a time (1 for kernels that are
    not XNNPACK matrix products): ``tiles`` is one tile for every data type, or one per kernel
    type suffix as ``calibrate --host`` measures them
    (:func:`edgepart.profiling.gemm_tiles.measure_row_tiles`; a suffix it did not measure
    has the float tile)."""
    if not gemm_type(typ):
        return 1
    if isinstance(tiles, int):
        return tiles
    return int(tiles.get(type_suffix(typ), tiles.get("", 1)))


def one_task(
    types: Sequence[str], features: np.ndarray, gemm_outputs: Mapping[str, float] | None = None
) -> np.ndarray:
    """Per kernel, whether XNNPACK runs it as one task on any number of threads (module
    docstring). Kernels of other executors (``tfl.*``) are never claimed. ``gemm_outputs``:
    the widest one-row GEMM that is one task on this host, by kernel type suffix (``""``,
    ``_q8``, ``_hy``), as measured; where it says nothing, the safe widths."""
    f = np.asarray(features, dtype=np.float64)
    out = np.zeros(len(types), dtype=bool)
    names = np.asarray(types)
    for t in set(types):
        rows = np.flatnonzero(names == t)
        out[rows] = one_task_of(t, f[rows], gemm_outputs)
    return out


def gemm_one_task_outputs(suffix: str, gemm_outputs: Mapping[str, float] | None) -> float:
    """The widest one-row GEMM of kernel type suffix ``suffix`` that is one task: the measured
    width, never below the safe one (0: none is claimed)."""
    safe = GEMM_SAFE_OUTPUTS.get(suffix, 0.0)
    return max(float((gemm_outputs or {}).get(suffix, 0.0)), safe)


def one_task_of(
    typ: str, features: np.ndarray, gemm_outputs: Mapping[str, float] | None = None
) -> np.ndarray:
    """:func:`one_task` for kernels all of type ``typ``."""
    f = np.asarray(features, dtype=np.float64)
    prefix, _, cls = typ.partition(".")
    if prefix != "xnn" or "@" in cls or not len(f):
        return np.zeros(len(f), dtype=bool)
    rows = f[:, _F["rows"]]
    cout = f[:, _F["cout"]]
    outer_rows = rows / np.maximum(f[:, _F["w"]], 1.0)  # batch x output rows (NHWC)
    suffix = type_suffix(cls)
    q8 = suffix == "_q8"
    plain = cls.removesuffix("_q8")
    if plain == "dwconv":
        taps = f[:, _F["kh"]] * f[:, _F["kw"]]
        tile = _dwconv_channel_tile(taps, 1.0 if q8 else 4.0)
        ok = (outer_rows <= 1) & (taps <= 25) & (cout <= tile)
    elif plain == "pool":
        ok = outer_rows <= 1
    elif plain == "softmax":
        ok = rows <= 1
    elif plain == "binary":
        ok = (f[:, _F["out_bytes"]] <= EW_TILE_BYTES) & (f[:, _F["bcast"]] != 2)
    elif plain == "unary" or cls == "math":
        ok = f[:, _F["in_bytes"]] <= EW_TILE_BYTES
    elif plain in ("slice", "concat"):
        # one run of the output contiguous in the input (a slice) or one outer row (a
        # concatenation: a copy per input), at most a copy tile
        ok = (rows <= 1) & (f[:, _F["out_bytes"]] <= EW_TILE_BYTES)
    elif cls == "math_q8":
        ok = f[:, _F["in_bytes"]] <= LUT_TILE_BYTES
    elif plain in ("conv", "fc", "conv_hy", "fc_hy"):
        ok = (rows <= 1) & (cout <= gemm_one_task_outputs(suffix, gemm_outputs))
    else:
        ok = np.zeros(len(f), dtype=bool)
    out: np.ndarray = np.asarray(ok, dtype=bool)
    return out
