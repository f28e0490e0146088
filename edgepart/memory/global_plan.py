"""Plans of a partitioned model: per-partition arenas, the global arena, and ``arena.json``.

:func:`plan_partitioned` plans every per-partition problem and the global problem of a
:class:`~edgepart.memory.partitioned.PartitionedBuffers` with :func:`~edgepart.memory.plan_arena`
(each plan verified by :func:`~edgepart.memory.check_plan`; the global one against its explicit
concurrency conflicts too) and compares them per memory (:meth:`PartitionedPlan.memories`).
:func:`arena_document` turns the global plan into the bundle's ``arena.json`` document
(format ``edgepart-bundle-arena``, ``docs/bundle.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgepart.memory.arena import DEFAULT_TIME_LIMIT, ArenaPlan, plan_arena
from edgepart.memory.partitioned import PartitionedBuffers

__all__ = [
    "ARENA_FORMAT",
    "MemoryComparison",
    "PartitionedPlan",
    "arena_document",
    "plan_global",
    "plan_partitioned",
]

ARENA_FORMAT = "edgepart-bundle-arena"


@dataclass(frozen=True)
class MemoryComparison:
    """One memory: the per-partition arenas it holds (summed) against the global arena.

    ``partitions`` counts the partitions whose processor uses this memory; a memory holding
    only staging copies (model inputs/outputs, transfers) has none. ``shared`` is true when
    two or more partitions use it (their arenas can share bytes in the global plan).
    """

    memory: str
    partitions: int
    per_partition_size: int
    per_partition_bound: int
    global_size: int
    global_bound: int

    @property
    def shared(self) -> bool:
        """Two or more partitions use this memory."""
        return self.partitions >= 2

    @property
    def saving(self) -> float:
        """``1 - global / sum of per-partition`` (0 when there is no per-partition arena)."""
        if not self.per_partition_size:
            return 0.0
        return 1.0 - self.global_size / self.per_partition_size


@dataclass(frozen=True)
class PartitionedPlan:
    """The per-partition plans (by partition id) and the global plan."""

    buffers: PartitionedBuffers
    partition_plans: dict[str, ArenaPlan]
    global_plan: ArenaPlan

    def memories(self) -> list[MemoryComparison]:
        """Per memory (sorted by name): summed per-partition arenas and the global arena."""
        count: dict[str, int] = {}
        size: dict[str, int] = {}
        bound: dict[str, int] = {}
        for p in self.buffers.partitions:
            count[p.memory] = count.get(p.memory, 0) + 1
            for name, a in self.partition_plans[p.id].arenas.items():
                size[name] = size.get(name, 0) + a.size
                bound[name] = bound.get(name, 0) + a.lower_bound
        g = self.global_plan.arenas
        return [
            MemoryComparison(
                memory=m,
                partitions=count.get(m, 0),
                per_partition_size=size.get(m, 0),
                per_partition_bound=bound.get(m, 0),
                global_size=g[m].size if m in g else 0,
                global_bound=g[m].lower_bound if m in g else 0,
            )
            for m in sorted(set(count) | set(g))
        ]


def plan_global(
    pb: PartitionedBuffers,
    *,
    strategy: str = "search",
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    node_limit: int | None = None,
) -> ArenaPlan:
    """The global plan of ``pb`` (one arena per memory), with its concurrency bounds."""
    return plan_arena(
        pb.problem,
        strategy=strategy,
        time_limit=time_limit,
        node_limit=node_limit,
        lower_bounds=pb.floors,
    )


def plan_partitioned(
    pb: PartitionedBuffers,
    *,
    strategy: str = "search",
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    node_limit: int | None = None,
) -> PartitionedPlan:
    """Plan every partition alone and all of them together.

    Parameters
    ----------
    pb
        The buffers (:func:`~edgepart.memory.partitioned.partitioned_buffers`).
    strategy, time_limit, node_limit
        As for :func:`~edgepart.memory.plan_arena`; the time limit applies to each plan.
    """
    per = {
        p.id: plan_arena(prob, strategy=strategy, time_limit=time_limit, node_limit=node_limit)
        for p, prob in zip(pb.partitions, pb.partition_problems, strict=True)
    }
    glob = plan_global(pb, strategy=strategy, time_limit=time_limit, node_limit=node_limit)
    return PartitionedPlan(pb, per, glob)


def arena_document(pb: PartitionedBuffers, plan: ArenaPlan, strategy: str) -> dict[str, Any]:
    """The ``arena.json`` document of a global plan of ``pb``.

    Buffers in problem order (internal buffers partition by partition, then boundary buffers,
    the producer's memory first: the runtime stages into a tensor's first boundary buffer).
    ``strategy`` is recorded as free text.
    """
    doc: dict[str, Any] = {
        "format": ARENA_FORMAT,
        "version": 1,
        "strategy": strategy,
        "alignment": pb.alignment,
        "memories": {},
        "buffers": [],
    }
    prob = pb.problem
    if not len(prob):
        doc["memories"][pb.host_memory] = {"size": 0, "lower_bound": 0}
        return doc
    for name, a in sorted(plan.arenas.items()):
        doc["memories"][name] = {
            "size": a.size,
            "lower_bound": a.lower_bound,
            "naive": a.naive,
            "method": a.method,
        }
    for i, info in enumerate(pb.info):
        bid = prob.ids[i]
        doc["buffers"].append(
            {
                "tensor": info.tensor,
                "scope": info.scope,
                "partition": info.partition,
                "memory": prob.memories[int(prob.memory[i])],
                "offset": int(plan.offsets[bid]),
                "size": int(prob.size[i]),
                "lifetime": [int(prob.lower[i]), int(prob.upper[i])],
            }
        )
    return doc
