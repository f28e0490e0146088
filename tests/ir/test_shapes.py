"""Shape propagation (edgepart.ir.shapes) against LiteRT itself.

For every corpus and real-model corpus model with a dynamic dimension, at the stored size and at
another size, every tensor's propagated shape equals what LiteRT reports: after
``resize_tensor_input`` + ``allocate_tensors`` for the tensors LiteRT sizes there, after
``invoke`` for those it sizes only while running (the outputs of the first op whose output it
cannot size at prepare time, and everything after it, which propagation marks ``deferred``).
Which op that is must match too: LiteRT allocates every tensor produced before it and none
produced after it.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter, OpResolverType

import edgepart
from edgepart.errors import UsageError
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.shapes import (
    InputShapeNote,
    apply_input_shapes,
    has_dynamic_dims,
    parse_input_shape,
    resolve_shapes,
)
from edgepart.tflite.reader import read_model
from edgepart.tflite.writer import write_model

# Another size per dynamic model (input name -> shape), besides the stored one.
CORPUS_SIZES: dict[str, dict[str, list[int]]] = {
    "dynamic_batch": {"serving_default_images:0": [4, 16, 16, 4]},
}
REAL_SIZES: dict[str, dict[str, list[int]]] = {
    "oww_melspectrogram": {"serving_default_input:0": [2, 3200]},
    "oww_embedding": {"serving_default_input_1:0": [5, 76, 32, 1]},
    "birdnet_v24_fp32": {"INPUT": [2, 144000]},
    "birdnet_v24_mdata_fp16": {"serving_default_MNET_INPUT:0": [4, 3]},
    "star_trek_activation_phrase": {"audio_preproc_input": [2, 44032]},
    "precise_vad": {},  # its WHILE body hard-codes batch 1 (LiteRT fails at any other)
    "basic_pitch_nmp": {"serving_default_input_2:0": [2, 43844, 1]},
}
_NUMERIC = (np.float32, np.float16, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_)


def _litert(path: Path, shapes: dict[str, list[int]]) -> dict[str, Any]:
    """LiteRT's shapes after allocate and after invoke (builtin kernels: no delegate hides
    tensors), and which subgraph-0 tensors it allocated."""
    it = Interpreter(
        model_path=str(path),
        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    for d in it.get_input_details():
        if d["name"] in shapes:
            it.resize_tensor_input(d["index"], shapes[d["name"]])
    it.allocate_tensors()
    n = it.num_subgraphs()

    def shapes_now() -> dict[int, dict[int, tuple[int, ...]]]:
        return {
            k: {t["index"]: tuple(int(x) for x in t["shape"]) for t in it.get_tensor_details(k)}
            for k in range(n)
        }

    allocated = shapes_now()
    alloc0 = set()
    for t in it.get_tensor_details(0):
        if t["dtype"] in _NUMERIC:
            try:
                it.tensor(t["index"])()
                alloc0.add(t["index"])
            except ValueError:
                pass
    rng = np.random.default_rng(0)
    for d in it.get_input_details():
        dt = d["dtype"]
        x = (
            rng.standard_normal(d["shape"]).astype(dt)
            if np.issubdtype(dt, np.floating)
            else np.zeros(d["shape"], dt)
        )
        it.set_tensor(d["index"], x)
    it.invoke()
    return {"allocate": allocated, "invoke": shapes_now(), "allocated0": alloc0}


def _check_against_litert(path: Path, shapes: dict[str, list[int]]) -> int:
    res = resolve_shapes(read_model(path), shapes)
    lt = _litert(path, shapes)
    checked = 0
    for k, sg in enumerate(res.model.subgraphs):
        info = res.subgraphs[k]
        assert not info.unknown, f"subgraph {k}: unresolved tensors {info.unknown[:5]}"
        assert not info.unresolved, f"subgraph {k}: ops without a rule {info.unresolved}"
        for t in range(sg.num_tensors):
            if t not in lt["allocate"].get(k, {}):
                continue
            when = "invoke" if info.deferred[t] else "allocate"
            want = lt[when][k][t]
            ours = sg.tensor_shape.row_tuple(t)
            assert ours == want, (
                f"{path.name} subgraph {k} tensor {t} {sg.tensor_names[t]!r}: propagated {ours}, "
                f"LiteRT after {when} {want}"
            )
            checked += 1
    # where LiteRT stops preparing: everything produced before the first dynamic op is
    # allocated, nothing produced after it is
    sg = res.model.main
    info = res.subgraphs[0]
    stop = sg.num_ops if info.dynamic_op is None else info.dynamic_op
    for op in range(sg.num_ops):
        if op == stop or sg.op_name(op) in ("WHILE", "IF"):
            continue  # the dynamic op's own outputs may share its input's buffer
        for t in sg.op_outputs.row_tuple(op):
            if t < 0 or sg.tensor_nbytes[t] == 0 or sg.tensor_dtype[t] == int(DType.RESOURCE):
                continue
            assert (t in lt["allocated0"]) == (op < stop), (
                f"{path.name}: op {op} {sg.op_name(op)} output {t}: LiteRT "
                f"{'allocated' if t in lt['allocated0'] else 'did not allocate'} it, "
                f"propagation put the first dynamic op at {info.dynamic_op}"
            )
    return checked


def _dynamic(path: Path) -> bool:
    return has_dynamic_dims(read_model(path))


def test_every_dynamic_corpus_model_matches_litert(corpus: dict[str, Path]) -> None:
    tried = []
    for name, path in corpus.items():
        if not _dynamic(path):
            continue
        tried.append(name)
        assert _check_against_litert(path, {}) > 0
        if name in CORPUS_SIZES:
            assert _check_against_litert(path, CORPUS_SIZES[name]) > 0
    assert "dynamic_batch" in tried


@pytest.mark.slow
def test_every_dynamic_real_model_matches_litert(
    real_models: dict[str, Path], real_models_manifest: dict[str, Any]
) -> None:
    """Real models with a dynamic dimension, at the size the manifest runs them at and at
    another size (a batch of 2 and more audio where the model allows it)."""
    tried = []
    for name, path in real_models.items():
        entry = real_models_manifest[name]
        if not entry["runnable"] or not _dynamic(path):
            continue
        tried.append(name)
        base = dict(entry.get("input_shapes") or {})
        assert _check_against_litert(path, base) > 0, name
        if REAL_SIZES.get(name):
            assert _check_against_litert(path, REAL_SIZES[name]) > 0, name
    assert set(REAL_SIZES) <= set(tried), set(REAL_SIZES) - set(tried)


def test_computed_shapes_resolve_and_the_first_dynamic_op_is_lite_rts(
    corpus: dict[str, Path],
) -> None:
    # dynamic_batch: SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE; PACK is not evaluated at
    # prepare time by LiteRT, so the RESHAPE (op 6) is where LiteRT stops preparing
    res = resolve_shapes(
        read_model(corpus["dynamic_batch"]), {"serving_default_images:0": [3, 16, 16, 4]}
    )
    info = res.subgraphs[0]
    sg = res.model.main
    assert sg.op_name(info.dynamic_op) == "RESHAPE"
    out = sg.op_outputs.row_tuple(info.dynamic_op)[0]
    assert sg.tensor_shape.row_tuple(out)[0] == 3
    assert info.deferred[out] and not info.unknown
    assert res.input_shapes == {"images": [3, 16, 16, 4]}


def reshape_to_scalar() -> Any:
    """``tf.reshape(x * 2, []) + 1`` on a ``[1]`` input, as TensorFlow converts it: the new
    shape is an int32[0] constant whose buffer has an *empty* data vector."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1,))
    two = g.constant("two", np.array([2.0], np.float32))
    one = g.constant("one", np.array(1.0, np.float32))
    shape = g.constant("arith.constant", np.zeros(0, np.int32))
    y = g.tensor("y", DType.FLOAT32, (1,))
    z = g.tensor("z", DType.FLOAT32, ())
    w = g.tensor("w", DType.FLOAT32, ())
    g.op("MUL", [x, two], [y])
    g.op("RESHAPE", [y, shape], [z])
    g.op("ADD", [z, one], [w])
    g.output(w)
    mb.add_signature("serving_default", 0, [("x", x)], [("w", w)])
    return read_model_bytes_roundtrip(mb.build())


