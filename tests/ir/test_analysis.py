"""Graph analyses on small hand-made graphs with hand-computed answers."""

from __future__ import annotations

import numpy as np
import pytest

from edgepart.errors import ModelFormatError
from edgepart.ir import analysis
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType


def diamond(order=(0, 1, 2, 3)):
    """x -> a=RELU(x); b=TANH(a); c=LOGISTIC(a); d=ADD(b, c); ops listed in ``order``."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 8))  # 32 bytes
    a, b, c, d = (g.tensor(n, DType.FLOAT32, (1, 8)) for n in "abcd")
    specs = {
        0: ("RELU", [x], [a]),
        1: ("TANH", [a], [b]),
        2: ("LOGISTIC", [a], [c]),
        3: ("ADD", [b, c], [d]),
    }
    for k in order:
        op, ins, outs = specs[k]
        g.op(op, ins, outs)
    g.output(d)
    return mb.build().main


def test_producers_consumers_edges():
    sg = diamond()
    assert analysis.producers(sg).tolist() == [-1, 0, 1, 2, 3]
    cons = analysis.consumers(sg)
    assert [cons.row(t).tolist() for t in range(5)] == [[0], [1, 2], [3], [3], []]
    src, dst = analysis.op_edges(sg)
    assert list(zip(src.tolist(), dst.tolist(), strict=True)) == [(0, 1), (0, 2), (1, 3), (2, 3)]
    assert analysis.successors(sg).row(0).tolist() == [1, 2]
    assert analysis.predecessors(sg).row(3).tolist() == [1, 2]


def test_topological_order_of_shuffled_ops():
    sg = diamond(order=(3, 2, 0, 1))  # file order: ADD, LOGISTIC, RELU, TANH
    assert not analysis.is_topologically_sorted(sg)
    order = analysis.topological_order(sg).tolist()
    assert order == [2, 1, 3, 0]  # RELU, LOGISTIC, TANH, ADD (ties by index)


def test_cycle_is_reported():
    mb = ModelBuilder()
    g = mb.subgraph()
    a, b = g.tensor("a", DType.FLOAT32, (1,)), g.tensor("b", DType.FLOAT32, (1,))
    g.op("RELU", [a], [b])
    g.op("TANH", [b], [a])
    with pytest.raises(ModelFormatError, match="cycle"):
        analysis.topological_order(mb.build().main)


def test_convexity_and_witness():
    sg = diamond()
    assert analysis.is_convex(sg, [1, 2, 3])
    assert analysis.convexity_violation(sg, [0, 3]) == (0, 1, 3)
    assert analysis.is_convex(sg, [0, 1])


def test_boundary_tensors():
    sg = diamond()
    assert analysis.boundary_tensors(sg, [0, 1]) == ([0], [1, 2])
    assert analysis.boundary_tensors(sg, [3]) == ([2, 3], [4])
    assert analysis.boundary_tensors(sg, [0, 1, 2, 3]) == ([0], [4])


def test_lifetimes_and_live_bytes_lower_bound():
    sg = diamond()
    life = analysis.tensor_lifetimes(sg)
    # x: whole run as a graph input; a: steps 0..2; b: 1..3; c: 2..3; d: 3..3 (output)
    assert life.tolist() == [[0, 3], [0, 2], [1, 3], [2, 3], [3, 3]]
    # step 2 has x, a, b, c live = 4 * 32 bytes; step 3 has x, b, c, d
    assert analysis.live_bytes_lower_bound(sg) == 128


def test_constants_do_not_count_as_live():
    mb = ModelBuilder()
    g = mb.subgraph()
    x = g.input("x", DType.FLOAT32, (4,))
    w = g.constant("w", np.ones(4, np.float32))
    y = g.tensor("y", DType.FLOAT32, (4,))
    g.op("ADD", [x, w], [y])
    g.output(y)
    sg = mb.build().main
    assert analysis.live_bytes_lower_bound(sg) == 32
    assert analysis.boundary_tensors(sg, [0]) == ([0], [2])
