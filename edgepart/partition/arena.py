"""The global memory plan of a partitioned model: one arena per memory domain of the profile.

The partitioner is the integrator of the memory planner (:mod:`edgepart.memory`): it knows the
partitions, where they run and what may run at the same time, and turns that into buffers with
lifetimes for :func:`edgepart.memory.plan_arena`.

*Timeline.* Partitions in plan order (a topological order) each get a block of steps; inside a
block, a partition's own tensors have TFLite's lifetimes (:func:`~edgepart.memory.lifetimes.
tflite_lifetimes`, in-place sharing included) for the partition's ops in execution order.

*Internal buffers* (scope ``partition``) are a partition's tensors other than its inputs and
outputs, in its processor's memory domain (variables live for the whole run). Two partitions on
different units that are not ordered by a dependency may run at the same time, so a partition
with such a partner in its memory has its internal buffers widened over the blocks of itself and
all those partners (they then conflict, as they must).

*Boundary buffers* (scope ``boundary``) hold the tensors handed between partitions, model inputs
and model outputs: one buffer in the producer's domain (the host's for model inputs), and one in
every other domain that reads it (a copy over the link); processors sharing a domain share the
buffer. A buffer must stay intact from its write (the producer's run; before anything for model
inputs) until its last reader in that domain has run, whatever order the runtime picks, so its
lifetime covers the blocks of every partition that is neither finished before the producer
starts nor started after all those readers. Pairs of boundary buffers whose tensors may be live
together by that dependency rule (``PlanGraph.conflict`` of the bundle format) but whose
lifetimes are apart get an explicit conflict.

The planner's ``portfolio`` strategy without a time limit is deterministic, so the arena (and the
bundle) is byte-reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgepart.ir.graph import Subgraph
from edgepart.memory import Buffer, MemoryProblem, plan_arena
from edgepart.memory.lifetimes import tflite_lifetimes

__all__ = ["ArenaPartition", "global_arena"]


@dataclass(frozen=True)
class ArenaPartition:
    """What the arena planner needs of one partition (in plan order)."""

    id: str
    unit: str  # "cpu:0": partitions on one unit never run at the same time
    domain: str
    file_ops: tuple[int, ...]  # ops in the partition's file, execution order
    inputs: tuple[int, ...]  # tensors it reads from outside (model inputs or other partitions)
    outputs: tuple[int, ...]  # tensors it writes for others or as model outputs


def _ancestors(parts: Sequence[ArenaPartition], producer: dict[int, int]) -> list[int]:
    """Bitset of strict ancestors per partition (plan order is topological)."""
    anc: list[int] = []
    for k, p in enumerate(parts):
        a = 0
        for t in p.inputs:
            q = producer.get(t)
            if q is not None and q != k:
                a |= (1 << q) | anc[q]
        anc.append(a)
    return anc


def global_arena(
    sg: Subgraph,
    parts: Sequence[ArenaPartition],
    *,
    host_domain: str,
    model_outputs: Sequence[int] = (),
    alignment: int = 64,
) -> dict[str, Any]:
    """An ``arena.json`` document (format ``edgepart-bundle-arena``) for the partitioned model.

    See the module docstring for the buffers and their lifetimes.
    """
    nq = len(parts)
    producer: dict[int, int] = {}
    for k, p in enumerate(parts):
        for t in p.outputs:
            producer.setdefault(t, k)
    anc = _ancestors(parts, producer)
    full = (1 << nq) - 1
    desc = [0] * nq  # strict descendants
    for k in range(nq):
        a = anc[k]
        while a:
            low = a & -a
            desc[low.bit_length() - 1] |= 1 << k
            a ^= low
    # blocks: partition k occupies steps [start[k], start[k] + span[k])
    lts = []
    span = []
    for p in parts:
        lt = tflite_lifetimes(sg, list(p.file_ops), inputs=list(p.inputs), outputs=list(p.outputs))
        lts.append(lt)
        span.append(lt.horizon + 1)
    start = np.zeros(nq + 1, dtype=np.int64)
    np.cumsum(span, out=start[1:])
    horizon = int(start[-1])

    def cover(mask: int) -> tuple[int, int]:
        """[first block start, last block end) over the partitions in ``mask``."""
        lo, hi = horizon, 0
        m = mask
        while m:
            low = m & -m
            k = low.bit_length() - 1
            lo = min(lo, int(start[k]))
            hi = max(hi, int(start[k] + span[k]))
            m ^= low
        return lo, hi

    buffers: list[Buffer] = []
    meta: list[dict[str, Any]] = []
    nbytes = sg.tensor_nbytes.astype(np.int64)

    # --- internal buffers
    for k, (p, lt) in enumerate(zip(parts, lts, strict=True)):
        partners = 0
        for r, q in enumerate(parts):
            if (
                r != k
                and q.domain == p.domain
                and q.unit != p.unit
                and not (anc[k] >> r) & 1
                and not (anc[r] >> k) & 1
            ):
                partners |= 1 << r
        wide = cover(partners | (1 << k)) if partners else None
        boundary = set(p.inputs) | set(p.outputs)
        for t, lo, hi, size, pers in zip(
            lt.tensors.tolist(),
            lt.lower.tolist(),
            lt.upper.tolist(),
            lt.nbytes.tolist(),
            lt.persistent.tolist(),
            strict=True,
        ):
            if t in boundary:
                continue
            if pers:
                lo2, hi2 = 0, horizon
            elif wide is not None:
                lo2, hi2 = wide
            else:
                lo2, hi2 = int(start[k] + lo), int(start[k] + max(hi, lo + 1))
            buffers.append(Buffer(f"{p.id}:t{t}", lo2, hi2, int(size), alignment, memory=p.domain))
            meta.append({"tensor": t, "scope": "partition", "partition": p.id})

    # --- boundary buffers: source side first (the runtime stages there), then copies
    readers: dict[int, list[int]] = {}
    for k, p in enumerate(parts):
        for t in p.inputs:
            readers.setdefault(t, []).append(k)
    outs = set(model_outputs)
    tensors = sorted(set(readers) | {t for t in outs if t in producer})
    bmeta: list[tuple[int, int, int]] = []  # (tensor, producer or -1, consumer mask) per buffer
    for t in tensors:
        pk = producer.get(t, -1)
        src_dom = parts[pk].domain if pk >= 0 else host_domain
        by_dom: dict[str, int] = {}
        for c in readers.get(t, []):
            by_dom[parts[c].domain] = by_dom.get(parts[c].domain, 0) | (1 << c)
        all_readers = 0
        for mask in by_dom.values():
            all_readers |= mask
        doms = [src_dom, *sorted(d for d in by_dom if d != src_dom)]
        if t in outs and host_domain not in doms:
            doms.append(host_domain)
        for d in doms:
            # the source copy must last until every copy is made, i.e. as long as any reader
            cons = all_readers if d == src_dom else by_dom.get(d, 0)
            live = _live_mask(pk, cons, anc, desc, full)
            lo, hi = cover(live)
            if pk < 0:
                lo = 0
            if t in outs and (d == host_domain or (d == src_dom and not cons)):
                hi = horizon  # model outputs are read after the run
            buffers.append(
                Buffer(f"b:{d}:t{t}", lo, max(hi, lo + 1), int(nbytes[t]), alignment, memory=d)
            )
            meta.append({"tensor": t, "scope": "boundary", "partition": None})
            bmeta.append((t, pk, cons))

    conflicts = _boundary_conflicts(buffers, meta, bmeta, anc)
    doc: dict[str, Any] = {
        "format": "edgepart-bundle-arena",
        "version": 1,
        "strategy": "edgepart-partition-global/portfolio",
        "alignment": alignment,
        "memories": {},
        "buffers": [],
    }
    if not buffers:
        doc["memories"][host_domain] = {"size": 0, "lower_bound": 0}
        return doc
    result = plan_arena(
        MemoryProblem.from_buffers(buffers, conflicts), strategy="portfolio", time_limit=None
    )
    for name, ar in sorted(result.arenas.items()):
        doc["memories"][name] = {
            "size": ar.size,
            "lower_bound": ar.lower_bound,
            "naive": ar.naive,
            "method": ar.method,
        }
    for b, info in zip(buffers, meta, strict=True):
        doc["buffers"].append(
            {
                **info,
                "memory": b.memory,
                "offset": int(result.offsets[b.id]),
                "size": b.size,
                "lifetime": [b.lower, b.upper],
            }
        )
    return doc


def _live_mask(pk: int, cons: int, anc: list[int], desc: list[int], full: int) -> int:
    """Partitions that may run while a buffer written by ``pk`` and read by ``cons`` is live:
    all but those finished before ``pk`` starts and those starting after every reader."""
    before = anc[pk] if pk >= 0 else 0
    after = full
    m = cons
    if not m:
        after = desc[pk] if pk >= 0 else 0
    while m:
        low = m & -m
        after &= desc[low.bit_length() - 1]
        m ^= low
    keep = full & ~before & ~after
    if pk >= 0:
        keep |= 1 << pk
    return keep | cons


def _boundary_conflicts(
    buffers: list[Buffer],
    meta: list[dict[str, Any]],
    bmeta: list[tuple[int, int, int]],
    anc: list[int],
) -> list[tuple[str, str]]:
    """Explicit conflicts between boundary buffers of one memory that may be live together by
    the dependency rule although their lifetimes on the block timeline are apart."""
    idx = [i for i, m in enumerate(meta) if m["scope"] == "boundary"]
    out: list[tuple[str, str]] = []

    def precedes(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
        # every reader of a is b's producer or an ancestor of it (model inputs: never)
        pb = b[1]
        if pb < 0:
            return False
        ok = anc[pb] | (1 << pb)
        return (a[2] & ~ok) == 0

    for x, i in enumerate(idx):
        bi, mi = buffers[i], bmeta[x]
        for y in range(x + 1, len(idx)):
            j = idx[y]
            bj = buffers[j]
            if bi.memory != bj.memory or bi.size == 0 or bj.size == 0:
                continue
            if bi.lower < bj.upper and bj.lower < bi.upper:
                continue  # the timeline already separates them in memory
            mj = bmeta[y]
            if mi[0] == mj[0]:
                continue
            if not precedes(mi, mj) and not precedes(mj, mi):
                out.append((bi.id, bj.id))
    return out
