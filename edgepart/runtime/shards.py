"""Tensor-parallel splits as the runtime sees them: which partitions hold one layer's shards, and
whether the dispatcher runs them at the same time.

The shards of a split are ordinary partitions (``plan.json`` version 2 names them,
:mod:`edgepart.bundle.tensor_parallel`), so running them needs nothing new: the concurrent
dispatcher (:mod:`edgepart.runtime.dispatch`) gives every unit a worker, and partitions on
different units with no dependency between them run at once. :func:`shard_groups` says, per
split, whether that holds for its shards; :func:`shard_overlap` measures it in a timeline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edgepart.bundle.format import Plan
from edgepart.runtime.routing import Routes

__all__ = ["ShardGroup", "shard_groups", "shard_overlap"]


@dataclass(frozen=True)
class ShardGroup:
    """One split's shards at run time.

    ``partitions`` and ``units`` list the shards' partitions (one per shard; a partition may
    hold several shards) and their units; ``concurrent`` is true when the dispatcher runs them
    at the same time (distinct units, no dependency between them, concurrent dispatch on);
    ``collective`` names the all-gather or all-reduce and where it runs.
    """

    split: str
    layer: str
    mode: str
    partitions: tuple[str, ...]
    units: tuple[str, ...]
    concurrent: bool
    collective: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "layer": self.layer,
            "mode": self.mode,
            "partitions": list(self.partitions),
            "units": list(self.units),
            "concurrent": self.concurrent,
            "collective": self.collective,
        }


def shard_groups(plan: Plan, routes: Routes, parallel: bool) -> list[ShardGroup]:
    """The shard groups of ``plan``'s splits (empty for a plan without splits)."""
    pos = {p.id: k for k, p in enumerate(plan.partitions)}
    out = []
    for s in plan.splits:
        parts = tuple(dict.fromkeys(sh.partition for sh in s.shards))
        ks = [pos[p] for p in parts]
        units = tuple(plan.partitions[k].unit_name for k in ks)
        together = (
            parallel
            and len(set(units)) == len(units)
            and all(routes.graph.concurrent(a, b) for i, a in enumerate(ks) for b in ks[i + 1 :])
        )
        coll = next(c for c in plan.collectives if c.id == s.collective)
        out.append(
            ShardGroup(
                split=s.id,
                layer=f"{'+'.join(dict.fromkeys(s.op_names))} op {','.join(map(str, s.ops))}",
                mode=s.mode,
                partitions=parts,
                units=units,
                concurrent=bool(together) and len(parts) > 1,
                collective=f"{coll.kind.replace('_', '-')} in {coll.destination[0]}",
            )
        )
    return out


def shard_overlap(group: ShardGroup, timeline: Mapping[str, Any]) -> float | None:
    """Seconds during which every shard partition of ``group`` was running at once in a
    measured timeline (``PartitionSpan`` per partition id); 0 when they never all overlapped,
    ``None`` without timings."""
    spans = [timeline.get(p) for p in group.partitions]
    if any(s is None for s in spans) or len(spans) < 2:
        return None
    start = max(float(s.start_s) for s in spans)  # type: ignore[union-attr]
    end = min(float(s.end_s) for s in spans)  # type: ignore[union-attr]
    return max(0.0, end - start)
