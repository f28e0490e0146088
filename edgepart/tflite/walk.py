"""The reader's fast path: one verifying pass of the C walker (``_fbwalk.c``) over the file.

The schema tables become flat arrays once per process; a list of requests names the fields
the reader needs. The walker visits every table (checking it exactly as
:class:`~edgepart.tflite.flatbuf.Tables` does) and returns, per request, that field of every
table of the type in visit order (depth first, slot order: tensors of subgraph 0, then of
subgraph 1, ...). :func:`native_columns` turns the outputs into a
:class:`~edgepart.tflite.columns.RawModel`, or returns ``None`` when the extension is missing
or the file is malformed, in which case the NumPy reader runs and names the defect.
"""

from __future__ import annotations

import sys
from functools import cache
from itertools import accumulate
from typing import Any

import numpy as np

from edgepart.schema.tables import ENUMS, TABLES
from edgepart.tflite.columns import BUFFER_BYTES, NODE_BYTES, NODE_SLACK, RawModel
from edgepart.tflite.flatbuf import SCALARS, FlatBuffer

try:  # the optional C walker (see _fbwalk.c)
    from edgepart.tflite import _fbwalk  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - exercised when the extension is not built
    _fbwalk = None
if sys.byteorder != "little":  # pragma: no cover - the walker reads little-endian natively
    _fbwalk = None

__all__ = ["native_columns"]

# slot kinds and request kinds, as in _fbwalk.c
K_SCALAR, K_STRING, K_VEC_SCALAR, K_VEC_STRING, K_TABLE, K_VEC_TABLE, K_UNION = range(7)
Q_SCALAR, Q_VECTOR, Q_STRING, Q_CHILD, Q_UNION, Q_POS, Q_SPAN, Q_SCALAR_SIGNED, Q_DEFER = range(9)
_SIGNED = frozenset({"int8", "int16", "int32", "int64"})
# the reader's scalar table: numpy dtype and byte size per schema scalar type
_SIZES = {name: size for name, (_, size) in SCALARS.items()}
_DTYPES = {name: dtype for name, (dtype, _) in SCALARS.items()}

# (table, field, request kind): everything RawModel needs.
REQUESTS: tuple[tuple[str, str, int], ...] = (
    ("Model", "version", Q_SCALAR),
    ("Model", "description", Q_STRING),
    ("Model", "metadata_buffer", Q_VECTOR),
    ("OperatorCode", "deprecated_builtin_code", Q_SCALAR),
    ("OperatorCode", "builtin_code", Q_SCALAR),
    ("OperatorCode", "version", Q_SCALAR),
    ("OperatorCode", "custom_code", Q_STRING),
    # Buffer tables sit next to the weights they describe, all over the file: the walk only
    # locates them, and the reader verifies and reads them on first use (see reader.py).
    ("Buffer", "", Q_DEFER),
    ("SubGraph", "tensors", Q_VECTOR),  # of tables: CSR pointers over all tensors
    ("SubGraph", "operators", Q_VECTOR),
    ("SubGraph", "inputs", Q_VECTOR),
    ("SubGraph", "outputs", Q_VECTOR),
    ("SubGraph", "name", Q_STRING),
    ("SubGraph", "debug_metadata_index", Q_SCALAR),
    ("Tensor", "", Q_POS),
    ("Tensor", "shape", Q_VECTOR),
    ("Tensor", "shape_signature", Q_VECTOR),
    ("Tensor", "type", Q_SCALAR),
    ("Tensor", "buffer", Q_SCALAR),
    ("Tensor", "name", Q_STRING),
    ("Tensor", "is_variable", Q_SCALAR),
    ("Tensor", "has_rank", Q_SCALAR),
    ("Tensor", "external_buffer", Q_SCALAR),
    ("Tensor", "quantization", Q_CHILD),
    ("Tensor", "sparsity", Q_CHILD),
    ("Tensor", "variant_tensors", Q_CHILD),
    ("SparsityParameters", "", Q_POS),
    ("QuantizationParameters", "scale", Q_VECTOR),
    ("QuantizationParameters", "zero_point", Q_VECTOR),
    ("QuantizationParameters", "min", Q_VECTOR),
    ("QuantizationParameters", "max", Q_VECTOR),
    ("QuantizationParameters", "quantized_dimension", Q_SCALAR),
    ("QuantizationParameters", "details", Q_UNION),
    ("Operator", "opcode_index", Q_SCALAR),
    ("Operator", "inputs", Q_VECTOR),
    ("Operator", "outputs", Q_VECTOR),
    ("Operator", "intermediates", Q_VECTOR),
    ("Operator", "builtin_options", Q_UNION),
    ("Operator", "builtin_options2", Q_UNION),
    ("Operator", "custom_options", Q_SPAN),
    ("Operator", "custom_options_format", Q_SCALAR),
    ("Operator", "mutating_variable_inputs", Q_VECTOR),
    ("Operator", "large_custom_options_offset", Q_SCALAR),
    ("Operator", "large_custom_options_size", Q_SCALAR),
    ("Operator", "debug_metadata_index", Q_SCALAR),
    ("Metadata", "name", Q_STRING),
    ("Metadata", "buffer", Q_SCALAR),
    ("SignatureDef", "inputs", Q_VECTOR),  # CSR ends over all TensorMaps (see _raw)
    ("SignatureDef", "outputs", Q_VECTOR),
    ("SignatureDef", "signature_key", Q_STRING),
    ("SignatureDef", "subgraph_index", Q_SCALAR),
    ("TensorMap", "name", Q_STRING),
    ("TensorMap", "tensor_index", Q_SCALAR),
)


