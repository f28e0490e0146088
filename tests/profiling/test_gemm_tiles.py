"""The GEMM tiles: rows found in times by row count, one-task widths in one- and two-thread times
by output count, and both measured on the real runtime."""

from __future__ import annotations

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


@pytest.mark.parametrize("tile", [4, 6, 7, 8])
def test_the_tile_is_the_last_row_count_before_the_first_step(tile):
    assert row_tile_from_times(staircase(tile)) == tile


def test_times_without_a_clean_step_give_no_tile():
    linear = {r: 2.0 * r for r in PROBE_ROWS}  # every row costs the same: no tiles seen
    assert row_tile_from_times(linear) == 1
    flat = {r: 10.0 for r in PROBE_ROWS}
    assert row_tile_from_times(flat) == 1
    ramp = staircase(7)
    ramp[4] = 22.0  # 2 to 7 rows not alike: not a tile's plateau
    assert row_tile_from_times(ramp) == 1
    gap = {r: v for r, v in staircase(7).items() if r != 8}
    assert row_tile_from_times(gap) == 1  # where the step is, is not known
    assert row_tile_from_times({1: 1.0, 3: 2.0, 4: 2.0}) == 1


def test_a_tile_whose_time_grows_with_its_rows_is_found_by_its_steps():
    """AMX's 8-bit tiles of 16 rows, measured (2026-12-05, 8-bit 512 -> 256, us): the time grows
    by a third inside a tile, and steps at 17 and 33 rows."""
    amx = {1: 2.2, 2: 2.9, 3: 2.9, 4: 3.0, 5: 3.1, 6: 3.2, 7: 3.2, 8: 3.3, 9: 3.3, 10: 3.4,
           11: 3.6, 12: 3.7, 13: 4.2, 14: 4.3, 15: 4.5, 16: 4.6}  # fmt: skip
    amx.update({r: 6.6 + 0.1 * (r - 17) for r in range(17, 33)})
    amx.update({r: 10.4 + 0.1 * (r - 33) for r in range(33, 41)})
    assert row_tile_from_times(amx) == 16
    # a rise inside the tile more than 1 / STEP_OVER_SLOPE of the step: no clean tile
    assert row_tile_from_times({**amx, 10: 4.4}) == 1
    # a jump that does not keep 1.3 times the time before it
    assert row_tile_from_times({**amx, 17: 5.9}) == 1
    # a step that does not come again a tile later is not a tile
    assert row_tile_from_times({**amx, **{r: 7.0 for r in range(17, 41)}}) == 1
    # where the probe stops before the second step, the first decides
    assert row_tile_from_times({r: v for r, v in amx.items() if r <= 20}) == 16


def test_the_probe_runs_on_the_real_runtime_and_agrees_with_its_own_times():
    pytest.importorskip("ai_edge_litert")
    tiles, times = measure_row_tiles(rounds=3)
    assert sorted(tiles) == sorted(times) == sorted(TASK_FAMILIES)
    for suffix, tile in tiles.items():
        assert sorted(times[suffix]) == list(PROBE_ROWS)
        assert all(t > 0 for t in times[suffix].values())
        assert tile == row_tile_from_times(times[suffix])
        if tile > 1:  # the step it reports is in the times
            assert times[suffix][tile + 1] >= 1.3 * times[suffix][tile]


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
