"""Standalone models of timing units, with once-only weight preparation kept static.

A unit's ops are extracted with :func:`edgepart.ir.extract.extract`. Inputs produced by a folded
``DEQUANTIZE`` of a constant (fp16 or int8 weights, evaluated once at preparation by LiteRT)
would otherwise become model inputs, turning static weights into dynamic ones: XNNPACK then
refuses a convolution and the builtin kernel repacks weights on every call. So such inputs are
replaced by the dequantized constant: the same values LiteRT computes at preparation, stored as
float32, which is exactly what both executors run on after preparation. (The folded op itself
cannot simply be extracted along: the converter shares one constant between many ops, so the
set would not be convex.)
"""

from __future__ import annotations

import dataclasses

import numpy as np

from edgepart.ir.dtypes import DType
from edgepart.ir.extract import extract
from edgepart.ir.graph import BufferTable, Model, Subgraph
from edgepart.schema import opnames

__all__ = ["standalone_model"]

_DEQUANTIZE = opnames.builtin_code("DEQUANTIZE")


def standalone_model(model: Model, ops: list[int], helpers: list[int]) -> Model:
    """``ops`` as a standalone model; outputs of the folded ``helpers`` become constants.

    Helpers that are not a ``DEQUANTIZE`` of a constant (e.g. ``DENSIFY``) are extracted along
    with the ops instead.
    """
    sg = model.main
    values: dict[int, np.ndarray] = {}
    keep: list[int] = []
    for h in helpers:
        v = _dequantized(sg, h)
        if v is None:
            keep.append(h)
        else:
            values[int(sg.op_outputs.row(h)[0])] = v
    sub = extract(model, sorted(set(ops) | set(keep)))
    if not values:
        return sub
    return _constantize(sub, {sg.tensor_names[t]: v for t, v in values.items()})


def _dequantized(sg: Subgraph, op: int) -> np.ndarray | None:
    """The float32 value a folded DEQUANTIZE produces, or None if not computable here."""
    if int(sg.op_builtin[op]) != _DEQUANTIZE:
        return None
    t = int(sg.op_inputs.row(op)[0])
    src = sg.tensor(t)
    if not src.is_constant or src.sparsity is not None or src.dtype.numpy is None:
        return None
    x = src.numpy().astype(np.float32)
    if src.dtype == DType.FLOAT16:
        return x
    q = src.quantization
    if q is None or len(q.scale) == 0:
        return None
    scale = q.scale.astype(np.float32)
    zp = q.zero_point.astype(np.float32) if len(q.zero_point) else np.zeros_like(scale)
    if len(scale) > 1:
        shape = [1] * x.ndim
        shape[q.quantized_dimension] = len(scale)
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    out: np.ndarray = ((x - zp) * scale).astype(np.float32)
    return out


def _constantize(m: Model, values: dict[str, np.ndarray]) -> Model:
    """Turn the named input tensors of ``m``'s main subgraph into float32 constants."""
    sg = m.main
    names = list(sg.tensor_names)
    targets = {names.index(n): v for n, v in values.items() if n in names}
    blobs: list[bytes | None] = [m.buffers.data(i).tobytes() or None for i in range(len(m.buffers))]
    tbuf = sg.tensor_buffer.copy()
    dt = sg.tensor_dtype.copy()
    for t, v in targets.items():
        blobs.append(np.ascontiguousarray(v, dtype="<f4").tobytes())
        tbuf[t] = len(blobs) - 1
        dt[t] = int(DType.FLOAT32)
    buffers = BufferTable.from_blobs(blobs)
    drop = set(targets)
    inputs = np.asarray([t for t in sg.inputs.tolist() if t not in drop], dtype=sg.inputs.dtype)
    new_sg = dataclasses.replace(
        sg, inputs=inputs, tensor_buffer=tbuf, tensor_dtype=dt, buffers=buffers
    )
    subs = tuple(dataclasses.replace(s, buffers=buffers) for s in m.subgraphs[1:])
    sigs = tuple(
        dataclasses.replace(s, inputs=tuple((n, t) for n, t in s.inputs if t not in drop))
        if s.subgraph == 0
        else s
        for s in m.signature_defs
    )
    return dataclasses.replace(m, subgraphs=(new_sg, *subs), buffers=buffers, signature_defs=sigs)
