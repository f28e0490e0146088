"""The reader locates Buffer tables at parse time and verifies them on first use.

Buffer tables sit next to the weights they describe, so the parse leaves them alone; the first
read of any buffer column verifies them all, and a defect there raises ModelFormatError at that
point, naming the byte offset, never anything else.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgepart.errors import ModelFormatError
from edgepart.ir.graph import BufferTable
from edgepart.tflite import flatbuf, reader
from edgepart.tflite.flatbuf import FlatBuffer, first_outside
from edgepart.tflite.reader import read_model, read_model_bytes
from edgepart.tflite.walk import native_columns
from edgepart.tflite.writer import write_model


def _buffer_positions(data: bytes) -> np.ndarray:
    fb = FlatBuffer(data, "<test>")
    raw = native_columns(fb, fb.root_position(b"TFL3"))
    assert raw is not None
    return raw.buf_pos


@pytest.mark.parametrize("accelerate", [True, False], ids=["walker", "numpy"])
def test_a_broken_buffer_table_raises_on_first_use(
    corpus: dict[str, Path], monkeypatch: pytest.MonkeyPatch, accelerate: bool
) -> None:
    data = bytearray(corpus["mobilenet_v2_int8"].read_bytes())
    good = read_model_bytes(bytes(data))
    pos = _buffer_positions(bytes(data))
    b = int(np.flatnonzero(good.buffers.length > 1000)[0])
    p = int(pos[b])
    data[p : p + 4] = (0x7FFFFFF0).to_bytes(4, "little")  # its vtable now lies outside the file
    monkeypatch.setattr(reader, "ACCELERATE", accelerate)

    model = read_model_bytes(bytes(data))  # the parse does not read Buffer tables
    assert model.main.num_ops == good.main.num_ops
    assert len(model.buffers) == len(good.buffers)
    with pytest.raises(ModelFormatError, match=r"model\.buffers.*byte offset"):
        _ = model.buffers.length
    with pytest.raises(ModelFormatError):
        write_model(model)


def test_buffer_table_positions_are_checked_at_parse(
    corpus: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A buffers vector pointing outside the file fails the parse itself."""
    data = bytearray(corpus["cond"].read_bytes())
    root = FlatBuffer(bytes(data), "<test>").root("Model", b"TFL3")
    start, length = root.vector_spans("buffers")
    assert int(length[0]) > 1
    at = int(start[0]) + 4  # the offset of buffer 1's table
    data[at : at + 4] = (len(data) * 2).to_bytes(4, "little")
    for accelerate in (True, False):
        monkeypatch.setattr(reader, "ACCELERATE", accelerate)
        with pytest.raises(ModelFormatError, match="byte offset"):
            read_model_bytes(bytes(data))


def test_deferred_columns_equal_eager_ones(corpus: dict[str, Path]) -> None:
    """Loading on first use gives the same columns, once, whatever is read first."""
    m = read_model(corpus["mobilenet_v2_fp16"])
    calls = []
    eager = (m.buffers.mem, m.buffers.start, m.buffers.length, m.buffers.external)

    def load() -> tuple[np.ndarray, ...]:
        calls.append(1)
        return eager

    lazy = BufferTable.deferred(len(m.buffers), m.buffers.mems, load)
    assert len(lazy) == len(m.buffers) and not calls
    assert lazy.data(3).tobytes() == m.buffers.data(3).tobytes()
    assert lazy.length is eager[2] and lazy.external is eager[3] and calls == [1]
    assert int(m.buffers.length.sum()) > 0


@pytest.mark.parametrize(
    "dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64]
)
def test_first_outside_agrees_with_numpy(dtype: type, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        v = rng.integers(0, 100, int(rng.integers(0, 40))).astype(dtype)
        lo, hi = int(rng.integers(0, 20)), int(rng.integers(20, 101))
        bad = np.flatnonzero((v < lo) | (v >= hi))
        want = int(bad[0]) if len(bad) else -1
        assert first_outside(v, lo, hi) == want
        with monkeypatch.context() as mp:
            mp.setattr(flatbuf, "_fbcore", None)
            assert first_outside(v, lo, hi) == want
    # strided and unsigned 64-bit input take the NumPy path
    v = np.arange(10, dtype=np.int64)[::2]
    assert first_outside(v, 0, 8) == 4
    assert first_outside(np.array([1, 2**63], dtype=np.uint64), 0, 10) == 1


@pytest.mark.parametrize("name", ["mobilenet_v2_int8", "cond", "multi_signature", "sparse_mlp"])
def test_walker_and_numpy_paths_give_identical_columns(
    corpus: dict[str, Path], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Same values and the same dtypes, whichever path read the file."""
    walked = read_model(corpus[name])
    monkeypatch.setattr(reader, "ACCELERATE", False)
    numpy_read = read_model(corpus[name])
    arrays = (
        "tensor_buffer",
        "op_opcode",
        "tensor_dtype",
        "inputs",
        "outputs",
        "tensor_is_variable",
    )
    csrs = ("op_inputs", "op_outputs", "op_intermediates", "tensor_shape", "tensor_signature")
    assert len(walked.subgraphs) == len(numpy_read.subgraphs)
    for a, b in zip(walked.subgraphs, numpy_read.subgraphs, strict=True):
        for f in arrays:
            x, y = getattr(a, f), getattr(b, f)
            assert x.dtype == y.dtype and np.array_equal(x, y), f
        for f in csrs:
            x, y = getattr(a, f), getattr(b, f)
            assert x.ptr.dtype == y.ptr.dtype and np.array_equal(x.ptr, y.ptr), f
            assert x.idx.dtype == y.idx.dtype and np.array_equal(x.idx, y.idx), f
    for f in ("mem", "start", "length", "external"):
        x, y = getattr(walked.buffers, f), getattr(numpy_read.buffers, f)
        assert x.dtype == y.dtype and np.array_equal(x, y), f
    assert walked.signature_defs == numpy_read.signature_defs
