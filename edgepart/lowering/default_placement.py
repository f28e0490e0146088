"""TFLite's default placement of a model on a device profile, as a baseline on the cost graph.

What an app gets without edgepart: the profile's default user delegates applied in order, then
XNNPACK lazily on what is left, then the builtin kernels, exactly as
:func:`edgepart.claim.delegation.claim` predicts (GPU partition cap, FP16 helper, the Edge TPU
compiler's single prefix cut, ...). Every op lands on the processor its delegate reaches, or the
CPU. The placement is evaluated by the same evaluation function as every plan (so its
independent partitions may overlap; its ``serial_latency_s`` is how the TFLite interpreter runs
it, one partition after another).

The cost graph places fused nodes, not ops. When TFLite's claim splits a node (its ops on
different processors: possible where a state node spans ops a delegate takes), the node goes to
the CPU and the split is counted in :attr:`DefaultPlacement.split_nodes`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgepart.claim.delegation import claim
from edgepart.lowering.from_model import ModelProblem
from edgepart.placement.baseline import Baseline
from edgepart.placement.evaluate import evaluate

__all__ = ["DefaultPlacement", "profile_default_baseline"]


@dataclass(frozen=True, eq=False)
class DefaultPlacement:
    """The default-claim baseline plus how it was derived."""

    baseline: Baseline
    delegates: tuple[str, ...]  # the user delegates applied (XNNPACK follows lazily)
    op_processor: np.ndarray  # [ops] processor index per op under TFLite's claim
    split_nodes: int  # fused nodes whose ops TFLite spreads over processors


def profile_default_baseline(problem: ModelProblem) -> DefaultPlacement:
    """TFLite's default placement for ``problem`` (see the module docstring)."""
    prof, g, fz = problem.profile, problem.graph, problem.fusion
    res = claim(
        problem.model,
        list(prof.default_delegates),
        subgraph=problem.subgraph,
        context=dict(prof.context),
    )
    cpu = g.baseline_cpu if g.baseline_cpu >= 0 else 0
    by_delegate = {p.delegate: i for i, p in reversed(list(enumerate(prof.processors)))}
    proc = np.full(fz.num_ops, cpu, dtype=np.int64)
    for op, owner in enumerate(res.owner):
        if owner is not None:
            proc[op] = by_delegate.get(owner, cpu)
    rows = fz.members.row_ids()
    lo = np.full(fz.num_nodes, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(fz.num_nodes, -1, dtype=np.int64)
    np.minimum.at(lo, rows, proc[fz.members.idx])
    np.maximum.at(hi, rows, proc[fz.members.idx])
    split = lo != hi
    node_proc = np.where(split, cpu, hi)
    # a node the claim gives to a processor that cannot run all of it (a helper refused there)
    bad = ~np.isfinite(g.latency[np.arange(fz.num_nodes), node_proc])
    node_proc[bad] = cpu
    units = g.proc_first_unit[node_proc]
    names = list(prof.default_delegates) or ["xnnpack"]
    first = by_delegate.get(prof.default_delegates[0], -1) if prof.default_delegates else -1
    base = Baseline(f"tflite-default:{'+'.join(names)}", first, units, evaluate(g, units))
    return DefaultPlacement(base, tuple(prof.default_delegates), proc, int((split | bad).sum()))
