"""The fusion pre-pass: helpers, kernel-fusion groups, free reshapes, state, cycles."""

from __future__ import annotations

import numpy as np
import pytest

from edgepart.ir import analysis
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.extract import extract
from edgepart.ir.graph import Model
from edgepart.lowering.fuse import fuse
from edgepart.tflite.reader import read_model


def _check_partition(fz, n_ops: int) -> None:
    """Every non-helper op is the member of exactly one node; nodes are in topological order."""
    members = fz.members.idx
    assert sorted(members.tolist()) == sorted(np.flatnonzero(~fz.is_helper).tolist())
    assert len(np.unique(members)) == len(members)
    assert fz.num_ops == n_ops
    rows = fz.members.row_ids()
    assert (fz.node_of[members] == rows).all()


def _node_order_is_topological(sg, fz) -> None:
    src, dst = analysis.op_edges(sg)
    keep = ~fz.is_helper[src]
    a, b = fz.node_of[src[keep]], fz.node_of[dst[keep]]
    assert (a <= b).all()


def test_fp16_weight_decompression_is_cloned_into_readers(corpus):
    m = read_model(corpus["mobilenet_v2_fp16"])
    sg = m.main
    fz = fuse(sg, model=m)
    _check_partition(fz, sg.num_ops)
    _node_order_is_topological(sg, fz)
    helpers = np.flatnonzero(fz.is_helper)
    assert len(helpers) == 105 and {sg.op_name(int(h)) for h in helpers} == {"DEQUANTIZE"}
    assert fz.num_nodes == 65 and fz.merged["constant_decompression"] == 105
    assert fz.shrink == pytest.approx(170 / 65)
    # each helper is a helper of exactly the nodes that read its output
    cons = analysis.consumers(sg)
    for h in helpers.tolist():
        out = int(sg.op_outputs.row(h)[0])
        readers = {int(fz.node_of[c]) for c in cons.row(out).tolist()}
        holders = {v for v in range(fz.num_nodes) if h in fz.helpers.row(v).tolist()}
        assert holders == readers and fz.node_of[h] == min(readers)


def _shared_fp16_weight() -> Model:
    """One fp16 weight, DEQUANTIZEd once, read by two FULLY_CONNECTED ops on two branches."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 8))
    w16 = g.constant("w16", np.ones((8, 8), np.float16))
    w = g.tensor("w", DType.FLOAT32, (8, 8))
    g.op("DEQUANTIZE", [w16], [w])
    a = g.tensor("a", DType.FLOAT32, (1, 8))
    b = g.tensor("b", DType.FLOAT32, (1, 8))
    g.op("FULLY_CONNECTED", [x, w, -1], [a])
    g.op("FULLY_CONNECTED", [x, w, -1], [b])
    y = g.tensor("y", DType.FLOAT32, (1, 8))
    g.op("ADD", [a, b], [y])
    g.output(y)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", y)])
    return mb.build()


def test_a_weight_read_twice_is_decompressed_in_both_nodes():
    m = _shared_fp16_weight()
    fz = fuse(m.main, model=m)
    assert fz.is_helper.tolist() == [True, False, False, False]
    assert fz.num_nodes == 3
    a, b = int(fz.node_of[1]), int(fz.node_of[2])
    assert fz.helpers.row(a).tolist() == [0] and fz.helpers.row(b).tolist() == [0]
    assert fz.helpers.row(int(fz.node_of[3])).tolist() == []


def _chain() -> Model:
    """x -> FC -> RESHAPE -> RELU -> y, plus FC's output also read by ADD (op 3)."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 8))
    w = g.constant("w", np.ones((8, 8), np.float32))
    h = g.tensor("h", DType.FLOAT32, (1, 8))
    g.op("FULLY_CONNECTED", [x, w, -1], [h])
    shape = g.constant("shape", np.array([1, 8], np.int32))
    r = g.tensor("r", DType.FLOAT32, (1, 8))
    g.op("RESHAPE", [h, shape], [r])
    y = g.tensor("y", DType.FLOAT32, (1, 8))
    g.op("RELU", [r], [y])
    z = g.tensor("z", DType.FLOAT32, (1, 8))
    g.op("ADD", [y, x], [z])
    g.output(z)
    return mb.build()


