"""Fixtures for the convert tests. TensorFlow runs only in child processes: the sources are
built by ``keras_zoo.py`` and the conversions run by ``edgepart convert`` or ``run_matrix.py``,
each in its own process, so no TensorFlow state reaches the pytest process or the next test."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from convert_helpers import build_sources, run_child  # noqa: E402


@pytest.fixture(scope="session")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every source of keras_zoo.py (six Keras architectures, .h5, SavedModels, samples)."""
    return build_sources(tmp_path_factory.mktemp("zoo"))


@pytest.fixture(scope="session")
def small_zoo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Just the MLP (for the one conversion of the fast suite)."""
    return build_sources(tmp_path_factory.mktemp("small_zoo"), "mlp")


@pytest.fixture(scope="session")
def matrix(
    zoo: Path, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], list[dict[str, Any]]]:
    """``matrix(arch)``: the four conversions of one architecture (run once, in one child
    process per architecture), as ConversionResult dicts in mode order."""
    cache: dict[str, list[dict[str, Any]]] = {}

    def get(arch: str) -> list[dict[str, Any]]:
        if arch not in cache:
            out = tmp_path_factory.mktemp(f"mx_{arch}")
            res = run_child(
                [
                    str(HERE / "run_matrix.py"),
                    str(zoo / f"{arch}.keras"),
                    str(out),
                    "--calibration-data",
                    str(zoo / "calib" / arch),
                ],
                timeout=1800,
            )
            assert res.returncode == 0, res.stderr[-3000:]
            cache[arch] = json.loads((out / "results.json").read_text())
        return cache[arch]

    return get
