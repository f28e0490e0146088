"""``edgepart profile MODEL --adb``: per-op profiles on the emulated device become a latency table
in the cost model's format, keyed like the host profiler's, accepted by the cost model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from adb_fixtures import EmulatedDevice
from bench_helpers import (
    FAKE,
    NUM_OPS,
    RUNS,
    XNNPACK_GROUPS,
    adb_args,
    cli,
    cli_json,
    old_binary,
    workdirs,
)

from edgepart.cost.hardware import load_hardware
from edgepart.cost.model import CostModel
from edgepart.cost.table import load_table, tables_from
from edgepart.tflite.reader import read_model

CPU = "edgepart_emulated_phone_cpu_1t"
XNN = "edgepart_emulated_phone_xnnpack_1t"


def _profile(model: Path, out: Path, *extra: str, binary: Path = FAKE) -> list[str]:
    return adb_args("profile", model, *RUNS, "-o", str(out), *extra, binary=binary)


def _indices(entries: list[dict[str, object]]) -> list[list[int]]:
    return sorted(ops for e in entries for ops in e["op_indices"])  # type: ignore[attr-defined]


def test_proto_profile_gives_the_host_format_and_the_cost_model_takes_it(
    env: EmulatedDevice, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    phone = tmp_path / "phone.json"
    status, out, err = cli(
        capsys,
        *_profile(model, phone, "--delegate", "cpu", "--delegate", "xnnpack", "--delegate", "gpu"),
    )
    assert status == 0, err
    assert f"processor {CPU}: 7 op entries" in out and "layout proto, runtime info yes" in out
    assert "Failed to apply GPU delegate." in out and workdirs(env.sandbox) == []
    doc = json.loads(phone.read_text())
    procs = doc["processors"]
    assert sorted(procs) == [CPU, XNN]  # the failed GPU gives no processor
    cpu = procs[CPU]
    assert cpu["executor"] == "builtin" and cpu["threads"] == 1
    assert cpu["device"].startswith("Edgepart Emulated Phone (SoC EMU8000, Android 14, SDK 34")
    (m,) = cpu["models"]
    assert m["adb"]["device"]["android_version"] == "14" and m["adb"]["delegate"] == "cpu"
    assert m["adb"]["op_profile_layout"] == "proto" and m["adb"]["runtime_info"] is True
    assert m["adb"]["placement"] == {"cpu": list(range(NUM_OPS))}
    assert all(e["kind"] == "op" and e["stats"]["count"] == 5 for e in cpu["entries"])
    assert _indices(cpu["entries"]) == [[i] for i in range(NUM_OPS)]
    # XNNPACK's two delegate partitions are group entries, the op it declined an op entry.
    xnn = procs[XNN]
    groups = [e for e in xnn["entries"] if e["kind"] == "group"]
    assert _indices(groups) == XNNPACK_GROUPS
    assert all(
        e["role"] == "delegate_partition" and e["executed_by"] == "TfLiteXNNPackDelegate"
        for e in groups
    )
    assert [(e["op"], e["op_indices"]) for e in xnn["entries"] if e["kind"] == "op"] == [
        ("CUMSUM", [[3]])
    ]
    assert xnn["models"][0]["adb"]["placement"] == {
        "TfLiteXNNPackDelegate": [0, 1, 2, 4, 5, 6],
        "cpu": [3],
    }

    # The host profiler's table: same loader, same keys, so op by op comparison is direct.
    host = tmp_path / "host.json"
    status, _, err = cli(
        capsys,
        "profile",
        str(model),
        "--executor",
        "builtin",
        "--budget",
        "0.01",
        "--no-fusion",
        "--no-progress",
        "--top",
        "0",
        "-o",
        str(host),
    )
    assert status == 0, err
    host_t, phone_t = load_table(host), load_table(phone)
    assert set(host_t.processor("host_builtin_1t").entries) == set(phone_t.processor(CPU).entries)
    merged = tables_from([host, phone])
    assert sorted(merged.processors) == sorted(["host_builtin_1t", CPU, XNN])

    # The cost model takes the phone table for a profile's processor.
    ir = read_model(model)
    cm = CostModel(load_hardware("pixel8"), merged, table_for={"cpu": CPU})
    costs = cm.costs(ir.main, ir)
    assert costs.source_counts("cpu")["measured"] == NUM_OPS
    entries = phone_t.processor(CPU).entries
    from edgepart.cost.signature import op_signatures

    for i, sig in enumerate(op_signatures(ir.main)):
        assert costs.op_latency(i, "cpu").seconds == pytest.approx(entries[sig.key].value_s)
    cm_x = CostModel(load_hardware("pixel8"), merged, table_for={"cpu": XNN})
    assert cm_x.costs(ir.main, ir).op_latency(3, "cpu").source == "measured"


@pytest.mark.parametrize("layout", ["text", "csv"])
def test_text_and_csv_layouts_give_the_same_entries(
    env: EmulatedDevice,
    model: Path,
    tmp_path: Path,
    layout: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "t.json"
    status, report, err = cli_json(
        capsys, *_profile(model, out, "--delegate", "xnnpack", "--op-output", layout)
    )
    assert status == 0, err
    (p,) = report["processors"]
    assert p["layout"] == ("current" if layout == "text" else "csv") and p["runtime_info"]
    xnn = load_table(out).processor(XNN)
    groups = [e for e in xnn.entries.values() if e.kind == "group"]
    assert sorted(ops for e in groups for ops in e.extra["op_indices"]) == XNNPACK_GROUPS
    assert len(xnn.entries) == 3 and all(e.stats.count == 5 for e in xnn.entries.values())


def test_old_binary_without_runtime_info_still_attributes_delegate_rows(
    env: EmulatedDevice, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = old_binary(tmp_path / "old_benchmark_model")
    out = tmp_path / "old.json"
    args = _profile(model, out, "--delegate", "xnnpack", "--delegate", "cpu", binary=binary)
    status, report, err = cli_json(capsys, *args)
    assert status == 0, err
    layouts = {p["delegate"]: (p["layout"], p["runtime_info"]) for p in report["processors"]}
    assert layouts == {"xnnpack": ("start", False), "cpu": ("start", False)}
    run = report["devices"][0]["runs"][0]
    assert run["op_mode"] == "text" and not any("proto" in a for a in run["argv"])
    table = load_table(out)
    groups = [e for e in table.processor(XNN).entries.values() if e.kind == "group"]
    # Inferred from TFLite's partitioning of the ops no CPU row names: the same partitions the
    # runtime-info proto reports for a newer binary.
    assert sorted(ops for e in groups for ops in e.extra["op_indices"]) == XNNPACK_GROUPS
    assert len(table.processor(CPU).entries) == NUM_OPS
    # With --op-output proto this binary cannot comply: a one-line usage error.
    status, _, err = cli(capsys, *args[:-4], "--op-output", "proto", "--delegate", "cpu")
    assert status == 2 and "no --op_profiling_output_mode" in err and err.count("\n") == 1
    assert workdirs(env.sandbox) == []
