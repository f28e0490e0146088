"""Fixtures for the runtime tests: a compiled null delegate and small bundles."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def null_delegate(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Path of a real TFLite external delegate library that claims no ops (built with cc)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the null delegate")
    out = tmp_path_factory.mktemp("delegate") / "libnull_delegate.so"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O1", "-o", str(out), str(DATA / "null_delegate.c")],
        check=True,
        capture_output=True,
    )
    return str(out)
