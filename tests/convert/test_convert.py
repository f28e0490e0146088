"""``edgepart convert`` end to end with TensorFlow's real converter (in child processes).

The matrix: six Keras architectures x four quantization modes, each converted, parsed, run in
LiteRT and compared with the Keras model on 16 samples; the figures (max abs / rel difference,
SNR, top-1 agreement) are printed and kept in ``$EDGEPART_ARTIFACTS/convert_figures.md``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from convert_helpers import edgepart

from edgepart.tflite.reader import read_model

ARCHS = ("cnn", "mobilenet_v2", "resnet", "mlp", "transformer", "multi_io")
MODES = ("none", "fp16", "dynamic", "int8")


def _figures(r: dict[str, Any]) -> str:
    out = []
    for c in r["checks"]:
        if r["quantize"] == "int8":
            snr = "exact" if c["snr_db"] is None else f"{c['snr_db']:.1f} dB"
            top = "-" if c["top1"] is None else f"{c['top1']:.1%}"
            out.append(f"{c['name']}: SNR {snr}, top-1 {top}")
        else:
            out.append(f"{c['name']}: max abs {c['max_abs']:.2e}, max rel {c['max_rel']:.2e}")
    return "; ".join(out)


@pytest.fixture(scope="session")
def figures_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = Path(
        os.environ.get("EDGEPART_ARTIFACTS") or tmp_path_factory.getbasetemp() / "artifacts"
    )
    root.mkdir(parents=True, exist_ok=True)
    path = root / "convert_figures.md"
    path.write_text("| architecture | mode | ops | size | figures |\n|---|---|---|---|---|\n")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("arch", ARCHS)
def test_keras_architecture_x_quantization(
    arch: str, mode: str, matrix: Callable[[str], list[dict[str, Any]]], figures_file: Path
) -> None:
    r = next(x for x in matrix(arch) if x["quantize"] == mode)
    line = f"| {arch} | {mode} | {r['num_ops']} | {r['size_bytes']} | {_figures(r)} |"
    print(line)
    with figures_file.open("a") as f:
        f.write(line + "\n")
    assert r["ran_in_litert"] and r["checks"], r
    assert r["passed"], f"{arch} {mode}: {[c['failures'] for c in r['checks']]}"
    model = read_model(r["output"])  # the file on disk parses
    names = {model.main.op_name(i) for i in range(model.main.num_ops)}
    if mode == "int8":
        assert r["calibration"] == {
            "samples": 32,
            "random": False,
            "data": r["calibration"]["data"],
        }
        assert "QUANTIZE" in names or "DEQUANTIZE" in names
        for c in r["checks"]:
            assert c["snr_db"] is None or c["snr_db"] >= 10
    if mode == "fp16":
        assert "DEQUANTIZE" in names  # float16 weights, dequantized once
    if mode == "none":
        for c in r["checks"]:
            assert c["max_rel"] < 1e-3
    ins = r["inputs"]
    assert all(i["shape"][0] == 1 for i in ins)  # the unknown batch became 1


def test_fast_end_to_end_mlp(small_zoo: Path, tmp_path: Path) -> None:
    """One conversion in the fast suite: the CLI, the check, the JSON record, the claims."""
    out, rec = tmp_path / "mlp.tflite", tmp_path / "mlp.json"
    res = edgepart(
        "convert",
        str(small_zoo / "mlp.keras"),
        "-o",
        str(out),
        "--json",
        str(rec),
        "--profile",
        "pixel8",
    )
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""  # TensorFlow's and LiteRT's console chatter stays out
    text = res.stdout
    assert "check in LiteRT against the source model on 16 samples" in text
    assert "scores: max abs diff" in text and "ok" in text
    assert "delegates of pixel8 on this model:" in text and "gpu (gpu): takes" in text
    d = json.loads(rec.read_text())
    assert d["passed"] is True and d["num_ops"] == read_model(out).main.num_ops
    assert d["checks"][0]["max_rel"] < 1e-3
    assert d["claims"]["profile"] == "pixel8"


@pytest.mark.slow
def test_h5_savedmodel_and_input_shape(zoo: Path, tmp_path: Path) -> None:
    res = edgepart(
        "convert", str(zoo / "cnn.h5"), "-o", str(tmp_path / "h5.tflite"), "--quantize", "fp16"
    )
    assert res.returncode == 0, res.stderr
    assert "(keras)" in res.stdout and "probs: max abs diff" in res.stdout
    rec = tmp_path / "sm.json"
    res = edgepart(
        "convert",
        str(zoo / "savedmodel"),
        "-o",
        str(tmp_path / "sm.tflite"),
        "--input-shape",
        "x=4,12",
        "--quantize",
        "int8",
        "--json",
        str(rec),
    )
    assert res.returncode == 0, res.stderr
    d = json.loads(rec.read_text())
    assert d["kind"] == "savedmodel" and d["inputs"] == [
        {"name": "x", "shape": [4, 12], "dtype": "float32"}
    ]
    assert d["calibration"]["random"] is True
    assert "calibrated on 64 random inputs" in res.stderr and "costs accuracy" in res.stderr
    assert d["passed"] is True and d["checks"][0]["snr_db"] >= 10
    sg = read_model(tmp_path / "sm.tflite").main
    assert list(sg.tensor(int(sg.inputs[0])).shape) == [4, 12]


@pytest.mark.slow
def test_select_tf_ops_warning(zoo: Path, tmp_path: Path) -> None:
    out = tmp_path / "flex.tflite"
    res = edgepart("convert", str(zoo / "flex_savedmodel"), "-o", str(out), "--profile", "pixel8")
    assert res.returncode == 0, res.stderr
    warn = [ln for ln in res.stderr.splitlines() if "SELECT_TF_OPS" in ln]
    assert warn and "FlexMatrixInverse" in warn[0] and "no delegate" in warn[0]
    assert "SELECT_TF_OPS: FlexMatrixInverse" in res.stdout
    assert "check: not run" in res.stdout and "Flex delegate" in res.stdout
    assert "FlexMatrixInverse: " in res.stdout  # every delegate refuses it, with its reason
    names = [c.custom_code for c in read_model(out).opcodes if c.is_custom]
    assert names == ["FlexMatrixInverse"]
    # refused outright, nothing written
    out2 = tmp_path / "refused.tflite"
    res = edgepart("convert", str(zoo / "flex_savedmodel"), "-o", str(out2), "--no-select-tf-ops")
    assert res.returncode == 2 and not out2.exists()
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "FlexMatrixInverse" in lines[0] and "SELECT_TF_OPS" in lines[0]


@pytest.mark.slow
def test_int8_io_and_calibration_samples(zoo: Path, tmp_path: Path) -> None:
    rec = tmp_path / "r.json"
    res = edgepart(
        "convert",
        str(zoo / "resnet.keras"),
        "-o",
        str(tmp_path / "r.tflite"),
        "--quantize",
        "int8",
        "--int8-io",
        "--calibration-data",
        str(zoo / "calib" / "resnet"),
        "--calibration-samples",
        "8",
        "--json",
        str(rec),
    )
    assert res.returncode == 0, res.stderr
    d = json.loads(rec.read_text())
    assert d["calibration"]["samples"] == 8 and d["calibration"]["random"] is False
    assert d["passed"] is True
    sg = read_model(tmp_path / "r.tflite").main
    assert sg.tensor(int(sg.inputs[0])).dtype.name == "INT8"
    assert sg.tensor(int(sg.outputs[0])).dtype.name == "INT8"
