"""Invariant checks for IR models: one place that states what a well-formed model is.

:func:`verify_model` returns every broken invariant as a readable line (an empty list means the
model is well-formed); :func:`check_model` raises with all of them. The reader guarantees
structural soundness (offsets, index ranges); these checks are about meaning, and they also
cover models made with :mod:`edgepart.ir.builder`, which builds permissively.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from edgepart.errors import ModelFormatError
from edgepart.ir import analysis
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model, Subgraph
from edgepart.schema.opnames import CALLING_BUILTINS

__all__ = ["calling_ops", "check_model", "verify_model", "verify_subgraph"]

_MAX_REPORTED = 50


def check_model(model: Model) -> None:
    """Raise :class:`ModelFormatError` listing every broken invariant, if any."""
    problems = verify_model(model)
    if problems:
        shown = "; ".join(problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise ModelFormatError(f"{model.source or 'model'}: {shown}{more}")


def verify_model(model: Model) -> list[str]:
    """Every broken invariant of ``model``, one line each (at most 50 per subgraph)."""
    problems: list[str] = []
    if len(model.buffers) == 0 or model.buffers.length[0] != 0:
        problems.append("buffer 0 must exist and be empty (TFLite's sentinel)")
    if not model.subgraphs:
        problems.append("the model has no subgraphs")
    for s, sg in enumerate(model.subgraphs):
        problems.extend(f"subgraph {s}: {p}" for p in verify_subgraph(sg, len(model.subgraphs)))
    for i, sig in enumerate(model.signature_defs):
        if not 0 <= sig.subgraph < len(model.subgraphs):
            problems.append(f"signature {sig.key!r} names subgraph {sig.subgraph}")
            continue
        nt = model.subgraphs[sig.subgraph].num_tensors
        names = [n for n, _ in sig.inputs] + [n for n, _ in sig.outputs]
        if len(set(names)) != len(names):
            problems.append(f"signature {sig.key!r} repeats a name")
        for name, t in (*sig.inputs, *sig.outputs):
            if not 0 <= t < nt:
                problems.append(f"signature {sig.key!r} maps {name!r} to tensor {t} of {nt}")
        del i
    for md in model.metadata:
        if not 0 <= md.buffer < len(model.buffers):
            problems.append(f"metadata {md.name!r} names buffer {md.buffer}")
    problems.extend(_call_cycles(model))
    return problems


def verify_subgraph(sg: Subgraph, num_subgraphs: int = 1) -> list[str]:
    """Every broken invariant of one subgraph."""
    out: list[str] = []

    def add(msg: str) -> bool:
        out.append(msg)
        return len(out) < _MAX_REPORTED

    nt = sg.num_tensors
    for what, c, lo in (
        ("input", sg.op_inputs, -1),
        ("output", sg.op_outputs, 0),
        ("intermediate", sg.op_intermediates, 0),
    ):
        bad = (c.idx < lo) | (c.idx >= nt)
        for k in np.flatnonzero(bad)[:5].tolist():
            add(f"{sg.describe_op(int(c.row_ids()[k]))} {what} names tensor {c.idx[k]} of {nt}")
    for what, arr in (("input", sg.inputs), ("output", sg.outputs)):
        for t in arr[(arr < 0) | (arr >= nt)].tolist():
            add(f"subgraph {what} names tensor {t} of {nt}")
    bad_code = (sg.op_opcode < 0) | (sg.op_opcode >= len(sg.opcodes))
    for i in np.flatnonzero(bad_code).tolist():
        add(f"op {i} uses op code {sg.op_opcode[i]} of {len(sg.opcodes)}")
    bad_buf = (sg.tensor_buffer < 0) | (sg.tensor_buffer >= len(sg.buffers))
    for t in np.flatnonzero(bad_buf).tolist():
        add(f"{sg.describe_tensor(t)} names buffer {sg.tensor_buffer[t]} of {len(sg.buffers)}")
    if out:
        return out  # index errors make the remaining checks meaningless

    # each tensor defined once; nothing produces inputs or constants
    outs = sg.op_outputs.idx.astype(np.int64)
    counts = np.bincount(outs, minlength=nt)
    for t in np.flatnonzero(counts > 1)[:10].tolist():
        add(f"{sg.describe_tensor(t)} is produced by {counts[t]} ops")
    produced = counts > 0
    for t in sg.inputs[produced[sg.inputs]].tolist():
        add(f"subgraph input {sg.describe_tensor(t)} is also produced by an op")
    for t in np.flatnonzero(produced & sg.tensor_is_constant)[:10].tolist():
        add(f"constant {sg.describe_tensor(t)} is produced by an op")

    # execution order: every input is available when its op runs
    if not analysis.is_topologically_sorted(sg):
        try:
            analysis.topological_order(sg)
            add("ops are not in a valid execution order (an op reads a later op's output)")
        except ModelFormatError as err:
            add(str(err))
    available = np.zeros(nt, dtype=bool)
    available[sg.inputs] = True
    available |= sg.tensor_is_constant | sg.tensor_is_variable
    reads = sg.op_inputs.idx.astype(np.int64)
    reads = reads[reads >= 0]
    for t in np.unique(reads[~(available[reads] | produced[reads])])[:10].tolist():
        add(f"{sg.describe_tensor(t)} is read but never defined (not an input, constant or output)")
    for t in sg.outputs.tolist():
        if not (available[t] or produced[t]):
            add(f"subgraph output {sg.describe_tensor(t)} is never defined")

    # tensor contents agree with their description
    for t in range(nt):
        if len(out) >= _MAX_REPORTED:
            break
        _check_tensor(sg, t, add)
    for i in calling_ops(sg).tolist():
        for r in sg.op(i).subgraph_refs:
            if not 0 <= r < num_subgraphs:
                add(f"{sg.describe_op(i)} calls subgraph {r} of {num_subgraphs}")
    return out


def _check_tensor(sg: Subgraph, t: int, report: Callable[[str], bool]) -> None:
    try:
        dtype = DType(int(sg.tensor_dtype[t]))
    except ValueError:
        report(f"{sg.describe_tensor(t)} has unknown type {sg.tensor_dtype[t]}")
        return
    shape = sg.tensor_shape.row(t)
    if sg.tensor_has_signature[t]:
        sig = sg.tensor_signature.row(t)
        if len(sig) != len(shape):
            report(
                f"{sg.describe_tensor(t)} shape {shape.tolist()} and signature "
                f"{sig.tolist()} differ in rank"
            )
        elif np.any((sig != -1) & (sig != shape)):
            report(
                f"{sg.describe_tensor(t)} shape {shape.tolist()} contradicts its signature "
                f"{sig.tolist()}"
            )
    q = sg.tensor_quantization[t]
    if q is not None and len(q.scale) > 1:
        qd = q.quantized_dimension
        if not 0 <= qd < len(shape) or shape[qd] != len(q.scale):
            report(
                f"{sg.describe_tensor(t)} has {len(q.scale)} scales on dimension {qd} of "
                f"shape {shape.tolist()}"
            )
        if len(q.zero_point) not in (0, len(q.scale)):
            report(
                f"{sg.describe_tensor(t)} has {len(q.zero_point)} zero points for "
                f"{len(q.scale)} scales"
            )
    if sg.tensor_is_constant[t] and sg.tensor_sparsity[t] is None and dtype.bits:
        have = int(sg.buffers.length[sg.tensor_buffer[t]])
        want = dtype.nbytes(int(sg.tensor_numel[t]))
        if have != want:
            report(
                f"constant {sg.describe_tensor(t)} holds {have} bytes, its shape "
                f"{shape.tolist()} of {dtype.name} needs {want}"
            )


def calling_ops(sg: Subgraph) -> np.ndarray:
    """Ops that call other subgraphs (IF, WHILE, CALL_ONCE, StableHLO bodies)."""
    return np.flatnonzero(np.isin(sg.op_builtin, list(CALLING_BUILTINS)))


def _call_cycles(model: Model) -> list[str]:
    """Control flow must not recurse (TFLite does not support recursive subgraph calls)."""
    calls = {
        s: {r for i in calling_ops(sg).tolist() for r in sg.op(i).subgraph_refs}
        for s, sg in enumerate(model.subgraphs)
    }
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    # iterative depth-first search (a call chain may be as long as the subgraph list)
    for root in sorted(calls):
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(sorted(calls.get(root, ()))))]
        while stack:
            s, it = stack[-1]
            r = next(it, None)
            if r is None:
                state[s] = 2
                stack.pop()
            elif state.get(r) == 1:
                return [f"subgraph {r} calls itself through control flow"]
            elif r not in state:
                state[r] = 1
                stack.append((r, iter(sorted(calls.get(r, ())))))
    return []
