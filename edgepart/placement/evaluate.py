"""The one evaluation function every placement is judged by (heuristic, exact, baselines, checker).

A *placement* is an integer array giving, for every node (in execution order), the global index
of the processor unit that runs it (``CostGraph.unit_proc`` maps units to processors).
:func:`evaluate` turns it into partitions, a schedule and the two objectives, step by step:

1. **Partitions** (:func:`form_partitions`). TFLite's ``PartitionGraphIntoIndependentNodeSubsets``
   in greedy mode, generalized from two node types (delegated / not) to one type per unit:
   repeatedly open an *epoch*; its unit is the unit of the lowest-indexed ready node (ready = all
   predecessors in earlier epochs); every ready node on that unit joins, including nodes that
   become ready through the epoch's own members, until none is left. Each epoch is one partition.
   Every partition is convex and the creation order is a topological order of the partition
   DAG (a node joins only when everything it depends on is already placed). On a processor
   marked ``single_partition`` a unit's epoch opens only once all of the unit's nodes can run
   (every predecessor on another unit placed) and then takes them all: the unit runs one
   partition. If that is impossible (a path leaves the unit and comes back, or such units wait
   on each other) the placement is infeasible. A node marked in
   ``CostGraph.epoch_break`` (a tensor-parallel shard) does not join the partition whose own
   members made it ready; it waits for a later epoch, so that partition ends and hands its
   outputs to the other units' shards before this one runs.
2. **Durations.** A partition on processor ``p`` takes ``dispatch_s[p]`` plus the sum of its
   nodes' latencies on ``p`` (nodes run one after another inside the call), plus, on a processor
   marked ``transfers_on_unit``, the cost of every transfer it sends and of every transfer it is
   the first reader of in its domain (its own cores do the copy).
3. **Tensors.** A tensor produced in partition ``A`` (unit ``ua``, memory domain ``a``) and read
   by partition ``B != A`` (unit ``ub``, domain ``b``) costs the edge's ``transfer_s`` or the
   ``a -> b`` link's ``latency_s + bytes / bandwidth``. Same domain: free unless a self-link
   ``a -> a`` is given, and free on the same unit unless its processor is marked
   ``charge_unit_handoffs``. A tensor is transferred **once per destination domain** (all
   partitions of that domain that read it share the copy), which is what is counted in
   transfers and link loads. It is available to ``B`` at ``end(A) + cost``, or at ``end(A)``
   when a copying unit already spent the cost inside a partition (the sender's, or ``B``'s when
   ``B`` made the copy). Model inputs sit in the host domain at time 0; model outputs must
   reach the host domain.
4. **Schedule.** List scheduling with a fixed priority: partitions in creation order; each
   starts at ``max(time its unit is free, arrival of its last input)`` on its own unit (no
   insertion into earlier idle gaps). Transfers do not occupy units unless they copy (step 2).
   Different units overlap.
5. **Objectives.** ``latency_s`` = makespan = the later of the last partition end and the last
   model output arriving at the host. ``period_s`` (throughput objective; pipelined inputs) = the
   busiest resource's work per input: ``max`` over units of the sum of their partitions'
   durations and over directed links of the sum of their transfer costs.
   ``serial_latency_s`` = the same partitions run one at a time in creation order (how the
   TFLite interpreter executes a delegated graph), reported for baselines.
6. **Constraints.** Support (finite latency), memory per unit (``weights + arena``, arena = the
   largest ``activation_bytes`` of a node on the unit: the node's distinct input tensors plus its
   outputs must be resident while it runs, so no arena can be smaller; partitions on one unit run
   one at a time and share it), colocation (a group's nodes share one unit) and one partition per
   unit where asked. Convexity holds by construction. A violated placement gets objective
   ``inf`` and its violations listed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from edgepart.placement import _core
from edgepart.placement.costgraph import CostGraph

__all__ = ["OBJECTIVES", "Evaluation", "evaluate", "form_partitions", "objective_key", "score"]

OBJECTIVES = ("latency", "throughput")


@dataclass(frozen=True, eq=False)
class Evaluation:
    """Everything :func:`evaluate` derives from a placement (arrays indexed as documented)."""

    units: np.ndarray  # [N] unit per node
    part_of: np.ndarray  # [N] partition per node
    part_unit: np.ndarray  # [Q] unit per partition (creation order)
    part_start: np.ndarray  # [Q]
    part_end: np.ndarray  # [Q]
    part_duration: np.ndarray  # [Q]
    latency_s: float
    period_s: float
    serial_latency_s: float
    unit_load: np.ndarray  # [U]
    unit_weight_bytes: np.ndarray  # [U]
    unit_arena_bytes: np.ndarray  # [U]
    # one row per transfer (tensor, src domain, dst domain, src partition or -1, start, end)
    xfer_tensor: np.ndarray
    xfer_src_dom: np.ndarray
    xfer_dst_dom: np.ndarray
    xfer_src_part: np.ndarray
    xfer_start: np.ndarray
    xfer_end: np.ndarray
    violations: tuple[str, ...]

    @property
    def feasible(self) -> bool:
        return not self.violations

    @property
    def num_partitions(self) -> int:
        return len(self.part_unit)


def objective_key(ev: Evaluation, objective: str) -> tuple[float, float]:
    """The lexicographic key solvers minimize: (primary, secondary)."""
    if not ev.feasible:
        return (math.inf, math.inf)
    if objective == "throughput":
        return (ev.period_s, ev.latency_s)
    return (ev.latency_s, ev.period_s)


def score(g: CostGraph, units: np.ndarray | list[int], objective: str) -> tuple[float, float]:
    """``objective_key(evaluate(g, units), objective)`` without building the detailed result.

    The same kernel as :func:`evaluate` (so the same numbers); infeasible placements stop early.
    """
    r = _core.run(_core.compiled(g), _as_list(units), False)
    if not r.feasible:
        return (math.inf, math.inf)
    if objective == "throughput":
        return (r.period, r.latency)
    return (r.latency, r.period)


def _check_units(g: CostGraph, units: np.ndarray) -> None:
    if units.shape != (g.num_nodes,):
        raise ValueError(f"a placement has one unit per node: {g.num_nodes}, got {units.shape}")
    if len(units) and (units.min() < 0 or units.max() >= g.num_units):
        raise ValueError(f"unit indices must be 0..{g.num_units - 1}")


def _as_list(units: np.ndarray | list[int]) -> list[int]:
    return units.tolist() if isinstance(units, np.ndarray) else list(units)


def form_partitions(g: CostGraph, units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Greedy epoch decomposition with one node type per distinct value of ``units``.

    Returns
    -------
    part_of : numpy.ndarray
        ``[N]`` partition index of every node.
    part_unit : numpy.ndarray
        ``[Q]`` the type (unit) of every partition, in creation order.
    """
    part_of, part_unit = _core.epochs(_core.compiled(g), _as_list(units))
    return np.asarray(part_of, dtype=np.int64), np.asarray(part_unit, dtype=np.int64)