def test_reshape_to_an_empty_shape_constant(tmp_path: Path) -> None:
    # LiteRT makes a tensor constant when its buffer *has* a data vector, even an empty one:
    # the shape tensor is no activation without a producer, and RESHAPE sizes at prepare time
    m = reshape_to_scalar()
    sg = m.main
    shape_t = sg.op_inputs.row_tuple(1)[1]
    assert sg.tensor_numel[shape_t] == 0 and sg.tensor_is_constant[shape_t]
    path = tmp_path / "reshape_to_scalar.tflite"
    path.write_bytes(write_model(m))
    assert _check_against_litert(path, {}) > 0
    assert resolve_shapes(m).subgraphs[0].dynamic_op is None


def read_model_bytes_roundtrip(m: Any) -> Any:
    from edgepart.tflite.reader import read_model_bytes

    return read_model_bytes(write_model(m))


def _dynamic_batch_int8() -> Any:
    """A small int8 conv with a -1 batch (hand-built)."""
    from edgepart.ir.values import Quantization

    q = Quantization(scale=np.array([0.1], np.float32), zero_point=np.array([0], np.int64))
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.INT8, (1, 8, 8, 4), shape_signature=(-1, 8, 8, 4), quantization=q)
    w = g.constant("w", np.ones((4, 3, 3, 4), np.int8), quantization=q)
    b = g.constant("b", np.zeros(4, np.int32))
    y = g.tensor("y", DType.INT8, (1, 8, 8, 4), shape_signature=(-1, 8, 8, 4), quantization=q)
    g.op("CONV_2D", [x, w, b], [y], options={"padding": "SAME", "stride_w": 1, "stride_h": 1})
    g.output(y)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", y)])
    return read_model_bytes_roundtrip(mb.build())


