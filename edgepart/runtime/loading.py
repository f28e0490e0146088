"""Where a partitioned interpreter's bundle comes from, and checking partition files against it."""

from __future__ import annotations

from typing import Any

import numpy as np

from edgepart.bundle.format import Bundle, Plan
from edgepart.bundle.load import load_bundle
from edgepart.bundle.write import PartitionSpec, build_bundle
from edgepart.errors import BundleError, UsageError

__all__ = ["check_partition_io", "resolve_bundle"]


def resolve_bundle(path: Any, bundle: Bundle | None, model: Any, plan: Any) -> Bundle:
    """The bundle from a path, a loaded bundle, or a model plus a plan (built in memory)."""
    given = [x is not None for x in (path, bundle, model)]
    if sum(given) != 1 or (model is None) != (plan is None):
        raise UsageError("give exactly one of: a bundle path, bundle=, or model= with plan=")
    if bundle is not None:
        return bundle
    if path is not None:
        return load_bundle(path)
    if isinstance(plan, Plan):
        plan = [
            PartitionSpec(
                ops=p.ops,
                processor=p.processor,
                unit=p.unit,
                delegate=p.delegate,
                executor=p.executor,
                id=p.id,
                threads=p.threads,
            )
            for p in plan.partitions
        ]
    return build_bundle(model, plan)


def check_partition_io(it: Any, entry: Any) -> None:
    """The partition file must have exactly the inputs and outputs the plan says."""
    for side, refs, got in (
        ("input", entry.inputs, it.get_input_details()),
        ("output", entry.outputs, it.get_output_details()),
    ):
        have = [
            (d["index"], np.dtype(d["dtype"]).name, tuple(int(x) for x in d["shape"])) for d in got
        ]
        want = [(r.index, r.dtype, r.shape) for r in refs]
        if have != want:
            raise BundleError(
                f"{entry.file}: its {side}s {have[:3]} do not match plan.json {want[:3]}; "
                "the partition file and the plan are from different bundles"
            )
