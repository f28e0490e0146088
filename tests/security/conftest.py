"""Fixtures for the hostile-input tests: a small bundle (fresh per test) and a C compiler."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from edgepart.bundle import PartitionSpec, write_bundle


@pytest.fixture(scope="session")
def small_model(corpus: dict[str, Path]) -> Path:
    return corpus["mobilenet_v2"]


@pytest.fixture(scope="session")
def _bundle_master(tmp_path_factory: pytest.TempPathFactory, small_model: Path) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "b"
    write_bundle(out, small_model, [PartitionSpec(range(0, 30)), PartitionSpec(range(30, 65))])
    return out


@pytest.fixture
def bundle(tmp_path: Path, _bundle_master: Path) -> Path:
    """A fresh copy of a two-partition MobileNetV2 bundle."""
    out = tmp_path / "bundle"
    shutil.copytree(_bundle_master, out)
    return out


@pytest.fixture(scope="session")
def cc() -> str:
    found = shutil.which("cc") or shutil.which("gcc")
    if found is None:
        pytest.skip("no C compiler")
    return found
