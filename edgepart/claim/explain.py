"""The claim report behind ``edgepart inspect MODEL --profile DEVICE [--delegate NAME]``.

For each delegate: the ops it takes, the DELEGATE partitions it creates (ops and boundary
tensors), the ops it refuses grouped by TFLite's ``OPNAME: reason`` line, and (with a device
profile) the processor each op lands on under TFLite's default behaviour on that device: the
profile's default user delegates in order, then XNNPACK lazily on what is left, then the builtin
CPU kernels. Everything is returned as JSON-able data; :func:`format_claim_report` renders text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edgepart.claim.delegation import ClaimResult, DelegateStep, claim
from edgepart.devices.delegate import DelegateSpec, delegate_names, load_delegate
from edgepart.devices.profile import DeviceProfile, load_profile
from edgepart.errors import UsageError
from edgepart.ir.graph import Model, Subgraph

__all__ = ["claim_report", "format_claim_report"]

_DEFAULT = "xnnpack"


def claim_report(
    model: Model,
    *,
    profile: DeviceProfile | str | None = None,
    delegates: Sequence[DelegateSpec | str] = (),
    subgraph: int = 0,
    greedy: bool = True,
) -> dict[str, Any]:
    """Which ops each delegate takes, the partitions TFLite creates and why ops are refused.

    Parameters
    ----------
    profile
        A device profile (name, path or loaded). Its processors' delegates are analysed one by
        one, and its ``default_delegates`` define the default placement scenario.
    delegates
        Delegates to apply in this order (as ``experimental_delegates``); XNNPACK follows lazily.
        Without ``delegates`` and ``profile``, every shipped delegate is analysed alone.
    """
    prof = load_profile(profile) if isinstance(profile, str) else profile
    if not 0 <= subgraph < len(model.subgraphs):
        raise UsageError(
            f"subgraph {subgraph} does not exist; the model has {len(model.subgraphs)} subgraph(s)"
        )
    specs = [d if isinstance(d, DelegateSpec) else load_delegate(d) for d in delegates]
    for s in specs:
        if s.policy.method == "fallback":
            raise UsageError(f"{s.name} is the builtin CPU fallback, not a delegate to apply")
    context = dict(prof.context) if prof is not None else {}
    sg = model.subgraphs[subgraph]
    report: dict[str, Any] = {
        "model": model.source or "<model>",
        "subgraph": subgraph,
        "num_ops": sg.num_ops,
        "greedy": greedy,
        "profile": None if prof is None else prof.name,
        "delegates": {},
        "scenarios": {},
    }
    if specs:
        alone = specs
        scenario_specs = specs
        scenario_name = "requested"
    elif prof is not None:
        names = list(dict.fromkeys(p.delegate for p in prof.processors))
        alone = [load_delegate(n) for n in names]
        scenario_specs = [load_delegate(n) for n in prof.default_delegates]
        scenario_name = "default"
    else:
        names = [n for n in delegate_names() if load_delegate(n).policy.method != "fallback"]
        alone = [load_delegate(n) for n in names]
        scenario_specs = []
        scenario_name = "default"
    for spec in alone:
        user = [] if spec.name == _DEFAULT else [spec]
        res = claim(model, user, subgraph=subgraph, greedy=greedy, context=context)
        step = next(s for s in res.steps if s.delegate == spec.name)
        report["delegates"][spec.name] = _delegate_entry(spec, step, prof, sg)
    res = claim(model, scenario_specs, subgraph=subgraph, greedy=greedy, context=context)
    report["scenarios"][scenario_name] = _scenario(res, scenario_specs, prof, sg.op_name)
    return report


def _processor_of(prof: DeviceProfile | None, delegate: str | None) -> str | None:
    if prof is None:
        return None
    if delegate is None:  # builtin kernels run on the CPU processor
        cpu = next((p for p in prof.processors if p.kind == "cpu"), None)
        return None if cpu is None else cpu.name
    p = prof.processor_for_delegate(delegate)
    return None if p is None else p.name


def _delegate_entry(
    spec: DelegateSpec, step: DelegateStep, prof: DeviceProfile | None, sg: Subgraph
) -> dict[str, Any]:
    taken = sorted(o for p in step.partitions for o in p.ops)
    const = sg.tensor_is_constant
    refused: dict[str, list[int]] = {}
    details: dict[str, list[int]] = {}
    for op, reason in sorted(step.support.reasons.items()):
        refused.setdefault(reason, []).append(op)
        details.setdefault(step.support.details.get(op, reason), []).append(op)
    supported_not_taken = sorted(
        set(int(i) for i in step.support.supported.nonzero()[0]) - set(taken)
    )
    return {
        "title": spec.title,
        "target": spec.target,
        "processor": _processor_of(prof, spec.name),
        "policy": {
            "method": spec.policy.method,
            "max_delegated_partitions": spec.policy.max_delegated_partitions,
            "min_nodes_per_partition": spec.policy.min_nodes_per_partition,
        },
        "takes": taken,
        "num_taken": len(taken),
        "partitions": [
            {
                "node": p.node,
                "ops": list(p.ops),
                "inputs": list(p.inputs),
                "outputs": list(p.outputs),
                "constant_inputs": [t for t in p.inputs if const[t]],
            }
            for p in step.partitions
        ],
        "num_subsets": step.num_subsets,
        "preview_partitions": [list(p) for p in step.preview],
        "supported_not_taken": supported_not_taken,
        "refused": refused,
        "refused_details": details,
        "unsupported_log": list(step.unsupported),
    }


def _scenario(
    res: ClaimResult, specs: Sequence[DelegateSpec], prof: DeviceProfile | None, name: Any
) -> dict[str, Any]:
    order = [s.name for s in specs] + [
        s.delegate for s in res.steps if s.delegate not in {x.name for x in specs}
    ]
    placement = [
        {
            "op": i,
            "name": name(i),
            "delegate": res.owner[i],
            "processor": _processor_of(prof, res.owner[i]),
        }
        for i in range(len(res.owner))
    ]
    counts: dict[str, int] = {}
    for row in placement:
        key = row["processor"] or row["delegate"] or "cpu_builtin"
        counts[key] = counts.get(key, 0) + 1
    return {
        "delegates": order,
        "plan": [
            {
                "node": n,
                "delegate": res.delegate_nodes[n].delegate if n in res.delegate_nodes else None,
                "ops": list(res.delegate_nodes[n].ops) if n in res.delegate_nodes else [n],
            }
            for n in res.plan_nodes
        ],
        "placement": placement,
        "ops_per_processor": counts,
    }


# The start of LiteRT's message when a static-shape delegate meets a graph with dynamic tensors.
_WHOLE_GRAPH = "Attempting to use a delegate that only supports static-sized tensors"


def format_claim_report(report: dict[str, Any]) -> str:
    """Render :func:`claim_report`'s result as text."""
    lines = []
    head = f"Delegate claims for {report['model']} (subgraph {report['subgraph']}, "
    head += f"{report['num_ops']} ops, {'greedy' if report['greedy'] else 'non-greedy'} clustering"
    if report["profile"]:
        head += f", device {report['profile']}"
    lines.append(head + ")")
    for name, d in report["delegates"].items():
        where = f" -> {d['processor']}" if d["processor"] else ""
        lines.append("")
        lines.append(
            f"{name}{where}: takes {d['num_taken']}/{report['num_ops']} ops in "
            f"{len(d['partitions'])} partition(s)"
        )
        for p in d["partitions"]:
            consts = set(p["constant_inputs"])
            runtime = [t for t in p["inputs"] if t not in consts]
            lines.append(
                f"  DELEGATE node {p['node']}: {len(p['ops'])} ops ({_ranges(p['ops'])}); "
                f"inputs {runtime} + {len(consts)} constants -> outputs {p['outputs']}"
            )
        whole = [u for u in d.get("unsupported_log", ()) if u.startswith(_WHOLE_GRAPH)]
        for u in whole:  # ModifyGraphWithDelegate refused the delegate on the whole graph
            lines.append(f"  refused the whole graph: {u}")
        if d["supported_not_taken"]:
            why = "the whole-graph refusal" if whole else "the partition policy"
            lines.append(
                f"  supported but left on the CPU by {why}: ops {_ranges(d['supported_not_taken'])}"
            )
        for reason, ops in d["refused"].items():
            lines.append(f"  refused {reason}  (ops {_ranges(ops)})")
    for sname, s in report["scenarios"].items():
        lines.append("")
        lines.append(
            f"{sname} placement (delegates {', '.join(s['delegates']) or 'none'}): "
            + ", ".join(f"{k} {v}" for k, v in sorted(s["ops_per_processor"].items()))
        )
    return "\n".join(lines)


def _ranges(ops: Sequence[int]) -> str:
    out: list[str] = []
    xs = sorted(ops)
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(out) if out else "-"
