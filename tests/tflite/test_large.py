"""Models over 2 GB: written in the offset-buffer layout, read zero-copy, run by LiteRT."""

from __future__ import annotations

import numpy as np
import pytest
from _litert import interpreter, run

from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.tflite.reader import read_model
from edgepart.tflite.writer import FLATBUFFER_LIMIT, save_model

ROWS, WIDTH = 530_000, 1024  # 530,000 x 1024 float32 = 2.17 GB of weights


@pytest.mark.slow
def test_model_over_2gb_roundtrips_and_runs(tmp_path):
    table = np.zeros((ROWS, WIDTH), np.float32)
    picks = np.array([3, ROWS // 2, ROWS - 1], np.int32)
    for k, r in enumerate(picks.tolist()):
        table[r] = np.arange(WIDTH, dtype=np.float32) + 1000 * (k + 1)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    idx = g.input("indices", DType.INT32, (3,))
    params = g.constant("table", table)
    rows = g.tensor("rows", DType.FLOAT32, (3, WIDTH))
    g.op("GATHER", [params, idx], [rows], options={"axis": 0})
    g.output(rows)
    model = mb.build()
    del table
    assert int(model.buffers.length.sum()) > FLATBUFFER_LIMIT
    path = tmp_path / "big.tflite"
    save_model(model, path)  # too big for an inline flatbuffer: offset layout chosen
    del model
    size = path.stat().st_size
    assert size > 2**31

    before = _rss()
    back = read_model(path)
    grown = _rss() - before
    assert back.buffers.external.any()
    assert grown < size // 100  # weights stay in the file mapping
    t = back.main.tensor(1)
    assert t.nbytes == ROWS * WIDTH * 4 and t.numpy()[ROWS // 2, 5] == 2005.0

    (out,) = run(interpreter(path=str(path), xnnpack=False), [picks])
    expected = np.arange(WIDTH, dtype=np.float32)[None, :] + 1000 * np.arange(1, 4)[:, None]
    np.testing.assert_array_equal(out, expected)


def _rss() -> int:
    """Current resident memory (not the peak, which the build above already set)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")
