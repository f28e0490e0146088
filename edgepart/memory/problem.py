"""The static memory planning problem: buffers with lifetimes, sizes, alignments and conflicts.

A buffer lives on an integer timeline over the half-open interval ``[lower, upper)`` (for a
TFLite schedule: ``lower`` = index of the producing op, ``upper`` = index of the last consumer
plus one). Two buffers of the same memory *conflict* when their lifetimes intersect or when the
problem lists them as an explicit extra conflict (partitions that run concurrently on separate
timelines). A plan gives every buffer a byte offset in its memory's arena such that conflicting
buffers never overlap in ``[offset, offset + size)``.

The problem is stored by column (one NumPy array per attribute), like the IR, so that building
and planning 10,000-buffer instances stays fast; :meth:`MemoryProblem.buffer` gives a frozen
:class:`Buffer` view for humans.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from edgepart.errors import BufferTableError, UsageError

__all__ = ["DEFAULT_ALIGNMENT", "DEFAULT_MEMORY", "Buffer", "MemoryProblem"]

DEFAULT_ALIGNMENT = 64
"""TFLite's ``kDefaultTensorAlignment``: arena tensors start on 64-byte boundaries."""

DEFAULT_MEMORY = "default"
"""The arena name used when buffers do not say which memory they live in."""


@dataclass(frozen=True)
class Buffer:
    """One buffer to place.

    Parameters
    ----------
    id
        Unique name (a tensor name, ``"sg0:t12"``, a CSV id, ...).
    lower, upper
        Half-open lifetime ``[lower, upper)`` on the integer timeline; ``lower < upper``.
    size
        Bytes; zero-sized buffers get offset 0 (or their fixed offset) and conflict with nothing.
    alignment
        The offset must be a multiple of this (default 64).
    offset
        A fixed offset (pre-placed I/O or DMA buffers), or ``None`` to let the planner choose.
    memory
        The arena (memory) this buffer lives in; buffers of different memories never conflict.
    """

    id: str
    lower: int
    upper: int
    size: int
    alignment: int = DEFAULT_ALIGNMENT
    offset: int | None = None
    memory: str = DEFAULT_MEMORY


