"""The GEMM tiles: rows found in times by row count, one-task widths in one- and two-thread times
by output count, and both measured on the real runtime."""

from __future__ import annotations

import numpy as np
import pytest

from edgepart.profiling.gemm_tiles import (
    PROBE_ROWS,
    TASK_FAMILIES,
    TASK_PROBE_OUTPUTS,
    measure_row_tiles,
    measure_task_widths,
    row_tile_from_times,
    task_width_from_times,
)


def staircase(tile: int, one: float = 5.0, step: float = 16.0) -> dict[int, float]:
    return {r: one if r == 1 else step * -(-r // tile) for r in PROBE_ROWS}


@pytest.mark.parametrize("tile", [4, 6, 7, 8, 16])
def test_the_tile_is_the_step_of_the_times(tile):
    assert row_tile_from_times(staircase(tile)) == tile


def test_times_without_steps_give_no_tile():
    assert row_tile_from_times({r: 2.0 * r for r in PROBE_ROWS}) == 1  # every row alike
    assert row_tile_from_times({r: 10.0 for r in PROBE_ROWS}) == 1
    assert row_tile_from_times({1: 1.0, 3: 2.0, 4: 2.0}) == 1  # too few rows
    rng = np.random.default_rng(0)
    for _ in range(20):  # a line or a constant with 5% noise never shows a tile
        line = {r: 2.0 * r * (1 + 0.05 * rng.standard_normal()) for r in PROBE_ROWS}
        assert row_tile_from_times(line) == 1
        flat = {r: 10.0 * (1 + 0.05 * rng.standard_normal()) for r in PROBE_ROWS}
        assert row_tile_from_times(flat) == 1


def test_the_tile_survives_an_outlier_a_missing_row_and_noise():
    odd = staircase(7)
    odd[4] = 22.0  # one slow sample inside a tile
    assert row_tile_from_times(odd) == 7
    assert row_tile_from_times({r: v for r, v in staircase(7).items() if r != 8}) == 7
    rng = np.random.default_rng(1)
    for tile in (7, 16):
        for _ in range(20):  # 5% noise on every time (more than the probe's best-of-rounds has)
            noisy = {r: v * (1 + 0.05 * rng.standard_normal()) for r, v in staircase(tile).items()}
            assert row_tile_from_times(noisy) == tile


# us by rows, one layer of 512 -> 256, Intel Xeon with AMX (2026-12-05): measured at leisure,
# and in a calibration's first seconds (noisy: 16 rows 6.4 us between 5.0 and 7.5)
AMX_8BIT = {1: 2.2, 2: 2.9, 3: 2.9, 4: 3.0, 5: 3.1, 6: 3.2, 7: 3.2, 8: 3.3, 9: 3.3, 10: 3.4,
            11: 3.6, 12: 3.7, 13: 4.2, 14: 4.3, 15: 4.5, 16: 4.6, 17: 7.0, 18: 6.9, 19: 7.1,
            20: 7.0, 21: 7.3, 22: 7.0, 23: 7.3, 24: 6.6, 25: 6.6, 26: 7.8, 27: 7.6, 28: 7.8,
            29: 7.9, 30: 8.0, 31: 8.1, 32: 8.2, 33: 10.4, 34: 10.6, 35: 10.7, 36: 10.3,
            37: 10.9, 38: 10.5, 39: 11.0, 40: 11.0}  # fmt: skip
AMX_8BIT_NOISY = {1: 2.3, 2: 3.1, 3: 3.1, 4: 3.1, 5: 3.1, 6: 3.2, 7: 3.2, 8: 3.3, 9: 3.3, 10: 3.5,
                  11: 3.6, 12: 3.8, 13: 4.3, 14: 4.5, 15: 5.0, 16: 6.4, 17: 7.5, 18: 7.2,
                  19: 7.3, 20: 7.9, 21: 7.5, 22: 6.6, 23: 7.0, 24: 8.1, 25: 7.3, 26: 8.8,
                  27: 8.1, 28: 8.2, 29: 9.8, 30: 8.7, 31: 8.3, 32: 8.3, 33: 11.3, 34: 11.2,
                  35: 11.7, 36: 11.0, 37: 11.0, 38: 11.5, 39: 12.8, 40: 13.2}  # fmt: skip


def test_a_tile_whose_time_grows_with_its_rows_is_found_by_its_steps():
    """AMX's 8-bit tiles of 16 rows: the time grows by half inside a tile and steps at 17 and
    33 rows; found from clean and from noisy times alike."""
    assert row_tile_from_times(AMX_8BIT) == 16
    assert row_tile_from_times(AMX_8BIT_NOISY) == 16
    # a step that does not come again a tile later is not a tile
    assert row_tile_from_times({**AMX_8BIT, **{r: 7.0 for r in range(17, 41)}}) == 1
    # rows that do not reach two tiles show no tile
    assert row_tile_from_times({r: v for r, v in AMX_8BIT.items() if r <= 20}) == 1


def test_the_probe_runs_on_the_real_runtime_and_agrees_with_its_own_times():
    pytest.importorskip("ai_edge_litert")
    tiles, times = measure_row_tiles(rounds=3)
    assert sorted(tiles) == sorted(times) == sorted(TASK_FAMILIES)
    for suffix, tile in tiles.items():
        assert sorted(times[suffix]) == list(PROBE_ROWS)
        assert all(t > 0 for t in times[suffix].values())
        assert tile == row_tile_from_times(times[suffix])
        if tile > 1:  # the step it reports is in the times: each tile's rows take longer
            # on average than the tile's before (means over a tile's rows, not single samples,
            # which a loaded machine can swap by a few percent)
            t = times[suffix]
            first, second = (
                float(np.mean([t[r] for r in range(lo, lo + tile) if r >= 2 and r in t]))
                for lo in (1, tile + 1)
            )
            assert second > first


def test_the_task_width_is_the_widest_layer_before_the_first_split():
    one = {n: 200e-9 for n in TASK_PROBE_OUTPUTS}
    # measured on an Intel Xeon with AMX: float layers split past 32 outputs
    two = {n: (200e-9 if n <= 32 else 1300e-9) for n in TASK_PROBE_OUTPUTS}
    assert task_width_from_times(one, two) == 32
    assert task_width_from_times(one, one) == max(TASK_PROBE_OUTPUTS)  # never split
    # a width after the first split does not count, even if it looks like one task again
    two[64] = 200e-9
    assert task_width_from_times(one, two) == 32
    assert task_width_from_times(one, {n: 1e-6 for n in one}) == 0  # split from the narrowest
    assert task_width_from_times({4: 0.0}, {4: 0.0}) == 0  # nothing timed: nothing claimed
    assert task_width_from_times({}, {}) == 0


def test_the_task_width_probe_runs_on_the_real_runtime_and_agrees_with_its_own_times():
    pytest.importorskip("ai_edge_litert")
    widths, times = measure_task_widths(rounds=3)
    assert set(widths) == set(TASK_FAMILIES) == set(times)
    for suffix, width in widths.items():
        one = {int(n): v for n, v in times[suffix]["1t"].items()}
        two = {int(n): v for n, v in times[suffix]["2t"].items()}
        assert sorted(one) == sorted(two) == list(TASK_PROBE_OUTPUTS)
        assert all(v >= 0 for v in [*one.values(), *two.values()])
        assert width == task_width_from_times(one, two)
