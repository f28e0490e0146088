"""Plan the boundary buffers of a bundle with :mod:`edgepart.memory` (an ``arena.json`` document).

The runtime stages a tensor between partitions (and each model input) in a buffer of its own
while both sides may be busy (streaming, concurrent partitions). Those buffers share one host
arena per in-flight input; two of them may share bytes only if one is always read completely
before the other is written. The timeline given to the planner interleaves reads and writes:
partition ``k`` reads its inputs at step ``2k + 1`` and writes its outputs at step ``2k + 2``
(model inputs are written at step 0), so a tensor lives ``[write, last read + 1)``. Pairs that
this linear timeline would separate but that may still overlap because the partitions run
concurrently are added as explicit conflicts.

The memory planner (issue 6) may write a richer arena (per memory domain, with each
partition's internal tensors); the runtime only needs the ``boundary`` buffers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgepart.bundle.plan_graph import PlanGraph, tensor_nbytes

if TYPE_CHECKING:
    from edgepart.bundle.format import Plan

__all__ = ["HOST_MEMORY", "plan_boundary_arena"]

HOST_MEMORY = "host"
"""Memory name of the runtime's staging arena (host RAM)."""


def plan_boundary_arena(
    plan: Plan,
    *,
    strategy: str = "portfolio",
    time_limit: float | None = None,
    alignment: int = 64,
) -> dict[str, Any]:
    """An ``arena.json`` document placing every staged boundary tensor of ``plan``.

    The default (the planner's ``portfolio`` of greedy orders, no time limit) is deterministic,
    so a bundle is byte-reproducible; ``strategy="search"`` with a ``time_limit`` may find a
    smaller arena but then depends on machine speed when the limit cuts the search short.
    """
    from edgepart.memory import Buffer, MemoryProblem, plan_arena

    graph = PlanGraph.from_plan(plan)
    sizes = {x.tensor: tensor_nbytes(x.dtype, x.shape) for x in plan.inputs}
    for p in plan.partitions:
        for ref in p.outputs:
            sizes[ref.tensor] = tensor_nbytes(ref.dtype, ref.shape)
    staged = graph.staged_tensors()
    life: dict[int, tuple[int, int]] = {}
    for t in staged:
        prod = graph.producer.get(t)
        start = 0 if prod is None else 2 * prod + 2
        end = max(2 * c + 2 for c in graph.consumers[t])
        life[t] = (start, max(end, start + 1))
    buffers = [
        Buffer(
            id=f"t{t}",
            lower=life[t][0],
            upper=life[t][1],
            size=sizes[t],
            alignment=alignment,
            memory=HOST_MEMORY,
        )
        for t in staged
    ]
    conflicts = []
    for i, t in enumerate(staged):
        for u in staged[i + 1 :]:
            apart = life[t][1] <= life[u][0] or life[u][1] <= life[t][0]
            if apart and graph.conflict(t, u):
                conflicts.append((f"t{t}", f"t{u}"))
    doc: dict[str, Any] = {
        "format": "edgepart-bundle-arena",
        "version": 1,
        "strategy": strategy,
        "alignment": alignment,
        "memories": {},
        "buffers": [],
    }
    if not buffers:
        doc["memories"][HOST_MEMORY] = {"size": 0, "lower_bound": 0}
        return doc
    result = plan_arena(
        MemoryProblem.from_buffers(buffers, conflicts), strategy=strategy, time_limit=time_limit
    )
    for name, a in result.arenas.items():
        doc["memories"][name] = {
            "size": a.size,
            "lower_bound": a.lower_bound,
            "naive": a.naive,
            "method": a.method,
        }
    doc["buffers"] = [
        {
            "tensor": t,
            "scope": "boundary",
            "partition": None,
            "memory": HOST_MEMORY,
            "offset": int(result.offsets[f"t{t}"]),
            "size": sizes[t],
            "lifetime": list(life[t]),
        }
        for t in staged
    ]
    return doc
