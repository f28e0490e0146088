"""``edgepart report`` pages opened from disk in headless Chromium: no console errors, no
network, one graph node per op (or per collapsed group) in its processor's color, the charts
present; a full-page screenshot of each is kept in the artifacts directory."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from report_browser import open_page

from edgepart.cli import main
from edgepart.report import write_report

READY = "window.edgepartReport && window.edgepartReport.ready"

_NODES_JS = """() => [...document.querySelectorAll('#graph-svg .node')].map(n => ({
  cls: n.getAttribute('class'), key: n.dataset.key, op: n.dataset.op, group: n.dataset.group,
  ops: n.dataset.ops, proc: n.dataset.proc, fill: n.querySelector('rect').getAttribute('fill')}))"""


def _open(browser: Any, html: Path) -> tuple[Any, Any]:
    page, log = open_page(browser, html.resolve().as_uri(), READY)
    state = page.evaluate("window.edgepartReport")
    assert state["errors"] == [], state["errors"]
    return page, log


def _finish(page: Any, log: Any, artifacts: Path, name: str) -> None:
    assert log.errors == [], log.errors
    foreign = [u for u in log.requests if not u.startswith(("file:", "data:"))]
    assert foreign == [], f"the report asked the network for {foreign}"
    page.mouse.move(1, 1)  # no tooltip over the page
    page.evaluate("window.scrollTo(0, 0)")  # the sticky menu at the top
    page.screenshot(path=str(artifacts / f"report_{name}.png"), full_page=True)
    page.close()


def _check_graph(page: Any, doc: dict[str, Any], *, color_by: str = "proc") -> list[dict[str, Any]]:
    """Every op is drawn exactly once, alone or inside one group node, in the right color."""
    nodes = page.evaluate(_NODES_JS)
    ops, parts, procs = doc["ops"], doc["partitions"], doc["processors"]
    color = [p["color"] for p in procs]
    n = len(ops["type"])
    seen: Counter[int] = Counter()
    grouped = 0
    for nd in nodes:
        if "io" in nd["cls"]:
            continue
        if nd["op"] is not None:
            i = int(nd["op"])
            seen[i] += 1
            want = color[ops[color_by][i]]
            assert nd["fill"] == want, (
                f"op {i}: drawn {nd['fill']}, its processor's color is {want}"
            )
            assert nd["proc"] == procs[ops[color_by][i]]["name"]
            continue
        key, count = nd["group"], int(nd["ops"])
        grouped += count
        if key[0] in "pb":
            k = int(key[1:].split("_")[0])
            members = [i for i in range(n) if ops["part"][i] == k]
            assert count <= len(members) and (key[0] == "b" or count == len(members))
            if key[0] == "b":
                assert count <= 40
            if color_by == "proc":
                assert nd["fill"] == color[parts[k]["proc"]], key
        else:
            g = int(key[1:])
            members = [i for i in range(n) if ops["group"][i] == g]
            assert count == len(members)
            if color_by == "proc":
                assert nd["fill"] == color[ops["proc"][members[0]]]
    assert all(c == 1 for c in seen.values())
    assert len(seen) + grouped == n, f"{len(seen)} op nodes + {grouped} grouped ops != {n} ops"
    return nodes


def _expand_all(page: Any, doc: dict[str, Any]) -> None:
    page.click("#expand-all")
    nodes = _check_graph(page, doc)
    assert sum(1 for nd in nodes if nd["op"] is not None) == len(doc["ops"]["type"])


def _check_gantt(page: Any, doc: dict[str, Any]) -> None:
    bars = page.evaluate(
        """() => [...document.querySelectorAll(
            'svg.gantt[data-schedule="edgepart"] .bar.partition')]
        .map(b => ({label: b.dataset.label, proc: b.dataset.proc,
                    fill: b.querySelector('rect').getAttribute('fill')}))"""
    )
    parts = doc["partitions"]
    assert sorted(b["label"] for b in bars) == sorted(p["id"] for p in parts)
    by_id = {p["id"]: p for p in parts}
    for b in bars:
        assert b["fill"] == doc["processors"][by_id[b["label"]]["proc"]]["color"]
    rows = page.locator("#ops-table tbody tr").count()
    assert rows == len(doc["ops"]["type"])
    assert page.locator("svg.roofline").count() == len(doc["processors"])


def test_one_partition_bundle(
    browser: Any, bundle_1: Path, tmp_path: Path, artifacts: Path
) -> None:
    res = write_report(bundle_1, tmp_path / "r.html")
    doc = res.document
    assert len(doc["partitions"]) == 1
    page, log = _open(browser, res.html)
    nodes = _check_graph(page, doc)
    assert sum(1 for nd in nodes if nd["op"] is not None) == 65  # small graphs: one node per op
    _check_gantt(page, doc)
    assert page.locator("svg.arena").count() == len(doc["arena"]["memories"])
    # TFLite's default placement beside edgepart's: the graph recolors by it
    page.select_option("#color-by", "default")
    _check_graph(page, doc, color_by="dproc")
    _finish(page, log, artifacts, "bundle_1_partition")


def test_three_partition_stream_bundle_with_a_measured_run(
    browser: Any, bundle_3: Path, tmp_path: Path, artifacts: Path
) -> None:
    run = tmp_path / "run.json"
    args = ["run", str(bundle_3), "--random", "--benchmark", "--repeat", "10", "--warmup", "2"]
    assert main([*args, "--json", str(run)]) == 0
    res = write_report(bundle_3, tmp_path / "r.html", measured=[run])
    doc = res.document
    assert len(doc["partitions"]) == 3
    assert len({p["proc"] for p in doc["partitions"]}) == 3
    measured = [s for s in doc["schedules"] if s["kind"] == "host"]
    assert len(measured) == 1 and len(measured[0]["bars"]) == 3
    timeline = json.loads(run.read_text())["benchmark"]["timeline"]
    for bar in measured[0]["bars"]:
        pid = bar["label"].split()[0]
        assert bar["start"] == pytest.approx(timeline[pid]["start_s"], rel=1e-4, abs=1e-9)
        assert bar["end"] >= bar["start"]
    page, log = _open(browser, res.html)
    _check_graph(page, doc)
    _check_gantt(page, doc)
    assert page.locator('svg.gantt[data-schedule^="measured"] .bar').count() == 3
    # the throughput plan's stage timeline: 4 inputs x 3 partitions
    assert doc["throughput"] is not None
    assert page.locator('svg.gantt[data-schedule="stages"] .bar').count() == 12
    # crossing bytes on the graph add up to what the partitions exchange
    crossing = page.evaluate(
        "() => [...document.querySelectorAll('#graph-svg path.edge.cross')]"
        ".map(p => +p.dataset.bytes)"
    )
    assert crossing and all(b > 0 for b in crossing)
    _expand_all(page, doc)
    _finish(page, log, artifacts, "bundle_3_partitions_stream")


def test_more_than_ten_partitions(
    browser: Any, bundle_10: Path, tmp_path: Path, artifacts: Path
) -> None:
    res = write_report(bundle_10, tmp_path / "r.html")
    doc = res.document
    nparts = len(doc["partitions"])
    assert nparts >= 10
    assert len({p["proc"] for p in doc["partitions"]}) >= 3
    page, log = _open(browser, res.html)
    nodes = _check_graph(page, doc)
    assert sum(1 for nd in nodes if nd["op"] is not None) == len(doc["ops"]["type"])
    _check_gantt(page, doc)
    page.locator("#graph").screenshot(path=str(artifacts / "report_bundle_10_graph_ops.png"))
    page.select_option("#view-mode", "partitions")
    nodes = _check_graph(page, doc)
    groups = [nd for nd in nodes if nd["group"] is not None]
    assert len(groups) == nparts and not any(nd["op"] for nd in nodes)  # one node per partition
    labels = page.locator("#graph-svg .edge-label").count()
    assert labels == page.locator("#graph-svg path.edge.cross").count() > nparts - 1
    page.locator("#graph").screenshot(path=str(artifacts / "report_bundle_10_graph_partitions.png"))
    # a click on a band expands that partition only, a second click collapses it again
    first = page.locator("#graph-svg .band").first
    pid = first.get_attribute("data-partition")
    first.click()
    nodes = _check_graph(page, doc)
    k = next(i for i, p in enumerate(doc["partitions"]) if p["id"] == pid)
    assert sum(1 for nd in nodes if nd["op"] is not None) == doc["partitions"][k]["ops"]
    page.locator(f'#graph-svg .band[data-partition="{pid}"]').click()
    assert not any(nd["op"] for nd in _check_graph(page, doc))
    _finish(page, log, artifacts, f"bundle_{nparts}_partitions")


def _big_model(browser: Any, model: Path, tmp_path: Path, artifacts: Path, name: str) -> None:
    res = write_report(model, tmp_path / "r.html", profile="pixel8")
    doc = res.document
    n = len(doc["ops"]["type"])
    assert n >= 1000
    page, log = _open(browser, res.html)
    nodes = _check_graph(page, doc)
    visible = [nd for nd in nodes if "io" not in nd["cls"]]
    assert len(visible) <= n / 10  # collapsed into blocks: readable at a glance
    page.locator("#graph").screenshot(path=str(artifacts / f"report_{name}_graph_blocks.png"))
    # pan and zoom: the wheel zooms around the cursor, and labels hide when zoomed far out
    box = page.locator("#graph-wrap").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    before = page.get_attribute("#viewport", "transform")
    for _ in range(12):
        page.mouse.wheel(0, 400)
    after = page.get_attribute("#viewport", "transform")
    assert before != after
    assert "lod-low" in (page.get_attribute("#graph-svg", "class") or "")
    # expanding one block shows its ops and keeps every other op in its group
    page.locator("#graph-svg .node.group").first.click()
    _check_graph(page, doc)
    _expand_all(page, doc)
    page.select_option("#color-by", "default")
    _check_graph(page, doc, color_by="dproc")
    page.locator("#graph").screenshot(path=str(artifacts / f"report_{name}_graph_default.png"))
    _check_gantt(page, doc)
    page.fill("#ops-filter", "REVERSE_V2")
    shown = page.locator("#ops-table tbody tr:visible").count()
    assert shown == sum(1 for i in range(n) if doc["types"][doc["ops"]["type"][i]] == "REVERSE_V2")
    _finish(page, log, artifacts, name)


def test_thousand_op_model(browser: Any, branchy: Path, tmp_path: Path, artifacts: Path) -> None:
    _big_model(browser, branchy, tmp_path, artifacts, "model_1296_ops")


@pytest.mark.slow
def test_four_thousand_op_corpus_model(
    browser: Any, get_corpus_model: Any, tmp_path: Path, artifacts: Path
) -> None:
    res = write_report(get_corpus_model("big_graph_4k"), tmp_path / "r.html", profile="pixel8")
    doc = res.document
    assert len(doc["ops"]["type"]) == 4000
    page, log = _open(browser, res.html)
    nodes = _check_graph(page, doc)
    assert len([nd for nd in nodes if "io" not in nd["cls"]]) == 100  # 4000 ops in blocks of 40
    _expand_all(page, doc)
    _check_gantt(page, doc)
    _finish(page, log, artifacts, "model_4000_ops")
