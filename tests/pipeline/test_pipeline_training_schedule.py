"""1F1B against GPipe on a training pipeline: the simulated figures against the formulas, and
the measured order of work of the schedule executor against the schedule.

The corpus has no model converted with a training signature, so the training pipeline here is
a cost graph's view: the stage plan of a corpus model, each stage's forward with a paired
backward. In the executed runs the forward of stage ``j`` is its real LiteRT interpreter and
the paired backward is stood in for by the same interpreter invoked again (real work of the
right order of size; no gradients are computed).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from edgepart.api.pipelines import plan_pipeline, stage_costs
from edgepart.errors import UsageError
from edgepart.placement.schedules import Op, StageCosts, schedule_ops, simulate, timeline_of
from edgepart.runtime.details import StageFailedError
from edgepart.runtime.stage_threads import StageWorker, run_schedule, stage_specs


@pytest.fixture(scope="module")
def stages(corpus):
    plan = plan_pipeline(corpus["mobilenet_v2"], "x86_host", cpu_threads=1)
    bundle = plan.bundle()
    workers = [StageWorker(s) for s in stage_specs(bundle)]
    x = np.zeros(bundle.plan.inputs[0].shape, np.float32)
    tmap = {bundle.plan.inputs[0].tensor: x}
    feeds = []
    for w in workers:
        feeds.append(dict(tmap))
        tmap.update(w(tmap))
    return plan, workers, feeds


@pytest.mark.parametrize("m", [2, 4, 8])
def test_simulated_memory_and_bubble_follow_the_formulas(stages, m):
    plan, _, _ = stages
    costs = stage_costs(plan, backward_ratio=2.0)
    p = costs.num_devices
    g = simulate(costs, "gpipe", m)
    f = simulate(costs, "1f1b", m)
    per_mb = costs.activation_bytes
    assert per_mb is not None and all(b > 0 for b in per_mb)
    for d in range(p):
        assert g.peak_in_flight[d] == m
        assert f.peak_in_flight[d] == min(p - d, m)
        assert g.peak_activation_bytes[d] == m * per_mb[d]
        assert f.peak_activation_bytes[d] == min(p - d, m) * per_mb[d]
    # the stages are near-equal, so both bubbles sit near (p - 1) / (m + p - 1); with unequal
    # stages the slowest sets the pace and the bubble can only be larger
    want = (p - 1) / (m + p - 1)
    for t in (g, f):
        assert t.bubble_fraction >= want - 1e-12
        assert t.bubble_fraction == pytest.approx(want, abs=0.05)
    assert f.makespan_s == pytest.approx(g.makespan_s, rel=1e-9)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_measured_order_of_work_matches_the_schedule(stages, schedule):
    _, workers, feeds = stages
    m = 6
    ops = schedule_ops(schedule, len(workers), m)

    def work(op: Op) -> None:
        workers[op.stage](feeds[op.stage])  # the backward is stood in by the same invoke

    events = run_schedule(ops, work)
    assert len(events) == 2 * len(workers) * m
    measured = timeline_of(
        StageCosts((1.0,) * len(workers), (1.0,) * len(workers)), schedule, m, events
    )
    for d in range(len(workers)):
        assert measured.order(d) == [(o.kind, o.stage, o.micro) for o in ops[d]]
    by = {(e.kind, e.stage, e.micro): e for e in events}
    for e in events:  # dependencies held in the real run
        if e.kind == "F" and e.stage > 0:
            assert e.start_s >= by["F", e.stage - 1, e.micro].end_s
        if e.kind == "B":
            assert e.start_s >= by["F", e.stage, e.micro].end_s
            if e.stage + 1 < len(workers):
                assert e.start_s >= by["B", e.stage + 1, e.micro].end_s
    # and the in-flight micro-batches measured are the schedule's
    want = [m, m] if schedule == "gpipe" else [2, 1]
    assert list(measured.peak_in_flight) == want
    for d in range(len(workers)):
        evs = sorted((e for e in events if e.device == d), key=lambda e: e.start_s)
        assert all(b.start_s >= a.end_s for a, b in itertools.pairwise(evs))


def test_a_failing_operation_stops_the_schedule_with_what_did_not_complete(stages):
    _, workers, feeds = stages
    ops = schedule_ops("1f1b", 2, 4)

    def work(op: Op) -> None:
        if op.kind == "B" and op.stage == 1 and op.micro == 1:
            raise RuntimeError("out of memory")
        workers[op.stage](feeds[op.stage])

    with pytest.raises(StageFailedError, match="out of memory") as info:
        run_schedule(ops, work, timeout_s=30)
    assert 1 in info.value.incomplete and 3 in info.value.incomplete
    assert info.value.stage == 1


def test_interleaved_needs_whole_rounds():
    with pytest.raises(UsageError):
        schedule_ops("interleaved", 2, 3, 2)
