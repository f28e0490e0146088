"""Helpers for the hostile-input tests: the CLI in a child process with a deadline, one-line
error checks, and bundles tampered with as an attacker would (the manifest's checksums
rewritten to match)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> Any:
    """``python -m edgepart ARGS`` from the repository root; a hang fails the test."""
    full = {**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "edgepart", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=full,
    )


def one_line_error(proc: Any, *needles: str) -> str:
    """Exit status 2, one ``edgepart: error:`` line on stderr (no traceback), holding needles.

    LiteRT's own ``INFO:`` log lines (written by its C++ runtime) are not edgepart's output.
    """
    lines = [x for x in proc.stderr.strip().splitlines() if not x.startswith("INFO: ")]
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("edgepart: error: "), proc.stderr[-2000:]
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def rewrite_manifest(bundle: Path) -> None:
    """Make the manifest's sizes and checksums match the files again (as a tamperer would)."""
    man = json.loads((bundle / "manifest.json").read_text())
    for e in man["files"]:
        data = (bundle / e["path"]).read_bytes()
        e["bytes"] = len(data)
        e["sha256"] = hashlib.sha256(data).hexdigest()
    (bundle / "manifest.json").write_text(json.dumps(man, indent=1, sort_keys=True) + "\n")


def edit_plan(bundle: Path, edit: Any) -> None:
    plan = json.loads((bundle / "plan.json").read_text())
    edit(plan)
    (bundle / "plan.json").write_text(json.dumps(plan, indent=1, sort_keys=True) + "\n")
    rewrite_manifest(bundle)
