"""Fixtures for the reader/writer tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def corpus_manifest(corpus: dict[str, Path]) -> dict[str, Any]:
    """The corpus manifest (features, op counts, whether LiteRT can run each model)."""
    any_path = next(iter(corpus.values()))
    data = json.loads((any_path.parent / "manifest.json").read_text())
    models = data.get("models", data)
    return {name: models[name] for name in corpus}
