"""Deployable bundles: a directory with a plan, one ``.tflite`` per partition, an optional arena
plan, a report and a manifest with checksums (format reference: ``docs/bundle.md``).

Build one in memory with :func:`build_bundle` and write it with :func:`save_bundle` (or both at
once with :func:`write_bundle`), read one with :func:`load_bundle` (verifies schemas and
checksums), run one with :class:`edgepart.runtime.PartitionedInterpreter`. Arenas across
partitions are planned by :func:`plan_bundle_arena`, the one entry point for them.
"""

from __future__ import annotations

from edgepart.bundle.arena_plan import HOST_MEMORY, BundleArena, plan_bundle_arena
from edgepart.bundle.format import (
    ARENA_FORMAT,
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    EXECUTOR_KINDS,
    PLAN_FORMAT,
    Arena,
    ArenaBuffer,
    Bundle,
    ExecutorSpec,
    ModelTensor,
    PartitionEntry,
    Plan,
    TensorRef,
    arena_from_doc,
    plan_from_doc,
)
from edgepart.bundle.load import load_bundle
from edgepart.bundle.plan_graph import PlanGraph
from edgepart.bundle.write import (
    RESERVED_PLAN_KEYS,
    PartitionSpec,
    build_bundle,
    save_bundle,
    write_bundle,
)

__all__ = [
    "ARENA_FORMAT",
    "BUNDLE_FORMAT",
    "BUNDLE_VERSION",
    "EXECUTOR_KINDS",
    "HOST_MEMORY",
    "PLAN_FORMAT",
    "RESERVED_PLAN_KEYS",
    "Arena",
    "ArenaBuffer",
    "Bundle",
    "BundleArena",
    "ExecutorSpec",
    "ModelTensor",
    "PartitionEntry",
    "PartitionSpec",
    "Plan",
    "PlanGraph",
    "TensorRef",
    "arena_from_doc",
    "build_bundle",
    "load_bundle",
    "plan_bundle_arena",
    "plan_from_doc",
    "save_bundle",
    "write_bundle",
]
