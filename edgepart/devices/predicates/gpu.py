"""Predicates of the GPU delegates (V2 and the ML Drift accelerator), found by the name ``gpu``.

``gpu_check`` mirrors ``CheckGpuDelegateCompatibility`` (``tflite/tools/versioning/
gpu_compatibility.cc``), which the GPU parsers' ``IsSupported`` call; the context key
``gpu_enhanced_broadcast`` selects its enhanced-broadcast flag (ML Drift) or the classic rules.
"""

from __future__ import annotations

from edgepart.devices.capability import OK, OpView, Support, predicate
from edgepart.devices.predicates.common import opt
from edgepart.ir.dtypes import DType

__all__: list[str] = []

_FLOATS = (DType.FLOAT32, DType.FLOAT16)


def _runtime_inputs(op: OpView) -> int:
    return sum(1 for t in op.inputs if t >= 0 and not op.sg.tensor_is_constant[t])


def _const_inputs(op: OpView) -> int:
    return sum(1 for t in op.inputs if t >= 0 and op.sg.tensor_is_constant[t])


def _io(op: OpView, runtime: int, outputs: int, const: int | None = None) -> str | None:
    if const is not None and _const_inputs(op) != const:
        return (
            f"Expected {const} const input tensor(s), but node has {_const_inputs(op)} "
            "const input(s)."
        )
    if _runtime_inputs(op) != runtime:
        return (
            f"Expected {runtime} runtime input tensor(s), but node has "
            f"{_runtime_inputs(op)} runtime input(s)."
        )
    if len(op.outputs) != outputs:
        return f"Expected {outputs} output tensor(s), but node has {len(op.outputs)} output(s)."
    return None


def _broadcastable(a: tuple[int, ...], b: tuple[int, ...], enhanced: bool) -> bool:
    if not (len(a) > 1 and len(b) > 1 and len(a) != len(b)):
        return True
    lo, sh = (a, b) if len(a) >= len(b) else (b, a)
    if enhanced:
        for x, y in zip(reversed(lo), reversed(sh), strict=False):
            if x != y and x != 1 and y != 1:
                return False
        return True
    if len(lo) == 4 and len(sh) == 3 and lo[0] == 1:
        return True
    if len(lo) == 4 and len(sh) == 2 and lo[0] == 1 and sh[0] == 1 and sh[1] == 1:
        return True
    return len(lo) == 4 and len(sh) == 2 and lo[0] == sh[0] and lo[3] == sh[1]


_ELEMENTWISE_1 = {
    "ABS",
    "CEIL",
    "COS",
    "ELU",
    "EXP",
    "FLOOR",
    "GELU",
    "LOG",
    "LOGICAL_NOT",
    "LOGISTIC",
    "NEG",
    "ROUND",
    "RSQRT",
    "SIGN",
    "SIN",
    "SQRT",
    "SQUARE",
    "TANH",
}
_ELEMENTWISE_2 = {
    "ATAN2",
    "DIV",
    "EQUAL",
    "FLOOR_DIV",
    "FLOOR_MOD",
    "GREATER",
    "GREATER_EQUAL",
    "LOGICAL_AND",
    "LOGICAL_OR",
    "LESS",
    "LESS_EQUAL",
    "MAXIMUM",
    "MINIMUM",
    "NOT_EQUAL",
    "POW",
    "RIGHT_SHIFT",
    "SQUARED_DIFFERENCE",
    "SUB",
}


def _activation_ok(op: OpView, key: str = "fused_activation_function") -> str | None:
    if op.option(key, "NONE") == "SIGN_BIT":
        return "TfLiteFusedActivation.kTfLiteActSignBit"
    return None


