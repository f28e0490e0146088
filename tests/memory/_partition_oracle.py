"""An independent oracle for global arena plans: random executions of the partitions.

It derives the dependencies from the partitions' tensors itself, draws executions a runtime may
pick (partitions in a random dependency order, random durations, one partition at a time per
unit, partitions on different units overlapping), and says when each buffer holds data in real
time: internal buffers while their partition runs (same-partition pairs by their TFLite steps),
a boundary buffer from its write (the producer's start; 0 for model inputs; the producer's end
for a copy into another memory) until its last reader in that memory (any reader for the
producer's side) has finished, model outputs until after the run. Two buffers of one memory
that ever hold data at the same time must not share bytes.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from edgepart.memory.partitioned import PartitionedBuffers

END = 1e18


def _deps(pb: PartitionedBuffers) -> list[set[int]]:
    producer: dict[int, int] = {}
    for k, p in enumerate(pb.partitions):
        for t in p.outputs:
            producer.setdefault(p.global_id(t), k)
    deps = []
    for k, p in enumerate(pb.partitions):
        d = {producer[p.global_id(t)] for t in p.inputs if p.global_id(t) in producer}
        deps.append(d - {k})
    return deps


def executions(pb: PartitionedBuffers, n: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n`` random executions as ``(start, end)`` times per partition."""
    rng = np.random.default_rng(seed)
    deps = _deps(pb)
    nq = len(pb.partitions)
    out = []
    for _ in range(n):
        done: set[int] = set()
        order = []
        while len(order) < nq:
            ready = [k for k in range(nq) if k not in done and deps[k] <= done]
            k = int(rng.choice(ready))
            order.append(k)
            done.add(k)
        start, end = np.zeros(nq), np.zeros(nq)
        free: dict[str, float] = {}
        for k in order:
            unit = pb.partitions[k].unit
            s = max([free.get(unit, 0.0), *(end[d] for d in deps[k])])
            start[k], end[k] = s, s + rng.uniform(0.5, 2.0)
            free[unit] = end[k]
        out.append((start, end))
    return out


def _intervals(
    pb: PartitionedBuffers, start: np.ndarray, end: np.ndarray, outs: set[int]
) -> np.ndarray:
    """Real-time ``[from, to)`` per global buffer."""
    prob = pb.problem
    pid = {p.id: k for k, p in enumerate(pb.partitions)}
    producer: dict[int, int] = {}
    readers: dict[int, list[int]] = {}
    for k, p in enumerate(pb.partitions):
        for t in p.outputs:
            producer.setdefault(p.global_id(t), k)
        for t in p.inputs:
            readers.setdefault(p.global_id(t), []).append(k)
    out = np.zeros((len(prob), 2))
    for i, info in enumerate(pb.info):
        mem = prob.memories[int(prob.memory[i])]
        if info.scope == "partition":
            k = pid[str(info.partition)]
            variable = bool(pb.partitions[k].subgraph.tensor_is_variable[info.tensor])
            out[i] = (0.0, END) if variable else (start[k], end[k])
            continue
        t = info.tensor
        pk = producer.get(t, -1)
        src = pb.partitions[pk].memory if pk >= 0 else pb.host_memory
        rs = readers.get(t, [])
        if mem == src:
            lo = start[pk] if pk >= 0 else 0.0
            hi = max([end[c] for c in rs] + ([end[pk]] if pk >= 0 else [0.0]))
        else:
            lo = end[pk] if pk >= 0 else 0.0
            hi = max([end[c] for c in rs if pb.partitions[c].memory == mem] + [lo])
        if t in outs and (mem == pb.host_memory or mem == src):
            hi = END
        out[i] = (lo, hi)
    return out


def violations(
    pb: PartitionedBuffers,
    offsets: Mapping[str, int],
    runs: list[tuple[np.ndarray, np.ndarray]],
    model_outputs: set[int],
) -> list[tuple[str, str]]:
    """Pairs of buffers sharing bytes although some execution has both holding data."""
    prob = pb.problem
    off = np.array([offsets[b] for b in prob.ids], dtype=np.int64)
    end_b = off + prob.size
    live = [_intervals(pb, s, e, model_outputs) for s, e in runs]
    bad = []
    n = len(prob)
    for i in range(n):
        if not prob.size[i]:
            continue
        for j in range(i + 1, n):
            if not prob.size[j] or prob.memory[i] != prob.memory[j]:
                continue
            if not (off[i] < end_b[j] and off[j] < end_b[i]):
                continue
            a, b = pb.info[i], pb.info[j]
            if a.scope == b.scope == "partition" and a.partition == b.partition:
                together = prob.lower[i] < prob.upper[j] and prob.lower[j] < prob.upper[i]
            else:
                together = any(iv[i, 0] < iv[j, 1] and iv[j, 0] < iv[i, 1] for iv in live)
            if together:
                bad.append((prob.ids[i], prob.ids[j]))
    return bad
