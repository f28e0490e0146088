"""What ``edgepart inspect`` reports about a model, as JSON-able data plus a text formatter.

>>> from edgepart.ir.summary import summarize
>>> from edgepart.tflite.reader import read_model
>>> s = summarize(read_model("examples/models/mobilenet_v2.tflite"))
>>> s["subgraphs"][0]["num_ops"]
65
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from edgepart.ir import analysis
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model, Subgraph
from edgepart.ir.verify import calling_ops

__all__ = ["COMPILED_PROGRAM_OPS", "describe_ops", "format_ops", "format_summary", "summarize"]

COMPILED_PROGRAM_OPS = frozenset({"edgetpu-custom-op"})
"""Custom ops whose options are a compiled accelerator program holding the model's weights."""


def summarize(model: Model) -> dict[str, Any]:
    """A JSON-able summary: subgraphs, ops, dtypes, bytes, custom ops, control flow, I/O."""
    subgraphs = [_subgraph(model, s, sg) for s, sg in enumerate(model.subgraphs)]
    used_buffers = set()
    for sg in model.subgraphs:
        used_buffers.update(sg.tensor_buffer[sg.tensor_is_constant].tolist())
    param_bytes = int(sum(int(model.buffers.length[b]) for b in used_buffers))
    param_bytes += sum(g["program_bytes"] for g in subgraphs)
    custom = sorted({c.custom_code or "" for c in model.opcodes if c.is_custom})
    runtime = model.metadata_bytes("min_runtime_version")
    return {
        "source": model.source,
        "file_bytes": _file_bytes(model),
        "version": model.version,
        "description": model.description,
        "min_runtime_version": runtime.rstrip(b"\0").decode("ascii", "replace")
        if runtime
        else None,
        "metadata": [m.name for m in model.metadata],
        "num_subgraphs": len(model.subgraphs),
        "num_ops": sum(sg.num_ops for sg in model.subgraphs),
        "parameter_bytes": param_bytes,
        "custom_ops": custom,
        "signatures": [
            {
                "key": s.key,
                "subgraph": s.subgraph,
                "inputs": [_io(model.subgraphs[s.subgraph], t, n) for n, t in s.inputs],
                "outputs": [_io(model.subgraphs[s.subgraph], t, n) for n, t in s.outputs],
            }
            for s in model.signature_defs
        ],
        "subgraphs": subgraphs,
    }


def _file_bytes(model: Model) -> int | None:
    mem = model.buffers.mems[0] if model.buffers.mems else None
    return len(mem) if mem is not None else None


def _subgraph(model: Model, index: int, sg: Subgraph) -> dict[str, Any]:
    names = [sg.op_name(i) for i in range(sg.num_ops)]
    const = sg.tensor_is_constant
    # tensors no op reads or writes (left behind by a compiler that replaced the ops, as
    # edgetpu_compiler does) are neither activations nor weights
    used = np.zeros(sg.num_tensors, dtype=bool)
    for csr in (sg.op_inputs, sg.op_outputs, sg.op_intermediates):
        idx = csr.idx.astype(np.int64)
        used[idx[idx >= 0]] = True
    used[sg.inputs.astype(np.int64)] = True
    used[sg.outputs.astype(np.int64)] = True
    act = ~const & used
    const = const & used
    nbytes = sg.tensor_nbytes
    compiled = [i for i, n in enumerate(names) if n in COMPILED_PROGRAM_OPS]
    program = sum(len(sg.op_custom_options[i] or b"") for i in compiled)
    control = []
    for i in calling_ops(sg).tolist():
        control.append({"op": i, "name": names[i], "calls": list(sg.op(i).subgraph_refs)})
    dtypes_act = Counter(DType(int(d)).name for d in sg.tensor_dtype[act].tolist())
    dtypes_w = Counter(DType(int(d)).name for d in sg.tensor_dtype[const].tolist())
    try:
        order = analysis.topological_order(sg)
        lower = analysis.live_bytes_lower_bound(sg, order)
    except Exception:  # a cyclic graph has no execution order; report it without a bound
        lower = None
    return {
        "index": index,
        "name": sg.name,
        "num_ops": sg.num_ops,
        "num_tensors": sg.num_tensors,
        "op_histogram": dict(sorted(Counter(names).items(), key=lambda kv: (-kv[1], kv[0]))),
        "dtypes": {
            "activations": dict(sorted(dtypes_act.items())),
            "weights": dict(sorted(dtypes_w.items())),
        },
        "parameter_bytes": int(
            sum(int(sg.buffers.length[b]) for b in set(sg.tensor_buffer[const].tolist()))
        )
        + program,
        "program_bytes": int(program),
        "unused_tensors": int((~used).sum()),
        "activation_bytes": int(nbytes[act].sum()),
        "activation_lower_bound_bytes": lower,
        "dynamic_tensors": int(
            sum(
                1
                for t in range(sg.num_tensors)
                if sg.tensor_has_signature[t] and (sg.tensor_signature.row(t) == -1).any()
            )
        ),
        "variables": int(sg.tensor_is_variable.sum()),
        "control_flow": control,
        "inputs": [_io(sg, t) for t in sg.inputs.tolist()],
        "outputs": [_io(sg, t) for t in sg.outputs.tolist()],
    }


def _io(sg: Subgraph, t: int, name: str | None = None) -> dict[str, Any]:
    sig = sg.tensor_signature.row(t).tolist() if sg.tensor_has_signature[t] else None
    q = sg.tensor_quantization[t]
    out: dict[str, Any] = {
        "tensor": t,
        "name": name if name is not None else sg.tensor_names[t],
        "dtype": DType(int(sg.tensor_dtype[t])).name,
        "shape": sg.tensor_shape.row(t).tolist(),
        "shape_signature": sig,
    }
    if q is not None and len(q.scale):
        out["quantization"] = {
            "scale": [float(x) for x in q.scale[:4]] + (["..."] if len(q.scale) > 4 else []),
            "zero_point": [int(x) for x in q.zero_point[:4]],
        }
    return out


