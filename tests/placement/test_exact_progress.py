"""The exact solver reports its progress through ``progress(elapsed_ms, limit_ms, label)``."""

from __future__ import annotations

import io

from pgraphs import random_graph

from edgepart.placement.exact import solve_exact
from edgepart.progress import Progress


def test_exact_solver_progress_callback() -> None:
    g = random_graph(10, 3, 4)
    calls: list[tuple[int, int, str]] = []
    plain = solve_exact(g, "latency", time_limit=30)
    res = solve_exact(g, "latency", time_limit=30, progress=lambda d, t, s: calls.append((d, t, s)))
    assert res.optimal and res.evaluation.latency_s == plain.evaluation.latency_s
    assert calls and calls[-1] == (30_000, 30_000, f"{res.nodes_explored} nodes, done")
    assert all(t == 30_000 and 0 <= d <= t for d, t, _ in calls)
    assert len(calls) == 1 + (res.nodes_explored + 255) // 256  # every 256 search nodes
    buf = io.StringIO()
    with Progress("exact", stream=buf, enabled=True, min_interval=0) as bar:
        solve_exact(g, "latency", time_limit=30, progress=bar)
    assert "30000/30000" in buf.getvalue() and "nodes, done" in buf.getvalue()
