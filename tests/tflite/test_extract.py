"""Splitting a model into convex pieces and chaining them reproduces it bit for bit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _litert import interpreter, random_inputs, run, run_signature

from edgepart.errors import PlanError
from edgepart.ir import analysis
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.extract import extract
from edgepart.ir.state import state_groups
from edgepart.tflite.reader import read_model, read_model_bytes
from edgepart.tflite.writer import write_model


def execution_order(sg) -> list[int]:
    """A topological order that runs each constant producer (fp16 DEQUANTIZE, DENSIFY) right
    before its first consumer, as a compiler schedules weight decompression."""
    folded = analysis.constant_producers(sg)
    prod = analysis.producers(sg)
    done: set[int] = set()
    order: list[int] = []

    def emit(i: int) -> None:
        for t in sg.op_inputs.row(i).tolist():
            p = int(prod[t]) if t >= 0 else -1
            if p >= 0 and folded[p] and p not in done:
                emit(p)
        done.add(i)
        order.append(i)

    for i in analysis.topological_order(sg).tolist():
        if not folded[i] and i not in done:
            emit(i)
    order += [i for i in range(sg.num_ops) if i not in done]
    return order


def valid_cuts(model, order: list[int]) -> list[int]:
    """Positions in ``order`` where the main subgraph can be cut into extractable pieces.

    Contiguous ranges of a topological order are always convex, so the only cuts ``extract``
    refuses are those that split shared state (resource variables, CALL_ONCE, variable
    tensors) or leave a piece that only decompresses weights. Cuts valid on their own stay
    valid together.
    """
    position = {op: k for k, op in enumerate(order)}
    groups = state_groups(model)
    spans = {}
    for op, g in enumerate(groups.tolist()):
        if g >= 0:
            lo, hi = spans.get(g, (len(order), -1))
            spans[g] = (min(lo, position[op]), max(hi, position[op]))
    folded = analysis.constant_producers(model.main)
    compute = [k for k, op in enumerate(order) if not folded[op]]
    valid = []
    for c in range(1, len(order)):
        if any(lo < c <= hi for lo, hi in spans.values()):
            continue
        if not any(k < c for k in compute) or not any(k >= c for k in compute):
            continue
        valid.append(c)
    return valid


def cut_points(model, wanted: int = 3) -> list[int]:
    """``wanted`` valid cut points spread over the main subgraph (fewer if it has fewer)."""
    valid = valid_cuts(model, execution_order(model.main))
    if len(valid) <= wanted:
        return valid
    picks = {valid[round(k * (len(valid) - 1) / (wanted - 1))] for k in range(wanted)}
    rest = iter(v for v in valid if v not in picks)
    while len(picks) < wanted:
        picks.add(next(rest))
    return sorted(picks)


def chain(model, pieces, inputs, xnnpack):
    """Run extracted pieces one after another, routing tensors by original index."""
    sg = model.main
    env = {int(t): x for t, x in zip(sg.inputs.tolist(), inputs, strict=True)}
    for piece in pieces:
        blob = write_model(piece)
        source = piece.extra["source_tensors"]
        ins = [source[t] for t in piece.main.inputs.tolist()]
        outs = [source[t] for t in piece.main.outputs.tolist()]
        sig = read_model_bytes(blob).signature_defs[0]
        feed = {name: env[ins[k]] for k, (name, _) in enumerate(sig.inputs)}
        res = run_signature(interpreter(blob, xnnpack=xnnpack), feed)
        for k, (name, _) in enumerate(sig.outputs):
            env[outs[k]] = res[name]
    return [env[int(t)] for t in sg.outputs.tolist()]


@pytest.mark.parametrize("xnnpack", [True, False], ids=["xnnpack", "builtin"])
def test_split_at_three_cuts_chains_bit_identically(corpus, corpus_manifest, xnnpack):
    split = 0
    limited: dict[str, tuple[int, int]] = {}
    for name, path in corpus.items():
        if not corpus_manifest[name]["runnable"]:
            continue
        model = read_model(path)
        cuts = cut_points(model)
        compute_ops = int((~analysis.constant_producers(model.main)).sum())
        # Every corpus main subgraph has at least four ops that do work, so three cuts exist
        # (shared state is kept whole: resource_vars cuts only its stateless tail).
        assert compute_ops >= 4 and len(cuts) >= 3, f"{name}: only {cuts} are valid cut points"
        limited[name] = (compute_ops, len(cuts))
        order = execution_order(model.main)
        bounds = [0, *cuts, model.main.num_ops]
        pieces = [extract(model, order[a:b]) for a, b in itertools.pairwise(bounds)]
        full = interpreter(path.read_bytes(), xnnpack=xnnpack)
        # feed the main subgraph's inputs in subgraph order
        details = {d["index"]: d for d in full.get_input_details()}
        inputs = random_inputs(full, seed=3)
        by_index = dict(zip(details, inputs, strict=True))
        ordered = [by_index[int(t)] for t in model.main.inputs.tolist()]
        want = run(full, inputs)
        out_index = [d["index"] for d in full.get_output_details()]
        got = dict(
            zip(model.main.outputs.tolist(), chain(model, pieces, ordered, xnnpack), strict=True)
        )
        for idx, w in zip(out_index, want, strict=True):
            assert np.array_equal(got[idx], w), name
        split += 1
    assert split == len(limited) >= 14


def test_pieces_carry_only_what_they_use(corpus):
    model = read_model(corpus["mobilenet_v2"])
    n = model.main.num_ops
    piece = extract(model, range(n // 2, n))
    assert piece.main.num_ops == n - n // 2
    assert len(piece.buffers) < len(model.buffers)
    assert piece.buffers.length[0] == 0
    kept = {m.name for m in piece.metadata}
    assert "min_runtime_version" in kept
    assert len(piece.signature_defs) == 1
    # constants keep their bytes exactly
    for t in range(piece.main.num_tensors):
        if piece.main.tensor_is_constant[t]:
            data = piece.main.tensor(t).data
            assert data is not None and len(data) == piece.main.tensor_nbytes[t]


def test_control_flow_pieces_carry_their_subgraphs(corpus):
    for name in ("cond", "while_loop"):
        model = read_model(corpus[name])
        sg = model.main
        callers = [i for i in range(sg.num_ops) if sg.op(i).subgraph_refs]
        assert callers, name
        i = callers[0]
        piece = extract(model, [i])
        assert len(piece.subgraphs) == 1 + len(set(sg.op(i).subgraph_refs)), name
        assert all(0 < r < len(piece.subgraphs) for r in piece.main.op(0).subgraph_refs)
        interpreter(write_model(piece))  # loads and allocates in LiteRT


def test_non_convex_set_is_refused_with_a_witness(corpus):
    model = read_model(corpus["mobilenet_v2"])
    with pytest.raises(PlanError, match="not convex: a path leaves the set at op 0"):
        extract(model, [0, 2])


def test_splitting_resource_state_is_refused():
    mb = ModelBuilder()
    g = mb.subgraph("main")
    handle = g.tensor("handle", DType.RESOURCE, ())
    value = g.tensor("value", DType.FLOAT32, (2,))
    g.op("VAR_HANDLE", [], [handle], options={"container": "", "shared_name": "v"})
    g.op("READ_VARIABLE", [handle], [value])
    g.output(value)
    model = mb.build()
    with pytest.raises(PlanError, match="the cut splits state: op 0 VAR_HANDLE and op 1"):
        extract(model, [0])
    assert extract(model, [0, 1]).main.num_ops == 2
