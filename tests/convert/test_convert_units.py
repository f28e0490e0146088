"""``edgepart convert`` without TensorFlow: bad sources and options fail in one line (exit 2)
before anything is loaded, and the pieces (input shapes, sample files, comparison figures,
limits, Flex detection) do what they say."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgepart.cli import main
from edgepart.convert.checks import LIMITS, compare_outputs, flex_ops, judge
from edgepart.convert.inputs import (
    InputSpec,
    load_samples,
    parse_input_shapes,
    random_samples,
    resolve_inputs,
)
from edgepart.convert.tf_backend import _flex_ops
from edgepart.errors import UsageError
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType


def _one_error(capsys: Any) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("edgepart: error: "), err
    return err[0]


@pytest.mark.parametrize(
    ("make", "extra", "message"),
    [
        (lambda d: d / "missing.keras", [], "no such file or directory"),
        (lambda d: d, [], "a directory without saved_model.pb"),
        (lambda d: _touch(d / "w.pt"), [], "torch.export.save"),
        (lambda d: _touch(d / "m.onnx"), [], "unknown source format .onnx"),
        (lambda d: _touch(d / "m.tflite"), [], "already a .tflite model"),
        (
            lambda d: _touch(d / "m.keras"),
            ["--quantize", "fp16", "--int8-io"],
            "--int8-io goes with",
        ),
        (lambda d: _touch(d / "m.keras"), ["--input-shape", "1,a,3"], "expected DIMS or NAME=DIMS"),
        (lambda d: _touch(d / "m.keras"), ["--check-samples", "0"], "need at least 1"),
        (lambda d: _touch(d / "m.keras"), ["--signature", "s"], "applies to SavedModel sources"),
        (lambda d: _touch(d / "m.keras"), ["--profile", "no_such_phone"], "no_such_phone"),
    ],
)
def test_bad_requests_fail_in_one_line(
    make: Any, extra: list[str], message: str, tmp_path: Path, capsys: Any
) -> None:
    src = make(tmp_path)
    out = tmp_path / "out.tflite"
    assert main(["convert", str(src), "-o", str(out), *extra]) == 2
    assert message in _one_error(capsys)
    assert not out.exists()


def _touch(p: Path) -> Path:
    p.write_bytes(b"\0" * 16)
    return p


def test_input_shapes_are_fixed_or_refused() -> None:
    given = parse_input_shapes(["1,224,224,3"])
    assert given == {None: (1, 224, 224, 3)}
    assert parse_input_shapes(["ids=1x128", "mask=1,128"]) == {"ids": (1, 128), "mask": (1, 128)}
    decl = [("image", (None, 32, 32, 3), "float32")]
    assert resolve_inputs(decl, {}, "m") == [InputSpec("image", (1, 32, 32, 3), "float32")]
    assert resolve_inputs(decl, {None: (8, 32, 32, 3)}, "m")[0].shape == (8, 32, 32, 3)
    with pytest.raises(UsageError, match="dimension 1 is 64, but m fixes it at 32"):
        resolve_inputs(decl, {"image": (1, 64, 32, 3)}, "m")
    with pytest.raises(UsageError, match="unknown dimensions"):
        resolve_inputs([("tokens", (None, None), "int32")], {}, "m")
    with pytest.raises(UsageError, match="has no input 'nope'"):
        resolve_inputs(decl, {"nope": (1,)}, "m")
    with pytest.raises(UsageError, match="given twice"):
        parse_input_shapes(["1,2", "3,4"])


def test_sample_files(tmp_path: Path) -> None:
    spec = [InputSpec("x", (1, 4), "float32")]
    d = tmp_path / "s"
    d.mkdir()
    np.save(d / "a.npy", np.ones((1, 4), np.float32))  # one sample
    np.save(d / "b.npy", np.ones((4,), np.float64))  # one sample without the batch, float64
    np.save(d / "c.npy", np.zeros((3, 1, 4), np.float32))  # a stack of three
    np.save(d / "d.npy", np.zeros((2, 4), np.float32))  # a batch of two where the model's is 1
    samples = load_samples(d, spec)
    assert len(samples) == 7 and all(
        s["x"].shape == (1, 4) and s["x"].dtype == np.float32 for s in samples
    )
    np.save(d / "e.npy", np.zeros((5,), np.float32))
    with pytest.raises(UsageError, match="fits neither one sample"):
        load_samples(d, spec)
    two = [InputSpec("image", (1, 2), "float32"), InputSpec("meta", (1, 3), "float32")]
    m = tmp_path / "m"
    m.mkdir()
    np.save(m / "image.0.npy", np.zeros((1, 2), np.float32))
    np.save(m / "meta.0.npy", np.zeros((1, 3), np.float32))
    np.save(m / "meta.1.npy", np.zeros((1, 3), np.float32))
    with pytest.raises(UsageError, match="different sample counts"):
        load_samples(m, two)
    np.save(m / "image.1.npy", np.zeros((1, 2), np.float32))
    assert [sorted(s) for s in load_samples(m, two)] == [["image", "meta"]] * 2
    (tmp_path / "p").mkdir()
    np.save(tmp_path / "p" / "o.npy", np.array([{"x": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(UsageError, match=r"holds Python objects"):
        load_samples(tmp_path / "p", spec)  # pickles are refused
    r = random_samples(two, 3, seed=1)
    assert len(r) == 3 and np.array_equal(r[0]["image"], random_samples(two, 3, seed=1)[0]["image"])


def test_comparison_figures_and_limits() -> None:
    rng = np.random.default_rng(0)
    ref = [{"p": rng.standard_normal((1, 10))} for _ in range(8)]
    same = compare_outputs(ref, ref)[0]
    assert same.max_abs == 0 and same.snr_db is None and same.top1 == 1.0
    noisy = [{"p": r["p"] + 0.01 * rng.standard_normal((1, 10))} for r in ref]
    c = compare_outputs(ref, noisy)[0]
    signal = sum(float((r["p"] ** 2).sum()) for r in ref)
    noise = sum(float(((r["p"] - n["p"]) ** 2).sum()) for r, n in zip(ref, noisy, strict=True))
    assert c.snr_db == pytest.approx(10 * math.log10(signal / noise))
    assert c.max_rel == pytest.approx(c.max_abs / max(float(np.abs(r["p"]).max()) for r in ref))
    assert judge([c], "int8")[0].failures == ()  # ~40 dB
    broken = [{"p": -r["p"]} for r in ref]
    j = judge(compare_outputs(ref, broken), "int8")[0]
    assert j.failures and "SNR" in j.failures[0] and j.top1 is not None and j.top1 < 0.5
    assert judge(compare_outputs(ref, noisy), "none")[0].failures  # 1e-2 is not float32 exact
    assert set(LIMITS) == {"none", "fp16", "dynamic", "int8"}


def test_flex_ops_are_found() -> None:
    text = (
        "error: 'tf.MatrixInverse' op is neither a custom op nor a flex op\n"
        "TF Select ops: MatrixInverse, Qr\n"
    )
    assert _flex_ops(text) == ["FlexMatrixInverse", "FlexQr"]
    assert _flex_ops("Flex ops: FlexMatrixInverse\n") == ["FlexMatrixInverse"]
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 4))
    y = g.tensor("y", DType.FLOAT32, (1, 4))
    g.op("FlexMatrixInverse", [x], [y])
    g.output(y)
    assert flex_ops(mb.build()) == ["FlexMatrixInverse"]
