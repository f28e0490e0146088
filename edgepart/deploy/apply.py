"""Apply a placement of a model: its partitions as op sets and as bundle partition specs.

The solver decides on fused nodes; this module maps its decision back to ops
(:func:`placed_partitions`) and describes each partition for the bundle writer
(:func:`partition_specs`). Deciding and applying stay separate steps: nothing here changes the
placement. The whole apply step (plan keys, bundle, arena) is
:func:`edgepart.deploy.compile.compile_placement`.

Weight-decompression helpers are cloned into every partition that reads them (by
:func:`edgepart.ir.extract.extract`); the plan lists each helper once, in the *earliest*
partition (creation order) reading it, so no partition's op set gets a path that leaves it and
comes back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgepart.bundle.write import PartitionSpec
from edgepart.ir import analysis
from edgepart.lowering.from_model import ModelProblem
from edgepart.placement.evaluate import Evaluation
from edgepart.placement.plan_doc import json_float

__all__ = ["PlacedPartition", "partition_specs", "placed_partitions"]


@dataclass(frozen=True)
class PlacedPartition:
    """One partition of a placed model (creation order = a dependency order)."""

    index: int
    id: str
    proc: int
    unit: int  # global unit index of the cost graph
    nodes: tuple[int, ...]
    ops: tuple[int, ...]  # ops the plan assigns here (members + helpers owned here), ascending
    file_ops: tuple[int, ...]  # ops in the partition file (execution order)
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


def placed_partitions(problem: ModelProblem, ev: Evaluation) -> list[PlacedPartition]:
    """The partitions of ``ev`` as op sets with their boundary tensors."""
    fz, sg = problem.fusion, problem.model.subgraphs[problem.subgraph]
    nq = ev.num_partitions
    order = np.argsort(ev.part_of, kind="stable")
    cut = np.searchsorted(ev.part_of[order], np.arange(nq + 1))
    # helper owner: the earliest partition reading it
    owner: dict[int, int] = {}
    hp, hi = fz.helpers.ptr.tolist(), fz.helpers.idx.tolist()
    part_of = ev.part_of.tolist()
    for v in range(fz.num_nodes):
        q = part_of[v]
        for h in hi[hp[v] : hp[v + 1]]:
            if h not in owner or q < owner[h]:
                owner[h] = q
    topo = analysis.topological_order(sg)
    pos = np.empty(sg.num_ops, dtype=np.int64)
    pos[topo] = np.arange(sg.num_ops)
    prod = analysis.producers(sg)
    const = sg.tensor_is_constant
    var = sg.tensor_is_variable
    is_out = np.zeros(sg.num_tensors, dtype=bool)
    is_out[sg.outputs.astype(np.int64)] = True
    # per op: the partition whose file holds it as a member (helpers: -1)
    op_part = np.full(sg.num_ops, -1, dtype=np.int64)
    mem_rows = fz.members.row_ids()
    op_part[fz.members.idx] = ev.part_of[mem_rows]
    readers = analysis.consumers(sg)
    out: list[PlacedPartition] = []
    for q in range(nq):
        nodes = order[cut[q] : cut[q + 1]]
        members = np.concatenate([fz.members.row(int(v)) for v in nodes.tolist()])
        helpers = np.unique(
            np.concatenate([fz.helpers.row(int(v)) for v in nodes.tolist()] + [np.zeros(0, int)])
        ).astype(np.int64)
        own_h = [h for h in helpers.tolist() if owner.get(h) == q]
        ops = np.union1d(members, np.asarray(own_h, dtype=np.int64))
        file_ops = np.union1d(members, helpers)
        file_ops = file_ops[np.argsort(pos[file_ops], kind="stable")]
        inside = np.zeros(sg.num_ops, dtype=bool)
        inside[file_ops] = True
        ins = sg.op_inputs.take(file_ops).idx.astype(np.int64)
        ins = np.unique(ins[ins >= 0])
        ins = ins[~const[ins] & ~var[ins]]
        ins = ins[(prod[ins] < 0) | ~inside[np.maximum(prod[ins], 0)]]
        made = sg.op_outputs.take(members).idx.astype(np.int64)
        made = np.unique(made[made >= 0])
        keep = []
        for t in made.tolist():
            if is_out[t] or (~inside[readers.row(t)]).any():
                keep.append(t)
        u = int(ev.part_unit[q])
        out.append(
            PlacedPartition(
                index=q,
                id=f"p{q}",
                proc=int(problem.graph.unit_proc[u]),
                unit=u,
                nodes=tuple(nodes.tolist()),
                ops=tuple(ops.tolist()),
                file_ops=tuple(file_ops.tolist()),
                inputs=tuple(ins.tolist()),
                outputs=tuple(keep),
            )
        )
    return out


def partition_specs(
    problem: ModelProblem, ev: Evaluation, parts: Sequence[PlacedPartition]
) -> list[PartitionSpec]:
    """Bundle partition specs (ids ``p0, p1, ...`` in creation order, with predictions)."""
    g, prof = problem.graph, problem.profile
    out = []
    for p in parts:
        proc = prof.processors[p.proc]
        disp = float(g.proc_dispatch[p.proc])
        dur = float(ev.part_duration[p.index])
        out.append(
            PartitionSpec(
                ops=list(p.ops),
                processor=proc.name,
                unit=int(g.unit_index[p.unit]),
                delegate=proc.delegate,
                id=p.id,
                threads=int(proc.threads.value) if proc.kind == "cpu" else None,
                predicted={
                    "start_s": json_float(float(ev.part_start[p.index])),
                    "end_s": json_float(float(ev.part_end[p.index])),
                    "duration_s": json_float(dur),
                    "dispatch_s": json_float(disp),
                    "compute_s": json_float(dur - disp),
                },
                extra={"nodes": list(p.nodes)},
            )
        )
    return out
