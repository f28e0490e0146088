"""``edgepart bench --adb`` against the real world, emulated: an unplugged phone, a hang, missing
and non-executable binaries, an unauthorized phone, no adb server. Each gives one clear line;
what was measured is kept, ``--resume`` finishes the rest, and the device is left clean."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from adb_fixtures import AdbServerHandle, EmulatedDevice, emulated_device, free_port
from bench_helpers import FAKE, RUNS, adb_args, cli, one_error_line, runs_of, workdirs


def _bench(model: Path, res: Path, *extra: str) -> list[str]:
    delegates = ("--delegate", "cpu", "--delegate", "xnnpack")
    return adb_args("bench", model, *RUNS, *delegates, "--resume", str(res), *extra)


def _results(res: Path) -> dict[str, dict[str, object]]:
    doc = json.loads((res / "results.json").read_text())
    return {r["label"]: r for r in doc["runs"].values()}


def test_unplugged_mid_run_keeps_results_and_resume_finishes(
    env: EmulatedDevice, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    res = tmp_path / "res"
    env.emulator.disconnect_when("--use_xnnpack=true", delay=0.3)
    started = time.monotonic()
    status, out, err = cli(capsys, *_bench(model, res))
    assert status == 2 and time.monotonic() - started < 30
    line = one_error_line(err)
    assert f"device {env.serial} disconnected while running" in line
    assert f"1 run(s) completed and kept in {res}" in line and f"--resume {res}" in line
    kept = _results(res)
    assert kept["cpu"]["status"] == "ok" and kept["xnnpack"]["status"] == "error"
    assert env.wait_no_processes() == []  # the hang-up reached the benchmark process
    # The phone comes back; the same command with --resume runs only what is missing.
    env.emulator.clear_faults()
    env.emulator.replug()
    assert env.adb.run("connect", env.serial).returncode == 0
    env.wait_state("device", timeout=30)
    status, out, err = cli(capsys, *_bench(model, res))
    assert status == 0, err
    assert runs_of(env.emulator.commands, "--use_xnnpack=false") == 1  # cpu was not repeated
    assert runs_of(env.emulator.commands, "--use_xnnpack=true") == 2
    kept = _results(res)
    assert kept["cpu"]["status"] == kept["xnnpack"]["status"] == "ok"
    assert "cpu       ok*" in out  # marked as taken from the results directory
    assert workdirs(env.sandbox) == []  # the interrupted run's directory is gone too


def test_hanging_run_times_out_and_the_rest_still_runs(
    env: EmulatedDevice, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    res = tmp_path / "res"
    env.emulator.hang_when("--use_xnnpack=false", delay=0.3)
    status, _, err = cli(capsys, *_bench(model, res, "--timeout", "3"))
    assert status == 2
    line = one_error_line(err)
    assert "did not finish within 3 s" in line and "was killed" in line
    assert "1 run(s) completed" in line
    kept = _results(res)
    assert kept["cpu"]["status"] == "error" and kept["xnnpack"]["status"] == "ok"
    assert env.wait_no_processes() == [] and workdirs(env.sandbox) == []
    env.emulator.clear_faults()
    status, _, err = cli(capsys, *_bench(model, res, "--timeout", "3"))
    assert status == 0, err
    assert runs_of(env.emulator.commands, "--use_xnnpack=true") == 1
    assert _results(res)["cpu"]["status"] == "ok"


def test_missing_and_non_executable_binaries(
    env: EmulatedDevice, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["bench", str(model), "--adb", "--delegate", "cpu"]
    status, _, err = cli(capsys, *base)  # nothing at the default path
    line = one_error_line(err)
    assert status == 2 and "/data/local/tmp/benchmark_model does not exist on" in line
    assert "--benchmark-binary LOCAL_PATH" in line
    status, _, err = cli(capsys, *base, "--remote-binary", "/data/local/tmp/bm/benchmark_model")
    assert status == 2 and "does not exist on" in one_error_line(err)
    tool = env.host_path("/data/local/tmp/bm/benchmark_model")
    tool.parent.mkdir(parents=True)
    tool.write_bytes(FAKE.read_bytes())
    tool.chmod(0o644)
    status, _, err = cli(capsys, *base, "--remote-binary", "/data/local/tmp/bm/benchmark_model")
    assert status == 2 and "is not executable: run `adb shell chmod 755" in one_error_line(err)
    assert not (tmp_path / "runs").exists()  # nothing ran, nothing was written
    tool.chmod(0o755)  # now it runs, from where it is
    status, _, err = cli(
        capsys, *base, *RUNS, "--remote-binary", "/data/local/tmp/bm/benchmark_model"
    )
    assert status == 0, err
    local = tmp_path / "not_here"
    status, _, err = cli(capsys, *base, "--benchmark-binary", str(local))
    assert status == 2 and "--benchmark-binary" in one_error_line(err)
    assert workdirs(env.sandbox) == [] and env.wait_no_processes() == []


def test_binary_that_is_not_benchmark_model(
    env: EmulatedDevice, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "ls_renamed"
    other.write_text("#!/bin/sh\necho usage: something else\n")
    status, _, err = cli(capsys, *adb_args("bench", model, binary=other))
    line = one_error_line(err)
    assert status == 2 and "does not look like TFLite's benchmark_model" in line
    assert workdirs(env.sandbox) == []


def test_unauthorized_device_and_no_server(
    adb_server: AdbServerHandle,
    model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("EDGEPART_RUNS_DIR", str(tmp_path / "runs"))
    args = adb_args("bench", model)
    with emulated_device(adb_server, tmp_path / "d", unauthorized=True) as emu:
        status, _, err = cli(capsys, *args, "--serial", emu.serial, "--adb-server", emu.server.spec)
        line = one_error_line(err)
        assert status == 2 and f"device {emu.serial} is unauthorized: accept the USB" in line
    port = free_port()
    monkeypatch.setenv("ADB_SERVER_SOCKET", f"tcp:127.0.0.1:{port}")
    status, _, err = cli(capsys, *args)
    line = one_error_line(err)
    assert status == 2 and f"cannot reach the adb server at tcp:127.0.0.1:{port}" in line
    assert not (tmp_path / "runs").exists()  # nothing ran, nothing written
