"""The global memory plan of a partitioned model: one arena per memory domain of the profile.

The partitioner knows the partitions, where they run and what may run at the same time; the
memory planner (:mod:`edgepart.memory`) owns everything else: the buffers and their lifetimes
across partitions (:mod:`edgepart.memory.partitioned`: internal buffers on each partition's
block of a shared timeline, boundary buffers per memory domain, explicit conflicts between
partitions that may run concurrently), the offsets and the checker
(:mod:`edgepart.memory.global_plan`).

The planner's ``portfolio`` strategy without a time limit is deterministic, so the arena (and
the bundle) is byte-reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from edgepart.ir.graph import Subgraph
from edgepart.memory.global_plan import arena_document, plan_global
from edgepart.memory.partitioned import (
    PartitionedBuffers,
    PartitionTensors,
    partitioned_buffers,
)

__all__ = ["ArenaPartition", "arena_buffers", "global_arena"]

STRATEGY = "portfolio"


@dataclass(frozen=True)
class ArenaPartition:
    """What the arena planner needs of one partition (in plan order)."""

    id: str
    unit: str  # "cpu:0": partitions on one unit never run at the same time
    domain: str
    file_ops: tuple[int, ...]  # ops in the partition's file, execution order
    inputs: tuple[int, ...]  # tensors it reads from outside (model inputs or other partitions)
    outputs: tuple[int, ...]  # tensors it writes for others or as model outputs


def arena_buffers(
    sg: Subgraph,
    parts: Sequence[ArenaPartition],
    *,
    host_domain: str,
    model_outputs: Sequence[int] = (),
    alignment: int = 64,
) -> PartitionedBuffers:
    """Per-partition and global buffers of the partitioned model (no plan yet).

    ``sg`` is the source subgraph (tensor and op indices of ``parts`` refer to it); model inputs
    and outputs live in ``host_domain``. See :mod:`edgepart.memory.partitioned`.
    """
    return partitioned_buffers(
        [
            PartitionTensors(p.id, p.unit, p.domain, sg, p.file_ops, p.inputs, p.outputs)
            for p in parts
        ],
        host_memory=host_domain,
        model_outputs=model_outputs,
        alignment=alignment,
    )


def global_arena(
    sg: Subgraph,
    parts: Sequence[ArenaPartition],
    *,
    host_domain: str,
    model_outputs: Sequence[int] = (),
    alignment: int = 64,
) -> dict[str, Any]:
    """An ``arena.json`` document (format ``edgepart-bundle-arena``) for the partitioned model:
    the global plan of :func:`arena_buffers` by the deterministic ``portfolio`` strategy."""
    pb = arena_buffers(
        sg, parts, host_domain=host_domain, model_outputs=model_outputs, alignment=alignment
    )
    plan = plan_global(pb, strategy=STRATEGY, time_limit=None)
    return arena_document(pb, plan, f"edgepart-partition-global/{STRATEGY}")
