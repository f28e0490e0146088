"""``edgepart report`` without a browser: the document agrees with the bundle, the page is
self-contained and byte-reproducible, Model Explorer overlays have its format, bad input is one
line with exit status 2."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from edgepart.cli import main
from edgepart.report import build_report, write_report


def test_document_agrees_with_the_bundle(bundle_3: Path) -> None:
    _, doc = build_report(bundle_3)
    plan = json.loads((bundle_3 / "plan.json").read_text())
    assert [p["id"] for p in doc["partitions"]] == [p["id"] for p in plan["partitions"]]
    for d, p in zip(doc["partitions"], plan["partitions"], strict=True):
        assert doc["processors"][d["proc"]]["name"] == p["processor"]
        assert d["unit"] == f"{p['processor']}:{p['unit']}" and d["ops"] == len(p["ops"])
        for op in p["ops"]:
            assert doc["ops"]["part"][op] == doc["partitions"].index(d)
    assert doc["meta"]["latency_s"] == pytest.approx(plan["predicted"]["latency_s"], rel=1e-4)
    # TFLite's default, re-derived from the source model, is the plan's own baseline
    default = next(s for s in doc["schedules"] if s["name"] == "default")
    assert default["latency_s"] == pytest.approx(plan["baseline"]["latency_s"], rel=1e-4)
    # the tensors on graph edges between partitions are exactly those the partitions exchange
    n = len(doc["ops"]["type"])
    part = doc["ops"]["part"]
    crossing = {t for a, b, t, _ in doc["edges"] if a < n and b < n and part[a] != part[b]}
    handed = {t["tensor"] for p in plan["partitions"] if p["depends_on"] for t in p["inputs"]}
    assert crossing == handed
    # refusal reasons are TFLite's "OPNAME: reason" lines
    for p, why in enumerate(doc["ops"]["why"]):
        for op, r in why.items():
            assert not doc["ops"]["ok"][p][int(op)]
            assert doc["reasons"][r]


def test_page_is_self_contained_and_byte_reproducible(
    bundle_3: Path, branchy: Path, tmp_path: Path
) -> None:
    a = write_report(bundle_3, tmp_path / "a.html").html.read_bytes()
    b = write_report(bundle_3, tmp_path / "b.html").html.read_bytes()
    assert a == b
    moved = tmp_path / "elsewhere" / bundle_3.name
    shutil.copytree(bundle_3, moved)
    assert write_report(moved, tmp_path / "c.html").html.read_bytes() == a
    m1 = write_report(branchy, tmp_path / "m1.html", profile="pixel8").html.read_bytes()
    m2 = write_report(branchy, tmp_path / "m2.html", profile="pixel8").html.read_bytes()
    assert m1 == m2
    page = a.decode("utf-8")
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"<(script|img|link|iframe)[^>]*\s(src|href)=", page)
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", page)
    assert page.count("<script") == 2


def test_model_explorer_overlays(bundle_3: Path, tmp_path: Path) -> None:
    res = write_report(bundle_3, tmp_path / "r.html", model_explorer=tmp_path / "me")
    doc = res.document
    names = sorted(p.name for p in res.overlays)
    stem = "mobilenet_v2"
    assert names == sorted(
        f"{stem}.{k}.json" for k in ("processor", "partition", "tflite_default", "predicted_us")
    )
    n = len(doc["ops"]["type"])
    procs = [p["name"] for p in doc["processors"]]
    files = {p.name.split(".")[1]: json.loads(p.read_text()) for p in res.overlays}
    for name, data in files.items():
        assert list(data) == ["main"]  # Model Explorer's graph id of the main subgraph
        results = data["main"]["results"]
        assert sorted(results, key=int) == [str(i) for i in range(n)], name
    proc = files["processor"]["main"]["results"]
    for i in range(n):
        assert proc[str(i)]["value"] == procs[doc["ops"]["proc"][i]]
        assert proc[str(i)]["bgColor"] == doc["processors"][doc["ops"]["proc"][i]]["color"]
    dflt = files["tflite_default"]["main"]["results"]
    assert [dflt[str(i)]["value"] for i in range(n)] == [procs[k] for k in doc["ops"]["dproc"]]
    lat = files["predicted_us"]["main"]
    assert lat["gradient"][0]["stop"] == 0 and lat["gradient"][-1]["stop"] == 1
    for i in range(n):
        p = doc["ops"]["proc"][i]
        assert lat["results"][str(i)]["value"] == doc["ops"]["lat"][p][i]


def test_measured_overlay_from_a_latency_table(
    corpus: dict[str, Path], tmp_path: Path, capsys: Any
) -> None:
    model = corpus["sparse_mlp"]
    table = tmp_path / "table.json"
    args = ["profile", str(model), "--executor", "xnnpack", "--budget", "0.01", "--no-fusion"]
    assert main([*args, "--no-progress", "-o", str(table)]) == 0
    tname = next(iter(json.loads(table.read_text())["processors"]))
    out = tmp_path / "r.html"
    status = main(
        [
            "report",
            str(model),
            "--profile",
            "x86_host",
            "--latency-table",
            str(table),
            "--table-for",
            f"cpu={tname}",
            "-o",
            str(out),
            "--model-explorer",
            str(tmp_path / "me"),
        ]
    )
    assert status == 0
    text = capsys.readouterr().out
    assert "model-explorer" in text and "--node_data_paths=" in text
    measured = json.loads((tmp_path / "me" / "sparse_mlp.measured_us.json").read_text())["main"]
    assert tname in measured["name"]
    # a table's value is the op's time minus the measured invocation overhead, floored at zero
    # (edgepart.cost.table): the three fully connected layers stand well above it; the softmax of
    # 10 values can sit at the floor when the 10 ms budget catches a noisy moment
    values = [r["value"] for r in measured["results"].values()]
    assert len(values) == 4 and all(v >= 0 for v in values) and sum(v > 0 for v in values) >= 3


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing", "no such bundle directory or .tflite model"),
        ("no-profile", "give the device with --profile"),
        ("measured-on-model", "measured records belong to a bundle"),
        ("wrong-source", "is not the model bundle"),
        ("foreign-run", "do not match the plan's"),
        ("output-dir", "is a directory"),
        ("bad-json", "invalid JSON at line 1"),
        ("alien-profile", "which profile 'coral_devboard' does not have"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    case: str,
    message: str,
    bundle_1: Path,
    bundle_3: Path,
    corpus: dict[str, Path],
    tmp_path: Path,
    capsys: Any,
) -> None:
    out = tmp_path / "r.html"
    target = str(bundle_3)
    extra: list[str] = []
    if case == "missing":
        target = str(tmp_path / "nope")
    elif case == "no-profile":
        target = str(corpus["mobilenet_v2"])
    elif case == "measured-on-model":
        target = str(corpus["mobilenet_v2"])
        extra = ["--profile", "pixel8", "--measured", str(tmp_path / "x.json")]
    elif case == "wrong-source":
        extra = ["--model", str(corpus["densenet_tiny"])]
    elif case == "foreign-run":
        run = tmp_path / "run.json"
        assert (
            main(
                [
                    "run",
                    str(bundle_1),
                    "--random",
                    "--benchmark",
                    "--repeat",
                    "3",
                    "--warmup",
                    "1",
                    "--json",
                    str(run),
                ]
            )
            == 0
        )
        capsys.readouterr()
        extra = ["--measured", str(run)]
    elif case == "output-dir":
        out = tmp_path
    elif case == "bad-json":
        bad = tmp_path / "bad.json"
        bad.write_text("{not json")
        extra = ["--measured", str(bad)]
    elif case == "alien-profile":
        extra = ["--profile", "coral_devboard"]
    status = main(["report", target, "-o", str(out), *extra])
    err = capsys.readouterr().err
    assert status == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("edgepart: error: ") and message in lines[0], err
    assert not (tmp_path / "r.html").exists()
