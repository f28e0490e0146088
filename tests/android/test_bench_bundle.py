"""``edgepart bench BUNDLE --adb``: every partition runs with its plan's delegate; on the emulated
(CPU-only) phone the GPU and NNAPI partitions fall back to XNNPACK, as the bundle runtime does,
and the report says so, beside the plan's predictions."""

from __future__ import annotations

from pathlib import Path

import pytest
from adb_fixtures import EmulatedDevice
from bench_helpers import RUNS, adb_args, build_model, cli, cli_json, runs_of, workdirs

from edgepart.bundle import PartitionSpec, write_bundle


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bundle")
    model = build_model(root / "tiny.tflite")
    specs = [
        PartitionSpec(ops=[0, 1, 2], processor="gpu", predicted={"start_s": 0.0, "end_s": 2e-5}),
        PartitionSpec(ops=[3], processor="cpu", predicted={"start_s": 2e-5, "end_s": 2.5e-5}),
        PartitionSpec(ops=[4, 5, 6], processor="tpu", predicted={"duration_s": 5e-6}),
    ]
    write_bundle(
        root / "b", model, specs, profile="pixel8", plan_extra={"predicted": {"latency_s": 3e-5}}
    )
    return root / "b"


def test_partitions_with_their_delegates_and_documented_fallback(
    emu: EmulatedDevice,
    bundle: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ADB_SERVER_SOCKET", emu.server.spec)
    res = tmp_path / "res"
    args = adb_args("bench", bundle, *RUNS, "--resume", str(res))
    status, report, err = cli_json(capsys, *args)
    assert status == 0, err
    rows = {r["id"]: r for r in report["partitions"][emu.serial]}
    assert [(r["processor"], r["delegate"]) for r in rows.values()] == [
        ("gpu:0", "gpu"),
        ("cpu:0", "xnnpack"),
        ("tpu:0", "nnapi"),
    ]
    # p0 asked for the GPU: the delegate failed on the device, so it ran on XNNPACK.
    assert rows["p0"]["status"] == "fallback" and rows["p0"]["ran_with"] == "xnnpack"
    assert "Failed to apply GPU delegate." in rows["p0"]["fallback_reason"]
    # p2 asked for NNAPI (the profile's tpu): NNAPI took nothing, so XNNPACK again.
    assert rows["p2"]["status"] == "fallback" and "took no ops" in rows["p2"]["fallback_reason"]
    assert rows["p1"]["status"] == "ok" and rows["p1"]["fallback_reason"] is None
    for r in rows.values():
        # The tool prints whole microseconds: a one-op partition of this tiny model may read 0.
        assert r["below_resolution"] == (r["median_ms"] == 0)
        if r["below_resolution"]:
            assert r["median_ms"] == 0 and r["ratio"] is None
        else:
            assert r["median_ms"] > 0
            assert r["ratio"] == pytest.approx(r["median_ms"] / r["predicted_ms"])
    assert rows["p0"]["predicted_ms"] == pytest.approx(0.02)
    assert rows["p2"]["predicted_ms"] == pytest.approx(0.005)
    totals = report["totals"][emu.serial]
    assert totals["measured_ms"] == pytest.approx(sum(r["median_ms"] for r in rows.values()))
    assert totals["plan_latency_ms"] == pytest.approx(0.03)
    labels = [r["label"] for r in report["devices"][0]["runs"]]
    assert labels == [
        "p0@gpu",
        "p0@xnnpack-fallback",
        "p1@xnnpack",
        "p2@nnapi",
        "p2@xnnpack-fallback",
    ]
    assert workdirs(emu.sandbox) == [] and emu.wait_no_processes() == []
    # The text report, resumed: nothing is run again.
    before = runs_of(emu.emulator.commands, "--graph=")
    status, out, err = cli(capsys, *args)
    assert status == 0, err
    assert runs_of(emu.emulator.commands, "--graph=") == before == 5
    assert "fallback: p0: ran with xnnpack because" in out and "predicted ms" in out


def test_plan_delegates_map_to_tool_delegates_through_their_files() -> None:
    from types import SimpleNamespace

    from edgepart.android.bundle_bench import partition_delegate

    def entry(delegate: str, kind: str | None = None) -> SimpleNamespace:
        ex = None if kind is None else SimpleNamespace(kind=kind, delegate=None)
        return SimpleNamespace(delegate=delegate, executor=ex)

    def label(e: SimpleNamespace, libs: dict[str, str] | None = None) -> str:
        choice, why = partition_delegate(e, libs or {})
        return str(choice) if choice is not None else why

    assert label(entry("cpu_builtin")) == "cpu" and label(entry("xnnpack")) == "xnnpack"
    assert label(entry("gpu_mldrift")) == "gpu" and label(entry("npu")) == "nnapi"
    assert label(entry("gpu", "reference")) == "cpu"  # no reference kernels in the tool
    assert label(entry("gpu", "xnnpack")) == "xnnpack"
    assert label(entry("reference")) == "cpu"  # a plan may name a kernel set directly
    assert "--delegate-library edgetpu=DEVICE_PATH" in label(entry("edgetpu"))
    lib = "/data/local/tmp/libedgetpu.so.1"
    assert label(entry("edgetpu"), {"edgetpu": lib}) == f"external:{lib}"
    assert "no delegate file" in label(entry("tensorrt"))


def test_a_partition_under_the_tools_microsecond_has_no_ratio() -> None:
    from types import SimpleNamespace

    from edgepart.android.bundle_bench import partition_rows
    from edgepart.android.driver import DeviceResult

    def entry(pid: str) -> SimpleNamespace:
        return SimpleNamespace(
            id=pid, processor="cpu", unit=0, delegate="xnnpack", predicted={"duration_s": 2e-6}
        )

    def record(pid: str, median_ms: float) -> dict[str, object]:
        steady = {"median_ms": median_ms, "p5_ms": median_ms, "p95_ms": median_ms}
        return {
            "status": "ok",
            "delegate": "xnnpack",
            "tags": {"partition": pid, "role": "primary"},
            "summary": {"steady": steady},
        }

    plan = SimpleNamespace(partitions=[entry("p0"), entry("p1")])
    device = DeviceResult("emu", records=[record("p0", 0.0), record("p1", 0.004)])
    rows = {r["id"]: r for r in partition_rows(plan, device)}
    assert rows["p0"]["median_ms"] == 0.0 and rows["p0"]["below_resolution"]
    assert rows["p0"]["ratio"] is None
    assert not rows["p1"]["below_resolution"]
    assert rows["p1"]["ratio"] == pytest.approx(2.0)
