"""Lifetimes with TFLite's ArenaPlanner rules, on hand-built graphs, checked against LiteRT."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from litert_arena_probe import probe

from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model
from edgepart.memory import plan_arena
from edgepart.memory.lifetimes import tflite_lifetimes
from edgepart.memory.model_problem import model_buffers, tensor_offsets
from edgepart.tflite.writer import write_model

F32 = DType.FLOAT32


def _chain(shared_twice: bool = False) -> Model:
    """x -> ADD -> a -> RESHAPE -> b -> MUL -> d -> SOFTMAX -> e -> ADD(e, x) -> y."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", F32, (1, 16))
    c = g.constant("c", np.full((1, 16), 0.5, np.float32))
    shape = g.constant("shape", np.array([4, 4], np.int32))
    a = g.tensor("a", F32, (1, 16))
    b = g.tensor("b", F32, (4, 4))
    c2 = g.constant("c2", np.full((4, 4), 2.0, np.float32))
    d = g.tensor("d", F32, (4, 4))
    e = g.tensor("e", F32, (4, 4))
    e2 = g.tensor("e2", F32, (1, 16))
    y = g.tensor("y", F32, (1, 16))
    g.op("ADD", [x, c], [a])
    g.op("RESHAPE", [a, shape], [b], options={"new_shape": [4, 4]})
    g.op("MUL", [b, c2], [d])
    g.op("SOFTMAX", [d], [e], options={"beta": 1.0})
    g.op(
        "RESHAPE",
        [e, g.constant("shape2", np.array([1, 16], np.int32))],
        [e2],
        options={"new_shape": [1, 16]},
    )
    if shared_twice:
        # a second consumer of b: MUL may no longer overwrite it
        z = g.tensor("z", F32, (4, 4))
        g.op("MUL", [b, c2], [z])
        g.output(z)
    g.op("ADD", [e2, x], [y])
    g.output(y)
    return mb.build()


def test_chain_lifetimes_and_in_place_sharing() -> None:
    m = _chain()
    sg = m.main
    name = {sg.tensor_names[i]: i for i in range(sg.num_tensors)}
    lt = tflite_lifetimes(sg)
    got = {
        sg.tensor_names[t]: (int(lo), int(up))
        for t, lo, up in zip(lt.tensors.tolist(), lt.lower, lt.upper, strict=True)
    }
    # x: graph input, from node 0 and never freed (6 = 5 ops + 1 "after the run"); a: produced
    # at 0 and, through b, d, e and e2 sharing its buffer, last read at node 5 (ADD) -> [0, 6);
    # y: graph output, never freed.
    assert got == {"x": (0, 7), "a": (0, 6), "y": (5, 7)}
    assert {sg.tensor_names[k]: sg.tensor_names[v] for k, v in lt.alias.items()} == {
        "b": "a",
        "d": "a",
        "e": "a",
        "e2": "a",
    }
    assert name["x"] not in lt.alias  # a graph input never lends its buffer


def test_second_consumer_blocks_overwriting_but_not_reshape() -> None:
    lt = tflite_lifetimes(_chain(shared_twice=True).main)
    sg = _chain(shared_twice=True).main
    alias = {sg.tensor_names[k]: sg.tensor_names[v] for k, v in lt.alias.items()}
    assert alias["b"] == "a"  # RESHAPE leaves data unmodified: sharing is allowed
    assert "d" not in alias  # b has two consumers, so MUL must not write into it
    assert alias["e"] == "d"


def test_inplace_disabled_and_partition_order() -> None:
    sg = _chain().main
    lt = tflite_lifetimes(sg, inplace=False)
    assert not lt.alias and len(lt.tensors) == 7
    # Plan ops 1..3 alone, as a partition fed by a and feeding e.
    idx = {sg.tensor_names[i]: i for i in range(sg.num_tensors)}
    part = tflite_lifetimes(sg, [1, 2, 3], inputs=[idx["a"]], outputs=[idx["e"]])
    got = {
        sg.tensor_names[t]: (int(lo), int(up))
        for t, lo, up in zip(part.tensors.tolist(), part.lower, part.upper, strict=True)
    }
    # a is now a graph input (never freed, never lent), so RESHAPE copies it into b; MUL then
    # writes into b (d aliases b); e is a graph output (never shared).
    assert part.horizon == 4
    assert got == {"a": (0, 4), "b": (0, 3), "e": (2, 4)}
    assert {sg.tensor_names[k]: sg.tensor_names[v] for k, v in part.alias.items()} == {"d": "b"}


def test_chain_offsets_match_litert(tmp_path: Path) -> None:
    m = _chain()
    path = tmp_path / "chain.tflite"
    path.write_bytes(write_model(m))
    mb = model_buffers(m)
    plan = plan_arena(mb.problem, strategy="tflite")
    ours = tensor_offsets(mb, plan, 0)
    rep = probe(path)
    ptr = {i: p for i, p, _ in rep["tensors"]}
    arena = [t for t in range(m.main.num_tensors) if ours[t] >= 0]
    assert rep["n_model"] == len(rep["tensors"])  # no kernel temporaries here
    base = {ptr[t] - ours[t] for t in arena}
    assert len(base) == 1, "LiteRT laid the tensors out differently"
    # In-place sharing really happened in the runtime: b, d, e, e2 all sit on a's buffer.
    name = {m.main.tensor_names[i]: i for i in range(m.main.num_tensors)}
    assert len({ptr[name[n]] for n in ("a", "b", "d", "e", "e2")}) == 1
