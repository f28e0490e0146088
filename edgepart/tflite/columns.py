"""Every column the reader needs from a ``.tflite`` file, gathered by one of two paths.

:class:`RawModel` holds the raw columns (NumPy arrays; CSR pairs for vectors; (start, length)
spans for strings and byte blobs, which are decoded lazily). :func:`numpy_columns` fills it
with :class:`~edgepart.tflite.flatbuf.Tables` (vectorized NumPy, precise error messages);
:mod:`edgepart.tflite.walk` fills it in one pass of the optional C walker. The reader builds
the IR from either, so both paths give the same model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgepart.errors import ModelFormatError
from edgepart.tflite.flatbuf import FlatBuffer, Tables, verify_union_column

__all__ = ["RawModel", "numpy_columns"]

Vec = tuple[np.ndarray, np.ndarray]  # CSR (ptr, values)


@dataclass
class RawModel:
    """Raw columns of a model, ready for assembly into the IR (see module docstring)."""

    version: int
    description: tuple[int, int]
    metadata_buffer: np.ndarray
    # operator codes
    oc_deprecated: np.ndarray
    oc_builtin: np.ndarray
    oc_version: np.ndarray
    oc_custom: np.ndarray  # (n, 2) spans, length -1 if absent
    # buffers
    buf_pos: np.ndarray  # Buffer table positions, verified on first use (buffer_columns)
    # subgraphs
    sg_tensor_ptr: np.ndarray
    sg_op_ptr: np.ndarray
    sg_inputs: Vec
    sg_outputs: Vec
    sg_name: np.ndarray
    sg_debug: np.ndarray
    # tensors, all subgraphs
    t_shape: Vec
    t_signature: Vec
    t_has_signature: np.ndarray
    t_dtype: np.ndarray
    t_buffer: np.ndarray
    t_name: np.ndarray
    t_is_variable: np.ndarray
    t_has_rank: np.ndarray
    t_external_buffer: np.ndarray
    t_quant_row: np.ndarray  # row into the q_* columns, -1 without quantization
    t_sparsity_pos: np.ndarray  # table position, -1 if dense
    t_variant_count: np.ndarray
    t_pos: np.ndarray
    # quantization tables
    q_scale: Vec
    q_zero_point: Vec
    q_min: Vec
    q_min_has: np.ndarray
    q_max: Vec
    q_max_has: np.ndarray
    q_dim: np.ndarray
    q_details: np.ndarray  # (n, 2): union code, table position
    # operators, all subgraphs
    o_opcode: np.ndarray
    o_inputs: Vec
    o_outputs: Vec
    o_intermediates: Vec
    o_options: np.ndarray  # (n, 2): union code, table position
    o_options2: np.ndarray
    o_custom: np.ndarray  # (n, 2) spans
    o_custom_format: np.ndarray
    o_mutating: Vec
    o_large_offset: np.ndarray
    o_large_size: np.ndarray
    o_debug: np.ndarray
    # metadata and signatures
    md_name: np.ndarray
    md_buffer: np.ndarray
    sd_key: np.ndarray
    sd_subgraph: np.ndarray
    sd_inputs_ptr: np.ndarray
    sd_outputs_ptr: np.ndarray
    in_map_name: np.ndarray
    in_map_tensor: np.ndarray
    out_map_name: np.ndarray
    out_map_tensor: np.ndarray


NODE_BYTES = 32
"""A file holds at most one operator or tensor per this many bytes (plus :data:`NODE_SLACK`).

