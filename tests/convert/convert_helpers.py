"""Child processes for the convert tests (TensorFlow never loads into the pytest process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def child_env() -> dict[str, str]:
    """The environment of a child process that imports this checkout's edgepart."""
    path = os.environ.get("PYTHONPATH", "")
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT) + (os.pathsep + path if path else ""),
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "EDGEPART_PROGRESS": "0",
    }


def run_child(args: list[str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in a child process (cwd: the repository root)."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def edgepart(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``python -m edgepart ARGS`` in a child process."""
    return run_child(["-m", "edgepart", *args], timeout=timeout)


def build_sources(out: Path, *names: str) -> Path:
    res = run_child([str(HERE / "keras_zoo.py"), str(out), *names], timeout=1800)
    assert res.returncode == 0, res.stderr[-3000:]
    return out
