"""The host profiler on tiny models, with the real LiteRT interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from _cost_models import conv_chain

from edgepart.cost.fusion import candidate_pairs, is_fused
from edgepart.cost.hardware import Hardware, ProcessorSpec
from edgepart.cost.model import CostModel
from edgepart.cost.signature import op_signatures
from edgepart.cost.table import load_table
from edgepart.cost.units import timing_units
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.profiling.host import ProfileConfig, profile_model
from edgepart.profiling.standalone import standalone_model
from edgepart.profiling.timing import TimingConfig, make_interpreter, time_model
from edgepart.tflite.writer import write_model

FAST = TimingConfig(warmup=2, min_repeats=5, max_repeats=20, budget_s=0.005)


@pytest.mark.parametrize("executor", ["xnnpack", "builtin", "reference"])
def test_profile_tiny_model(executor, tmp_path):
    m = conv_chain(n=2)
    res = profile_model(m, ProfileConfig(executor=executor, timing=FAST), name="chain")
    pt = res.table.processor(f"host_{executor}_1t")
    sigs = op_signatures(m.main)
    # both convs share a signature: timed once, both units carry the value
    assert sigs[0].key == sigs[2].key
    conv_units = [u for u in res.units if u.unit.ops in ((0,), (2,))]
    if len(conv_units) == 2:
        assert conv_units[0].value_s == conv_units[1].value_s
    assert all(u.stats is not None and u.stats.count >= 5 for u in res.units)
    for e in pt.entries.values():
        s = e.stats
        assert 0 < s.min_s <= s.p10_s <= s.median_s <= s.p90_s
        assert e.value_s >= 0
    assert res.model_stats is not None and res.model_stats.count >= 5
    assert pt.invoke_overhead is not None and pt.invoke_overhead.median_s > 0
    assert pt.models[0]["name"] == "chain"
    # the table round-trips and drives a CostModel that covers every op by measurement
    path = tmp_path / "t.json"
    res.table.save(path)
    t = load_table(path)
    cm = CostModel(Hardware("host", (ProcessorSpec("cpu"),)), t, table_for={"cpu": res.processor})
    gc = cm.costs(m.main, m)
    assert gc.source_counts("cpu")["roofline"] == 0
    pred = gc.partition_latency(range(m.main.num_ops), "cpu").seconds
    assert pred == pytest.approx(res.predicted_s, rel=1e-9)


def test_dequantize_helpers_are_constantized_and_runnable():
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 8))
    w16 = g.constant("w16", np.arange(32, dtype=np.float16).reshape(4, 8))
    w = g.tensor("w", DType.FLOAT32, (4, 8))
    y = g.tensor("y", DType.FLOAT32, (1, 4))
    z = g.tensor("z", DType.FLOAT32, (1, 4))
    g.op("DEQUANTIZE", [w16], [w])
    g.op("FULLY_CONNECTED", [x, w, -1], [y])
    g.op("RELU", [y], [z])
    g.output(z)
    mb.add_signature("serving_default", 0, [("x", x)], [("z", z)])
    m = mb.build()
    units = timing_units(m.main)
    fc = next(u for u in units if u.ops == (1,))
    assert fc.helpers == (0,)
    sub = standalone_model(m, list(fc.ops), list(fc.helpers))
    assert len(sub.main.inputs) == 1  # only x: the weights are constant again
    it = make_interpreter(write_model(sub), "builtin", 1)
    it.set_tensor(it.get_input_details()[0]["index"], np.ones((1, 8), np.float32))
    it.invoke()
    out = it.get_tensor(it.get_output_details()[0]["index"])
    assert out.tolist() == [np.arange(32).reshape(4, 8).sum(axis=1).tolist()]


def test_state_ops_are_timed_as_one_unit():
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 4))
    h = g.tensor("h", DType.RESOURCE, ())
    v = g.tensor("v", DType.FLOAT32, (1, 4))
    s = g.tensor("s", DType.FLOAT32, (1, 4))
    g.op("VAR_HANDLE", [], [h], options={"shared_name": "acc"})
    g.op("READ_VARIABLE", [h], [v])
    g.op("ADD", [v, x], [s])
    g.op("ASSIGN_VARIABLE", [h, s], [])
    g.output(s)
    m = mb.build()
    units = timing_units(m.main)
    assert [u.ops for u in units] == [(0, 1, 2, 3)]


def test_timing_loop_batches_small_models():
    st = time_model(write_model(conv_chain(n=1, size=2, channels=2)), "builtin", 1, FAST)
    assert st.batch > 1 and st.count >= 5


def test_fusion_rule_and_candidates():
    assert is_fused(10.0, 4.0, 10.5)  # saves 3.5 > 0.5 * 4
    assert not is_fused(10.0, 4.0, 13.0)  # saves 1.0
    m = conv_chain(n=2)
    pairs = candidate_pairs(m.main, "xnnpack")
    assert (0, 1) in pairs and (2, 3) in pairs  # CONV -> RELU
    assert candidate_pairs(m.main, "builtin") == []


def test_detect_groups_fused_pairs_and_grows_chains():
    from edgepart.cost.fusion import detect
    from edgepart.cost.stats import Stats
    from edgepart.cost.units import Unit, UnitResult

    # PAD -> CONV -> RELU: PAD+CONV fused (saves the pad), then +RELU fused too
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 4, 4, 2))
    pads = g.constant("p", np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))
    w = g.constant("w", np.zeros((2, 3, 3, 2), np.float32))
    t0 = g.tensor("t0", DType.FLOAT32, (1, 6, 6, 2))
    t1 = g.tensor("t1", DType.FLOAT32, (1, 4, 4, 2))
    t2 = g.tensor("t2", DType.FLOAT32, (1, 4, 4, 2))
    g.op("PAD", [x, pads], [t0])
    g.op("CONV_2D", [t0, w, -1], [t1], options={"padding": "VALID", "stride_h": 1, "stride_w": 1})
    g.op("RELU", [t1], [t2])
    g.output(t2)
    sg = mb.build().main
    alone = {(0,): 4.0, (1,): 20.0, (2,): 3.0}
    together = {(0, 1): 20.5, (0, 1, 2): 21.0}

    def st(v):
        return Stats(v, v, v, v, 5)

    results = [UnitResult(Unit(k), "k", "op", v, st(v)) for k, v in alone.items()]
    asked = []

    def measure_many(units):
        asked.append([u.ops for u in units])
        return [(alone.get(u.ops) or together[u.ops], st(1.0)) for u in units]

    def record(unit, stats, role):
        return UnitResult(unit, role, "group", together[unit.ops], stats)

    out, groups = detect(sg, results, measure_many, record, executor="xnnpack")
    assert groups == [(0, 1, 2)]
    assert [r.unit.ops for r in out] == [(0, 1, 2)] and out[0].value_s == 21.0
    assert asked == [[(0,), (1,), (0, 1)], [(0, 1), (2,), (0, 1, 2)]]
    # builtin kernels are never tested
    out, groups = detect(sg, results, measure_many, record, executor="builtin")
    assert groups == [] and out == results


def test_segments_are_timed_in_context_and_scale_the_ops(corpus):
    """A model of enough ops is also timed in segments; the cost model gives each segment's
    ops shares of its in-context time, and the whole-model prediction is their sum."""
    from edgepart.tflite.reader import read_model

    m = read_model(corpus["mobilenet_v2"])
    res = profile_model(m, ProfileConfig(executor="xnnpack", timing=FAST), name="mnv2")
    pt = res.table.processor("host_xnnpack_1t")
    segs = [e for e in pt.entries.values() if e.extra.get("role") == "segment"]
    assert 2 <= len(segs) <= 8
    covered = sorted(i for e in segs for i in e.extra["op_indices"])
    assert len(covered) == len(set(covered))  # segments do not overlap
    assert all(len(e.extra["op_indices"]) * 4 <= 3 * m.main.num_ops for e in segs)
    cm = CostModel(Hardware("host", (ProcessorSpec("cpu"),)), res.table,
                   table_for={"cpu": res.processor})  # fmt: skip
    gc = cm.costs(m.main, m)
    for e in segs:
        ops = e.extra["op_indices"]
        assert gc.group_latency(ops, "cpu").seconds == pytest.approx(e.value_s, rel=1e-9)
    assert pt.models[0]["segments"] == len(segs)
    # without segments, the table is of single units (and pairs) only
    res2 = profile_model(m, ProfileConfig(executor="xnnpack", timing=FAST, segments=False))
    t2 = res2.table.processor("host_xnnpack_1t")
    assert not any(e.extra.get("role") == "segment" for e in t2.entries.values())


def test_ops_missing_from_a_table_never_cost_inf(corpus):
    """An op without an entry (its timing failed) on a processor without roofline peaks gets
    a finite value scaled from the table's measured ops, flagged interpolated."""
    import math

    from edgepart.tflite.reader import read_model

    m = read_model(corpus["mobilenet_v2"])
    res = profile_model(m, ProfileConfig(timing=FAST, segments=False, fusion=False))
    pt = res.table.processor(res.processor)
    conv_keys = [k for k, e in pt.entries.items() if e.extra.get("op") == "CONV_2D"]
    del pt.entries[conv_keys[0]]
    pt._families = None
    cm = CostModel(Hardware("host", (ProcessorSpec("cpu"),)), res.table,
                   table_for={"cpu": res.processor})  # fmt: skip
    gc = cm.costs(m.main, m)
    assert np.isfinite(gc.latency).all()
    whole = gc.partition_latency(range(m.main.num_ops), "cpu")
    assert math.isfinite(whole.seconds) and whole.source == "interpolated"


