"""The sweep (``benchmarks/sweep.py``) in CI: every corpus and real-model corpus model through
the CLI as a user runs it (each command ``edgepart.cli.main`` forked from a helper that has it
imported, ``benchmarks/cli_forks.py``), with a timeout per command; zero tracebacks, zero exit
statuses other than 0, 1 and 2, zero timeouts, and every bundle LiteRT can run verifies
bit-identical.

CI has 2 cores and the whole suite should stay near 15 minutes, so this test runs the sweep's
*subset*: every model once (``partition`` under one profile, rotating through the six shipped
profiles, one objective, alternating, and ``run --verify`` of that bundle) plus two of the other
commands per model in rotation (``inspect``, ``inspect --profile``, ``roofline``,
``plan-memory`` of the model and of the bundle, host ``profile``), so that every model, profile
and command appears. ``python benchmarks/sweep.py`` runs the full product (every model x every
profile x every command; about 2,300 commands) and prints the table the issue asks for.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import sweep  # noqa: E402  (benchmarks/ on sys.path)


@pytest.mark.slow
def test_sweep_subset(
    corpus: dict[str, Path], real_models: dict[str, Path], tmp_path: Path
) -> None:
    chosen = sweep.models()
    assert len(chosen) >= len(corpus) + len(real_models) - 1
    results = sweep.sweep(chosen, tmp_path, jobs=2, timeout=600, subset=True)
    report = sweep.table(results)
    print(report)
    bad = [r for r in results if r.status == "failure"]
    assert not bad, "\n".join(f"{r.model} {r.command} {r.profile}: {r.reason}" for r in bad[:20])
    assert all(r.rc in (None, 0, 1, 2) for r in results)
    # every model, profile and command took part
    assert {r.model for r in results} == set(chosen)
    assert {r.profile for r in results if r.profile} == set(sweep.PROFILES)
    assert {r.command for r in results} == set(sweep.COMMANDS)
    counts: Counter[Any] = Counter(r.status for r in results)
    # most commands succeed; the expected errors are the documented limits (Edge TPU programs
    # without an Edge TPU, custom ops LiteRT has no kernel for here)
    assert counts["ok"] >= 0.8 * len(results), report
    verified = [r for r in results if r.command == "run --verify" and r.status == "ok"]
    assert len(verified) >= 40, report


def test_forked_commands_report_as_the_command_line_does(
    corpus: dict[str, Path], tmp_path: Path
) -> None:
    """The sweep's commands run forked from a helper that has the CLI imported: status,
    standard output and error as ``python -m edgepart`` gives them, and an overrun kills the
    command's whole session."""
    import subprocess

    from cli_forks import CliForks

    model = str(corpus["cond"])
    out, err = tmp_path / "out", tmp_path / "err"
    forks = CliForks()
    try:
        for argv in (["inspect", model], ["inspect", str(tmp_path / "missing.tflite")]):
            rc, timed_out = forks.run(argv, out, err, timeout=120)
            ref = subprocess.run(
                [sys.executable, "-m", "edgepart", *argv], capture_output=True, text=True
            )
            assert (rc, timed_out) == (ref.returncode, False)
            assert out.read_text() == ref.stdout
            assert err.read_text() == ref.stderr
        assert rc == 2 and err.read_text().startswith("edgepart: error:")
        argv = ["profile", model, "-o", str(tmp_path / "t.json"), "--budget", "1"]
        rc, timed_out = forks.run(argv, out, err, timeout=0.5)
        assert timed_out and rc == -9
        assert not (tmp_path / "t.json").exists()
    finally:
        forks.close()
