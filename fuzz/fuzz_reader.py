"""The .tflite reader: the C walker path and the NumPy path agree on every input.

Each input is parsed both ways; both must refuse it (the same one-line ModelFormatError: the C
path defers to the NumPy path on any defect) or both accept it and write back byte-identical
models (the writer touches every table, so a lazily verified defect surfaces too).
"""

from __future__ import annotations

from typing import Any

from edgepart.errors import ModelFormatError
from edgepart.tflite import flatbuf, reader
from edgepart.tflite.writer import write_model

from . import seeds


def _outcome(data: bytes, accelerate: bool) -> tuple[str, Any]:
    reader.ACCELERATE = flatbuf.ACCELERATE = accelerate
    try:
        return ("ok", write_model(reader.read_model_bytes(data)))
    except ModelFormatError as err:
        return ("error", str(err))
    finally:
        reader.ACCELERATE = flatbuf.ACCELERATE = True


def one_input(data: bytes) -> None:
    native = _outcome(data, True)
    numpy = _outcome(data, False)
    if native != numpy:
        raise AssertionError(
            f"paths disagree: C {native[0]} {native[1]!r:.200}, NumPy {numpy[0]} {numpy[1]!r:.200}"
        )
    if native[0] == "error":
        raise ModelFormatError(native[1])


def seed_inputs() -> list[bytes]:
    return seeds.models()


MAX_LEN = seeds.MAX_LEN
