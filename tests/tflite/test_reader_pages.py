"""Releasing the pages a parse touched (large files) keeps every weight readable and equal."""

from __future__ import annotations

import resource
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.tflite import reader
from edgepart.tflite.writer import save_model


def _weights(path: Path) -> list[bytes]:
    m = reader.read_model(path)
    return [m.buffers.data(i).tobytes() for i in range(len(m.buffers))]


def test_released_pages_refault_with_the_same_bytes(
    corpus: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = corpus["mobilenet_v2_int8"]
    kept = _weights(path)
    monkeypatch.setattr(reader, "RELEASE_MIN_SIZE", 0)
    m = reader.read_model(path)
    released = [m.buffers.data(i).tobytes() for i in range(len(m.buffers))]
    assert released == kept
    assert sum(len(b) for b in kept) > 100_000  # the model has real weights to compare
    # The IR built before the release is intact too.
    sg = m.main
    assert sg.num_ops == reader.read_model(path).main.num_ops
    assert np.array_equal(sg.op_inputs.idx, reader.read_model(path).main.op_inputs.idx)


def test_release_unmaps_touched_pages(
    corpus: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Released pages are gone from this process (reading them faults again); parsing a file
    of at least RELEASE_MIN_SIZE bytes releases, a smaller one does not."""
    path = corpus["mobilenet_v2_int8"]
    m = reader.read_model(path)
    big = m.buffers.data(max(range(len(m.buffers)), key=lambda i: int(m.buffers.length[i])))

    def faults_reading() -> int:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        big.sum()
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    faults_reading()  # map every page of the buffer
    assert faults_reading() == 0
    reader._release_pages(m.buffers.mems[0])
    assert faults_reading() > 0

    calls: list[object] = []
    monkeypatch.setattr(reader, "_release_pages", calls.append)
    small = reader.read_model(path)
    small.buffers.length  # noqa: B018 - first use of the buffer tables
    assert calls == []
    monkeypatch.setattr(reader, "RELEASE_MIN_SIZE", path.stat().st_size)
    large = reader.read_model(path)
    assert len(calls) == 1  # after the parse
    large.buffers.length  # noqa: B018
    large.buffers.start  # noqa: B018
    assert len(calls) == 2  # after the buffer tables' first use, once


@pytest.mark.parametrize("accelerate", [True, False], ids=["c_walker", "numpy_reader"])
def test_parsing_memory_follows_the_tables_not_the_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, accelerate: bool
) -> None:
    """A 64 MiB model of one layer parses in well under 1 MiB of allocations. Remembering the
    visited tables per 4 bytes of file (a bit in the C walker, a byte in the NumPy reader)
    cost 2 MiB and 16 MiB here, and 68 MB of resident memory on a 2 GB model when the
    allocator handed back used memory, which it must zero."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 64))
    w = g.constant("w", np.ones((256 * 1024, 64), np.float32))
    y = g.tensor("y", DType.FLOAT32, (1, 256 * 1024))
    g.op("FULLY_CONNECTED", [x, w], [y])
    g.output(y)
    path = tmp_path / "wide.tflite"
    save_model(mb.build(), path)
    assert path.stat().st_size > 64 << 20
    monkeypatch.setattr(reader, "ACCELERATE", accelerate)
    reader.read_model(path)  # imports and schema caches warm
    tracemalloc.start()
    try:
        m = reader.read_model(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert m.main.num_ops == 1
    assert peak < 1 << 20, peak
