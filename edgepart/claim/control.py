"""Control edges for partitioning: ``model_control_dependencies`` metadata or the side-effect chain.

TFLite reads the metadata entry ``model_control_dependencies`` (written by the converter's
rematerialization pass) when it holds one edge list per subgraph
(``tflite/core/interpreter.cc::SetMetadata``); its format is a protobuf-style varint stream:
version (1), number of subgraphs, then per subgraph the number of edges and each edge as two
zigzag-encoded ints (``metadata_util.cc``). Without it, greedy partitioning chains the nodes that
might have side effects: any resource-typed input or output, or IF / WHILE / CALL_ONCE
(``Subgraph::OpMightHaveSideEffect``).
"""

from __future__ import annotations

import numpy as np

from edgepart.errors import ModelFormatError
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model, Subgraph
from edgepart.schema import opnames

__all__ = [
    "METADATA_KEY",
    "might_have_side_effect",
    "model_control_edges",
    "ops_touching",
    "parse_control_dependencies",
]

METADATA_KEY = "model_control_dependencies"
_SIDE_EFFECT_OPS = frozenset(opnames.BUILTIN_CODES[n] for n in ("IF", "WHILE", "CALL_ONCE"))


def parse_control_dependencies(data: bytes) -> list[list[tuple[int, int]]]:
    """Decode the metadata payload into one edge list per subgraph.

    Raises ``ModelFormatError`` when the payload is malformed (TFLite then ignores it).
    """
    pos = 0

    def uvarint() -> int:
        nonlocal pos
        value, mul = 0, 1
        while True:
            if pos >= len(data):
                raise ModelFormatError(f"{METADATA_KEY}: truncated at byte {pos}")
            b = data[pos]
            pos += 1
            value += (b & 0x7F) * mul
            mul <<= 7
            if not b & 0x80:
                return value & 0xFFFFFFFF

    def svarint() -> int:
        v = uvarint()
        return -(v >> 1) - 1 if v & 1 else v >> 1

    version = uvarint()
    if version != 1:
        raise ModelFormatError(f"{METADATA_KEY}: unsupported version {version}")
    out = []
    for _ in range(uvarint()):
        out.append([(svarint(), svarint()) for _ in range(uvarint())])
    if pos != len(data):
        raise ModelFormatError(f"{METADATA_KEY}: {len(data) - pos} trailing bytes")
    return out


def model_control_edges(model: Model) -> list[list[tuple[int, int]]] | None:
    """The metadata control edges if TFLite would use them (one list per subgraph), else None."""
    raw = model.metadata_bytes(METADATA_KEY)
    if raw is None:
        return None
    try:
        edges = parse_control_dependencies(raw)
    except ModelFormatError:
        return None
    return edges if len(edges) == len(model.subgraphs) else None


def ops_touching(sg: Subgraph, mask: np.ndarray) -> np.ndarray:
    """Per op: some input or output tensor is in ``mask`` (omitted optional inputs never are).

    Parameters
    ----------
    sg : Subgraph
        The subgraph whose ops are tested.
    mask : numpy.ndarray
        Boolean per tensor of ``sg``.

    Returns
    -------
    numpy.ndarray
        Boolean per op.
    """
    out = np.zeros(sg.num_ops, dtype=bool)
    for csr in (sg.op_inputs, sg.op_outputs):
        t = csr.idx.astype(np.int64)
        ok = t >= 0
        hit = np.zeros(len(t), dtype=bool)
        hit[ok] = mask[t[ok]]
        if hit.any():
            out[np.unique(csr.row_ids()[hit])] = True
    return out


def might_have_side_effect(sg: Subgraph) -> np.ndarray:
    """Per op: a resource-typed input or output, or an IF / WHILE / CALL_ONCE op."""
    flags = np.isin(sg.op_builtin, list(_SIDE_EFFECT_OPS))
    flags |= ops_touching(sg, sg.tensor_dtype == int(DType.RESOURCE))
    return flags
