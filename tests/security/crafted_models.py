"""Crafted .tflite files for the reader's bounds: hand-built flatbuffers no converter writes.

``operators(n, share=True)`` lists one shared Operator table ``n`` times (4 bytes per op in the
file); ``share=False`` gives each op its own table and vectors (40 bytes per op);
``empty_ops(n)`` gives each op its own empty table (8 bytes per op).
"""

from __future__ import annotations

import flatbuffers


def operators(n_ops: int, share: bool = True, alias_last: bool = False, pad: int = 0) -> bytes:
    """A model of ``n_ops`` operators: one table listed ``n_ops`` times (``share``), distinct
    tables, or distinct tables whose last entry is the first again (``alias_last``). ``pad``
    bytes of model description follow every table, as weights do in a large model."""
    b = flatbuffers.Builder(1024)
    description = b.CreateString("x" * pad) if pad else None

    # Operator table (shared)
    def vec_i32(vals):
        b.StartVector(4, len(vals), 4)
        for v in reversed(vals):
            b.PrependInt32(v)
        return b.EndVector()

    def op():
        ins = vec_i32([0, 0])
        outs = vec_i32([1])
        b.StartObject(3)  # opcode_index(0), inputs(1), outputs(2)
        b.PrependUOffsetTRelativeSlot(1, ins, 0)
        b.PrependUOffsetTRelativeSlot(2, outs, 0)
        b.PrependUint32Slot(0, 0, 1)
        return b.EndObject()

    if share:
        shared = op()
        ops = [shared] * n_ops
    else:
        ops = [op() for _ in range(n_ops - alias_last)]
        ops += ops[:1] if alias_last else []
    b.StartVector(4, n_ops, 4)
    for o in reversed(ops):
        b.PrependUOffsetTRelative(o)
    opvec = b.EndVector()

    def tensor(name):
        nm = b.CreateString(name)
        shape = vec_i32([1, 4])
        b.StartObject(5)  # shape0 type1 buffer2 name3
        b.PrependUOffsetTRelativeSlot(0, shape, 0)
        b.PrependUOffsetTRelativeSlot(3, nm, 0)
        return b.EndObject()

    t0 = tensor("x")
    t1 = tensor("y")
    b.StartVector(4, 2, 4)
    b.PrependUOffsetTRelative(t1)
    b.PrependUOffsetTRelative(t0)
    tv = b.EndVector()
    inv = vec_i32([0])
    outv = vec_i32([1])
    b.StartObject(5)  # tensors0 inputs1 outputs2 operators3 name4
    b.PrependUOffsetTRelativeSlot(0, tv, 0)
    b.PrependUOffsetTRelativeSlot(1, inv, 0)
    b.PrependUOffsetTRelativeSlot(2, outv, 0)
    b.PrependUOffsetTRelativeSlot(3, opvec, 0)
    sg = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(sg)
    sgv = b.EndVector()
    b.StartObject(4)  # OperatorCode: deprecated_builtin_code0 custom_code1 version2 builtin_code3
    b.PrependInt32Slot(2, 1, 1)
    oc = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(oc)
    ocv = b.EndVector()
    b.StartObject(0)
    buf = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(buf)
    bv = b.EndVector()
    b.StartObject(5)  # Model: version0 operator_codes1 subgraphs2 description3 buffers4
    b.PrependUint32Slot(0, 3, 0)
    b.PrependUOffsetTRelativeSlot(1, ocv, 0)
    b.PrependUOffsetTRelativeSlot(2, sgv, 0)
    b.PrependUOffsetTRelativeSlot(4, bv, 0)
    if description is not None:
        b.PrependUOffsetTRelativeSlot(3, description, 0)
    m = b.EndObject()
    b.Finish(m, file_identifier=b"TFL3")
    return bytes(b.Output())


def empty_ops(n: int) -> bytes:
    b = flatbuffers.Builder(1024)
    ops = []
    for _ in range(n):
        b.StartObject(3)
        ops.append(b.EndObject())
    b.StartVector(4, n, 4)
    for o in reversed(ops):
        b.PrependUOffsetTRelative(o)
    opvec = b.EndVector()
    b.StartObject(5)
    b.PrependUOffsetTRelativeSlot(3, opvec, 0)
    sg = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(sg)
    sgv = b.EndVector()
    b.StartObject(4)
    b.PrependInt32Slot(2, 1, 1)
    oc = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(oc)
    ocv = b.EndVector()
    b.StartObject(5)
    b.PrependUint32Slot(0, 3, 0)
    b.PrependUOffsetTRelativeSlot(1, ocv, 0)
    b.PrependUOffsetTRelativeSlot(2, sgv, 0)
    m = b.EndObject()
    b.Finish(m, file_identifier=b"TFL3")
    return bytes(b.Output())
