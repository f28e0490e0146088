"""A cost graph placed: the job of ``edgepart partition --graph COSTGRAPH.json``.

:func:`place_costgraph` loads a documented cost graph (``docs/costgraph.md``) or takes a built
one, runs a solver (:func:`edgepart.placement.solve.partition_costgraph`) and returns a
:class:`CostGraphPlan`: the solution, where the graph came from (file name and SHA-256), its
plan document (format ``edgepart-plan``) and its short report.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from edgepart.errors import CostGraphError
from edgepart.fileio import atomic_write_text, sha256_regular
from edgepart.placement.costgraph import CostGraph, load_costgraph
from edgepart.placement.plan_doc import format_report, plan_json
from edgepart.placement.solve import Solution, SolveOptions, partition_costgraph

__all__ = ["CostGraphPlan", "place_costgraph"]


@dataclass(frozen=True, eq=False)
class CostGraphPlan:
    """A solved cost graph and a description of its source (``kind``, ``name``, and for a
    file its ``file`` name and ``sha256``)."""

    solution: Solution
    source: dict[str, Any]

    def report(self) -> str:
        """The short report: method, prediction against the baseline, partitions, memory."""
        return format_report(self.solution)

    def to_json(self) -> str:
        """The plan document (sorted keys, checked against its schema)."""
        return plan_json(self.solution, self.source)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the plan document to ``path`` (atomically)."""
        atomic_write_text(path, self.to_json())


def place_costgraph(
    graph: CostGraph | str | os.PathLike[str],
    method: str = "heuristic",
    options: SolveOptions | None = None,
) -> CostGraphPlan:
    """Place the nodes of ``graph`` (a cost graph or the path of its JSON document).

    Raises
    ------
    CostGraphError
        The document is invalid (names the JSON path).
    UsageError, PlacementInfeasibleError
        As :func:`~edgepart.placement.solve.partition_costgraph` raises them.
    """
    if isinstance(graph, CostGraph):
        g, source = graph, {"kind": "costgraph", "name": graph.name}
    else:
        g = load_costgraph(graph)
        digest, _ = sha256_regular(graph, what="cost graph", error=CostGraphError)
        source = {
            "kind": "costgraph",
            "name": g.name,
            "file": os.path.basename(graph),
            "sha256": digest,
        }
    return CostGraphPlan(partition_costgraph(g, method, options), source)
