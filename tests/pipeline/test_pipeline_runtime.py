"""The pipeline runtime: stages of a plan in threads with bounded queues, on real LiteRT."""

from __future__ import annotations

import dataclasses
import itertools
import os

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter

import edgepart
from edgepart.api.pipelines import plan_pipeline, run_pipeline, simulate_pipeline
from edgepart.errors import UsageError
from edgepart.runtime.details import StageFailedError
from edgepart.runtime.stage_threads import StageWorker, run_stages, stage_specs


@pytest.fixture(scope="module")
def mnv2(corpus):
    path = corpus["mobilenet_v2"]
    plan = plan_pipeline(path, "x86_host", cpu_threads=1)
    one = Interpreter(model_path=str(path), num_threads=1)
    one.allocate_tensors()
    return path, plan, plan.bundle(), one


def _inputs(one, n, seed=0):
    d = one.get_input_details()[0]
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(d["shape"]).astype(np.float32)] for _ in range(n)]


def _reference(one, x):
    one.set_tensor(one.get_input_details()[0]["index"], x)
    one.invoke()
    return one.get_tensor(one.get_output_details()[0]["index"])


@pytest.mark.parametrize("depth", [1, 2, 5])
def test_outputs_bit_identical_and_in_order(mnv2, depth):
    _, plan, bundle, one = mnv2
    xs = _inputs(one, 30, seed=depth)
    run = run_pipeline(bundle, xs, queue_depth=depth)
    assert len(run.outputs) == 30
    for x, out in zip(xs, run.outputs, strict=True):
        assert np.array_equal(out[0], _reference(one, x[0]))
    m = run.measured
    assert m.micro_batches == 30 and m.stages == len(plan.stages.stages) == 2
    # every stage ran every item, in order, one at a time
    for k in range(2):
        order = m.order(k)
        assert [i for _, _, i in order] == list(range(30))
        evs = sorted((e for e in m.events if e.device == k), key=lambda e: e.start_s)
        assert all(b.start_s >= a.end_s for a, b in itertools.pairwise(evs))
    # stage 1 never starts an item before stage 0 finished it
    ends = {e.micro: e.end_s for e in m.events if e.stage == 0}
    assert all(e.start_s >= ends[e.micro] for e in m.events if e.stage == 1)


def test_single_thread_stages_are_pinned_to_their_own_cores(mnv2):
    _, _, bundle, one = mnv2
    cpus = sorted(os.sched_getaffinity(0))
    run = run_pipeline(bundle, _inputs(one, 6))
    if len(cpus) >= 2:
        assert run.pinned == (cpus[0], cpus[1])  # read back inside each stage's thread
    else:  # one CPU: two stages cannot have a core each, so none is pinned
        assert run.pinned == (None, None)
    assert sorted(os.sched_getaffinity(0)) == cpus  # the caller's thread is left as it was
    unpinned = run_stages(bundle, _inputs(one, 6), pin=False)
    assert unpinned.pinned == (None, None)
    # a stage with two interpreter threads would pin its caller away from its workers
    specs = [dataclasses.replace(s, threads=2) for s in stage_specs(bundle)]
    two = run_stages(bundle, _inputs(one, 6), workers=[StageWorker(s) for s in specs])
    assert two.pinned == (None, None)


def test_back_pressure_bounds_the_items_a_stage_holds(mnv2):
    _, _, bundle, one = mnv2
    run = run_pipeline(bundle, _inputs(one, 40), queue_depth=1)
    # a stage holds its current item, the one in its output queue and one blocked on put
    assert max(run.measured.peak_in_flight) <= 3
    assert run.simulated.peak_in_flight[0] <= 3
    assert run.measured.period_s > 0 and run.simulated.period_s > 0
    assert run.simulated.period_s == pytest.approx(max(run.stage_s), rel=1e-9)


def test_a_failing_input_is_reported_with_what_did_not_complete(mnv2):
    _, _, bundle, one = mnv2
    xs = _inputs(one, 12)
    xs[5] = [np.zeros((1, 3), np.float32)]  # wrong shape: stage 0's set_tensor refuses it
    with pytest.raises(StageFailedError, match="stage 0") as info:
        run_pipeline(bundle, xs, queue_depth=2)
    assert info.value.incomplete == (5,)
    assert info.value.stage == 0
    assert isinstance(info.value, edgepart.EdgepartError)


def test_bad_arguments(mnv2):
    _, plan, bundle, one = mnv2
    with pytest.raises(UsageError, match="queue_depth"):
        run_pipeline(bundle, _inputs(one, 2), queue_depth=0)
    with pytest.raises(UsageError, match="no inputs"):
        run_pipeline(bundle, [])
    with pytest.raises(UsageError, match="backward"):
        simulate_pipeline(plan, "1f1b", 8)


def test_simulated_schedules_of_a_plan(mnv2):
    _, plan, _, _ = mnv2
    s = simulate_pipeline(plan, "stream", 50)
    assert s.period_s == pytest.approx(plan.period_s)
    g = simulate_pipeline(plan, "gpipe", 8, backward_ratio=2.0)
    f = simulate_pipeline(plan, "1f1b", 8, backward_ratio=2.0)
    assert g.peak_in_flight == (8, 8)
    assert f.peak_in_flight == (2, 1)
    assert f.peak_activation_bytes[0] < g.peak_activation_bytes[0]
