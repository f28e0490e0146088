"""The plan checker proves plans valid and catches deliberately corrupted ones."""

from __future__ import annotations

import numpy as np
import pytest

from edgepart.errors import ArenaOverflowError
from edgepart.memory import MemoryProblem, check_plan, plan_arena


def _problem() -> MemoryProblem:
    rng = np.random.default_rng(7)
    n = 200
    lo = rng.integers(0, 60, n)
    return MemoryProblem.from_arrays(
        ids=[f"t{i}" for i in range(n)],
        lower=lo,
        upper=lo + rng.integers(1, 20, n),
        size=rng.integers(1, 4000, n),
        conflicts=[("t0", "t1"), ("t2", "t3")],
    )


def test_valid_plan_passes_and_reports_peaks() -> None:
    p = _problem()
    plan = plan_arena(p, strategy="portfolio")
    assert check_plan(p, plan.offsets) == {"default": plan.arenas["default"].size}


def test_corrupted_overlap_is_caught_naming_both_buffers() -> None:
    p = _problem()
    plan = dict(plan_arena(p, strategy="portfolio").offsets)
    # Move a buffer onto the start of one it is live with.
    i, j = next(
        (i, j)
        for i in range(len(p))
        for j in range(len(p))
        if i != j
        and p.lower[i] < p.upper[j]
        and p.lower[j] < p.upper[i]
        and plan[p.ids[i]] != plan[p.ids[j]]
    )
    plan[p.ids[i]] = plan[p.ids[j]]
    with pytest.raises(ArenaOverflowError) as err:
        check_plan(p, plan)
    msg = str(err.value)
    assert "overlap" in msg and "bytes [" in msg and "size" in msg
    assert f"'{p.ids[i]}'" in msg or f"'{p.ids[j]}'" in msg


def test_every_single_shift_that_creates_an_overlap_is_caught() -> None:
    p = MemoryProblem.from_arrays(
        ids=["a", "b", "c"], lower=[0, 1, 3], upper=[2, 4, 5], size=[128, 128, 128]
    )
    good = {"a": 0, "b": 128, "c": 0}
    check_plan(p, good)
    for off in range(0, 256, 64):
        bad = good | {"a": off}
        overlaps = off < 256 and off + 128 > 128
        if overlaps:
            with pytest.raises(ArenaOverflowError) as err:
                check_plan(p, bad)
            assert "'a' [0, 2) size 128" in str(err.value)
            assert "'b' [1, 4) size 128 at bytes [128, 256)" in str(err.value)
        else:
            check_plan(p, bad)


def test_explicit_conflict_violation_is_caught() -> None:
    # x and y never live together, but they run concurrently on another processor.
    p = MemoryProblem.from_arrays(
        ids=["x", "y"], lower=[0, 5], upper=[2, 7], size=[64, 64], conflicts=[("x", "y")]
    )
    with pytest.raises(ArenaOverflowError, match="explicit conflict"):
        check_plan(p, {"x": 0, "y": 0})
    plan = plan_arena(p)
    assert plan.offsets["x"] != plan.offsets["y"]
    assert plan.arenas["default"].size == 128


def test_alignment_fixed_offset_missing_and_claimed_size() -> None:
    p = MemoryProblem.from_arrays(
        ids=["a", "b"], lower=[0, 0], upper=[1, 1], size=[64, 64], fixed=[-1, 128]
    )
    with pytest.raises(ArenaOverflowError, match="not aligned to 64"):
        check_plan(p, {"a": 32, "b": 128})
    with pytest.raises(ArenaOverflowError, match="fixed offset 128, plan puts it at 0"):
        check_plan(p, {"a": 64, "b": 0})
    with pytest.raises(ArenaOverflowError, match="no offset for buffer 'b'"):
        check_plan(p, {"a": 0})
    with pytest.raises(ArenaOverflowError, match="negative offset"):
        check_plan(p, {"a": -64, "b": 128})
    with pytest.raises(ArenaOverflowError, match="beyond the claimed arena size 100"):
        check_plan(p, {"a": 0, "b": 128}, {"default": 100})
    assert check_plan(p, {"a": 0, "b": 128}) == {"default": 192}


def test_same_offset_is_fine_when_lifetimes_touch() -> None:
    # Half-open: [0, 2) and [2, 4) do not overlap in time.
    p = MemoryProblem.from_arrays(ids=["a", "b"], lower=[0, 2], upper=[2, 4], size=[64, 64])
    assert check_plan(p, {"a": 0, "b": 0}) == {"default": 64}
