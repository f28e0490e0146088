"""``edgepart bench MODEL --adb`` end to end: the real adb client and server, an emulated device,
the stand-in benchmark_model running the real LiteRT. Timings are measured, never asserted."""

from __future__ import annotations

from pathlib import Path

import pytest
from adb_fixtures import EmulatedDevice, emulated_device
from bench_helpers import (
    FAKE,
    RUNS,
    adb_args,
    alien_binary,
    cli,
    cli_json,
    old_binary,
    one_error_line,
    workdirs,
)

from edgepart.android.bm_flags import parse_delegate
from edgepart.android.jobs import BinarySpec, RunSettings
from edgepart.android.model_bench import bench_model


def test_delegates_side_by_side(
    env: EmulatedDevice, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    res = tmp_path / "res"
    args = adb_args("bench", model, *RUNS)
    for d in ("cpu", "xnnpack", "gpu", "nnapi", "hexagon"):
        args += ["--delegate", d]
    status, report, err = cli_json(capsys, *args, "--resume", str(res))
    assert status == 0, err
    (dev,) = report["devices"]
    assert dev["serial"] == env.serial and dev["error"] is None
    assert dev["device"]["model"] == "Edgepart Emulated Phone" and dev["device"]["soc"] == "EMU8000"
    runs = {r["label"]: r for r in dev["runs"]}
    assert list(runs) == ["cpu", "xnnpack", "gpu", "nnapi", "hexagon"]
    for label in ("cpu", "xnnpack", "nnapi", "hexagon"):
        r = runs[label]
        assert r["status"] == "ok", r
        s = r["summary"]
        st = s["steady"]
        assert st["count"] == 5 and s["warmup"]["count"] == 1
        assert st["min_ms"] <= st["p5_ms"] <= st["median_ms"] <= st["p95_ms"] <= st["max_ms"]
        assert s["init_ms"] > 0 and s["first_ms"] == s["warmup"]["first_ms"]
        assert s["memory"]["overall_delta_mb"] is not None
    assert runs["cpu"]["delegate_verdict"]["executed_on"] == "CPU, builtin kernels"
    assert "--use_xnnpack=false" in runs["cpu"]["argv"]
    xnn = runs["xnnpack"]["delegate_verdict"]
    assert (xnn["outcome"], xnn["kernels"], xnn["replaced_nodes"], xnn["total_nodes"]) == (
        "partial",
        2,
        6,
        7,
    )
    # The GPU fails as on a CPU-only phone; the others still ran.
    gpu = runs["gpu"]
    assert gpu["status"] == "failed" and "Failed to apply GPU delegate." in gpu["message"]
    assert runs["nnapi"]["delegate_verdict"]["applied"] is False
    assert "NNAPI delegate took no ops" in runs["nnapi"]["delegate_verdict"]["executed_on"]
    assert "Hexagon delegate unavailable" in runs["hexagon"]["delegate_verdict"]["executed_on"]
    # Raw logs are kept; the device is clean.
    assert (res / runs["gpu"]["log"]).read_text().count("Failed to apply GPU delegate.") == 1
    assert workdirs(env.sandbox) == []
    # The text report shows the side-by-side table.
    status, out, _ = cli(capsys, *args, "--resume", str(res))
    assert status == 0
    header = next(ln for ln in out.splitlines() if ln.startswith("delegate"))
    assert "median ms" in header and "p5-p95 ms" in header and "executed on" in header
    assert (
        sum(
            ln.startswith(("cpu ", "xnnpack ", "gpu ", "nnapi ", "hexagon "))
            for ln in out.splitlines()
        )
        == 5
    )
    assert "taken from the results directory" in out  # --resume re-used all five


def test_two_devices_run_in_parallel_in_a_stable_order(
    env: EmulatedDevice, model: Path, tmp_path: Path
) -> None:
    with emulated_device(env.adb, tmp_path / "second") as second:
        serials = [second.serial, env.serial]  # not sorted: the order given is kept
        report = bench_model(
            model,
            delegates=[parse_delegate("cpu"), parse_delegate("xnnpack")],
            serials=serials,
            settings=RunSettings(BinarySpec(local=str(FAKE)), runs=5, warmup=1),
            results_dir=tmp_path / "res",
            server=env.server,
        )
        assert workdirs(second.sandbox) == []
        assert second.wait_no_processes() == []
    assert [d.serial for d in report.devices] == serials
    assert [(r["serial"], r["label"], r["status"]) for r in report.records] == [
        (s, d, "ok") for s in serials for d in ("cpu", "xnnpack")
    ]
    a, b = report.devices
    assert max(a.started, b.started) < min(a.finished, b.finished)  # the sessions overlapped
    assert workdirs(env.sandbox) == []


def test_older_output_format(
    env: EmulatedDevice, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = old_binary(tmp_path / "old_benchmark_model")
    extra = ("--delegate", "xnnpack", "--threads", "2", "--cpu-mask", "0x1")
    status, report, err = cli_json(capsys, *adb_args("bench", model, *RUNS, *extra, binary=binary))
    assert status == 0, err
    (run,) = report["devices"][0]["runs"]
    assert run["status"] == "ok"
    assert run["argv"][:2] == ["taskset", "1"] and "--num_threads=2" in run["argv"]
    steady = run["summary"]["steady"]
    assert steady["count"] == 5 and steady["median_ms"] is None and steady["avg_ms"] > 0
    assert run["delegate_verdict"]["outcome"] == "partial"


def test_unrecognised_newer_output_is_a_clear_failure(
    env: EmulatedDevice, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = alien_binary(tmp_path / "new_benchmark_model")
    res = tmp_path / "res"
    status, out, err = cli(
        capsys, *adb_args("bench", model, "--delegate", "cpu", "--resume", str(res), binary=binary)
    )
    assert status == 2
    line = one_error_line(err)
    assert line.startswith("edgepart: error: no run succeeded: ")
    assert "not benchmark_model output this edgepart recognises (an older or newer format?)" in line
    assert "benchmark v9" in next((res / "runs").rglob("cpu.log")).read_text()
    assert "failed" in out and workdirs(env.sandbox) == []
