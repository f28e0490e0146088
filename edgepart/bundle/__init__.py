"""Deployable bundles: a directory with a plan, one ``.tflite`` per partition, an optional arena
plan, a report and a manifest with checksums (format reference: ``docs/bundle.md``).

Write one with :func:`write_bundle` (the partitioner's apply step), read one with
:func:`load_bundle` (verifies schemas and checksums), run one with
:class:`edgepart.runtime.PartitionedInterpreter`.
"""

from __future__ import annotations

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
from edgepart.bundle.staging_arena import HOST_MEMORY, plan_boundary_arena
from edgepart.bundle.write import RESERVED_PLAN_KEYS, PartitionSpec, build_bundle, write_bundle

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
    "plan_boundary_arena",
    "plan_from_doc",
    "write_bundle",
]
