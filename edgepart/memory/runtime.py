"""Memory as LiteRT allocates it when it runs a model (or one partition of a bundle).

The arena plan (:mod:`edgepart.memory.arena`) is only part of what an interpreter holds.
:func:`runtime_memory` adds up, for one subgraph run by LiteRT with a host executor:

``arena``
    TFLite's read-write arena: the tensors of the ops TFLite's own kernels run and the tensors
    passed in and out of delegate nodes (TFLite's planner on TFLite's lifetimes). Kernel
    scratch (im2col and similar temporaries) is not modelled: it depends on the kernel build.
``persistent``
    TFLite's persistent arena: variables, weights DEQUANTIZE'd from fp16 constants and weights
    DENSIFY'd from sparse constants (kept for the whole run: ``dequantize.cc``, ``densify.cc``,
    ``arena_planner.cc``), for the ops no delegate takes.
``xnnpack_unpacked``
    With XNNPACK (LiteRT's default): the dense copies of sparse weights that the delegate's
    static-unpack pre-pass makes and keeps (``static_unpacked_data_`` in
    ``xnnpack_delegate.cc``). An fp16 weight is packed straight to fp32 (measured: an fp16
    model holds what its fp32 twin holds), so its fp32 copy does not stay.
``xnnpack_packed``
    XNNPACK's packed copy of the static weights of the ops it runs as GEMMs or convolutions
    (filters and biases, in the precision the operator computes in; LiteRT 2.3.0 creates no
    shared weights cache by default, so every operator packs its own). A matrix product packs
    its output channels in the tiles of the micro-kernel XNNPACK picked for the host's CPU
    (:mod:`edgepart.devices.xnnpack_packing`: 64 on AMX for 8-bit weights), padded channels
    included.
``xnnpack_indirection``
    The indirection buffers of its convolutions: a pointer per output pixel and filter tap for
    a KxK convolution, per row and overlapping tap for a depthwise one (XNNPACK's
    ``indirection.c``).
``xnnpack_workspace``
    XNNPACK's memory for the values inside its partitions (one workspace shared by them: the
    largest partition's need), planned like an arena.
``bookkeeping``
    Per-op, per-partition and per-subgraph structures (TFLite nodes, XNNPACK operators):
    measured on ai-edge-litert 2.3.0 (x86-64) with chains of each kind of op
    (``tools/measure_bookkeeping.py``).

:attr:`RuntimeMemory.total` is what LiteRT allocates (heap bytes);
:attr:`RuntimeMemory.resident` what it touches (the growth of resident memory): the same but
for bookkeeping, whose resident counterpart is measured alongside it (a subgraph reserves
about 40 KB and touches a third of it; small structures cost more than their size in pages).

Left out, and said so: the runtime's fixed allocations (the interpreter, XNNPACK's thread
pool and code: about 0.1 MB, plus 0.65 MB resident with XNNPACK, measured on a one-op model)
and the builtin kernels' scratch (im2col buffers, ruy's packed-weight cache).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgepart.claim.delegation import claim
from edgepart.devices.xnnpack_packing import XnnpackPacking, host_packing
from edgepart.ir import analysis
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model, Subgraph
from edgepart.memory.arena import plan_arena
from edgepart.memory.lifetimes import Lifetimes, tflite_lifetimes
from edgepart.memory.problem import DEFAULT_ALIGNMENT, MemoryProblem

__all__ = [
    "BOOKKEEPING_PER_OP",
    "BOOKKEEPING_PER_SUBGRAPH",
    "PACKED_OPS",
    "RuntimeMemory",
    "runtime_memory",
]

BOOKKEEPING_PER_OP: dict[str, dict[str, tuple[int, int]]] = {
    "xnnpack": {"CONV_2D": (4740, 5050), "DEPTHWISE_CONV_2D": (4250, 4670),
                "FULLY_CONNECTED": (5480, 6080), "TRANSPOSE_CONV": (4740, 5050),
                "": (1650, 2000), "partition": (2100, 1770)},
    "xnnpack_8bit": {"CONV_2D": (5350, 5670), "DEPTHWISE_CONV_2D": (4920, 5350),
                     "FULLY_CONNECTED": (6360, 7040), "TRANSPOSE_CONV": (5350, 5670),
                     "": (1750, 2080)},
    "builtin": {"CONV_2D": (1590, 1840), "DEPTHWISE_CONV_2D": (1250, 1520), "": (630, 900)},
    "builtin_8bit": {"CONV_2D": (2610, 3000), "DEPTHWISE_CONV_2D": (2280, 2520), "": (720, 980)},
}  # fmt: skip
"""Bytes per op beyond its tensors and weights, by op (``""``: any other op), for float and
8-bit ops, and per XNNPACK partition (``"partition"``): ``(heap, resident)``, the growth of
glibc's allocated bytes and of anonymous resident memory for a chain of 101 such ops over a
chain of one, divided by 100 (``tools/measure_bookkeeping.py``; ai-edge-litert 2.3.0, x86-64;
reference kernels use the builtin rows; a transposed convolution takes the convolution's)."""

BOOKKEEPING_PER_SUBGRAPH = (40_210, 13_100)
"""``(heap, resident)`` bytes of every subgraph of the file beyond the first (LiteRT builds
them all: control flow bodies, other signatures): 11 subgraphs over one, divided by 10. A
subgraph reserves memory it never writes: only about a third of it becomes resident."""

# XNNPACK ops that pack their static weights into an operator-owned buffer; those of them
# that pack for a GEMM micro-kernel's output-channel tiles (weights [out, ..., in]).
_GEMM_PACKED = frozenset(
    {"CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "Convolution2DTransposeBias"}
)
# XNNPACK ops that pack their static weights into an operator-owned buffer.
PACKED_OPS = frozenset(
    {
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "FULLY_CONNECTED",
        "TRANSPOSE_CONV",
        "BATCH_MATMUL",
        "Convolution2DTransposeBias",
    }
)


@dataclass(frozen=True)
class RuntimeMemory:
    """Bytes LiteRT holds while running one subgraph (see the module docstring)."""

    executor: str
    arena: int
    persistent: int
    dequantized: int
    densified: int
    variables: int
    xnnpack_unpacked: int = 0
    xnnpack_packed: int = 0
    xnnpack_indirection: int = 0
    xnnpack_workspace: int = 0
    bookkeeping: int = 0
    delegate_partitions: int = 0
    bookkeeping_resident: int = 0
    packing: str = ""
    """The CPU whose XNNPACK tiles the packed weights are counted in (empty: none packed)."""

    @property
    def total(self) -> int:
        """Everything modelled (fixed runtime allocations and kernel scratch excluded)."""
        return (
            self.arena
            + self.persistent
            + self.xnnpack_unpacked
            + self.xnnpack_packed
            + self.xnnpack_indirection
            + self.xnnpack_workspace
            + self.bookkeeping
        )

    @property
    def resident(self) -> int:
        """The growth of resident memory: :attr:`total` with bookkeeping as much as is touched."""
        return self.total - self.bookkeeping + self.bookkeeping_resident

    def to_dict(self) -> dict[str, Any]:
        return {
            "executor": self.executor,
            "arena": self.arena,
            "persistent": self.persistent,
            "dequantized": self.dequantized,
            "densified": self.densified,
            "variables": self.variables,
            "xnnpack_unpacked": self.xnnpack_unpacked,
            "xnnpack_packed": self.xnnpack_packed,
            "xnnpack_indirection": self.xnnpack_indirection,
            "xnnpack_workspace": self.xnnpack_workspace,
            "bookkeeping": self.bookkeeping,
            "delegate_partitions": self.delegate_partitions,
            "bookkeeping_resident": self.bookkeeping_resident,
            "packing": self.packing,
            "total": self.total,
            "resident": self.resident,
        }

    def __add__(self, other: RuntimeMemory) -> RuntimeMemory:
        """Two interpreters side by side (the partitions of a bundle)."""
        return RuntimeMemory(
            self.executor if self.executor == other.executor else "mixed",
            self.arena + other.arena,
            self.persistent + other.persistent,
            self.dequantized + other.dequantized,
            self.densified + other.densified,
            self.variables + other.variables,
            self.xnnpack_unpacked + other.xnnpack_unpacked,
            self.xnnpack_packed + other.xnnpack_packed,
            self.xnnpack_indirection + other.xnnpack_indirection,
            self.xnnpack_workspace + other.xnnpack_workspace,
            self.bookkeeping + other.bookkeeping,
            self.delegate_partitions + other.delegate_partitions,
            self.bookkeeping_resident + other.bookkeeping_resident,
            self.packing or other.packing,
        )


def _align(n: int, a: int = DEFAULT_ALIGNMENT) -> int:
    return (int(n) + a - 1) // a * a


def _arena(lt: Lifetimes, keep: np.ndarray, name: str) -> int:
    """TFLite's planner on the kept (read-write) buffers of ``lt``."""
    rows = np.flatnonzero(keep & ~lt.persistent)
    if not len(rows):
        return 0
    problem = MemoryProblem.from_arrays(
        ids=[f"t{int(t)}" for t in lt.tensors[rows]],
        memory=[name] * len(rows),
        lower=lt.lower[rows].tolist(),
        upper=lt.upper[rows].tolist(),
        size=lt.nbytes[rows].tolist(),
        rank=lt.rank[rows].tolist(),
        alignment=DEFAULT_ALIGNMENT,
    )
    return int(plan_arena(problem, strategy="tflite").arenas[name].size)


def runtime_memory(
    model: Model,
    subgraph: int = 0,
    *,
    executor: str = "xnnpack",
    packing: XnnpackPacking | None = None,
) -> RuntimeMemory:
    """What LiteRT allocates to run ``model.subgraphs[subgraph]`` with ``executor``.

    Parameters
    ----------
    model
        The model (shapes resolved: :func:`edgepart.ir.shapes.apply_input_shapes`).
    subgraph
        The subgraph that runs (control-flow bodies are not added).
    executor
        ``"xnnpack"`` (LiteRT's default: XNNPACK takes what it supports) or ``"builtin"`` /
        ``"reference"`` (TFLite's own kernels only).
    packing
        The tiles XNNPACK packs weights for (default: this host's CPU,
        :func:`edgepart.devices.xnnpack_packing.host_packing`).
    """
    sg = model.subgraphs[subgraph]
    lt = tflite_lifetimes(sg)
    owner = np.zeros(sg.num_ops, dtype=np.int64) - 1  # XNNPACK partition of each op
    parts: list[tuple[int, ...]] = []
    if executor == "xnnpack":
        res = claim(model, subgraph=subgraph)
        for k, p in enumerate(res.partitions("xnnpack")):
            parts.append(tuple(p.ops))
            owner[list(p.ops)] = k
    prod = analysis.producers(sg)
    cons = analysis.consumers(sg)
    n_t = sg.num_tensors
    # the partition each tensor lives in (-1: TFLite sees it)
    home = np.full(n_t, -1, dtype=np.int64)
    outs = set(sg.outputs.tolist())
    for t in range(n_t):
        p = prod[t]
        if p < 0 or owner[p] < 0 or t in outs:
            continue
        users = cons.row(t)
        if all(owner[u] == owner[p] for u in users.tolist()):
            home[t] = owner[p]
    roots = lt.tensors
    in_tflite = home[np.minimum(roots, n_t - 1)] < 0
    in_tflite &= roots < n_t
    arena = _arena(lt, in_tflite, "tflite")
    dequantized = densified = variables = persistent = 0
    for i, t in enumerate(roots.tolist()):
        if not lt.persistent[i] or t >= n_t or home[t] >= 0:
            continue
        size = _align(int(lt.nbytes[i]))
        persistent += size
        p = prod[t]
        name = sg.op_name(p) if p >= 0 else ""
        if sg.tensor_is_variable[t]:
            variables += size
        elif name == "DENSIFY":
            densified += size
        elif name == "DEQUANTIZE":
            dequantized += size
    unpacked = packed = indirection = workspace = 0
    packing = packing if packing is not None else host_packing()
    if parts:
        folded = analysis.constant_producers(sg)
        static = sg.tensor_is_constant.copy()
        for op in np.flatnonzero(folded).tolist():
            for t in sg.op_outputs.row_tuple(op):
                if t < 0:
                    continue
                static[t] = True
                delegated = owner[op] >= 0 or any(owner[u] >= 0 for u in cons.row(t).tolist())
                if delegated and sg.op_name(op) == "DENSIFY":
                    unpacked += int(sg.tensor_nbytes[t])
        for op in range(sg.num_ops):
            if owner[op] < 0:
                continue
            if sg.op_name(op) in PACKED_OPS:
                packed += _packed_bytes(sg, op, static, packing)
            indirection += _indirection_bytes(sg, op)
        for k in range(len(parts)):
            workspace = max(workspace, _arena(lt, home[np.minimum(roots, n_t - 1)] == k, "xnn"))
    book, book_resident = _bookkeeping(sg, owner, len(parts))
    extra = len(model.subgraphs) - 1
    return RuntimeMemory(
        executor=executor,
        arena=arena,
        persistent=persistent,
        dequantized=dequantized,
        densified=densified,
        variables=variables,
        xnnpack_unpacked=unpacked,
        xnnpack_packed=packed,
        xnnpack_indirection=indirection,
        xnnpack_workspace=workspace,
        bookkeeping=book + BOOKKEEPING_PER_SUBGRAPH[0] * extra,
        delegate_partitions=len(parts),
        bookkeeping_resident=book_resident + BOOKKEEPING_PER_SUBGRAPH[1] * extra,
        packing=packing.isa if packed else "",
    )


def _bookkeeping(sg: Subgraph, owner: np.ndarray, parts: int) -> tuple[int, int]:
    """Per-op structures, ``(heap, resident)``: XNNPACK's rows for the ops it runs, the
    builtin rows for the rest, and XNNPACK's per-partition row."""
    rows = BOOKKEEPING_PER_OP
    heap, resident = (parts * v for v in rows["xnnpack"]["partition"])
    for op in range(sg.num_ops):
        ins = sg.op_inputs.row_tuple(op)
        dt = int(sg.tensor_dtype[ins[0]]) if ins and ins[0] >= 0 else int(DType.FLOAT32)
        bits8 = dt in (int(DType.INT8), int(DType.UINT8))
        key = ("xnnpack" if owner[op] >= 0 else "builtin") + ("_8bit" if bits8 else "")
        row = rows[key]
        h, r = row.get(sg.op_name(op), row[""])
        heap += h
        resident += r
    return heap, resident


def _indirection_bytes(sg: Subgraph, op: int) -> int:
    """Pointers XNNPACK's indirection buffer holds for a delegated convolution."""
    name = sg.op_name(op)
    if name not in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        return 0
    ins, outs = sg.op_inputs.row_tuple(op), sg.op_outputs.row_tuple(op)
    w = sg.tensor_shape.row_tuple(ins[1])
    o = sg.tensor_shape.row_tuple(outs[0])
    if len(w) != 4 or len(o) != 4:
        return 0
    kh, kw = w[1], w[2]
    opts: Mapping[str, Any] = sg.op_options[op] or {}
    if name == "CONV_2D":
        if kh * kw == 1:
            return 0  # a 1x1 convolution is a GEMM on the input itself
        return o[0] * o[1] * o[2] * kh * kw * 8
    step = int(opts.get("stride_w", 1)) if int(opts.get("dilation_w_factor", 1)) == 1 else kw
    return o[0] * o[1] * (kh * kw + (o[2] - 1) * step * kh) * 8


def _packed_bytes(sg: Subgraph, op: int, static: np.ndarray, packing: XnnpackPacking) -> int:
    """Bytes of an operator's packed weights: its static filter and bias at the precision the
    operator computes in (float ops: fp32, whatever the weights were stored as; 8-bit ops:
    8-bit filter, int32 bias), a zero bias when the model has none. The matrix products
    (not depthwise convolutions, not batch matrix products) pack their output channels in the
    host kernel's tiles, each padded channel with its reduction, bias and scale
    (:mod:`edgepart.devices.xnnpack_packing`)."""
    ins = sg.op_inputs.row_tuple(op)
    if len(ins) < 2 or ins[1] < 0 or not static[ins[1]]:
        return 0  # dynamic weights are not packed ahead of time
    name = sg.op_name(op)
    tconv = name == "TRANSPOSE_CONV"  # inputs: output shape, filter, input, bias
    x = ins[2] if tconv and len(ins) > 2 else ins[0]
    act = DType(int(sg.tensor_dtype[x])) if x >= 0 else DType.FLOAT32
    w = ins[1]
    numel_w = int(sg.tensor_numel[w])
    quant = act in (DType.INT8, DType.UINT8)
    wb = DType(int(sg.tensor_dtype[w])).bits // 8 or 1
    elem = 1 if quant else (4 if act.is_float else wb)
    shape = sg.tensor_shape.row_tuple(w)
    channels = shape[-1] if name == "DEPTHWISE_CONV_2D" else (shape[0] if shape else 1)
    bias = (ins[3] if len(ins) > 3 else -1) if tconv else (ins[2] if len(ins) > 2 else -1)
    nb = int(sg.tensor_numel[bias]) if bias >= 0 and static[bias] else channels
    q = sg.tensor_quantization[w]
    scales = 4 * len(q.scale) if quant and q is not None and len(q.scale) > 1 else 0
    total = numel_w * elem + nb * 4 + scales
    kind = {DType.INT8: "qs8", DType.UINT8: "qu8"}.get(act, "f32" if act.is_float else "")
    if name not in _GEMM_PACKED or not kind or len(shape) < 2 or channels <= 0:
        return total
    if kind == "f32" and DType(int(sg.tensor_dtype[w])) in (DType.INT8, DType.UINT8):
        return total  # dynamically quantized: its kernels' tiles are not tabulated
    cin = shape[-1]
    taps = numel_w // max(channels * cin, 1)
    opts: Mapping[str, Any] = sg.op_options[op] or {}
    # a pointwise convolution of stride 1 picks its kernel as a fully connected layer does
    # (measured: float 1x1 convolutions of 40, 48 and 112 channels pack in tiles of 16)
    pointwise = (
        name == "CONV_2D"
        and taps == 1
        and (int(opts.get("stride_h", 1)) == int(opts.get("stride_w", 1)) == 1)
    )
    fc = name == "FULLY_CONNECTED" or pointwise
    tile = packing.output_tile(kind, channels, fully_connected=fc)
    padded = -(-channels // tile.nr) * tile.nr
    reduction = taps * (-(-cin // tile.kr) * tile.kr)
    return padded * (reduction * elem + 4 + (4 if scales else 0))
