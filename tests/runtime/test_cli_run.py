"""``edgepart run``: outputs, verification, benchmark, errors (exit 2, nothing written)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter
from rt_cuts import contiguous

from edgepart.bundle import PartitionSpec, write_bundle
from edgepart.cli import main
from edgepart.tflite.reader import read_model


@pytest.fixture(scope="module")
def bundle(corpus, tmp_path_factory):
    path = corpus["mobilenet_v2"]
    model = read_model(path)
    specs = [PartitionSpec(p, unit=i % 2) for i, p in enumerate(contiguous(model, 3, 2))]
    specs[1] = PartitionSpec(specs[1].ops, processor="gpu", unit=0)
    out = tmp_path_factory.mktemp("b") / "mnv2"
    write_bundle(
        out,
        path,
        specs,
        profile="pixel8",
        plan_extra={"predicted": {"latency_s": 0.0021, "period_s": 0.0012}},
    )
    return out


def _reference(path, x):
    ref = Interpreter(model_path=str(path))
    ref.allocate_tensors()
    ref.set_tensor(0, x)
    ref.invoke()
    return ref.get_tensor(171)


def test_run_with_inputs_writes_outputs_and_verifies(bundle, corpus, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("EDGEPART_DELEGATE_GPU", raising=False)
    x = np.random.default_rng(0).standard_normal((1, 96, 96, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    status = main(
        [
            "run",
            str(bundle),
            "--input",
            f"input={tmp_path / 'x.npy'}",
            "--verify",
            "-o",
            str(tmp_path / "out"),
            "--json",
            str(tmp_path / "r.json"),
        ]
    )
    out, err = capsys.readouterr()
    assert status == 0
    assert (
        "p1       gpu:0      gpu          executed on host CPU, XNNPACK (host fallback for "
        "gpu: no gpu delegate library on this machine)  [FALLBACK]" in out
    )
    assert "edgepart: warning: 1 partition(s) run on the host" in err
    assert "verify probs: max abs diff 0, max rel diff 0 (bit-identical)" in out
    got = np.load(tmp_path / "out" / "probs.npy")
    assert np.array_equal(got, _reference(corpus["mobilenet_v2"], x))
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["probs.npy"]
    report = json.loads((tmp_path / "r.json").read_text())
    assert [p["fallback"] for p in report["partitions"]] == [False, True, False]
    assert report["verify"][0]["identical"] is True


def test_random_inputs_are_seeded_and_saved(bundle, tmp_path, capsys):
    for d in ("a", "b"):
        assert main(["run", str(bundle), "--random", "--seed", "5", "-o", str(tmp_path / d)]) == 0
    for f in ("probs.npy", "input.input.npy"):
        assert np.array_equal(np.load(tmp_path / "a" / f), np.load(tmp_path / "b" / f))


def test_benchmark_reports_measured_and_predicted_apart(bundle, capsys):
    status = main(
        [
            "run",
            str(bundle),
            "--random",
            "--benchmark",
            "--repeat",
            "20",
            "--warmup",
            "2",
            "--stream",
            "10",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    # what was measured here first, then the device prediction on a line of its own that
    # says it does not compare (issue 19, problem 10)
    lines = out.splitlines()
    measured = next(i for i, ln in enumerate(lines) if ln.startswith("measured on this machine"))
    assert "latency median " in lines[measured]
    predicted = next(i for i, ln in enumerate(lines) if ln.startswith("predicted by the cost"))
    assert predicted > measured and "not comparable" in lines[predicted]
    assert lines[predicted].endswith("latency 2.10 ms, period 1.20 ms")
    assert out.count(" alone: median ") == 3
    assert "stream: 10 inputs in " in out


def test_verify_refuses_a_different_model(bundle, corpus, capsys):
    status = main(
        ["run", str(bundle), "--random", "--verify", "--model", str(corpus["mobilenet_v2_int8"])]
    )
    err = capsys.readouterr().err
    assert status == 2
    assert "is not the model this bundle was made from" in err


def test_atol_fails_the_run_when_kernels_differ(corpus, tmp_path, capsys):
    path = corpus["mobilenet_v2"]
    a, b = contiguous(read_model(path), 2, 6)
    write_bundle(tmp_path / "mixed", path, [PartitionSpec(a), PartitionSpec(b, executor="builtin")])
    status = main(["run", str(tmp_path / "mixed"), "--random", "--verify", "--atol", "0"])
    out, err = capsys.readouterr()
    assert status == 1
    assert "(differs)" in out
    assert "verify failed: probs differ(s) from the source model beyond --atol 0" in err
    # the same bundle with builtin kernels everywhere matches the builtin monolithic model
    status = main(
        [
            "run",
            str(tmp_path / "mixed"),
            "--random",
            "--verify",
            "--atol",
            "0",
            "--executor",
            "builtin",
        ]
    )
    assert status == 0 and "(bit-identical)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--input", "nope=x.npy"],
            "--input 'nope=x.npy': expected NAME=FILE.npy with NAME one of ['input']",
        ),
        ([], "no value for input(s) ['input']; give --input NAME=FILE.npy or --random"),
        (
            ["--random", "--delegate-library", "gpu=/no/such/lib.so"],
            "cannot load the gpu delegate library '/no/such/lib.so'",
        ),
        (["--random", "--no-fallback"], "partition p1 needs the gpu delegate"),
        (["--stream", "3"], "--stream needs --benchmark"),
    ],
)
def test_errors_are_one_line_and_write_nothing(
    bundle, tmp_path, capsys, monkeypatch, args, message
):
    monkeypatch.delenv("EDGEPART_DELEGATE_GPU", raising=False)
    status = main(["run", str(bundle), "-o", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err
    assert status == 2
    lines = [line for line in err.splitlines() if line.startswith("edgepart: error:")]
    assert len(lines) == 1 and message in lines[0]
    assert not (tmp_path / "out").exists()


def test_corrupted_bundle_is_refused(bundle, tmp_path, capsys):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(bundle, bad)
    f = bad / "partitions" / "p2.tflite"
    f.write_bytes(f.read_bytes()[:-10])
    status = main(["run", str(bad), "--random", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2
    assert "p2.tflite: truncated" in err
    assert not (tmp_path / "out").exists()


def test_bundle_of_another_subgraph_verifies_through_its_signature(corpus, tmp_path, capsys):
    path = corpus["multi_signature"]
    n = read_model(path).subgraphs[2].num_ops
    write_bundle(tmp_path / "enc", path, [[i] for i in range(n)], subgraph=2)
    assert main(["run", str(tmp_path / "enc"), "--random", "--verify", "--atol", "0"]) == 0
    out = capsys.readouterr().out
    assert "verify code: max abs diff 0" in out and "(bit-identical)" in out


def test_wrong_input_dtype_or_shape_file(bundle, tmp_path, capsys):
    np.save(tmp_path / "x64.npy", np.zeros((1, 96, 96, 3)))
    np.save(tmp_path / "small.npy", np.zeros((1, 32, 32, 3), np.float32))
    for f, message in (
        ("x64.npy", "got float64 but it is float32; convert with .astype"),
        ("small.npy", "got shape [1, 32, 32, 3] but it is [1, 96, 96, 3]"),
    ):
        status = main(
            ["run", str(bundle), "--input", f"input={tmp_path / f}", "-o", str(tmp_path / "out")]
        )
        err = capsys.readouterr().err
        assert status == 2
        assert f"edgepart: error: cannot set tensor 0 'serving_default_input:0': {message}" in err
        assert not (tmp_path / "out").exists()
