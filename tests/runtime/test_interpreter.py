"""PartitionedInterpreter against LiteRT's Interpreter: same API, same answers."""

from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from rt_cuts import contiguous
from rt_models import branchy_mlp

from edgepart.bundle import PartitionSpec, write_bundle
from edgepart.errors import BundleError, UsageError
from edgepart.runtime import PartitionedInterpreter, TensorValueError
from edgepart.tflite.reader import read_model
from edgepart.tflite.writer import save_model


def classify(interpreter_class, path, images):
    """Typical LiteRT user code, written once against ``tf.lite.Interpreter``'s API."""
    interpreter = interpreter_class(model_path=str(path), num_threads=1)
    interpreter.allocate_tensors()
    input_details = interpreter.get_input_details()
    output_details = interpreter.get_output_details()
    shape = input_details[0]["shape"]
    results = []
    for image in images:
        x = np.asarray(image, dtype=input_details[0]["dtype"]).reshape(shape)
        if input_details[0]["dtype"] == np.int8:
            scale, zero_point = input_details[0]["quantization"]
            x = np.clip(np.round(image / scale + zero_point), -128, 127).astype(np.int8)
            x = x.reshape(shape)
        interpreter.set_tensor(input_details[0]["index"], x)
        interpreter.invoke()
        scores = interpreter.get_tensor(output_details[0]["index"])
        results.append((int(np.argmax(scores)), scores.copy()))
    runner = interpreter.get_signature_runner()
    signature = interpreter.get_signature_list()
    name = signature["serving_default"]["inputs"][0]
    out = runner(**{name: x})
    return results, sorted(out), signature


@pytest.fixture(scope="module", params=["mobilenet_v2", "mobilenet_v2_int8"])
def model_and_bundle(request, corpus, tmp_path_factory):
    path = corpus[request.param]
    model = read_model(path)
    parts = contiguous(model, 4, seed=7)
    out = tmp_path_factory.mktemp("b") / request.param
    write_bundle(out, path, [PartitionSpec(p, unit=i % 2) for i, p in enumerate(parts)])
    return path, out


def test_user_code_runs_unchanged_on_a_bundle(model_and_bundle):
    path, bundle = model_and_bundle
    images = np.random.default_rng(0).uniform(-1, 1, (5, 96, 96, 3)).astype(np.float32)
    want = classify(Interpreter, path, images)
    got = classify(PartitionedInterpreter, bundle, images)
    assert got[1] == want[1] and got[2] == want[2]
    for (cls_a, s_a), (cls_b, s_b) in zip(got[0], want[0], strict=True):
        assert cls_a == cls_b
        assert np.array_equal(s_a, s_b)


def test_details_match_litert_key_for_key(model_and_bundle):
    path, bundle = model_and_bundle
    ref = Interpreter(model_path=str(path))
    ref.allocate_tensors()
    pi = PartitionedInterpreter(bundle)
    pi.allocate_tensors()
    for mine, theirs in (
        (pi.get_input_details(), ref.get_input_details()),
        (pi.get_output_details(), ref.get_output_details()),
    ):
        assert len(mine) == len(theirs)
        for a, b in zip(mine, theirs, strict=True):
            assert sorted(a) == sorted(b)
            for key in ("name", "index", "dtype", "quantization", "sparsity_parameters"):
                assert a[key] == b[key], key
            for key in ("shape", "shape_signature"):
                assert np.array_equal(a[key], b[key]) and a[key].dtype == b[key].dtype
            for key, v in b["quantization_parameters"].items():
                assert np.array_equal(a["quantization_parameters"][key], v), key
    assert pi.get_signature_list() == ref.get_signature_list()
    assert pi.num_threads == 1


def test_signature_runner_matches_litert(model_and_bundle):
    path, bundle = model_and_bundle
    ref = Interpreter(model_path=str(path))
    pi = PartitionedInterpreter(bundle)
    d = ref.get_input_details()[0]
    x = np.random.default_rng(1).integers(-20, 20, d["shape"]).astype(d["dtype"])
    want = ref.get_signature_runner()(input=x)
    got = pi.get_signature_runner("serving_default")(input=x)
    assert list(got) == list(want)
    for k in want:
        assert np.array_equal(got[k], want[k])
    runner = pi.get_signature_runner()
    assert sorted(runner.get_input_details()) == ["input"]
    with pytest.raises(ValueError, match="Invalid number of inputs"):
        runner()
    with pytest.raises(ValueError, match=r"Invalid Input name \(image\)"):
        runner(image=x)
    with pytest.raises(ValueError, match='Invalid signature_key provided: "nope"'):
        pi.get_signature_runner("nope")


