"""The predicate registry, combinators and a few named predicates on built ops."""

from __future__ import annotations

import numpy as np
import pytest

from edgepart.devices.capability import (
    OK,
    OpView,
    Support,
    all_of,
    any_of,
    bind_predicate,
    get_predicate,
    predicate_names,
)
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType


def _op(name, options=None, shape=(1, 8, 8, 4)):
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, shape)
    y = g.tensor("y", DType.FLOAT32, shape)
    if name == "CONV_2D":
        w = g.constant("w", np.zeros((4, 3, 3, 4), np.float32))
        b = g.constant("b", np.zeros(4, np.float32))
        g.op(name, [x, w, b], [y], options=options)
    elif name == "DEPTHWISE_CONV_2D":
        w = g.constant("w", np.zeros((1, 3, 3, 4), np.float32))
        g.op(name, [x, w, -1], [y], options=options)
    else:
        g.op(name, [x], [y], options=options)
    g.output(y)
    return OpView(mb.build().main, 0)


def test_getter_miss_lists_valid_names():
    with pytest.raises(KeyError) as err:
        get_predicate("no_such_rule")
    msg = str(err.value)
    assert "softmax_beta_is_1" in msg and "stride_le" in msg
    assert "softmax_beta_is_1" in predicate_names()


def test_named_predicates_give_reasons():
    assert bind_predicate("softmax_beta_is_1")(_op("SOFTMAX", {"beta": 1.0})).ok
    s = bind_predicate("softmax_beta_is_1")(_op("SOFTMAX", {"beta": 0.5}))
    assert not s.ok and "beta" in s.reason
    conv = _op("CONV_2D", {"stride_h": 4, "stride_w": 1, "fused_activation_function": "TANH"})
    assert not bind_predicate("stride_le", 3, has_arg=True)(conv).ok
    assert bind_predicate("stride_le", 4, has_arg=True)(conv).ok
    act = bind_predicate("fused_activation_in", ["NONE", "RELU"], has_arg=True)(conv)
    assert not act.ok and "Tanh" in act.reason
    assert bind_predicate("constant_filter_and_bias")(conv).ok
    dw = _op("DEPTHWISE_CONV_2D", {"depth_multiplier": 2})
    assert not bind_predicate("depth_multiplier_is_1")(dw).ok
    assert not bind_predicate("bias_required")(dw).ok


def test_bind_checks_arguments():
    with pytest.raises(ValueError, match="takes no argument"):
        bind_predicate("softmax_beta_is_1", 1, has_arg=True)
    with pytest.raises(ValueError, match="needs an argument"):
        bind_predicate("stride_le")
    with pytest.raises(ValueError, match="has no parameter 'maxx'"):
        bind_predicate("rank_le", {"slot": "in0", "maxx": 3}, has_arg=True)
    with pytest.raises(ValueError, match="allowed: NONE"):
        bind_predicate("fused_activation_in", ["GELU"], has_arg=True)


def test_combinators():
    no = lambda op: Support(False, "no")  # noqa: E731
    yes = lambda op: OK  # noqa: E731
    op = _op("RELU")
    assert all_of(yes, yes)(op).ok
    assert all_of(yes, no)(op).reason == "no"
    assert any_of(no, yes)(op).ok
    assert any_of(no, no)(op).reason == "no and no"
