"""Hand-built probe models (edgepart's builder and writer) for claiming tests."""

from __future__ import annotations

import numpy as np

from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model
from edgepart.ir.values import Quantization

F32 = DType.FLOAT32


def _axis(g, name="axis"):
    return g.constant(name, np.array(1, np.int32))


def chain_model(kinds, *, shape=(1, 8), name="probe") -> Model:
    """A chain where each op reads the previous output (binary ops also read a constant)."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", F32, shape)
    cur = x
    for i, k in enumerate(kinds):
        y = g.tensor(f"t{i}", F32, shape)
        if k == "CUMSUM":
            g.op("CUMSUM", [cur, _axis(g, f"axis{i}")], [y])
        elif k in ("ADD", "MUL", "SUB"):
            c = g.constant(f"c{i}", np.full(shape, 0.5, np.float32))
            g.op(k, [cur, c], [y])
        else:
            g.op(k, [cur], [y])
        cur = y
    g.output(cur)
    return mb.build()


def six_op_probe() -> Model:
    """tflite.md 1.2: ADD, CUMSUM, MUL, CUMSUM, ADD, ADD with CUMSUM refused by XNNPACK.

    Tensor flow: x -> ADD0 -> a; x -> CUMSUM1 -> b; a -> MUL2 -> c; b -> CUMSUM3 -> d;
    (c, d) -> ADD4 -> e; e -> ADD5 -> out. Greedy merges ADD0 and MUL2 around CUMSUM1.
    """
    mb = ModelBuilder()
    g = mb.subgraph("main")
    s = (1, 8)
    x = g.input("x", F32, s)
    one = g.constant("one", np.ones(s, np.float32))
    t = [g.tensor(f"t{i}", F32, s) for i in range(6)]
    g.op("ADD", [x, one], [t[0]])
    g.op("CUMSUM", [x, _axis(g, "a1")], [t[1]])
    g.op("MUL", [t[0], one], [t[2]])
    g.op("CUMSUM", [t[1], _axis(g, "a3")], [t[3]])
    g.op("ADD", [t[2], t[3]], [t[4]])
    g.op("ADD", [t[4], one], [t[5]])
    g.output(t[5])
    return mb.build()


def branches_model(n_branches: int, sizes, *, refused="CUMSUM") -> Model:
    """Segments of ADDs in series, each followed by one refused op.

    Segment ``i`` holds ``sizes[i]`` ADDs; the refused op after it depends on it and the next
    segment on the refused op, so each segment is a separate partition of the given size.
    """
    mb = ModelBuilder()
    g = mb.subgraph("main")
    s = (1, 8)
    x = g.input("x", F32, s)
    one = g.constant("one", np.ones(s, np.float32))
    cur = x
    for b in range(n_branches):
        for k in range(sizes[b]):
            y = g.tensor(f"b{b}_{k}", F32, s)
            g.op("ADD", [cur, one], [y])
            cur = y
        y = g.tensor(f"b{b}_cut", F32, s)
        ax = g.constant(f"ax{b}", np.array([1] if refused == "REVERSE_V2" else 1, np.int32))
        g.op(refused, [cur, ax], [y])
        cur = y
    g.output(cur)
    return mb.build()


def quantized(scale=0.05, zp=0) -> Quantization:
    return Quantization(np.array([scale], np.float32), np.array([zp], np.int64))


def _b():
    mb = ModelBuilder()
    return mb, mb.subgraph("main")


def xnnpack_probes() -> dict[str, Model]:
    """Probe models with ops XNNPACK refuses for a specific reason, each amid supported ops."""
    out: dict[str, Model] = {"six_op": six_op_probe()}
    s = (1, 8)

    def wrap(body, shape=s, out_shape=None, in_dtype=F32):
        """x -> ADD -> <body> -> ADD -> out: the probe op sits between two supported ADDs."""
        mb, g = _b()
        x = g.input("x", in_dtype, shape)
        c = g.constant("c", np.full(shape, 0.5, np.float32))
        a = g.tensor("a", F32, shape)
        g.op("ADD", [x, c], [a])
        y, yshape = body(g, a)
        c2 = g.constant("c2", np.full(yshape, 0.25, np.float32))
        z = g.tensor("z", F32, yshape)
        g.op("ADD", [y, c2], [z])
        g.output(z)
        return mb.build()

    def expand_dims(g, a):
        y = g.tensor("e", F32, (1, 1, 8))
        g.op("EXPAND_DIMS", [a, g.constant("ax", np.array([1], np.int32))], [y])
        return y, (1, 1, 8)

    out["expand_dims"] = wrap(expand_dims)

    def softmax_beta2(g, a):
        y = g.tensor("sm", F32, s)
        g.op("SOFTMAX", [a], [y], options={"beta": 2.0})
        return y, s

    out["softmax_beta2"] = wrap(softmax_beta2)

    def add_tanh(g, a):
        y = g.tensor("t", F32, s)
        g.op("ADD", [a, a], [y], options={"fused_activation_function": "TANH"})
        return y, s

    out["add_fused_tanh"] = wrap(add_tanh)

    def log(g, a):
        # VisitUnaryNode takes LOG (float in, float out): one partition, not two around it
        y = g.tensor("l", F32, s)
        g.op("LOG", [a], [y])
        return y, s

    out["log"] = wrap(log)

    def mean_dynamic_axes(g, a):
        y = g.tensor("m", F32, (1,))
        axis_src = g.constant("axsrc", np.array([1], np.int32))
        ax = g.tensor("ax", DType.INT32, (1,))
        g.op("ABS", [axis_src], [ax])  # int32 ABS: refused by XNNPACK, makes the axes non-constant
        g.op("MEAN", [a, ax], [y], options={"keep_dims": False})
        return y, (1,)

    out["mean_dynamic_axes"] = wrap(mean_dynamic_axes)

    def strided_shrink(g, a):
        y = g.tensor("ss", F32, (8,))
        i32 = lambda n, v: g.constant(n, np.array(v, np.int32))  # noqa: E731
        g.op(
            "STRIDED_SLICE",
            [a, i32("b", [0, 0]), i32("e", [1, 8]), i32("st", [1, 1])],
            [y],
            options={"shrink_axis_mask": 1},
        )
        return y, (8,)

    out["strided_slice_shrink"] = wrap(strided_shrink)

    def concat6(g, a):
        y = g.tensor("cat", F32, (1, 48))
        g.op("CONCATENATION", [a] * 6, [y], options={"axis": 1})
        return y, (1, 48)

    out["concat_6_inputs"] = wrap(concat6)

    # rank 7: beyond XNN_MAX_TENSOR_DIMS
    out["rank7_add"] = _rank_chain((1, 1, 1, 1, 1, 2, 4))

    # int16 ADD in the middle of a float chain
    out["int16_add"] = _int16_probe()

    # convolutions: non-constant filter (refused) and the regular case
    out["conv_dynamic_filter"] = _conv_probe(bias=True, const_filter=False)
    out["conv_ok"] = _conv_probe(bias=True, const_filter=True)

    # fp16 weights: one DEQUANTIZE feeds a supported FC, one feeds a refused CUMSUM
    out["fp16_dequant"] = _fp16_probe()
    out["control_edges"] = control_edge_probe(with_metadata=True)
    out["control_edges_none"] = control_edge_probe(with_metadata=False)
    out["resource_variables"] = _variables_probe()
    return out


def _variables_probe() -> Model:
    """VAR_HANDLE -> READ_VARIABLE -> ADD -> ASSIGN_VARIABLE, then a refused CUMSUM and a MUL."""
    mb, g = _b()
    s = (1, 8)
    x = g.input("x", F32, s)
    res = g.tensor("res", DType.RESOURCE, ())
    g.op("VAR_HANDLE", [], [res], options={"shared_name": "v", "container": ""})
    v = g.tensor("v", F32, s)
    g.op("READ_VARIABLE", [res], [v])
    a = g.tensor("a", F32, s)
    g.op("ADD", [x, v], [a])
    g.op("ASSIGN_VARIABLE", [res, a], [])
    c = g.tensor("c", F32, s)
    g.op("CUMSUM", [a, g.constant("ax", np.array(1, np.int32))], [c])
    d = g.tensor("d", F32, s)
    g.op("MUL", [c, x], [d])
    g.output(d)
    return mb.build()


def _rank_chain(shape) -> Model:
    mb, g = _b()
    x = g.input("x", F32, shape)
    c = g.constant("c", np.ones(shape, np.float32))
    a = g.tensor("a", F32, shape)
    g.op("ADD", [x, c], [a])
    flat = (1, int(np.prod(shape)))
    r = g.tensor("r", F32, flat)
    g.op("RESHAPE", [a, g.constant("shp", np.array(flat, np.int32))], [r])
    z = g.tensor("z", F32, flat)
    g.op("RELU", [r], [z])
    g.output(z)
    return mb.build()


def _int16_probe() -> Model:
    mb, g = _b()
    s = (1, 8)
    x = g.input("x", F32, s)
    q16 = Quantization(np.array([0.001], np.float32), np.array([0], np.int64))
    a = g.tensor("a", F32, s)
    g.op("RELU", [x], [a])
    qa = g.tensor("qa", DType.INT16, s, quantization=q16)
    g.op("QUANTIZE", [a], [qa])
    qb = g.tensor("qb", DType.INT16, s, quantization=q16)
    g.op("ADD", [qa, qa], [qb])
    b = g.tensor("b", F32, s)
    g.op("DEQUANTIZE", [qb], [b])
    z = g.tensor("z", F32, s)
    g.op("RELU", [b], [z])
    g.output(z)
    return mb.build()


def _conv_probe(*, bias: bool, const_filter: bool) -> Model:
    mb, g = _b()
    x = g.input("x", F32, (1, 8, 8, 3))
    rng = np.random.default_rng(0)
    wv = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    if const_filter:
        w = g.constant("w", wv)
    else:
        w0 = g.constant("w0", wv)
        w = g.tensor("w", F32, wv.shape)
        g.op("CUMSUM", [w0, g.constant("ax", np.array(0, np.int32))], [w])
    b = g.constant("b", np.zeros(4, np.float32)) if bias else -1
    a = g.tensor("a", F32, (1, 8, 8, 3))
    g.op("RELU", [x], [a])
    y = g.tensor("y", F32, (1, 8, 8, 4))
    g.op("CONV_2D", [a, w, b], [y], options={"padding": "SAME", "stride_h": 1, "stride_w": 1})
    z = g.tensor("z", F32, (1, 8, 8, 4))
    g.op("RELU", [y], [z])
    g.output(z)
    return mb.build()


def fp16_dense(g, rng):
    """``x (1, 16) -> FULLY_CONNECTED(DEQUANTIZE(fp16 weights)) -> y (1, 8)``: (w16, y)."""
    x = g.input("x", F32, (1, 16))
    w16 = g.constant("w16", rng.standard_normal((8, 16)).astype(np.float16))
    w = g.tensor("w", F32, (8, 16))
    g.op("DEQUANTIZE", [w16], [w])
    y = g.tensor("y", F32, (1, 8))
    g.op("FULLY_CONNECTED", [x, w, -1], [y])
    return w16, y


def _fp16_probe() -> Model:
    mb, g = _b()
    rng = np.random.default_rng(0)
    _, y = fp16_dense(g, rng)
    k16 = g.constant("k16", rng.standard_normal((1, 8)).astype(np.float16))
    k = g.tensor("k", F32, (1, 8))
    g.op("DEQUANTIZE", [k16], [k])
    kc = g.tensor("kc", F32, (1, 8))
    g.op("CUMSUM", [k, g.constant("ax", np.array(1, np.int32))], [kc])
    z = g.tensor("z", F32, (1, 8))
    g.op("ADD", [y, kc], [z])
    g.output(z)
    return mb.build()


def serialize_control_dependencies(per_subgraph) -> bytes:
    """The converter's ``model_control_dependencies`` encoding (varints, zigzag ints)."""

    def uv(v: int) -> bytes:
        out = bytearray()
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
        return bytes(out)

    def sv(v: int) -> bytes:
        return uv(v * 2 if v >= 0 else -(v + 1) * 2 + 1)

    data = uv(1) + uv(len(per_subgraph))
    for edges in per_subgraph:
        data += uv(len(edges))
        for a, b in edges:
            data += sv(a) + sv(b)
    return data


def control_edge_probe(*, with_metadata: bool) -> Model:
    """0: ADD(x) -> 1: CUMSUM -> 2: ADD; 3: ADD(x) independent. Edge 2 => 3 changes greedy."""
    mb, g = _b()
    s = (1, 8)
    x = g.input("x", F32, s)
    c = g.constant("c", np.ones(s, np.float32))
    t = [g.tensor(f"t{i}", F32, s) for i in range(4)]
    g.op("ADD", [x, c], [t[0]])
    g.op("CUMSUM", [t[0], g.constant("ax", np.array(1, np.int32))], [t[1]])
    g.op("ADD", [t[1], c], [t[2]])
    g.op("ADD", [x, c], [t[3]])
    g.output(t[2], t[3])
    if with_metadata:
        mb.add_metadata("model_control_dependencies", serialize_control_dependencies([[(2, 3)]]))
    return mb.build()