def _gpu(op: OpView) -> str | None:
    name = op.name
    enhanced = bool(op.context.get("gpu_enhanced_broadcast", False))
    if name in _ELEMENTWISE_1:
        return _io(op, 1, 1, const=0)
    if name in _ELEMENTWISE_2:
        if _io(op, 2, 1, const=0) and _io(op, 1, 1, const=1):
            return "Op can only handle 1 or 2 operand(s)."
        return _activation_ok(op) if name in ("DIV", "SUB") else None
    if name in ("ADD", "MUL"):
        if len(op.inputs) != 2:
            return f"{name} requires two input tensors."
        a, b = op.shape(op.inputs[0]), op.shape(op.inputs[1])
        if (name == "ADD" or len(a) != len(b)) and not _broadcastable(a, b, enhanced):
            return f"Doesn't support broadcasting - input0: {list(a)}, input1: {list(b)}"
        return _activation_ok(op) if name == "MUL" else None
    if name == "ADD_N":
        return None if len(op.inputs) == 2 else "ADD_N only supports 2 inputs."
    if name in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        err = _io(op, 1, 1)
        if err:
            return err
        if min(int(opt(op, k)) for k in ("filter_height", "filter_width")) <= 0:
            return "Incorrect kernel values"
        if min(int(opt(op, k)) for k in ("stride_h", "stride_w")) <= 0:
            return "Incorrect stride values"
        return _activation_ok(op)
    if name in ("CONV_2D", "TRANSPOSE_CONV"):
        if _runtime_inputs(op) > 2:
            return (
                f"Expected 1 or 2 input tensor(s), but node has {_runtime_inputs(op)} "
                "runtime inputs."
            )
        if len(op.outputs) != 1:
            return "Expected 1 output tensor(s)."
        if min(int(opt(op, "stride_h")), int(opt(op, "stride_w"))) <= 0:
            return "Incorrect stride values"
        if name == "CONV_2D":
            if min(int(opt(op, "dilation_h_factor", 1)), int(opt(op, "dilation_w_factor", 1))) <= 0:
                return "Incorrect dilation values"
            return _activation_ok(op)
        return None
    if name == "DEPTHWISE_CONV_2D":
        x, w = op.shape(op.inputs[0]), op.shape(op.inputs[1])
        y = op.shape(op.outputs[0])
        if len(x) != 4 or len(w) != 4 or len(y) != 4:
            return "input/filter/output must be 4-D"
        if x[0] != y[0]:
            return "input.b != output.b"
        if w[3] != y[3]:
            return "filter.i != output.c"
        if y[3] != x[3] * int(opt(op, "depth_multiplier")):
            return "output.c != input.c * depth_multiplier"
        return _activation_ok(op)
    if name == "FULLY_CONNECTED":
        if opt(op, "weights_format", "DEFAULT") != "DEFAULT":
            return "Unsupported FullyConnected weights format"
        if _runtime_inputs(op) > 2:
            return "FullyConnected doesn't support more than 2 runtime inputs."
        if opt(op, "keep_num_dims", False) and len(op.shape(op.inputs[0])) != len(
            op.shape(op.outputs[0])
        ):
            return (
                "Input and output dimensions different and FullyConnected doesn't support "
                "keep_num_dims."
            )
        return None
    if name in (
        "MEAN",
        "SUM",
        "REDUCE_MAX",
        "REDUCE_MIN",
        "REDUCE_PROD",
        "REDUCE_ANY",
        "REDUCE_ALL",
        "REVERSE_V2",
    ):
        err = _io(op, 1, 1, const=1 if name in ("MEAN", "REVERSE_V2") else None)
        if err:
            return err
        axes = op.inputs[1]
        if not op.sg.tensor_is_constant[axes]:
            return f"{name} is only supported with constant axes."
        if op.dtype(axes) != DType.INT32:
            return f"{name} supports int32 tensor for axes."
        return None
    if name in ("PAD", "PADV2", "MIRROR_PAD"):
        if name == "MIRROR_PAD" and opt(op, "mode", "REFLECT") != "REFLECT":
            return "Only Reflective padding is supported for Mirror Pad operation."
        err = _io(op, 1, 1)
        if err:
            return err
        p = op.shape(op.inputs[1])
        if len(p) != 2 or p[0] not in (3, 4) or p[1] != 2:
            return f"Invalid paddings tensor shape: expected 4x2 or 3x2, got {list(p)}"
        return None
    if name == "SOFTMAX":
        return None if float(opt(op, "beta", 0.0)) == 1.0 else "Softmax.beta != 1 is not supported."
    if name in ("SLICE", "STRIDED_SLICE"):
        if name == "STRIDED_SLICE":
            for mask, words in (
                ("ellipsis_mask", "ellipsis_mask"),
                ("new_axis_mask", "new_axis_mask"),
                ("shrink_axis_mask", "shrink_axis_mask parameter"),
            ):
                if int(opt(op, mask)):
                    return f"Slice does not support {words}."
        if len(op.inputs) < (4 if name == "STRIDED_SLICE" else 3):
            return f"{name} requires {4 if name == 'STRIDED_SLICE' else 3} inputs."
        if len(op.shape(op.inputs[0])) not in (3, 4):
            return f"{name} supports for 3 or 4 dimensional tensors only."
        return None
    if name == "GATHER":
        if _io(op, 2, 1, const=0) and _io(op, 1, 1, const=1):
            return "Op can only handle 1 or 2 operand(s)."
        if len(op.shape(op.inputs[1])) != 1:
            return "Only support 1D indices"
        return None if op.dtype(op.inputs[1]) == DType.INT32 else "Only accept INT32 indices"
    if name == "CAST":
        err = _io(op, 1, 1)
        if err:
            return err
        src, dst = op.dtype(op.inputs[0]), op.dtype(op.outputs[0])
        ok = (
            (src == DType.BOOL and dst in _FLOATS)
            or (src in _FLOATS and dst == DType.BOOL)
            or (src in (DType.FLOAT32, DType.INT32) and dst in (DType.FLOAT32, DType.INT32))
        )
        return (
            None
            if ok
            else f"Not supported Cast case. Input type: {src.name} and output type: {dst.name}"
        )
    if name in ("DEPTH_TO_SPACE", "SPACE_TO_DEPTH"):
        err = _io(op, 1, 1)
        if err:
            return err
        bs = int(opt(op, "block_size"))
        return None if bs > 1 else f"{name} block_size must be > 1."
    if name == "CUMSUM":
        if (
            len(op.inputs) != 2
            or op.dtype(op.inputs[0]) not in _FLOATS
            or op.dtype(op.outputs[0]) != op.dtype(op.inputs[0])
            or op.dtype(op.inputs[1]) != DType.INT32
            or not op.sg.tensor_is_constant[op.inputs[1]]
        ):
            return "Input/output must be float type and indices must be constant int32 type"
        return None
    if name in ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"):
        err = _io(op, 1, 1)
        if err:
            return err
        if (
            name == "RESIZE_BILINEAR"
            and opt(op, "align_corners", False)
            and opt(op, "half_pixel_centers", False)
        ):
            return "If half_pixel_centers is True, align_corners must be False."
        return None
    if name in ("RESHAPE", "QUANTIZE", "TILE", "TRANSPOSE", "HARD_SWISH"):
        return _io(op, 1, 1)
    if name == "TOPK_V2":
        return _io(op, 1, 2)
    if name == "BATCH_MATMUL":
        return (
            None
            if len(op.inputs) == 2 and len(op.outputs) == 1
            else "Expected 2 inputs and 1 output"
        )
    if name in ("SELECT", "SELECT_V2"):
        if len(op.inputs) != 3 or len(op.outputs) != 1:
            return "Expected 3 inputs and 1 output"
        if op.dtype(op.inputs[0]) not in (DType.BOOL, *_FLOATS):
            return "Cond must be float or bool type"
        out_shape = op.shape(op.outputs[0])
        for slot in (1, 2):
            shp = op.shape(op.inputs[slot])
            if shp and shp != out_shape and (len(shp) > 1 or shp[0] > 1):
                return (
                    "if, else tensors must be either be same the shape as output or constant, "
                    "scalar."
                )
        return None
    if name == "DEQUANTIZE":
        return "Unsupported dequantization type." if op.dtype(op.inputs[0]) == DType.INT16 else None
    return None


