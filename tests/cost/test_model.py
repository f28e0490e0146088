"""CostModel: sources, caching, fused groups, partition and transfer terms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _cost_models import conv_chain

from edgepart.cost.hardware import Hardware, LinkSpec, ProcessorSpec
from edgepart.cost.model import CostModel
from edgepart.cost.roofline import roofline
from edgepart.cost.signature import group_signature, op_signatures
from edgepart.cost.table import Entry, LatencyTable, ProcessorTable, Stats
from edgepart.cost.work import op_work
from edgepart.errors import LatencyTableError

CPU = ProcessorSpec("cpu", peak_ops={"FLOAT32": 50e9}, bandwidth=10e9, invoke_overhead_s=2e-6)
GPU = ProcessorSpec(
    "gpu",
    kind="gpu",
    peak_ops={"FLOAT16": 500e9},
    bandwidth=30e9,
    invoke_overhead_s=1e-4,
    domain="vram",
)
HW = Hardware("dev", (CPU, GPU), (LinkSpec("dram", "vram", 5e9, 50e-6),))


def st(v: float) -> Stats:
    return Stats(v, v, v, v, 5)


def test_roofline_only_matches_roofline_module():
    m = conv_chain()
    gc = CostModel(HW).costs(m.main, m)
    rf = roofline(op_work(m.main, m), HW)
    assert np.array_equal(gc.latency, rf.time_s)
    assert gc.source_counts("cpu") == {
        "measured": 0,
        "interpolated": 0,
        "predicted": 0,
        "roofline": 7,
    }
    assert gc.op_latency(0, "gpu").source == "roofline"


def test_costs_are_cached_per_subgraph():
    m = conv_chain()
    cm = CostModel(HW)
    a = cm.costs(m.main, m)
    assert cm.costs(m.main, m) is a
    other = conv_chain(seed=1)
    assert cm.costs(other.main, other) is not a


def test_measured_interpolated_and_roofline_sources():
    m = conv_chain(n=2)
    sg = m.main
    sigs = op_signatures(sg)
    w = op_work(sg, m)
    pt = ProcessorTable("cpu", executor="xnnpack", threads=1, invoke_overhead=st(1e-6))
    # conv 0 measured; conv 2 has the same signature, so it is measured too
    pt.add(Entry(sigs[0].key, sigs[0].family, "op", float(w.flops[0]), 0.0, st(3e-5), 3e-5))
    # a RELU of another size in the family: relus get interpolated (scaled by bytes)
    relu = sigs[1]
    pt.add(Entry("RELU-other-size", relu.family, "op", float(w.flops[1]) * 2, 0.0, st(4e-6), 4e-6))
    gc = CostModel(HW, LatencyTable({"cpu": pt})).costs(sg, m)
    assert gc.op_latency(0, "cpu").source == "measured"
    assert gc.op_latency(2, "cpu").seconds == 3e-5
    assert gc.op_latency(1, "cpu").source == "interpolated"
    assert gc.op_latency(1, "cpu").seconds == pytest.approx(2e-6)
    assert gc.op_latency(4, "cpu").source == "roofline"  # the ADD
    assert gc.op_latency(0, "gpu").source == "roofline"  # no table for the gpu
    # the table's measured overhead replaces the profile's
    assert gc.invoke_overhead("cpu").seconds == 1e-6
    assert gc.invoke_overhead("gpu").seconds == 1e-4


def test_table_for_maps_and_validates_names():
    pt = ProcessorTable("host_xnnpack_1t", executor="xnnpack", threads=1)
    t = LatencyTable({"host_xnnpack_1t": pt})
    cm = CostModel(HW, t, table_for={"cpu": "host_xnnpack_1t"})
    assert cm.table_name("cpu") == "host_xnnpack_1t" and cm.table_name("gpu") is None
    with pytest.raises(LatencyTableError, match="no processor 'nope'"):
        CostModel(HW, t, table_for={"cpu": "nope"})


def test_fused_group_entry_is_used_for_whole_groups_only():
    m = conv_chain(n=1)  # CONV, RELU, ADD
    sg = m.main
    sigs = op_signatures(sg)
    pt = ProcessorTable("cpu", executor="xnnpack", threads=1, invoke_overhead=st(1e-6))
    for i, v in ((0, 10e-6), (1, 2e-6), (2, 3e-6)):
        pt.add(Entry(sigs[i].key, sigs[i].family, "op", 1.0, 1.0, st(v), v))
    g = group_signature(sg, [0, 1])
    pt.add(Entry(g.key, g.family, "group", 2.0, 2.0, st(10.5e-6), 10.5e-6, {"role": "fused"}))
    gc = CostModel(HW, LatencyTable({"cpu": pt})).costs(sg, m)
    assert gc.group_latency([0, 1, 2], "cpu").seconds == pytest.approx(13.5e-6)
    assert gc.latency[[0, 1], 0].sum() == pytest.approx(10.5e-6)  # attributed shares
    part = gc.partition_latency([0, 1, 2], "cpu")
    assert part.seconds == pytest.approx(14.5e-6) and part.source == "measured"
    split = gc.group_latency([1, 2], "cpu")
    assert split.source == "interpolated"  # a cut through a fused group is flagged


def test_transfer_terms():
    m = conv_chain(n=1)
    gc = CostModel(HW).costs(m.main, m)
    t = int(m.main.outputs[0])
    nbytes = float(m.main.tensor_nbytes[t])
    assert gc.transfer_cost(t, "cpu", "cpu") == 0.0
    assert gc.transfer_cost(t, "cpu", "gpu") == pytest.approx(50e-6 + nbytes / 5e9)
    assert gc.transfer_bytes(1e6, "gpu", "cpu") == pytest.approx(50e-6 + 1e6 / 5e9)
    lonely = Hardware("x", (CPU, GPU))
    assert math.isinf(CostModel(lonely).costs(m.main, m).transfer_bytes(10, "cpu", "gpu"))


def test_unknown_processor_lists_valid():
    m = conv_chain(n=1)
    gc = CostModel(HW).costs(m.main, m)
    with pytest.raises(LatencyTableError, match=r"no processor 'dsp'.*'cpu', 'gpu'"):
        gc.op_latency(0, "dsp")


def test_big_graph_costs_match_small_one():
    # costing is vectorized: every op of a long chain gets the same value as in a short chain
    big, small = conv_chain(n=40), conv_chain(n=2)
    gb = CostModel(HW).costs(big.main, big)
    gs = CostModel(HW).costs(small.main, small)
    assert gb.latency[0].tolist() == gs.latency[0].tolist()
    assert gb.latency[1].tolist() == gs.latency[1].tolist()
    assert gb.latency.shape == (81, 2)


def test_processor_pointing_at_a_table_file(tmp_path):
    import dataclasses

    m = conv_chain(n=1)
    sigs = op_signatures(m.main)
    pt = ProcessorTable("host_builtin_1t", executor="builtin", threads=1)
    pt.add(Entry(sigs[0].key, sigs[0].family, "op", 1.0, 1.0, st(7e-6), 7e-6))
    path = tmp_path / "cpu.json"
    LatencyTable({pt.name: pt}).save(path)
    cpu = dataclasses.replace(CPU, latency_table=str(path))
    gc = CostModel(Hardware("dev", (cpu, GPU))).costs(m.main, m)
    assert gc.op_latency(0, "cpu").seconds == 7e-6
    assert gc.op_latency(0, "cpu").source == "measured"


def test_delegate_partitions_cost_one_node_each():
    # CONV -> RELU -> ADD; conv and add delegated, relu not: two delegate partitions
    m = conv_chain(n=1)
    sg = m.main
    sigs = op_signatures(sg)
    pt = ProcessorTable(
        "cpu",
        executor="xnnpack",
        threads=1,
        statistic="median",
        invoke_overhead=st(1e-6),
        delegate_overhead=st(1.5e-6),
    )
    for i, (v, k) in enumerate(((10e-6, 1), (2e-6, 0), (3e-6, 1))):
        pt.add(Entry(sigs[i].key, sigs[i].family, "op", 1.0, 1.0, st(v), v, {"delegate_nodes": k}))
    assert pt.delegate_node_s == pytest.approx(0.5e-6)
    gc = CostModel(HW, LatencyTable({"cpu": pt})).costs(sg, m)
    assert gc.delegate_partitions([0, 1, 2], "cpu") == 2
    assert gc.delegate_partitions([0], "cpu") == 1
    assert gc.delegate_partitions([1], "cpu") == 0
    whole = gc.partition_latency([0, 1, 2], "cpu")
    assert whole.seconds == pytest.approx(1e-6 + 2 * 0.5e-6 + 15e-6)
    # restat subtracts the delegate node from delegated entries only
    t = LatencyTable({"cpu": pt}).restat("min").processor("cpu")
    assert t.entries[sigs[0].key].value_s == pytest.approx(10e-6 - 1e-6 - 0.5e-6)
    assert t.entries[sigs[1].key].value_s == pytest.approx(2e-6 - 1e-6)
