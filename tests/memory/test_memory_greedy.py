"""Greedy placement: TFLite golden cases worked out by hand, fits, and the two scan paths."""

from __future__ import annotations

import numpy as np
import pytest

from edgepart.errors import UsageError
from edgepart.memory import MemoryProblem, plan_arena
from edgepart.memory import _arena as arena_mod
from edgepart.memory import greedy as greedy_mod
from edgepart.memory._arena import prepare
from edgepart.memory.greedy import ORDERS, get_order, place


def _arena(**cols: object) -> object:
    n = len(cols["size"])  # type: ignore[arg-type]
    p = MemoryProblem.from_arrays(ids=[f"b{i}" for i in range(n)], **cols)  # type: ignore[arg-type]
    return prepare(p, p.memories[0])


def test_tflite_three_buffers_by_hand() -> None:
    # Order: b (200) first at 0; a and c tie on size, a has the earlier first use. a overlaps
    # b, no gap below b -> above b's end 200, aligned to 256; c overlaps b only -> 256 as well.
    p = MemoryProblem.from_arrays(
        ids=["a", "b", "c"], lower=[0, 1, 2], upper=[2, 3, 4], size=[100, 200, 100]
    )
    plan = plan_arena(p, strategy="tflite")
    assert plan.offsets == {"a": 256, "b": 0, "c": 256}
    assert plan.arenas["default"].size == 356


def test_tflite_whole_run_first_by_index() -> None:
    # w10 and w500 live over the whole timeline [0, 5): TFLite places them first, by index,
    # whatever their size: w10 at 0, w500 after it at 64; x (1000) then goes above: 576.
    p = MemoryProblem.from_arrays(
        ids=["w10", "w500", "x"], lower=[0, 0, 1], upper=[5, 5, 3], size=[10, 500, 1000]
    )
    plan = plan_arena(p, strategy="tflite")
    assert plan.offsets == {"w10": 0, "w500": 64, "x": 576}
    assert plan.arenas["default"].size == 1576
    # Size order does better: x at 0, w500 at 1024, w10 at 1536 -> 1546, the lower bound
    # (1600 rounded bytes live at t=1, minus the 54 padding bytes of the topmost w10).
    best = plan_arena(p, strategy="portfolio").arenas["default"]
    assert (best.size, best.lower_bound, best.optimal) == (1546, 1546, True)


def _fixed_gaps() -> object:
    # Pre-placed obstacles [0,10), [192,256), [384,448) over the whole timeline; d (100 B,
    # aligned 64) then sees two aligned gaps of 128 B: at 64 (raw gap 182 = 192 - 10) and at
    # 256 (raw gap 128).
    return _arena(
        lower=[0, 0, 0, 2],
        upper=[10, 10, 10, 5],
        size=[10, 64, 64, 100],
        fixed=[0, 192, 384, -1],
    )


def test_tflite_compares_aligned_gap_with_unaligned_best() -> None:
    # SimpleMemoryArena::Allocate keeps a gap if (offset - aligned start) < best_offset_fit,
    # but stores best_offset_fit as (offset - unaligned start): 128 < 182 moves d up to 256.
    a = _fixed_gaps()
    order = np.array([0, 1, 2, 3])
    assert place(a, order, "tflite")[3] == 256  # type: ignore[arg-type]
    assert place(a, order, "best")[3] == 64  # type: ignore[arg-type]
    assert place(a, order, "first")[3] == 64  # type: ignore[arg-type]


def test_best_fit_prefers_smaller_gap_first_fit_lower_gap() -> None:
    # Obstacles at [50,60) and [90,100) (alignment 1): gaps of 50 at 0 and 30 at 60.
    a = _arena(
        lower=[0, 0, 4], upper=[10, 10, 6], size=[10, 10, 25], fixed=[50, 90, -1], alignment=1
    )
    order = np.array([0, 1, 2])
    assert place(a, order, "best")[2] == 60  # type: ignore[arg-type]
    assert place(a, order, "tflite")[2] == 60  # type: ignore[arg-type]
    assert place(a, order, "first")[2] == 0  # type: ignore[arg-type]


def test_zero_sized_buffers_get_zero_and_block_nothing() -> None:
    p = MemoryProblem.from_arrays(ids=["z", "a"], lower=[0, 0], upper=[2, 2], size=[0, 64])
    plan = plan_arena(p)
    assert plan.offsets == {"z": 0, "a": 0}
    assert plan.arenas["default"].size == 64


@pytest.mark.parametrize("fit", ["tflite", "best", "first"])
def test_python_and_numpy_scans_agree(fit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    n = 600
    lo = rng.integers(0, 200, n)
    p = MemoryProblem.from_arrays(
        ids=range(n),
        lower=lo,
        upper=lo + rng.integers(1, 80, n),
        size=rng.integers(1, 5000, n),
        alignment=rng.choice([1, 16, 64], n),
    )
    a = prepare(p, "default")
    order = get_order("size")(a)
    small = place(a, order, fit)
    # earlier conflicts picked with NumPy, as for arenas too large for adjacency lists
    monkeypatch.setattr(arena_mod, "LIST_PAIRS", -1)
    assert np.array_equal(place(prepare(p, "default"), order, fit), small)
    monkeypatch.setattr(greedy_mod, "_SMALL", -1)  # force the NumPy path everywhere
    assert np.array_equal(place(a, order, fit), small)


def test_every_order_is_a_permutation_and_registry_errors() -> None:
    a = _fixed_gaps()
    for name, fn in ORDERS.items():
        assert sorted(fn(a).tolist()) == [0, 1, 2, 3], name  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"valid orders: .*size"):
        get_order("nope")
    with pytest.raises(UsageError, match="valid fits"):
        place(a, np.arange(4), "worst")  # type: ignore[arg-type]
