"""The GEMM row tile: found in times by row count, and measured on the real runtime."""

from __future__ import annotations

import pytest

from edgepart.profiling.gemm_tiles import PROBE_ROWS, measure_row_tile, row_tile_from_times


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


def test_the_probe_runs_on_the_real_runtime_and_agrees_with_its_own_times():
    pytest.importorskip("ai_edge_litert")
    tile, times = measure_row_tile(rounds=3)
    assert sorted(times) == list(PROBE_ROWS)
    assert all(t > 0 for t in times.values())
    assert tile == row_tile_from_times(times)
    if tile > 1:  # the step it reports is in the times
        assert times[tile + 1] >= 1.5 * times[tile]
