"""The rows of XNNPACK's matrix-product tile on this host, measured.

XNNPACK's GEMM computes whole tiles of ``mr`` rows (``xnn_gemm_best_tile_size``; ``mr`` set per
instruction set by its GEMM configs): a fully connected layer or convolution of 2 to ``mr``
rows takes the time of ``mr`` rows, one of ``mr + 1`` twice that; a single row runs a kernel
of its own. Measured on a Zen 4 guest (AVX-512, LiteRT 2.3.0, 2026-12-05), float 512 -> 256:
1 row 5.6 us, 2 to 7 rows 16.4-16.7 us, 8 to 14 rows 32.3-32.7, 15 to 21 rows 48.3-49.2; 8-bit
the same steps (1.8, 4.9-5.1, 9.3-9.6, 13.8-14.1 us). A predictor that counts MACs row by row
prices 2 rows at a seventh of 7 (``benchmarks/xnn_gemm_tiles.py`` prints both).

:func:`measure_row_tile` times one float layer at 1 to 16 rows and :func:`row_tile_from_times`
finds the step. ``calibrate --host`` records the result with its measurements; the fit then
counts a GEMM kernel's MACs in whole tiles of rows
(:func:`edgepart.cost.predictor.basis_matrix`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np

from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.profiling.timing import TimingConfig, prepare, run_rounds
from edgepart.tflite.writer import write_model

__all__ = ["PROBE_ROWS", "measure_row_tile", "row_tile_from_times"]

PROBE_ROWS = tuple(range(1, 17))
PROBE_K, PROBE_N = 512, 256  # weight-bound enough that a tile's time dwarfs the dispatch


def _fc_model(rows: int) -> bytes:
    mb = ModelBuilder(description="edgepart GEMM row-tile probe")
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (rows, PROBE_K))
    rng = np.random.default_rng(0)
    w = g.constant("w", rng.normal(0.0, 0.05, (PROBE_N, PROBE_K)).astype(np.float32))
    y = g.tensor("y", DType.FLOAT32, (rows, PROBE_N))
    g.op("FULLY_CONNECTED", [x, w, -1], [y])
    g.output(y)
    return write_model(mb.build())


def row_tile_from_times(times: Mapping[int, float]) -> int:
    """The rows per tile that times by row count show, or 1 if they show no clean step.

    The tile is the last row count before the first jump (by at least half of what 2 rows
    take) after 2 rows; it counts only if 2 to ``tile`` rows take the same time (within 15%)
    and the row count after it at least 1.5 times as long.
    """
    rows = sorted(r for r in times if r >= 2)
    if len(rows) < 3 or rows[0] != 2:
        return 1
    t2 = times[2]
    for a, b in itertools.pairwise(rows):
        if b != a + 1:
            return 1  # the probe's rows are consecutive; a gap hides where the step is
        if times[b] - times[a] > 0.5 * t2:
            flat = all(abs(times[r] / t2 - 1.0) <= 0.15 for r in rows if r <= a)
            return a if flat and times[b] >= 1.5 * times[a] else 1
    return 1


def measure_row_tile(rounds: int = 7, sample_s: float = 2e-3) -> tuple[int, dict[int, float]]:
    """Rows per GEMM tile of XNNPACK on one thread here, and the times it was found from
    (the best of ``rounds`` interleaved samples of about ``sample_s`` each, on the thread's CPU
    time: :mod:`edgepart.profiling.timing`)."""
    cfg = TimingConfig(batch_s=sample_s, min_repeats=rounds, max_repeats=rounds)
    timers = {r: prepare(_fc_model(r), "xnnpack", 1, cfg) for r in PROBE_ROWS}
    run_rounds(list(timers.values()))
    best = {r: t.stats().min_s for r, t in timers.items()}
    return row_tile_from_times(best), best
