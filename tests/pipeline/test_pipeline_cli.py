"""``edgepart pipeline``: plan, schedule figures, Gantt chart, JSON, errors (exit status 2)."""

from __future__ import annotations

import json

import pytest

from edgepart.cli import main


def test_prints_plan_and_schedule(corpus, tmp_path, capsys):
    png = tmp_path / "g.png"
    argv = [str(corpus["mobilenet_v2"]), "--profile", "x86_host", "--cpu-threads", "1"]
    rc = main(["pipeline", *argv, "--schedule", "1f1b", "--micro-batches", "8", "-o", str(png)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "stage 0: cpu#0" in out and "stage 1: cpu#1" in out
    assert "backward estimated as 2 x forward" in out
    assert "bubble 11.8 %" in out  # (p-1)/(m+p-1) = 1/9 with near-equal stages
    assert "peak in flight per stage [2, 1]" in out
    first = png.read_bytes()
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    main(["pipeline", *argv, "--schedule", "1f1b", "--micro-batches", "8", "-o", str(png)])
    assert png.read_bytes() == first  # deterministic chart


def test_json_and_host_run(corpus, capsys):
    argv = [str(corpus["mobilenet_v2"]), "--profile", "x86_host", "--cpu-threads", "1"]
    assert main(["pipeline", *argv, "--run", "20", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["plan"]["stages"]) == 2
    assert doc["simulated"]["schedule"] == "stream"
    assert doc["host_run"]["measured"]["micro_batches"] == 20
    assert len(doc["host_run"]["stage_s"]) == 2


@pytest.mark.parametrize(
    ("extra", "msg"),
    [
        (["--micro-batches", "0"], "--micro-batches"),
        (["--schedule", "gpipe", "--run", "5"], "--run"),
        (["-o", "chart.svg"], "PNG"),
        (["--cpu-threads", "0"], "cpu_threads"),
    ],
)
def test_bad_input_is_one_line_and_status_2(corpus, tmp_path, capsys, extra, msg):
    rc = main(["pipeline", str(corpus["lstm"]), "--profile", "x86_host", *extra])
    err = capsys.readouterr().err
    assert rc == 2
    assert msg in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "chart.svg").exists()


def test_missing_model(capsys):
    assert main(["pipeline", "nope.tflite", "--profile", "x86_host"]) == 2
    assert "no such file" in capsys.readouterr().err