def test_cache_sizes_are_read_from_sysfs(tmp_path):
    from edgepart.profiling._session import cache_bytes

    for idx, (level, kind, size) in enumerate(
        [(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"),
         (3, "Unified", "307200K"), (4, "Unified", "bogus")]
    ):  # fmt: skip
        d = tmp_path / f"index{idx}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    assert cache_bytes(str(tmp_path)) == {1: 48 << 10, 2: 2 << 20, 3: 300 << 20}
    assert cache_bytes(str(tmp_path / "none")) == {}


def test_only_units_past_the_core_cache_of_models_within_the_last_level_are_timed_warm():
    from edgepart.profiling.host import _times_warm

    caches = {1: 48 << 10, 2: 2 << 20, 3: 300 << 20}
    assert _times_warm(27 << 20, 30 << 20, caches)
    assert not _times_warm(1 << 20, 30 << 20, caches)  # fits the core's own cache
    assert not _times_warm(27 << 20, 400 << 20, caches)  # the model streams from memory
    assert not _times_warm(27 << 20, 30 << 20, {1: 48 << 10, 2: 2 << 20})  # no last level
    assert not _times_warm(27 << 20, 30 << 20, {})


def test_units_timed_warm_get_their_samples_in_blocks(monkeypatch):
    """With a core cache of 16 bytes every unit of a small model is past it: all are timed in
    blocks beside the whole model, none in the rounds, and the table still covers the model."""
    import edgepart.profiling.host as host

    monkeypatch.setattr(host, "cache_bytes", lambda: {1: 16, 2: 16, 3: 1 << 30})
    m = conv_chain(n=2)
    res = profile_model(m, ProfileConfig(executor="xnnpack", timing=FAST), name="chain")
    assert all(u.stats is not None for u in res.units)
    # blocks give each timer at least the whole model's minimum of samples
    assert min(u.stats.count for u in res.units) >= host._WHOLE_MIN_SAMPLES
    assert np.isfinite(res.predicted) and res.predicted > 0
    monkeypatch.setattr(host, "cache_bytes", dict)
    res = profile_model(m, ProfileConfig(executor="xnnpack", timing=FAST), name="chain")
    assert max(u.stats.count for u in res.units) < host._WHOLE_MIN_SAMPLES


def test_the_members_of_a_warm_pair_are_timed_warm_too():
    """A context pair or fusion candidate is compared with its members by subtraction: when the
    pair is past the core's cache, its members are timed in blocks as well, whatever their
    size; other small units stay in the rounds."""
    from edgepart.profiling._session import Session

    s = Session.__new__(Session)
    s.timers = {k: object() for k in ("big", "a", "b", "pair", "other")}  # type: ignore[misc]
    s.sizes = {"big": 9000, "a": 10, "b": 10, "pair": 9010, "other": 10}
    s.ops_of = {
        "big": {frozenset({4})},
        "a": {frozenset({0}), frozenset({7})},
        "b": {frozenset({1})},
        "pair": {frozenset({0, 1})},
        "other": {frozenset({2})},
    }
    assert s.warm_keys(lambda n: n > 1000) == {"big", "pair", "a", "b"}
    assert s.warm_keys(lambda n: False) == set()
