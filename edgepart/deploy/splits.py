"""Tensor parallelism in the partitioner: decide which splits a model's plan takes.

:func:`place_with_splits` places the model as it is (the best placement without splits), asks
:mod:`edgepart.lowering.split_choice` for candidates (layers whose latency-balanced split saves
at least 10 % of their time; layers no unit can hold), applies them to the model
(:func:`edgepart.ir.split.split_model`) and places the split model, starting the solver from
the shards on the units the balance chose. The splits are taken when the split model's
predicted latency (or period, for the throughput objective) beats the best placement without
splits by at least 10 %, or when the model fits no placement without them; otherwise the
candidates are tried again best half first, and the unsplit plan stays when none is enough, so
a model whose splits are not taken gets exactly the plan it got before tensor parallelism.

The decision is a :class:`TensorParallel` value: the splits taken with their rewrite records
and predictions, and what the unsplit plan predicted.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgepart.cost.model import CostModel
from edgepart.errors import PlacementInfeasibleError
from edgepart.ir import analysis
from edgepart.ir.graph import Model
from edgepart.ir.split import SplitRecord, split_model
from edgepart.lowering.default_placement import DefaultPlacement, profile_default_baseline
from edgepart.lowering.from_model import ModelProblem, model_costgraph
from edgepart.lowering.split_choice import (
    SPLIT_GAIN,
    SplitChoice,
    latency_splits,
    memory_splits,
)
from edgepart.placement.baseline import Baseline
from edgepart.placement.evaluate import evaluate, objective_key
from edgepart.placement.solve import Solution, SolveOptions, partition_costgraph

__all__ = ["MAX_ATTEMPTS", "Placed", "SplitTaken", "TensorParallel", "place_with_splits"]

MAX_ATTEMPTS = 3
"""Whole-model placements tried with splits (all candidates, then the best half, ...)."""


@dataclass(frozen=True)
class SplitTaken:
    """A split in the plan: what was chosen, the rewrite it became and its predictions.

    ``predicted`` holds ``unsplit_s`` (the layer alone on its unit in the unsplit plan),
    ``split_s`` (its shards where the plan put them, transfers, dispatch and the collective)
    and ``gain`` (``1 - split_s / unsplit_s``); for a memory split ``unsplit_s`` is ``None``
    (no unit can run the layer whole).
    """

    id: str
    choice: SplitChoice
    record: SplitRecord
    predicted: dict[str, float | None]


@dataclass(frozen=True)
class TensorParallel:
    """What tensor parallelism decided for a plan.

    ``taken`` lists the splits in the plan (empty when none was taken). ``unsplit_latency_s``
    is the best placement without splits (``None`` when no placement fits without them);
    ``split_latency_s`` the best with the candidates tried last (``None`` if none were);
    ``considered`` counts the candidates, ``note`` says why none was taken.
    """

    enabled: bool
    taken: tuple[SplitTaken, ...]
    unsplit_latency_s: float | None
    split_latency_s: float | None
    considered: int
    note: str
    threshold: float = SPLIT_GAIN

    @property
    def gain(self) -> float | None:
        """Predicted model-level gain of the splits (``1 - split / unsplit``)."""
        if self.unsplit_latency_s is None or self.split_latency_s is None:
            return None
        if not self.unsplit_latency_s > 0:
            return None
        return 1.0 - self.split_latency_s / self.unsplit_latency_s


@dataclass(frozen=True, eq=False)
class Placed:
    """A model placed: its problem (the split model's when splits are taken), TFLite's default,
    the solution, and the tensor-parallel decision."""

    problem: ModelProblem
    default: DefaultPlacement
    solution: Solution
    tensor_parallel: TensorParallel
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)


def place_with_splits(
    model: Model,
    profile: object,
    cost_model: CostModel,
    method: str,
    options: SolveOptions | None,
    *,
    split: bool = True,
    min_gain: float = SPLIT_GAIN,
) -> Placed:
    """Place ``model`` with or without tensor-parallel splits (see the module docstring).

    Parameters
    ----------
    model
        The source model (its main subgraph is placed).
    profile
        The loaded device profile.
    cost_model
        The cost model on that profile (measured tables included).
    method, options
        The solver and its options (``partition_costgraph``'s).
    split
        Consider splits; ``False`` places the model as it is.
    min_gain
        The least predicted gain (fraction of the latency, or period) splits must bring.

    Returns
    -------
    Placed
        The problem (the split model's when splits are taken), TFLite's default for the
        source model, the solution, the :class:`TensorParallel` decision and the time spent.

    Raises
    ------
    PlacementInfeasibleError
        No placement fits, with or without splits.
    """
    t0 = time.perf_counter()
    o = options or SolveOptions()
    problem = model_costgraph(model, profile, cost_model)  # type: ignore[arg-type]
    default = profile_default_baseline(problem)
    t1 = time.perf_counter()
    placed = _place(model, problem, default, method, o, split, min_gain)
    seconds = {"lowering": t1 - t0, "solve": time.perf_counter() - t1}
    return dataclasses.replace(placed, seconds=seconds)


def _place(
    model: Model,
    problem: ModelProblem,
    default: DefaultPlacement,
    method: str,
    o: SolveOptions,
    split: bool,
    min_gain: float,
) -> Placed:
    try:
        sol = partition_costgraph(problem.graph, method, o, reference=default.baseline)
    except PlacementInfeasibleError:
        if not split:
            raise
        forced = memory_splits(problem)
        if not forced:
            raise
        placed = _attempt(model, problem, default.baseline.units, forced, method, o)
        if placed is None:
            raise
        p1, d1, s1, taken = placed
        tp = TensorParallel(
            True, taken, None, s1.evaluation.latency_s, len(forced), "", threshold=min_gain
        )
        return Placed(p1, d1, s1, tp)
    if not split:
        return Placed(problem, default, sol, TensorParallel(False, (), None, None, 0, "off"))
    if method == "edge-cut":  # an explicit K-way cut of the model as it is: asked, not searched
        tp = TensorParallel(False, (), None, None, 0, "not with --edge-cut")
        return Placed(problem, default, sol, tp)
    base_key = objective_key(sol.evaluation, o.objective)[0]
    cands = latency_splits(problem, sol.units, min_gain=min_gain)
    if not cands:
        note = "no layer's balanced split saves 10 % of its time"
        if min_gain != SPLIT_GAIN:
            note = f"no layer's balanced split saves {min_gain:.0%} of its time"
        tp = TensorParallel(True, (), sol.evaluation.latency_s, None, 0, note, threshold=min_gain)
        return Placed(problem, default, sol, tp)
    tried: float | None = None
    subset: Sequence[SplitChoice] = cands
    for _ in range(MAX_ATTEMPTS):
        placed = _attempt(model, problem, sol.units, subset, method, o)
        if placed is not None:
            p1, d1, s1, taken = placed
            key = objective_key(s1.evaluation, o.objective)[0]
            tried = s1.evaluation.latency_s if tried is None else tried
            if key <= (1.0 - min_gain) * base_key:
                s1 = dataclasses.replace(s1, baseline=sol.baseline, baselines=sol.baselines)
                tp = TensorParallel(
                    True,
                    taken,
                    sol.evaluation.latency_s,
                    s1.evaluation.latency_s,
                    len(cands),
                    "",
                    threshold=min_gain,
                )
                return Placed(p1, default, s1, tp)
        if len(subset) == 1:
            break
        subset = subset[: max(1, len(subset) // 2)]
    note = (
        f"{len(cands)} candidate split(s); the best placement with them is predicted "
        f"{'infeasible' if tried is None else _pct(tried, sol.evaluation.latency_s)}, "
        f"short of the {min_gain:.0%} threshold"
    )
    tp = TensorParallel(
        True, (), sol.evaluation.latency_s, tried, len(cands), note, threshold=min_gain
    )
    return Placed(problem, default, sol, tp)


def _pct(split: float, unsplit: float) -> str:
    if not unsplit > 0 or not math.isfinite(split):
        return "no better"
    return f"{(1.0 - split / unsplit) * 100:.1f} % faster"


def _attempt(
    model: Model,
    problem: ModelProblem,
    node_units: np.ndarray,
    choices: Sequence[SplitChoice],
    method: str,
    o: SolveOptions,
) -> tuple[ModelProblem, DefaultPlacement, Solution, tuple[SplitTaken, ...]] | None:
    """Split ``model`` as ``choices`` say and place it; None when no placement fits."""
    res = split_model(model, [c.spec for c in choices], problem.subgraph)
    cm = problem.costs.cm
    split_problem = _with_breaks(
        model_costgraph(res.model, problem.profile, cm, subgraph=problem.subgraph), res.records
    )
    default = profile_default_baseline(split_problem)
    src_units = node_units[problem.fusion.node_of]
    start = _start_units(split_problem, src_units, res.op_map, choices, res.records)
    g = split_problem.graph
    starts = [Baseline("tensor-parallel", -1, start, evaluate(g, start))]
    try:
        sol = partition_costgraph(g, method, o, reference=default.baseline, starts=starts)
    except PlacementInfeasibleError:
        return None
    taken = tuple(
        SplitTaken(f"s{k}", c, r, _predicted(split_problem, sol, c, r))
        for k, (c, r) in enumerate(zip(choices, res.records, strict=True))
    )
    return split_problem, default, sol, taken


def _with_breaks(problem: ModelProblem, records: Sequence[SplitRecord]) -> ModelProblem:
    """``problem`` with an epoch break on the nodes where shards start and collectives run.

    Partitions run whole: a partition's outputs reach other units when it ends. A shard that
    joined the partition of the op producing its input would hold that input back from the
    other units' shards until it finished, and a collective that joined a shard's partition
    would make that shard wait for all the others: either serializes the split. The breaks make
    such nodes open partitions of their own (:mod:`edgepart.placement.evaluate`).
    """
    fz = problem.fusion
    brk = np.zeros(fz.num_nodes, dtype=bool)
    for r in records:
        for ops in r.shards:
            brk[fz.node_of[ops[0]]] = True
        brk[fz.node_of[list(r.collective_ops)]] = True
    graph = dataclasses.replace(problem.graph, epoch_break=brk)
    return dataclasses.replace(problem, graph=graph)


def _start_units(
    split_problem: ModelProblem,
    src_units: np.ndarray,
    op_map: np.ndarray,
    choices: Sequence[SplitChoice],
    records: Sequence[SplitRecord],
) -> np.ndarray:
    """The split graph's placement the balance proposes: every source op where the unsplit
    plan put it, every shard on its chosen unit, every collective on the layer's unit."""
    n_ops = split_problem.fusion.num_ops
    unit_of_op = np.full(n_ops, -1, dtype=np.int64)
    kept = np.flatnonzero(op_map >= 0)
    unit_of_op[op_map[kept]] = src_units[kept]
    for c, r in zip(choices, records, strict=True):
        for s, ops in enumerate(r.shards):
            unit_of_op[list(ops)] = c.units[s]
        unit_of_op[list(r.collective_ops)] = c.collective_unit
    # an all-gather copied for a later split's shard runs where that shard runs
    sg = split_problem.model.subgraphs[split_problem.subgraph]
    readers = analysis.consumers(sg)
    for r in records:
        for op in r.collective_ops:
            made = int(sg.op_outputs.row(op)[0])
            if made != r.output:
                users = readers.row(made)
                if len(users):
                    unit_of_op[op] = unit_of_op[int(users[0])]
    fz = split_problem.fusion
    out = np.zeros(fz.num_nodes, dtype=np.int64)
    for v in range(fz.num_nodes):
        us = unit_of_op[fz.node_ops(v)]
        us = us[us >= 0]
        out[v] = int(us[0]) if len(us) else 0
    return out


def _predicted(
    problem: ModelProblem, sol: Solution, choice: SplitChoice, record: SplitRecord
) -> dict[str, float | None]:
    """The split's time where the plan put its shards: the slowest shard (input link, the
    unit's dispatch, its ops, the result's link back) plus the collective and one dispatch."""
    g, gc, fz = problem.graph, problem.costs, problem.fusion
    sg = problem.model.subgraphs[problem.subgraph]
    units = sol.units[fz.node_of]
    coll = [int(o) for o in record.collective_ops]
    uc = int(units[coll[0]])
    pc = int(g.unit_proc[uc])
    lat = np.asarray(gc.latency, dtype=np.float64)
    slowest = 0.0
    for s, ops in enumerate(record.shards):
        u = int(units[ops[-1]])
        p = int(g.unit_proc[u])
        t = float(lat[list(ops), p].sum())
        if u != uc:
            t += float(g.proc_dispatch[p])
            ins = {int(x) for o in ops for x in sg.op_inputs.row(o).tolist() if x >= 0}
            t += sum(gc.transfer_cost(x, pc, p) for x in ins if x in record.inputs)
            t += gc.transfer_cost(record.shard_outputs[s], p, pc)
        slowest = max(slowest, t)
    split_s = slowest + float(lat[coll, pc].sum()) + float(g.proc_dispatch[pc])
    unsplit = choice.unsplit_s if math.isfinite(choice.unsplit_s) else None
    gain = None if unsplit is None or not unsplit > 0 else 1.0 - split_s / unsplit
    return {"unsplit_s": unsplit, "split_s": split_s, "gain": gain}
