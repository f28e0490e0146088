"""A ``.tflite`` model under a device profile, as the cost graph the placement solvers read.

Steps (all array-based, so 100,000-op graphs take seconds at most):

1. per-op support on every processor from the exact TFLite claiming rules
   (:func:`~edgepart.lowering.processor_support.processor_support`);
2. per-op latency on every processor from the cost model
   (:meth:`edgepart.cost.model.CostModel.costs`: measured tables, interpolation, roofline);
3. the fusion pre-pass (:func:`~edgepart.lowering.fuse.fuse`) merges ops into nodes;
4. nodes get the summed latency of their ops on each processor, or "unsupported" (``inf``)
   where the processor refuses any of their ops or helpers; weights are the constants they
   read; edges are the tensors between nodes; processors, units, memory, dispatch overheads and
   links come from the profile.

Processor units. A profile's ``units`` counts cores and its peak figures are for ``threads`` of
them working on one invocation, so the partitioner gets ``units // threads`` identical
execution streams for a CPU (each at the profile's speed: an assumption where the cores differ,
as on big.LITTLE phones) and ``threads`` for an accelerator, whose ``threads`` is its command
queues (one invocation at a time per queue). Memory per unit is the processor's capacity.

Transfers between memory domains use the profile's links: latency plus bytes over bandwidth,
routed through intermediate domains where no direct link exists (cheapest path per tensor).
Called subgraphs (IF/WHILE bodies, CALL_ONCE initializers) travel with their caller op: their
cost is in the caller's (:func:`edgepart.cost.work.op_work`), and extraction copies them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from edgepart.cost.hardware import hardware_from_profile
from edgepart.cost.model import CostModel, GraphCosts
from edgepart.cost.table import LatencyTable
from edgepart.cost.table_use import check_tables_used
from edgepart.devices.delegate import load_delegate
from edgepart.devices.profile import DeviceProfile, load_profile
from edgepart.errors import PlacementInfeasibleError, ProfileError, UsageError
from edgepart.ir import analysis
from edgepart.ir.graph import Model, Subgraph
from edgepart.lowering.fuse import Fusion, fuse
from edgepart.lowering.processor_support import ProcessorSupport, processor_support
from edgepart.placement.costgraph import CostGraph
from edgepart.placement.topology import csr_from_pairs

__all__ = ["ModelProblem", "execution_streams", "model_costgraph"]

_KINDS = {"cpu": "cpu", "gpu": "gpu", "dsp": "dsp", "npu": "npu"}


@dataclass(frozen=True, eq=False)
class ModelProblem:
    """A model turned into a cost graph, with everything needed to map a plan back to ops.

    ``tensor_index[t]`` is the source-subgraph tensor behind cost-graph tensor ``t``;
    ``node_unsupported[v, p]`` lists why node ``v`` cannot run on processor ``p`` ("" if it can).
    """

    model: Model
    subgraph: int
    profile: DeviceProfile
    graph: CostGraph
    fusion: Fusion
    support: ProcessorSupport
    costs: GraphCosts
    tensor_index: np.ndarray
    no_cost: np.ndarray  # [N, P] bool: supported but the cost model has no estimate (no peak)

    def node_ops(self, v: int) -> np.ndarray:
        return self.fusion.node_ops(v)

    def why_not(self, v: int, p: int) -> str:
        """The first refusal reason of node ``v`` on processor ``p`` ("" if supported)."""
        ops = self.fusion.node_ops(v)
        for op in ops.tolist():
            r = self.support.why(op, p)
            if r:
                return r
        if self.no_cost[v, p]:
            return "no cost estimate: the processor has no peak for this dtype"
        return ""


def execution_streams(kind: str, units: int, threads: int) -> int:
    """Partitioner units of a profile processor (see the module docstring)."""
    if kind == "cpu":
        return max(1, units // max(1, threads))
    return max(1, threads)


def _transfer_matrix(profile: DeviceProfile, domains: list[str], nbytes: np.ndarray) -> np.ndarray:
    """``[T, D, D]`` cheapest transfer seconds per tensor between domains (Floyd-Warshall)."""
    hw = hardware_from_profile(profile)
    d = len(domains)
    lat = np.full((d, d), np.inf)
    inv = np.zeros((d, d))
    for i, a in enumerate(domains):
        for j, b in enumerate(domains):
            if i == j:
                lat[i, j] = 0.0
                continue
            link = hw.link(a, b)
            if link is not None:
                lat[i, j] = link.latency_s
                inv[i, j] = 1.0 / link.bandwidth if link.bandwidth > 0 else np.inf
    cost = lat[None, :, :] + nbytes.astype(np.float64)[:, None, None] * inv[None, :, :]
    for k in range(d):
        via = cost[:, :, k : k + 1] + cost[:, k : k + 1, :]
        np.minimum(cost, via, out=cost)
    return cost


def model_costgraph(
    model: Model,
    profile: DeviceProfile | str,
    cost_model: CostModel | None = None,
    *,
    tables: LatencyTable | None = None,
    table_for: Mapping[str, str] | None = None,
    subgraph: int = 0,
    free_s: float = 0.0,
    fusion: bool = True,
) -> ModelProblem:
    """Turn ``model.subgraphs[subgraph]`` under ``profile`` into a :class:`ModelProblem`.

    Parameters
    ----------
    model
        The model (read with :func:`edgepart.tflite.reader.read_model`).
    profile
        A device profile (name, path or loaded).
    cost_model
        The cost model to use; default: one built from the profile and ``tables``.
    tables, table_for
        Measured latency tables and the processor mapping, when ``cost_model`` is not given.
    free_s
        Latency at or below which a reshape-like op counts as free for the fusion pre-pass.
    fusion
        Run the fusion pre-pass (otherwise every op is a node; helpers are still cloned).

    Raises
    ------
    UsageError
        The subgraph does not exist or has no ops.
    ProfileError
        Two memory domains the processors use have no link path between them.
    PlacementInfeasibleError
        Some op can run on no processor (refused everywhere, or without a cost estimate),
        naming the op and each processor's reason.
    """
    prof = load_profile(profile) if isinstance(profile, str) else profile
    if not 0 <= subgraph < len(model.subgraphs):
        raise UsageError(
            f"subgraph {subgraph} does not exist; the model has {len(model.subgraphs)}"
        )
    sg = model.subgraphs[subgraph]
    if sg.num_ops == 0:
        raise UsageError(f"subgraph {subgraph} has no ops: nothing to partition")
    if cost_model is None:
        check_tables_used(
            tables, [(p.name, p.kind) for p in prof.processors], dict(table_for or {}), prof.name
        )
    cm = cost_model or CostModel(hardware_from_profile(prof), tables, table_for=table_for)
    gc = cm.costs(sg, model)
    if tuple(gc.processors) != tuple(p.name for p in prof.processors):
        raise UsageError(
            f"the cost model's processors {list(gc.processors)} do not match profile "
            f"{prof.name!r} ({[p.name for p in prof.processors]})"
        )
    sup = processor_support(sg, prof)
    lat_op = np.asarray(gc.latency, dtype=np.float64)
    groups: list[tuple[int, ...]] = []
    if fusion:
        for p in range(len(prof.processors)):
            groups.extend(gc.groups(p))
    fz = fuse(
        sg,
        model=model,
        subgraph=subgraph,
        support=sup.supported,
        latency=lat_op if fusion else None,
        fused_groups=groups,
        free_s=free_s,
    )
    problem = _assemble(model, subgraph, prof, gc, sup, fz, lat_op)
    stuck = np.flatnonzero(~np.isfinite(problem.graph.latency).any(axis=1))
    if len(stuck):
        v = int(stuck[0])
        ops = problem.node_ops(v).tolist()
        why = "; ".join(f"{p.name}: {problem.why_not(v, k)}" for k, p in enumerate(prof.processors))
        raise PlacementInfeasibleError(
            f"{sg.describe_op(ops[0])} (node of {len(ops)} op(s)) can run on no processor of "
            f"profile {prof.name!r}: {why}"
        )
    return problem


def _assemble(
    model: Model,
    subgraph: int,
    prof: DeviceProfile,
    gc: GraphCosts,
    sup: ProcessorSupport,
    fz: Fusion,
    lat_op: np.ndarray,
) -> ModelProblem:
    sg = model.subgraphs[subgraph]
    nn, npr = fz.num_nodes, len(prof.processors)
    mem_rows = fz.members.row_ids()
    mem_ops = fz.members.idx
    hel_rows = fz.helpers.row_ids()
    hel_ops = fz.helpers.idx
    all_rows = np.concatenate([mem_rows, hel_rows])
    all_ops = np.concatenate([mem_ops, hel_ops])

    # --- latency and support per node
    finite = np.isfinite(lat_op)
    lat0 = np.where(finite, lat_op, 0.0)
    latency = np.zeros((nn, npr))
    np.add.at(latency, mem_rows, lat0[mem_ops])
    bad_sup = np.zeros((nn, npr), dtype=bool)
    np.logical_or.at(bad_sup, all_rows, ~sup.supported[all_ops])
    no_cost = np.zeros((nn, npr), dtype=bool)
    np.logical_or.at(no_cost, mem_rows, ~finite[mem_ops] & sup.supported[mem_ops])
    latency[bad_sup | no_cost] = np.inf

    # --- weights: distinct constants read by a node's ops (helpers included)
    const = sg.tensor_is_constant
    nbytes = sg.tensor_nbytes.astype(np.int64)
    ins = sg.op_inputs.take(all_ops)
    in_rows = np.repeat(all_rows, ins.lengths())
    t_in = ins.idx.astype(np.int64)
    ok = t_in >= 0
    in_rows, t_in = in_rows[ok], t_in[ok]
    is_c = const[t_in]
    key = np.unique(in_rows[is_c] * (sg.num_tensors + 1) + t_in[is_c])
    weight = np.bincount(
        key // (sg.num_tensors + 1), weights=nbytes[key % (sg.num_tensors + 1)], minlength=nn
    ).astype(np.int64)
    # a compiled accelerator program carries the weights of the ops it replaced in its options
    for op in gc.unknown_why:
        weight[int(fz.node_of[op])] += len(sg.op_custom_options[op] or b"")

    # --- tensors crossing nodes (member ops only: helpers' outputs are recomputed per node)
    prod = analysis.producers(sg)
    node_of = fz.node_of
    m_ins = sg.op_inputs.take(mem_ops)
    r_in = np.repeat(mem_rows, m_ins.lengths())
    t_r = m_ins.idx.astype(np.int64)
    keep = t_r >= 0
    r_in, t_r = r_in[keep], t_r[keep]
    keep = ~const[t_r] & ~sg.tensor_is_variable[t_r]
    p_op = prod[t_r]
    keep &= (p_op < 0) | ~fz.is_helper[np.maximum(p_op, 0)]
    r_in, t_r, p_op = r_in[keep], t_r[keep], p_op[keep]
    src_node = np.where(p_op >= 0, node_of[np.maximum(p_op, 0)], -1)
    is_input = np.zeros(sg.num_tensors, dtype=bool)
    is_input[sg.inputs.astype(np.int64)] = True
    cross = (src_node != r_in) & ((src_node >= 0) | is_input[t_r])
    # model outputs produced by a member op
    outs = sg.outputs.astype(np.int64)
    outs = outs[(outs >= 0) & (prod[outs] >= 0)]
    outs = outs[~fz.is_helper[prod[outs]]]
    tensors = np.unique(np.concatenate([t_r[cross], outs]))
    tid = np.full(sg.num_tensors, -1, dtype=np.int64)
    tid[tensors] = np.arange(len(tensors))
    tsrc = np.where(prod[tensors] >= 0, node_of[np.maximum(prod[tensors], 0)], -1)
    tbytes = nbytes[tensors]
    cons = csr_from_pairs(len(tensors), tid[t_r[cross]], r_in[cross])
    node_inputs = csr_from_pairs(nn, r_in[cross], tid[t_r[cross]])
    made = np.flatnonzero(tsrc >= 0)
    node_outputs = csr_from_pairs(nn, tsrc[made], made)
    e_src = tsrc[cons.row_ids()]
    e_dst = cons.idx
    e_ok = e_src >= 0
    succ = csr_from_pairs(nn, e_src[e_ok], e_dst[e_ok])
    pred = csr_from_pairs(nn, e_dst[e_ok], e_src[e_ok])
    if len(succ.idx) and (np.repeat(np.arange(nn), succ.lengths()) >= succ.idx).any():
        raise AssertionError("fusion produced nodes out of topological order")

    out_bytes = np.bincount(tsrc[made], weights=tbytes[made], minlength=nn).astype(np.int64)
    in_bytes = np.bincount(node_inputs.row_ids(), weights=tbytes[node_inputs.idx], minlength=nn)
    act = in_bytes.astype(np.int64) + out_bytes
    # an op's own non-constant inputs and outputs are resident while it runs, inside a node too
    op_act = _op_activation_bytes(sg, const, nbytes)
    np.maximum.at(act, mem_rows, op_act[mem_ops])

    # --- processors, units, domains
    procs = prof.processors
    host_dom = next((p.memory_domain for p in procs if p.kind == "cpu"), procs[0].memory_domain)
    domains = sorted({p.memory_domain for p in procs} | {host_dom})
    dom = {d: i for i, d in enumerate(domains)}
    transfer = _transfer_matrix(prof, domains, tbytes)
    probe = _transfer_matrix(prof, domains, np.zeros(1))[0]
    for i, j in zip(*np.nonzero(~np.isfinite(probe)), strict=True):
        raise ProfileError(
            f"{prof.path or prof.name}: no link path from memory domain {domains[int(i)]!r} "
            f"to {domains[int(j)]!r}; add a link between them"
        )
    units = np.asarray(
        [execution_streams(p.kind, int(p.units.value), int(p.threads.value)) for p in procs],
        dtype=np.int64,
    )
    first = np.zeros(npr, dtype=np.int64)
    first[1:] = np.cumsum(units)[:-1]
    specs = [load_delegate(p.delegate) for p in procs]
    disp = np.asarray([gc.invoke_overhead(i).seconds for i in range(npr)], dtype=np.float64)

    names, ops_lbl = _node_labels(sg, fz)
    g = CostGraph(
        name=f"{_model_name(model)}@{prof.name}",
        source=model.source or "<model>",
        proc_names=tuple(p.name for p in procs),
        proc_kinds=tuple(_KINDS.get(p.kind, "other") for p in procs),
        proc_units=units,
        proc_memory=np.asarray([float(p.memory_capacity_bytes.value) for p in procs]),
        proc_domain=np.asarray([dom[p.memory_domain] for p in procs], dtype=np.int64),
        proc_dispatch=disp,
        proc_tflite=tuple(
            (s.policy.max_delegated_partitions, s.policy.min_nodes_per_partition) for s in specs
        ),
        domain_names=tuple(domains),
        host_domain=dom[host_dom],
        self_link=np.zeros(len(domains), dtype=bool),
        unit_proc=np.repeat(np.arange(npr, dtype=np.int64), units),
        unit_index=np.concatenate([np.arange(k, dtype=np.int64) for k in units]),
        proc_first_unit=first,
        ids=tuple(range(nn)),
        node_names=tuple(names),
        node_ops=tuple(ops_lbl),
        latency=latency,
        weight_bytes=weight,
        output_bytes=out_bytes,
        activation_bytes=act,
        coloc=np.full(nn, -1, dtype=np.int64),
        coloc_names=(),
        tensor_src=tsrc,
        tensor_labels=tuple(int(t) for t in tensors.tolist()),
        tensor_bytes=tbytes,
        tensor_consumers=cons,
        transfer_cost=transfer,
        node_inputs=node_inputs,
        node_outputs=node_outputs,
        pred=pred,
        succ=succ,
        output_tensors=tid[outs] if len(outs) else np.zeros(0, np.int64),
        baseline_delegate=-1,
        baseline_cpu=next((i for i, p in enumerate(procs) if p.kind == "cpu"), -1),
        proc_copies=np.asarray([p.transfers_on_unit for p in procs], dtype=bool),
        proc_single=np.asarray([p.single_partition for p in procs], dtype=bool),
        proc_unit_handoff=np.zeros(npr, dtype=bool),
    )
    return ModelProblem(model, subgraph, prof, g, fz, sup, gc, tensors, no_cost & ~bad_sup)


def _op_activation_bytes(sg: Subgraph, const: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """Per op: bytes of its distinct non-constant inputs plus its outputs."""
    n = sg.num_ops
    out = np.zeros(n, dtype=np.int64)
    for csr, want_const in ((sg.op_inputs, False), (sg.op_outputs, None)):
        rows = csr.row_ids()
        t = csr.idx.astype(np.int64)
        ok = t >= 0
        rows, t = rows[ok], t[ok]
        if want_const is False:
            keep = ~const[t]
            rows, t = rows[keep], t[keep]
        key = np.unique(rows * (sg.num_tensors + 1) + t)
        out += np.bincount(
            key // (sg.num_tensors + 1), weights=nbytes[key % (sg.num_tensors + 1)], minlength=n
        ).astype(np.int64)
    return out


def _node_labels(sg: Subgraph, fz: Fusion) -> tuple[list[str], list[str]]:
    """Per node: a name (its last op's first output tensor) and its op kinds joined by '+'."""
    names: list[str] = []
    kinds: list[str] = []
    ptr, idx = fz.members.ptr.tolist(), fz.members.idx.tolist()
    tn = sg.tensor_names
    for v in range(fz.num_nodes):
        ops = idx[ptr[v] : ptr[v + 1]]
        last = ops[-1]
        outs = sg.op_outputs.row(last)
        names.append(tn[int(outs[0])] if len(outs) and outs[0] >= 0 else f"op{last}")
        ks = [sg.op_name(o) for o in ops[:4]]
        kinds.append("+".join(ks) + (f"+{len(ops) - 4} more" if len(ops) > 4 else ""))
    return names, kinds


def _model_name(model: Model) -> str:
    return os.path.basename(model.source) if model.source else "model"
