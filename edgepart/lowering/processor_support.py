"""Which processor of a device profile can run which op: the exact TFLite claiming rules, per op.

A processor runs what its delegate accepts (:mod:`edgepart.claim.support`: op, version, dtypes,
ranks, named predicates), evaluated the way the delegate's helper does it
(:func:`edgepart.claim.helpers.select_nodes`, shared with claiming):

* ``xnnpack``: ``PrepareOpsToDelegate`` (static unpacking of constant DEQUANTIZE/DENSIFY,
  resource-variable coupling), :func:`edgepart.claim.helpers.xnnpack_nodes_to_delegate`;
* ``fp16_graph_partition`` (GPU, NNAPI): DEQUANTIZE of fp16 constants is refused and its
  consumers are checked as if they read the fp16 constant; the DEQUANTIZE is added back when its
  consumers are delegated, which is what happens in a partition file that holds both (the fusion
  pre-pass keeps them together), so such a DEQUANTIZE counts as supported;
* every other delegate: the plain per-op check.

Delegates that only accept static-sized tensors (GPU, NNAPI, Edge TPU, ...) refuse a whole graph
with a dynamic-sized tensor (``ModifyGraphWithDelegate``); per op, an op that creates or touches
a dynamic-sized tensor is therefore refused with TFLite's message, since a partition file holding
it would not be delegated at all.

A processor of kind ``cpu`` runs every op: ops its delegate (XNNPACK) refuses fall back to the
builtin kernels in the same interpreter. The result is data (:class:`ProcessorSupport`), with the
``"OPNAME: reason"`` lines TFLite logs for the refused ops.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from edgepart.claim.control import ops_touching
from edgepart.claim.helpers import SHAPE_INPUTS, select_nodes
from edgepart.devices.delegate import DelegateSpec, accelerator_kernels, load_delegate
from edgepart.devices.profile import DeviceProfile
from edgepart.ir.analysis import topological_order
from edgepart.ir.graph import Subgraph

__all__ = ["ProcessorSupport", "dynamic_tensors", "processor_support"]

_STATIC_ONLY_REASON = (
    "Attempting to use a delegate that only supports static-sized tensors with a graph that "
    "has dynamic-sized tensors (tensor#{t} is a dynamic-sized tensor)."
)


@dataclass(frozen=True, eq=False)
class ProcessorSupport:
    """Per-op support on each processor of a profile (processors in profile order).

    ``supported[i, p]``: processor ``p`` can run op ``i``. ``reasons[p]`` maps each refused op
    to TFLite's ``"OPNAME: reason"`` line and ``details[p]`` to edgepart's more specific one.
    """

    processors: tuple[str, ...]
    delegates: tuple[str, ...]
    supported: np.ndarray  # [n_ops, P] bool
    reasons: tuple[Mapping[int, str], ...]
    details: tuple[Mapping[int, str], ...]

    def why(self, op: int, p: int) -> str:
        """The refusal detail of ``op`` on processor ``p`` ("" when supported)."""
        return self.details[p].get(op) or self.reasons[p].get(op, "")


def dynamic_tensors(sg: Subgraph) -> np.ndarray:
    """Per tensor: dynamic-sized at prepare time (the rule of
    :func:`edgepart.claim.helpers.dynamic_tensor`, propagated to everything computed from it)."""
    const = sg.tensor_is_constant
    dyn = np.zeros(sg.num_tensors, dtype=bool)
    names = [c.name for c in sg.opcodes]
    flagged = np.zeros(sg.num_ops, dtype=bool)
    kinds = np.array([nm in SHAPE_INPUTS for nm in names], dtype=bool)
    cand = np.flatnonzero(kinds[sg.op_opcode]) if len(kinds) else np.zeros(0, np.int64)
    if sg.shape_info is not None:  # propagated shapes know which ops LiteRT makes dynamic
        flagged = np.asarray(sg.shape_info.dynamic_ops, dtype=bool).copy()
        cand = np.zeros(0, np.int64)
    for op in cand.tolist():
        ins = sg.op_inputs.row_tuple(op)
        name = names[int(sg.op_opcode[op])]
        keys = SHAPE_INPUTS[name]
        outs = sg.op_outputs.row_tuple(op)
        if not keys:
            flagged[op] = True
            continue
        for k in keys:
            if k < len(ins) and ins[k] >= 0 and not const[ins[k]]:
                if name == "RESHAPE" and outs and not sg.tensor_has_signature[outs[0]]:
                    continue
                flagged[op] = True
                break
    if not flagged.any():
        return dyn
    # an op reading a dynamic tensor resizes its outputs at every invoke: they are dynamic too
    for op in topological_order(sg).tolist():
        rd = sg.op_inputs.row(op)
        rd = rd[rd >= 0]
        if flagged[op] or (len(rd) and dyn[rd].any()):
            wr = sg.op_outputs.row(op)
            dyn[wr[wr >= 0]] = True
    return dyn


def delegate_support(
    sg: Subgraph, spec: DelegateSpec, context: Mapping[str, object] | None = None
) -> tuple[np.ndarray, dict[int, str], dict[int, str]]:
    """(supported per op, reasons, details) of one delegate on every op of ``sg``."""
    n = sg.num_ops
    ctx = {**(context or {})}
    ops = np.arange(n, dtype=np.int64)
    if spec.policy.method == "fallback":
        return np.ones(n, dtype=bool), {}, {}
    sel = select_nodes(sg, spec, ops.tolist(), n, ctx)
    sup = sel.support.supported.copy()
    reasons, details = dict(sel.support.reasons), dict(sel.support.details)
    for op in sel.dequant:  # re-added with its delegated consumers (FP16GraphPartitionHelper)
        sup[op] = True
        reasons.pop(op, None)
        details.pop(op, None)
    if not spec.policy.allow_dynamic_tensors:
        dyn = dynamic_tensors(sg)
        if dyn.any():
            bad = np.flatnonzero(ops_touching(sg, dyn) & sup)
            first = int(np.flatnonzero(dyn)[0])
            for op in bad.tolist():
                sup[op] = False
                reasons[op] = details[op] = f"{sg.op_name(op)}: " + _STATIC_ONLY_REASON.format(
                    t=first
                )
    return sup, reasons, details


def _accelerator_only(sg: Subgraph) -> list[int]:
    """Ops that are an accelerator delegate's own compiled kernel (see
    :func:`edgepart.devices.delegate.accelerator_kernels`)."""
    kernels = accelerator_kernels()
    if not kernels:
        return []
    names = np.array([c.name in kernels for c in sg.opcodes], dtype=bool)
    if not len(names):
        return []
    return [int(i) for i in np.flatnonzero(names[sg.op_opcode])]


def processor_support(
    sg: Subgraph, profile: DeviceProfile, *, cpu_runs_everything: bool = True
) -> ProcessorSupport:
    """Support of every op of ``sg`` on every processor of ``profile``.

    Parameters
    ----------
    sg
        The subgraph (the model's main subgraph for partitioning).
    profile
        The device profile; its ``context`` overrides the delegates' context values.
    cpu_runs_everything
        Processors of kind ``cpu`` support every op (builtin kernels take what their delegate
        refuses). The refusal reasons of their delegate are still recorded.
    """
    n = sg.num_ops
    cols, reasons, details = [], [], []
    for proc in profile.processors:
        spec = load_delegate(proc.delegate)
        sup, rs, ds = delegate_support(sg, spec, profile.context)
        if proc.kind == "cpu" and cpu_runs_everything:
            # builtin kernels take what the CPU delegate refuses, except an accelerator's own
            # compiled program (an Edge TPU executable): no CPU kernel exists for it
            sup = np.ones(n, dtype=bool)
            for op in _accelerator_only(sg):
                sup[op] = False
                rs[op] = ds[op] = (
                    f"{sg.op_name(op)}: a compiled accelerator program; no CPU kernel runs it"
                )
        cols.append(sup)
        reasons.append(rs)
        details.append(ds)
    mat = np.stack(cols, axis=1) if cols else np.zeros((n, 0), dtype=bool)
    return ProcessorSupport(
        processors=tuple(p.name for p in profile.processors),
        delegates=tuple(p.delegate for p in profile.processors),
        supported=mat,
        reasons=tuple(reasons),
        details=tuple(details),
    )