def test_a_dynamic_batch_refusal_names_the_fix_and_input_shapes_lift_it() -> None:
    m = _dynamic_batch_int8()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c = edgepart.claims(m, "coral_devboard")
    (why,) = c.delegates["edgetpu"]["refused"]
    assert "--input-shape" in why and c.delegates["edgetpu"]["num_taken"] == 0
    notes = [w for w in caught if issubclass(w.category, InputShapeNote)]
    assert len(notes) == 1 and "x [-1,8,8,4] -> [1,8,8,4]" in str(notes[0].message)
    fixed = edgepart.claims(m, "coral_devboard", input_shapes={"x": [1, 8, 8, 4]})
    assert fixed.delegates["edgetpu"]["num_taken"] == 1
    # a batch of 2 is a fourth dimension above 1, which the Edge TPU compiler does not map
    two = edgepart.claims(m, "coral_devboard", input_shapes={"x": [2, 8, 8, 4]})
    assert two.delegates["edgetpu"]["num_taken"] == 0
    assert not any("--input-shape" in r for r in two.delegates["edgetpu"]["refused"])
    # NNAPI builds its model from the prepared dims and never reads signatures (no refusal)
    nn = edgepart.claims(m, "pixel8")
    assert not any("dynamic" in r for r in nn.delegates["nnapi"]["refused"])


