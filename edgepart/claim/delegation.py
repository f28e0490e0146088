"""Applying delegates to a subgraph the way LiteRT does: the execution plan after each delegate.

TFLite applies user delegates in order and then, lazily, the default XNNPACK delegate on what is
left (``Interpreter::ApplyLazyDelegateProviders``). Each delegate works on the *current* execution
plan, in which earlier delegates' partitions are single ``DELEGATE`` nodes:

* ``graph_partition`` delegates (GPU, NNAPI, Hexagon, ...) check every node, preview the
  partitioning, keep the largest partitions (cap, minimum size) and replace them
  (``GraphPartitionHelper``); ``fp16_graph_partition`` adds ``FP16GraphPartitionHelper``'s
  handling of DEQUANTIZE-from-fp16-constant nodes.
* ``xnnpack`` selects nodes in ``PrepareOpsToDelegate`` (static weight unpacking, resource
  variables) and replaces them directly, without preview or cap.
* ``prefix_cut`` (the Edge TPU compiler, offline) maps the supported prefix of the graph to one
  custom op and leaves everything after the first unsupported op on the CPU.

The result is data (:class:`ClaimResult`); nothing is executed.
"""

from __future__ import annotations

import contextlib
import gc
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgepart.claim.control import might_have_side_effect, model_control_edges
from edgepart.claim.epochs import (
    NodeSubset,
    nodes_of_first_n_largest,
    partition_independent_subsets,
    side_effect_control_edges,
)
from edgepart.claim.helpers import dynamic_tensor, prefix_cut_nodes, select_nodes
from edgepart.claim.support import SupportTable, evaluate_support
from edgepart.devices.delegate import DelegateSpec, load_delegate
from edgepart.errors import UsageError
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model, Subgraph
from edgepart.ir.values import Csr

