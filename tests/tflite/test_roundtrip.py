"""write(read(m)) is the same model: LiteRT gives bit-identical outputs, bytes are deterministic."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from _litert import interpreter, random_inputs, run

from edgepart.ir.verify import verify_model
from edgepart.tflite.reader import read_model, read_model_bytes
from edgepart.tflite.writer import write_model


def test_every_corpus_model_parses_and_verifies(corpus):
    for name, path in corpus.items():
        model = read_model(path)
        assert model.subgraphs, name
        assert verify_model(model) == [], name


@pytest.mark.parametrize("xnnpack", [True, False], ids=["xnnpack", "builtin"])
def test_roundtrip_outputs_bit_identical(corpus, corpus_manifest, xnnpack):
    checked = 0
    for name, path in corpus.items():
        if not corpus_manifest[name]["runnable"]:
            continue
        original = path.read_bytes()
        rewritten = write_model(read_model(path))
        a = interpreter(original, xnnpack=xnnpack)
        b = interpreter(rewritten, xnnpack=xnnpack)
        inputs = random_inputs(a, seed=1)
        for x, y in zip(run(a, inputs), run(b, inputs), strict=True):
            assert x.dtype == y.dtype and np.array_equal(x, y), name
        checked += 1
    assert checked >= 10


def test_writer_is_deterministic_and_idempotent(corpus):
    for name, path in corpus.items():
        model = read_model(path)
        first = write_model(model)
        assert write_model(model) == first, name
        assert write_model(read_model_bytes(first)) == first, name


def test_written_bytes_identical_across_processes(corpus, tmp_path):
    """Two separate runs of the writer produce the same file (no hash-order or id effects)."""
    path = corpus["multi_signature"]
    code = (
        "import sys;from edgepart.tflite.reader import read_model;"
        "from edgepart.tflite.writer import write_model;"
        "sys.stdout.buffer.write(write_model(read_model(sys.argv[1])))"
    )
    outs = [
        subprocess.run(
            [sys.executable, "-c", code, str(path)],
            capture_output=True,
            check=True,
            env={"PYTHONHASHSEED": str(seed), "PATH": ""},
        ).stdout
        for seed in (1, 2)
    ]
    assert outs[0] == outs[1] == write_model(read_model(path))


@pytest.mark.parametrize("xnnpack", [True, False], ids=["xnnpack", "builtin"])
def test_offset_buffer_layout_loads_with_identical_outputs(
    corpus, corpus_manifest, tmp_path, xnnpack
):
    for name in ("mobilenet_v2", "mobilenet_v2_int8", "lstm", "transformer"):
        path = corpus[name]
        model = read_model(path)
        blob = write_model(model, offset_buffers=True)
        reread = read_model_bytes(blob)
        assert reread.buffers.external.any(), name
        out = tmp_path / f"{name}_offset.tflite"
        out.write_bytes(blob)
        a = interpreter(path.read_bytes(), xnnpack=xnnpack)
        b = interpreter(path=str(out), xnnpack=xnnpack)  # offset buffers need the file
        inputs = random_inputs(a, seed=2)
        for x, y in zip(run(a, inputs), run(b, inputs), strict=True):
            assert np.array_equal(x, y), name
        # the offset layout reads back to the same model
        assert write_model(reread) == write_model(model), name