def test_wrong_dtype_and_shape_give_one_clear_error(model_and_bundle):
    _, bundle = model_and_bundle
    pi = PartitionedInterpreter(bundle)
    pi.allocate_tensors()
    d = pi.get_input_details()[0]
    good = np.zeros(d["shape"], d["dtype"])
    with pytest.raises(
        TensorValueError,
        match=r"cannot set tensor 0 'serving_default_input:0': "
        r"got float64 but it is \w+; convert with",
    ):
        pi.set_tensor(d["index"], good.astype(np.float64))
    with pytest.raises(ValueError, match=r"got shape \[1, 95, 96, 3\] but it is \[1, 96, 96, 3\]"):
        pi.set_tensor(d["index"], good[:, 1:])
    with pytest.raises(UsageError, match="tensor 5 is not a model input"):
        pi.set_tensor(5, good)
    with pytest.raises(UsageError, match="is internal to a partition"):
        pi.get_tensor(5)
    with pytest.raises(UsageError, match="partition shapes are fixed"):
        pi.resize_tensor_input(d["index"], [2, 96, 96, 3])
    pi.resize_tensor_input(d["index"], [1, 96, 96, 3])  # same shape: accepted, like LiteRT


def test_invoke_before_allocate_and_unsupported_constructor_arguments(model_and_bundle):
    _, bundle = model_and_bundle
    pi = PartitionedInterpreter(bundle)
    with pytest.raises(UsageError, match=r"call allocate_tensors\(\) before invoke\(\)"):
        pi.invoke()
    with pytest.raises(UsageError, match="not model bytes"):
        PartitionedInterpreter(model_content=b"TFL3")
    with pytest.raises(UsageError, match="experimental_delegates apply to one model"):
        PartitionedInterpreter(bundle, experimental_delegates=[object()])


def test_op_resolver_type_selects_the_kernels_of_every_partition(corpus, tmp_path):
    path = corpus["mobilenet_v2"]
    model = read_model(path)
    write_bundle(tmp_path / "b", path, [PartitionSpec(p) for p in contiguous(model, 3, 1)])
    x = np.random.default_rng(2).standard_normal((1, 96, 96, 3)).astype(np.float32)
    for resolver in (OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES, OpResolverType.BUILTIN_REF):
        ref = Interpreter(model_path=str(path), experimental_op_resolver_type=resolver)
        pi = PartitionedInterpreter(tmp_path / "b", experimental_op_resolver_type=resolver)
        assert {c.kind for c in pi.executors} == {
            "builtin" if "WITHOUT" in resolver.name else "reference"
        }
        for it in (ref, pi):
            it.allocate_tensors()
            it.set_tensor(0, x)
            it.invoke()
        assert np.array_equal(pi.get_tensor(171), ref.get_tensor(171))


def test_tensor_views_and_boundary_tensors_are_readable(corpus, tmp_path):
    path = corpus["mobilenet_v2"]
    model = read_model(path)
    b = write_bundle(tmp_path / "b", path, [PartitionSpec(p) for p in contiguous(model, 2, 3)])
    pi = PartitionedInterpreter(tmp_path / "b")
    pi.allocate_tensors()
    x = np.ones((1, 96, 96, 3), np.float32)
    pi.tensor(0)()[...] = x  # LiteRT-style zero-copy write into the input buffer
    pi.invoke()
    assert np.array_equal(pi.get_tensor(0), x)
    boundary = b.plan.partitions[1].inputs[0].tensor
    assert pi.get_tensor(boundary).shape == b.plan.partitions[1].inputs[0].shape


def test_model_without_signature_behaves_like_litert(tmp_path):
    model = branchy_mlp(width=8, depth=2, branches=1, signature=False)
    save_model(model, tmp_path / "m.tflite")
    write_bundle(tmp_path / "b", tmp_path / "m.tflite", [[0], [1]])
    ref = Interpreter(model_path=str(tmp_path / "m.tflite"))
    pi = PartitionedInterpreter(tmp_path / "b")
    assert pi.get_signature_list() == ref.get_signature_list() == {}
    with pytest.raises(ValueError, match="model has 0 Signatures"):
        pi.get_signature_runner()


def test_model_plus_plan_without_files(corpus):
    path = corpus["mobilenet_v2"]
    model = read_model(path)
    pi = PartitionedInterpreter(
        model=model, plan=[PartitionSpec(p) for p in contiguous(model, 3, 5)]
    )
    pi.allocate_tensors()
    assert pi.bundle.path is None and len(pi.plan.partitions) == 3
    again = PartitionedInterpreter(model=path, plan=pi.plan)
    assert [p.ops for p in again.plan.partitions] == [p.ops for p in pi.plan.partitions]
    with pytest.raises(UsageError, match="exactly one of"):
        PartitionedInterpreter(model=model)


def test_partition_file_that_does_not_match_the_plan(corpus, tmp_path):
    path = corpus["mobilenet_v2"]
    model = read_model(path)
    a = write_bundle(tmp_path / "a", path, [PartitionSpec(p) for p in contiguous(model, 2, 1)])
    b = write_bundle(tmp_path / "b", path, [PartitionSpec(p) for p in contiguous(model, 2, 9)])
    assert a.plan.partitions[0].ops != b.plan.partitions[0].ops
    swapped = dict(a.partition_bytes)
    swapped["p0"] = b.partition_bytes["p0"]
    from edgepart.bundle import Bundle

    mixed = Bundle(None, a.manifest, a.plan, swapped)
    with pytest.raises(
        BundleError, match=r"partitions/p0.tflite: its outputs .* do not match plan.json"
    ):
        PartitionedInterpreter(bundle=mixed)