__all__ = ["ClaimResult", "DelegateStep", "Partition", "PlanNode", "claim"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PlanNode:
    """A node of the execution plan: an original op, or a DELEGATE node covering several."""

    node: int
    delegate: str | None
    ops: tuple[int, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Partition:
    """One DELEGATE node a delegate creates: its node index, original ops and boundary tensors."""

    node: int
    delegate: str
    ops: tuple[int, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DelegateStep:
    """What one delegate did to the plan.

    ``requested`` are the original ops the delegate asked to replace; ``partitions`` the DELEGATE
    nodes that resulted; ``num_subsets`` TFLite's "yielding N partitions" count (CPU subsets
    included); ``preview`` the previewed delegated partitions (ops) before the cap was applied;
    ``unsupported`` the distinct ``"OPNAME: reason"`` lines TFLite collects.
    """

    delegate: str
    support: SupportTable
    requested: tuple[int, ...]
    partitions: tuple[Partition, ...]
    num_subsets: int
    preview: tuple[tuple[int, ...], ...]
    unsupported: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """The execution plan of one subgraph after all delegates, and each delegate's step.

    ``plan_nodes`` lists node indices in execution order: indices below the op count are
    original ops run by builtin kernels, the others DELEGATE nodes (``delegate_nodes``).
    ``owner[i]`` names the delegate that took op ``i`` (None: builtin CPU kernel).
    """

    subgraph: int
    greedy: bool
    steps: tuple[DelegateStep, ...]
    plan_nodes: tuple[int, ...]
    delegate_nodes: Mapping[int, Partition]
    owner: tuple[str | None, ...]

    def partitions(self, delegate: str | None = None) -> list[Partition]:
        """DELEGATE nodes in creation order (all delegates, or one)."""
        return [p for s in self.steps for p in s.partitions if delegate in (None, p.delegate)]

    def plan(self, sg: Subgraph) -> list[PlanNode]:
        """The final execution plan as :class:`PlanNode` values."""
        out = []
        for node in self.plan_nodes:
            part = self.delegate_nodes.get(node)
            if part is None:
                out.append(
                    PlanNode(
                        node,
                        None,
                        (node,),
                        sg.op_inputs.row_tuple(node),
                        sg.op_outputs.row_tuple(node),
                    )
                )
            else:
                out.append(PlanNode(node, part.delegate, part.ops, part.inputs, part.outputs))
        return out


def claim(
    model: Model,
    delegates: Sequence[DelegateSpec | str] = (),
    *,
    default_delegate: DelegateSpec | str | None = "xnnpack",
    subgraph: int = 0,
    greedy: bool = True,
    preserve_all_tensors: bool = False,
    context: Mapping[str, Any] | None = None,
) -> ClaimResult:
    """Predict the execution plan LiteRT builds for ``model``'s subgraph.

    Parameters
    ----------
    delegates
        User delegates, applied in order (``experimental_delegates=`` in Python).
    default_delegate
        The lazily applied default delegate (XNNPACK); None disables it
        (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``). Skipped when the plan is already fully delegated.
    greedy
        False matches ``experimental_disable_delegate_clustering=True``.
    preserve_all_tensors
        ``experimental_preserve_all_tensors=True``: every partition holds a single node.
    context
        Delegate context overrides (``android_api_level``, ``gpu_allow_quant``, ...).
    """
    specs = [d if isinstance(d, DelegateSpec) else load_delegate(d) for d in delegates]
    default = None
    if default_delegate is not None:
        default = (
            default_delegate
            if isinstance(default_delegate, DelegateSpec)
            else load_delegate(default_delegate)
        )
    sg = model.subgraphs[subgraph]
    metadata_edges = model_control_edges(model)
    edges = None if metadata_edges is None else metadata_edges[subgraph]
    with _gc_paused():
        state = _State(sg, greedy, preserve_all_tensors, edges, dict(context or {}))
        steps = [state.apply(spec) for spec in specs]
        if default is not None and not state.fully_delegated():
            steps.append(state.apply(default))
    owner: list[str | None] = [None] * sg.num_ops
    for part in state.parts.values():
        for o in part.ops:
            owner[o] = part.delegate
    return ClaimResult(
        subgraph, greedy, tuple(steps), tuple(state.plan), dict(state.parts), tuple(owner)
    )


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC: claiming allocates many small acyclic tuples, and GC passes over
    the large live graph arrays would otherwise dominate the run time (2-3x at 100k ops)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class _State:
    """The evolving execution plan of one subgraph (node indices, as TFLite numbers them)."""

    def __init__(
        self,
        sg: Subgraph,
        greedy: bool,
        preserve: bool,
        metadata_edges: list[tuple[int, int]] | None,
        context: dict[str, Any],
    ) -> None:
        self.sg = sg
        self.greedy = greedy
        self.preserve = preserve
        self.metadata_edges = metadata_edges
        self.context = context
        self.n_ops = sg.num_ops
        self.plan: list[int] = list(range(sg.num_ops))
        self.identity = True  # the plan is still 0..n-1 with no DELEGATE node
        self.parts: dict[int, Partition] = {}
        self.next_node = sg.num_ops
        self.side_effect_ops = might_have_side_effect(sg)
        self.resource = sg.tensor_dtype == int(DType.RESOURCE)
        self.overrides: dict[int, tuple[int, ...]] = {}  # op -> remapped inputs (fp16 helper)

    def fully_delegated(self) -> bool:
        return all(n >= self.n_ops for n in self.plan)

    def _plan_ops(self) -> tuple[np.ndarray, np.ndarray]:
        """(plan positions, op indices) of the original-op nodes."""
        if self.identity:
            r = np.arange(self.n_ops, dtype=np.int64)
            return r, r
        plan = np.asarray(self.plan, dtype=np.int64)
        pos = np.flatnonzero(plan < self.n_ops)
        return pos, plan[pos]

    # ------------------------------------------------------------------ graph views
    def _csr(self, remap: Mapping[int, tuple[int, ...]] | None = None) -> tuple[Csr, Csr]:
        sg = self.sg
        rows = {**self.overrides, **(remap or {})}
        if self.identity and not rows:
            return sg.op_inputs, sg.op_outputs
        rows_in, rows_out = [], []
        for n in self.plan:
            part = self.parts.get(n)
            if part is None:
                rows_in.append(rows.get(n) or sg.op_inputs.row_tuple(n))
                rows_out.append(sg.op_outputs.row_tuple(n))
            else:
                rows_in.append(part.inputs)
                rows_out.append(part.outputs)
        return Csr.from_rows(rows_in, np.int64), Csr.from_rows(rows_out, np.int64)

    def _control_edges(self, greedy: bool) -> list[tuple[int, int]]:
        if self.metadata_edges is not None:
            n = len(self.plan)
            # TFLite keeps the metadata edges as execution-plan positions even after an
            # earlier delegate shrank the plan; out-of-range edges make partitioning fail.
            return [(a, b) for a, b in self.metadata_edges if 0 <= a < n and 0 <= b < n]
        if not greedy:
            return []
        if self.identity:
            return side_effect_control_edges(self.side_effect_ops)
        flags = np.zeros(len(self.plan), dtype=bool)
        for i, node in enumerate(self.plan):
            part = self.parts.get(node)
            if part is None:
                flags[i] = self.side_effect_ops[node]
            else:
                flags[i] = any(t >= 0 and self.resource[t] for t in part.inputs + part.outputs)
        return side_effect_control_edges(flags)

    def _partition(
        self, mask: np.ndarray, greedy: bool, remap: Mapping[int, tuple[int, ...]] | None = None
    ) -> list[NodeSubset]:
        ins, outs = self._csr(remap)
        return partition_independent_subsets(
            ins,
            outs,
            mask,
            num_tensors=self.sg.num_tensors,
            graph_outputs=self.sg.outputs.tolist(),
            greedy=greedy,
            control_edges=self._control_edges(greedy),
            disable_node_fusion=self.preserve,
        )

    # ------------------------------------------------------------------ one delegate
    def apply(self, spec: DelegateSpec) -> DelegateStep:
        if spec.policy.method == "fallback":
            raise UsageError(f"{spec.name} is the builtin CPU fallback, not a delegate to apply")
        greedy = self.greedy if spec.policy.greedy is None else spec.policy.greedy
        ctx = {**self.context}
        _, ops = self._plan_ops()
        preview: list[tuple[int, ...]] = []
        if spec.policy.method == "prefix_cut":
            support = evaluate_support(self.sg, spec, ops=ops, context=ctx)
            mask = prefix_cut_nodes(self.sg, self.plan, self.n_ops, support.supported)
            subsets = self._cut(mask) if mask.any() else []
            return self._finish(spec, support, mask, subsets, preview)
        if not spec.policy.allow_dynamic_tensors and (t := dynamic_tensor(self.sg)) is not None:
            # ModifyGraphWithDelegate refuses static-shape delegates on graphs with dynamic
            # tensors and leaves the plan untouched.
            support = evaluate_support(self.sg, spec, ops=ops, context=ctx)
            why = (
                f"Attempting to use a delegate that only supports static-sized tensors with a "
                f"graph that has dynamic-sized tensors (tensor#{t} is a dynamic-sized tensor)."
            )
            return DelegateStep(spec.name, support, (), (), 0, (), (why,))
        sel = select_nodes(self.sg, spec, self.plan, self.n_ops, ctx, self.overrides)
        support = sel.support
        if sel.direct:
            subsets = self._partition(sel.mask, greedy) if sel.mask.any() else []
            return self._finish(spec, support, sel.mask, subsets, preview)
        remap, dequant_nodes, sup = sel.remap, set(sel.dequant), sel.mask
        cap = spec.policy.max_delegated_partitions or None
        pv: list[NodeSubset] = []
        if dequant_nodes and int(sup.sum()) + len(dequant_nodes) == len(self.plan):
            mask = np.ones(len(self.plan), dtype=bool)  # full delegation, DEQUANTIZE included
        else:
            pv = self._partition(sup, greedy) if sup.any() else []
            preview = [self._ops_of(s) for s in pv if s.kind == "delegated"]
            chosen = nodes_of_first_n_largest(pv, cap, spec.policy.min_nodes_per_partition)
            mask = np.zeros(len(self.plan), dtype=bool)
            mask[chosen] = True
        remapped = False
        for i in np.flatnonzero(mask).tolist():
            node = self.plan[i]
            if node in remap:  # RemapFp16InputTensors mutates the chosen nodes' inputs
                self.overrides[node] = remap[node]
                remapped = True
        if pv and not remapped and np.array_equal(mask, sup):
            subsets = pv  # the replacement run sees the preview's node set and inputs
        else:
            subsets = self._partition(mask, greedy) if mask.any() else []
        return self._finish(spec, support, mask, subsets, preview, dequant_nodes)

    def _ops_of(self, s: NodeSubset) -> tuple[int, ...]:
        if self.identity:
            return s.nodes
        out: list[int] = []
        for i in s.nodes:
            node = self.plan[i]
            part = self.parts.get(node)
            out.extend(part.ops if part is not None else (node,))
        return tuple(out)

    def _cut(self, mask: np.ndarray) -> list[NodeSubset]:
        """Edge TPU: one custom op for the prefix; its boundary excludes baked-in constants."""
        subsets = self._partition(mask, greedy=False)
        out = []
        const = self.sg.tensor_is_constant
        for s in subsets:
            if s.kind == "delegated":
                ins = tuple(t for t in s.input_tensors if not const[t])
                s = NodeSubset(s.kind, s.nodes, ins, s.output_tensors)
            out.append(s)
        return out

    def _finish(
        self,
        spec: DelegateSpec,
        support: SupportTable,
        mask: np.ndarray,
        subsets: list[NodeSubset],
        preview: list[tuple[int, ...]],
        dequant_nodes: set[int] | None = None,
    ) -> DelegateStep:
        chosen = np.flatnonzero(mask)
        if self.identity:
            requested = tuple(chosen.tolist())
        else:
            requested = tuple(o for i in chosen.tolist() for o in self._ops_of_node(self.plan[i]))
        reasons = set(support.reasons.values())
        for op in dequant_nodes or ():
            reasons.discard(support.reasons.get(op, ""))
            reasons.add(f"{self.sg.op_name(op)}: ")  # rejected without details by the helper
        if not subsets:
            return DelegateStep(
                spec.name, support, requested, (), 0, tuple(preview), tuple(sorted(reasons))
            )
        new_plan: list[int] = []
        parts = []
        for s in subsets:
            if s.kind == "cpu":
                new_plan.extend(self.plan[i] for i in s.nodes)
                continue
            part = Partition(
                self.next_node, spec.name, self._ops_of(s), s.input_tensors, s.output_tensors
            )
            self.parts[part.node] = part
            self.next_node += 1
            new_plan.append(part.node)
            parts.append(part)
        log.debug(
            "Replacing %d out of %d node(s) with delegate (%s) node, yielding %d partitions",
            int(mask.sum()),
            len(self.plan),
            spec.kernel_name,
            len(subsets),
        )
        self.plan = new_plan
        self.identity = False
        return DelegateStep(
            spec.name,
            support,
            requested,
            tuple(parts),
            len(subsets),
            tuple(preview),
            tuple(sorted(reasons)),
        )

    def _ops_of_node(self, node: int) -> tuple[int, ...]:
        part = self.parts.get(node)
        return part.ops if part is not None else (node,)