Every operator and tensor costs the IR about 250 bytes, so this bound keeps the reader within
about 8x of the file whatever the file lists. No TFLite writer comes near it: an operator with
one input and one output takes at least 36 bytes of tables and vectors, a named tensor 32, and
the leanest of 60 real and generated models spends 47 bytes per operator or tensor (58 outside
its weights). Only shared or degenerate tables reach it."""
NODE_SLACK = 32 * 1024
BUFFER_BYTES = 16
"""Likewise for buffers: writers share one empty ``Buffer`` table between many entries, so a
buffer may take only its 4-byte entry, but real files have about one buffer per tensor
(the leanest: one per 194 bytes)."""


def check_graph_size(fb: FlatBuffer, ops: int, tensors: int, buffers: int) -> None:
    """Refuse more operators, tensors and buffers than the file can hold (:data:`NODE_BYTES`,
    :data:`BUFFER_BYTES`; the C walker applies the same budget)."""
    if (ops + tensors) * NODE_BYTES + buffers * BUFFER_BYTES > fb.n + NODE_SLACK:
        raise ModelFormatError(
            f"{fb.source}: {ops} operators, {tensors} tensors and {buffers} buffers in {fb.n} "
            f"bytes, more than fit (one operator or tensor per {NODE_BYTES} bytes, one buffer "
            f"per {BUFFER_BYTES}), which no TFLite writer produces; the file is corrupted or "
            "crafted"
        )


def _spans(start: np.ndarray, length: np.ndarray) -> np.ndarray:
    return np.stack([start.astype(np.int64), length.astype(np.int64)], axis=1)


def _union(t: Tables, name: str) -> np.ndarray:
    code, pos = t.union_raw(name)
    return np.stack([code.astype(np.int64), pos.astype(np.int64)], axis=1)


def _rows_of(has: np.ndarray) -> np.ndarray:
    rows = np.full(len(has), -1, dtype=np.int64)
    rows[has] = np.arange(int(has.sum()))
    return rows


def numpy_columns(fb: FlatBuffer, root: Tables) -> RawModel:
    """Gather every column with the verifying NumPy reader (raises ModelFormatError)."""
    _, oc = root.tables("operator_codes")
    _, buf_pos = root.element_positions("buffers")
    fb.check(
        (buf_pos < 0) | (buf_pos > fb.n - 4) | ((buf_pos & 3) != 0),
        buf_pos,
        "model.buffers: Buffer table out of bounds or misaligned",
    )
    _, sgs = root.tables("subgraphs")
    tptr, tpos = sgs.element_positions("tensors")
    optr, opos = sgs.element_positions("operators")
    check_graph_size(fb, len(opos), len(tpos), len(buf_pos))
    tens = sgs.column("tensors", tpos)
    ops = sgs.column("operators", opos)

    q_has, qt = tens.table("quantization")
    min_has, _ = qt._targets("min")
    max_has, _ = qt._targets("max")
    details = _union(qt, "details")
    for _, group in qt.union("details")[2].values():
        group.verify()
    sp_has, spt = tens.table("sparsity")
    spt.verify()
    sparsity_pos = np.full(len(tens), -1, dtype=np.int64)
    sparsity_pos[sp_has] = spt.pos
    vptr, variants = tens.tables("variant_tensors")
    variants.verify()

    options = _union(ops, "builtin_options")
    options2 = _union(ops, "builtin_options2")
    verify_union_column(fb, "BuiltinOptions", options[:, 0], options[:, 1], "builtin_options")
    verify_union_column(fb, "BuiltinOptions2", options2[:, 0], options2[:, 1], "builtin_options2")

    _, md = root.tables("metadata")
    _, sd = root.tables("signature_defs")
    in_ptr, in_maps = sd.tables("inputs")
    out_ptr, out_maps = sd.tables("outputs")
    sig_has, _ = tens._targets("shape_signature")
    desc = root.strings("description")

    raw = RawModel(
        version=int(root.scalar("version")[0]),
        description=(int(desc[0][0]), int(desc[1][0])),
        metadata_buffer=root.vector("metadata_buffer")[1],
        oc_deprecated=oc.scalar("deprecated_builtin_code"),
        oc_builtin=oc.scalar("builtin_code"),
        oc_version=oc.scalar("version"),
        oc_custom=_spans(*oc.strings("custom_code")),
        buf_pos=buf_pos,
        sg_tensor_ptr=tptr,
        sg_op_ptr=optr,
        sg_inputs=sgs.vector("inputs"),
        sg_outputs=sgs.vector("outputs"),
        sg_name=_spans(*sgs.strings("name")),
        sg_debug=sgs.scalar("debug_metadata_index"),
        t_shape=tens.vector("shape"),
        t_signature=tens.vector("shape_signature"),
        t_has_signature=sig_has,
        t_dtype=tens.scalar("type"),
        t_buffer=tens.scalar("buffer"),
        t_name=_spans(*tens.strings("name")),
        t_is_variable=tens.scalar("is_variable"),
        t_has_rank=tens.scalar("has_rank"),
        t_external_buffer=tens.scalar("external_buffer"),
        t_quant_row=_rows_of(q_has),
        t_sparsity_pos=sparsity_pos,
        t_variant_count=np.diff(vptr),
        t_pos=tens.pos,
        q_scale=qt.vector("scale"),
        q_zero_point=qt.vector("zero_point"),
        q_min=qt.vector("min"),
        q_min_has=min_has,
        q_max=qt.vector("max"),
        q_max_has=max_has,
        q_dim=qt.scalar("quantized_dimension"),
        q_details=details,
        o_opcode=ops.scalar("opcode_index"),
        o_inputs=ops.vector("inputs"),
        o_outputs=ops.vector("outputs"),
        o_intermediates=ops.vector("intermediates"),
        o_options=options,
        o_options2=options2,
        o_custom=_spans(*ops.vector_spans("custom_options", 1)),
        o_custom_format=ops.scalar("custom_options_format"),
        o_mutating=ops.vector("mutating_variable_inputs"),
        o_large_offset=ops.scalar("large_custom_options_offset"),
        o_large_size=ops.scalar("large_custom_options_size"),
        o_debug=ops.scalar("debug_metadata_index"),
        md_name=_spans(*md.strings("name")),
        md_buffer=md.scalar("buffer"),
        sd_key=_spans(*sd.strings("signature_key")),
        sd_subgraph=sd.scalar("subgraph_index"),
        sd_inputs_ptr=in_ptr,
        sd_outputs_ptr=out_ptr,
        in_map_name=_spans(*in_maps.strings("name")),
        in_map_tensor=in_maps.scalar("tensor_index"),
        out_map_name=_spans(*out_maps.strings("name")),
        out_map_tensor=out_maps.scalar("tensor_index"),
    )
    # Newest schema fields (external buffer groups, ...): verify them so nothing is unchecked.
    root.verify(
        skip=frozenset({"operator_codes", "subgraphs", "buffers", "metadata", "signature_defs"})
    )
    return raw


def buffer_columns(fb: FlatBuffer, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Verify the Buffer tables at ``pos``; their data spans, offsets and sizes."""
    bt = Tables(fb, "Buffer", pos, "model.buffers")
    bt.verify()
    return _spans(*bt.vector_spans("data", 1)), bt.scalar("offset"), bt.scalar("size")
