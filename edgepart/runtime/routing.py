"""Tensor routing and dispatch order, computed once when a bundle is loaded.

Routing is data (:class:`Routes`): which partition-file tensor each model input is written to,
where each partition pulls each input from, where each readable tensor lives, which partitions
share a unit and whether any two may run concurrently. The interpreter and the schedulers only
follow it.

Why a boundary tensor is pulled straight from its producer's output tensor: LiteRT's Python API
cannot bind a caller's buffer to an interpreter tensor (no ``SetCustomAllocationForTensor``
binding; ``set_tensor`` always copies), so the fewest copies possible is one per consumer:
``consumer.set_tensor(i, producer.tensor(j)())`` copies from a view of the producer's output
buffer into the consumer's input buffer. Both buffers are LiteRT's, allocated once by
``allocate_tensors``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from edgepart.bundle.format import Plan
from edgepart.bundle.plan_graph import PlanGraph

__all__ = ["Routes", "plan_routes"]


@dataclass(frozen=True)
class Routes:
    """Routing of one plan (positions index ``plan.partitions``).

    ``pulls[k]``: ``(local input, producer position, producer local output)`` copies done
    before partition ``k`` runs. ``input_targets[t]``: ``(position, local input)`` each model
    input ``t`` is written to by ``set_tensor``. ``homes[t]``: ``(position, local index)`` a
    readable tensor is read from (outputs from their producer, inputs from their first
    consumer; ``position -1`` for a model input no partition reads). ``waits[k]``: positions
    on other units partition ``k`` must wait for. ``unit_lists``: positions per unit in plan
    order, the first unit being the unit of partition 0. ``parallel``: some two partitions on
    different units may run at the same time.
    """

    units: tuple[str, ...]
    pulls: tuple[tuple[tuple[int, int, int], ...], ...]
    input_targets: Mapping[int, tuple[tuple[int, int], ...]]
    homes: Mapping[int, tuple[int, int]]
    waits: tuple[tuple[int, ...], ...]
    unit_lists: tuple[tuple[int, ...], ...]
    parallel: bool
    graph: PlanGraph


def plan_routes(plan: Plan) -> Routes:
    """Compute the routing of a (validated) plan."""
    graph = PlanGraph.from_plan(plan)
    parts = plan.partitions
    out_local: dict[int, tuple[int, int]] = {}
    for k, p in enumerate(parts):
        for t in p.outputs:
            out_local[t.tensor] = (k, t.index)
    model_inputs = {t.tensor for t in plan.inputs}
    pulls = []
    targets: dict[int, list[tuple[int, int]]] = {t: [] for t in model_inputs}
    for k, p in enumerate(parts):
        row = []
        for t in p.inputs:
            if t.tensor in model_inputs:
                targets[t.tensor].append((k, t.index))
            else:
                j, local = out_local[t.tensor]
                row.append((t.index, j, local))
        pulls.append(tuple(row))
    homes: dict[int, tuple[int, int]] = dict(out_local)
    for tensor, tg in targets.items():
        homes[tensor] = tg[0] if tg else (-1, -1)
    units = tuple(p.unit_name for p in parts)
    order: dict[str, list[int]] = {}
    for k, u in enumerate(units):
        order.setdefault(u, []).append(k)
    waits = tuple(
        tuple(d for d in graph.deps[k] if units[d] != units[k]) for k in range(len(parts))
    )
    parallel = any(
        units[a] != units[b] and graph.concurrent(a, b)
        for a in range(len(parts))
        for b in range(a + 1, len(parts))
    )
    return Routes(
        units=units,
        pulls=tuple(pulls),
        input_targets={t: tuple(v) for t, v in targets.items()},
        homes=homes,
        waits=waits,
        unit_lists=tuple(tuple(v) for v in order.values()),
        parallel=parallel,
        graph=graph,
    )
