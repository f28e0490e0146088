"""Model Explorer overlays: the real Model Explorer server (``ai-edge-model-explorer``) on
localhost with a model and edgepart's node-data files, opened in headless Chromium.

The overlay has loaded when Model Explorer lists it under "node data providers" and its
statistics agree with the files: the predicted-latency overlay's sum equals the sum of the
values edgepart wrote, and the processor overlay counts its categories per node. Both only
happen when the files' graph id and node ids match what Model Explorer's TFLite adapter built.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from report_browser import open_page

from edgepart.report import write_report


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def explorer_server(
    bundle_3: Path, tmp_path: Path
) -> Iterator[tuple[str, dict[str, Any], list[Path]]]:
    res = write_report(bundle_3, tmp_path / "r.html", model_explorer=tmp_path / "overlays")
    assert res.graph_id == "main"
    # the processor overlay goes last: Model Explorer shows the last one it loads
    order = sorted(res.overlays, key=lambda p: p.name.endswith(".processor.json"))
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "model_explorer",
        res.model_path,
        "--node_data_paths=" + ",".join(str(p) for p in order),
        "--no_open_in_browser",
        "--host=127.0.0.1",
        f"--port={port}",
    ]
    log = open(tmp_path / "model_explorer.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    try:
        url = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and url is None:
            assert proc.poll() is None, (tmp_path / "model_explorer.log").read_text()
            m = re.search(
                r"(http://127\.0\.0\.1:\d+/\?data=\S+)",
                (tmp_path / "model_explorer.log").read_text(),
            )
            url = m.group(1) if m else None
            time.sleep(0.3)
        assert url, (
            "Model Explorer did not print its address: "
            + (tmp_path / "model_explorer.log").read_text()
        )
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/check_health", timeout=10) as r:
            assert r.read() == b"model_explorer_ok"
        yield url, res.document, order
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_model_explorer_loads_the_overlays(
    explorer_server: tuple[str, dict[str, Any], list[Path]], browser: Any, artifacts: Path
) -> None:
    url, doc, overlays = explorer_server
    page, log = open_page(browser, url)
    names = {json.loads(p.read_text())["main"]["name"]: p for p in overlays}
    for name in names:
        page.get_by_text(name, exact=True).first.wait_for(timeout=90_000)
    # Model Explorer fetched every file through its own file reader
    fetched = [u for u in log.requests if "/api/v1/read_text_file" in u]
    assert sorted(
        Path(urllib.request.unquote(u.split("path=", 1)[1])).name for u in fetched
    ) == sorted(p.name for p in overlays)
    page.get_by_text("Aggregated stats").first.wait_for(timeout=60_000)
    # the latency overlay's sum over the graph's nodes equals what edgepart wrote
    latency = json.loads(
        next(p for p in overlays if p.name.endswith(".predicted_us.json")).read_text()
    )
    total = sum(r["value"] for r in latency["main"]["results"].values())
    body = page.inner_text("body")
    line = next(ln for ln in body.splitlines() if ln.startswith("Sum"))
    sums = [float(x) for x in re.findall(r"[-+]?[0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?", line)]
    assert any(abs(v - total) <= 1e-6 * max(1.0, total) for v in sums), (sums, total)
    # the processor overlay is categorical: its children-stats columns name each processor
    used = sorted({doc["processors"][k]["name"] for k in doc["ops"]["proc"]})
    for proc in used:
        assert f"#{proc}" in body, f"no category column for {proc}"
    time.sleep(1.0)  # let the WebGL canvas finish drawing the colored nodes
    page.screenshot(path=str(artifacts / "model_explorer_overlay.png"))
    page.close()
