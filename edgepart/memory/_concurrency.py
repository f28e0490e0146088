"""Partition dependencies, what may run concurrently, and the concurrency lower bound."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from edgepart.memory.bounds import sweep_bound

if TYPE_CHECKING:
    from edgepart.memory.lifetimes import Lifetimes
    from edgepart.memory.partitioned import PartitionTensors


class Rows(Protocol):
    """The global problem's columns (as :class:`edgepart.memory.partitioned._Rows` keeps them)."""

    alignment: int
    lower: list[int]
    upper: list[int]
    size: list[int]
    memory: list[str]


def bits(mask: int) -> list[int]:
    """Positions of the set bits of ``mask``, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class Dag:
    """Partition dependencies as bitsets (plan order is topological)."""

    def __init__(self, parts: Sequence[PartitionTensors]) -> None:
        self.parts = parts
        self.n = len(parts)
        self.full = (1 << self.n) - 1
        self.producer: dict[int, int] = {}
        self.readers: dict[int, list[int]] = {}
        for k, p in enumerate(parts):
            for t in p.outputs:
                self.producer.setdefault(p.global_id(t), k)
            for t in p.inputs:
                self.readers.setdefault(p.global_id(t), []).append(k)
        self.anc: list[int] = []  # strict ancestors
        for k, p in enumerate(parts):
            a = 0
            for t in p.inputs:
                q = self.producer.get(p.global_id(t))
                if q is not None and q != k:
                    a |= (1 << q) | self.anc[q]
            self.anc.append(a)
        self.desc = [0] * self.n  # strict descendants
        for k in range(self.n):
            for q in bits(self.anc[k]):
                self.desc[q] |= 1 << k

    def ordered(self, k: int, r: int) -> bool:
        return bool((self.anc[k] >> r) & 1 or (self.anc[r] >> k) & 1)

    def concurrent_pairs(self) -> list[tuple[int, int]]:
        """Pairs ``(k, r)``, ``k < r``, on different units with no dependency path."""
        return [
            (k, r)
            for k in range(self.n)
            for r in range(k + 1, self.n)
            if self.parts[k].unit != self.parts[r].unit and not self.ordered(k, r)
        ]

    def live_mask(self, pk: int, cons: int) -> int:
        """Partitions that may run while a buffer written by ``pk`` (-1: before the run) and
        read by ``cons`` is live: all but those finished before ``pk`` starts and those
        starting after every reader."""
        before = self.anc[pk] if pk >= 0 else 0
        after = self.full
        if not cons:
            after = self.desc[pk] if pk >= 0 else 0
        for c in bits(cons):
            after &= self.desc[c]
        keep = self.full & ~before & ~after
        if pk >= 0:
            keep |= 1 << pk
        return keep | cons

    def precedes(self, a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
        """Every reader of buffer ``a`` is ``b``'s producer or an ancestor of it (the bundle
        rule; model inputs are never preceded). Entries are ``(tensor, producer, readers)``."""
        pb = b[1]
        if pb < 0:
            return False
        return (a[2] & ~(self.anc[pb] | (1 << pb))) == 0


def concurrency_floors(
    parts: Sequence[PartitionTensors],
    lts: Sequence[Lifetimes],
    concurrent: Sequence[tuple[int, int]],
    rows: Rows,
    start: np.ndarray,
) -> dict[str, int]:
    """Per memory, the best bound from a group of pairwise concurrent partitions.

    Each member's internal buffers are shifted so that their peaks coincide; the buffers live
    at one shifted time are pairwise conflicting (same step inside a partition, explicit
    conflicts across), and so is every buffer whose lifetime covers all members' blocks
    (boundary buffers, variables). The sweep bound of that stack is a valid bound.
    """
    floors: dict[str, int] = {}
    adj: dict[int, set[int]] = {}
    for k, r in concurrent:
        if parts[k].memory == parts[r].memory:
            adj.setdefault(k, set()).add(r)
            adj.setdefault(r, set()).add(k)
    cols: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    peak: dict[int, int] = {}
    align = rows.alignment
    for k in adj:
        lt, p = lts[k], parts[k]
        keep = ~np.isin(lt.tensors, [*p.inputs, *p.outputs]) & ~lt.persistent
        lo, up, size = lt.lower[keep], lt.upper[keep], lt.nbytes[keep]
        lb, t = sweep_bound(lo, up, size, np.full(len(lo), align)) if len(lo) else (0, 0)
        cols[k], peak[k] = (lo - t, up - t, size), lb
    g_lo, g_up = np.asarray(rows.lower), np.asarray(rows.upper)
    g_size, g_mem = np.asarray(rows.size, dtype=np.int64), np.asarray(rows.memory)
    for k in sorted(adj, key=lambda q: (-peak[q], q)):
        group = [k]
        for r in sorted(adj[k], key=lambda q: (-peak[q], q)):
            if all(r in adj[g] for g in group):
                group.append(r)
        m = parts[k].memory
        first, last = int(start[min(group)]), int(start[max(group) + 1])
        cover = (g_mem == m) & (g_lo <= first) & (g_up >= last)
        lo = np.concatenate([cols[g][0] for g in group])
        up = np.concatenate([cols[g][1] for g in group])
        a, b = (int(lo.min()), int(up.max())) if len(lo) else (0, 1)
        n = int(cover.sum())
        lo = np.concatenate([lo, np.full(n, a)])
        up = np.concatenate([up, np.full(n, b)])
        size = np.concatenate([*(cols[g][2] for g in group), g_size[cover]])
        if len(lo):
            lb, _ = sweep_bound(lo, up, size, np.full(len(lo), align))
            floors[m] = max(floors.get(m, 0), lb)
    return floors
