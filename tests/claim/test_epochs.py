"""The fast epoch partitioner against a literal port of TFLite's loop, plus documented cases."""

from __future__ import annotations

import numpy as np
import pytest
from _tflite_reference import reference_partition
from hypothesis import given, settings
from hypothesis import strategies as st

from edgepart.claim.epochs import (
    NodeSubset,
    delegate_partitions,
    nodes_of_first_n_largest,
    partition_independent_subsets,
    side_effect_control_edges,
)
from edgepart.errors import ModelFormatError
from edgepart.ir.values import Csr


def _as_tuples(subsets):
    return [(s.kind, s.nodes, s.input_tensors, s.output_tensors) for s in subsets]


@st.composite
def graphs(draw, shuffle_plan: bool):
    n = draw(st.integers(1, 24))
    n_free = draw(st.integers(1, 4))  # graph inputs and constants
    produced: list[int] = []
    next_t = n_free
    ins, outs = [], []
    for _ in range(n):
        pool = list(range(n_free)) + produced
        k = draw(st.integers(1, 3))
        row = [draw(st.sampled_from(pool)) for _ in range(k)]
        if draw(st.booleans()) and draw(st.booleans()):
            row.append(-1)  # an omitted optional input
        m = draw(st.integers(1, 2))
        orow = list(range(next_t, next_t + m))
        next_t += m
        produced += orow
        ins.append(row)
        outs.append(orow)
    perm = list(range(n))
    if shuffle_plan:
        perm = draw(st.permutations(perm))
    ins = [ins[p] for p in perm]
    outs = [outs[p] for p in perm]
    supported = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    n_edges = draw(st.integers(0, 4))
    edges = [(draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))) for _ in range(n_edges)]
    edges = [(a, b) for a, b in edges if a != b]
    n_out = draw(st.integers(0, 3))
    gouts = [draw(st.integers(0, next_t - 1)) for _ in range(n_out)]
    return ins, outs, supported, next_t, edges, gouts


def _run(fn, g, greedy, edges, **kw):
    """``fn`` (the preview or the whole delegate step) on a drawn graph with ``edges``."""
    ins, outs, supported, nt, _, gouts = g
    return fn(
        Csr.from_rows(ins),
        Csr.from_rows(outs),
        np.array(supported, bool),
        num_tensors=nt,
        graph_outputs=gouts,
        greedy=greedy,
        control_edges=edges,
        **kw,
    )


def _compare(g, greedy, fusion_off=False, use_edges=True):
    ins, outs, supported, nt, edges, gouts = g
    edges = edges if use_edges else []
    try:
        want = reference_partition(ins, outs, supported, nt, gouts, greedy, edges, fusion_off)
    except RuntimeError:
        with pytest.raises(ModelFormatError):
            _run(partition_independent_subsets, g, greedy, edges, disable_node_fusion=fusion_off)
        return
    got = _run(partition_independent_subsets, g, greedy, edges, disable_node_fusion=fusion_off)
    assert _as_tuples(got) == want


@settings(max_examples=200, deadline=None)
@given(graphs(shuffle_plan=False), st.booleans())
def test_topological_plans_match_tflite_loop(g, greedy):
    _compare(g, greedy, use_edges=False)


@settings(max_examples=200, deadline=None)
@given(graphs(shuffle_plan=False), st.booleans(), st.booleans())
def test_control_edges_match_tflite_loop(g, greedy, fusion_off):
    _compare(g, greedy, fusion_off)


@settings(max_examples=200, deadline=None)
@given(graphs(shuffle_plan=True), st.booleans(), st.booleans())
def test_shuffled_plans_match_tflite_loop(g, greedy, fusion_off):
    _compare(g, greedy, fusion_off)


# The 6-op probe measured with LiteRT (tflite.md 1.2): ADD, CUMSUM, MUL, CUMSUM, ADD, ADD where
# CUMSUM is refused. Tensors: 0 input; op i writes tensor i+1. MUL(2) reads ADD0's output t1,
# CUMSUM(3) reads t2 (CUMSUM1's output), ADD4 reads t3 and t4, ADD5 reads t5.
_PROBE_IN = [[0, 0], [1], [1, 1], [2], [3, 4], [5, 5]]
_PROBE_OUT = [[1], [2], [3], [4], [5], [6]]
_PROBE_SUP = np.array([1, 0, 1, 0, 1, 1], bool)


def _probe(greedy):
    return partition_independent_subsets(
        Csr.from_rows(_PROBE_IN),
        Csr.from_rows(_PROBE_OUT),
        _PROBE_SUP,
        num_tensors=7,
        graph_outputs=[6],
        greedy=greedy,
    )


def test_probe_greedy_merges_around_cpu_op():
    got = [s.nodes for s in _probe(True) if s.kind == "delegated"]
    assert got == [(0, 2), (4, 5)]


def test_probe_non_greedy_keeps_plan_order():
    got = [s.nodes for s in _probe(False) if s.kind == "delegated"]
    assert got == [(0,), (2,), (4, 5)]


def test_boundaries_sorted_and_constants_included():
    subsets = _probe(True)
    assert subsets[0] == NodeSubset("delegated", (0, 2), (0,), (1, 3))
    assert subsets[-1].output_tensors == (6,)


