"""GPipe and 1F1B on real stage training models: TFLite files with training signatures
(``forward``, ``backward``, ``apply``), converted by TensorFlow from a seeded Keras MLP cut in
three stages (``tools/build_training_stages.py``), run by LiteRT.

The runtime's measured order of work is the schedule's; the micro-batches each stage holds
at once are what the simulator and the textbook give (GPipe ``m``, 1F1B ``min(p - s, m)``);
and the step is the whole batch's: the losses and the weights after it equal
``tf.GradientTape``'s on the Keras model, and GPipe's equal 1F1B's.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import build_training_stages
import numpy as np
import pytest

import edgepart
from edgepart.errors import UsageError
from edgepart.placement.schedules import StageCosts, schedule_ops, simulate
from edgepart.runtime.details import StageFailedError
from edgepart.runtime.training import run_training

M = 6  # micro-batches
LR = 0.01


@pytest.fixture(scope="module")
def stage_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return build_training_stages.build(tmp_path_factory.mktemp("train"))


@pytest.fixture(scope="module")
def batch() -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((4, build_training_stages.FEATURES)).astype(np.float32)]
    xs += [rng.standard_normal(xs[0].shape).astype(np.float32) for _ in range(M - 1)]
    ts = [
        rng.standard_normal((4, build_training_stages.LAYERS[-1])).astype(np.float32)
        for _ in range(M)
    ]
    return xs, ts


@pytest.fixture(scope="module")
def runs(stage_files, batch):
    xs, ts = batch
    return {
        s: edgepart.train_pipeline(stage_files, xs, ts, schedule=s, learning_rate=LR)
        for s in ("gpipe", "1f1b")
    }


def test_the_stage_models_are_tflite_training_models(stage_files):
    for k, path in enumerate(stage_files):
        model = edgepart.read_model(path)
        sigs = model.signature_defs
        assert sorted(s.key for s in sigs) == ["apply", "backward", "forward"], path
        ops = {model.subgraphs[s.subgraph].op_name(i) for s in sigs
               for i in range(model.subgraphs[s.subgraph].num_ops)}  # fmt: skip
        assert {"ASSIGN_VARIABLE", "READ_VARIABLE", "VAR_HANDLE"} <= ops, (k, ops)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_measured_order_and_stashed_micro_batches_are_the_schedules(runs, schedule):
    run = runs[schedule]
    p = 3
    ops = schedule_ops(schedule, p, M)
    for d in range(p):
        assert run.measured.order(d) == [(o.kind, o.stage, o.micro) for o in ops[d]]
    events = run.measured.events
    assert len(events) == 2 * p * M
    by = {(e.kind, e.stage, e.micro): e for e in events}
    for e in events:  # the dependencies held in the real run
        if e.kind == "F" and e.stage > 0:
            assert e.start_s >= by["F", e.stage - 1, e.micro].end_s
        if e.kind == "B":
            assert e.start_s >= by["F", e.stage, e.micro].end_s
            if e.stage + 1 < p:
                assert e.start_s >= by["B", e.stage + 1, e.micro].end_s
    for d in range(p):
        evs = sorted((e for e in events if e.device == d), key=lambda e: e.start_s)
        assert all(b.start_s >= a.end_s for a, b in itertools.pairwise(evs))
    # micro-batches held at once: counted by the runtime, read off the timeline, simulated,
    # and the textbook's
    want = [M] * p if schedule == "gpipe" else [min(p - s, M) for s in range(p)]
    assert list(run.peak_stashed) == want
    assert list(run.measured.peak_in_flight) == want
    sim = simulate(StageCosts((1.0,) * p, (2.0,) * p, activation_bytes=(1,) * p), schedule, M)
    assert list(sim.peak_in_flight) == want
    # in bytes: each stage keeps its input, [4, features in]
    widths = (build_training_stages.FEATURES, *build_training_stages.LAYERS[1:3])
    assert list(run.stashed_bytes) == [n * 4 * w * 4 for n, w in zip(want, widths, strict=True)]


def test_the_step_is_the_whole_batchs_and_both_schedules_agree(runs, batch):
    xs, ts = batch
    losses, ref = build_training_stages.reference_step(xs, ts, LR)
    init = build_training_stages.keras_model()
    for k in ref:  # the step moved every weight
        layer = init.get_layer(f"dense{k[1:]}")
        before = (layer.kernel if k[0] == "w" else layer.bias).numpy()
        assert np.abs(ref[k] - before).max() > 1e-4, k
    for schedule, run in runs.items():
        np.testing.assert_allclose(run.losses, losses, rtol=1e-5, err_msg=schedule)
        got = {k: v for stage in run.weights for k, v in stage.items()}
        assert sorted(got) == sorted(ref)
        for k in ref:
            np.testing.assert_allclose(got[k], ref[k], rtol=1e-5, atol=1e-6, err_msg=k)
    for a, b in zip(runs["gpipe"].weights, runs["1f1b"].weights, strict=True):
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-6, atol=1e-7)


def test_a_second_step_starts_from_the_first_steps_weights(stage_files, batch):
    xs, ts = batch
    blobs = [p.read_bytes() for p in stage_files]
    first = run_training(blobs, xs, ts, schedule="1f1b", learning_rate=LR)
    # a new interpreter per call: the files are unchanged, so the same step again
    again = run_training(blobs, xs, ts, schedule="1f1b", learning_rate=LR)
    assert first.losses == again.losses
    assert all(
        np.array_equal(a[k], b[k])
        for a, b in zip(first.weights, again.weights, strict=True)
        for k in a
    )


def test_models_without_training_signatures_are_refused_in_one_line(corpus, stage_files, batch):
    xs, ts = batch
    with pytest.raises(UsageError, match=r"stage 0 .*no signature 'forward'.*forward, backward"):
        run_training([corpus["mobilenet_v2"]], xs, ts)
    with pytest.raises(UsageError, match=r"6 input.*5 target"):
        run_training(stage_files, xs, ts[:-1])
    with pytest.raises(UsageError, match="'gpipe' or '1f1b'"):
        run_training(stage_files, xs, ts, schedule="interleaved")
    # the last stage first: its backward takes a target, not dy
    with pytest.raises(UsageError, match=r"signature 'backward' .*needs inputs \['dy', 'x'\]"):
        run_training([stage_files[2], stage_files[0]], xs, ts)


def test_a_failing_backward_stops_with_the_micro_batches_not_done(stage_files, batch):
    xs, ts = batch
    bad = list(ts)
    bad[2] = np.zeros((3, 3), np.float32)  # the last stage's backward cannot take it
    with pytest.raises(StageFailedError) as info:
        run_training(stage_files, xs, bad, schedule="1f1b", timeout_s=60)
    assert 2 in info.value.incomplete and info.value.stage == 2
