"""The static checks CI runs, run by ``python -m pytest`` (the README's test command): the
import-linter contracts in pyproject.toml (layers, no circles, private modules, a thin CLI),
ruff (lint and format) and ``mypy --strict edgepart``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*argv: str) -> None:
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(argv)} failed:\n{proc.stdout}\n{proc.stderr}"


def _script(name: str) -> str:
    """The console script installed next to this Python (the `[test]` extra), else on PATH."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.is_file() else shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[test]'"
    return found


def test_import_contracts_hold() -> None:
    """``lint-imports`` (it analyses the edgepart in the current directory, this checkout)."""
    _run(_script("lint-imports"), "--no-cache")


def test_ruff_lint_and_format() -> None:
    _run(sys.executable, "-m", "ruff", "check", ".")
    _run(sys.executable, "-m", "ruff", "format", "--check", ".")


@pytest.mark.slow
def test_mypy_strict() -> None:
    _run(sys.executable, "-m", "mypy", "--strict", "edgepart")
