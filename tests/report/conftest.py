"""Fixtures for the report tests: bundles partitioned from the corpus, a generated 1,296-op
model, one Chromium for the session (helpers in ``report_browser.py``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from report_browser import artifacts_dir, chromium
from report_models import branchy_model

from edgepart.cli import main


def partition(model: Path, out: Path, *extra: str, profile: str = "pixel8") -> Path:
    """``edgepart partition MODEL --profile PROFILE -o OUT`` (in process)."""
    assert main(["partition", str(model), "--profile", profile, "-o", str(out), *extra]) == 0
    return out


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return artifacts_dir(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as ctx:
        yield ctx


@pytest.fixture(scope="session")
def bundle_1(corpus: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MobileNetV2 for the Pixel 8: one partition."""
    return partition(corpus["mobilenet_v2"], tmp_path_factory.mktemp("b1") / "mobilenet_v2_pixel8")


@pytest.fixture(scope="session")
def bundle_3(corpus: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MobileNetV2 pipelined for throughput on the Pixel 8 in three stages (balanced edge cut):
    a CPU core, the GPU and the TPU."""
    out = tmp_path_factory.mktemp("b3") / "mobilenet_v2_stream"
    return partition(corpus["mobilenet_v2"], out, "--objective", "throughput", "--edge-cut", "3")


@pytest.fixture(scope="session")
def bundle_10(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated 216-op model cut into 12 partitions over all four units of the Pixel 8."""
    root = tmp_path_factory.mktemp("b10")
    model = branchy_model(root / "branchy_216.tflite", blocks=30)
    return partition(model, root / "branchy_cut", "--edge-cut", "12")


@pytest.fixture(scope="session")
def branchy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated 1,296-op model (see report_models.branchy_model)."""
    return branchy_model(tmp_path_factory.mktemp("branchy") / "branchy_1296.tflite")
