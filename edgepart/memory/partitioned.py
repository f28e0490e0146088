"""Buffers of a partitioned model: per-partition arenas and one global arena per memory.

A partitioned model runs as partitions (given in a dependency order), each on a processor unit
(``"cpu:0"``: partitions on one unit never run at the same time) whose processor uses one memory
(a memory domain of the device profile; processors sharing DRAM name the same memory). Two kinds
of plans are built from the same lifetimes:

*Per-partition* problems: each partition alone, as its own TFLite interpreter plans it
(:func:`~edgepart.memory.lifetimes.tflite_lifetimes` over its ops in execution order, in-place
sharing included; its inputs and outputs live for its whole run, variables too; ``rank`` keeps
TFLite's allocation order). Summed per memory, they are what separate arenas cost.

The *global* problem: one arena per memory for all partitions together.

- *Timeline.* Partitions in the given order each get a block of steps; inside a block, a
  partition's own tensors keep their TFLite lifetimes.
- *Internal buffers* (scope ``partition``) are a partition's tensors other than its inputs and
  outputs, in its memory (variables live for the whole timeline).
- *Boundary buffers* (scope ``boundary``) hold the tensors handed between partitions, model
  inputs and model outputs: one buffer in the producer's memory (the host's for model inputs)
  and one in every other memory that reads it (the copy over the link); processors sharing a
  memory share the buffer. A buffer stays intact from its write (during the producer's run,
  which may be under a delegate that writes its outputs at any time; before anything for model
  inputs; after the producer has finished for a copy) until its last reader in that memory has
  run (the source side: until every reader has run), whatever order the runtime picks, so its
  lifetime covers the blocks of every partition that may run meanwhile: all but those finished
  before the write and those starting after all those readers. Model outputs live to the end.
- *Concurrency.* Two partitions on different units that no dependency orders may run at the
  same time: every internal buffer of one conflicts with every internal buffer of the other
  when they share a memory (explicit conflicts; each keeps its own reuse over time). Pairs of
  boundary buffers that may be live together by the dependency rule of the bundle format
  (:meth:`edgepart.bundle.plan_graph.PlanGraph.conflict`) but whose lifetimes are apart get an
  explicit conflict too.
- *Bound.* Besides the live-bytes sweep, partitions that may all run at once add a bound: each
  one's internal peak set, stacked (``floors``); plans take the larger bound.

Plans and the ``arena.json`` document: :mod:`edgepart.memory.global_plan`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from edgepart.ir.graph import Subgraph
from edgepart.memory._concurrency import Dag, bits, concurrency_floors
from edgepart.memory.lifetimes import Lifetimes, tflite_lifetimes
from edgepart.memory.problem import DEFAULT_ALIGNMENT, MemoryProblem

__all__ = ["BufferInfo", "PartitionTensors", "PartitionedBuffers", "partitioned_buffers"]


@dataclass(frozen=True)
class PartitionTensors:
    """What the planner needs of one partition.

    ``inputs``/``outputs`` are tensors of ``subgraph`` the partition reads from outside (model
    inputs, other partitions' outputs) and writes for others or as model outputs;
    ``tensor_ids`` maps them to model-wide tensor ids (``None``: ``subgraph`` is the source
    subgraph, ids are its indices). ``ops`` are ``subgraph`` ops in execution order.
    """

    id: str
    unit: str
    memory: str
    subgraph: Subgraph
    ops: tuple[int, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    tensor_ids: Mapping[int, int] | None = None

    def global_id(self, t: int) -> int:
        """Model-wide id of boundary tensor ``t`` of this partition's subgraph."""
        return t if self.tensor_ids is None else int(self.tensor_ids[t])


@dataclass(frozen=True)
class BufferInfo:
    """What a global buffer holds: ``tensor`` is the model-wide id for scope ``boundary`` and
    the index in the owning partition's subgraph for scope ``partition``."""

    tensor: int
    scope: str
    partition: str | None


@dataclass(frozen=True, eq=False)
class PartitionedBuffers:
    """The global problem, its per-row :class:`BufferInfo`, and the per-partition problems.

    ``partition_problems[k]`` has one buffer per arena tensor of partition ``k`` (ids
    ``"<id>:t<i>"``, ``i`` = index in its subgraph, listed in ``partition_tensors[k]``).
    ``concurrent`` lists the pairs of
    partition positions that may run at the same time; ``floors`` the concurrency bound per
    memory (0 where none applies).
    """

    partitions: tuple[PartitionTensors, ...]
    host_memory: str
    problem: MemoryProblem
    info: tuple[BufferInfo, ...]
    partition_problems: tuple[MemoryProblem, ...]
    partition_tensors: tuple[np.ndarray, ...]
    concurrent: tuple[tuple[int, int], ...]
    floors: Mapping[str, int]
    alignment: int = DEFAULT_ALIGNMENT


def partitioned_buffers(
    parts: Sequence[PartitionTensors],
    *,
    host_memory: str,
    model_outputs: Sequence[int] = (),
    alignment: int = DEFAULT_ALIGNMENT,
) -> PartitionedBuffers:
    """Per-partition and global buffers of ``parts`` (in a dependency order).

    Parameters
    ----------
    parts
        The partitions; a tensor read by a partition and written by none is a model input.
    host_memory
        The memory holding model inputs and outputs (the host CPU's).
    model_outputs
        Model-wide ids of the model outputs.
    alignment
        Alignment of every buffer.
    """
    lts = [
        tflite_lifetimes(p.subgraph, list(p.ops), inputs=list(p.inputs), outputs=list(p.outputs))
        for p in parts
    ]
    dag = Dag(parts)
    span = [lt.horizon + 1 for lt in lts]
    start = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(span, out=start[1:])
    rows = _Rows(alignment)
    internal = [
        _internal_rows(rows, k, p, lt, int(start[k]), int(start[-1]))
        for k, (p, lt) in enumerate(zip(parts, lts, strict=True))
    ]
    bmeta = _boundary_rows(rows, parts, dag, start, span, host_memory, set(model_outputs))
    concurrent = dag.concurrent_pairs()
    pairs = [_boundary_conflicts(rows, bmeta, dag)]
    for k, r in concurrent:
        if parts[k].memory == parts[r].memory and len(internal[k]) and len(internal[r]):
            a, b = np.meshgrid(internal[k], internal[r], indexing="ij")
            pairs.append(np.stack([a.ravel(), b.ravel()], axis=1))
    problem = MemoryProblem.from_arrays(
        ids=rows.ids,
        lower=rows.lower,
        upper=rows.upper,
        size=rows.size,
        alignment=alignment,
        memory=rows.memory,
        conflicts=np.concatenate(pairs).astype(np.int64),
    )
    return PartitionedBuffers(
        partitions=tuple(parts),
        host_memory=host_memory,
        problem=problem,
        info=tuple(rows.info),
        partition_problems=tuple(
            _partition_problem(p, lt, alignment) for p, lt in zip(parts, lts, strict=True)
        ),
        partition_tensors=tuple(lt.tensors for lt in lts),
        concurrent=tuple(concurrent),
        floors=concurrency_floors(parts, lts, concurrent, rows, start),
        alignment=alignment,
    )


class _Rows:
    """Columns of the global problem as they are appended."""

    def __init__(self, alignment: int) -> None:
        self.alignment = alignment
        self.ids: list[str] = []
        self.lower: list[int] = []
        self.upper: list[int] = []
        self.size: list[int] = []
        self.memory: list[str] = []
        self.info: list[BufferInfo] = []

    def add(self, bid: str, lo: int, hi: int, size: int, memory: str, info: BufferInfo) -> int:
        self.ids.append(bid)
        self.lower.append(lo)
        self.upper.append(max(hi, lo + 1))
        self.size.append(size)
        self.memory.append(memory)
        self.info.append(info)
        return len(self.ids) - 1


def _internal_rows(
    rows: _Rows, k: int, p: PartitionTensors, lt: Lifetimes, start: int, horizon: int
) -> np.ndarray:
    """Append partition ``k``'s internal buffers on its block; return their rows."""
    boundary = set(p.inputs) | set(p.outputs)
    out = []
    for t, lo, hi, size, pers in zip(
        lt.tensors.tolist(),
        lt.lower.tolist(),
        lt.upper.tolist(),
        lt.nbytes.tolist(),
        lt.persistent.tolist(),
        strict=True,
    ):
        if t in boundary:
            continue
        lo2, hi2 = (0, horizon) if pers else (start + lo, start + hi)
        info = BufferInfo(t, "partition", p.id)
        out.append(rows.add(f"{p.id}:t{t}", lo2, hi2, int(size), p.memory, info))
    return np.asarray(out, dtype=np.int64)


def _boundary_rows(
    rows: _Rows,
    parts: Sequence[PartitionTensors],
    dag: Dag,
    start: np.ndarray,
    span: list[int],
    host: str,
    outs: set[int],
) -> list[tuple[int, int, int, int]]:
    """Append the boundary buffers (source side first, then one per reading memory, then the
    host's copy of a model output); return ``(row, tensor, producer, readers)`` per buffer.

    A source-side buffer covers its producer's whole block (a delegate may write an output at
    any time during its run); a copy is made after its producer has finished, so it does not
    cover the producer's block."""
    horizon = int(start[-1])
    nbytes: dict[int, int] = {}
    for p in parts:
        for t in (*p.inputs, *p.outputs):
            nbytes[p.global_id(t)] = int(p.subgraph.tensor_nbytes[t])
    written = {t for p in parts for t in map(p.global_id, p.outputs)}
    out = []
    for t in sorted(set(dag.readers) | written):
        pk = dag.producer.get(t, -1)
        src = parts[pk].memory if pk >= 0 else host
        by_mem: dict[str, int] = {}
        for c in dag.readers.get(t, []):
            by_mem[parts[c].memory] = by_mem.get(parts[c].memory, 0) | (1 << c)
        every = 0
        for mask in by_mem.values():
            every |= mask
        mems = [src, *sorted(m for m in by_mem if m != src)]
        if t in outs and host not in mems:
            mems.append(host)
        for m in mems:
            # the source copy lasts until every copy is made, i.e. as long as any reader
            cons = every if m == src else by_mem.get(m, 0)
            ks = bits(dag.live_mask(pk, cons))
            if pk >= 0 and m != src:
                ks = [q for q in ks if q != pk]
            if not ks:  # a model output's host copy, made once its producer has finished
                lo = hi = int(start[pk + 1])
            else:
                lo = int(start[ks[0]])
                hi = max(int(start[q]) + span[q] for q in ks)
            if pk < 0:
                lo = 0
            if t in outs and m in (host, src):
                # read after the run; the producer's side until its host copy, made any time
                hi = horizon
            row = rows.add(f"b:{m}:t{t}", lo, hi, nbytes[t], m, BufferInfo(t, "boundary", None))
            out.append((row, t, pk, cons))
    return out


def _boundary_conflicts(
    rows: _Rows, bmeta: list[tuple[int, int, int, int]], dag: Dag
) -> np.ndarray:
    """Row pairs of boundary buffers of one memory that may be live together by the
    dependency rule although their lifetimes on the block timeline are apart."""
    out = []
    for x, (i, ti, pi, ci) in enumerate(bmeta):
        for j, tj, pj, cj in bmeta[x + 1 :]:
            if rows.memory[i] != rows.memory[j] or not rows.size[i] or not rows.size[j]:
                continue
            if rows.lower[i] < rows.upper[j] and rows.lower[j] < rows.upper[i]:
                continue  # the timeline already separates them in memory
            if ti == tj:
                continue
            a, b = (ti, pi, ci), (tj, pj, cj)
            if not dag.precedes(a, b) and not dag.precedes(b, a):
                out.append((i, j))
    return np.asarray(out, dtype=np.int64).reshape(-1, 2)


def _partition_problem(p: PartitionTensors, lt: Lifetimes, alignment: int) -> MemoryProblem:
    """Partition ``p`` alone, as its own TFLite interpreter plans it."""
    return MemoryProblem.from_arrays(
        ids=[f"{p.id}:t{t}" for t in lt.tensors.tolist()],
        lower=lt.lower,
        upper=lt.upper,
        size=lt.nbytes,
        alignment=alignment,
        memory=p.memory,
        rank=lt.rank,
    )