def test_input_shape_errors_name_the_input_and_the_fix(corpus: dict[str, Path]) -> None:
    m = read_model(corpus["dynamic_batch"])
    with pytest.raises(UsageError, match="not an input of the model; inputs: 'images'"):
        resolve_shapes(m, {"nope": [1]})
    with pytest.raises(UsageError, match="dimension 1 of input 'images' is fixed at 16"):
        resolve_shapes(m, {"images": [2, 17, 16, 4]})
    with pytest.raises(UsageError, match="is 4-D"):
        resolve_shapes(m, {"images": [2, 16]})
    assert parse_input_shape("serving_default_input:0=1,1760") == (
        "serving_default_input:0",
        (1, 1760),
    )
    for bad in ("x", "x=1,a", "x=0,3", "=1"):
        with pytest.raises(UsageError, match="--input-shape"):
            parse_input_shape(bad)


def test_sizes_a_model_cannot_run_at_are_one_line_with_the_fix(
    real_models: dict[str, Path],
) -> None:
    # openWakeWord's melspectrogram stores its [-1, -1] input as [1, 1]; a 1-sample window
    # does not fit its 512-wide convolution, as LiteRT's XNNPACK also finds
    m = read_model(real_models["oww_melspectrogram"])
    with pytest.raises(UsageError) as err:
        apply_input_shapes(m)
    msg = str(err.value)
    assert "op 3 CONV_2D cannot run" in msg and "--input-shape input=N,N" in msg
    assert "\n" not in msg
    # a summary still works, with the problem as a note
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        info = edgepart.inspect_model(m)
    assert info.summary and any("op 3 CONV_2D" in str(w.message) for w in caught)
    ok = apply_input_shapes(m, {"input": [1, 1760]})
    assert ok.main.tensor_shape.row_tuple(int(ok.main.outputs[0])) == (1, 1, 8, 32)


def test_static_models_are_unchanged(corpus: dict[str, Path]) -> None:
    m = read_model(corpus["mobilenet_v2"])
    res = resolve_shapes(m)
    assert not res.changed and res.note() is None
    assert res.subgraphs[0].dynamic_op is None


def test_resolved_models_agree_with_their_signatures(
    real_models: dict[str, Path], real_models_manifest: dict[str, Any]
) -> None:
    """A converter can sign a size its kernels do not compute: star_trek_activation_phrase's
    RFFT2D outputs are signed [-1, -1, 2048] and LiteRT sizes them [1, 43, 1025]. A resolved
    model must pass the IR checks (tensor-parallel splits check it; before the fix every
    ``partition`` that tried a split on this model failed with "contradicts its signature")."""
    from edgepart.ir.verify import check_model

    for name, path in real_models.items():
        entry = real_models_manifest[name]
        if not entry["runnable"] or not _dynamic(path):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = apply_input_shapes(read_model(path), entry.get("input_shapes") or {})
        check_model(model)  # raises on a contradiction
    st = real_models["star_trek_activation_phrase"]
    resolved = apply_input_shapes(read_model(st), {"audio_preproc_input": [1, 44032]})
    sg = resolved.main
    t = next(i for i in range(sg.num_tensors) if sg.tensor_names[i].startswith("Abs;"))
    assert sg.tensor_shape.row_tuple(t) == (1, 43, 1025)
    assert sg.tensor_signature.row_tuple(t) == (-1, -1, -1)  # was (-1, -1, 2048)


def test_a_split_of_a_model_with_wrong_signatures_compiles_and_verifies(
    real_models: dict[str, Path], tmp_path: Path
) -> None:
    shapes = {"audio_preproc_input": [1, 44032]}
    compiled = edgepart.compile(
        real_models["star_trek_activation_phrase"], "pixel8", input_shapes=shapes
    )
    assert compiled.plan.splits, "the Pixel 8 plan splits a FULLY_CONNECTED layer"
    compiled.save(tmp_path / "b")
    result = edgepart.run_bundle(tmp_path / "b", random=True, verify=True)
    assert result.diffs and all(d.identical for d in result.diffs)
