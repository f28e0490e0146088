"""MemoryProblem construction and validation; the lower bound by hand and against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgepart.errors import BufferTableError, UsageError
from edgepart.memory import Buffer, MemoryProblem, arena_bounds, lower_bound


def test_from_buffers_round_trip() -> None:
    bufs = [
        Buffer("a", 0, 2, 100),
        Buffer("b", 1, 3, 200, alignment=16, offset=32, memory="npu"),
    ]
    p = MemoryProblem.from_buffers(bufs, conflicts=[("a", "b")])
    assert p.buffers() == bufs
    assert p.memories == ("default", "npu")
    # a and b live in different memories, so their explicit conflict is dropped as moot.
    assert p.conflicts.shape == (0, 2)
    assert p.index["b"] == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lower": [3], "upper": [3]}, "lifetime [3, 3) is empty"),
        ({"size": [-1]}, "size -1 is negative"),
        ({"alignment": [0]}, "alignment 0 must be a positive integer"),
        ({"fixed": [-5]}, "fixed offset -5 is negative"),
        ({"fixed": [10]}, "fixed offset 10 is not a multiple of its alignment 64"),
        ({"lower": [0.5]}, "lower column must hold integers"),
    ],
)
def test_invalid_buffers_name_the_buffer(kwargs: dict[str, list[float]], message: str) -> None:
    cols = {"ids": ["x"], "lower": [0], "upper": [1], "size": [8]} | kwargs
    with pytest.raises(BufferTableError, match=r"x|integers") as err:
        MemoryProblem.from_arrays(**cols)  # type: ignore[arg-type]
    assert message in str(err.value)


def test_duplicate_ids_and_bad_conflicts() -> None:
    with pytest.raises(BufferTableError, match="'a' appears more than once"):
        MemoryProblem.from_arrays(ids=["a", "a"], lower=[0, 0], upper=[1, 1], size=[1, 1])
    with pytest.raises(BufferTableError, match="unknown buffer 'zz'"):
        MemoryProblem.from_arrays(
            ids=["a"], lower=[0], upper=[1], size=[1], conflicts=[("a", "zz")]
        )
    with pytest.raises(BufferTableError, match="with itself"):
        MemoryProblem.from_arrays(ids=["a"], lower=[0], upper=[1], size=[1], conflicts=[("a", "a")])


def test_lower_bound_by_hand() -> None:
    # Live at t=1: a (100 -> 128 rounded) and b (200 -> 256); the top one needs no padding, so
    # the bound is 384 - max(28, 56) = 328 (a at 0, b at 128 ends at 328).
    p = MemoryProblem.from_arrays(
        ids=["a", "b", "c"], lower=[0, 1, 2], upper=[2, 3, 4], size=[100, 200, 100]
    )
    b = lower_bound(p)
    assert (b.lower_bound, b.time) == (328, 1)
    assert b.naive == 128 + 256 + 100  # each buffer its own aligned slot, in row order
    # Half-open lifetimes: a [0,2) and c [2,4) never overlap, so t=2 holds only b and c.
    p2 = MemoryProblem.from_arrays(ids=["a", "c"], lower=[0, 2], upper=[2, 4], size=[64, 64])
    assert lower_bound(p2).lower_bound == 64


def test_lower_bound_fixed_offset_and_memories() -> None:
    p = MemoryProblem.from_arrays(
        ids=["io", "x", "y"],
        lower=[0, 0, 0],
        upper=[1, 1, 1],
        size=[64, 64, 64],
        fixed=[512, -1, -1],
        memory=["sram", "sram", "dram"],
    )
    bounds = arena_bounds(p)
    assert bounds["sram"].lower_bound == 576  # the fixed buffer ends at 512 + 64
    assert bounds["dram"].lower_bound == 64
    with pytest.raises(UsageError, match="pass memory="):
        lower_bound(p)
    assert lower_bound(p, "dram").lower_bound == 64


def _brute_bound(lo: list[int], up: list[int], size: list[int], g: int) -> int:
    best = 0
    for t in range(min(lo), max(up)):
        live = [s for a, b, s in zip(lo, up, size, strict=True) if a <= t < b and s]
        if live:
            rounded = [-(-s // g) * g for s in live]
            best = max(best, sum(rounded) - max(r - s for r, s in zip(rounded, live, strict=True)))
    return best


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 20), st.integers(1, 8), st.integers(0, 300)),
        min_size=1,
        max_size=25,
    ),
    st.sampled_from([1, 8, 64]),
)
def test_lower_bound_matches_brute_force(rows: list[tuple[int, int, int]], align: int) -> None:
    lo = [r[0] for r in rows]
    up = [r[0] + r[1] for r in rows]
    size = [r[2] for r in rows]
    p = MemoryProblem.from_arrays(
        ids=[str(i) for i in range(len(rows))], lower=lo, upper=up, size=size, alignment=align
    )
    assert lower_bound(p).lower_bound == _brute_bound(lo, up, size, align)


def test_large_problem_builds_quickly_and_is_read_only() -> None:
    n = 10_000
    rng = np.random.default_rng(0)
    lo = rng.integers(0, n, n)
    p = MemoryProblem.from_arrays(ids=range(n), lower=lo, upper=lo + 5, size=rng.integers(1, 99, n))
    assert len(p) == n and p.ids[7] == "7"
    with pytest.raises(ValueError):
        p.size[0] = 3
