"""The tensor-parallel part of a plan (``plan.json`` version 2): splits and collectives.

A version-2 plan places the *split graph*: the source subgraph with each split of ``splits``
applied in order by :func:`edgepart.ir.split.split_model` (a pure, deterministic rewrite:
``ops``, ``mode`` and ``sizes`` of each entry reproduce it). Partition ops and tensors index
that graph; tensors of the source keep their indices, new ones follow them, so
:attr:`Plan.num_ops` counts the split graph's ops (``source.num_ops`` plus what the splits
added). ``collectives`` lists how data moves for each split: the input *broadcast* to the
shards' partitions, the *send/recv* of each shard's result to where the collective runs, and
the *all-gather* (CONCATENATION) or *all-reduce* (ADD chain) itself, each with its bytes, the
memory-domain links it crosses and its predicted cost. The collectives are TFLite ops in the
partition files and ordinary boundary tensors between partitions: a runtime that runs the
partitions runs them; these entries say which is which. ``docs/bundle.md`` has the field
reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from edgepart.errors import BundleError

if TYPE_CHECKING:
    from edgepart.bundle.format import Plan

__all__ = [
    "COLLECTIVE_KINDS",
    "CollectiveEntry",
    "SplitEntry",
    "SplitShard",
    "check_tensor_parallel",
    "collective_from_doc",
    "split_from_doc",
]

COLLECTIVE_KINDS = ("broadcast", "send_recv", "all_gather", "all_reduce")


@dataclass(frozen=True)
class SplitShard:
    """One shard of a split: its ops (split-graph indices), the tensor it hands to the
    collective, and the partition running its layer op."""

    ops: tuple[int, ...]
    output: int
    partition: str


@dataclass(frozen=True)
class SplitEntry:
    """One split of the plan (see the module docstring)."""

    id: str
    mode: str
    ops: tuple[int, ...]  # anchor ops of the source subgraph (the rewrite's arguments)
    sizes: tuple[int, ...]
    source_ops: tuple[int, ...]  # source ops the split replaced
    op_names: tuple[str, ...]
    shards: tuple[SplitShard, ...]
    collective: str  # id of the all-gather / all-reduce entry
    collective_ops: tuple[int, ...]
    output: int
    exact: bool
    reason: str
    predicted: Mapping[str, Any] | None

    @property
    def added_ops(self) -> int:
        """Ops the split adds to the graph (its new ops minus the source ops it replaced)."""
        return (
            sum(len(s.ops) for s in self.shards) + len(self.collective_ops) - len(self.source_ops)
        )

    def to_doc(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "mode": self.mode,
            "ops": list(self.ops),
            "sizes": list(self.sizes),
            "source_ops": list(self.source_ops),
            "op_names": list(self.op_names),
            "shards": [
                {"ops": list(s.ops), "output": s.output, "partition": s.partition}
                for s in self.shards
            ],
            "collective": self.collective,
            "collective_ops": list(self.collective_ops),
            "output": self.output,
            "exact": self.exact,
            "reason": self.reason,
            "predicted": None if self.predicted is None else dict(self.predicted),
        }


@dataclass(frozen=True)
class CollectiveEntry:
    """One collective of a split.

    ``source`` sends (broadcast, send/recv; ``None``: a model input) or, for an all-gather or
    all-reduce, the partitions whose shards feed it; ``destination`` receives, or runs the
    all-gather/all-reduce ``ops`` (first the partition writing the split's output; an
    all-gather feeding another split's shards also runs a copy in each of their partitions).
    ``links`` are the ``"src->dst"`` memory domains crossed (empty: all in one domain, a copy
    in memory).
    """

    id: str
    kind: str
    split: str
    tensor: int
    ops: tuple[int, ...]
    source: tuple[str | None, ...]
    destination: tuple[str, ...]
    bytes: int
    links: tuple[str, ...]
    cost_s: float | None

    def to_doc(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "split": self.split,
            "tensor": self.tensor,
            "ops": list(self.ops),
            "from": list(self.source),
            "to": list(self.destination),
            "bytes": self.bytes,
            "links": list(self.links),
            "cost_s": self.cost_s,
        }


def split_from_doc(d: Mapping[str, Any]) -> SplitEntry:
    return SplitEntry(
        id=d["id"],
        mode=d["mode"],
        ops=tuple(d["ops"]),
        sizes=tuple(d["sizes"]),
        source_ops=tuple(d["source_ops"]),
        op_names=tuple(d["op_names"]),
        shards=tuple(SplitShard(tuple(s["ops"]), s["output"], s["partition"]) for s in d["shards"]),
        collective=d["collective"],
        collective_ops=tuple(d["collective_ops"]),
        output=d["output"],
        exact=d["exact"],
        reason=d["reason"],
        predicted=d["predicted"],
    )


def collective_from_doc(d: Mapping[str, Any]) -> CollectiveEntry:
    return CollectiveEntry(
        id=d["id"],
        kind=d["kind"],
        split=d["split"],
        tensor=d["tensor"],
        ops=tuple(d["ops"]),
        source=tuple(d["from"]),
        destination=tuple(d["to"]),
        bytes=d["bytes"],
        links=tuple(d["links"]),
        cost_s=d["cost_s"],
    )


def check_tensor_parallel(plan: Plan, where: str) -> None:
    """Cross-references of ``splits`` and ``collectives`` (run by :func:`plan_from_doc`)."""
    splits: Sequence[SplitEntry] = plan.splits
    colls: Sequence[CollectiveEntry] = plan.collectives
    if not splits and not colls:
        return
    here = f"{where}: splits"
    owner = {op: p.id for p in plan.partitions for op in p.ops}
    pids = {p.id for p in plan.partitions}
    made = {t.tensor: p.id for p in plan.partitions for t in p.outputs}
    read = {(t.tensor, p.id) for p in plan.partitions for t in p.inputs}
    inputs = {t.tensor for t in plan.inputs}
    ids = [s.id for s in splits]
    if len(set(ids)) != len(ids):
        raise BundleError(f"{here}: two splits share an id")
    coll_ids = [c.id for c in colls]
    if len(set(coll_ids)) != len(coll_ids):
        raise BundleError(f"{where}: collectives: two collectives share an id")
    by_id = {c.id: c for c in colls}
    seen_src: set[int] = set()
    for s in splits:
        at = f"{here}: {s.id}"
        if len(s.sizes) != len(s.shards) or len(s.shards) < 2:
            raise BundleError(f"{at}: {len(s.shards)} shards for {len(s.sizes)} sizes")
        if set(s.source_ops) & seen_src:
            raise BundleError(f"{at}: replaces an op another split replaced")
        seen_src |= set(s.source_ops)
        if not set(s.ops) <= set(s.source_ops):
            raise BundleError(f"{at}: its anchor ops are not among the ops it replaced")
        for sh in s.shards:
            for op in sh.ops:
                if op not in owner:
                    raise BundleError(f"{at}: shard op {op} is in no partition")
            if owner[sh.ops[-1]] != sh.partition:
                raise BundleError(
                    f"{at}: shard op {sh.ops[-1]} runs in partition {owner[sh.ops[-1]]!r}, "
                    f"not {sh.partition!r}"
                )
        for op in s.collective_ops:
            if op not in owner:
                raise BundleError(f"{at}: collective op {op} is in no partition")
        c = by_id.get(s.collective)
        if c is None or c.split != s.id or c.kind not in ("all_gather", "all_reduce"):
            raise BundleError(
                f"{at}: collective {s.collective!r} is not an all-gather or all-reduce of it"
            )
        if c.tensor != s.output or tuple(c.ops) != s.collective_ops:
            raise BundleError(f"{at}: collective {c.id!r} does not write the split's output")
    split_ids = set(ids)
    for c in colls:
        at = f"{where}: collectives: {c.id}"
        if c.split not in split_ids:
            raise BundleError(f"{at}: names split {c.split!r}, which the plan does not have")
        for p in (*c.destination, *(x for x in c.source if x is not None)):
            if p not in pids:
                raise BundleError(f"{at}: names partition {p!r}, which the plan does not have")
        if c.kind in ("broadcast", "send_recv"):
            if len(c.source) != 1:
                raise BundleError(f"{at}: a {c.kind} needs exactly one sender")
            sender = c.source[0]
            if sender is None and c.tensor not in inputs:
                raise BundleError(f"{at}: tensor {c.tensor} is not a model input")
            if sender is not None and made.get(c.tensor) != sender:
                raise BundleError(f"{at}: tensor {c.tensor} is not written by {sender!r}")
            for p in c.destination:
                if (c.tensor, p) not in read:
                    raise BundleError(f"{at}: partition {p!r} does not read tensor {c.tensor}")
            if c.kind == "send_recv" and len(c.destination) != 1:
                raise BundleError(f"{at}: a send_recv needs exactly one destination")
        else:
            if not c.ops:
                raise BundleError(f"{at}: an {c.kind} needs its ops")
            for op in c.ops:
                if owner.get(op) not in c.destination:
                    raise BundleError(
                        f"{at}: its op {op} is not in its partitions {list(c.destination)}"
                    )
