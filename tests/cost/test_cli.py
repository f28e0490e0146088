"""``edgepart roofline`` and ``edgepart profile`` end to end (real LiteRT, real matplotlib)."""

from __future__ import annotations

import json

from _cost_models import conv_chain

from edgepart.cli import main
from edgepart.cost.table import load_table
from edgepart.tflite.writer import write_model


def model_file(tmp_path):
    p = tmp_path / "chain.tflite"
    p.write_bytes(write_model(conv_chain(n=2)))
    return p


def test_roofline_table_json_and_png(tmp_path, capsys):
    p = model_file(tmp_path)
    png = tmp_path / "r.png"
    assert main(["roofline", str(p), "--profile", "raspberry_pi5", "-o", str(png)]) == 0
    out = capsys.readouterr().out
    assert ("CONV_2D" in out and "compute" in out) or "memory" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["roofline", str(p), "--profile", "raspberry_pi5", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["ops"]) == 5 and doc["ops"][0]["procs"]["cpu"]["source"] == "roofline"


def test_profile_writes_table_usable_by_roofline(tmp_path, capsys):
    p = model_file(tmp_path)
    out_json = tmp_path / "t.json"
    rc = main(
        [
            "profile",
            str(p),
            "--executor",
            "builtin",
            "--budget",
            "0.005",
            "--no-progress",
            "-o",
            str(out_json),
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "whole model: measured" in text
    t = load_table(out_json)
    assert "host_builtin_1t" in t.processors
    rc = main(
        [
            "roofline",
            str(p),
            "--profile",
            "x86_host",
            "--table",
            str(out_json),
            "--map",
            "cpu=host_builtin_1t",
            "--json",
        ]
    )
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["totals"]["cpu"]["sources"]["measured"] == 5


def test_user_errors_are_one_line(tmp_path, capsys):
    p = model_file(tmp_path)
    assert main(["profile", str(p), "--threads", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgepart: error: --threads 0") and err.count("\n") == 1
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["roofline", str(p), "--profile", "x86_host", "--table", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.json: $.format" in err and err.count("\n") == 1
    assert main(["roofline", str(p), "--profile", "x86_host", "--map", "cpu"]) == 2
    assert "PROC=TABLEPROC" in capsys.readouterr().err
