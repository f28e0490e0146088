"""``edgepart report BUNDLE --measured bench.json``: a bundle benched on a phone (the emulated
device, whose stand-in ``benchmark_model`` runs LiteRT on this host) gets a measured Gantt chart
built from each partition's median, labelled with the device and placed after its dependencies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from adb_fixtures import EmulatedDevice
from bench_helpers import RUNS, adb_args, build_model, cli_json

from edgepart.bundle import PartitionSpec, write_bundle
from edgepart.report import write_report


def test_phone_bench_becomes_a_measured_schedule(
    emu: EmulatedDevice,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = build_model(tmp_path / "tiny.tflite")
    bundle = tmp_path / "b"
    # written by hand (no partitioner keys in plan.json): the report needs only the bundle format
    specs = [
        PartitionSpec(ops=[0, 1, 2], processor="gpu", predicted={"start_s": 0.0, "end_s": 2e-5}),
        PartitionSpec(ops=[3], processor="cpu", predicted={"start_s": 2e-5, "end_s": 2.5e-5}),
        PartitionSpec(ops=[4, 5, 6], processor="tpu", predicted={"duration_s": 5e-6}),
    ]
    write_bundle(
        bundle, model, specs, profile="pixel8", plan_extra={"predicted": {"latency_s": 3e-5}}
    )
    monkeypatch.setenv("ADB_SERVER_SOCKET", emu.server.spec)
    status, bench, err = cli_json(
        capsys, *adb_args("bench", bundle, *RUNS, "--resume", str(tmp_path / "res"))
    )
    assert status == 0, err
    record = tmp_path / "bench.json"
    record.write_text(json.dumps(bench))
    res = write_report(bundle, tmp_path / "r.html", measured=[record])
    phone = [s for s in res.document["schedules"] if s["kind"] == "phone"]
    assert len(phone) == 1
    sched = phone[0]
    assert len(sched["bars"]) == 3 and res.html.read_text().startswith("<!DOCTYPE html>")
    rows = {r["id"]: r for r in bench["partitions"][emu.serial]}
    plan = json.loads((bundle / "plan.json").read_text())
    ends: dict[str, float] = {}
    for bar, part in zip(sched["bars"], plan["partitions"], strict=True):
        assert bar["label"] == part["id"]
        assert bar["end"] - bar["start"] == pytest.approx(
            rows[part["id"]]["median_ms"] / 1e3, rel=1e-3
        )
        for dep in part["depends_on"]:
            assert bar["start"] >= ends[dep] - 1e-12  # after what it reads
        ends[part["id"]] = bar["end"]
    assert any("benchmark_model on" in n and emu.serial in n for n in sched["notes"])
    # the emulated phone has no GPU or NPU: those partitions fell back, and the note says so
    fell = [r["id"] for r in rows.values() if r["status"] == "fallback"]
    if fell:
        assert any("fell back to XNNPACK" in n for n in sched["notes"])
