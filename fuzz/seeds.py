"""Seed inputs for the harnesses, made from the test corpus (``~/.cache/edgepart/corpus``)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# Small corpus models: libFuzzer mutates whole inputs, so seeds stay under ``MAX_LEN``.
MODELS = (
    "cond",
    "while_loop",
    "resource_vars",
    "dynamic_batch",
    "sparse_mlp",
    "lstm",
    "multi_signature",
    "custom_op",
    "transformer",
)
MAX_LEN = 100_000
REPO = Path(__file__).resolve().parent.parent


def corpus_dir() -> Path:
    """The corpus tools/build_corpus.py builds (``EDGEPART_CORPUS`` overrides)."""
    env = os.environ.get("EDGEPART_CORPUS")
    return Path(env) if env else Path.home() / ".cache" / "edgepart" / "corpus"


def models() -> list[bytes]:
    """The small corpus models plus the example model, each a valid .tflite."""
    out = []
    for name in MODELS:
        p = corpus_dir() / f"{name}.tflite"
        if p.is_file() and p.stat().st_size <= MAX_LEN:
            out.append(p.read_bytes())
    if not out:
        raise SystemExit(f"no seed models in {corpus_dir()}: run tools/build_corpus.py")
    return out


def yaml_files() -> list[bytes]:
    """The shipped device profiles and delegates."""
    out = []
    for sub in ("device_profiles", "delegates"):
        out += [p.read_bytes() for p in sorted((REPO / sub).glob("*.yaml"))]
    return out


def costgraphs() -> list[bytes]:
    """Small random DNN-shaped cost graphs (with and without memory and colocation)."""
    from edgepart import jsondoc
    from edgepart.placement.synth import random_costgraph_doc

    docs = [random_costgraph_doc(n, p, n * 7 + p) for n in (2, 5, 12) for p in (1, 2, 3)]
    docs.append(random_costgraph_doc(8, 3, 1, memory_pressure=True, colocation=True))
    return [jsondoc.text(d).encode() for d in docs]


def bundle(out: Path, model: str = "cond") -> Path:
    """A bundle compiled from a corpus model for pixel8, saved at ``out``."""
    import edgepart

    edgepart.compile(str(corpus_dir() / f"{model}.tflite"), "pixel8").save(out)
    return out


def bundle_files() -> list[tuple[str, bytes]]:
    """(name, bytes) of manifest.json, plan.json and arena.json of two compiled bundles."""
    out = []
    for model in ("cond", "lstm"):
        with tempfile.TemporaryDirectory() as tmp:
            b = bundle(Path(tmp) / "b", model)
            out += [(n, (b / n).read_bytes()) for n in ("manifest.json", "plan.json", "arena.json")]
    return out
