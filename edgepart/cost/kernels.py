"""Kernels: the units an executor really runs, found with its fusion rules, with their features.

Latency predictors (:mod:`edgepart.cost.predictor`) work on *kernels*, not ops (nn-Meter,
MobiSys'21): a kernel is what the executor launches as one piece of work.

XNNPACK (LiteRT's default delegate). The ops it takes (:func:`edgepart.claim.delegation.claim`)
form DELEGATE nodes; inside each, XNNPACK's subgraph optimizer (``xnn_subgraph_fusion`` and
``xnn_subgraph_optimize_common_subgraphs`` in ``src/subgraph.c``) rewrites the graph before it
runs it. The rules applied here, each checked by timing on ai-edge-litert 2.3.0 (a fused pair
costs its producer alone):

- a clamp (``RELU``, ``RELU6``, ``RELU_N1_TO_1``, ``RELU_0_TO_1``, and ``MINIMUM``/``MAXIMUM``
  with a constant scalar, which XNNPACK turns into a clamp) is merged into a producer that has
  an output clamp: convolution, depthwise convolution, deconvolution, fully connected, average
  and max pooling, or another clamp; only when the producer's output has that one consumer and
  is not a partition output. Binary ops (``ADD`` ...) take no clamp in this XNNPACK: a
  separate ``RELU`` after an ``ADD`` stays a kernel (a fused activation *option* of the ``ADD``
  itself is always part of the ``ADD``'s kernel);
- a ``PAD`` of zeros over the spatial dimensions of a 4-D tensor is merged into a following
  convolution or depthwise convolution with ``VALID`` padding (the delegate flags ``SAME``
  convolutions with TensorFlow's padding, which blocks the merge);
- copy-like ops (``RESHAPE``, ``SQUEEZE``, ``EXPAND_DIMS``) cost nothing when either side is a
  value internal to the partition (XNNPACK runs them in place); between two partition
  boundary tensors they are a copy;
- ``DEQUANTIZE``/``DENSIFY`` of constants run once at preparation (weights unpacked).

Builtin kernels: ``DEQUANTIZE``/``DENSIFY`` of constants run once too, except a ``DEQUANTIZE``
of a ``DENSIFY``'s output, which converts on every invocation (:func:`_dequantized_each_run`).

Every delegate partition costs one delegate node per invocation (:mod:`edgepart.cost.
delegate_nodes`). Builtin kernels run one op per node. Accelerator delegates (GPU, NNAPI, ...)
merge element-wise ops with one variable input into the producing convolution or fully
connected op, as the GPU delegate's graph transformations do; their kernels are fitted as a
class per delegate (:mod:`edgepart.profiling.phone_fit`).

Kernel types are ``<executor prefix>.<class>`` (``xnn.conv``, ``tfl.binary``, ``gpu.dwconv``),
with ``_q8`` for 8-bit kernels, ``_hy`` for dynamic-range ones (8-bit weights on float
activations) and ``_f16`` for kernels that read float16 (the builtin ``DEQUANTIZE`` of a sparse
fp16 weight, which runs every invocation: :func:`_dequantized_each_run`): each runs other code
at other speeds. Not so the classes that only move data
(:data:`DTYPE_BLIND`): their 8-bit kernels share the float type, the dtype being a feature. A
builtin kernel that runs after one of XNNPACK's dynamically quantized kernels, in the
execution plan's order, gets ``@qd8``
(``tfl.dwconv_hy@qd8``): on x86 such kernels run 1.6 to 2.9 times slower
(:func:`after_dynamic_quantization`).

Features. Every kernel gets the same feature vector (:data:`FEATURES`), computed once per
distinct op signature: work (MACs, bytes) from :func:`edgepart.cost.work.op_work`, geometry
(output height/width, channels, kernel size, strides) from the op's shapes and options, and the
model's per-invocation footprint ``ctx_bytes`` (weights plus activations; recorded, though the
fitted trees do not split on it: trees that did predicted unseen models worse). Where a kernel's
time follows a count the executor loops over rather than its bytes, that count is its work:
XNNPACK pads one row per call, so an ``xnn.pad``'s MACs are its rows (a one-channel image
padded along its width, 47,644 rows, took 612 us; along its height, 176 rows, 9.8); a
concatenation or split copies one run per piece per row before its axis, builtin and XNNPACK
alike, so its MACs are those copies (17 inputs of 1 to 3 channels on a 192 x 96 image, 313,344
copies of 2.9 MB, took 1.6 ms; the same bytes joined along the height, 112 us); a slice's are
its contiguous runs, and those of LiteRT's builtin ``STRIDED_SLICE``, which moves one element
at a time, its elements.

Control flow: ``IF`` costs its dearer branch, ``WHILE`` its condition and body once per
iteration (the trip count is read from the loop when it is a constant bound, else taken as
counted in a run when the caller gives it, ``trips``, else one iteration is assumed; the
kernel is flagged either way), ``CALL_ONCE`` nothing after the first invocation. A
recurrent op (``LSTM`` ...) is one ``rnn`` kernel per time step (its matrix products, gates
and state updates; features of the step's fully connected product). The audio
front-end ops are a class each (:data:`AUDIO_CLASSES`): ``fft`` (``RFFT2D``), and the custom
ops LiteRT's builtin resolver ships, ``spectrogram`` (``AudioSpectrogram``: a windowed real
FFT per frame) and ``mfcc`` (``Mfcc``: a mel filterbank and a DCT per frame), each with an
``opcode`` of its own. They shared one class until one model proved unable to price all
three: calibrations drew ``RFFT2D`` for three in five of its kernels, and a predictor priced a
30-frame spectrogram of 256 samples 22% over its time.

Vectorized: a 100,000-op graph decomposes in about a second (the claim of the ops included).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgepart.claim.delegation import claim
from edgepart.cost.rules import Ctx
from edgepart.cost.signature import OpSig, op_signatures
from edgepart.cost.work import OpWork, op_work
from edgepart.ir import analysis
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model, Subgraph
from edgepart.schema import opnames

__all__ = [
    "AFTER_QD8",
    "AUDIO_CLASSES",
    "DTYPE_BLIND",
    "EXECUTORS",
    "FEATURES",
    "KERNEL_CLASSES",
    "SPLIT_FROM",
    "WORK_FEATURES",
    "Kernels",
    "after_dynamic_quantization",
    "class_of_op",
    "decompose",
    "uncounted_loops",
]

EXECUTORS = ("xnnpack", "builtin", "gpu", "nnapi", "hexagon", "npu", "edgetpu")

FEATURES: tuple[str, ...] = (
    "n_out",  # elements of output 0
    "in_bytes",  # variable (activation) bytes read
    "w_bytes",  # constant (weight) bytes read
    "out_bytes",  # bytes written
    "macs",  # multiply-accumulates
    "opcode",  # builtin code of the kernel's main op (custom: -1, LiteRT's audio ops -2, -3)
    "dtype",  # compute dtype (DType code; 8-bit weights with float input: INT8)
    "h",  # output height (4-D NHWC), else 1
    "w",  # output width
    "cin",  # input channels (last dimension of input 0)
    "cout",  # output channels (last dimension of output 0)
    "kh",  # kernel height
    "kw",  # kernel width
    "sh",  # stride height
    "sw",  # stride width
    "dil",  # largest dilation
    "rows",  # independent rows: output pixels (N*H*W), FC/matmul rows, reduce outer size,
    # a pad's rows through its last padded dimension, a slice's contiguous runs
    "red",  # reduction length: MACs per output, reduced elements per output, concat axis run
    "n_in",  # variable inputs (concat: inputs)
    "bcast",  # binary ops: 0 equal shapes, 1 a scalar operand, 2 broadcast, 3 one value a row
    "steps",  # repeats folded into one kernel (recurrent time steps), else 1
    "ctx_bytes",  # per-invocation footprint of the whole (sub)graph: weights + activations
)
F = {name: k for k, name in enumerate(FEATURES)}

# Kernel classes, by op name (the executor prefixes them: "xnn.conv", "tfl.conv", "gpu.conv").
_CLASS_OPS: dict[str, tuple[str, ...]] = {
    "conv": ("CONV_2D", "CONV_3D"),
    "dwconv": ("DEPTHWISE_CONV_2D",),
    "tconv": ("TRANSPOSE_CONV", "CONV_3D_TRANSPOSE", "Convolution2DTransposeBias"),
    "fc": ("FULLY_CONNECTED",),
    "bmm": ("BATCH_MATMUL",),
    "binary": (
        "ADD",
        "SUB",
        "MUL",
        "DIV",
        "MAXIMUM",
        "MINIMUM",
        "SQUARED_DIFFERENCE",
        "PRELU",
        "POW",
        "FLOOR_DIV",
        "FLOOR_MOD",
        "EQUAL",
        "NOT_EQUAL",
        "LESS",
        "LESS_EQUAL",
        "GREATER",
        "GREATER_EQUAL",
        "LOGICAL_AND",
        "LOGICAL_OR",
        "SELECT",
        "SELECT_V2",
        "ADD_N",
        "ATAN2",
    ),
    "unary": (
        "RELU",
        "RELU6",
        "RELU_N1_TO_1",
        "RELU_0_TO_1",
        "LEAKY_RELU",
        "NEG",
        "ABS",
        "SQUARE",
        "CEIL",
        "FLOOR",
        "ROUND",
        "SIGN",
        "QUANTIZE",
        "DEQUANTIZE",
        "CAST",
        "LOGICAL_NOT",
        "REAL",
        "IMAG",
        "ZEROS_LIKE",
        "ONES_LIKE",
    ),
    # element-wise functions that evaluate a polynomial or a table per element
    "math": (
        "LOGISTIC",
        "TANH",
        "HARD_SWISH",
        "ELU",
        "GELU",
        "SQRT",
        "RSQRT",
        "EXP",
        "LOG",
        "SIN",
        "COS",
    ),
    # the magnitude of complex values (an RFFT2D's spectrum): a square root of a sum of squares
    # per element through std::abs, 3.6 ns per element on builtin kernels against 0.1 for
    # taking the real part (43 x 1025 values, an Intel Xeon, 2026-12-06), and a cost no other
    # element-wise function shares (it was one of the "math" class until then)
    "magnitude": ("COMPLEX_ABS",),
    # the front ends of audio models: fast Fourier transforms, and the custom ops LiteRT's
    # builtin resolver ships: AudioSpectrogram (a windowed real FFT per frame, after building
    # the window and the FFT's tables again on every call) and Mfcc (a mel filterbank and a
    # DCT per frame, both rebuilt per call): three kernels of different costs per transform
    "fft": ("RFFT2D",),
    "spectrogram": ("AudioSpectrogram",),
    "mfcc": ("Mfcc",),
    "pool": ("MAX_POOL_2D", "AVERAGE_POOL_2D", "L2_POOL_2D"),
    "reduce": (
        "MEAN",
        "SUM",
        "REDUCE_MAX",
        "REDUCE_MIN",
        "REDUCE_PROD",
        "REDUCE_ANY",
        "REDUCE_ALL",
        "ARG_MAX",
        "ARG_MIN",
        "L2_NORMALIZATION",
        "CUMSUM",
    ),
    "softmax": ("SOFTMAX", "LOG_SOFTMAX"),
    "concat": ("CONCATENATION", "PACK"),
    "split": ("SPLIT", "SPLIT_V", "UNPACK"),
    "copy": ("RESHAPE", "SQUEEZE", "EXPAND_DIMS", "READ_VARIABLE", "ASSIGN_VARIABLE", "BITCAST"),
    "pad": ("PAD", "PADV2", "MIRROR_PAD"),
    "slice": ("SLICE", "STRIDED_SLICE"),
    "transpose": ("TRANSPOSE", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "REVERSE_V2"),
    "resize": ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"),
    "gather": ("GATHER", "GATHER_ND", "EMBEDDING_LOOKUP", "TILE", "BROADCAST_TO", "ONE_HOT"),
    "shape": ("SHAPE", "RANK", "FILL", "RANGE", "BROADCAST_ARGS"),
}
KERNEL_CLASSES: tuple[str, ...] = (*_CLASS_OPS, "rnn", "other")
# the audio front ends' classes (transforms per frame, the same features)
AUDIO_CLASSES = frozenset({"fft", "spectrogram", "mfcc"})
# Classes split out of another: a predictor from before the split has no model for them and
# prices them by the class they came from, as it did then.
SPLIT_FROM = {"spectrogram": "fft", "mfcc": "fft", "magnitude": "math"}
_OP_CLASS = {op: cls for cls, ops in _CLASS_OPS.items() for op in ops}

_RECURRENT = frozenset(
    {"LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM", "RNN",
     "UNIDIRECTIONAL_SEQUENCE_RNN", "BIDIRECTIONAL_SEQUENCE_RNN", "SVDF"}
)  # fmt: skip
_FREE = frozenset({"VAR_HANDLE", "CALL_ONCE"})
_CALLING = frozenset(opnames.builtin_name(c) for c in opnames.CALLING_BUILTINS) - {"CALL_ONCE"}
_CLAMPS = frozenset({"RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1"})
_CLAMP_PRODUCERS = frozenset(
    {"CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "Convolution2DTransposeBias",
     "FULLY_CONNECTED", "AVERAGE_POOL_2D", "MAX_POOL_2D", *_CLAMPS}
)  # fmt: skip
_COPIES = frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS"})
# the custom ops LiteRT's builtin resolver ships that have a kernel class: a code of their own
_CUSTOM_CODES = {"AudioSpectrogram": -2.0, "Mfcc": -3.0}
_ACCEL_FUSE_INTO = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV"})
_ACCEL_FUSABLE = frozenset(
    {"ADD", "SUB", "MUL", "RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC", "TANH", "HARD_SWISH",
     "PRELU", "LEAKY_RELU"}
)  # fmt: skip

PREFIX = {"xnnpack": "xnn", "builtin": "tfl"}
# the suffix of a builtin kernel type that runs after an XNNPACK dynamically quantized kernel
# (:func:`after_dynamic_quantization`)
AFTER_QD8 = "@qd8"
_QUANT_DTYPES = frozenset({int(DType.INT8), int(DType.UINT8)})
# Classes that move data without arithmetic on it: the same code runs for every element type
# (LiteRT's builtin kernels are templates over it, XNNPACK's copy kernels are chosen by its
# size), so their 8-bit kernels share the float type and the dtype feature tells them apart.
# Measured on ai-edge-litert 2.3.0 (builtin, 1 thread): a STRIDED_SLICE costs 3.5 to 3.7 ns
# per element in int8 and in float32 alike, a SLICE 0.11 to 0.15 ns. A type of their own split
# the few 8-bit samples off: ``tfl.slice_q8`` had 39 calibration chains, and predicted the six
# slices of a wake-word model at 0.4x one calibration and 1.3x another. Concatenation is not
# one of them: 8-bit inputs of other scales than the output are requantized.
DTYPE_BLIND = frozenset({"copy", "slice", "split", "transpose", "pad", "gather"})
# classes that copy a run per piece (input of a concatenation, output of a split) per row
_PIECEWISE = frozenset({"concat", "split"})


def class_of_op(name: str) -> str:
    """The kernel class of an op name (``"other"`` for ops without a class)."""
    return _OP_CLASS.get(name, "other")


@dataclass
class Kernels:
    """The kernels of one subgraph on one executor configuration.

    Attributes
    ----------
    types
        Per kernel, its type: ``"<executor prefix>.<class>"`` (``"xnn.conv"``, ``"tfl.binary"``).
    features
        ``[kernels, len(FEATURES)]`` float64.
    ops
        Per kernel, the ops it covers (its main op first).
    op_kernel
        Per op, the kernel it belongs to; -1 for ops that cost nothing per invocation.
    repeat
        Per kernel, how many times it runs per invocation (loop bodies).
    partitions
        Delegate partitions (DELEGATE nodes) per delegate name.
    calls
        Kernels of called subgraphs: ``(kernel index, Kernels, multiplier)`` (control flow).
    notes
        Approximations made (unknown loop trip counts, ...).
    """

    types: list[str]
    features: np.ndarray
    ops: list[tuple[int, ...]]
    op_kernel: np.ndarray
    repeat: np.ndarray
    partitions: dict[str, int] = field(default_factory=dict)
    calls: list[tuple[int, Kernels, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    executor: str = "xnnpack"
    op_delegate: list[str | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.types)

    def type_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.types:
            out[t] = out.get(t, 0) + 1
        return dict(sorted(out.items()))


def decompose(
    model: Model,
    executor: str = "xnnpack",
    *,
    subgraph: int = 0,
    sg: Subgraph | None = None,
    work: OpWork | None = None,
    sigs: Sequence[OpSig] | None = None,
    delegated: Sequence[str | None] | None = None,
    partitions: dict[str, int] | None = None,
    ctx_bytes: float | None = None,
    context: Mapping[str, Any] | None = None,
    trips: Mapping[int, float] | None = None,
    _stack: frozenset[int] = frozenset(),
) -> Kernels:
    """The kernels of ``model.subgraphs[subgraph]`` on ``executor`` (see the module docstring).

    Parameters
    ----------
    model
        The model (control-flow ops look into its other subgraphs).
    executor
        ``xnnpack`` (LiteRT's default: XNNPACK takes what it supports, builtin kernels the
        rest), ``builtin`` (builtin kernels only), or an accelerator delegate name (``gpu``,
        ``nnapi`` ...; the delegate takes what its delegate file accepts, XNNPACK the rest).
    sg
        The subgraph to use instead of ``model.subgraphs[subgraph]`` (e.g. with resolved
        shapes); it must have the same ops.
    work, sigs
        Precomputed :func:`~edgepart.cost.work.op_work` and op signatures of ``sg``.
    delegated
        Per op, the delegate that runs it (None: builtin kernel), instead of predicting it
        with :func:`edgepart.claim.delegation.claim`.
    partitions
        Delegate partitions per delegate, with ``delegated``.
    ctx_bytes
        The footprint feature to use (default: this subgraph's weights plus activations).
    context
        Delegate context for claiming (``android_api_level`` ...; a device profile's
        ``context``).
    trips
        Iterations of this subgraph's ``WHILE`` ops (op index to count) as counted in a run
        (:func:`edgepart.profiling.shape_resolution.resolve`), for loops whose count the
        model does not fix (:func:`uncounted_loops`); other loops: a constant bound in the
        condition, else one iteration.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose one of {list(EXECUTORS)}")
    if sg is None:
        sg = model.subgraphs[subgraph]
    n = sg.num_ops
    if work is None:
        work = op_work(sg, model)
    if sigs is None:
        sigs = op_signatures(sg)
    exec_rank: np.ndarray | None = None
    if delegated is None:
        delegated, partitions, exec_rank = _claimed(model, sg, subgraph, executor, context)
    partitions = dict(partitions or {})
    if ctx_bytes is None:
        ctx_bytes = footprint(sg, work)
    base = _base_features(sg, sigs, work, ctx_bytes)
    owner: list[str | None] = list(delegated)
    # per op: its name, through the distinct op codes (custom ops by their custom code)
    code_names = [c.name for c in sg.opcodes]
    opc = sg.op_opcode.astype(np.int64)
    names_arr = np.array(code_names, dtype=object)[opc] if n else np.zeros(0, dtype=object)
    own = np.array(owner, dtype=object)
    folded = np.asarray(work.folded, dtype=bool)
    each_run = folded & _dequantized_each_run(sg, names_arr, own)
    folded &= ~each_run
    if each_run.any():  # the work rules count folded ops as free: what the conversion moves
        e = np.flatnonzero(each_run)
        nbytes = sg.tensor_nbytes
        base[e, F["in_bytes"]] = [nbytes[sg.op_inputs.row(i)[0]] for i in e.tolist()]
        base[e, F["out_bytes"]] = [nbytes[sg.op_outputs.row(i)[0]] for i in e.tolist()]
    free = folded | np.isin(names_arr, list(_FREE))
    group = np.arange(n)  # the op whose kernel each op joins
    xnn = own == "xnnpack"
    accel = np.array([o is not None and o != "xnnpack" for o in owner], dtype=bool)
    if xnn.any():
        _xnnpack_rules(sg, names_arr, xnn, free, group, folded)
    if accel.any():
        _accel_rules(sg, names_arr, owner, accel, free, group)
    head = group.copy()
    while True:  # pointer jumping to each op's root
        nxt = head[head]
        if np.array_equal(nxt, head):
            break
        head = nxt
    order = analysis.topological_order(sg)
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    live = np.flatnonzero(~free)
    # kernels in the order their first op runs; members in execution order, the head first
    live = live[np.argsort(pos[live], kind="stable")]
    heads_live = head[live]
    uniq, first_idx, inv = np.unique(heads_live, return_index=True, return_inverse=True)
    korder = np.argsort(first_idx, kind="stable")
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[korder] = np.arange(len(uniq))
    kid_live = rank[np.asarray(inv).reshape(-1)]
    khead = uniq[korder]
    nk = len(khead)
    op_kernel = np.full(n, -1, dtype=np.int64)
    op_kernel[live] = kid_live
    feats = base[khead].copy()
    counts = np.bincount(kid_live, minlength=nk)
    kops: list[tuple[int, ...]] = [(int(h),) for h in khead.tolist()]
    for k in np.flatnonzero(counts > 1).tolist():
        members = live[kid_live == k].tolist()  # in execution order
        h = int(khead[k])
        kops[k] = (h, *[o for o in members if o != h])
        if members[0] != h:  # a producer merged into it ran first (a PAD before a conv)
            feats[k, F["in_bytes"]] = base[members[0], F["in_bytes"]]
        if members[-1] != h:  # the kernel writes the last member's output
            feats[k, F["out_bytes"]] = base[members[-1], F["out_bytes"]]
    # types: prefix by owner, class by op name, suffix by dtype (8-bit, or 8-bit weights on
    # float activations)
    hnames = names_arr[khead] if nk else np.zeros(0, dtype=object)
    howner = own[khead] if nk else np.zeros(0, dtype=object)
    kdtype = feats[:, F["dtype"]].astype(np.int64)
    quant = np.isin(kdtype, list(_QUANT_DTYPES))
    fin = _float_inputs(sg, khead, hnames) if quant.any() else np.zeros(nk, dtype=bool)
    variant = np.where(kdtype == int(DType.FLOAT16), 3, quant * (1 + fin))
    type_cache: dict[tuple[object, object, int], str] = {}
    types: list[str] = []
    for nm, ow, q in zip(hnames.tolist(), howner.tolist(), variant.tolist(), strict=True):
        key = (nm, ow, q)
        t = type_cache.get(key)
        if t is None:
            cls = class_of_op(str(nm))
            if nm in _RECURRENT:
                cls = "rnn"
            elif nm in _CALLING:
                cls = "other"
            suffix = "" if cls in DTYPE_BLIND else ("", "_q8", "_hy", "_f16")[q]
            t = type_cache[key] = f"{_prefix(ow)}.{cls}{suffix}"
        types.append(t)
    # pads work a row at a time, at a cost per row: their work is their rows. XNNPACK's (the
    # rows of _geometry) a call each, 13 to 17 ns on x86, one value or hundreds; the builtin
    # kernel's fewer and longer (its mirrored pad works otherwise)
    for k, t in enumerate(types):
        if t == "xnn.pad":
            feats[k, F["macs"]] = feats[k, F["rows"]]
        elif t == "tfl.pad" and hnames[k] in ("PAD", "PADV2"):
            feats[k, F["macs"]] = _builtin_pad_rows(sg, int(khead[k]))
        elif t.partition(".")[0] in ("xnn", "tfl") and _class_of_type(t) in _PIECEWISE:
            # a concatenation or split copies one run per piece per row before its axis:
            # a call each, about 5 ns on x86 (builtin and XNNPACK alike), whatever the bytes
            feats[k, F["macs"]] = feats[k, F["rows"]] * feats[k, F["n_in"]]
        elif t in ("xnn.slice", "tfl.slice"):
            # a slice copies a contiguous run (the rows of _geometry) per call, 2 to 4 ns each;
            # LiteRT's builtin STRIDED_SLICE moves one element at a time, 8.2 to 8.5 ns each
            # whatever the runs ([1,1000,64] -> [1,500,64]: 267 us, SLICE 9.1 us)
            strided = t == "tfl.slice" and hnames[k] == "STRIDED_SLICE"
            feats[k, F["macs"]] = feats[k, F["n_out"] if strided else F["rows"]]
    if nk and any(t.startswith("xnn.") and t.endswith("_hy") for t in types):
        if exec_rank is None and executor != "builtin":
            # a given delegation (calibration reads LiteRT's): the predicted plan's order when
            # the prediction agrees with it, as for a model predicted without one
            predicted, _, plan_rank = _claimed(model, sg, subgraph, executor, context)
            exec_rank = plan_rank if list(predicted) == list(delegated) else None
        when = exec_rank[khead] if exec_rank is not None else pos[khead]
        types = after_dynamic_quantization(types, when)
    repeat = np.ones(nk)
    calls: list[tuple[int, Kernels, float]] = []
    notes: list[str] = []
    special = np.flatnonzero(np.isin(hnames, list(_RECURRENT | _CALLING))) if nk else np.zeros(0)
    for k in special.astype(np.int64).tolist():
        h, name = int(khead[k]), str(hnames[k])
        if name in _RECURRENT:
            # one kernel per time step: its matrix products, gates and state updates (the
            # "rnn" class, calibrated on whole recurrent ops)
            feats[k] = _recurrent_as_fc(feats[k])
            repeat[k] = float(feats[k, F["steps"]])
        else:
            counted = (trips or {}).get(h)
            sub, mult, note = _control_flow(
                model, sg, h, name, executor, ctx_bytes, _stack, counted
            )
            for kk, mm in sub:
                calls.append((k, kk, mm * mult))
            if note:
                notes.append(note)
    for k in np.flatnonzero(hnames == "FULLY_CONNECTED").tolist() if nk else []:
        w = [int(t) for t in sg.op_inputs.row(int(khead[k]))[1:2]]
        if w and w[0] >= 0 and sg.tensor_sparsity[w[0]] is not None:
            notes.append(
                f"op {int(khead[k])} (FULLY_CONNECTED): sparse weights, priced as dense: no "
                "sparse kernel is calibrated (LiteRT's sparse kernel took 0.3 to 1.6 times the "
                "dense one's time, by density and size: docs/latency_predictors.md)"
            )
    return Kernels(
        types=types,
        features=feats if nk else np.zeros((0, len(FEATURES))),
        ops=kops,
        op_kernel=op_kernel,
        repeat=repeat,
        partitions=partitions,
        calls=calls,
        notes=notes,
        executor=executor,
        op_delegate=owner,
    )


def _dequantized_each_run(sg: Subgraph, names: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Per op: a ``DEQUANTIZE`` that LiteRT's builtin kernel runs on every invocation although
    its value never changes: that of a ``DENSIFY``'s output (a sparse fp16 weight). The kernel
    keeps its result only when its input is a constant of the model (``IsConstantTensor``,
    read-only memory); a ``DENSIFY`` writes its dense weight once, into arena memory, so the
    ``DEQUANTIZE`` after it converts it again each time (2.6 to 3.1 ns per element on this
    host: the scalar fp16 loop). XNNPACK unpacks both once, so only ops it does not take."""
    out = np.zeros(len(names), dtype=bool)
    unclaimed = np.array([o is None for o in owner.tolist()], dtype=bool)
    cand = np.flatnonzero((names == "DEQUANTIZE") & unclaimed)
    for i in cand.tolist():
        ins = sg.op_inputs.row(i)
        if len(ins) and ins[0] >= 0 and not sg.tensor_is_constant[ins[0]]:
            out[i] = True
    return out


def _float_inputs(sg: Subgraph, heads: np.ndarray, names: np.ndarray) -> np.ndarray:
    """Per head op: whether its data input is floating point (hybrid if its weights are
    8-bit); ``TRANSPOSE_CONV``'s data input is its third."""
    ctx = Ctx.of(sg)
    t = ctx.inp(heads, 0)
    tc = names == "TRANSPOSE_CONV"
    if tc.any():
        t[tc] = ctx.inp(heads[tc], 2)
    dt = ctx.dtype_of(t)
    out: np.ndarray = np.isin(dt, [int(DType.FLOAT32), int(DType.FLOAT16)])
    return out


def _float_input(sg: Subgraph, op: int) -> bool:
    """Whether the op's first input is floating point (a hybrid op if its weights are 8-bit)."""
    ins = sg.op_inputs.row(op)
    t = int(ins[2]) if sg.op_name(op) == "TRANSPOSE_CONV" and len(ins) > 2 else int(ins[0])
    return t >= 0 and int(sg.tensor_dtype[t]) in (int(DType.FLOAT32), int(DType.FLOAT16))


def _prefix(owner: str | None) -> str:
    if owner is None:
        return "tfl"
    return PREFIX.get(owner, owner)


def footprint(sg: Subgraph, work: OpWork) -> float:
    """Bytes one invocation touches: every weight once plus every activation tensor once."""
    ctx_w = float(work.weight_read.sum())
    t = sg.tensor_nbytes.astype(np.float64)
    act = ~sg.tensor_is_constant
    return ctx_w + float(t[act].sum())


def after_dynamic_quantization(types: Sequence[str], when: np.ndarray) -> list[str]:
    """Kernel types with :data:`AFTER_QD8` added to the builtin kernels that run while the
    last XNNPACK kernel to run was a dynamically quantized one (``xnn.*_hy``).

    Measured on x86 (ai-edge-litert 2.3.0, docs/latency_predictors.md): after XNNPACK's
    dynamically quantized convolution or fully connected kernel, builtin kernels run 1.6 to 2.9
    times slower (a hybrid depthwise convolution, ``L2_NORMALIZATION``, ``CUMSUM``), one after
    another, until another XNNPACK kernel runs; across invocations too (the last kernel of
    one invocation precedes the first of the next). ``when`` orders the kernels as they run.
    A predictor without a model for such a type uses the plain type.
    """
    out = list(types)
    order = np.argsort(np.asarray(when), kind="stable").tolist()

    def walk(state: bool, mark: bool) -> bool:
        for k in order:
            t = types[k]
            if t.startswith("xnn."):
                state = t.endswith("_hy")
            elif state and mark and t.startswith("tfl."):
                out[k] = t + AFTER_QD8
        return state

    walk(walk(False, False), True)  # the first pass finds the state the invocation starts in
    return out


def _claimed(
    model: Model,
    sg: Subgraph,
    subgraph: int,
    executor: str,
    context: Mapping[str, Any] | None = None,
) -> tuple[list[str | None], dict[str, int], np.ndarray | None]:
    """Per op its owner, partitions per delegate, and per op its place in the execution plan
    (a delegate node runs its ops in their order, where the node stands)."""
    if executor == "builtin":
        return [None] * sg.num_ops, {}, None
    key = (executor, subgraph, tuple(sorted((context or {}).items())))
    per_model = _CLAIMS.setdefault(model, {})
    hit = per_model.get(key)
    if hit is not None:
        return list(hit[0]), dict(hit[1]), hit[2]
    delegates = () if executor == "xnnpack" else (executor,)
    res = claim(model, delegates, subgraph=subgraph, context=context)
    parts: dict[str, int] = {}
    for p in res.partitions():
        parts[p.delegate] = parts.get(p.delegate, 0) + 1
    rank = np.zeros(sg.num_ops, dtype=np.int64)
    step = 0
    for node in res.plan_nodes:
        part = res.delegate_nodes.get(node)
        for o in sorted(part.ops) if part is not None else (node,):
            rank[o] = step
            step += 1
    per_model[key] = (list(res.owner), dict(parts), rank)
    return list(res.owner), parts, rank


# claims per model (a model is costed on several processors and by several cost models)
_CLAIMS: weakref.WeakKeyDictionary[
    Model, dict[Any, tuple[list[str | None], dict[str, int], np.ndarray]]
] = weakref.WeakKeyDictionary()


def _root(group: np.ndarray, i: int) -> int:
    while group[i] != i:
        i = int(group[i])
    return i


def _xnnpack_rules(
    sg: Subgraph,
    names: np.ndarray,
    xnn: np.ndarray,
    free: np.ndarray,
    group: np.ndarray,
    folded: np.ndarray,
) -> None:
    """Apply XNNPACK's fusion and elision rules (module docstring) to its ops (vectorized;
    only the few PAD candidates are checked one by one)."""
    ctx = Ctx.of(sg)
    cons = analysis.consumers(sg)
    ncons = cons.lengths()
    producer = _producers(sg)
    nt = sg.num_tensors
    is_out = np.zeros(nt, dtype=bool)
    is_out[sg.outputs.astype(np.int64)] = True
    const = sg.tensor_is_constant
    # a value produced and read by XNNPACK ops only (not a partition boundary)
    cons_ops = cons.idx.astype(np.int64)
    cons_t = cons.row_ids()
    non_xnn_readers = np.bincount(cons_t, weights=~xnn[cons_ops], minlength=nt) if len(
        cons_t
    ) else np.zeros(nt)  # fmt: skip
    prod_ok = (producer >= 0) & xnn[np.maximum(producer, 0)] & ~folded[np.maximum(producer, 0)]
    internal = prod_ok & ~is_out & ~const & (ncons > 0) & (non_xnn_readers == 0)
    cand = xnn & ~free
    ops = np.arange(sg.num_ops)
    # copies run in place when either side is internal
    cp = np.flatnonzero(cand & np.isin(names, list(_COPIES)))
    if len(cp):
        x, y = ctx.inp(cp, 0), ctx.out(cp, 0)
        ok = ((x >= 0) & internal[np.maximum(x, 0)]) | ((y >= 0) & internal[np.maximum(y, 0)])
        free[cp[ok]] = True
    # clamps (and MINIMUM/MAXIMUM with a constant scalar) join a producer with an output clamp
    cl = cand & np.isin(names, list(_CLAMPS))
    mm = np.flatnonzero(cand & np.isin(names, ["MINIMUM", "MAXIMUM"]))
    x_of = np.full(sg.num_ops, -1, dtype=np.int64)
    if cl.any():
        x_of[cl] = ctx.inp(ops[cl], 0)
    if len(mm):
        a, b = ctx.inp(mm, 0), ctx.inp(mm, 1)
        sa = (a >= 0) & const[np.maximum(a, 0)] & (sg.tensor_numel[np.maximum(a, 0)] == 1)
        sb = (b >= 0) & const[np.maximum(b, 0)] & (sg.tensor_numel[np.maximum(b, 0)] == 1)
        x_of[mm[sb]] = a[sb]
        x_of[mm[sa & ~sb]] = b[sa & ~sb]
    ci = np.flatnonzero(x_of >= 0)
    if len(ci):
        x = x_of[ci]
        p = producer[x]
        pp = np.maximum(p, 0)
        ok = (
            (p >= 0)
            & xnn[pp]
            & ~free[pp]
            & np.isin(names[pp], list(_CLAMP_PRODUCERS))
            & (ncons[x] == 1)
            & ~is_out[x]
        )
        group[ci[ok]] = p[ok]
    # a zero spatial PAD joins a following VALID convolution
    cv = np.flatnonzero(cand & np.isin(names, ["CONV_2D", "DEPTHWISE_CONV_2D"]))
    if len(cv):
        x = ctx.inp(cv, 0)
        p = producer[np.maximum(x, 0)]
        pp = np.maximum(p, 0)
        ok = (x >= 0) & (p >= 0) & xnn[pp] & np.isin(names[pp], ["PAD", "PADV2"])
        ok &= (ncons[np.maximum(x, 0)] == 1) & ~is_out[np.maximum(x, 0)]
        for i, pi in zip(cv[ok].tolist(), p[ok].tolist(), strict=True):
            if _padding(sg, i) == "VALID" and _spatial_zero_pad(sg, pi):
                group[pi] = i


def _accel_rules(
    sg: Subgraph,
    names: np.ndarray,
    owner: list[str | None],
    accel: np.ndarray,
    free: np.ndarray,
    group: np.ndarray,
) -> None:
    """Accelerator delegates: element-wise ops with one variable input join their producer."""
    cons = analysis.consumers(sg)
    producer = _producers(sg)
    const = sg.tensor_is_constant
    for i in np.flatnonzero(accel & ~free & np.isin(names, list(_ACCEL_FUSABLE))).tolist():
        ins = [int(t) for t in sg.op_inputs.row(i) if int(t) >= 0]
        var = [t for t in ins if not const[t]]
        if len(var) != 1:
            continue
        x = var[0]
        p = int(producer[x])
        if p < 0 or owner[p] != owner[i] or len(cons.row(x)) != 1:
            continue
        if names[_root(group, p)] in _ACCEL_FUSE_INTO:
            group[i] = _root(group, p)


def _producers(sg: Subgraph) -> np.ndarray:
    producer = np.full(sg.num_tensors, -1, dtype=np.int64)
    outs = sg.op_outputs
    t = outs.idx.astype(np.int64)
    ok = t >= 0
    producer[t[ok]] = outs.row_ids()[ok]
    return producer


def _scalar_const(sg: Subgraph, ins: list[int]) -> bool:
    return any(t >= 0 and sg.tensor_is_constant[t] and int(sg.tensor_numel[t]) == 1 for t in ins)


def _padding(sg: Subgraph, op: int) -> str:
    o = sg.op_options[op]
    return str(o.get("padding", "SAME")) if o is not None else "SAME"


def _spatial_zero_pad(sg: Subgraph, op: int) -> bool:
    """A PAD/PADV2 of a 4-D tensor with zeros, padding only height and width."""
    ins = [int(t) for t in sg.op_inputs.row(op)]
    if len(ins) < 2 or ins[1] < 0 or not sg.tensor_is_constant[ins[1]]:
        return False
    if len(sg.tensor(ins[0]).shape) != 4:
        return False
    try:
        pads = np.asarray(sg.tensor(ins[1]).numpy()).reshape(-1, 2)
    except (ValueError, TypeError):
        return False
    if pads.shape[0] != 4 or pads[0].any() or pads[3].any():
        return False
    if len(ins) > 2 and ins[2] >= 0:
        t = sg.tensor(ins[2])
        if not t.is_constant:
            return False
        v = np.asarray(t.numpy()).reshape(-1)
        q = t.quantization
        zp = int(q.zero_point[0]) if q is not None and len(q.zero_point) else 0
        if len(v) and float(v[0]) != float(zp):
            return False
    return True


# ------------------------------------------------------------------ features


def _base_features(
    sg: Subgraph, sigs: Sequence[OpSig], work: OpWork, ctx_bytes: float
) -> np.ndarray:
    """Per op feature rows; geometry computed once per distinct signature."""
    n = sg.num_ops
    out = np.zeros((n, len(FEATURES)), dtype=np.float64)
    out[:, F["in_bytes"]] = work.act_read
    out[:, F["w_bytes"]] = work.weight_read
    out[:, F["out_bytes"]] = work.act_written
    out[:, F["macs"]] = work.macs
    out[:, F["dtype"]] = work.dtype
    out[:, F["ctx_bytes"]] = ctx_bytes
    geo_cols = [F[k] for k in _GEO]
    if not n:
        return out
    # geometry once per distinct signature (ops of one signature share the OpSig object)
    ids = np.fromiter(map(id, sigs), np.int64, n)
    _, rep, inv = np.unique(ids, return_index=True, return_inverse=True)
    codes = sg.op_builtin
    geo = np.vstack([_geometry(sigs[i], int(codes[i])) for i in rep.tolist()])
    out[:, geo_cols] = geo[np.asarray(inv).reshape(-1)]
    tconv = np.flatnonzero(
        np.array([sigs[i].op == "Convolution2DTransposeBias" for i in rep.tolist()])[
            np.asarray(inv).reshape(-1)
        ]
        & (out[:, F["macs"]] == 0)
    )
    # a custom op has no work rule: input pixels x kernel taps x output x input channels
    out[tconv, F["macs"]] = out[tconv, F["rows"]] * out[tconv, F["red"]] * out[tconv, F["cin"]]
    # an FFT of size n: about n/2 log2(n) butterflies per transform; MFCC: filterbank and DCT
    fft = np.flatnonzero(
        np.array([class_of_op(sigs[i].op) in AUDIO_CLASSES for i in rep.tolist()])[
            np.asarray(inv).reshape(-1)
        ]
    )
    size = np.maximum(out[fft, F["red"]], 2.0)
    mfcc = out[fft, F["opcode"]] == _CUSTOM_CODES["Mfcc"]
    out[fft, F["macs"]] = np.where(
        mfcc,
        out[fft, F["rows"]] * (out[fft, F["w"]] + out[fft, F["cin"]] * out[fft, F["cout"]]),
        out[fft, F["rows"]] * size * np.log2(size) / 2,
    )
    return out


WORK_FEATURES = frozenset({"in_bytes", "w_bytes", "out_bytes", "macs", "dtype", "ctx_bytes"})
"""The features an op's work sets (:mod:`edgepart.cost.work`); the others are its geometry."""
_GEO = tuple(k for k in FEATURES if k not in WORK_FEATURES)


def _dims(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(max(int(d), 1) for d in shape)


def _numel(shape: tuple[int, ...]) -> int:
    return int(np.prod(_dims(shape), dtype=np.int64)) if shape else 1


def _opt(s: OpSig, key: str, default: object) -> object:
    for k, v in s.options:
        if k == key:
            return v
    return default


def _last_padded(xshape: tuple[int, ...], yshape: tuple[int, ...]) -> int:
    """The last dimension a pad from ``xshape`` to ``yshape`` grows (-1: none)."""
    grown = [i for i, (o, d) in enumerate(zip(yshape, xshape, strict=True)) if o != d]
    return grown[-1] if grown else -1


def _split_axis(xshape: tuple[int, ...], pieces: list[tuple[int, ...]]) -> int:
    """The axis a ``SPLIT`` or ``SPLIT_V`` cuts ``xshape`` along: the first dimension a piece
    is shorter in (0 when none is: one piece, the whole input)."""
    for ax, d in enumerate(xshape):
        if any(len(p) == len(xshape) and p[ax] != d for p in pieces):
            return ax
    return 0


def _class_of_type(t: str) -> str:
    """``tfl.concat_q8`` -> ``concat``."""
    return t.partition(".")[2].partition("_")[0]


def _builtin_pad_rows(sg: Subgraph, op: int) -> float:
    """The rows LiteRT's builtin PAD kernel copies one at a time: the output's dimensions
    before the last padded one, each row a contiguous run with its padding (measured on x86:
    8 to 10 ns a row; [1,172,273,1] padded along its width, 172 rows, 6.4 us, along its
    channels, 46,956 rows, 394 us)."""
    x = sg.tensor(int(sg.op_inputs.row(op)[0])).shape
    y = sg.tensor(int(sg.op_outputs.row(op)[0])).shape
    if len(x) != len(y):
        return 0.0
    return float(_numel(_dims(y)[: max(_last_padded(_dims(x), _dims(y)), 0)]))


def _fopt(s: OpSig, key: str, default: float) -> float:
    """A number option (``default`` when absent or not a number)."""
    v = _opt(s, key, default)
    return float(v) if isinstance(v, (int, float)) else default


def _iopt(s: OpSig, key: str, default: int = 1) -> int:
    """An integer option (``default`` when absent or 0)."""
    v = _opt(s, key, default)
    return int(v) if isinstance(v, (int, float)) and v else default


def _geometry(s: OpSig, code: int) -> np.ndarray:
    """The geometric features of one op signature (the :data:`_GEO` columns)."""
    g = dict.fromkeys(_GEO, 0.0)
    ins = [t for t in s.inputs]
    x = next((t for t in ins if t is not None and not t.const), None)
    y = s.outputs[0] if s.outputs else None
    yshape = _dims(y.shape) if y is not None else ()
    xshape = _dims(x.shape) if x is not None else ()
    g["n_out"] = float(_numel(yshape)) if y is not None else 0.0
    g["opcode"] = float(code) if s.op in opnames.BUILTIN_CODES else _CUSTOM_CODES.get(s.op, -1.0)
    g["n_in"] = float(sum(1 for t in ins if t is not None and not t.const))
    g.update(h=1.0, w=1.0, kh=1.0, kw=1.0, sh=1.0, sw=1.0, dil=1.0, rows=1.0, red=1.0, steps=1.0)
    if xshape:
        g["cin"] = float(xshape[-1])
    if yshape:
        g["cout"] = float(yshape[-1])
    if len(yshape) == 4:
        g["h"], g["w"] = float(yshape[1]), float(yshape[2])
    name = s.op
    cls = class_of_op(name)
    w = ins[1] if len(ins) > 1 else None
    if cls in ("conv", "dwconv") and w is not None and len(w.shape) == 4 and len(yshape) == 4:
        ws = _dims(w.shape)
        g["kh"], g["kw"] = float(ws[1]), float(ws[2])
        g["sh"] = float(_iopt(s, "stride_h"))
        g["sw"] = float(_iopt(s, "stride_w"))
        g["dil"] = float(max(_iopt(s, "dilation_h_factor"), _iopt(s, "dilation_w_factor")))
        g["rows"] = float(yshape[0] * yshape[1] * yshape[2])
        g["red"] = float(ws[1] * ws[2] * (ws[3] if cls == "conv" else 1))
    elif cls == "tconv" and len(yshape) == 4:
        wt = ins[1] if name != "Convolution2DTransposeBias" else (ins[1] if len(ins) > 1 else None)
        xt = ins[2] if name == "TRANSPOSE_CONV" and len(ins) > 2 else x
        if wt is not None and len(wt.shape) == 4:
            ws = _dims(wt.shape)
            g["kh"], g["kw"] = float(ws[1]), float(ws[2])
            g["red"] = float(ws[1] * ws[2] * ws[0])
        if xt is not None and len(xt.shape) == 4:
            xs = _dims(xt.shape)
            g["cin"] = float(xs[-1])
            g["sh"] = float(max(round(yshape[1] / max(xs[1], 1)), 1))
            g["sw"] = float(max(round(yshape[2] / max(xs[2], 1)), 1))
            g["rows"] = float(xs[0] * xs[1] * xs[2])
    elif cls == "fc" and w is not None and w.shape:
        k = _dims(w.shape)[-1]
        g["red"] = float(k)
        g["rows"] = float(max(_numel(xshape) // max(k, 1), 1)) if xshape else 1.0
        g["cout"] = float(_dims(w.shape)[0])
    elif cls == "bmm" and len(ins) > 1 and ins[0] is not None and ins[1] is not None:
        a, b = _dims(ins[0].shape), _dims(ins[1].shape)
        adj_x = bool(_opt(s, "adj_x", False))
        adj_y = bool(_opt(s, "adj_y", False))
        if len(a) >= 2 and len(b) >= 2:
            m = a[-1] if adj_x else a[-2]
            k = a[-2] if adj_x else a[-1]
            nn = b[-2] if adj_y else b[-1]
            g["red"] = float(k)
            g["rows"] = float(_numel(yshape) // max(nn, 1)) if yshape else float(m)
            g["cout"] = float(nn)
            g["n_in"] = float(sum(1 for t in ins[:2] if t is not None and not t.const))
    elif cls == "pool" and len(yshape) == 4:
        g["kh"] = float(_iopt(s, "filter_height"))
        g["kw"] = float(_iopt(s, "filter_width"))
        g["sh"] = float(_iopt(s, "stride_h"))
        g["sw"] = float(_iopt(s, "stride_w"))
        g["rows"] = float(yshape[0] * yshape[1] * yshape[2])
        g["red"] = g["kh"] * g["kw"]
    elif cls in ("reduce", "softmax") and xshape:
        nx = _numel(xshape)
        ny = max(_numel(yshape), 1) if yshape else 1
        if cls == "softmax":
            g["red"] = float(xshape[-1])
            g["rows"] = float(nx // max(xshape[-1], 1))
        else:
            g["red"] = float(max(nx // ny, 1))
            g["rows"] = float(ny)
    elif cls == "binary":
        vs = [t for t in ins if t is not None]
        sizes = [_numel(_dims(t.shape)) for t in vs]
        ny = _numel(yshape) if yshape else 1
        if any(sz == 1 for sz in sizes) and ny > 1:
            g["bcast"] = 1.0
        elif any(sz != ny for sz in sizes):
            # an operand that is one value per row (a layer norm's mean): the kernel works a
            # row at a time; else it varies along the last axis (a vector of channels)
            last = yshape[-1] if yshape else 1
            per_row = any(t.shape and _dims(t.shape)[-1] == 1 for t in vs) and last > 1
            g["bcast"] = 3.0 if per_row else 2.0
        g["rows"] = float(ny)
    elif cls in ("concat", "split"):
        axis = _iopt(s, "axis", 0)
        big = yshape if cls == "concat" else xshape
        if name in ("SPLIT", "SPLIT_V"):  # the axis is an input: where the pieces differ
            axis = _split_axis(xshape, [_dims(t.shape) for t in s.outputs])
        if big:
            ax = axis % max(len(big), 1)
            g["rows"] = float(_numel(big[:ax]))
            g["red"] = float(_numel(big[ax:]))
        g["n_in"] = (
            float(len([t for t in ins if t is not None]))
            if cls == "concat"
            else float(len(s.outputs))
        )
    elif cls == "pad" and yshape and len(yshape) == len(xshape):
        # the rows a pad kernel pads one at a time: the output's dimensions through the last
        # padded one, then a run of the unpadded dimensions after it (XNNPACK pads each such
        # row with a call of its own: [1,172,273,1] padded along its width, 47,644 rows of
        # one value, takes 612 us, along its height 9.8, 176 rows of 273; measured,
        # ai-edge-litert 2.3.0, x86)
        last = _last_padded(xshape, yshape)
        if last in (-1, len(yshape) - 1):  # the innermost dimension padded: rows of it
            last = len(yshape) - 2
        g["rows"] = float(_numel(yshape[: last + 1]))
        g["red"] = float(_numel(yshape[last + 1 :]))
    elif cls == "slice" and yshape and len(yshape) == len(xshape):
        # runs of the output that are contiguous in the input: the dimensions the slice keeps
        # whole, from the last one, and the first it cuts (XNNPACK copies a run per task)
        run = 1
        for o, i in zip(reversed(yshape), reversed(xshape), strict=True):
            run *= o
            if o != i:
                break
        g["red"] = float(run)
        g["rows"] = float(_numel(yshape) // run)
    elif name == "Mfcc" and len(yshape) >= 2 and xshape:
        # per frame: a mel filterbank into "cin" channels over the "red" bins from the lower
        # to the upper frequency limit (TFLite's MfccMelFilterbank: steps of rate / 2 /
        # (bins - 1)), then a DCT of those to "cout" coefficients; "w" all the bins (the
        # kernel sets both up again on each call, the filterbank bin by bin). The rate is an
        # input: its value when constant, else 16 kHz (speech models' rate)
        bins = float(xshape[-1])
        rate = _fopt(s, "sample_rate", 16000.0) or 16000.0
        step = 0.5 * rate / max(bins - 1.0, 1.0)
        lower = _fopt(s, "lower_frequency_limit", 20.0)
        upper = _fopt(s, "upper_frequency_limit", 4000.0)
        first, last = int(1.5 + lower / step), min(int(upper / step), int(bins) - 1)
        g["rows"] = float(_numel(yshape[:-1]))
        g["red"] = float(max(last - first + 1, 1))
        g["w"] = bins
        g["cin"] = float(_iopt(s, "filterbank_channel_count", 40))
    elif cls in ("fft", "spectrogram") and len(yshape) >= 2:
        # "red" is the transform size, "rows" the transforms. RFFT2D: a real 2-D transform of
        # the last two axes, fft_length [fh, fw] giving fh x (fw/2 + 1) outputs. The
        # AudioSpectrogram custom op: a windowed real FFT per frame, [channels, frames, n/2 + 1]
        two_d = name == "RFFT2D"
        size = (yshape[-2] if two_d else 1) * 2 * max(yshape[-1] - 1, 1)
        g["red"] = float(size)
        g["rows"] = float(_numel(yshape[:-2] if two_d else yshape[:-1]))
    elif name in _RECURRENT and xshape and w is not None and len(w.shape) == 2:
        # one fully connected step per time step: [batch, inputs + outputs] x [.., 4 * cells]
        time_major = bool(_opt(s, "time_major", False))
        steps = xshape[0] if (time_major and len(xshape) == 3) else (
            xshape[1] if len(xshape) == 3 else 1
        )  # fmt: skip
        batch = max(_numel(xshape) // max(xshape[-1] * steps, 1), 1)
        cells = _dims(w.shape)[0]
        rec = ins[5] if len(ins) > 5 and ins[5] is not None else None
        nout = _dims(rec.shape)[-1] if rec is not None and rec.shape else 0
        gates = 4 if "LSTM" in name else 1
        g["steps"] = float(steps)
        g["rows"] = float(batch)
        g["red"] = float(xshape[-1] + nout)
        g["cout"] = float(gates * cells)
    else:
        g["rows"] = g["n_out"]
    return np.array([g[k] for k in _GEO], dtype=np.float64)


def _recurrent_as_fc(row: np.ndarray) -> np.ndarray:
    """A recurrent op as one kernel per step, with the features of the step's fully connected
    product (inputs and outputs by the gates' weights): work per step, ``steps`` repeats (the
    kernel's ``repeat``)."""
    r = row.copy()
    steps = max(r[F["steps"]], 1.0)
    for col in ("in_bytes", "out_bytes", "macs", "n_out"):
        r[F[col]] /= steps
    r[F["macs"]] = r[F["rows"]] * r[F["red"]] * r[F["cout"]]
    out: np.ndarray = r
    return out


# ------------------------------------------------------------------ control flow


def _control_flow(
    model: Model,
    sg: Subgraph,
    op: int,
    name: str,
    executor: str,
    ctx_bytes: float,
    stack: frozenset[int],
    counted: float | None = None,
) -> tuple[list[tuple[Kernels, float]], float, str]:
    """Kernels of the subgraphs a control-flow op calls, with their multipliers (a ``WHILE``'s
    iterations: ``counted`` in a run if given, else :func:`_trip_count`)."""
    refs = sg.op(op).subgraph_refs
    if not refs or any(r in stack or r >= len(model.subgraphs) for r in refs):
        return [], 1.0, f"op {op} ({name}): called subgraphs unavailable; costed as nothing"
    subs = []
    for r in refs:
        try:
            subs.append(
                decompose(model, executor, subgraph=r, ctx_bytes=ctx_bytes, _stack=stack | {r})
            )
        except (ValueError, IndexError, KeyError):
            return [], 1.0, f"op {op} ({name}): cannot decompose subgraph {r}"
    if name == "IF":
        # the dearer branch (which one runs depends on the data)
        work = [float(k.features[:, F["macs"]].sum() + k.features[:, F["out_bytes"]].sum())
                for k in subs[:2]]  # fmt: skip
        pick = int(np.argmax(work)) if work else 0
        return [(subs[pick], 1.0)], 1.0, ""
    if name == "WHILE":
        trips, known = _trip_count(model, refs)
        note = "" if known else (
            f"op {op} (WHILE): trip count unknown, one iteration assumed"
        )  # fmt: skip
        if counted is not None and not known:
            trips = float(counted)
            note = (f"op {op} (WHILE): {counted:g} iteration{'s' * (counted != 1)}, as counted "
                    "in a run on seeded inputs (the count depends on the inputs)")  # fmt: skip
        cond_body = [(subs[0], trips + 1.0)] + [(s, trips) for s in subs[1:]]
        return cond_body, 1.0, note
    return [(s, 1.0) for s in subs], 1.0, ""


def uncounted_loops(model: Model, subgraph: int = 0) -> list[int]:
    """The ``WHILE`` ops of a subgraph whose trip count the model does not fix (no constant
    bound in the condition, :func:`_trip_count`): their count depends on the inputs."""
    sg = model.subgraphs[subgraph]
    codes = [k for k, c in enumerate(sg.opcodes) if c.name == "WHILE"]
    out = []
    # the WHILE ops by their code first: a view of every op costs 25 us (2.5 s at 100,000 ops)
    for i in np.flatnonzero(np.isin(sg.op_opcode, codes)).tolist() if codes else []:
        refs = sg.op(i).subgraph_refs
        if refs and all(r < len(model.subgraphs) for r in refs) and not _trip_count(model, refs)[1]:
            out.append(i)
    return out


def _trip_count(model: Model, refs: tuple[int, ...]) -> tuple[float, bool]:
    """A WHILE loop's iterations when its condition compares a counter with a constant."""
    cond = model.subgraphs[refs[0]]
    for i in range(cond.num_ops):
        if cond.op_name(i) not in ("LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"):
            continue
        ins = [int(t) for t in cond.op_inputs.row(i)]
        consts = [t for t in ins if t >= 0 and cond.tensor_is_constant[t]]
        if len(consts) != 1:
            continue
        try:
            bound = float(np.asarray(cond.tensor(consts[0]).numpy()).reshape(-1)[0])
        except (ValueError, TypeError, IndexError):
            continue
        if bound > 0:
            return bound, True
    return 1.0, False
