"""Ops in context, delegate-node fixed costs and TFLite-exact delegate partition counts."""

from __future__ import annotations

import numpy as np
import pytest
from _cost_models import conv_chain

from edgepart.cost.context import ROLE, context_units, predecessors
from edgepart.cost.hardware import Hardware, ProcessorSpec
from edgepart.cost.model import CostModel
from edgepart.cost.signature import group_signature, op_signatures
from edgepart.cost.stats import fit_slope
from edgepart.cost.table import Entry, LatencyTable, ProcessorTable, Stats
from edgepart.cost.units import Unit, timing_units
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model
from edgepart.profiling.host import ProfileConfig, profile_model
from edgepart.profiling.timing import (
    NODE_CHAIN,
    TimingConfig,
    delegate_node_stats,
    fit_intercept,
    make_interpreter,
    node_timers,
)
from edgepart.tflite.writer import write_model

HW = Hardware("host", (ProcessorSpec("cpu"),))
FAST = TimingConfig(warmup=2, min_repeats=5, max_repeats=20, budget_s=0.005)


def st(v: float) -> Stats:
    return Stats(v, v, v, v, 5)


def two_branches() -> Model:
    """x -> ADD -> y1 and x -> MUL -> y2: two delegated ops that share no edge."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 8))
    y1 = g.tensor("y1", DType.FLOAT32, (1, 8))
    y2 = g.tensor("y2", DType.FLOAT32, (1, 8))
    g.op("ADD", [x, x], [y1])
    g.op("MUL", [x, x], [y2])
    g.output(y1)
    g.output(y2)
    mb.add_signature("serving_default", 0, [("x", x)], [("y1", y1), ("y2", y2)])
    return mb.build()


def test_fit_intercept_is_exact_on_lines_and_keeps_order():
    # each statistic a line in chain length: intercepts 1, 2, 3, 4 us (min, p10, median, p90)
    lengths = [1, 2, 4, 8]
    stats = [
        Stats(3e-6 + k * 1e-7, 2e-6 + k * 1e-7, 4e-6 + k * 3e-7, 1e-6 + k * 1e-7, 10 + k, 3, 7)
        for k in lengths
    ]
    s = fit_intercept(lengths, stats)
    assert s.min_s == pytest.approx(1e-6)
    assert s.p10_s == pytest.approx(2e-6)
    assert s.median_s == pytest.approx(3e-6)
    assert s.p90_s == pytest.approx(4e-6)
    assert (s.count, s.warmup, s.batch) == (11, 3, 7)
    # a steeper p10 would extrapolate below min: made monotone, and never negative
    bad = [Stats(1e-6, 1e-6 * k, 2e-6, 1e-6, 5) for k in lengths]
    b = fit_intercept(lengths, bad)
    assert 0 <= b.min_s <= b.p10_s <= b.median_s <= b.p90_s
    with pytest.raises(ValueError):
        fit_intercept([1], stats[:1])
    # the slopes of the same lines: what one more op adds (0.1, 0.1, 0.1 and 0.3 us)
    d = fit_slope(lengths, stats)
    assert (d.min_s, d.p10_s, d.median_s) == pytest.approx((1e-7, 1e-7, 1e-7))
    assert d.p90_s == pytest.approx(3e-7)


def test_node_chains_are_one_delegate_node_on_xnnpack_only():
    timers = node_timers("xnnpack", 1, FAST)
    assert len(timers) == len(NODE_CHAIN)
    assert all(t.delegate_nodes == 1 for t in timers)
    for t in timers:
        t.repeats = 5
        for _ in range(5):
            t.sample()
    node = delegate_node_stats(timers)
    # The node's cost is the chains' measurements fitted at length 0 (the fit itself is checked
    # on exact data above; how these noisy timings compare is not a correctness property).
    assert node == fit_intercept(NODE_CHAIN, [t.stats() for t in timers])
    assert 0 <= node.min_s <= node.p10_s <= node.median_s <= node.p90_s
    assert node_timers("builtin", 1, FAST) == []


def test_delegate_partitions_follow_tflite_not_connectivity():
    m = two_branches()
    sg = m.main
    sigs = op_signatures(sg)
    pt = ProcessorTable(
        "cpu", executor="xnnpack", invoke_overhead=st(1e-6), delegate_overhead=st(2e-6)
    )
    for i in range(2):
        pt.add(
            Entry(
                sigs[i].key, sigs[i].family, "op", 1.0, 1.0, st(3e-6), 1e-6, {"delegate_nodes": 1}
            )
        )
    gc = CostModel(HW, LatencyTable({"cpu": pt})).costs(sg, m)
    # no edge joins the two ops, yet TFLite puts both in one partition; so does LiteRT here
    assert gc.delegate_partitions([0, 1], "cpu") == 1
    it = make_interpreter(write_model(m), "xnnpack", 1)
    real = sum(1 for d in it._get_ops_details() if d.get("op_name") == "DELEGATE")
    assert real == 1
    assert gc.partition_latency([0, 1], "cpu").seconds == pytest.approx(1e-6 + 1e-6 + 2e-6)


def test_predecessors_skip_folded_ops_and_pairs_need_single_units():
    m = conv_chain(n=2)  # CONV RELU CONV RELU ADD
    sg = m.main
    folded = np.zeros(sg.num_ops, dtype=bool)
    folded[2] = True  # pretend the second conv is folded at preparation
    assert predecessors(sg, folded).tolist() == [-1, 0, -1, 1, 3]
    pred = predecessors(sg, np.zeros(sg.num_ops, dtype=bool))
    units = timing_units(sg)
    assert [p[2].ops for p in context_units(units, pred)] == [(0, 1), (1, 2), (2, 3), (3, 4)]
    merged = [Unit((0, 1)), *[u for u in units if u.ops[0] > 1]]
    assert [p[2].ops for p in context_units(merged, pred)] == [(2, 3), (3, 4)]


def test_context_pair_replaces_the_second_op_only_when_its_predecessor_is_there():
    m = conv_chain(n=1)  # CONV RELU ADD
    sg = m.main
    sigs = op_signatures(sg)
    pt = ProcessorTable("cpu", executor="builtin", invoke_overhead=st(1e-6))
    for i, v in enumerate((10e-6, 2e-6, 3e-6)):
        pt.add(Entry(sigs[i].key, sigs[i].family, "op", 1.0, 1.0, st(v), v))
    pair = group_signature(sg, [0, 1], [sigs[0], sigs[1]])
    # measured together the pair adds 11 us: the relu adds 1 us after the conv, not 2
    pt.add(Entry(pair.key, pair.family, "group", 2.0, 2.0, st(11e-6), 11e-6, {"role": ROLE}))
    gc = CostModel(HW, LatencyTable({"cpu": pt})).costs(sg, m)
    assert gc.op_latency(1, "cpu").seconds == pytest.approx(1e-6)
    assert gc.op_latency(2, "cpu").seconds == pytest.approx(3e-6)  # no pair measured
    assert gc.group_latency([0, 1, 2], "cpu").seconds == pytest.approx(14e-6)
    # the relu without the conv before it costs its own time again
    assert gc.group_latency([1, 2], "cpu").seconds == pytest.approx(5e-6)
    assert gc.group_latency([1], "cpu").seconds == pytest.approx(2e-6)


def test_profiler_records_context_pairs_and_predicts_like_the_cost_model():
    m = conv_chain(n=1)
    res = profile_model(m, ProfileConfig(executor="builtin", timing=FAST), name="chain")
    pt = res.table.processor(res.processor)
    ctx = [e for e in pt.entries.values() if e.extra.get("role") == ROLE]
    assert len(ctx) == 2 and all(e.kind == "group" and e.extra["ops"] == 2 for e in ctx)
    cm = CostModel(HW, res.table, table_for={"cpu": res.processor})
    pred = cm.costs(m.main, m).partition_latency(range(m.main.num_ops), "cpu").seconds
    assert pred == pytest.approx(res.predicted_s, rel=1e-12)
    assert pt.models[0]["predicted_s"] == pytest.approx(pred, rel=1e-12)
    for cfg in (
        ProfileConfig(executor="builtin", timing=FAST, context=False),
        ProfileConfig(executor="builtin", timing=FAST, fusion=False),  # single units only
    ):
        off = profile_model(m, cfg)
        offt = off.table.processor(off.processor)
        assert not any(e.kind == "group" for e in offt.entries.values())
    assert ProfileConfig(fusion=False, context=True).with_context


@pytest.mark.parametrize("name", ["resource_vars", "cond", "dynamic_batch"])
def test_partition_count_of_profiled_corpus_models_matches_litert(corpus, name):
    from edgepart.tflite.reader import read_model

    path = corpus[name]
    m = read_model(path)
    res = profile_model(
        m,
        ProfileConfig(executor="xnnpack", timing=FAST, context=False),
        model_bytes=path.read_bytes(),
    )
    cm = CostModel(HW, res.table, table_for={"cpu": res.processor})
    gc = cm.costs(m.main, m)
    real = res.delegate_nodes  # DELEGATE nodes LiteRT built for the whole model
    assert real >= 1
    assert gc.delegate_partitions(range(m.main.num_ops), "cpu") == real
