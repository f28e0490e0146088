"""The phone calls of the public API against the emulated device: the same runs, settings and
results as the CLI (``bench``, ``bench BUNDLE``, ``profile --adb``, ``devices``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from adb_fixtures import EmulatedDevice
from bench_helpers import FAKE, RUNS, adb_args, cli, cli_json

import edgepart
from edgepart.bundle import PartitionSpec, write_bundle

PHONE = {"runs": 5, "warmup": 1, "benchmark_binary": str(FAKE)}


def _runs(report: dict) -> list[tuple[str, str, str]]:
    return [(d["serial"], r["label"], r["status"]) for d in report["devices"] for r in d["runs"]]


def test_devices(env: EmulatedDevice, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = cli(capsys, "devices", "--json")
    assert status == 0
    found = edgepart.adb_devices()
    assert found.to_dict() == json.loads(out)
    assert [d.serial for d in found.devices] == [env.serial]
    assert edgepart.adb_devices(serial="no-such-serial").devices == []


def test_bench_model(
    env: EmulatedDevice, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    delegates = ["cpu", "xnnpack", "gpu"]
    flags = [x for d in delegates for x in ("--delegate", d)]
    args = adb_args("bench", model, *RUNS, *flags, "--resume", str(tmp_path / "cli"))
    status, cli_report, err = cli_json(capsys, *args)
    assert status == 0, err
    report = edgepart.bench_model(model, delegates=delegates, results_dir=tmp_path / "api", **PHONE)
    api = report.to_json()
    assert _runs(api) == _runs(cli_report)
    assert [r[1] for r in _runs(api)] == delegates
    assert api["settings"] == cli_report["settings"] and report.failure() is None


def test_bench_bundle(
    env: EmulatedDevice, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = [PartitionSpec(range(0, 3)), PartitionSpec(range(3, 7), processor="gpu")]
    bundle = tmp_path / "b"
    write_bundle(bundle, model, specs, profile="pixel8")
    args = adb_args("bench", bundle, *RUNS, "--resume", str(tmp_path / "cli"))
    status, cli_report, err = cli_json(capsys, *args)
    assert status == 0, err
    report = edgepart.bench_bundle(bundle, results_dir=tmp_path / "api", **PHONE)
    api = report.to_json()
    assert _runs(api) == _runs(cli_report)
    rows = api["partitions"][env.serial]
    assert [(p["id"], p["delegate"]) for p in rows] == [("p0", "xnnpack"), ("p1", "gpu")]
    assert [p["status"] for p in rows] == [
        p["status"] for p in cli_report["partitions"][env.serial]
    ]
    with pytest.raises(edgepart.UsageError, match="absolute device path"):
        edgepart.bench_bundle(bundle, delegate_libraries={"gpu": "libx.so"}, **PHONE)


def test_profile_phone(
    env: EmulatedDevice, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = adb_args(
        "profile", model, *RUNS, "--delegate", "xnnpack", "-o", str(tmp_path / "c.json")
    )
    status, cli_report, err = cli_json(capsys, *args, "--resume", str(tmp_path / "cli"))
    assert status == 0, err
    report, table = edgepart.profile_phone(
        model,
        delegates=["xnnpack"],
        output=tmp_path / "a.json",
        results_dir=tmp_path / "api",
        **PHONE,
    )
    assert _runs(report.to_json()) == _runs(cli_report)
    cli_table = json.loads((tmp_path / "c.json").read_text())
    api_table = json.loads((tmp_path / "a.json").read_text())
    assert (
        sorted(api_table["processors"])
        == sorted(cli_table["processors"])
        == sorted(table.processors)
    )
    for name, proc in api_table["processors"].items():
        keys = sorted(e["key"] for e in proc["entries"])
        assert keys == sorted(e["key"] for e in cli_table["processors"][name]["entries"])
