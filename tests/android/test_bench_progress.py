"""Benchmarking through adb reports progress after every run (the hook a progress bar uses)."""

from __future__ import annotations

from pathlib import Path

import pytest
from adb_fixtures import EmulatedDevice
from bench_helpers import RUNS, adb_args, build_model, cli

import edgepart.android.bundle_bench as bundle_bench
from edgepart.bundle import PartitionSpec, write_bundle


def test_runs_report_progress(
    emu: EmulatedDevice,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = build_model(tmp_path / "tiny.tflite")
    bundle = tmp_path / "b"
    specs = [PartitionSpec(ops=[0, 1, 2], processor="gpu"), PartitionSpec(ops=[3, 4, 5, 6])]
    write_bundle(bundle, model, specs, profile="pixel8")
    calls: list[tuple[int, int, str]] = []
    real = bundle_bench.run_on_devices

    def recorded(*args, progress, **kw):  # type: ignore[no-untyped-def]
        def both(d: int, t: int, s: str) -> None:
            calls.append((d, t, s))
            progress(d, t, s)  # the CLI's bar

        return real(*args, **kw, progress=both)

    monkeypatch.setattr(bundle_bench, "run_on_devices", recorded)
    monkeypatch.setenv("ADB_SERVER_SOCKET", emu.server.spec)
    monkeypatch.setenv("EDGEPART_PROGRESS", "1")  # draw as on a terminal
    status, _, err = cli(capsys, *adb_args("bench", bundle, *RUNS, "--resume", str(tmp_path / "r")))
    assert status == 0, err
    assert "bench [" in err and "3/3 run 100%" in err
    # p0 asked for the GPU, which the emulated phone lacks: a follow-up XNNPACK run is added
    assert [c[0] for c in calls] == [1, 2, 3]
    assert [c[1] for c in calls] == [3, 3, 3]  # the follow-up counts from the run that asked
    assert calls[0][2] == f"{emu.serial}: p0@gpu" and calls[1][2].endswith("p0@xnnpack-fallback")
