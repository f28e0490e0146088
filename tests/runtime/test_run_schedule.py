"""Scheduling: concurrent partitions, error propagation, streaming pipelines."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter
from rt_cuts import contiguous
from rt_models import branchy_mlp, gather_model

from edgepart.bundle import PartitionSpec, build_bundle
from edgepart.errors import RuntimeBackendError, UsageError
from edgepart.runtime import PartitionedInterpreter, TensorValueError
from edgepart.runtime.latency import time_stream
from edgepart.tflite.reader import read_model
from edgepart.tflite.writer import write_model


class _Timed:
    """Wraps a partition interpreter to record when each invoke ran (and on which thread)."""

    def __init__(self, it, log):
        self._it = it
        self._log = log

    def invoke(self):
        t0 = time.perf_counter()
        self._it.invoke()
        self._log.append((t0, time.perf_counter(), threading.get_ident()))

    def __getattr__(self, name):
        return getattr(self._it, name)


def _branchy(width=512, depth=6):
    model = branchy_mlp(width=width, depth=depth, branches=2)
    specs = [
        PartitionSpec(range(0, depth)),
        PartitionSpec(range(depth, 2 * depth), unit=1),
        PartitionSpec([2 * depth]),
    ]
    return model, specs


def _reference(model, x):
    ref = Interpreter(model_content=write_model(model))
    ref.allocate_tensors()
    ref.set_tensor(0, x)
    ref.invoke()
    return ref.get_tensor(ref.get_output_details()[0]["index"])


def test_independent_partitions_on_two_units_run_at_the_same_time():
    model, specs = _branchy()
    pi = PartitionedInterpreter(bundle=build_bundle(model, specs, arena="boundary"))
    assert pi.parallel
    pi.allocate_tensors()
    logs = [[], []]
    for k in (0, 1):
        pi._parts[k] = _Timed(pi._parts[k], logs[k])
    rng = np.random.default_rng(0)
    overlapped = 0
    for _ in range(20):
        x = rng.standard_normal((1, 512)).astype(np.float32)
        pi.set_tensor(0, x)
        pi.invoke()
        assert np.array_equal(
            pi.get_tensor(pi.get_output_details()[0]["index"]), _reference(model, x)
        )
        (a0, a1, ta), (b0, b1, tb) = logs[0][-1], logs[1][-1]
        assert ta != tb  # each unit has its own thread
        overlapped += a0 < b1 and b0 < a1
    # both branches were inside LiteRT's invoke at the same time (GIL released)
    assert overlapped > 0
    pi.close()


def test_serial_mode_gives_the_same_answers():
    model, specs = _branchy(width=64, depth=2)
    bundle = build_bundle(model, specs)
    x = np.random.default_rng(1).standard_normal((1, 64)).astype(np.float32)
    outs = []
    for parallel in (True, False):
        pi = PartitionedInterpreter(bundle=bundle, parallel=parallel)
        assert pi.parallel is parallel
        pi.allocate_tensors()
        pi.set_tensor(0, x)
        pi.invoke()
        outs.append(pi.get_tensor(pi.get_output_details()[0]["index"]))
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], _reference(model, x))


@pytest.mark.parametrize("parallel", [True, False])
def test_a_failing_partition_raises_and_the_interpreter_recovers(parallel):
    model = gather_model()
    pi = PartitionedInterpreter(
        bundle=build_bundle(
            model, [PartitionSpec([0]), PartitionSpec([1], unit=1), PartitionSpec([2])]
        ),
        parallel=parallel,
    )
    assert pi.parallel is parallel
    pi.allocate_tensors()
    x = np.ones((1, 16), np.float32)
    pi.set_tensor(0, x)
    pi.set_tensor(1, np.array([9], np.int32))
    with pytest.raises(
        RuntimeBackendError,
        match=r"partition p1 \(cpu:1, host CPU, XNNPACK\) "
        r"failed: gather index out of bounds",
    ):
        pi.invoke()
    pi.set_tensor(1, np.array([3], np.int32))
    pi.invoke()
    ref = Interpreter(model_content=write_model(model))
    ref.allocate_tensors()
    ref.set_tensor(0, x)
    ref.set_tensor(1, np.array([3], np.int32))
    ref.invoke()
    out = ref.get_output_details()[0]["index"]
    assert np.array_equal(pi.get_tensor(out), ref.get_tensor(out))
    pi.close()


def _stream_setup(corpus):
    path = corpus["mobilenet_v2"]
    model = read_model(path)
    specs = [PartitionSpec(p, unit=i % 2) for i, p in enumerate(contiguous(model, 3, 8))]
    return path, build_bundle(path, specs, arena="boundary")


def test_stream_results_come_in_input_order_and_match_invoke(corpus):
    path, bundle = _stream_setup(corpus)
    pi = PartitionedInterpreter(bundle=bundle)
    pi.allocate_tensors()
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((1, 96, 96, 3)).astype(np.float32) for _ in range(40)]
    ref = Interpreter(model_path=str(path))
    ref.allocate_tensors()
    want = []
    for x in xs:
        ref.set_tensor(0, x)
        ref.invoke()
        want.append(ref.get_tensor(171))
    got = list(pi.run_stream([x] for x in xs))
    assert len(got) == len(xs)
    assert all(np.array_equal(g[0], w) for g, w in zip(got, want, strict=True))
    by_name = list(pi.run_stream(({"input": x} for x in xs[:5]), depth=2))
    assert all(np.array_equal(g["probs"], w) for g, w in zip(by_name, want[:5], strict=True))
    # results are fresh arrays, not views into reused buffers
    assert not np.shares_memory(got[0][0], got[1][0])


def test_stream_keeps_at_most_depth_inputs_in_flight(corpus):
    _, bundle = _stream_setup(corpus)
    pi = PartitionedInterpreter(bundle=bundle)
    pi.allocate_tensors()
    pulled = []
    x = np.zeros((1, 96, 96, 3), np.float32)

    def source():
        for i in range(30):
            pulled.append(i)
            yield [x]

    for k, _ in enumerate(pi.run_stream(source(), depth=3)):
        # before result k is handed out, at most k + depth inputs have been taken
        assert len(pulled) <= k + 3
    assert len(pulled) == 30


def test_stream_errors_stop_the_pipeline_and_reach_the_caller(corpus):
    model = gather_model()
    pi = PartitionedInterpreter(
        bundle=build_bundle(
            model, [PartitionSpec([0]), PartitionSpec([1], unit=1), PartitionSpec([2])]
        )
    )
    pi.allocate_tensors()
    before = threading.active_count()
    x = np.ones((1, 16), np.float32)
    items = [[x, np.array([i % 4], np.int32)] for i in range(6)] + [[x, np.array([7], np.int32)]]
    got = []
    with pytest.raises(
        RuntimeBackendError,
        match=r"partition p1 .* failed while streaming: gather index out of bounds",
    ):
        for y in pi.run_stream(items * 3):
            got.append(y)
    assert len(got) == 6  # everything before the failing input was delivered, in order
    assert threading.active_count() == before
    with pytest.raises(TensorValueError, match="got float64"):
        list(pi.run_stream([[x.astype(np.float64), np.array([0], np.int32)]]))
    assert threading.active_count() == before
    pi.set_tensor(0, x)  # the interpreter is usable again
    pi.set_tensor(1, np.array([1], np.int32))
    pi.invoke()


def test_abandoned_stream_cleans_up(corpus):
    _, bundle = _stream_setup(corpus)
    pi = PartitionedInterpreter(bundle=bundle)
    pi.allocate_tensors()
    before = threading.active_count()
    x = np.zeros((1, 96, 96, 3), np.float32)
    stream = pi.run_stream([x] for _ in range(100))
    next(stream)
    stream.close()
    assert threading.active_count() == before
    pi.invoke()


def test_stateful_model_streams_in_order(corpus, corpus_manifest):
    path = corpus["resource_vars"]
    model = read_model(path)
    parts = contiguous(model, 3, 1)
    pi = PartitionedInterpreter(bundle=build_bundle(path, [PartitionSpec(p) for p in parts]))
    pi.allocate_tensors()
    ref = Interpreter(model_path=str(path))
    ref.allocate_tensors()
    rng = np.random.default_rng(4)
    feeds = [
        [rng.standard_normal(d["shape"]).astype(d["dtype"]) for d in ref.get_input_details()]
        for _ in range(8)
    ]
    want = []
    for feed in feeds:
        for d, v in zip(ref.get_input_details(), feed, strict=True):
            ref.set_tensor(d["index"], v)
        ref.invoke()
        want.append([ref.get_tensor(d["index"]) for d in ref.get_output_details()])
    got = list(pi.run_stream(feeds))
    for g, w in zip(got, want, strict=True):
        assert all(np.array_equal(a, b) for a, b in zip(g, w, strict=True))


def _unit_workers():
    return {t for t in threading.enumerate() if t.name.startswith("edgepart-unit")}


def test_concurrent_workers_are_kept_and_stop_on_close_or_when_dropped():
    model, specs = _branchy(width=16, depth=2)
    bundle = build_bundle(model, specs)
    before = _unit_workers()  # interpreters of other tests may still be alive
    pi = PartitionedInterpreter(bundle=bundle)
    pi.allocate_tensors()
    mine = _unit_workers() - before
    assert len(mine) == 1  # two units: the caller's thread runs the first
    rng = np.random.default_rng(5)
    for _ in range(30):
        x = rng.standard_normal((1, 16)).astype(np.float32)
        pi.set_tensor(0, x)
        pi.invoke()
        assert np.array_equal(
            pi.get_tensor(pi.get_output_details()[0]["index"]), _reference(model, x)
        )
    assert _unit_workers() - before == mine  # no new thread per invoke
    pi.close()
    assert not any(t.is_alive() for t in mine)
    with pytest.raises(UsageError, match="closed"):
        pi.invoke()
    pi.close()  # a second close is harmless

    dropped = PartitionedInterpreter(bundle=bundle)
    dropped.allocate_tensors()
    dropped.set_tensor(0, np.ones((1, 16), np.float32))
    dropped.invoke()
    theirs = _unit_workers() - before - mine
    assert len(theirs) == 1
    del dropped
    gc.collect()
    for t in theirs:
        t.join(timeout=30)
        assert not t.is_alive()


def test_time_stream_counts_results_and_times_the_steady_state(corpus):
    _, bundle = _stream_setup(corpus)
    pi = PartitionedInterpreter(bundle=bundle)
    pi.allocate_tensors()
    x = np.zeros((1, 96, 96, 3), np.float32)
    st = time_stream(pi.run_stream([x] for _ in range(12)))
    assert st.n == 12
    assert 0 < st.steady_s < st.total_s
    assert st.throughput_per_s == pytest.approx(12 / st.total_s)
    assert st.steady_per_s == pytest.approx(11 / st.steady_s)
    one = time_stream(pi.run_stream([[x]]))
    assert one.n == 1 and one.steady_s == 0 and one.steady_per_s is None
