"""The rows of XNNPACK's matrix-product tile on this host, measured.

XNNPACK's GEMM computes whole tiles of ``mr`` rows (``xnn_gemm_best_tile_size``; ``mr`` set per
instruction set by its GEMM configs): a fully connected layer or convolution of 2 to ``mr``
rows takes the time of ``mr`` rows, one of ``mr + 1`` twice that; a single row runs a kernel
of its own. Measured on a Zen 4 guest (AVX-512, LiteRT 2.3.0, 2026-12-05), float 512 -> 256:
1 row 5.6 us, 2 to 7 rows 16.4-16.7 us, 8 to 14 rows 32.3-32.7, 15 to 21 rows 48.3-49.2; 8-bit
the same steps (1.8, 4.9-5.1, 9.3-9.6, 13.8-14.1 us). A predictor that counts MACs row by row
prices 2 rows at a seventh of 7 (``benchmarks/xnn_gemm_tiles.py`` prints both).

The tile differs by data type where the instruction set has its own 8-bit kernels: on an
Intel Xeon with AMX (2026-12-05) float 512 -> 256 steps every 7 rows (12.0 us at 7 rows, 23.1
at 8) and 8-bit and dynamically quantized ones every 16 (8-bit 2.9 us at 2 rows, 4.6 at 16,
7.0 at 17, 8.2 at 32, 10.4 at 33: AMX tiles of 16 rows, whose time still grows with the rows
inside a tile). :func:`measure_row_tiles` times one layer of each data type at 1 to 40 rows
and :func:`row_tile_from_times` finds the step. ``calibrate --host`` records the tiles with
its measurements; the fit then counts a GEMM kernel's MACs in whole tiles of its data type's
rows (:func:`edgepart.cost.xnn_tasks.gemm_row_tile`,
:func:`edgepart.cost.predictor.basis_matrix`).

The *width* of a tile (``nr``, output channels) decides which one-row layers run as one task
on several threads (:mod:`edgepart.cost.xnn_tasks`): such a layer never wakes the thread pool
and costs on two threads what it costs on one. It depends on the instruction set and differs
by data type. Measured on an Intel Xeon guest with AMX (2026-12-05): one-row float layers of 64
inputs are one task up to 32 outputs (2t / 1t 1.01 at 32, 4.6 at 48), 8-bit ones up to 64 and
beyond (AMX tiles of 16 rows by 64 outputs; 0.97 at 64), where every instruction set only
promises 8 and 4. :func:`measure_task_widths` times one-row layers of growing width on one and
two threads per data type and :func:`task_width_from_times` reads the widest one task off
them; ``calibrate --host`` records them and the multi-thread predictors use them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from edgepart.profiling import kernel_gen as kg
from edgepart.profiling.timing import TimingConfig, prepare, run_rounds
from edgepart.tflite.writer import write_model

__all__ = [
    "MAX_RESIDUAL",
    "PROBE_ROWS",
    "TASK_FAMILIES",
    "TASK_PROBE_OUTPUTS",
    "fc_model",
    "measure_row_tiles",
    "measure_task_widths",
    "row_tile_from_times",
    "task_width_from_times",
]

PROBE_ROWS = tuple(range(1, 41))  # two steps of a 16-row tile, five of a 7-row one
PROBE_K, PROBE_N = 512, 256  # weight-bound enough that a tile's time dwarfs the dispatch
MAX_RESIDUAL = 0.8  # a tile must explain the times this much better than a line does
MAX_TILE = 24


def row_tile_from_times(times: Mapping[int, float]) -> int:
    """The rows per tile that times by row count show, or 1 if they show no clean step.

    From 2 rows on (one row runs a kernel of its own), the times are fitted by least squares
    as ``a + c * rows + b * ceil(rows / T)`` for every tile ``T`` the rows cover twice over
    (``2T + 1`` rows timed, up to :data:`MAX_TILE`), and by the line ``a + c * rows``. The
    tile is the ``T`` with the smallest absolute residual, if that residual is at most
    :data:`MAX_RESIDUAL` of the line's, its step ``b`` is positive and at least three rows'
    worth of ``c`` and a fifth of what 2 rows take. A fit over all rows, not the first jump:
    the samples of a calibration's first seconds are noisy (a 16-row 8-bit layer once took
    6.4 us between 5.0 at 15 rows and 7.5 at 17), and the time may still grow inside a tile
    (AMX: 8-bit 2.9 us at 2 rows, 4.6 at 16).
    """
    rows = np.array(sorted(r for r in times if r >= 2), dtype=np.float64)
    if len(rows) < 6 or not all(np.isfinite(times[int(r)]) for r in rows):
        return 1
    t = np.array([times[int(r)] for r in rows], dtype=np.float64)

    def fit(cols: list[np.ndarray]) -> tuple[float, np.ndarray]:
        a = np.column_stack(cols)
        coef = np.linalg.lstsq(a, t, rcond=None)[0]
        return float(np.abs(t - a @ coef).sum()), coef

    ones = np.ones_like(rows)
    line, _ = fit([ones, rows])
    if line <= 1e-6 * float(np.abs(t).sum()):
        return 1  # a line (or a constant) explains the times: no steps
    best, tile, step, slope = line, 1, 0.0, 0.0
    for cand in range(2, MAX_TILE + 1):
        if 2 * cand + 1 > rows[-1]:
            break
        r, coef = fit([ones, rows, np.ceil(rows / cand)])
        if r < best:
            best, tile, slope, step = r, cand, float(coef[1]), float(coef[2])
    if tile == 1 or best > MAX_RESIDUAL * line:
        return 1
    if step <= 0 or step < 3 * max(slope, 0.0) or step < 0.2 * t[0]:
        return 1
    return tile


def measure_row_tiles(
    rounds: int = 11, sample_s: float = 2e-3
) -> tuple[dict[str, int], dict[str, dict[int, float]]]:
    """Per kernel type suffix (``""`` float, ``_q8``, ``_hy``: :data:`TASK_FAMILIES`), the rows
    of XNNPACK's GEMM tile on one thread here (:func:`row_tile_from_times`), and the times by
    row count it was found from: one fully connected layer of 512 -> 256 at each of
    :data:`PROBE_ROWS`, built as the calibration builds its layers of that data type, all
    timed interleaved, best of ``rounds`` samples of about ``sample_s`` (the thread's CPU time:
    :mod:`edgepart.profiling.timing`)."""
    cfg = TimingConfig(batch_s=sample_s, min_repeats=rounds, max_repeats=rounds)
    timers = {
        (suffix, r): prepare(fc_model(fam, r, PROBE_K, PROBE_N, 1), "xnnpack", 1, cfg)
        for suffix, fam in TASK_FAMILIES.items()
        for r in PROBE_ROWS
    }
    run_rounds(list(timers.values()))
    times = {
        suffix: {r: timers[(suffix, r)].stats().min_s for r in PROBE_ROWS}
        for suffix in TASK_FAMILIES
    }
    return {suffix: row_tile_from_times(t) for suffix, t in times.items()}, times


# kernel type suffix (:mod:`edgepart.cost.kernels`) -> the calibration sampler's family
TASK_FAMILIES = {"": "f32", "_q8": "q8", "_hy": "hy"}
TASK_PROBE_OUTPUTS = (4, 8, 16, 32, 48, 64, 96, 128)
TASK_PROBE_K = 64  # inputs: small enough that waking the pool dwarfs the layer
TASK_LAYERS = 21  # layers in a row against one: the difference over 20 is one layer's time
SPLIT_RATIO = 1.3  # a layer taking this much longer on two threads than on one was split


class _FcChain(kg._Chain):
    """The calibration's chain builder (quantized weights, biases and inputs as it draws them)
    with its fully connected layer at a fixed shape."""

    shape: tuple[int, int, int] = (1, 1, 1)  # rows, inputs, outputs

    def k_fc(self) -> None:
        rows, k, n = self.shape
        x = self.new_input((rows, k), dtype=kg.I8 if self.q8 else kg.F32)
        w = self.weights((n, k), k)
        b = self.bias(n, x)
        y = self.tensor((rows, n), like=x)
        self.op("FULLY_CONNECTED", [x.idx, w, b], [y],
                options={"fused_activation_function": "NONE"})  # fmt: skip
        self.set(y)


def fc_model(family: str, rows: int, k: int, n: int, layers: int) -> bytes:
    """``layers`` fully connected layers of ``rows`` x ``k`` -> ``n``, each with its own input
    (as the calibration's homogeneous chains have them); ``family`` is the sampler's
    (``f32``, ``q8`` or ``hy``: float input, 8-bit weights)."""
    spec = kg.ChainSpec(seed=1, family=family, length=layers, homogeneous="fc", small=True)
    chain = _FcChain(spec)
    chain.shape = (rows, k, n)
    return write_model(chain.build())


def task_width_from_times(one: Mapping[int, float], two: Mapping[int, float]) -> int:
    """The most outputs a one-row layer has while it still runs as one task: the widest width
    before the first at which two threads take ``SPLIT_RATIO`` times one thread's time (times
    per layer by output count); 0 when even the narrowest was split or nothing was timed."""
    width = 0
    for n in sorted(set(one) & set(two)):
        if not one[n] > 0 or two[n] >= SPLIT_RATIO * one[n]:
            break
        width = n
    return width


def measure_task_widths(
    rounds: int = 7, sample_s: float = 2e-3
) -> tuple[dict[str, int], dict[str, Any]]:
    """Per kernel type suffix (``""`` float, ``_q8``, ``_hy``), the widest one-row layer
    XNNPACK runs as one task here (:func:`task_width_from_times`), and the times per layer
    (seconds, by output count, one and two threads) it was read from. All models are timed
    interleaved in the same rounds, best of ``rounds`` (the thread's CPU time on one thread,
    wall time on two: :mod:`edgepart.profiling.timing`)."""
    cfg = TimingConfig(batch_s=sample_s, min_repeats=rounds, max_repeats=rounds)
    timers = {
        (suffix, n, layers, threads): prepare(
            fc_model(fam, 1, TASK_PROBE_K, n, layers), "xnnpack", threads, cfg
        )
        for suffix, fam in TASK_FAMILIES.items()
        for n in TASK_PROBE_OUTPUTS
        for layers in (1, TASK_LAYERS)
        for threads in (1, 2)
    }
    run_rounds(list(timers.values()))
    best = {k: t.stats().min_s for k, t in timers.items()}
    widths: dict[str, int] = {}
    times: dict[str, Any] = {}
    for suffix in TASK_FAMILIES:
        per: dict[int, dict[int, float]] = {1: {}, 2: {}}
        for th in (1, 2):
            for n in TASK_PROBE_OUTPUTS:
                long, short = best[(suffix, n, TASK_LAYERS, th)], best[(suffix, n, 1, th)]
                per[th][n] = max(long - short, 0.0) / (TASK_LAYERS - 1)
        widths[suffix] = task_width_from_times(per[1], per[2])
        times[suffix] = {f"{th}t": {str(n): v for n, v in sorted(d.items())}
                         for th, d in per.items()}  # fmt: skip
    return widths, times
