"""Static memory planning: where every intermediate tensor lives in its memory's arena.

Build a :class:`MemoryProblem` (buffers with half-open lifetimes, sizes, alignments, optional
fixed offsets, per-memory arenas and explicit extra conflicts), call :func:`plan_arena`, and
verify any plan with :func:`check_plan`. :func:`lower_bound` gives the bound every plan is
measured against. For a ``.tflite`` model,
:func:`edgepart.memory.model_problem.model_buffers` builds the problem with TFLite's
lifetime rules (:mod:`edgepart.memory.lifetimes`).

Plans across partitions (:mod:`edgepart.memory.partitioned`, :mod:`edgepart.memory.global_plan`):
describe each partition (its ops, the tensors it reads and writes, its unit and memory) with
``PartitionTensors``; ``partitioned_buffers`` builds every partition's own problem and the global
problem (one arena per memory; partitions on a shared timeline, boundary tensors as one buffer
per memory, concurrent partitions as explicit conflicts, a concurrency lower bound), and
``plan_partitioned`` plans and compares them. The entry point for a bundle (its ``arena.json``,
or ``plan-memory`` on a bundle directory) is :func:`edgepart.bundle.plan_bundle_arena`.
"""

from __future__ import annotations

from edgepart.memory.arena import (
    DEFAULT_TIME_LIMIT,
    PORTFOLIO,
    STRATEGIES,
    ArenaPlan,
    ArenaResult,
    get_strategy,
    plan_arena,
    register_strategy,
)
from edgepart.memory.arena_check import check_plan
from edgepart.memory.bounds import ArenaBound, arena_bounds, lower_bound
from edgepart.memory.problem import DEFAULT_ALIGNMENT, DEFAULT_MEMORY, Buffer, MemoryProblem

__all__ = [
    "DEFAULT_ALIGNMENT",
    "DEFAULT_MEMORY",
    "DEFAULT_TIME_LIMIT",
    "PORTFOLIO",
    "STRATEGIES",
    "ArenaBound",
    "ArenaPlan",
    "ArenaResult",
    "Buffer",
    "MemoryProblem",
    "arena_bounds",
    "check_plan",
    "get_strategy",
    "lower_bound",
    "plan_arena",
    "register_strategy",
]
