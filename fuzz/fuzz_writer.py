"""The writer round trip: whatever the reader accepts, the writer writes, and the written model
reads back to a model that writes the same bytes again (a fixed point after one round)."""

from __future__ import annotations

from edgepart.ir.verify import verify_model
from edgepart.tflite.reader import read_model_bytes
from edgepart.tflite.writer import write_model

from . import seeds


def one_input(data: bytes) -> None:
    model = read_model_bytes(data)  # ModelFormatError: refused, fine
    first = write_model(model)
    again = read_model_bytes(first)
    second = write_model(again)
    if first != second:
        raise AssertionError(
            f"round trip is not a fixed point ({len(first)} vs {len(second)} bytes)"
        )
    verify_model(again)  # EdgepartError allowed: a readable model may still be inconsistent


def seed_inputs() -> list[bytes]:
    return seeds.models()


MAX_LEN = seeds.MAX_LEN