def test_kernel_fusion_groups_merge_only_single_exit_chains_with_equal_support():
    sg = _chain().main
    sup = np.ones((4, 2), dtype=bool)
    fz = fuse(sg, support=sup, fused_groups=[(1, 2)])
    assert fz.num_nodes == 3 and fz.node_of[1] == fz.node_of[2]
    assert fz.merged["kernel_fusion"] == 1
    # (FC, ADD) is no chain: FC's output goes to RESHAPE, so the pair has two exits
    fz = fuse(sg, support=sup, fused_groups=[(0, 3)])
    assert fz.num_nodes == 4
    # different support rows: a processor would lose an option, so no merge
    sup2 = sup.copy()
    sup2[2, 1] = False
    fz = fuse(sg, support=sup2, fused_groups=[(1, 2)])
    assert fz.num_nodes == 4 and fz.merged["kernel_fusion"] == 0


def test_free_reshapes_join_a_partner_they_cannot_restrict():
    sg = _chain().main
    sup = np.ones((4, 2), dtype=bool)
    lat = np.full((4, 2), 1e-3)
    lat[1] = 0.0  # the cost model says the RESHAPE is free everywhere
    fz = fuse(sg, support=sup, latency=lat)
    assert fz.node_of[1] == fz.node_of[0] and fz.num_nodes == 3
    assert fz.merged["free_reshape"] == 1
    # not free on one processor: stays a node (merging could make a placement worse)
    lat[1, 1] = 1e-6
    assert fuse(sg, support=sup, latency=lat).num_nodes == 4
    # free, but unsupported where its producer runs: joins the consumer it does not restrict
    lat[1, 1] = 0.0
    sup3 = sup.copy()
    sup3[1, 1] = False
    sup3[2, 1] = False
    fz = fuse(sg, support=sup3, latency=lat)
    assert fz.node_of[1] == fz.node_of[2] and fz.node_of[0] != fz.node_of[1]
    # the default threshold merges nothing the cost model does not call free
    assert fuse(sg, support=sup, latency=np.full((4, 2), 1e-6)).num_nodes == 4


def test_state_groups_become_one_node_that_extracts(corpus):
    m = read_model(corpus["resource_vars"])
    sg = m.main
    fz = fuse(sg, model=m)
    _check_partition(fz, sg.num_ops)
    _node_order_is_topological(sg, fz)
    assert fz.merged["state"] > 0
    from edgepart.ir.state import state_groups

    sgid = state_groups(m, 0)
    for gid in np.unique(sgid[sgid >= 0]).tolist():
        ops = np.flatnonzero(sgid == gid)
        assert len({int(fz.node_of[o]) for o in ops.tolist()}) == 1
    for v in range(fz.num_nodes):  # every node can stand alone as a partition
        extract(m, fz.node_ops(v).tolist())


def _interleaved_untyped() -> Model:
    """Two string tensors P1 -> Q1 and P2 -> Q2 plus float edges P1 -> Q2 and P2 -> Q1.

    Each pair must stay in one partition; merged separately they would form a cycle
    (P1Q1 -> P2Q2 -> P1Q1), so the pre-pass merges all four."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (4,))
    s1 = g.tensor("s1", DType.STRING, (1,))
    s2 = g.tensor("s2", DType.STRING, (1,))
    f1 = g.tensor("f1", DType.FLOAT32, (4,))
    f2 = g.tensor("f2", DType.FLOAT32, (4,))
    g.op("CUSTOM_P", [x], [s1, f1])
    g.op("CUSTOM_P", [x], [s2, f2])
    y1 = g.tensor("y1", DType.FLOAT32, (4,))
    y2 = g.tensor("y2", DType.FLOAT32, (4,))
    g.op("CUSTOM_Q", [s1, f2], [y1])
    g.op("CUSTOM_Q", [s2, f1], [y2])
    g.output(y1, y2)
    return mb.build()


def test_untyped_tensors_stay_inside_and_cycles_are_merged():
    m = _interleaved_untyped()
    fz = fuse(m.main, model=m)
    assert fz.num_nodes == 1
    assert fz.merged["untyped_tensor"] >= 1 and fz.merged["cycle"] >= 1