def describe_ops(model: Model, subgraph: int | None = None) -> list[dict[str, Any]]:
    """Every op with its inputs and outputs (tensor index, name, dtype, shape)."""
    rows = []
    for s, sg in enumerate(model.subgraphs):
        if subgraph is not None and s != subgraph:
            continue
        for i in range(sg.num_ops):
            op = sg.op(i)
            rows.append(
                {
                    "subgraph": s,
                    "op": i,
                    "name": op.name,
                    "version": op.opcode.version,
                    "inputs": [_tensor_brief(sg, t) for t in op.inputs],
                    "outputs": [_tensor_brief(sg, t) for t in op.outputs],
                    "options": _jsonable(dict(op.options)) if op.options else None,
                }
            )
    return rows


def _tensor_brief(sg: Subgraph, t: int) -> dict[str, Any] | None:
    if t < 0:
        return None
    return {
        "tensor": t,
        "name": sg.tensor_names[t],
        "dtype": DType(int(sg.tensor_dtype[t])).name,
        "shape": sg.tensor_shape.row(t).tolist(),
        "constant": bool(sg.tensor_is_constant[t]),
    }


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, np.generic):
        return v.item()
    return v


# ---------------------------------------------------------------------- text
def _mb(n: int | None) -> str:
    if n is None:
        return "n/a"
    return f"{n / 1e6:.2f} MB" if n >= 10_000 else f"{n} B"


def format_summary(s: dict[str, Any]) -> str:
    """Human-readable text for a :func:`summarize` result."""
    lines = [
        f"model        {s['source']}",
        f"file         {_mb(s['file_bytes'])}, schema v{s['version']}, "
        f"min runtime {s['min_runtime_version'] or 'unknown'}",
        f"subgraphs    {s['num_subgraphs']} ({s['num_ops']} ops in all)",
        f"parameters   {_mb(s['parameter_bytes'])}",
    ]
    if s["custom_ops"]:
        lines.append(f"custom ops   {', '.join(s['custom_ops'])}")
    for sig in s["signatures"]:
        ins = ", ".join(
            f"{x['name']} {x['dtype']}{x['shape_signature'] or x['shape']}" for x in sig["inputs"]
        )
        outs = ", ".join(
            f"{x['name']} {x['dtype']}{x['shape_signature'] or x['shape']}" for x in sig["outputs"]
        )
        lines.append(f"signature    {sig['key']!r} (subgraph {sig['subgraph']}): {ins} -> {outs}")
    for g in s["subgraphs"]:
        lines.append("")
        lines.append(
            f"subgraph {g['index']}"
            + (f" {g['name']!r}" if g["name"] else "")
            + f": {g['num_ops']} ops, {g['num_tensors']} tensors"
        )
        for x in g["inputs"]:
            lines.append(f"  input   {x['tensor']:>5} {x['dtype']:<8} {x['shape']}  {x['name']}")
        for x in g["outputs"]:
            lines.append(f"  output  {x['tensor']:>5} {x['dtype']:<8} {x['shape']}  {x['name']}")
        hist = ", ".join(f"{k} {v}" for k, v in g["op_histogram"].items())
        lines.append(f"  ops         {hist}")
        act = ", ".join(f"{k} {v}" for k, v in g["dtypes"]["activations"].items())
        wts = ", ".join(f"{k} {v}" for k, v in g["dtypes"]["weights"].items())
        lines.append(f"  dtypes      activations: {act or '-'}; weights: {wts or '-'}")
        weights = f"  weights     {_mb(g['parameter_bytes'])}"
        if g.get("program_bytes"):
            weights += f" (compiled accelerator program {_mb(g['program_bytes'])})"
        lines.append(weights)
        lines.append(
            f"  activations {_mb(g['activation_bytes'])} in all, "
            f"{_mb(g['activation_lower_bound_bytes'])} live at peak (lower bound)"
        )
        if g.get("unused_tensors"):
            lines.append(f"  unused      {g['unused_tensors']} tensors no op reads or writes")
        for prog in g.get("programs", ()):
            lines.append(f"  program     op {prog['op']}: {prog['description']}")
        if g["dynamic_tensors"]:
            lines.append(f"  dynamic     {g['dynamic_tensors']} tensors with unknown dimensions")
        if g["variables"]:
            lines.append(f"  variables   {g['variables']}")
        for c in g["control_flow"]:
            lines.append(f"  control     op {c['op']} {c['name']} calls subgraphs {c['calls']}")
    return "\n".join(lines)


def format_ops(rows: list[dict[str, Any]]) -> str:
    """One line per op of a :func:`describe_ops` result: ``[subgraph:op] NAME inputs -> outputs``
    (``c``/``t`` for constant/computed tensors, then index, dtype and shape)."""
    lines = []
    for row in rows:
        ins = ", ".join(_brief(t) for t in row["inputs"])
        outs = ", ".join(_brief(t) for t in row["outputs"])
        lines.append(f"[{row['subgraph']}:{row['op']:>4}] {row['name']:<24} {ins} -> {outs}")
    return "\n".join(lines)


def _brief(t: dict[str, Any] | None) -> str:
    if t is None:
        return "-"
    mark = "c" if t["constant"] else "t"
    return f"{mark}{t['tensor']}:{t['dtype'].lower()}{t['shape']}"
