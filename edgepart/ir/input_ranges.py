"""The values an integer input can take without breaking the ops that read it.

Random inputs must stay in the ranges the model accepts: a token id fed to ``GATHER`` or
``EMBEDDING_LOOKUP`` must index the table (LiteRT fails with "gather index out of bounds"
otherwise), a ``ONE_HOT`` index must be below its depth. :func:`integer_input_ranges` follows
each subgraph input through ops that pass values on unchanged (``CAST``, ``RESHAPE``,
``SQUEEZE``, ``EXPAND_DIMS``, ``IDENTITY``) to the ops that use them as indices, and returns the
intersection of what those accept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from edgepart.ir.analysis import consumers
from edgepart.ir.graph import Subgraph

__all__ = ["integer_input_ranges"]

# Ops that forward their first input's values unchanged.
_PASS = frozenset({"CAST", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "IDENTITY"})


def integer_input_ranges(sg: Subgraph) -> dict[int, tuple[int, int]]:
    """Subgraph input tensor -> ``(lo, hi)`` (inclusive) its values must stay in.

    Only inputs read as indices appear; the range is where every such reader accepts them.
    """
    cons = consumers(sg)
    out: dict[int, tuple[int, int]] = {}
    for t0 in sg.inputs.tolist():
        lo, hi = -(2**62), 2**62
        bounded = False
        seen = {int(t0)}
        todo = [int(t0)]
        while todo:
            t = todo.pop()
            for op in cons.row(t).tolist():
                name = sg.op_name(op)
                ins = sg.op_inputs.row_tuple(op)
                if name in _PASS and ins and ins[0] == t:
                    for o in sg.op_outputs.row_tuple(op):
                        if o >= 0 and o not in seen:
                            seen.add(o)
                            todo.append(o)
                    continue
                size = _index_bound(sg, op, name, ins, t)
                if size is not None:
                    bounded = True
                    lo, hi = max(lo, 0), min(hi, size - 1)
        if bounded and lo <= hi:
            out[int(t0)] = (int(lo), int(hi))
    return out


def _index_bound(sg: Subgraph, op: int, name: str, ins: tuple[int, ...], t: int) -> int | None:
    """How many values ``t`` may index when ``op`` reads it as indices (None: not indices)."""
    opts: Mapping[str, Any] = sg.op_options[op] or {}
    if name == "GATHER" and len(ins) > 1 and ins[1] == t and ins[0] >= 0:
        params = sg.tensor_shape.row_tuple(ins[0])
        axis = int(opts.get("axis", 0))
        axis = axis + len(params) if axis < 0 else axis
        return params[axis] if 0 <= axis < len(params) else None
    if name == "EMBEDDING_LOOKUP" and ins and ins[0] == t and len(ins) > 1:
        table = sg.tensor_shape.row_tuple(ins[1])
        return table[0] if table else None
    if name == "GATHER_ND" and len(ins) > 1 and ins[1] == t and ins[0] >= 0:
        params = sg.tensor_shape.row_tuple(ins[0])
        idx = sg.tensor_shape.row_tuple(t)
        k = idx[-1] if idx else 0
        return min(params[:k]) if 0 < k <= len(params) else None
    if name == "ONE_HOT" and ins and ins[0] == t and len(ins) > 1:
        depth = ins[1]
        if sg.tensor_is_constant[depth]:
            data = sg.buffers.data(int(sg.tensor_buffer[depth]))
            if len(data) >= 4:
                return int(np.frombuffer(data[:4].tobytes(), "<i4")[0])
    return None
