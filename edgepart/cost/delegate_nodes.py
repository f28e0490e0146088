"""How many delegate kernels (DELEGATE nodes) an executor forms among a set of ops.

Each delegate partition costs one delegate node per invocation, so the count matters for tiny
models. It is what TFLite's partitioner (``PartitionGraphIntoIndependentNodeSubsets``, ported
exactly in :mod:`edgepart.claim.epochs`) makes of the delegated ops: greedy, with the model's
``model_control_dependencies`` metadata edges or else the chain of ops that might have side
effects. Counting connected groups of delegated ops instead undercounts partitions split by
side-effect ordering and overcounts independent branches TFLite puts in one node.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgepart.claim.control import might_have_side_effect, model_control_edges
from edgepart.claim.epochs import partition_independent_subsets, side_effect_control_edges
from edgepart.ir.graph import Model, Subgraph

__all__ = ["ControlEdges", "count_nodes", "metadata_edges"]


def metadata_edges(sg: Subgraph, model: Model | None) -> list[tuple[int, int]] | None:
    """The ``model_control_dependencies`` edges TFLite uses for ``sg`` (a subgraph of ``model``),
    or None when the model has none (TFLite then chains the side-effecting ops)."""
    if model is None:
        return None
    edges = model_control_edges(model)
    if edges is None:
        return None
    for i, s in enumerate(model.subgraphs):
        if s is sg:
            return list(edges[i])
    return None


@dataclass(frozen=True)
class ControlEdges:
    """The ordering constraints TFLite partitions one subgraph with."""

    metadata: list[tuple[int, int]] | None  # the model's edges for this subgraph, if it has any
    side_effect: np.ndarray  # per op: might have side effects (chained when metadata is None)

    @staticmethod
    def of(sg: Subgraph, metadata: list[tuple[int, int]] | None) -> ControlEdges:
        """The control edges of ``sg`` given its metadata edges (:func:`metadata_edges`)."""
        return ControlEdges(metadata, might_have_side_effect(sg))

    def among(self, idx: np.ndarray, n_ops: int) -> list[tuple[int, int]]:
        """The edges between ops ``idx`` (sorted), renumbered to positions in ``idx``."""
        if self.metadata is None:
            return side_effect_control_edges(self.side_effect[idx])
        local = np.full(n_ops, -1, dtype=np.int64)
        local[idx] = np.arange(len(idx))
        return [
            (int(local[a]), int(local[b]))
            for a, b in self.metadata
            if 0 <= a < n_ops and 0 <= b < n_ops and local[a] >= 0 and local[b] >= 0
        ]


def count_nodes(sg: Subgraph, idx: np.ndarray, delegated: np.ndarray, ctl: ControlEdges) -> int:
    """Delegate nodes TFLite forms when ops ``idx`` (sorted, in execution order) run in one
    invocation and ``delegated[k]`` says whether the delegate takes ``idx[k]``."""
    sup = np.asarray(delegated, dtype=bool)
    if not sup.any():
        return 0
    subsets = partition_independent_subsets(
        sg.op_inputs.take(idx),
        sg.op_outputs.take(idx),
        sup,
        num_tensors=sg.num_tensors,
        graph_outputs=[int(t) for t in sg.outputs],
        control_edges=ctl.among(idx, sg.num_ops),
    )
    return sum(1 for s in subsets if s.kind == "delegated")
