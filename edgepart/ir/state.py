"""Which ops share state, and so must run in one interpreter.

TFLite keeps resource variables per interpreter, keyed by ``(container, shared_name)`` of their
VAR_HANDLE; CALL_ONCE initializes them from its init subgraph; LSTM-style ops update variable
tensors in place. Split any of these across interpreters and each side sees its own copy of the
state. :func:`state_groups` labels every op touching shared state with a group id; a valid cut
keeps every group whole (the partitioner uses the groups as colocation constraints).
"""

from __future__ import annotations

import numpy as np

from edgepart.ir import analysis
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model, Subgraph
from edgepart.schema import opnames

__all__ = ["state_groups"]

_VAR_HANDLE = opnames.builtin_code("VAR_HANDLE")
_CALL_ONCE = opnames.builtin_code("CALL_ONCE")


def state_groups(model: Model, subgraph: int = 0) -> np.ndarray:
    """Per op of ``model.subgraphs[subgraph]``: a state group id, or -1 for stateless ops.

    Ops are grouped when they touch the same resource variable (same VAR_HANDLE name or the
    same resource tensor), when a CALL_ONCE initializes a variable they use, or when they read
    the same variable tensor. Group ids are the smallest op index in the group.
    """
    sg = model.subgraphs[subgraph]
    n = sg.num_ops
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    stateful = np.zeros(n, dtype=bool)
    by_key: dict[object, int] = {}

    def join(key: object, op: int) -> None:
        stateful[op] = True
        if key in by_key:
            union(by_key[key], op)
        else:
            by_key[key] = op

    prod = analysis.producers(sg)
    resource = sg.tensor_dtype == DType.RESOURCE
    for i in range(n):
        code = int(sg.op_builtin[i])
        if code == _VAR_HANDLE:
            join(("var", *_var_name(sg, i)), i)
        elif code == _CALL_ONCE:
            for name in _initialized_names(model, sg.op(i).subgraph_refs):
                join(("var", *name), i)
        for t in (*sg.op_inputs.row(i).tolist(), *sg.op_outputs.row(i).tolist()):
            if t < 0:
                continue
            if resource[t]:
                p = int(prod[t])
                if p >= 0 and int(sg.op_builtin[p]) == _VAR_HANDLE:
                    join(("var", *_var_name(sg, p)), i)
                else:
                    join(("tensor", t), i)
            elif sg.tensor_is_variable[t]:
                join(("tensor", t), i)
    out = np.full(n, -1, dtype=np.int64)
    for i in np.flatnonzero(stateful).tolist():
        out[i] = find(i)
    return out


def _var_name(sg: Subgraph, op: int) -> tuple[str, str]:
    o = sg.op_options[op]
    if o is None:
        return ("", f"<op {op}>")
    return (str(o.get("container") or ""), str(o.get("shared_name") or ""))


def _initialized_names(model: Model, subgraphs: tuple[int, ...]) -> set[tuple[str, str]]:
    """Variable names created by VAR_HANDLEs in the given subgraphs and those they call."""
    names: set[tuple[str, str]] = set()
    seen: set[int] = set()
    stack = list(subgraphs)
    while stack:
        s = stack.pop()
        if s in seen or not 0 <= s < len(model.subgraphs):
            continue
        seen.add(s)
        sg = model.subgraphs[s]
        for i in np.flatnonzero(sg.op_builtin == _VAR_HANDLE).tolist():
            names.add(_var_name(sg, i))
        for i in np.flatnonzero(np.isin(sg.op_builtin, list(opnames.CALLING_BUILTINS))).tolist():
            stack.extend(sg.op(i).subgraph_refs)
    return names
