"""The cost graph: a processor profile plus a DAG of nodes with per-processor costs, as arrays.

This is the only input the placement solvers read. It comes from a documented JSON file
(``docs/costgraph.md``, schema ``edgepart/schemas/costgraph.schema.json``) or, later, from a
fused TFLite model and a device profile. Nodes are renumbered into *execution order*: the
document's order when it is topological, otherwise the stable topological sort of it (Kahn,
smallest document position first). Everything else refers to nodes by that index; ``ids`` maps
back to the document's ids.

Examples
--------
>>> doc = {"format": "edgepart-costgraph", "version": 1,
...        "processors": [{"name": "cpu", "kind": "cpu"}],
...        "nodes": [{"id": 0, "latency_s": {"cpu": 1e-3}}, {"id": 1, "latency_s": {"cpu": 2e-3}}],
...        "edges": [{"src": 0, "dst": 1, "bytes": 16}]}
>>> g = costgraph_from_dict(doc)
>>> g.num_nodes, g.num_units, g.tensor_name(0)
(2, 1, '0:0')
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgepart.errors import CostGraphError
from edgepart.ir.values import Csr
from edgepart.jsondoc import load_file
from edgepart.placement import _cgparse
from edgepart.placement.topology import csr_from_pairs, find_cycle, stable_topological_order

__all__ = ["TFLITE_DEFAULTS", "CostGraph", "costgraph_from_dict", "load_costgraph"]

# TFLite's per-delegate partition limits (max_delegated_partitions, min_nodes_per_partition)
# by processor kind: GPU delegate 1, NNAPI 3, Hexagon 4 with at least 2 nodes (tflite.md 1.4).
# The Edge TPU compiler maps one segment, approximated here as one partition. 0 = no limit.
TFLITE_DEFAULTS: dict[str, tuple[int, int]] = {
    "cpu": (0, 0),
    "gpu": (1, 0),
    "npu": (3, 0),
    "dsp": (4, 2),
    "tpu": (1, 0),
    "other": (0, 0),
}


@dataclass(frozen=True, eq=False)
class CostGraph:
    """A validated cost graph in columnar form (see the module docstring).

    Shapes: ``N`` nodes, ``P`` processors, ``U`` units (sum of processor unit counts), ``D``
    memory domains, ``T`` tensors. Latencies are seconds with ``inf`` for "unsupported";
    ``proc_memory`` is bytes per unit with ``inf`` for unlimited.
    """

    name: str
    source: str
    proc_names: tuple[str, ...]
    proc_kinds: tuple[str, ...]
    proc_units: np.ndarray  # [P] int64
    proc_memory: np.ndarray  # [P] float64, per unit
    proc_domain: np.ndarray  # [P] int64
    proc_dispatch: np.ndarray  # [P] float64
    proc_tflite: tuple[tuple[int, int], ...]  # (max_delegated_partitions, min_nodes)
    domain_names: tuple[str, ...]
    host_domain: int
    self_link: np.ndarray  # [D] bool: a same-domain handoff has a cost and counts as a transfer
    unit_proc: np.ndarray  # [U] int64
    unit_index: np.ndarray  # [U] int64, index within its processor
    proc_first_unit: np.ndarray  # [P] int64
    ids: tuple[int | str, ...]
    node_names: tuple[str | None, ...]
    node_ops: tuple[str | None, ...]
    latency: np.ndarray  # [N, P] float64
    weight_bytes: np.ndarray  # [N] int64
    output_bytes: np.ndarray  # [N] int64
    activation_bytes: np.ndarray  # [N] int64: distinct input tensors + outputs
    coloc: np.ndarray  # [N] int64, -1 = none
    coloc_names: tuple[str, ...]
    tensor_src: np.ndarray  # [T] int64, -1 = model input
    tensor_labels: tuple[int | str, ...]
    tensor_bytes: np.ndarray  # [T] int64
    tensor_consumers: Csr  # tensor -> consumer nodes
    transfer_cost: np.ndarray  # [T, D, D] float64 seconds
    node_inputs: Csr  # node -> tensors read
    node_outputs: Csr  # node -> tensors produced
    pred: Csr  # node -> predecessor nodes (deduped)
    succ: Csr  # node -> successor nodes (deduped)
    output_tensors: np.ndarray  # tensors delivered to the host domain
    baseline_delegate: int  # -1 = choose the best accelerator
    baseline_cpu: int  # -1 = no CPU to fall back to
    # Model options per processor (docs/costgraph.md): transfers occupy the sending and
    # receiving units; each unit runs one convex partition; same-unit hand-offs pay the self-link.
    proc_copies: np.ndarray  # [P] bool
    proc_single: np.ndarray  # [P] bool
    proc_unit_handoff: np.ndarray  # [P] bool
    # [N] bool or None: a node that starts a new partition rather than joining, through the
    # partition's own members, the partition of a node it depends on (tensor-parallel shards:
    # the producer's partition must end, and hand its output to the other units, before they run)
    epoch_break: np.ndarray | None = None

    @property
    def num_nodes(self) -> int:
        return int(self.latency.shape[0])

    @property
    def num_procs(self) -> int:
        return len(self.proc_names)

    @property
    def num_units(self) -> int:
        return len(self.unit_proc)

    @property
    def num_edges(self) -> int:
        return len(self.succ.idx)

    def with_options(
        self,
        *,
        transfers_on_unit: object = None,
        single_partition: object = None,
        charge_unit_handoffs: object = None,
    ) -> CostGraph:
        """A copy with some model options changed: a bool (every processor) or a ``[P]`` mask."""

        def mask(v: object, old: np.ndarray) -> np.ndarray:
            if v is None:
                return old
            out: np.ndarray = np.broadcast_to(np.asarray(v, dtype=bool), old.shape).copy()
            return out

        return dataclasses.replace(
            self,
            proc_copies=mask(transfers_on_unit, self.proc_copies),
            proc_single=mask(single_partition, self.proc_single),
            proc_unit_handoff=mask(charge_unit_handoffs, self.proc_unit_handoff),
        )

    def supported(self) -> np.ndarray:
        """``[N, P]`` bool: the processor can run the node."""
        out: np.ndarray = np.isfinite(self.latency)
        return out

    def unit_name(self, u: int) -> str:
        return f"{self.proc_names[int(self.unit_proc[u])]}:{int(self.unit_index[u])}"

    def node_label(self, v: int) -> str:
        """``node 'conv1' (id 17, CONV_2D)`` for messages."""
        nm, op = self.node_names[v], self.node_ops[v]
        head = f"node {self.ids[v]!r}" if nm is None else f"node {nm!r} (id {self.ids[v]!r})"
        return head if op is None else f"{head} [{op}]"

    def tensor_name(self, t: int) -> str:
        s = int(self.tensor_src[t])
        return str(self.tensor_labels[t]) if s < 0 else f"{self.ids[s]}:{self.tensor_labels[t]}"


def load_costgraph(path: str | os.PathLike[str]) -> CostGraph:
    """Read and validate a cost-graph JSON file.

    Raises
    ------
    CostGraphError
        Unreadable file, invalid JSON (with line and column) or an invalid document (with the
        JSON path of the offending value).
    """
    src = os.fspath(path)
    doc = load_file(src, what="cost graph", limit=COSTGRAPH_LIMIT, error=CostGraphError)
    return costgraph_from_dict(doc, source=src)


COSTGRAPH_LIMIT = 1 << 30
"""Largest cost-graph file read (1 GiB; 100,000 nodes take about 30 MB)."""


def costgraph_from_dict(doc: Any, source: str = "<costgraph>") -> CostGraph:
    """Validate a parsed JSON document and build the :class:`CostGraph` arrays."""
    r = _cgparse.parse(doc, source)
    return _build(r, source)


def _build(r: _cgparse.Raw, source: str) -> CostGraph:
    n = len(r.node_ids)
    es = np.asarray(r.edge_src, dtype=np.int64)
    ed = np.asarray(r.edge_dst, dtype=np.int64)
    succ0 = csr_from_pairs(n, es, ed)
    pred0 = csr_from_pairs(n, ed, es)
    order = stable_topological_order(succ0, np.diff(pred0.ptr))
    if len(order) < n:
        left = np.setdiff1d(np.arange(n), order)
        cyc = find_cycle(pred0, left)
        shown = " -> ".join(repr(r.node_ids[v]) for v in cyc[:12])
        more = " -> ..." if len(cyc) > 12 else ""
        raise CostGraphError(
            f"{source}: edges: the graph has a cycle ({shown}{more}); a cost graph must be a DAG"
        )
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    es, ed = pos[es], pos[ed]
    ordl = order.tolist()

    domains = sorted(set(r.proc_domain) | {r.host_domain})
    dom = {d: i for i, d in enumerate(domains)}
    nd = len(domains)
    lat = np.zeros((nd, nd))
    inv = np.zeros((nd, nd))
    self_link = np.zeros(nd, dtype=bool)
    for a, b, la, ib in r.links:
        lat[dom[a], dom[b]] = la
        inv[dom[a], dom[b]] = ib
        if a == b:
            self_link[dom[a]] = True

    tsrc = np.asarray([pos[t[0]] if t[0] >= 0 else -1 for t in r.tensors], dtype=np.int64)
    tbytes = np.asarray([t[2] for t in r.tensors], dtype=np.int64)
    nt = len(r.tensors)
    cost = lat[None, :, :] + tbytes.astype(np.float64)[:, None, None] * inv[None, :, :]
    for t, rec in enumerate(r.tensors):
        ov = rec[3]
        if ov is None:
            continue
        if isinstance(ov, float):
            off = ~np.eye(nd, dtype=bool)
            cost[t][off] = ov
        else:
            for (a, b), s in ov:
                cost[t, dom[a], dom[b]] = s

    cons_t = np.asarray(r.edge_tensor + [t for t, _ in r.input_consumers], dtype=np.int64)
    cons_v = np.concatenate([ed, pos[np.asarray([v for _, v in r.input_consumers], np.int64)]])
    tensor_consumers = csr_from_pairs(nt, cons_t, cons_v)
    node_inputs = csr_from_pairs(n, cons_v, cons_t)
    prod = np.flatnonzero(tsrc >= 0)
    node_outputs = csr_from_pairs(n, tsrc[prod], prod)

    out_decl = np.asarray(
        [r.output_bytes[v] if r.output_bytes[v] is not None else -1 for v in ordl]
    )
    produced = np.bincount(tsrc[prod], weights=tbytes[prod], minlength=n).astype(np.int64)
    output_bytes = np.where(out_decl >= 0, out_decl, produced).astype(np.int64)
    in_bytes = np.bincount(node_inputs.row_ids(), weights=tbytes[node_inputs.idx], minlength=n)
    activation = in_bytes.astype(np.int64) + output_bytes

    groups = sorted({g for g in r.coloc if g is not None})
    gidx = {g: i for i, g in enumerate(groups)}
    coloc = np.asarray([-1 if r.coloc[v] is None else gidx[r.coloc[v]] for v in ordl], np.int64)

    units = np.asarray(r.proc_units, dtype=np.int64)
    first = np.zeros(len(units), dtype=np.int64)
    first[1:] = np.cumsum(units)[:-1]
    mem = np.asarray([math.inf if m < 0 else float(m) for m in r.proc_mem])
    tfl = tuple(
        (d[0] if mx is None else mx, d[1] if mn is None else mn)
        for (mx, mn), d in zip(
            r.proc_tflite, [TFLITE_DEFAULTS[k] for k in r.proc_kinds], strict=True
        )
    )
    names = r.proc_names
    return CostGraph(
        name=r.name,
        source=source,
        proc_names=tuple(names),
        proc_kinds=tuple(r.proc_kinds),
        proc_units=units,
        proc_memory=mem,
        proc_domain=np.asarray([dom[d] for d in r.proc_domain], dtype=np.int64),
        proc_dispatch=np.asarray(r.proc_dispatch, dtype=np.float64),
        proc_tflite=tfl,
        domain_names=tuple(domains),
        host_domain=dom[r.host_domain],
        self_link=self_link,
        unit_proc=np.repeat(np.arange(len(units), dtype=np.int64), units),
        unit_index=np.concatenate([np.arange(k, dtype=np.int64) for k in units]),
        proc_first_unit=first,
        ids=tuple(r.node_ids[v] for v in ordl),
        node_names=tuple(r.node_names[v] for v in ordl),
        node_ops=tuple(r.node_ops[v] for v in ordl),
        latency=np.asarray(r.latency, dtype=np.float64).reshape(n, len(names))[order],
        weight_bytes=np.asarray(r.weight_bytes, dtype=np.int64)[order],
        output_bytes=output_bytes,
        activation_bytes=activation,
        coloc=coloc,
        coloc_names=tuple(groups),
        tensor_src=tsrc,
        tensor_labels=tuple(t[1] for t in r.tensors),
        tensor_bytes=tbytes,
        tensor_consumers=tensor_consumers,
        transfer_cost=cost,
        node_inputs=node_inputs,
        node_outputs=node_outputs,
        pred=csr_from_pairs(n, ed, es),
        succ=csr_from_pairs(n, es, ed),
        output_tensors=np.asarray(r.output_tensors, dtype=np.int64),
        baseline_delegate=-1 if r.baseline_delegate is None else names.index(r.baseline_delegate),
        baseline_cpu=_cpu_index(r),
        proc_copies=np.asarray(r.proc_copies, dtype=bool),
        proc_single=np.asarray(r.proc_single, dtype=bool),
        proc_unit_handoff=np.asarray(r.proc_handoff, dtype=bool),
    )


def _cpu_index(r: _cgparse.Raw) -> int:
    if r.baseline_cpu is not None:
        return r.proc_names.index(r.baseline_cpu)
    return next((i for i, k in enumerate(r.proc_kinds) if k == "cpu"), -1)