def test_header_example_with_control_edge():
    ins = Csr.from_rows([[0], [1], [2], [3], [2], [5, 4]])
    outs = Csr.from_rows([[1], [2], [3], [4], [5], [6]])
    sup = np.array([0, 0, 1, 1, 0, 0], bool)
    plain = partition_independent_subsets(ins, outs, sup, num_tensors=7)
    assert [s.nodes for s in plain] == [(0, 1, 4), (2, 3), (5,)]
    ctrl = partition_independent_subsets(ins, outs, sup, num_tensors=7, control_edges=[(3, 4)])
    assert [s.nodes for s in ctrl] == [(0, 1), (2, 3), (4, 5)]


def test_side_effect_chain():
    assert side_effect_control_edges(np.array([0, 1, 0, 1, 1], bool)) == [(1, 3), (3, 4)]
    assert side_effect_control_edges(np.zeros(3, bool)) == []


def _subset(kind, nodes):
    return NodeSubset(kind, tuple(nodes), (), ())


def test_selection_largest_first_cap_and_minimum():
    subs = [
        _subset("delegated", [0]),
        _subset("cpu", [1, 2, 3, 4]),
        _subset("delegated", [5, 6, 7]),
        _subset("delegated", [8, 9]),
    ]
    assert nodes_of_first_n_largest(subs) == [5, 6, 7, 8, 9, 0]
    assert nodes_of_first_n_largest(subs, 1) == [5, 6, 7]
    assert nodes_of_first_n_largest(subs, 3, 2) == [5, 6, 7, 8, 9]
    assert nodes_of_first_n_largest(subs, 3, 4) == []


def test_selection_ties_keep_preview_order():
    subs = [_subset("delegated", [0, 1]), _subset("delegated", [3, 4])]
    assert nodes_of_first_n_largest(subs, 1) == [0, 1]


def test_cap_drops_smallest_then_repartitions():
    # chain: S S C S C S S S ; cap 1 keeps the 3-node run; everything else is CPU
    n = 8
    ins = Csr.from_rows([[i] for i in range(n)])
    outs = Csr.from_rows([[i + 1] for i in range(n)])
    sup = np.array([1, 1, 0, 1, 0, 1, 1, 1], bool)
    final = delegate_partitions(
        ins, outs, sup, num_tensors=n + 1, graph_outputs=[n], max_partitions=1
    )
    assert [(s.kind, s.nodes) for s in final] == [
        ("cpu", (0, 1, 2, 3, 4)),
        ("delegated", (5, 6, 7)),
    ]
    final = delegate_partitions(
        ins, outs, sup, num_tensors=n + 1, graph_outputs=[n], min_nodes_per_partition=2
    )
    assert [s.nodes for s in final if s.kind == "delegated"] == [(0, 1), (5, 6, 7)]
    assert delegate_partitions(ins, outs, sup, num_tensors=n + 1, min_nodes_per_partition=4) == []


def test_cycle_is_an_error():
    ins = Csr.from_rows([[2], [1]])
    outs = Csr.from_rows([[1], [2]])
    with pytest.raises(ModelFormatError, match="cycle"):
        partition_independent_subsets(ins, outs, np.array([1, 0], bool), num_tensors=3)


def test_deterministic():
    rng = np.random.default_rng(0)
    n = 500
    ins = Csr.from_rows([[int(rng.integers(0, i + 1))] for i in range(n)])
    outs = Csr.from_rows([[i + 1] for i in range(n)])
    sup = rng.random(n) < 0.7
    a = partition_independent_subsets(ins, outs, sup, num_tensors=n + 1)
    b = partition_independent_subsets(ins, outs, sup, num_tensors=n + 1)
    assert a == b


def _reference_flow(ins, outs, sup, nt, gouts, greedy, edges, cap, min_nodes):
    preview = reference_partition(ins, outs, sup, nt, gouts, greedy, edges)
    parts = [p for p in preview if p[0] == "delegated"]
    parts.sort(key=lambda p: -len(p[1]))  # stable, like libstdc++ std::sort below 17 items
    chosen = []
    for p in parts[: len(parts) if cap is None else cap]:
        if len(p[1]) < min_nodes:
            break
        chosen += p[1]
    if not chosen:
        return []
    mask = [i in set(chosen) for i in range(len(ins))]
    return reference_partition(ins, outs, mask, nt, gouts, greedy, edges)


@settings(max_examples=200, deadline=None)
@given(
    graphs(shuffle_plan=True),
    st.booleans(),
    st.one_of(st.none(), st.integers(0, 4)),
    st.integers(0, 3),
)
def test_two_step_flow_matches_tflite(g, greedy, cap, min_nodes):
    ins, outs, supported, nt, edges, gouts = g
    try:
        want = _reference_flow(ins, outs, supported, nt, gouts, greedy, edges, cap, min_nodes)
    except RuntimeError:
        return
    got = _run(
        delegate_partitions, g, greedy, edges, max_partitions=cap, min_nodes_per_partition=min_nodes
    )
    assert _as_tuples(got) == want
