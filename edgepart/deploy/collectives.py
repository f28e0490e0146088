"""The ``splits`` and ``collectives`` of a placed plan (``plan.json`` version 2).

From the splits a plan takes (:class:`edgepart.deploy.splits.SplitTaken`) and the partitions the
placement made of the split model: where each shard runs, and how data moves for it, costed
with the same cost model as the plan:

* **broadcast**: a tensor the shards read (the layer's input) copied from the partition that
  writes it (or the model input) to every other partition running a shard that reads it;
* **send/recv**: a shard's result copied to the partition running the collective;
* **all-gather** (CONCATENATION) / **all-reduce** (ADD chain): the collective's ops, in the
  partition that runs them; its cost is the slowest result arriving plus the ops themselves.

Transfers within one memory domain are copies in memory and cost nothing in the cost model (the
same rule as the plan's transfers); across domains they cost the link's latency plus bytes over
its bandwidth.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgepart.bundle.tensor_parallel import CollectiveEntry, SplitEntry, SplitShard
from edgepart.deploy.apply import PlacedPartition
from edgepart.deploy.splits import SplitTaken
from edgepart.ir import analysis
from edgepart.lowering.from_model import ModelProblem
from edgepart.placement.plan_doc import json_float

__all__ = ["tensor_parallel_entries"]


def tensor_parallel_entries(
    problem: ModelProblem,
    parts: Sequence[PlacedPartition],
    taken: Sequence[SplitTaken],
) -> tuple[list[SplitEntry], list[CollectiveEntry]]:
    """Plan entries for the splits ``taken`` in the placement cut into ``parts``.

    Parameters
    ----------
    problem
        The split model under its profile (costs, processors, memory domains).
    parts
        The placement's partitions (ids ``p0, p1, ...`` as the bundle writes them).
    taken
        The splits the plan takes, with their rewrite records.

    Returns
    -------
    tuple of list
        The ``splits`` and ``collectives`` entries of ``plan.json`` (version 2).
    """
    sg = problem.model.subgraphs[problem.subgraph]
    gc, prof = problem.costs, problem.profile
    owner: dict[int, PlacedPartition] = {}
    for p in parts:
        for op in p.ops:
            owner[op] = p
    writer: dict[int, PlacedPartition] = {t: p for p in parts for t in p.outputs}
    host = next((k for k, q in enumerate(prof.processors) if q.kind == "cpu"), 0)
    lat = np.asarray(gc.latency, dtype=np.float64)
    nbytes = sg.tensor_nbytes
    readers = analysis.consumers(sg)
    splits: list[SplitEntry] = []
    colls: list[CollectiveEntry] = []

    def domain(proc: int) -> str:
        return prof.processors[proc].memory_domain

    def move(t: int, src: int, dst: int) -> tuple[float, str | None]:
        if domain(src) == domain(dst):
            return 0.0, None
        return gc.transfer_bytes(float(nbytes[t]), src, dst), f"{domain(src)}->{domain(dst)}"

    def new_id() -> str:
        return f"c{len(colls)}"

    for st in taken:
        rec = st.record
        shard_ops = {o for sh in rec.shards for o in sh}
        # broadcast of each input the shards read
        for t in rec.inputs:
            src = writer.get(t)
            src_proc = src.proc if src is not None else host
            dests = sorted(
                {owner[o].id for o in readers.row(t).tolist() if o in shard_ops}
                - ({src.id} if src is not None else set()),
                key=lambda pid: int(pid[1:]) if pid[1:].isdigit() else 0,
            )
            if not dests:
                continue
            by_id = {p.id: p for p in parts}
            costs = [move(t, src_proc, by_id[d].proc) for d in dests]
            colls.append(
                CollectiveEntry(
                    id=new_id(),
                    kind="broadcast",
                    split=st.id,
                    tensor=int(t),
                    ops=(),
                    source=(None if src is None else src.id,),
                    destination=tuple(dests),
                    bytes=int(nbytes[t]) * len(dests),
                    links=tuple(sorted({lk for _, lk in costs if lk is not None})),
                    cost_s=json_float(max(c for c, _ in costs)),
                )
            )
        # send/recv of each shard's result to every partition gathering or reducing it
        coll_ops = set(rec.collective_ops)
        arrive = 0.0
        links: set[str] = set()
        for t in rec.shard_outputs:
            src = writer.get(t)
            if src is None:
                continue
            gathering = dict.fromkeys(owner[o].id for o in readers.row(t).tolist() if o in coll_ops)
            by_id = {p.id: p for p in parts}
            for d in gathering:
                if d == src.id:
                    continue
                cost, lk = move(t, src.proc, by_id[d].proc)
                arrive = max(arrive, cost)
                if lk is not None:
                    links.add(lk)
                colls.append(
                    CollectiveEntry(
                        id=new_id(),
                        kind="send_recv",
                        split=st.id,
                        tensor=int(t),
                        ops=(),
                        source=(src.id,),
                        destination=(d,),
                        bytes=int(nbytes[t]),
                        links=() if lk is None else (lk,),
                        cost_s=json_float(cost),
                    )
                )
        # the all-gather / all-reduce itself (and the copies made where later shards run)
        main = owner[rec.collective_ops[0]] if rec.collective == "all_gather" else None
        last = main or owner[rec.collective_ops[-1]]
        ops_s = float(lat[list(rec.collective_ops), last.proc].sum())
        shard_parts = tuple(dict.fromkeys(owner[sh[-1]].id for sh in rec.shards))
        where = tuple(dict.fromkeys([last.id, *(owner[o].id for o in rec.collective_ops)]))
        cid = new_id()
        colls.append(
            CollectiveEntry(
                id=cid,
                kind=rec.collective,
                split=st.id,
                tensor=int(rec.output),
                ops=tuple(int(o) for o in rec.collective_ops),
                source=shard_parts,
                destination=where,
                bytes=int(sum(int(nbytes[t]) for t in rec.shard_outputs)),
                links=tuple(sorted(links)),
                cost_s=json_float(arrive + ops_s),
            )
        )
        splits.append(
            SplitEntry(
                id=st.id,
                mode=rec.spec.mode,
                ops=tuple(rec.spec.ops),
                sizes=tuple(rec.spec.sizes),
                source_ops=tuple(rec.source_ops),
                op_names=tuple(rec.op_names),
                shards=tuple(
                    SplitShard(tuple(int(o) for o in sh), int(out), owner[sh[-1]].id)
                    for sh, out in zip(rec.shards, rec.shard_outputs, strict=True)
                ),
                collective=cid,
                collective_ops=tuple(int(o) for o in rec.collective_ops),
                output=int(rec.output),
                exact=rec.exact,
                reason=st.choice.reason,
                predicted={
                    k: (None if v is None else json_float(v)) for k, v in st.predicted.items()
                },
            )
        )
    return splits, colls
