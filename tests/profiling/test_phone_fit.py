"""Phone predictors from whole-model latencies: the constrained term fit and its round trip."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgepart.cost.hardware import ProcessorSpec
from edgepart.profiling.phone_fit import (
    TERMS,
    fit_terms,
    leave_one_out,
    predict_terms,
    term_matrix,
    to_config,
)

DATA = Path(__file__).resolve().parents[2] / "edgepart" / "data" / "latency"


def test_terms_fit_recovers_the_truth_and_predicts_left_out_models():
    rng = np.random.default_rng(0)
    truth = np.array([2.5, 4.0, 30e-6, 0.0])
    rows = np.column_stack(
        [rng.uniform(1e-3, 0.1, 8), rng.uniform(1e-4, 5e-3, 8),
         rng.integers(30, 600, 8).astype(float), np.zeros(8)]
    )  # fmt: skip
    secs = rows @ truth + 1e-4
    offs = np.zeros(8)
    coef = fit_terms(rows, secs, offs, 1e-4, accel=True, strength=1e-4)
    assert np.allclose(predict_terms(rows, coef, offs, 1e-4), secs, rtol=0.02)
    err = leave_one_out(rows, secs, offs, 1e-4, accel=True)
    assert np.median(np.abs(err)) < 0.05


def test_the_prior_decides_what_the_points_cannot():
    rows = np.array([[0.01, 0.001, 50.0, 0.0]])  # one point: three terms, one equation
    coef = fit_terms(rows, np.array([0.04]), np.zeros(1), 0.0, accel=False)
    assert (coef >= 0).all() and coef[3] == 0
    assert predict_terms(rows, coef, np.zeros(1), 0.0)[0] == pytest.approx(0.04, rel=0.1)


def test_terms_become_a_predictor_configuration():
    proc = ProcessorSpec("gpu", "gpu", {"FLOAT32": 1e12, "FLOAT16": 2e12}, 20e9, delegate="gpu")
    coef = np.array([2.0, 4.0, 20e-6, 1e-4])
    cp = to_config("gpu", "gpu", 1, proc, coef, 1e-4, prefix="gpu",
                   cv={"q10": -0.1, "q90": 0.2}, delegate="gpu")  # fmt: skip
    assert cp.node_s == {"gpu": 1e-4}
    conv = cp.kernels["gpu.conv"]
    assert conv.coef[0] == pytest.approx(20e-6)
    assert conv.coef[1] == pytest.approx(2.0 * 2e6 / 1e12)  # seconds per million MACs
    assert cp.kernels["gpu.binary"].coef[4] == pytest.approx(4.0 * 1e6 / 20e9)
    assert len(TERMS) == 4


def test_term_matrix_counts_only_the_delegates_kernels(get_corpus_model):
    from edgepart.cost.kernels import decompose
    from edgepart.tflite.reader import read_model

    m = read_model(get_corpus_model("mobilenet_v2"))
    k = decompose(m, "xnnpack")
    proc = ProcessorSpec("cpu", "cpu", {"FLOAT32": 1e11}, 10e9, delegate="xnnpack")
    t = term_matrix(k, proc, "xnn")
    assert t[0] > 0 and t[1] > 0 and t[2] == len(k)
    assert term_matrix(k, proc, "gpu").sum() == 0


def test_published_points_are_complete_and_sourced():
    doc = json.loads((DATA / "tflite_published_pixel.json").read_text())
    assert doc["source"]["url"] == "https://www.tensorflow.org/lite/performance/measurement"
    assert "6304499492d5d4bff87b399e1787df96f64308bc" in doc["source"]["document"]
    pts = doc["points"]
    assert len(pts) == 32
    for p in pts:
        assert p["model"] in doc["models"] and p["ms"] > 0
        assert p["device"] in ("pixel3", "pixel4") and p["config"] in ("cpu_4t", "gpu", "nnapi")
    # the table's anchors, as published
    got = {(p["device"], p["model"], p["config"]): p["ms"] for p in pts}
    assert got[("pixel4", "nasnet_mobile", "cpu_4t")] == 34.5
    assert got[("pixel3", "inception_v4", "gpu")] == 93


def test_efficientnet_lite_points_are_sourced_and_as_published():
    doc = json.loads((DATA / "efficientnet_lite_pixel4.json").read_text())
    assert doc["source"]["url"].endswith("models/official/efficientnet/lite/README.md")
    pts = doc["points"]
    assert len(pts) == 15 and {p["device"] for p in pts} == {"pixel4"}
    got = {(p["model"], p["config"]): p["ms"] for p in pts}
    for p in pts:
        assert p["model"] in doc["models"] and p["config"] in ("cpu_4t", "gpu")
    # the README's rows: FP32 CPU, FP16 GPU (the delegate's default precision), INT8 CPU
    assert [got[(f"efficientnet_lite{i}", "cpu_4t")] for i in range(5)] == [12, 18, 26, 41, 76]
    assert [got[(f"efficientnet_lite{i}", "gpu")] for i in range(5)] == [6.0, 8.0, 10, 14, 21]
    assert [got[(f"efficientnet_lite{i}_quant", "cpu_4t")] for i in range(5)] == [
        6.5, 9.1, 12, 18, 30]  # fmt: skip


def test_shipped_pixel_profiles_are_calibrated_and_say_so(get_corpus_model, capsys):
    from edgepart.cli import main
    from edgepart.devices.profile import load_profile

    for name in ("pixel3", "pixel4"):
        prof = load_profile(name)
        assert prof.latency_predictor.endswith(f"{name}.predictor.json")
        doc = json.loads(Path(prof.latency_predictor).read_text())
        points = {"pixel3": 16, "pixel4": 31}[name]
        assert doc["obtained"] == "calibrated" and doc["calibration"]["points"] == points
        for cfg in ("xnnpack_4t", "gpu", "nnapi"):
            c = doc["configs"][cfg]
            loo = c["extra"]["leave_one_out"]
            assert len(loo) == c["cv"]["points"] >= 4
            assert c["cv"]["median_abs"] == pytest.approx(float(np.median(np.abs(list(
                loo.values())))), abs=1e-4)  # fmt: skip
            page = c["extra"]["leave_one_out_benchmark_page"]
            assert page["points"] == {"xnnpack_4t": 6, "gpu": 4, "nnapi": 6}[cfg]
            if name == "pixel3":  # only the benchmark page's points: the same figure
                assert page["median_abs"] == pytest.approx(c["cv"]["median_abs"], abs=1e-4)
    assert main(["estimate", str(get_corpus_model("mobilenet_v2")), "--profile", "pixel4"]) == 0
    out = capsys.readouterr().out
    assert "calibrated from 31 published data points" in out
    assert "GPU" in out and "NNAPI" in out and "CPU 4 threads" in out


def _fit_tool(*args: str) -> str:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    r = subprocess.run(
        [sys.executable, str(root / "tools" / "fit_phone_profiles.py"), *args],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_the_shipped_predictors_are_the_fit_of_the_stored_terms():
    """Each published point's terms (pixel_model_terms.json) refitted give the shipped Pixel
    predictors byte for byte; no model is built."""
    out = _fit_tool("--from-terms", "--check")
    assert "unchanged device_profiles/pixel3.predictor.json" in out
    assert "unchanged device_profiles/pixel4.predictor.json" in out
    doc = json.loads((DATA / "pixel_model_terms.json").read_text())
    points = [
        (p["device"], p["config"], p["model"])
        for f in ("tflite_published_pixel.json", "efficientnet_lite_pixel4.json")
        for p in json.loads((DATA / f).read_text())["points"]
    ]
    stored = {(d, c, m) for d, by in doc["terms"].items() for c, ms in by.items() for m in ms}
    assert stored == set(points)  # one entry per published point, none more


@pytest.mark.slow
def test_rebuilt_models_have_the_stored_terms():
    """Three of the sixteen architectures rebuilt with TensorFlow (a float one written here, the
    8-bit MobileNet, an EfficientNet-Lite; about two minutes) give the terms stored for them
    on every device and configuration. ``python tools/fit_phone_profiles.py --check`` rebuilds
    all sixteen (about eight minutes on 2 cores)."""
    out = _fit_tool(
        "--models", "squeezenet,mobilenet_v1_1.0_224_quant,efficientnet_lite0", "--check"
    )
    assert (
        "rebuilt efficientnet_lite0, mobilenet_v1_1.0_224_quant, squeezenet: terms as in "
        "pixel_model_terms.json"
    ) in out
    assert "unchanged device_profiles/pixel4.predictor.json" in out


@pytest.mark.slow
def test_efficientnet_lite_rebuilds_have_the_readmes_parameter_counts():
    """The rebuilt architectures are the published ones: their trainable weights round to the
    EfficientNet-Lite README's "params" column (4.7, 5.4, 6.1, 8.2, 13.0 M)."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import build_phone_models as b; "
        "import tensorflow as tf\n"
        "for i in range(5):\n"
        "    m = b._efficientnet_lite(tf, *b._LITE[i])\n"
        "    print(sum(int(tf.size(v)) for v in m.trainable_weights))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(root / "tools")],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert r.returncode == 0, r.stderr[-2000:]
    counts = [int(line) for line in r.stdout.split()]
    assert [round(c / 1e6, 1) for c in counts] == [4.7, 5.4, 6.1, 8.2, 13.0]
