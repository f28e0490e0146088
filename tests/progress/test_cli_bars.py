"""The commands with long steps draw an ``edgepart.Progress`` bar on stderr when it is a terminal
(``EDGEPART_PROGRESS=1`` stands in for one here) and stay silent otherwise; ``bench`` is covered
in ``tests/android/test_bench_progress.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import edgepart
from edgepart.cli import main
from edgepart.placement.synth import random_costgraph_doc


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().err


def test_partition_exact_draws_a_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(random_costgraph_doc(12, 3, seed=1)))
    exact = ["partition", "--graph", str(graph), "--exact", "--time-limit", "30"]
    monkeypatch.setenv("EDGEPART_PROGRESS", "1")
    err = _run(capsys, *exact)
    assert "exact search [" in err and "30000/30000 ms 100%" in err and "nodes, done" in err
    assert _run(capsys, "partition", "--graph", str(graph)) == ""  # the heuristic reports none
    monkeypatch.delenv("EDGEPART_PROGRESS")
    assert _run(capsys, *exact) == ""  # captured stderr is not a terminal


def test_the_api_passes_progress_to_the_exact_solver(tmp_path: Path) -> None:
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(random_costgraph_doc(12, 3, seed=1)))
    calls: list[tuple[int, int, str]] = []
    placed = edgepart.place_graph(
        graph, method="exact", time_limit=30, progress=lambda d, t, s: calls.append((d, t, s))
    )
    assert placed.solution.optimal and calls[-1][:2] == (30_000, 30_000)


def test_profile_draws_a_bar_unless_told_not_to(
    corpus: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = ["profile", str(corpus["custom_op"]), "--budget", "0.002", "--no-fusion", "--top", "0"]
    monkeypatch.setenv("EDGEPART_PROGRESS", "1")
    err = _run(capsys, *args, "-o", str(tmp_path / "a.json"))
    assert "profiling [" in err and " op " in err and err.endswith("\n")
    assert _run(capsys, *args, "--no-progress", "-o", str(tmp_path / "b.json")) == ""