def evaluate(g: CostGraph, units: np.ndarray | list[int]) -> Evaluation:
    """Partition, schedule and score a placement (the single evaluation function).

    Parameters
    ----------
    g : CostGraph
        The problem.
    units : numpy.ndarray
        ``[N]`` global unit index per node (execution order).

    Returns
    -------
    Evaluation
        Partitions, schedule, objectives, per-unit memory and any constraint violations.

    Examples
    --------
    Two nodes on a CPU and a GPU in another memory domain: the tensor between them crosses the
    link (latency 1 ms, 1 MB/s, 1000 bytes: 2 ms) and the GPU call pays its 0.5 ms dispatch.

    >>> from edgepart.placement.costgraph import costgraph_from_dict
    >>> g = costgraph_from_dict({"format": "edgepart-costgraph", "version": 1,
    ...     "processors": [{"name": "cpu", "kind": "cpu"},
    ...                    {"name": "gpu", "kind": "gpu", "dispatch_s": 0.0005}],
    ...     "links": [{"src": "cpu", "dst": "gpu", "latency_s": 0.001,
    ...                "bandwidth_bytes_per_s": 1e6}],
    ...     "nodes": [{"id": 0, "latency_s": {"cpu": 0.004, "gpu": 0.001}},
    ...               {"id": 1, "latency_s": {"cpu": 0.003, "gpu": 0.001}}],
    ...     "edges": [{"src": 0, "dst": 1, "bytes": 1000}]})
    >>> ev = evaluate(g, np.array([0, 1]))
    >>> round(ev.latency_s, 6), ev.num_partitions
    (0.0075, 2)
    """
    units = np.asarray(units, dtype=np.int64)
    _check_units(g, units)
    r = _core.run(_core.compiled(g), units.tolist(), True)
    assert r.part_of is not None and r.part_unit is not None and r.moved is not None
    nd = len(g.domain_names)
    rows = sorted(r.moved.items(), key=lambda kv: (kv[1][2], kv[1][0], kv[0] % nd))
    end = np.asarray(r.end)
    xp = np.asarray([m[2] for _, m in rows], dtype=np.int64)
    xc = np.asarray([m[3] for _, m in rows], dtype=np.float64)
    xs = np.where(xp >= 0, end[np.maximum(xp, 0)] if len(end) else 0.0, 0.0)
    weights = np.asarray(r.weights, dtype=np.int64)
    arena = np.asarray(r.arena, dtype=np.int64)
    return Evaluation(
        units=units,
        part_of=np.asarray(r.part_of, dtype=np.int64),
        part_unit=np.asarray(r.part_unit, dtype=np.int64),
        part_start=np.asarray(r.start),
        part_end=end,
        part_duration=np.asarray(r.dur),
        latency_s=r.latency if r.feasible else math.inf,
        period_s=r.period if r.feasible else math.inf,
        serial_latency_s=r.serial if r.feasible else math.inf,
        unit_load=np.asarray(r.load),
        unit_weight_bytes=weights,
        unit_arena_bytes=arena,
        xfer_tensor=np.asarray([m[0] for _, m in rows], dtype=np.int64),
        xfer_src_dom=np.asarray([m[1] for _, m in rows], dtype=np.int64),
        xfer_dst_dom=np.asarray([k % nd for k, _ in rows], dtype=np.int64),
        xfer_src_part=xp,
        xfer_start=xs,
        xfer_end=xs + xc,
        violations=_violations(g, units, r, weights, arena),
    )


