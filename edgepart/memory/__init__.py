"""Static memory planning: where every intermediate tensor lives in its memory's arena.

Build a :class:`MemoryProblem` (buffers with half-open lifetimes, sizes, alignments, optional
fixed offsets, per-memory arenas and explicit extra conflicts), call :func:`plan_arena`, and
verify any plan with :func:`check_plan`. :func:`lower_bound` gives the bound every plan is
measured against. For a ``.tflite`` model, :func:`edgepart.memory.model.model_buffers` builds
the problem with TFLite's lifetime rules (:mod:`edgepart.memory.lifetimes`).

Plans across partitions use the same problem type; the integrator provides:

- one execution order over all ops of all partitions (a *shared timeline*); partitions that run
  at the same time on different processors either interleave on that timeline or add their
  buffers' pairs to ``conflicts``;
- one buffer per tensor per memory: tensors inside a partition live on its part of the
  timeline (``tflite_lifetimes(sg, order, inputs=..., outputs=...)`` gives TFLite's lifetimes
  of one partition); a boundary tensor is one buffer from its producer to its last consumer
  partition where the processors share memory, or a source-side and a destination-side buffer
  (in the two memories, meeting at the copy) where they do not;
- ``memory`` = the arena of the processor memory (shared DRAM = one name), optional
  ``capacity`` per memory, ``fixed`` offsets for pre-placed I/O or DMA buffers.
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
from edgepart.memory.bounds import ArenaBound, arena_bounds, lower_bound
from edgepart.memory.check import check_plan
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
