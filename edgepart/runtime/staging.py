"""Staging buffers for tensors in flight between pipeline stages, allocated once per slot.

With an arena plan, each slot is one 64-byte-aligned block per memory and every staged tensor
is a view at its planned offset (tensors that are never live together share bytes). Without
one, every staged tensor gets its own array. Nothing is allocated while streaming.

A block covers the staged tensors only (up to the end of the last one), not the memory's size
as ``arena.json`` writes it, and the slots together must fit in this machine's memory: an arena
claiming 64 GiB or 2^62 bytes is refused on one line instead of being allocated.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from edgepart.bundle.format import Arena, Plan
from edgepart.errors import BundleError

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


def _nbytes(dtype: str, shape: Sequence[int]) -> int:
    count = 1
    for d in shape:
        count *= max(int(d), 0)
    return int(np.dtype(dtype).itemsize) * count


def _extents(plan: Plan, arena: Arena, staged: Sequence[int]) -> dict[str, int]:
    """Bytes each memory's block needs: the end of its last staged tensor."""
    types = _types(plan)
    where = arena.boundary()
    out = {name: 0 for name in arena.memories}
    for t in staged:
        b = where[t]
        out[b.memory] = max(out[b.memory], b.offset + _nbytes(*types[t]))
    return out


def _physical_memory() -> int:
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):  # pragma: no cover - not on Linux
        return 1 << 62


def make_slots(plan: Plan, arena: Arena | None, staged: Sequence[int], n: int) -> list[Slot]:
    """``n`` slots of staging buffers for the ``staged`` tensors.

    Raises
    ------
    BundleError
        The slots would need more than this machine's memory (a corrupted arena plan, or
        tensors too large to stream).
    """
    types = _types(plan)
    if arena is None:
        per_slot = sum(_nbytes(*types[t]) for t in staged)
    else:
        extents = _extents(plan, arena, staged)
        per_slot = sum(extents.values())
    total, limit = per_slot * n, _physical_memory()
    if total > limit:
        raise BundleError(
            f"streaming needs {total:,} bytes of staging buffers ({n} inputs in flight, "
            f"{per_slot:,} bytes each), more than this machine's {limit:,}; "
            + (
                "arena.json places the boundary tensors beyond any real memory (re-create "
                "the bundle)"
                if arena is not None
                else "stream fewer inputs at once"
            )
        )
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
            for name in sorted(arena.memories):
                raw, block = _aligned(extents[name])
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