@predicate("gpu_check")
def gpu_check(op: OpView) -> Support:
    """``CheckGpuDelegateCompatibility`` for the op (per-op operand and option rules)."""
    err = _gpu(op)
    return OK if err is None else Support(False, err)


@predicate("gpu_logical_types")
def gpu_logical_types(op: OpView) -> Support:
    """GPU tensor types of ``GetOpsToReplace``: non-constant tensors float (8-bit with quant)."""
    quant = bool(op.context.get("gpu_allow_quant", True))
    ins = {DType.FLOAT32, DType.FLOAT16}
    outs = {DType.FLOAT32, DType.FLOAT16}
    if quant:
        ins |= {DType.INT8, DType.UINT8}
        outs |= {DType.INT8, DType.UINT8}
    name = op.name
    if name in ("GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL", "EQUAL", "NOT_EQUAL"):
        outs.add(DType.BOOL)
    if name == "CAST":
        ins |= {DType.BOOL, DType.INT32}
        outs |= {DType.INT32, DType.BOOL}
    if name in ("ONE_HOT", "GATHER"):
        ins.add(DType.INT32)
    if name in ("SELECT", "SELECT_V2"):
        ins.add(DType.BOOL)
    if name == "LOGICAL_AND":
        ins.add(DType.BOOL)
        outs.add(DType.BOOL)
    for group, allowed in ((op.inputs, ins), (op.outputs, outs)):
        for t in group:
            if t < 0:
                continue
            if len(op.shape(t)) >= 5:
                return Support(False, "OP is supported, but tensor type/shape isn't compatible.")
            if not op.sg.tensor_is_constant[t] and op.dtype(t) not in allowed:
                return Support(False, "OP is supported, but tensor type/shape isn't compatible.")
    return OK
