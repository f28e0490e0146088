"""Micro-batch schedules and the timeline simulator against the textbook formulas."""

from __future__ import annotations

import itertools

import pytest

from edgepart.errors import UsageError
from edgepart.placement.schedules import (
    Op,
    StageCosts,
    schedule_ops,
    simulate,
)


def _even(p: int, f: float = 1.0, b: float = 2.0, act: int = 100) -> StageCosts:
    return StageCosts((f,) * p, (b,) * p, activation_bytes=(act,) * p)


@pytest.mark.parametrize(("p", "m"), list(itertools.product([1, 2, 3, 4, 6], [1, 2, 4, 7, 16])))
@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_bubble_and_peak_memory_match_the_formulas(p, m, schedule):
    c = _even(p)
    t = simulate(c, schedule, m)
    # both fill and drain: makespan (m + p - 1)(f + b), bubble (p - 1) / (m + p - 1)
    assert t.makespan_s == pytest.approx((m + p - 1) * 3.0)
    assert t.bubble_fraction == pytest.approx((p - 1) / (m + p - 1))
    for d in range(p):
        want = m if schedule == "gpipe" else min(p - d, m)
        assert t.peak_in_flight[d] == want
        assert t.peak_activation_bytes[d] == 100 * want
    assert t.period_s == pytest.approx(t.makespan_s / m)
    assert len(t.events) == 2 * p * m


@pytest.mark.parametrize(("p", "v", "m"), [(2, 2, 4), (4, 2, 8), (4, 3, 8), (3, 2, 6), (2, 4, 2)])
def test_interleaved_bubble_shrinks_by_the_chunks(p, v, m):
    # each device's work split into v chunks of equal time: bubble (p - 1) / (v m + p - 1)
    f, b = 1.0 / v, 2.0 / v
    c = StageCosts((f,) * (p * v), (b,) * (p * v), devices=p, activation_bytes=(10,) * (p * v))
    t = simulate(c, "interleaved", m)
    assert t.bubble_fraction == pytest.approx((p - 1) / (v * m + p - 1))
    assert t.makespan_s == pytest.approx((m + (p - 1) / v) * 3.0)
    plain = simulate(_even(p), "1f1b", m)
    assert t.bubble_fraction < plain.bubble_fraction
    # device d stashes Megatron's warm-up count plus one chunk-micro-batch at most
    for d in range(p):
        warm = m * v if m == p else min(m * v, (p - d - 1) * 2 + (v - 1) * p)
        assert t.peak_in_flight[d] <= min(m * v, warm + 1)
        assert t.peak_in_flight[d] >= min(m * v, warm)


def test_one_f_one_b_order_and_dependencies():
    ops = schedule_ops("1f1b", 3, 5)
    assert ops[2] == [
        Op(k, 2, i)
        for k, i in [
            ("F", 0),
            ("B", 0),
            ("F", 1),
            ("B", 1),
            ("F", 2),
            ("B", 2),
            ("F", 3),
            ("B", 3),
            ("F", 4),
            ("B", 4),
        ]
    ]
    assert [(o.kind, o.micro) for o in ops[0][:4]] == [("F", 0), ("F", 1), ("F", 2), ("B", 0)]
    t = simulate(_even(3), "1f1b", 5)
    ev = {(e.kind, e.stage, e.micro): e for e in t.events}
    for e in t.events:
        if e.kind == "F" and e.stage > 0:
            assert e.start_s >= ev["F", e.stage - 1, e.micro].end_s
        if e.kind == "B":
            assert e.start_s >= ev["F", e.stage, e.micro].end_s
            if e.stage < 2:
                assert e.start_s >= ev["B", e.stage + 1, e.micro].end_s
    for d in range(3):  # one device runs one thing at a time
        evs = sorted((e for e in t.events if e.device == d), key=lambda e: e.start_s)
        for a, b in itertools.pairwise(evs):
            assert b.start_s >= a.end_s
    assert t.order(0)[:3] == [("F", 0, 0), ("F", 0, 1), ("F", 0, 2)]


@pytest.mark.parametrize("times", [(1.0, 1.0), (1.0, 3.0, 2.0), (0.5, 0.2, 0.9, 0.4)])
def test_stream_period_is_the_slowest_stage(times):
    c = StageCosts(times, comm_s=(0.1,) * (len(times) - 1))
    m = 50
    for depth in (None, 1, 4):
        t = simulate(c, "stream", m, queue_depth=depth)
        assert t.period_s == pytest.approx(max(times))
        # the first item flows through unobstructed
        assert t.latency_s[0] == pytest.approx(sum(times) + 0.1 * (len(times) - 1))
        assert t.makespan_s >= sum(times) + (m - 1) * max(times) - 1e-9
        assert t.bubble_fraction == pytest.approx(1 - m * sum(times) / (len(times) * t.makespan_s))


def test_stream_back_pressure_bounds_what_a_fast_stage_runs_ahead():
    c = StageCosts((1.0, 5.0), activation_bytes=(8, 8))
    free = simulate(c, "stream", 20)
    bounded = simulate(c, "stream", 20, queue_depth=2)
    # unbounded: the fast first stage holds every item it finished; bounded: at most the
    # queue's two items plus the one it is working on, plus one blocked on the full queue
    assert free.peak_in_flight[0] >= 15
    assert bounded.peak_in_flight[0] <= 4
    assert bounded.period_s == pytest.approx(free.period_s) == pytest.approx(5.0)
    # latency grows with the items queued ahead when nothing stops the first stage
    assert max(free.latency_s) > max(bounded.latency_s)


def test_bad_input():
    with pytest.raises(UsageError, match="backward"):
        simulate(StageCosts((1.0, 1.0)), "1f1b", 4)
    with pytest.raises(UsageError, match="unknown schedule"):
        schedule_ops("zb-h1", 2, 4)
    with pytest.raises(UsageError, match="multiple"):
        schedule_ops("interleaved", 2, 3, 2)
    with pytest.raises(UsageError, match="comm_s"):
        StageCosts((1.0, 1.0), comm_s=(1.0, 1.0))
    with pytest.raises(UsageError, match="non-negative"):
        StageCosts((1.0, float("nan")))
    with pytest.raises(UsageError, match="deadlocks"):
        simulate(_even(2), "gpipe", 2, ops=[[Op("B", 0, 0), Op("F", 0, 0)], [Op("F", 1, 0)]])
