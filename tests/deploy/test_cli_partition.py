"""``edgepart partition --graph``: plan output, byte-identical reruns, one-line errors."""

from __future__ import annotations

import json

import pytest

from edgepart.cli import main
from edgepart.placement.synth import random_costgraph_doc


@pytest.fixture
def graph_file(tmp_path):
    p = tmp_path / "cg.json"
    p.write_text(json.dumps(random_costgraph_doc(25, 3, 7)))
    return p


def test_plan_is_written_and_byte_identical(graph_file, tmp_path, capsys):
    out1, out2 = tmp_path / "a.json", tmp_path / "b.json"
    args = ["partition", "--graph", str(graph_file), "--effort", "0.3"]
    assert main([*args, "-o", str(out1)]) == 0
    report = capsys.readouterr().out
    assert main([*args, "-o", str(out2)]) == 0
    assert out1.read_bytes() == out2.read_bytes()
    plan = json.loads(out1.read_text())
    assert plan["format"] == "edgepart-plan" and plan["version"] == 1
    assert plan["source"]["file"] == "cg.json" and len(plan["source"]["sha256"]) == 64
    nodes = sorted(v for p in plan["partitions"] for v in p["nodes"])
    assert nodes == list(range(25))
    assert plan["predicted"]["latency_s"] <= plan["baseline"]["latency_s"]
    assert plan["speedup_over_baseline"] >= 1.0
    assert "predicted latency" in report and "TFLite default" in report
    assert list(json.loads(out1.read_text())) == sorted(plan)  # sorted keys


@pytest.mark.parametrize(
    "extra",
    [
        ["--exact", "--time-limit", "20"],
        ["--edge-cut", "2"],
        ["--objective", "throughput"],
        ["--edge-cut", "3", "--edge-cut-method", "metis"],
    ],
)
def test_modes(graph_file, tmp_path, extra, capsys):
    if "metis" in extra:
        pytest.importorskip("pymetis")
    out = tmp_path / "p.json"
    args = ["partition", "--graph", str(graph_file), "--effort", "0.3", "-o", str(out)]
    assert main([*args, *extra]) == 0
    plan = json.loads(out.read_text())
    if "--exact" in extra:
        assert plan["solver"]["method"] == "exact" and plan["solver"]["optimal"] is True
        assert "optimality proven" in capsys.readouterr().out
    if "--edge-cut" in extra:
        assert plan["solver"]["k"] == int(extra[1])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["partition"], "nothing to partition"),
        (["partition", "m.tflite"], "--profile DEVICE"),
        (["partition", "missing.tflite", "--profile", "pixel8"], "missing.tflite"),
        (["partition", "m.tflite", "--profile", "nosuchdevice"], "unknown device profile"),
        (["partition", "m.tflite", "--graph", "g.json"], "either MODEL or --graph"),
        (["partition", "--graph", "GRAPH", "--time-limit", "5"], "--time-limit applies to --exact"),
        (["partition", "--graph", "GRAPH", "--profile", "pixel"], "--profile goes with MODEL"),
        (["partition", "--graph", "missing.json"], "missing.json: cannot read"),
        (["partition", "--graph", "GRAPH", "--edge-cut", "0"], "K >= 1"),
    ],
)
def test_errors_are_one_line_with_status_2(graph_file, tmp_path, args, needle, capsys):
    args = [str(graph_file) if a == "GRAPH" else a for a in args]
    out = tmp_path / "never.json"
    assert main([*args, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgepart: error: ") and needle in err and err.count("\n") == 1
    assert not out.exists()


def test_invalid_graph_names_json_path(tmp_path, capsys):
    d = random_costgraph_doc(5, 2, 0)
    d["nodes"][3]["latency_s"]["cpu"] = "fast"
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d))
    assert main(["partition", "--graph", str(p)]) == 2
    assert "nodes[3].latency_s.cpu" in capsys.readouterr().err