@cache
def _schema() -> tuple[dict[str, int], tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """Flat schema arrays for the walker and the request arrays (built once): per request its
    flat slot, kind, scalar default and, for vectors, the NumPy type number of the elements."""
    names = sorted(TABLES)
    tid = {t: i for i, t in enumerate(names)}
    enums = sorted(
        {f[2].split(":", 1)[1] for fs in TABLES.values() for f in fs if f[2].startswith("union:")}
    )
    eid = {e: i for i, e in enumerate(enums)}
    slot_base: list[int] = []
    nslots: list[int] = []
    size: list[int] = []
    kind: list[int] = []
    arg: list[int] = []
    flat: dict[tuple[str, str], int] = {}
    for t in names:
        fields = {f[1]: f for f in TABLES[t]}
        n = max(fields, default=-1) + 1
        slot_base.append(len(size))
        nslots.append(n)
        for s in range(n):
            f = fields.get(s)
            if f is None:  # a deprecated slot: only its bounds are checked
                size.append(1)
                kind.append(K_SCALAR)
                arg.append(0)
                continue
            flat[(t, f[0])] = len(size)
            ftype = f[2]
            if ftype in _SIZES:
                size.append(_SIZES[ftype])
                kind.append(K_SCALAR)
                arg.append(0)
                continue
            size.append(4)
            if ftype == "string":
                kind.append(K_STRING)
                arg.append(0)
            elif ftype.startswith("union:"):
                kind.append(K_UNION)
                arg.append(eid[ftype.split(":", 1)[1]])
            elif ftype.startswith("["):
                elem = ftype[1:-1]
                if elem in _SIZES:
                    kind.append(K_VEC_SCALAR)
                    arg.append(_SIZES[elem])
                elif elem == "string":
                    kind.append(K_VEC_STRING)
                    arg.append(0)
                else:
                    kind.append(K_VEC_TABLE)
                    arg.append(tid[elem])
            else:
                kind.append(K_TABLE)
                arg.append(tid[ftype])
    enum_base: list[int] = []
    enum_count: list[int] = []
    members: list[int] = []
    for e in enums:
        table = ENUMS[e]
        count = max(table) + 1
        enum_base.append(len(members))
        enum_count.append(count)
        for code in range(count):
            member = table.get(code)
            members.append(tid[member] if code and member in tid else -1)
    req_slot, req_kind, req_default, req_typenum = [], [], [], []
    for t, field, qkind in REQUESTS:
        req_typenum.append(0)
        if qkind in (Q_POS, Q_DEFER):
            req_slot.append(-1 - tid[t])
            req_default.append(0)
        else:
            req_slot.append(flat[(t, field)])
            ftype, default = next((f[2], f[3]) for f in TABLES[t] if f[0] == field)
            if qkind == Q_SCALAR and ftype in _SIGNED:
                qkind = Q_SCALAR_SIGNED
            value = 0
            if ftype in _SIZES and isinstance(default, (int, float)):
                value = int(default)
            req_default.append(value)
            if qkind == Q_VECTOR:  # the NumPy type of its elements (tables: their indices)
                req_typenum[-1] = np.dtype(_DTYPES.get(ftype[1:-1], "<i8")).num
                req_default[-1] = int((t, field) in _PRESENCE)  # 1: return presence per row
        req_kind.append(qkind)

    def arr(x: list[int]) -> np.ndarray:
        return np.asarray(x, dtype=np.int64)

    schema = (
        arr(slot_base),
        arr(nslots),
        arr(size),
        arr(kind),
        arr(arg),
        arr(enum_base),
        arr(enum_count),
        arr(members),
    )
    requests = (arr(req_slot), arr(req_kind), arr(req_default), arr(req_typenum))
    return tid, schema, requests


def native_columns(fb: FlatBuffer, root_pos: int) -> RawModel | None:
    """The model's columns from one C pass, or None (no extension, or a malformed file)."""
    if _fbwalk is None:
        return None
    tid, schema, requests = _schema()
    counted = np.zeros(len(tid), dtype=np.int64)  # check_graph_size's bound, in C
    counted[[tid["Operator"], tid["Tensor"]]] = NODE_BYTES
    counted[tid["Buffer"]] = BUFFER_BYTES
    budget = fb.n + NODE_SLACK
    outs = _fbwalk.walk(fb.data, tid["Model"], root_pos, *schema, *requests, counted, budget)
    if outs is None:
        return None
    return _raw(dict(zip(_KEYS, outs, strict=True)))


_KEYS = tuple((t, field) for t, field, _ in REQUESTS)
# Vectors whose presence (absent vs empty) the IR keeps.
_PRESENCE = frozenset(
    {
        ("Tensor", "shape_signature"),
        ("QuantizationParameters", "min"),
        ("QuantizationParameters", "max"),
    }
)


def _vec(entry: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return entry[0], entry[1]


def _raw(g: dict[tuple[str, str], Any]) -> RawModel:
    q_index = g["Tensor", "quantization"]
    sp_index = g["Tensor", "sparsity"]
    sp_pos = g["SparsityParameters", ""]
    if len(sp_pos):
        t_sparsity = np.where(sp_index >= 0, sp_pos[np.maximum(sp_index, 0)], -1)
    else:  # no sparse tensor: every index is -1 already
        t_sparsity = sp_index
    # Signature maps arrive interleaved (inputs of signature 0, its outputs, then signature 1),
    # with CSR ends counted over all maps: signature i's inputs are rows [out_end[i],
    # in_end[i + 1]) and its outputs [in_end[i + 1], out_end[i + 1]).
    in_end = g["SignatureDef", "inputs"][0].tolist()
    out_end = g["SignatureDef", "outputs"][0].tolist()
    ins = [(out_end[i], in_end[i + 1]) for i in range(len(in_end) - 1)]
    outs = [(in_end[i + 1], out_end[i + 1]) for i in range(len(in_end) - 1)]
    in_rows, out_rows = _rows(ins), _rows(outs)
    map_names = g["TensorMap", "name"]
    map_tensor = g["TensorMap", "tensor_index"]
    return RawModel(
        version=int(g["Model", "version"][0]),
        description=(int(g["Model", "description"][0, 0]), int(g["Model", "description"][0, 1])),
        metadata_buffer=g["Model", "metadata_buffer"][1],
        oc_deprecated=g["OperatorCode", "deprecated_builtin_code"],
        oc_builtin=g["OperatorCode", "builtin_code"],
        oc_version=g["OperatorCode", "version"],
        oc_custom=g["OperatorCode", "custom_code"],
        buf_pos=g["Buffer", ""],
        sg_tensor_ptr=g["SubGraph", "tensors"][0],
        sg_op_ptr=g["SubGraph", "operators"][0],
        sg_inputs=_vec(g["SubGraph", "inputs"]),
        sg_outputs=_vec(g["SubGraph", "outputs"]),
        sg_name=g["SubGraph", "name"],
        sg_debug=g["SubGraph", "debug_metadata_index"],
        t_shape=_vec(g["Tensor", "shape"]),
        t_signature=_vec(g["Tensor", "shape_signature"]),
        t_has_signature=g["Tensor", "shape_signature"][2],
        t_dtype=g["Tensor", "type"],
        t_buffer=g["Tensor", "buffer"],
        t_name=g["Tensor", "name"],
        t_is_variable=g["Tensor", "is_variable"],
        t_has_rank=g["Tensor", "has_rank"],
        t_external_buffer=g["Tensor", "external_buffer"],
        t_quant_row=q_index,
        t_sparsity_pos=t_sparsity,
        t_variant_count=np.maximum(g["Tensor", "variant_tensors"], 0),
        t_pos=g["Tensor", ""],
        q_scale=_vec(g["QuantizationParameters", "scale"]),
        q_zero_point=_vec(g["QuantizationParameters", "zero_point"]),
        q_min=_vec(g["QuantizationParameters", "min"]),
        q_min_has=g["QuantizationParameters", "min"][2],
        q_max=_vec(g["QuantizationParameters", "max"]),
        q_max_has=g["QuantizationParameters", "max"][2],
        q_dim=g["QuantizationParameters", "quantized_dimension"],
        q_details=g["QuantizationParameters", "details"],
        o_opcode=g["Operator", "opcode_index"],
        o_inputs=_vec(g["Operator", "inputs"]),
        o_outputs=_vec(g["Operator", "outputs"]),
        o_intermediates=_vec(g["Operator", "intermediates"]),
        o_options=g["Operator", "builtin_options"],
        o_options2=g["Operator", "builtin_options2"],
        o_custom=g["Operator", "custom_options"],
        o_custom_format=g["Operator", "custom_options_format"],
        o_mutating=_vec(g["Operator", "mutating_variable_inputs"]),
        o_large_offset=g["Operator", "large_custom_options_offset"],
        o_large_size=g["Operator", "large_custom_options_size"],
        o_debug=g["Operator", "debug_metadata_index"],
        md_name=g["Metadata", "name"],
        md_buffer=g["Metadata", "buffer"],
        sd_key=g["SignatureDef", "signature_key"],
        sd_subgraph=g["SignatureDef", "subgraph_index"],
        sd_inputs_ptr=np.array([0, *accumulate(b - a for a, b in ins)], dtype=np.int64),
        sd_outputs_ptr=np.array([0, *accumulate(b - a for a, b in outs)], dtype=np.int64),
        in_map_name=map_names[in_rows],
        in_map_tensor=map_tensor[in_rows],
        out_map_name=map_names[out_rows],
        out_map_tensor=map_tensor[out_rows],
    )


def _rows(bounds: list[tuple[int, int]]) -> slice | np.ndarray:
    """The rows ``[a, b)`` of every pair in ``bounds``, as a slice when there is one pair."""
    if len(bounds) == 1:
        return slice(*bounds[0])
    return np.array([r for a, b in bounds for r in range(a, b)], dtype=np.int64)