def _violations(
    g: CostGraph, units: np.ndarray, r: _core.Run, weights: np.ndarray, arena: np.ndarray
) -> tuple[str, ...]:
    out: list[str] = []
    if r.unsupported:
        v = r.unsupported[0]
        out.append(
            f"{g.node_label(v)} is placed on {g.unit_name(int(units[v]))}, which does not "
            f"support it ({len(r.unsupported)} unsupported node(s) in total)"
        )
    for v in r.split_group or ():
        gi = int(g.coloc[v])
        first = int(np.flatnonzero(g.coloc == gi)[0])
        out.append(
            f"colocation group {g.coloc_names[gi]!r} is split: {g.node_label(v)} is on "
            f"{g.unit_name(int(units[v]))}, the group's first node on "
            f"{g.unit_name(int(units[first]))}"
        )
    for u in r.unpartitionable or ():
        out.append(
            f"unit {g.unit_name(u)} must run its nodes as one partition (single_partition) but "
            "they cannot form one: a path leaves the unit and comes back, or another such unit "
            "waits on it while it waits on that one"
        )
    cap = g.proc_memory[g.unit_proc]
    for u in np.flatnonzero(weights + arena > cap).tolist():
        out.append(
            f"unit {g.unit_name(u)} needs {int(weights[u] + arena[u])} bytes "
            f"({int(weights[u])} weights + {int(arena[u])} arena) but has {int(cap[u])}"
        )
    return tuple(out)
