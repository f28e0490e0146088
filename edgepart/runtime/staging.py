"""Staging buffers for tensors in flight between pipeline stages, allocated once per slot.

With an arena plan, each slot is one 64-byte-aligned block per memory and every staged tensor
is a view at its planned offset (tensors that are never live together share bytes). Without
one, every staged tensor gets its own array. Nothing is allocated while streaming.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from edgepart.bundle.format import Arena, Plan

__all__ = ["Slot", "make_slots", "slot_nbytes"]

_ALIGN = 64


@dataclass(eq=False)
class Slot:
    """The buffers of one input in flight, plus its results and error."""

    buffers: dict[int, np.ndarray]
    blocks: list[np.ndarray]
    results: dict[int, np.ndarray] = field(default_factory=dict)
    error: BaseException | None = None


def _types(plan: Plan) -> dict[int, tuple[str, tuple[int, ...]]]:
    out = {t.tensor: (t.dtype, t.shape) for t in plan.inputs}
    for p in plan.partitions:
        for t in p.outputs:
            out[t.tensor] = (t.dtype, t.shape)
    return out


def _aligned(nbytes: int) -> tuple[np.ndarray, np.ndarray]:
    raw = np.empty(nbytes + _ALIGN, np.uint8)
    start = (-raw.ctypes.data) % _ALIGN
    return raw, raw[start : start + nbytes]


def make_slots(plan: Plan, arena: Arena | None, staged: Sequence[int], n: int) -> list[Slot]:
    """``n`` slots of staging buffers for the ``staged`` tensors."""
    types = _types(plan)
    slots = []
    for _ in range(n):
        buffers: dict[int, np.ndarray] = {}
        blocks: list[np.ndarray] = []
        if arena is None:
            for t in staged:
                dtype, shape = types[t]
                buffers[t] = np.empty(shape, dtype)
        else:
            where = arena.boundary()
            base: dict[str, np.ndarray] = {}
            for name, mem in sorted(arena.memories.items()):
                raw, block = _aligned(int(mem["size"]))
                blocks.append(raw)
                base[name] = block
            for t in staged:
                dtype, shape = types[t]
                b = where[t]
                nbytes = int(np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64)))
                view = base[b.memory][b.offset : b.offset + nbytes]
                buffers[t] = view.view(dtype).reshape(shape)
        slots.append(Slot(buffers, blocks))
    return slots


def slot_nbytes(slot: Slot) -> int:
    """Bytes one slot holds (the arena blocks, or the separate arrays)."""
    if slot.blocks:
        return sum(b.nbytes for b in slot.blocks)
    return sum(b.nbytes for b in slot.buffers.values())
