"""TFLite's default placement, as the baseline every plan is compared with.

TFLite applies one accelerator delegate: the delegate's supported nodes are grouped into epochs
by ``PartitionGraphIntoIndependentNodeSubsets``, the largest ``max_delegated_partitions`` of
them are kept (stopping at the first with fewer than ``min_nodes_per_partition`` nodes), the
graph is re-partitioned on that reduced set, and everything else runs on the CPU (XNNPACK).
The epoch algorithm is :func:`edgepart.claim.epochs.delegate_partitions`, an exact port.

Which delegate? The cost graph's ``baseline.delegate`` if given; otherwise every accelerator is
tried as the delegate, plus the CPU alone, and the best feasible one under the evaluation
function is the baseline (the strongest "pick one delegate" choice a user could make). A
candidate is infeasible when the CPU cannot run a node left to it, or it breaks memory or
colocation; infeasible candidates are reported with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgepart.claim.epochs import delegate_partitions
from edgepart.placement.costgraph import CostGraph
from edgepart.placement.evaluate import Evaluation, evaluate, objective_key

__all__ = ["Baseline", "best_baseline", "tflite_baselines", "tflite_default_units"]


@dataclass(frozen=True, eq=False)
class Baseline:
    """One TFLite-default candidate: which delegate, the placement and its evaluation."""

    name: str  # "tflite:gpu" or "cpu-only"
    delegate: int  # processor index, -1 for CPU only
    units: np.ndarray
    evaluation: Evaluation

    @property
    def feasible(self) -> bool:
        return self.evaluation.feasible


def tflite_default_units(g: CostGraph, delegate: int) -> np.ndarray:
    """The TFLite default placement with ``delegate`` (``-1``: CPU only) as unit indices.

    Every node goes to unit 0 of the delegate or of the CPU processor (``g.baseline_cpu``).
    """
    cpu = g.baseline_cpu
    if cpu < 0:
        raise ValueError("the cost graph has no CPU processor to fall back to")
    units = np.full(g.num_nodes, g.proc_first_unit[cpu], dtype=np.int64)
    if delegate < 0 or delegate == cpu:
        return units
    supported = np.isfinite(g.latency[:, delegate])
    mx, mn = g.proc_tflite[delegate]
    subsets = delegate_partitions(
        g.node_inputs,
        g.node_outputs,
        supported,
        num_tensors=len(g.tensor_src),
        graph_outputs=g.output_tensors.tolist(),
        max_partitions=None if mx == 0 else mx,
        min_nodes_per_partition=mn,
    )
    chosen = [v for s in subsets if s.kind == "delegated" for v in s.nodes]
    units[np.asarray(chosen, dtype=np.int64)] = g.proc_first_unit[delegate]
    return units


def tflite_baselines(g: CostGraph) -> list[Baseline]:
    """All TFLite-default candidates for ``g`` (see the module docstring), evaluated.

    Returns an empty list when the graph has no CPU processor.
    """
    cpu = g.baseline_cpu
    if cpu < 0:
        return []
    if g.baseline_delegate >= 0:
        delegates = [g.baseline_delegate]
    else:
        delegates = [-1] + [p for p in range(g.num_procs) if p != cpu]
    out = []
    for d in delegates:
        units = tflite_default_units(g, d)
        name = "cpu-only" if d < 0 or d == cpu else f"tflite:{g.proc_names[d]}"
        out.append(Baseline(name, d, units, evaluate(g, units)))
    return out


def best_baseline(baselines: list[Baseline], objective: str) -> Baseline | None:
    """The feasible candidate with the best objective key (first on ties), or None."""
    best: Baseline | None = None
    for b in baselines:
        if b.feasible and (
            best is None
            or objective_key(b.evaluation, objective) < objective_key(best.evaluation, objective)
        ):
            best = b
    return best