@dataclass(frozen=True, eq=False)
class MemoryProblem:
    """A validated, columnar set of buffers plus explicit extra conflicts.

    Build it with :meth:`from_buffers` or :meth:`from_arrays`; the constructor itself does not
    validate. ``fixed[i]`` is ``-1`` when buffer ``i`` has no fixed offset; ``memory[i]`` indexes
    ``memories``; ``conflicts`` is an ``(k, 2)`` array of buffer indices (``i < j``, unique,
    same memory). ``rank`` optionally fixes the TFLite baseline's placement order (lower
    first), e.g. the exact order a runtime uses, ties included (see
    :func:`~edgepart.memory.lifetimes.tflite_lifetimes`).
    """

    ids: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    size: np.ndarray
    alignment: np.ndarray
    fixed: np.ndarray
    memory: np.ndarray
    memories: tuple[str, ...]
    conflicts: np.ndarray
    rank: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @cached_property
    def index(self) -> dict[str, int]:
        """Map from buffer id to its row."""
        return {b: i for i, b in enumerate(self.ids)}

    def buffer(self, i: int) -> Buffer:
        """Buffer ``i`` as a frozen :class:`Buffer` value."""
        fixed = int(self.fixed[i])
        return Buffer(
            id=self.ids[i],
            lower=int(self.lower[i]),
            upper=int(self.upper[i]),
            size=int(self.size[i]),
            alignment=int(self.alignment[i]),
            offset=None if fixed < 0 else fixed,
            memory=self.memories[int(self.memory[i])],
        )

    def buffers(self) -> list[Buffer]:
        """All buffers as :class:`Buffer` values, in row order."""
        return [self.buffer(i) for i in range(len(self))]

    def rows_of(self, memory: str) -> np.ndarray:
        """Row indices (ascending) of the buffers living in ``memory``."""
        try:
            m = self.memories.index(memory)
        except ValueError:
            raise UsageError(
                f"unknown memory {memory!r}; this problem has {', '.join(self.memories) or 'none'}"
            ) from None
        return np.flatnonzero(self.memory == m)

    def describe(self, i: int) -> str:
        """``'id' [lower, upper) size S`` for error messages."""
        return (
            f"{self.ids[i]!r} [{int(self.lower[i])}, {int(self.upper[i])}) size {int(self.size[i])}"
        )

    # ------------------------------------------------------------------ construction

    @staticmethod
    def from_buffers(
        buffers: Iterable[Buffer], conflicts: Iterable[tuple[str, str]] = ()
    ) -> MemoryProblem:
        """Build and validate a problem from :class:`Buffer` values and id-pair conflicts."""
        bufs = list(buffers)
        return MemoryProblem.from_arrays(
            ids=[b.id for b in bufs],
            lower=[b.lower for b in bufs],
            upper=[b.upper for b in bufs],
            size=[b.size for b in bufs],
            alignment=[b.alignment for b in bufs],
            fixed=[-1 if b.offset is None else b.offset for b in bufs],
            memory=[b.memory for b in bufs],
            conflicts=conflicts,
        )

    @staticmethod
    def from_arrays(
        ids: Sequence[str | int],
        lower: Sequence[int] | np.ndarray,
        upper: Sequence[int] | np.ndarray,
        size: Sequence[int] | np.ndarray,
        alignment: int | Sequence[int] | np.ndarray = DEFAULT_ALIGNMENT,
        fixed: Sequence[int] | np.ndarray | None = None,
        memory: str | Sequence[str] = DEFAULT_MEMORY,
        conflicts: Iterable[tuple[str, str]] | np.ndarray = (),
        rank: Sequence[int] | np.ndarray | None = None,
    ) -> MemoryProblem:
        """Build and validate a problem from columns.

        ``fixed`` uses ``-1`` for "no fixed offset". ``conflicts`` holds pairs of buffer ids
        (or an ``(k, 2)`` integer array of row indices). Raises :class:`BufferTableError`
        naming the first offending buffer.
        """
        n = len(ids)
        id_t = tuple(str(x) for x in ids)
        cols = {
            "lower": _int_column(lower, n, "lower"),
            "upper": _int_column(upper, n, "upper"),
            "size": _int_column(size, n, "size"),
            "alignment": _int_column(alignment, n, "alignment"),
            "fixed": _int_column(-1 if fixed is None else fixed, n, "offset"),
        }
        if isinstance(memory, str):
            memories: tuple[str, ...] = (memory,) if n else ()
            mem = np.zeros(n, dtype=np.int64)
        else:
            if len(memory) != n:
                raise BufferTableError(f"memory column has {len(memory)} entries for {n} buffers")
            names: dict[str, int] = {}
            mem = np.array([names.setdefault(str(m), len(names)) for m in memory], np.int64)
            memories = tuple(names)
        prob = MemoryProblem(
            ids=id_t,
            lower=cols["lower"],
            upper=cols["upper"],
            size=cols["size"],
            alignment=cols["alignment"],
            fixed=cols["fixed"],
            memory=mem,
            memories=memories,
            conflicts=np.zeros((0, 2), dtype=np.int64),
            rank=None if rank is None else _int_column(rank, n, "rank"),
        )
        prob._validate()
        pairs = prob._conflict_rows(conflicts)
        object.__setattr__(prob, "conflicts", pairs)
        for a in (prob.lower, prob.upper, prob.size, prob.alignment, prob.fixed, prob.memory):
            a.setflags(write=False)
        if prob.rank is not None:
            prob.rank.setflags(write=False)
        pairs.setflags(write=False)
        return prob

    def _validate(self) -> None:
        if len(set(self.ids)) != len(self.ids):
            seen: set[str] = set()
            for b in self.ids:
                if b in seen:
                    raise BufferTableError(
                        f"buffer id {b!r} appears more than once; ids must be unique"
                    )
                seen.add(b)
        checks = [
            (self.lower >= self.upper, "lifetime [{lo}, {up}) is empty; need lower < upper"),
            (self.size < 0, "size {size} is negative"),
            (self.alignment < 1, "alignment {al} must be a positive integer"),
            (self.fixed < -1, "fixed offset {off} is negative"),
            (
                (self.fixed >= 0) & (self.fixed % np.maximum(self.alignment, 1) != 0),
                "fixed offset {off} is not a multiple of its alignment {al}",
            ),
        ]
        for bad, msg in checks:
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                text = msg.format(
                    lo=int(self.lower[i]),
                    up=int(self.upper[i]),
                    size=int(self.size[i]),
                    al=int(self.alignment[i]),
                    off=int(self.fixed[i]),
                )
                raise BufferTableError(f"buffer {self.ids[i]!r}: {text}")

    def _conflict_rows(self, conflicts: Iterable[tuple[str, str]] | np.ndarray) -> np.ndarray:
        n = len(self)
        if isinstance(conflicts, np.ndarray):
            arr = conflicts.astype(np.int64).reshape(-1, 2)
            if arr.size and (arr.min() < 0 or arr.max() >= n):
                raise BufferTableError(f"conflict row index out of range 0..{n - 1}")
        else:
            rows = []
            for a, b in conflicts:
                ia, ib = self.index.get(str(a)), self.index.get(str(b))
                if ia is None or ib is None:
                    missing = a if ia is None else b
                    raise BufferTableError(
                        f"conflict ({a!r}, {b!r}) names unknown buffer {missing!r}"
                    )
                rows.append((ia, ib))
            arr = np.array(rows, dtype=np.int64).reshape(-1, 2)
        if (arr[:, 0] == arr[:, 1]).any():
            i = int(arr[arr[:, 0] == arr[:, 1]][0, 0])
            raise BufferTableError(f"conflict of buffer {self.ids[i]!r} with itself")
        # Buffers of different memories never share addresses, so such a conflict is moot.
        arr = arr[self.memory[arr[:, 0]] == self.memory[arr[:, 1]]]
        arr = np.sort(arr, axis=1)
        return np.unique(arr, axis=0) if len(arr) else arr


def _int_column(values: object, n: int, name: str) -> np.ndarray:
    if isinstance(values, int | np.integer):
        return np.full(n, int(values), dtype=np.int64)
    arr = np.asarray(values)
    if arr.shape != (n,):
        raise BufferTableError(f"{name} column has shape {arr.shape}, expected ({n},)")
    integral = np.issubdtype(arr.dtype, np.integer) or (
        np.issubdtype(arr.dtype, np.floating) and bool(np.all(arr == np.round(arr)))
    )
    if n and not integral:
        raise BufferTableError(f"{name} column must hold integers")
    return np.array(arr, dtype=np.int64)
