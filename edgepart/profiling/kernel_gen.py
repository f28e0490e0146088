"""Generated kernel chains: the training models of the latency predictors.

A *chain* is a small model whose ops run one after the other, like a slice of a real network:
each op mostly consumes the previous op's output (so caches, weight packing and the delegate
see what they see inside a model), sometimes a fresh model input of a newly drawn shape (so
every kernel class is sampled over its whole range, not only along one network's path).
Configurations are drawn over the ranges real models use (image tensors of 1 to 256 pixels a
side and 1 to 1024 channels, 1x1 to 7x7 kernels with strides 1 and 2, sequences of up to 512
steps, matrices up to 4096 wide, float32 and int8), with work and size caps so that one chain
runs for microseconds to tens of milliseconds.

A chain is fully determined by its :class:`ChainSpec` (seed, family, length, class weights):
:func:`build_chain` replays the same draws, so a measurement file only needs the spec to
rebuild a model. Class weights steer sampling: the calibration raises the weight of the kernel
classes its predictors fit worst (adaptive sampling), and a *homogeneous* chain draws a single
class, which gives a clean per-class error.

Weights are random (seeded, He-scaled so activations stay of order one): latency does not
depend on weight values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from flatbuffers import flexbuffers

from edgepart.ir.builder import ModelBuilder, SubgraphBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model
from edgepart.ir.values import DimensionMetadata, Quantization, Sparsity

__all__ = [
    "CLASS_WEIGHTS",
    "COLUMN_STEPS",
    "FAMILIES",
    "SAMPLER_VERSION",
    "ChainSpec",
    "build_chain",
    "draw_specs",
]

SAMPLER_VERSION = 23  # 13, 14 and 21: drawn in trials, not adopted (docs/latency_predictors.md)
# Versions whose specs this module builds: 18 added stack chains (ChainSpec.stack) and left every
# other spec's chain as 17 built it, so measurements of 17 can still be rebuilt and refitted.
# 19 drew AudioSpectrogram and Mfcc as classes of their own (they had been a fifth of the "fft"
# class each): a spec of 17 or 18 still builds its chain as then. 20 drew a third of the 1-D
# filter banks as the frames of a short-time Fourier transform (long kernels, hops of a
# hundred samples and more) and one to three parts of an FFT's spectrum; specs of 19 build as
# 19 built them. 21 gave most of those frames one output per frequency bin (n_fft / 2 + 1: 18 of
# a calibration's 27 frame kernels had had 1 to 6 outputs, since a one-channel input scaled the
# usual output draw down), and half of the batch matrix products with a constant right-hand side
# a 2-D one broadcast over the batch (a projection by a fixed matrix: mel filter banks,
# ``einsum`` and ``tensordot`` layers), which version 20 never drew. 21 was not adopted: it drew
# those frames in 8-bit chains too, where they were the largest 8-bit convolutions, at an
# efficiency no 8-bit network has, and its fits priced 8-bit networks' convolutions half as high
# again. 22 draws them as 21 did, in float32 chains only (audio front ends are float); specs of
# 20 build as 20 built them. 23 draws image networks' first convolutions (:meth:`_Chain.stem`):
# a fresh image of 1 to 4 channels at full resolution. Version 22 drew a square-window
# convolution's input channels as it drew any other's, mostly 8 and up, and its 2-D
# convolutions of 1 to 4 input channels were a few dozen of some 7,800 chains, most of them a
# sliver of their chain's time; builtin kernels ran such stems up to a third slower (one input
# channel) than its fits priced them. Specs of 22 build as 22 built them.
BUILDS = frozenset({17, 18, 19, 20, 22, 23})
F32, F16, I8, I32 = DType.FLOAT32, DType.FLOAT16, DType.INT8, DType.INT32

# Default relative frequency of each kernel class in mixed chains.
CLASS_WEIGHTS: dict[str, float] = {
    "conv": 5.0,
    "dwconv": 3.0,
    "tconv": 0.4,
    "fc": 2.5,
    "bmm": 0.8,
    "binary": 3.0,
    "unary": 1.2,
    "math": 1.5,
    "pool": 1.0,
    "reduce": 1.0,
    "softmax": 0.6,
    "concat": 1.0,
    "split": 0.5,
    "copy": 1.0,
    "pad": 0.8,
    "slice": 0.8,
    "transpose": 0.6,
    "resize": 0.5,
    "gather": 0.4,
    "shape": 0.3,
    "other": 0.6,
    "fft": 0.4,
    "spectrogram": 0.3,
    "mfcc": 0.3,
    "rnn": 0.4,
}
# Classes sampler version 19 added; specs of earlier versions never draw them.
NEW_IN_19 = frozenset({"spectrogram", "mfcc"})
# Which classes each family draws from: float32; int8 (what quantized models use); hybrid
# (dynamic-range quantization: float activations, int8 weights of the MAC ops).
FAMILIES: dict[str, tuple[str, ...]] = {
    "f32": tuple(CLASS_WEIGHTS),
    "q8": ("conv", "dwconv", "fc", "binary", "unary", "math", "pool", "reduce", "concat", "copy",
           "pad", "softmax", "transpose", "slice", "resize"),
    "hy": ("conv", "dwconv", "fc", "binary", "unary", "pool", "reduce", "concat", "copy"),
}  # fmt: skip
# Classes whose ops XNNPACK does not take: chains for XNNPACK use them only as partition splits.
BUILTIN_ONLY = frozenset({"gather", "shape", "other", "fft", "spectrogram", "mfcc", "rnn"})

MAX_ELEMS = 1 << 22  # activation elements (16 MB of float32)
SMALL_CAP = 32  # largest length, channel count ... drawn in small chains
MAX_KERNEL_MACS = 150e6
MAX_CHAIN_MACS = 300e6
MAX_WEIGHT_BYTES = 24 << 20
# Share of the image convolutions of non-small chains (k_conv's 1 x 1 to 7 x 7 windows) drawn
# as a network's first convolution (:meth:`_Chain.stem`; sampler version 23 and later).
STEM_SHARE = 0.08
# A streaming layer's new frames per invocation (m_stream, and k_dwconv's streaming draws).
STREAM_FRAMES = {1: 0.6, 2: 0.1, 3: 0.2, 4: 0.1}
# The steps of a column chain (ChainSpec.column) and how often a mixed one draws each.
COLUMN_STEPS = {"stream": 3.0, "conv": 2.0, "fc": 1.0, "binary": 1.5, "unary": 1.0}
COLUMN_CHANNELS = 256  # widest column a column chain draws
# Share of float 1x1 convolutions whose weights are sparse fp16, as in MediaPipe's sparse
# models: a DENSIFY then a DEQUANTIZE, which LiteRT's builtin kernels run on every invocation.
SPARSE_F16_SHARE = 0.12


@dataclass(frozen=True)
class ChainSpec:
    """Everything a chain is drawn from; :func:`build_chain` replays it exactly."""

    seed: int
    family: str = "f32"
    length: int = 6
    weights: tuple[tuple[str, float], ...] = ()
    homogeneous: str | None = None
    executor_hint: str = "any"  # "xnnpack": builtin-only classes only as rare splits
    version: int = SAMPLER_VERSION
    motif: bool = False  # a chain of network blocks (inverted residuals, bottlenecks ...)
    small: bool = False  # a long chain of tiny tensors (streaming models)
    column: str = ""  # a column chain: "mixed" or the one step kind it repeats (COLUMN_STEPS)
    stack: bool = False  # a column chain of one step configuration repeated (_Chain.m_stack)

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "family": self.family,
            "length": self.length,
            "weights": [[k, float(v)] for k, v in self.weights],
            "homogeneous": self.homogeneous,
            "executor_hint": self.executor_hint,
            "version": self.version,
            "motif": self.motif,
            "small": self.small,
            "column": self.column,
            **({"stack": True} if self.stack else {}),
        }

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> ChainSpec:
        return ChainSpec(
            seed=int(d["seed"]),
            family=str(d.get("family", "f32")),
            length=int(d.get("length", 6)),
            weights=tuple((str(k), float(v)) for k, v in d.get("weights", [])),
            homogeneous=d.get("homogeneous"),
            executor_hint=str(d.get("executor_hint", "any")),
            version=int(d.get("version", SAMPLER_VERSION)),
            motif=bool(d.get("motif", False)),
            small=bool(d.get("small", False)),
            column=str(d.get("column", "")),
            stack=bool(d.get("stack", False)),
        )


def draw_specs(
    rng: np.random.Generator,
    count: int,
    *,
    weights: Mapping[str, float] | None = None,
    homogeneous_share: float = 0.7,
    single_share: float = 0.6,
    q8_share: float = 0.15,
    hybrid_share: float = 0.05,
    motif_share: float = 0.5,
    small_share: float = 0.08,
    column_share: float = 0.05,
    stack_share: float = 0.04,
    executor_hint: str = "any",
) -> list[ChainSpec]:
    """``count`` chain specs: a share homogeneous (one class, drawn by ``weights``), most of
    those a single kernel (the most informative measurement of one configuration), the rest
    mixed chains of 3 to 10 kernels; a share int8. A share ``small_share`` are long chains
    (12 to 40 kernels, half of them of one class) of tiny tensors: streaming models run dozens
    of kernels of a few hundred bytes, whose marginal cost a chain of one or two such kernels
    cannot separate from the fixed costs of an invocation. A share ``column_share`` are
    *column chains* (:meth:`_Chain.m_column`): 4 to 16 steps over one column of 1 to 4 rows
    and up to 256 channels, half of them int8, two in five repeating one step kind. A share
    ``stack_share`` are *stacks* (:meth:`_Chain.m_stack`): 2 to 24 copies of one column step,
    configuration and width identical, so that the chain's time less its fixed costs is that
    many times one configuration's cost in context."""
    w = dict(CLASS_WEIGHTS)
    if weights:
        w.update(weights)
    kinds = sorted(COLUMN_STEPS)

    def column_spec(column: str, lengths: tuple[int, int], stack: bool = False) -> ChainSpec:
        return ChainSpec(
            seed=int(rng.integers(0, 2**31 - 1)),
            family="q8" if rng.random() < 0.5 else "f32",
            length=int(rng.integers(*lengths)),
            executor_hint=executor_hint,
            small=True,
            column=column,
            stack=stack,
        )

    out = []
    for _ in range(count):
        if rng.random() < column_share:
            column = str(kinds[int(rng.integers(len(kinds)))]) if rng.random() < 0.4 else "mixed"
            out.append(column_spec(column, (4, 17)))
            continue
        if rng.random() < stack_share:
            out.append(column_spec(str(kinds[int(rng.integers(len(kinds)))]), (2, 25), True))
            continue
        r = rng.random()
        family = "q8" if r < q8_share else ("hy" if r < q8_share + hybrid_share else "f32")
        allowed = [c for c in FAMILIES[family] if w.get(c, 0) > 0]
        if executor_hint == "xnnpack":
            allowed = [c for c in allowed if c not in BUILTIN_ONLY] or allowed
        homo = None
        if family != "hy" and rng.random() < small_share:
            # half of them one class: dozens of tiny kernels of one type pin down what one
            # costs (a chain of one such kernel is mostly the invocation's fixed cost)
            if rng.random() < 0.5:
                p = np.array([w[c] for c in allowed], dtype=np.float64)
                homo = str(allowed[int(rng.choice(len(allowed), p=p / p.sum()))])
            out.append(
                ChainSpec(
                    seed=int(rng.integers(0, 2**31 - 1)),
                    family=family,
                    length=int(rng.integers(12, 41)),
                    weights=tuple(sorted((c, float(w[c])) for c in allowed)),
                    homogeneous=homo,
                    executor_hint=executor_hint,
                    small=True,
                )
            )
            continue
        if rng.random() < homogeneous_share:
            p = np.array([w[c] for c in allowed], dtype=np.float64)
            homo = str(allowed[int(rng.choice(len(allowed), p=p / p.sum()))])
        motif = False
        if homo:
            length = 1 if rng.random() < single_share else int(rng.integers(2, 7))
        elif family != "hy" and rng.random() < motif_share:
            motif = True  # blocks of real networks, drawn at random sizes
            length = int(rng.integers(1, 4))
        else:
            length = int(rng.integers(3, 11))
        out.append(
            ChainSpec(
                seed=int(rng.integers(0, 2**31 - 1)),
                family=family,
                length=length,
                weights=tuple(sorted((c, float(w[c])) for c in allowed)),
                homogeneous=homo,
                executor_hint=executor_hint,
                motif=motif,
            )
        )
    return out


def build_chain(spec: ChainSpec) -> Model:
    """The chain model of ``spec`` (deterministic)."""
    if spec.version not in BUILDS or (spec.stack and spec.version < 18):
        raise ValueError(
            f"chain spec of sampler version {spec.version}; this edgepart builds versions "
            f"{', '.join(map(str, sorted(BUILDS)))}"
        )
    return _Chain(spec).build()


# ---------------------------------------------------------------------------- the sampler


@dataclass
class _T:
    """A tensor of the chain: index, shape, dtype, quantization (int8 only)."""

    idx: int
    shape: tuple[int, ...]
    dtype: DType = F32
    q: tuple[float, int] | None = None  # (scale, zero point)


# ---------------------------------------------------------------------------- motifs


class _Blocks:
    """Network blocks at random sizes (mixed into :class:`_Chain`): the op patterns real models
    repeat, so kernels are also measured next to the neighbours they usually have."""

    def conv_op(self: Any, x: _T, cout: int, k: int = 1, stride: int = 1, act: str = "NONE",
                kw: int | None = None) -> _T:  # fmt: skip
        _, h, w, cin = x.shape
        kw = k if kw is None else kw
        ho, wo = -(-h // stride), -(-w // stride)
        wt = self.conv_weights((cout, k, kw, cin))
        b = self.bias(cout, x)
        y = self.tensor((1, ho, wo, cout), like=x)
        self.op("CONV_2D", [x.idx, wt, b], [y], options={"padding": "SAME", "stride_h": stride,
                "stride_w": stride, "fused_activation_function": act})  # fmt: skip
        self.macs += ho * wo * cout * k * kw * cin
        return y  # type: ignore[no-any-return]

    def dw_op(self: Any, x: _T, k: int = 3, stride: int = 1, act: str = "NONE") -> _T:
        _, h, w, c = x.shape
        ho, wo = -(-h // stride), -(-w // stride)
        wt = self.weights((1, k, k, c), k * k, qdim=3)
        b = self.bias(c, x)
        y = self.tensor((1, ho, wo, c), like=x)
        self.op("DEPTHWISE_CONV_2D", [x.idx, wt, b], [y], options={"padding": "SAME",
                "stride_h": stride, "stride_w": stride, "depth_multiplier": 1,
                "fused_activation_function": act})  # fmt: skip
        self.macs += ho * wo * c * k * k
        return y  # type: ignore[no-any-return]

    def bin_op(self: Any, op: str, a: _T, b: _T | int, act: str = "NONE") -> _T:
        bi = b.idx if isinstance(b, _T) else b
        y = self.tensor(a.shape, like=a)
        opts = {"fused_activation_function": act} if op in ("ADD", "SUB", "MUL") else None
        self.op(op, [a.idx, bi], [y], options=opts)
        return y  # type: ignore[no-any-return]

    def un_op(self: Any, op: str, x: _T, options: dict[str, Any] | None = None) -> _T:
        """``op`` on ``x``; int8 ``LOGISTIC`` and ``TANH`` get the fixed output quantization
        LiteRT requires, other ops keep the input's."""
        q = x.q
        if self.q8 and op in ("LOGISTIC", "TANH"):
            q = (1.0 / 256, -128) if op == "LOGISTIC" else (1.0 / 128, 0)
        y = self.tensor(x.shape, like=x, q=q)
        self.op(op, [x.idx], [y], options=options)
        return y  # type: ignore[no-any-return]

    def scale_const(self: Any, shape: tuple[int, ...]) -> int:
        """Constants of 0.5 to 1.5 (a folded normalization's scales); int8 in int8 chains."""
        val = self.rng.uniform(0.5, 1.5, size=shape).astype(np.float32)
        if not self.q8:
            return self.const(val)  # type: ignore[no-any-return]
        q = Quantization(np.array([0.01], np.float32), np.array([0], np.int64))
        return self.const(np.clip(np.round(val / 0.01), -127, 127).astype(np.int8), q)  # type: ignore[no-any-return]

    def act_op(self: Any, x: _T, kind: str) -> _T:
        """A separate activation (``hswish`` and ``swish`` are what exporters emit)."""
        if kind == "hswish":
            return self.un_op("HARD_SWISH", x)  # type: ignore[no-any-return]
        if kind == "swish" and not self.q8:
            return self.bin_op("MUL", x, self.un_op("LOGISTIC", x))  # type: ignore[no-any-return]
        if kind == "prelu" and not self.q8:
            a = self.const(np.full((x.shape[-1],), 0.25, np.float32))
            y = self.tensor(x.shape, like=x)
            self.op("PRELU", [x.idx, a], [y])
            return y  # type: ignore[no-any-return]
        return x

    def motif(self: Any) -> None:
        kinds = {"inverted_residual": 3.0, "bottleneck": 1.5, "blaze": 1.5, "plain": 1.0,
                 "transformer": 1.0, "audio": 0.7, "stream": 0.7}  # fmt: skip
        if self.q8:
            kinds = {"inverted_residual": 3.0, "bottleneck": 1.0, "plain": 1.0, "stream": 1.0}
        getattr(self, "m_" + str(self.pick(kinds)))()

    def block_input(self: Any, cmin: int = 8, cmax: int = 320) -> _T:
        c = self.cur
        if c is not None and len(c.shape) == 4 and self.u() < 0.7:
            return c  # type: ignore[no-any-return]
        h = self.logu(4, 112)
        ch = self.chan(cmin, cmax)
        while h * h * ch * 6 > MAX_ELEMS and h > 4:
            h //= 2
        return self.new_input((1, h, h, ch))  # type: ignore[no-any-return]

    def m_inverted_residual(self: Any) -> None:
        x = self.block_input()
        cin = x.shape[-1]
        t = int(self.pick({1: 0.15, 3: 0.15, 4: 0.2, 6: 0.5}))
        stride = 2 if self.u() < 0.25 and x.shape[1] > 1 else 1
        k = int(self.pick({3: 0.75, 5: 0.25}))
        act = str(self.pick({"RELU6": 0.6, "hswish": 0.25, "NONE": 0.15}))
        fused = act if act in ("RELU6", "NONE") else "NONE"
        cout = cin if stride == 1 and self.u() < 0.6 else self.chan(8, 320)
        h = x if t == 1 else self.act_op(self.conv_op(x, cin * t, 1, 1, fused), act)
        h = self.act_op(self.dw_op(h, k, stride, fused), act)
        if self.u() < 0.3 and not self.q8:  # squeeze-and-excitation
            m = self.tensor((1, 1, 1, h.shape[-1]), like=h)
            self.op("MEAN", [h.idx, self.const(np.array([1, 2], np.int32))], [m],
                    options={"keep_dims": True})  # fmt: skip
            r = self.conv_op(m, max(h.shape[-1] // 4, 8), 1, 1, "RELU")
            e = self.un_op("LOGISTIC", self.conv_op(r, h.shape[-1], 1, 1))
            h = self.bin_op("MUL", h, e)
        y = self.conv_op(h, cout, 1, 1, "NONE")
        if stride == 1 and cout == cin:
            y = self.bin_op("ADD", y, x)
        self.set(y)

    def m_bottleneck(self: Any) -> None:
        x = self.block_input(16, 512)
        cin = x.shape[-1]
        mid = max(8, int(cin * float(self.pick({0.25: 0.6, 0.5: 0.4}))))
        stride = 2 if self.u() < 0.2 and x.shape[1] > 1 else 1
        h = self.conv_op(x, mid, 1, 1, "RELU")
        h = self.conv_op(h, mid, 3, stride, "RELU")
        y = self.conv_op(h, cin, 1, 1, "NONE")
        skip = x if stride == 1 else self.conv_op(x, cin, 1, stride, "NONE")
        self.set(self.bin_op("ADD", y, skip, "RELU"))

    def m_blaze(self: Any) -> None:
        x = self.block_input(8, 128)
        _, hh, ww, cin = x.shape
        stride = 2 if self.u() < 0.3 and hh > 1 else 1
        cout = cin + int(self.pick({0: 0.5, 8: 0.2, 16: 0.15, 32: 0.15}))
        h = self.dw_op(x, int(self.pick({3: 0.4, 5: 0.6})), stride)
        h = self.conv_op(h, cout, 1, 1)
        skip = x
        if stride == 2:
            ho, wo = -(-hh // 2), -(-ww // 2)
            p = self.tensor((1, ho, wo, cin), like=x, q=x.q)
            self.op("MAX_POOL_2D", [x.idx], [p], options={"padding": "SAME", "stride_h": 2,
                    "stride_w": 2, "filter_height": 2, "filter_width": 2})  # fmt: skip
            skip = p
        if cout > cin:
            pads = np.array([[0, 0], [0, 0], [0, 0], [0, cout - cin]], np.int32)
            sp = self.tensor((1, *skip.shape[1:3], cout), like=skip, q=skip.q)
            self.op("PAD", [skip.idx, self.const(pads)], [sp])
            skip = sp
        y = self.bin_op("ADD", h, skip)
        act = str(self.pick({"RELU": 0.6, "prelu": 0.4}))
        self.set(self.un_op("RELU", y) if act == "RELU" else self.act_op(y, act))

    def m_plain(self: Any) -> None:
        x = self.block_input(3, 256)
        for _ in range(int(self.rng.integers(1, 4))):
            stride = 2 if self.u() < 0.2 and x.shape[1] > 2 else 1
            x = self.conv_op(x, self.chan(8, 256), int(self.pick({3: 0.8, 1: 0.2})), stride,
                             str(self.pick({"RELU": 0.7, "NONE": 0.3})))  # fmt: skip
        self.set(x)

    def m_transformer(self: Any) -> None:
        c = self.cur
        if c is not None and len(c.shape) == 3 and self.u() < 0.6:
            x = c
        else:
            width = int(self.pick({64: 0.3, 128: 0.3, 256: 0.3, 512: 0.1}))
            x = self.new_input((1, self.logu(4, 256), width))
        _, t, d = x.shape
        heads = int(self.pick({1: 0.2, 2: 0.2, 4: 0.4, 8: 0.2}))
        dh = max(d // heads, 1)

        def norm(v: _T) -> _T:
            ax = self.const(np.array([2], np.int32))
            m = self.tensor((1, t, 1), like=v)
            self.op("MEAN", [v.idx, ax], [m], options={"keep_dims": True})
            sq = self.tensor(v.shape, like=v)
            self.op("SQUARED_DIFFERENCE", [v.idx, m.idx], [sq])
            var = self.tensor((1, t, 1), like=v)
            self.op("MEAN", [sq.idx, ax], [var], options={"keep_dims": True})
            r = self.un_op(
                "RSQRT", self.bin_op("ADD", var, self.const(np.array([1e-5], np.float32)))
            )
            n = self.bin_op("MUL", self.bin_op("SUB", v, m), r)
            return self.bin_op("MUL", n, self.const(np.ones(d, np.float32)))  # type: ignore[no-any-return]

        def fc(v: _T, n: int, act: str = "NONE") -> _T:
            wt = self.weights((n, v.shape[-1]), v.shape[-1], qdim=None)
            y = self.tensor((*v.shape[:-1], n), like=v)
            self.op("FULLY_CONNECTED", [v.idx, wt, self.bias(n, v)], [y],
                    options={"keep_num_dims": True, "fused_activation_function": act})  # fmt: skip
            self.macs += _numel(v.shape[:-1]) * v.shape[-1] * n
            return y  # type: ignore[no-any-return]

        def heads_of(v: _T) -> _T:
            r = self.tensor((t, heads, dh), like=v)
            self.op("RESHAPE", [v.idx, self.const(np.array([t, heads, dh], np.int32))], [r],
                    options={"new_shape": [t, heads, dh]})  # fmt: skip
            tr = self.tensor((heads, t, dh), like=v)
            self.op("TRANSPOSE", [r.idx, self.const(np.array([1, 0, 2], np.int32))], [tr])
            return tr  # type: ignore[no-any-return]

        h = norm(x)
        q, k, v = (
            heads_of(fc(h, heads * dh)),
            heads_of(fc(h, heads * dh)),
            heads_of(fc(h, heads * dh)),
        )
        s = self.tensor((heads, t, t), like=q)
        self.op("BATCH_MATMUL", [q.idx, k.idx], [s], options={"adj_x": False, "adj_y": True})
        a = self.tensor((heads, t, t), like=s)
        self.op("SOFTMAX", [s.idx], [a], options={"beta": 1.0})
        o = self.tensor((heads, t, dh), like=v)
        self.op("BATCH_MATMUL", [a.idx, v.idx], [o], options={"adj_x": False, "adj_y": False})
        self.macs += 2 * heads * t * t * dh
        ot = self.tensor((t, heads, dh), like=o)
        self.op("TRANSPOSE", [o.idx, self.const(np.array([1, 0, 2], np.int32))], [ot])
        om = self.tensor((1, t, heads * dh), like=ot)
        self.op("RESHAPE", [ot.idx, self.const(np.array([1, t, heads * dh], np.int32))], [om],
                options={"new_shape": [1, t, heads * dh]})  # fmt: skip
        x2 = self.bin_op("ADD", fc(om, d), x)
        f = fc(norm(x2), 4 * d)
        f = self.un_op("GELU", f) if self.u() < 0.5 else self.un_op("RELU", f)
        self.set(self.bin_op("ADD", fc(f, d), x2))

    def m_audio(self: Any) -> None:
        x = self.audio()
        for _ in range(int(self.rng.integers(1, 4))):
            k = int(self.pick({3: 0.5, 5: 0.3, 1: 0.2}))
            x = self.conv_op(x, self.chan(8, 128), k, 1, str(self.pick({"RELU": 0.7,
                             "NONE": 0.3})), kw=1)  # fmt: skip
        self.set(x)

    def is_column(self: Any, x: _T | None) -> bool:
        """Whether ``x`` is one column of a few frames (``[1, t, 1, C]``, t <= 4), what a
        streaming layer takes and gives."""
        return (x is not None and len(x.shape) == 4 and x.shape[0] == 1 and x.shape[2] == 1
                and x.shape[1] <= 4 and x.shape[3] <= COLUMN_CHANNELS)  # fmt: skip

    def m_stream(self: Any, wide: bool = False) -> None:
        """A layer of a streaming model (keyword spotters in the style of Google's
        ``kws_streaming``): each invocation brings a few new frames; the layer keeps the last
        frames of its window in a resource variable (zeroed once, by a ``CALL_ONCE``
        subgraph), reads them, joins the new frames, stores the newest back, and runs a
        temporal convolution over the window (a full one, or a depthwise one then a pointwise
        one). Dozens of such kernels of a few hundred bytes make a whole model. ``wide``: the
        channels may pass a small chain's cap (a column chain's, up to 256)."""
        c = self.cur
        if self.is_column(c) and (self.spec.stack or self.u() < 0.8):
            x = c
        else:
            t = int(self.pick(STREAM_FRAMES))
            x = self.new_input((1, t, 1, self.chan(8, COLUMN_CHANNELS if wide else 128, wide=wide)))
        t, ch = x.shape[1], x.shape[3]
        kk = int(self.pick({2: 0.2, 3: 1.0, 5: 1.0, 9: 0.5, 13: 0.3, 21: 0.3}))  # kernel
        keep = kk - 1  # frames kept: with the t new ones, a window of t outputs
        state = self.state((1, keep, 1, ch), x)
        old = self.tensor((1, keep, 1, ch), like=x, q=x.q)
        self.op("READ_VARIABLE", [self.var_handle(state).idx], [old])
        win = self.tensor((1, keep + t, 1, ch), like=x, q=x.q)
        self.op("CONCATENATION", [old.idx, x.idx], [win], options={"axis": 1})
        new = self.tensor(old.shape, like=x, q=x.q)
        ends = np.array(win.shape, np.int32)
        begin = np.array([0, t, 0, 0], np.int32)
        self.op("STRIDED_SLICE", [win.idx, self.const(begin), self.const(ends),
                                  self.const(np.ones(4, np.int32))], [new])  # fmt: skip
        self.op("ASSIGN_VARIABLE", [self.var_handle(state).idx, new.idx], [])
        act = str(self.pick({"RELU": 0.6, "NONE": 0.4}))
        cout = ch if self.spec.stack else self.chan(8, COLUMN_CHANNELS if wide else 128, wide=wide)
        if self.u() < 0.5:
            wt = self.weights((cout, kk, 1, ch), kk * ch)
            b = self.bias(cout, win)
            y = self.tensor((1, t, 1, cout), like=win)
            self.op("CONV_2D", [win.idx, wt, b], [y], options={"padding": "VALID",
                    "stride_h": 1, "stride_w": 1, "fused_activation_function": act})  # fmt: skip
            self.macs += t * cout * kk * ch
        else:
            wt = self.weights((1, kk, 1, ch), kk, qdim=3)
            b = self.bias(ch, win)
            y = self.tensor((1, t, 1, ch), like=win)
            self.op("DEPTHWISE_CONV_2D", [win.idx, wt, b], [y], options={"padding": "VALID",
                    "stride_h": 1, "stride_w": 1, "depth_multiplier": 1,
                    "fused_activation_function": act})  # fmt: skip
            self.macs += t * ch * kk
            if self.u() < 0.7:
                y = self.conv_op(y, cout, 1, 1, act)
        self.set(y)

    def m_column(self: Any, kind: str) -> None:
        """One step of a *column chain*: one column of 1 to 4 frames and 8 to 256 channels
        through a streaming layer (:meth:`m_stream`), a pointwise convolution, a fully
        connected layer over each frame, an elementwise op with per-channel constants or
        another frame, or an activation; ``kind`` is one of :data:`COLUMN_STEPS` or
        ``"mixed"`` (drawn per step).

        Keyword spotters and wake-word detectors run dozens of such kernels of a few hundred
        bytes one after another, each a few tens of nanoseconds. The other chains rarely run
        more than one of them in a row, and the fit priced one-row convolutions at one and a
        half to twice what they cost in such a stack (docs/latency_predictors.md, twentieth
        session)."""
        if kind == "mixed":
            kind = str(self.pick(COLUMN_STEPS))
        if kind == "stream":
            self.m_stream(wide=True)
            return
        x = self.cur
        if not self.is_column(x) or (not self.spec.stack and self.u() < 0.1):
            t = int(self.pick(STREAM_FRAMES))
            x = self.new_input((1, t, 1, self.chan(8, COLUMN_CHANNELS, wide=True)))
        assert x is not None
        c = x.shape[3]
        if kind == "conv":
            cout = c if self.spec.stack else self.chan(8, COLUMN_CHANNELS, wide=True)
            y = self.conv_op(x, cout, 1, 1, self.act())
        elif kind == "fc":
            n = c if self.spec.stack else self.chan(1 if self.u() < 0.15 else 8,
                                                    COLUMN_CHANNELS, wide=True)  # fmt: skip
            ins = [x.idx, self.weights((n, c), c, qdim=None)]
            if self.u() < 0.85:
                ins.append(self.bias(n, x))
            y = self.tensor((*x.shape[:-1], n), like=x)
            self.op("FULLY_CONNECTED", ins, [y], options={"keep_num_dims": True,
                    "fused_activation_function": self.act()})  # fmt: skip
            self.macs += _numel(x.shape) * n
        elif kind == "binary":
            op = str(self.pick({"ADD": 0.5, "MUL": 0.4, "SUB": 0.1}))
            r = self.u()
            if r < 0.5:  # per-channel constants (a folded normalization)
                other = self.scale_const((c,))
            else:  # another frame of the same shape (a residual), or the column itself
                same = [p for p in self.pool[:-1] if p.shape == x.shape and p.dtype == x.dtype]
                other = same[-1].idx if same and r < 0.8 else x.idx
            y = self.bin_op(op, x, other, str(self.pick({"NONE": 0.7, "RELU": 0.3})))
        else:
            ops = ({"RELU": 0.3, "RELU6": 0.2, "LOGISTIC": 0.2, "TANH": 0.1, "HARD_SWISH": 0.2}
                   if self.q8 else {"RELU": 0.3, "RELU6": 0.15, "LOGISTIC": 0.2, "TANH": 0.15,
                                    "HARD_SWISH": 0.2})  # fmt: skip
            y = self.un_op(str(self.pick(ops)), x)
        self.set(y)

    def m_stack(self: Any, kind: str) -> None:
        """A *stack*: ``length`` steps of :meth:`m_column` of one configuration, one after
        another over one column whose width they keep (a stack chain, ``ChainSpec.stack``).

        Every step draws from a generator seeded alike, so each draws what the first drew:
        the same kernels with the same shapes, parameters and weights, each reading the one
        before. Stacks of 2 to 24 steps pin down what one configuration adds in context, the
        way real streaming layers repeat one width (four of a wake-word model's five layers
        have 64 channels): measured on the Intel host, a one-row 8-bit 1x1 convolution of 8 to 64
        channels costs 124-140 ns per layer in such a stack and the streaming state update (two
        slices and a join, up to 128 channels) 55-68 ns, where a fit to chains that change
        width at every step gave 148-245 and 130-151 (docs/latency_predictors.md,
        twenty-fourth session)."""
        t = int(self.pick(STREAM_FRAMES))
        self.set(self.new_input((1, t, 1, self.chan(8, COLUMN_CHANNELS, wide=True))))
        for _ in range(self.spec.length):
            self.rng = np.random.default_rng([self.spec.seed, self.spec.version, 1])
            self.m_column(kind)


@dataclass
class _Chain(_Blocks):
    spec: ChainSpec
    rng: np.random.Generator = field(init=False)
    mb: ModelBuilder = field(init=False)
    g: SubgraphBuilder = field(init=False)
    inputs: list[_T] = field(default_factory=list)
    pool: list[_T] = field(default_factory=list)
    cur: _T | None = None
    macs: float = 0.0
    wbytes: int = 0
    n: int = 0
    init: SubgraphBuilder | None = None  # the CALL_ONCE initializer of resource variables

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng([self.spec.seed, self.spec.version])
        self.mb = ModelBuilder(description="edgepart calibration chain")
        self.g = self.mb.subgraph("main")
        self.q8 = self.spec.family == "q8"
        self.hybrid = self.spec.family == "hy"
        self._wscale = np.ones(1, np.float32)

    # ------------------------------------------------------------------ draws
    def u(self) -> float:
        return float(self.rng.random())

    def pick(self, options: Mapping[Any, float]) -> Any:
        keys = list(options)
        p = np.array([options[k] for k in keys], dtype=np.float64)
        return keys[int(self.rng.choice(len(keys), p=p / p.sum()))]

    def logu(self, lo: float, hi: float, *, wide: bool = False) -> int:
        """Log-uniform from ``lo`` to ``hi``; in small chains at most :data:`SMALL_CAP`, unless
        ``wide`` (a column chain's channels)."""
        if self.spec.small and not wide:
            hi = max(lo, min(hi, SMALL_CAP))
        return round(math.exp(self.rng.uniform(math.log(lo), math.log(hi))))

    def chan(self, lo: int = 1, hi: int = 1024, *, wide: bool = False) -> int:
        """Channels: mostly 8 and up, usually a multiple of 8; now and then a few (heads,
        RGB inputs, masks). ``wide``: past a small chain's cap (:meth:`logu`)."""
        if lo < 8 < hi and self.u() < 0.85:
            lo = 8
        c = max(self.logu(lo, hi, wide=wide), 1)
        if c > 8 and self.u() < 0.8:
            c = max(8, round(c / 8) * 8)
        return c

    def side(self) -> int:
        """Spatial size: mostly 4 to 224 (where networks spend their time), else 1 to 256;
        1 to 4 in small chains."""
        if self.spec.small:
            return self.logu(1, 4)
        h = self.logu(4, 224) if self.u() < 0.8 else self.logu(1, 256)
        return max(h, 1)

    # ------------------------------------------------------------------ tensors
    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def qparams(self) -> tuple[float, int]:
        return (float(self.rng.uniform(0.01, 0.1)), int(self.rng.integers(-20, 20)))

    def new_input(self, shape: tuple[int, ...], dtype: DType | None = None) -> _T:
        """A fresh model input (float; quantized right away in int8 chains)."""
        shape = tuple(int(max(d, 1)) for d in shape)
        idx = self.g.input(self.name("in"), F32, shape)
        t = _T(idx, shape, F32)
        self.inputs.append(t)
        if self.q8 and dtype != F32:
            t = self.quantize(t)
        return t

    def tensor(self, shape: tuple[int, ...], like: _T | None = None, dtype: DType | None = None,
               q: tuple[float, int] | None = None) -> _T:  # fmt: skip
        dt = dtype if dtype is not None else (like.dtype if like is not None else F32)
        qq = q
        if dt == I8 and qq is None:
            qq = self.qparams()
        quant = None
        if dt == I8 and qq is not None:
            quant = Quantization(np.array([qq[0]], np.float32), np.array([qq[1]], np.int64))
        idx = self.g.tensor(self.name("t"), dt, shape, quantization=quant)
        return _T(idx, tuple(shape), dt, qq if dt == I8 else None)

    def const(self, value: np.ndarray, q: Quantization | None = None) -> int:
        self.wbytes += int(value.nbytes)
        return self.g.constant(self.name("c"), value, quantization=q)

    def weights(self, shape: tuple[int, ...], fan_in: int, qdim: int | None = 0) -> int:
        """He-scaled random weights; int8 chains: symmetric int8, per channel along ``qdim``
        (None: per tensor). The scales are kept for the bias (:meth:`bias`)."""
        std = math.sqrt(2.0 / max(fan_in, 1))
        w = self.rng.standard_normal(shape).astype(np.float32) * np.float32(std)
        if not self.q8 and not self.hybrid:
            return self.const(w)
        if qdim is None:
            scale = np.array([np.abs(w).max() / 127.0])
            qd = 0
        else:
            scale = np.moveaxis(np.abs(w), qdim, 0).reshape(shape[qdim], -1).max(axis=1) / 127
            qd = qdim
        scale = np.maximum(scale, 1e-6).astype(np.float32)
        bshape = [1] * len(shape)
        bshape[qd] = len(scale)
        wq = np.clip(np.round(w / scale.reshape(bshape)), -127, 127).astype(np.int8)
        self._wscale = scale
        return self.const(wq, Quantization(scale, np.zeros(len(scale), np.int64), qd))

    def sparse_f16_weights(self, shape: tuple[int, ...], fan_in: int) -> int:
        """Pointwise weights stored as MediaPipe's sparse models store them: float16, the
        input-channel axis compressed (CSR, 30 to 70% kept), unpacked by a ``DENSIFY`` and a
        ``DEQUANTIZE``; returns the float32 weight tensor."""
        std = math.sqrt(2.0 / max(fan_in, 1))
        rows, cols = int(np.prod(shape[:-1])), int(shape[-1])
        keep = self.rng.random((rows, cols)) < float(self.rng.uniform(0.3, 0.7))
        keep[:, 0] |= ~keep.any(axis=1)  # no empty rows
        values = (self.rng.standard_normal(int(keep.sum())) * std).astype(np.float16)
        seg = np.concatenate([[0], np.cumsum(keep.sum(axis=1))])
        sparsity = Sparsity(
            traversal_order=tuple(range(len(shape))),
            block_map=(),
            dim_metadata=(
                *(DimensionMetadata("DENSE", int(d)) for d in shape[:-1]),
                DimensionMetadata(
                    "SPARSE_CSR",
                    0,
                    array_segments=_index_array(seg),
                    array_indices=_index_array(np.nonzero(keep)[1]),
                ),
            ),
        )
        self.wbytes += int(values.nbytes)
        packed = self.g.constant(self.name("c"), values, sparsity=sparsity, shape=shape)
        dense = self.tensor(shape, dtype=F16)
        self.g.op("DENSIFY", [packed], [dense.idx])
        w = self.tensor(shape, dtype=F32)
        self.g.op("DEQUANTIZE", [dense.idx], [w.idx])
        return w.idx

    def conv_weights(self, shape: tuple[int, int, int, int]) -> int:
        """A convolution's ``[cout, kh, kw, cin]`` weights; a 1x1 one's in float chains
        sometimes sparse fp16 (:data:`SPARSE_F16_SHARE`)."""
        fan_in = shape[1] * shape[2] * shape[3]
        pointwise = shape[1] == shape[2] == 1 and not self.q8 and not self.hybrid
        if pointwise and self.u() < SPARSE_F16_SHARE:
            return self.sparse_f16_weights(shape, fan_in)
        return self.weights(shape, fan_in)

    def bias(self, n: int, x: _T) -> int:
        """A zero bias; int8 chains: int32 with scale input scale x weight scale, per channel
        for per-channel weights and one scale for per-tensor ones, as LiteRT requires (a
        per-channel bias beside per-tensor weights has no tensor-wide scale, and LiteRT's
        builtin fully connected kernel then refuses whenever that product exceeds a fiftieth
        of the output scale)."""
        if not self.q8:
            return self.const(np.zeros(n, np.float32))
        ws = self._wscale if len(self._wscale) in (1, n) else np.full(n, self._wscale[0])
        s = ((x.q[0] if x.q else 0.05) * ws).astype(np.float32)
        q = Quantization(s, np.zeros(len(s), np.int64))
        return self.const(np.zeros(n, np.int32), q)

    def quantize(self, x: _T) -> _T:
        y = self.tensor(x.shape, dtype=I8)
        self.g.op("QUANTIZE", [x.idx], [y.idx])
        return y

    def op(self, name: str, ins: list[int], outs: list[_T], **kw: Any) -> None:
        self.g.op(name, ins, [o.idx for o in outs], **kw)

    def state(self, shape: tuple[int, ...], like: _T) -> str:
        """A new resource variable of ``shape`` (dtype and quantization of ``like``), set to
        zeros once by the chain's ``CALL_ONCE`` initializer; returns its shared name."""
        if self.init is None:
            self.init = self.mb.subgraph("init")
        name = self.name("state")
        h = self.init.tensor(self.name("h"), DType.RESOURCE, ())
        self.init.op("VAR_HANDLE", [], [h], options={"shared_name": name})
        quant = None
        if like.dtype == I8 and like.q is not None:
            quant = Quantization(np.array([like.q[0]], np.float32),
                                 np.array([like.q[1]], np.int64))  # fmt: skip
        zp = like.q[1] if like.q else 0
        zero = np.full(shape, zp, np.int8 if like.dtype == I8 else np.float32)
        z = self.init.constant(self.name("z"), zero, quantization=quant)
        self.init.op("ASSIGN_VARIABLE", [h, z], [])
        return name

    def var_handle(self, name: str) -> _T:
        """A ``VAR_HANDLE`` of the variable ``name`` in the main graph."""
        h = self.tensor((), dtype=DType.RESOURCE)
        self.op("VAR_HANDLE", [], [h], options={"shared_name": name})
        return h

    # ------------------------------------------------------------------ state
    def current(self, rank: int | None = None, *, fresh: float = 0.25) -> _T | None:
        """The tensor to continue from, if it fits (else None: start fresh)."""
        c = self.cur
        if c is None or self.u() < fresh:
            return None
        if self.spec.small and _numel(c.shape) > SMALL_CAP * SMALL_CAP * 4:
            return None  # a small chain grown large (upsampling, padding): start small again
        if rank is not None and len(c.shape) != rank:
            return None
        return c

    def img(self, fresh: float = 0.25, cmax: int = 512) -> _T:
        c = self.current(4, fresh=fresh)
        if c is not None and c.shape[0] == 1 and c.shape[1] * c.shape[2] * c.shape[3] <= MAX_ELEMS:
            return c
        for _ in range(20):
            h = self.side()
            w = h if self.u() < 0.8 else max(1, int(h * self.rng.uniform(0.3, 3)))
            ch = self.chan(1, cmax)
            if h * w * ch <= MAX_ELEMS // 2:
                return self.new_input((1, h, w, ch))
        return self.new_input((1, 16, 16, 16))

    def audio(self) -> _T:
        t = self.logu(8, 1024)
        ch = self.chan(1, 256)
        if t * ch > MAX_ELEMS // 2:
            t = max(MAX_ELEMS // 2 // ch, 1)
        return self.new_input((1, t, 1, ch))

    def seq(self) -> _T:
        c = self.current(None, fresh=0.3)
        if c is not None and len(c.shape) in (2, 3) and _numel(c.shape) <= MAX_ELEMS:
            return c
        if self.u() < 0.5:
            return self.new_input((1, self.logu(1, 512), self.chan(4, 1024)))
        return self.new_input((self.logu(1, 64) if self.u() < 0.3 else 1, self.chan(4, 4096)))

    def anyt(self) -> _T:
        c = self.current(None, fresh=0.2)
        if c is not None and _numel(c.shape) <= MAX_ELEMS:
            return c
        r = self.u()
        if r < 0.55:
            return self.img(fresh=1.0)
        if r < 0.65:
            return self.audio()
        if r < 0.75:
            return self.tiny()
        return self.seq()

    def tiny(self) -> _T:
        """A few elements (streaming audio models, heads, normalization statistics)."""
        n = int(self.pick({1: 0.3, 0: 0.7}))
        shape: tuple[int, ...] = (1, 1) if n == 1 else (1, self.logu(2, 64))
        if self.u() < 0.3:
            shape = (1, 1, 1, shape[-1])
        return self.new_input(shape)

    def set(self, t: _T) -> None:
        self.cur = t
        self.pool.append(t)
        if len(self.pool) > 8:
            self.pool.pop(0)

    # ------------------------------------------------------------------ build
    def build(self) -> Model:
        spec = self.spec
        w = dict(spec.weights) or {
            c: v for c, v in CLASS_WEIGHTS.items() if spec.version >= 19 or c not in NEW_IN_19
        }
        allowed = {c: v for c, v in w.items() if c in FAMILIES[spec.family] and v > 0}
        splits = 0
        if spec.stack:
            self.m_stack(spec.column)
        for _ in range(spec.length if spec.column and not spec.stack else 0):
            self.m_column(spec.column)
        for _ in range(spec.length if spec.motif and not spec.column else 0):
            self.motif()
        for _ in range(0 if spec.motif or spec.column else spec.length):
            if spec.homogeneous:
                cls = spec.homogeneous
            else:
                cls = self.pick(allowed)
                if spec.executor_hint == "xnnpack" and cls in BUILTIN_ONLY:
                    if splits >= 1 or self.u() < 0.7:
                        cls = "unary"
                    splits += 1
            if self.macs > MAX_CHAIN_MACS:
                cls = "unary"
            elif spec.small and not spec.homogeneous and self.u() < 0.2:
                self.m_stream()  # streaming models are made of such layers
                continue
            getattr(self, "k_" + cls)()
        if self.cur is None:
            self.k_unary()
        assert self.cur is not None
        if self.init is not None:  # the variables' initializer runs first, once
            self.g.op("CALL_ONCE", [], [], options={"init_subgraph_index": 1})
            self.g.ops.insert(0, self.g.ops.pop())
        last = self.cur
        if self.q8 and last.dtype == I8:
            y = self.tensor(last.shape, dtype=F32)
            self.g.op("DEQUANTIZE", [last.idx], [y.idx])
            last = y
        # every value nobody reads is an output: runtimes drop ops whose results go nowhere
        read = {t for op in self.g.ops for t in op.inputs}
        made = [t for op in self.g.ops for t in op.outputs]
        outs = [t for t in dict.fromkeys(made) if t not in read]
        if last.idx not in outs:
            outs.append(last.idx)
        self.g.output(*outs)
        self.mb.add_signature(
            "serving_default",
            0,
            [(self.g.tensors[t.idx].name, t.idx) for t in self.inputs],
            [(f"out{k}", t) for k, t in enumerate(outs)],
        )
        return self.mb.build()

    # ------------------------------------------------------------------ kernel classes
    def act(self) -> str:
        return str(self.pick({"NONE": 0.45, "RELU": 0.25, "RELU6": 0.3}))

    def k_conv(self) -> None:
        r = self.u()
        sh = sw = bins = stem_cout = 0
        if r < 0.1:
            x = self.audio()
            kh, kw = int(self.pick({1: 0.3, 3: 0.4, 5: 0.2, 9: 0.1})), 1
        elif r < 0.16 and self.spec.version >= 20 and not self.spec.small and self.u() < 0.35:
            # the frames of a short-time Fourier transform as a convolution of a waveform: a
            # kernel per frequency bin (and part), n_fft samples long, one hop apart: a few to
            # a few hundred output positions over a long reduction (openWakeWord's mel
            # spectrogram: 1 x 512 kernels, 160 apart); wider and sparser than the banks below
            kh, kw = 1, int(self.pick({256: 0.5, 400: 0.7, 512: 1.0, 1024: 0.7, 2048: 0.3}))
            sh, sw = 1, int(self.pick({160: 0.4, kw // 4: 0.3, kw // 2: 0.3}))
            frames = self.logu(1, 256)
            if self.spec.version >= 22 and self.spec.family == "f32" and self.u() < 0.7:
                bins = kw // 2 + 1  # the work cap takes frames, not bins
                frames = max(1, min(frames, int(MAX_KERNEL_MACS // (bins * kw))))
            x = self.new_input((1, 1, kw + sw * (frames - 1), 1))
        elif r < 0.16:
            # 1-D filter banks of audio front ends: long kernels along a long axis
            x = self.signal()
            kh, kw = 1, self.logu(8, 256)
            sh, sw = 1, int(self.pick({1: 0.4, 2: 0.3, 4: 0.2, 8: 0.1}))
        elif r < 0.22:
            # asymmetric kernels (spectrogram convolutions, factorized 1xk/kx1 layers)
            x = self.img()
            kh = int(self.pick({1: 0.3, 3: 0.3, 5: 0.2, 7: 0.2}))
            kw = self.logu(1, 41)
            if self.u() < 0.5:
                kh, kw = kw, kh
            sh, sw = 1, int(self.pick({1: 0.7, 2: 0.15, 3: 0.15}))
        elif self.spec.version >= 23 and not self.spec.small and self.u() < STEM_SHARE:
            x, kh, sh, stem_cout = self.stem()
            kw, sw = kh, sh
        else:
            x = self.img()
            k = int(self.pick({1: 0.45, 3: 0.4, 5: 0.07, 7: 0.04, 0: 0.04}))
            if k == 0:
                kk = int(self.pick({3: 0.5, 5: 0.3, 7: 0.2}))
                kh, kw = (1, kk) if self.u() < 0.5 else (kk, 1)
            else:
                kh = kw = k
        _, h, w, cin = x.shape
        stride = 2 if (self.u() < 0.2 and h >= 2) else 1
        if not sh:
            sh = sw = stride
        stride = max(sh, sw)
        dil = 2 if (stride == 1 and self.u() < 0.04 and max(kh, kw) > 1) else 1
        pad = "VALID" if self.u() < 0.2 and h >= kh and w >= kw else "SAME"
        explicit_pad = pad == "VALID" and max(kh, kw) > 1 and self.u() < 0.5
        r = self.u()
        if bins:  # one kernel per frequency bin of a real transform (one part of the spectrum)
            cout = bins
        elif stem_cout:
            cout = stem_cout
        elif r < 0.5:
            cout = self.chan(1, 1024)
        else:
            cout = max(1, int(cin * float(self.pick({0.25: 1, 0.5: 1, 1: 2, 2: 2, 4: 1, 6: 1}))))
            cout = min(cout, 2048)
        if explicit_pad:
            p = (kh // 2, kw // 2)
            x = self.pad_spatial(x, p)
            _, h, w, cin = x.shape
        ekh, ekw = (kh - 1) * dil + 1, (kw - 1) * dil + 1
        if pad == "SAME":
            ho, wo = -(-h // sh), -(-w // sw)
        else:
            ho, wo = (h - ekh) // sh + 1, (w - ekw) // sw + 1
        if ho < 1 or wo < 1:
            pad, ho, wo = "SAME", -(-h // sh), -(-w // sw)
        # work and weight caps: shrink the output channels
        while cout > 1 and (ho * wo * cout * kh * kw * cin > MAX_KERNEL_MACS
                            or cout * kh * kw * cin * 4 > MAX_WEIGHT_BYTES):  # fmt: skip
            cout = max(1, cout // 2)
        if ho * wo * cout > MAX_ELEMS:
            cout = max(1, MAX_ELEMS // (ho * wo))
        wt = self.conv_weights((cout, kh, kw, cin))
        b = self.bias(cout, x)
        y = self.tensor((1, ho, wo, cout), like=x)
        self.op(
            "CONV_2D",
            [x.idx, wt, b],
            [y],
            options={"padding": pad, "stride_h": sh, "stride_w": sw,
                     "dilation_h_factor": dil, "dilation_w_factor": dil,
                     "fused_activation_function": self.act()},
        )  # fmt: skip
        self.macs += ho * wo * cout * kh * kw * cin
        self.set(y)
        if self.u() < 0.1:
            self.clamp()

    def stem(self) -> tuple[_T, int, int, int]:
        """An image network's first convolution: a fresh image of 1 to 4 channels (gray, RGB,
        RGBA) at the resolution networks take in, a 3 x 3 to 7 x 7 window, mostly two pixels
        apart, 8 to 64 output channels. Returns the input, window, stride and output channels."""
        cin = int(self.pick({1: 0.2, 2: 0.05, 3: 0.6, 4: 0.15}))
        h = self.logu(16, 320)
        w = h if self.u() < 0.7 else max(8, round(h * self.rng.uniform(0.5, 2.0)))
        k = int(self.pick({3: 0.7, 5: 0.1, 7: 0.2}))
        stride = int(self.pick({2: 0.75, 1: 0.25}))
        return self.new_input((1, h, w, cin)), k, stride, self.chan(8, 64)

    def signal(self) -> _T:
        """A long 1-D signal as NHWC ``[1, 1, W, C]`` (W up to 44,000 samples)."""
        c = self.current(4, fresh=0.5)
        if c is not None and c.shape[1] == 1 and c.shape[2] >= 64:
            return c
        w = self.logu(256, 44000)
        ch = int(self.pick({1: 0.5, 2: 0.1, 8: 0.2, 16: 0.2}))
        return self.new_input((1, 1, w, ch))

    def pad_spatial(self, x: _T, p: tuple[int, int]) -> _T:
        n, h, w, c = x.shape
        pads = self.const(np.array([[0, 0], [p[0], p[0]], [p[1], p[1]], [0, 0]], np.int32))
        y = self.tensor((n, h + 2 * p[0], w + 2 * p[1], c), like=x, q=x.q)
        self.op("PAD", [x.idx, pads], [y])
        return y

    def clamp(self) -> None:
        x = self.cur
        assert x is not None
        y = self.tensor(x.shape, like=x, q=x.q)
        self.op(str(self.pick({"RELU": 0.5, "RELU6": 0.5})), [x.idx], [y])
        self.set(y)

    def k_dwconv(self) -> None:
        r = self.u()
        stream = False
        if r < 0.1:
            x = self.audio()
            kh, kw = int(self.pick({3: 0.5, 5: 0.3, 9: 0.2})), 1
        elif r < 0.22:
            # a streaming model's temporal layer (as in :meth:`m_stream`): a window of the
            # last frames, a tall kernel over it, one to four output rows. Drawn here too,
            # not only inside mixed chains, so that chains of this kernel alone pin its cost
            # down. A fit that saw it only beside other kernels priced a one-row 13-tap int8
            # depthwise convolution of 64 channels (with its input's QUANTIZE) at 321 ns; 21
            # of them in a row took 184 ns each. Tall kernels weigh more than in m_stream.
            stream = True
            t = int(self.pick(STREAM_FRAMES))
            kh, kw = int(self.pick({2: 0.1, 3: 0.3, 5: 0.3, 9: 0.2, 13: 0.15, 21: 0.15})), 1
            x = self.new_input((1, kh - 1 + t, 1, self.chan(8, 256)))
        else:
            x = self.img()
            k = int(self.pick({3: 0.7, 5: 0.2, 7: 0.06, 1: 0.04}))
            kh = kw = k
        _, h, w, cin = x.shape
        stride = 2 if (not stream and self.u() < 0.25 and h >= 2) else 1
        mult = 2 if (not stream and self.u() < 0.05) else 1
        valid = stream or (self.u() < 0.2 and h >= kh and w >= kw)
        pad = "VALID" if valid else "SAME"
        if not stream and pad == "VALID" and max(kh, kw) > 1 and self.u() < 0.5:
            x = self.pad_spatial(x, (kh // 2, kw // 2))
            _, h, w, cin = x.shape
        if pad == "SAME":
            ho, wo = -(-h // stride), -(-w // stride)
        else:
            ho, wo = (h - kh) // stride + 1, (w - kw) // stride + 1
        cout = cin * mult
        if ho * wo * cout > MAX_ELEMS:
            mult, cout = 1, cin
        wt = self.weights((1, kh, kw, cout), kh * kw, qdim=3)
        b = self.bias(cout, x)
        y = self.tensor((1, ho, wo, cout), like=x)
        self.op(
            "DEPTHWISE_CONV_2D",
            [x.idx, wt, b],
            [y],
            options={"padding": pad, "stride_h": stride, "stride_w": stride,
                     "depth_multiplier": mult, "fused_activation_function": self.act()},
        )  # fmt: skip
        self.macs += ho * wo * cout * kh * kw
        self.set(y)
        if self.u() < 0.1:
            self.clamp()

    def k_tconv(self) -> None:
        x = self.img()
        _, h, w, cin = x.shape
        if h * w > 128 * 128:
            x = self.new_input((1, 16, 16, min(cin, 64)))
            _, h, w, cin = x.shape
        k = int(self.pick({2: 0.4, 3: 0.3, 4: 0.3}))
        cout = self.chan(1, 256)
        ho, wo = 2 * h, 2 * w
        while cout > 1 and (
            ho * wo * cout > MAX_ELEMS or h * w * cin * k * k * cout > MAX_KERNEL_MACS
        ):
            cout = max(1, cout // 2)
        wt = self.weights((cout, k, k, cin), k * k * cin)
        shape = self.const(np.array([1, ho, wo, cout], np.int32))
        y = self.tensor((1, ho, wo, cout), like=x)
        ins = [shape, wt, x.idx]
        if self.u() < 0.7:
            ins.append(self.bias(cout, x))
        self.op("TRANSPOSE_CONV", ins, [y], options={"padding": "SAME", "stride_h": 2,
                                                      "stride_w": 2})  # fmt: skip
        self.macs += h * w * cin * k * k * cout
        self.set(y)

    def k_fc(self) -> None:
        # a fifth on a fresh vector: the matrix-vector products of audio, keyword and
        # recurrent models (one row of a few hundred to a few thousand inputs), whose speed
        # turns on the output channels' last tile and on the weights staying in cache; a chain
        # reaches one row rarely otherwise (222 of 11,900 chains were a one-row FC alone,
        # 3 of them of 64 to 128 outputs and 0.1 to 1 MB of weights)
        x = self.new_input((1, self.chan(16, 4096))) if self.u() < 0.2 else self.anyt()
        keep = False
        if len(x.shape) == 4:
            k = x.shape[1] * x.shape[2] * x.shape[3]
            if k > 16384:
                x = self.seq()
        if len(x.shape) == 4:
            k, m = x.shape[1] * x.shape[2] * x.shape[3], x.shape[0]
            out_shape: tuple[int, ...] = (m, 0)
        else:
            k = x.shape[-1]
            m = _numel(x.shape) // max(k, 1)
            keep = len(x.shape) == 3 and self.u() < 0.7
            out_shape = (*x.shape[:-1], 0) if keep else (m, 0)
        nout = int(self.pick({0: 0.8, 1: 0.05, 10: 0.05, 1000: 0.1}))
        if nout == 0:
            nout = self.chan(1, 4096)
        # now and then a weight matrix far larger than any cache (embedding heads, big FCs)
        wcap = MAX_WEIGHT_BYTES * (4 if m <= 4 and self.u() < 0.15 else 1)
        while nout > 1 and (nout * k * 4 > wcap or m * k * nout > MAX_KERNEL_MACS):
            nout = max(1, nout // 2)
        if not self.q8 and not self.hybrid and nout * k <= MAX_ELEMS and self.u() < 0.1:
            # weights computed at run time, or passed into a control-flow subgraph as an
            # input (converters do that to a branch's weights): nothing can pack them ahead
            wt = self.new_input((nout, k)).idx
        else:
            wt = self.weights((nout, k), k, qdim=None)
        ins = [x.idx, wt]
        if self.u() < 0.85:
            ins.append(self.bias(nout, x))
        y = self.tensor((*out_shape[:-1], nout), like=x)
        self.op(
            "FULLY_CONNECTED",
            ins,
            [y],
            options={"keep_num_dims": keep, "fused_activation_function": self.act()},
        )
        self.macs += m * k * nout
        self.set(y)

    def k_bmm(self) -> None:
        b = int(self.pick({1: 0.4, 2: 0.1, 4: 0.2, 8: 0.15, 12: 0.15}))
        m, k, n = self.logu(1, 256), self.chan(4, 256), self.logu(1, 256)
        if b * m * k * n > MAX_KERNEL_MACS:
            m = max(1, int(MAX_KERNEL_MACS // (b * k * n)))
        c = self.cur
        if c is not None and len(c.shape) == 3 and self.u() < 0.6 and c.dtype == F32:
            b, m, k = c.shape
            a = c
        else:
            a = self.new_input((b, m, k), dtype=F32)
        adj_y = self.u() < 0.3
        rshape: tuple[int, ...] = (b, n, k) if adj_y else (b, k, n)
        if self.u() < 0.3:
            if self.spec.version >= 22 and self.u() < 0.5:
                rshape = rshape[1:]  # one matrix for every batch (a fixed projection)
            rhs = self.const(self.rng.standard_normal(rshape).astype(np.float32) * 0.1)
        else:
            rhs = self.new_input(rshape, dtype=F32).idx
        y = self.tensor((b, m, n), dtype=F32)
        self.op("BATCH_MATMUL", [a.idx, rhs], [y], options={"adj_x": False, "adj_y": adj_y})
        self.macs += b * m * k * n
        self.set(y)

    def k_binary(self) -> None:
        x = self.anyt()
        if self.q8:
            op = str(self.pick({"ADD": 0.6, "MUL": 0.3, "SUB": 0.1}))
        else:
            op = str(self.pick({"ADD": 0.35, "MUL": 0.3, "SUB": 0.1, "DIV": 0.05,
                                "MAXIMUM": 0.05, "MINIMUM": 0.05, "SQUARED_DIFFERENCE": 0.05,
                                "PRELU": 0.05}))  # fmt: skip
        kind = str(self.pick({"same": 0.45, "channel": 0.3, "scalar": 0.2, "bcast": 0.05,
                              "row": 0.1}))  # fmt: skip
        if op == "PRELU" or (kind == "row" and (len(x.shape) < 2 or x.shape[-1] == 1)):
            kind = "channel"
        c = x.shape[-1]
        if kind == "row":  # one value per row (a layer norm's mean and variance)
            other = self.new_input((*x.shape[:-1], 1)).idx
        elif kind == "same":
            same = [t for t in self.pool[:-1] if t.shape == x.shape and t.dtype == x.dtype]
            other = same[-1].idx if same and self.u() < 0.7 else self.new_input(x.shape).idx
        elif kind == "bcast" and len(x.shape) == 4:
            other = self.new_input((1, 1, 1, c)).idx
        else:
            other = self.scale_const((c,) if kind == "channel" else (1,))
        y = self.tensor(x.shape, like=x)
        opts: dict[str, Any] | None = None
        if op in ("ADD", "SUB", "MUL", "DIV"):
            opts = {"fused_activation_function": str(self.pick({"NONE": 0.7, "RELU": 0.15,
                                                                "RELU6": 0.15}))}  # fmt: skip
        self.op(op, [x.idx, other], [y], options=opts)
        self.set(y)

    def k_unary(self) -> None:
        x = self.anyt()
        if self.q8:
            op = str(self.pick({"RELU": 0.5, "RELU6": 0.3, "LEAKY_RELU": 0.2}))
        else:
            op = str(self.pick({"RELU": 0.25, "RELU6": 0.2, "LEAKY_RELU": 0.15, "NEG": 0.1,
                                "ABS": 0.1, "SQUARE": 0.1, "FLOOR": 0.04, "CEIL": 0.03,
                                "ROUND": 0.03}))  # fmt: skip
        self.set(self.un_op(op, x, {"alpha": 0.2} if op == "LEAKY_RELU" else None))

    def k_math(self) -> None:
        x = self.anyt()
        if self.q8:
            op = str(self.pick({"LOGISTIC": 0.4, "HARD_SWISH": 0.3, "TANH": 0.3}))
        else:
            op = str(self.pick({"LOGISTIC": 0.22, "TANH": 0.1, "HARD_SWISH": 0.14, "ELU": 0.05,
                                "GELU": 0.06, "SQRT": 0.05, "RSQRT": 0.12, "EXP": 0.1,
                                "LOG": 0.08, "SIN": 0.04, "COS": 0.04}))  # fmt: skip
        self.set(self.un_op(op, x))

    def k_pool(self) -> None:
        x = self.img()
        if x.shape[1] == 1 and x.shape[2] == 1:
            # a 1x1 image only pools as an identity, which no network has (and which XNNPACK
            # elides, and with it a chain ending there)
            x = self.img(fresh=1.0)
            while x.shape[1] == 1 and x.shape[2] == 1:
                x = self.new_input((1, self.side() + 1, self.side() + 1, x.shape[3]))
        _, h, w, c = x.shape
        op = str(self.pick({"MAX_POOL_2D": 0.5, "AVERAGE_POOL_2D": 0.5}))
        if self.u() < 0.2 and op == "AVERAGE_POOL_2D":
            kh, kw, s, pad = h, w, 1, "VALID"
        else:
            k = int(self.pick({2: 0.5, 3: 0.5}))
            kh = kw = min(k, h) if h > 1 else 1
            kw = min(kw, w)
            s = int(self.pick({1: 0.3, 2: 0.7})) if h > 1 else 1
            s = min(s, kh, kw)
            pad = "SAME" if self.u() < 0.5 else "VALID"
        if pad == "SAME":
            ho, wo = -(-h // s), -(-w // s)
        else:
            ho, wo = (h - kh) // s + 1, (w - kw) // s + 1
        y = self.tensor((1, ho, wo, c), like=x, q=x.q)
        self.op(op, [x.idx], [y], options={"padding": pad, "stride_h": s, "stride_w": s,
                                           "filter_height": kh, "filter_width": kw})  # fmt: skip
        self.set(y)

    def k_reduce(self) -> None:
        x = self.anyt()
        op = "MEAN" if self.q8 else str(self.pick({"MEAN": 0.6, "SUM": 0.15, "REDUCE_MAX": 0.15,
                                                   "REDUCE_MIN": 0.1}))  # fmt: skip
        r = len(x.shape)
        axes = [1, 2] if r == 4 and self.u() < 0.7 else [r - 1]
        keep = self.u() < 0.5
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        if not keep:
            shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        if not shape:
            shape = (1,)
        ax = self.const(np.array(axes, np.int32))
        y = self.tensor(shape, like=x)
        self.op(op, [x.idx, ax], [y], options={"keep_dims": keep})
        self.set(y)

    def k_softmax(self) -> None:
        x = self.anyt()
        q = (1.0 / 256, -128) if self.q8 else None
        y = self.tensor(x.shape, like=x, q=q)
        self.op("SOFTMAX", [x.idx], [y], options={"beta": 1.0})
        self.set(y)

    def k_concat(self) -> None:
        x = self.anyt()
        r = len(x.shape)
        axis = r - 1 if self.u() < 0.7 or r < 2 else 1
        parts = [x]
        # mostly a few parts; now and then many thin ones (stacked feature maps of audio and
        # pitch models: each output row is many short copies)
        many = self.u() < 0.2
        count = int(self.rng.integers(4, 17)) if many else int(self.pick({1: 0.6, 2: 0.25,
                                                                          3: 0.15}))  # fmt: skip
        if many and x.shape[axis] > 4:
            thin = list(x.shape)
            thin[axis] = int(self.pick({1: 0.5, 2: 0.25, 4: 0.25}))
            x = self.new_input(tuple(thin))
            parts = [x]
        for _ in range(count):
            shape = list(x.shape)
            shape[axis] = max(1, self.chan(1, 256) if axis == r - 1 else self.logu(1, 64))
            if many:
                shape[axis] = int(self.pick({1: 0.5, 2: 0.25, 4: 0.25}))
            if _numel(tuple(shape)) > MAX_ELEMS // 4:
                shape[axis] = 1
            parts.append(self.new_input(tuple(shape)))
        total = sum(p.shape[axis] for p in parts)
        oshape = list(x.shape)
        oshape[axis] = total
        q = x.q
        if self.q8:  # XNNPACK needs equal quantization for int8 concatenation
            parts = [p if p.q == q else self.requant(p, q) for p in parts]
        y = self.tensor(tuple(oshape), like=x, q=q)
        self.op("CONCATENATION", [p.idx for p in parts], [y], options={"axis": axis})
        self.set(y)

    def requant(self, x: _T, q: tuple[float, int] | None) -> _T:
        y = self.tensor(x.shape, dtype=I8, q=q)
        self.op("QUANTIZE", [x.idx], [y])
        return y

    def k_split(self) -> None:
        x = self.anyt()
        k = int(self.pick({2: 0.6, 3: 0.2, 4: 0.2}))
        c = x.shape[-1]
        if c < k or c % k:
            x = self.new_input((*x.shape[:-1], max(c // k, 1) * k))
            c = x.shape[-1]
        axis = self.const(np.array(len(x.shape) - 1, np.int32))
        outs = [self.tensor((*x.shape[:-1], c // k), like=x, q=x.q) for _ in range(k)]
        self.g.op("SPLIT", [axis, x.idx], [o.idx for o in outs], options={"num_splits": k})
        self.set(outs[0])

    def k_copy(self) -> None:
        x = self.anyt()
        r = len(x.shape)
        var = 0.5 if self.spec.small else 0.2  # streaming models keep their state in variables
        kind = self.pick({"variable": var, "flatten": 0.4, "3d": 0.3, "expand": 0.15,
                          "squeeze": 0.15})  # fmt: skip
        if kind == "variable":
            # a resource variable: assigned, then read back (a streaming model's state; it
            # reads before it assigns, but a read of a never-assigned variable fails)
            h = self.tensor((), dtype=DType.RESOURCE)
            self.op("VAR_HANDLE", [], [h], options={"shared_name": self.name("var")})
            self.op("ASSIGN_VARIABLE", [h.idx, x.idx], [])
            y = self.tensor(x.shape, like=x, q=x.q)
            self.op("READ_VARIABLE", [h.idx], [y])
            self.set(y)
            return
        if kind == "flatten" or r < 2:
            shape: tuple[int, ...] = (1, _numel(x.shape))
        elif kind == "3d" and r == 4:
            shape = (1, x.shape[1] * x.shape[2], x.shape[3])
        elif kind == "expand" and r < 4:
            shape = (*x.shape, 1) if self.u() < 0.5 else (1, *x.shape)
            y = self.tensor(shape, like=x, q=x.q)
            ax = self.const(np.array(r if shape[-1] == 1 else 0, np.int32))
            self.op("EXPAND_DIMS", [x.idx, ax], [y])
            self.set(y)
            return
        else:
            shape = tuple(d for d in x.shape if d != 1) or (1,)
            if shape == x.shape:
                shape = (1, _numel(x.shape))
        ns = self.const(np.array(shape, np.int32))
        y = self.tensor(shape, like=x, q=x.q)
        self.op("RESHAPE", [x.idx, ns], [y], options={"new_shape": list(shape)})
        self.set(y)

    def k_pad(self) -> None:
        x = self.anyt()
        r = len(x.shape)
        pads = np.zeros((r, 2), np.int32)
        if r == 4 and self.u() < 0.6:
            p = int(self.pick({1: 0.6, 2: 0.2, 3: 0.2}))
            pads[1] = pads[2] = p
        else:
            pads[r - 1] = (0, max(1, x.shape[-1] // int(self.pick({1: 0.5, 2: 0.3, 4: 0.2}))))
        shape = tuple(int(d + pads[i].sum()) for i, d in enumerate(x.shape))
        if _numel(shape) > MAX_ELEMS:
            pads[:] = 0
            pads[r - 1] = (0, 1)
            shape = tuple(int(d + pads[i].sum()) for i, d in enumerate(x.shape))
        op = "PAD"
        if not self.q8 and self.spec.executor_hint != "xnnpack" and self.u() < 0.15:
            op = "MIRROR_PAD"
            pads = np.minimum(pads, np.array([[d - 1, d - 1] for d in x.shape], np.int32))
            pads = np.maximum(pads, 0).astype(np.int32)
            shape = tuple(int(d + pads[i].sum()) for i, d in enumerate(x.shape))
        y = self.tensor(shape, like=x, q=x.q)
        opts = {"mode": "REFLECT"} if op == "MIRROR_PAD" else None
        self.op(op, [x.idx, self.const(pads)], [y], options=opts)
        self.set(y)

    def k_slice(self) -> None:
        x = self.anyt()
        r = len(x.shape)
        ax = r - 1 if self.u() < 0.5 else int(self.rng.integers(0, r))
        d = x.shape[ax]
        if d < 2:
            ax = int(np.argmax(x.shape))
            d = x.shape[ax]
        size = max(1, int(d * self.rng.uniform(0.25, 0.9)))
        start = int(self.rng.integers(0, d - size + 1))
        begin = np.zeros(r, np.int32)
        begin[ax] = start
        sz = np.array(x.shape, np.int32)
        sz[ax] = size
        shape = tuple(int(v) for v in sz)
        y = self.tensor(shape, like=x, q=x.q)
        if self.u() < 0.5:
            self.op("SLICE", [x.idx, self.const(begin), self.const(sz)], [y])
        else:
            end = begin + sz
            self.op("STRIDED_SLICE", [x.idx, self.const(begin), self.const(end),
                                      self.const(np.ones(r, np.int32))], [y])  # fmt: skip
        self.set(y)

    def k_transpose(self) -> None:
        x = self.anyt()
        r = len(x.shape)
        if r == 4 and self.u() < 0.25 and x.shape[3] % 4 == 0 and x.shape[1] * 2 <= 512:
            n, h, w, c = x.shape
            y = self.tensor((n, h * 2, w * 2, c // 4), like=x, q=x.q)
            self.op("DEPTH_TO_SPACE", [x.idx], [y], options={"block_size": 2})
            self.set(y)
            return
        if r == 4:
            perm = [[0, 2, 1, 3], [0, 3, 1, 2], [0, 2, 3, 1], [0, 1, 3, 2]][
                int(self.rng.integers(0, 4))
            ]
        elif r == 3:
            perm = [[0, 2, 1], [1, 0, 2]][int(self.rng.integers(0, 2))]
        elif r == 2:
            perm = [1, 0]
        else:
            perm = list(range(r))
        shape = tuple(x.shape[p] for p in perm)
        y = self.tensor(shape, like=x, q=x.q)
        self.op("TRANSPOSE", [x.idx, self.const(np.array(perm, np.int32))], [y])
        self.set(y)

    def k_resize(self) -> None:
        x = self.img()
        n, h, w, c = x.shape
        f = 2 if h * w * c * 4 <= MAX_ELEMS else 1
        op = str(self.pick({"RESIZE_BILINEAR": 0.6, "RESIZE_NEAREST_NEIGHBOR": 0.4}))
        y = self.tensor((n, h * f, w * f, c), like=x, q=x.q)
        opts = {"align_corners": False, "half_pixel_centers": self.u() < 0.7}
        self.op(op, [x.idx, self.const(np.array([h * f, w * f], np.int32))], [y], options=opts)
        self.set(y)

    def k_gather(self) -> None:
        x = self.anyt()
        r = len(x.shape)
        if self.u() < 0.7:
            ax = r - 1 if self.u() < 0.5 else max(r - 2, 0)
            d = x.shape[ax]
            k = max(1, int(d * self.rng.uniform(0.2, 1.0)))
            idx = self.rng.integers(0, d, size=k).astype(np.int32)
            shape = list(x.shape)
            shape[ax] = k
            y = self.tensor(tuple(shape), like=x)
            self.op("GATHER", [x.idx, self.const(idx)], [y], options={"axis": ax})
        else:
            mult = np.ones(r, np.int32)
            mult[-1] = 2 if _numel(x.shape) * 2 <= MAX_ELEMS else 1
            tiled = tuple(int(d * m) for d, m in zip(x.shape, mult, strict=True))
            y = self.tensor(tiled, like=x)
            self.op("TILE", [x.idx, self.const(mult)], [y])
        self.set(y)

    def k_shape(self) -> None:
        x = self.anyt()
        s = self.tensor((len(x.shape),), dtype=I32)
        self.op("SHAPE", [x.idx], [s], options={"out_type": "INT32"})
        f = self.tensor(x.shape, dtype=F32)
        self.op("FILL", [s.idx, self.const(np.array(0.5, np.float32))], [f])
        y = self.tensor(x.shape, like=x)
        self.op("ADD", [x.idx, f.idx] if x.dtype == F32 else [f.idx, f.idx], [y])
        self.set(y)

    def k_fft(self) -> None:
        """The front end of audio models: a real FFT (``RFFT2D``) of framed signals, then the
        magnitude (or a part) of its complex result; from sampler version 20 one to three of
        them. Before version 19, two in five were one of the custom ops
        (:meth:`k_spectrogram`, :meth:`k_mfcc`)."""
        if self.spec.version < 19:
            kind = self.pick({"rfft": 0.6, "spectrogram": 0.2, "mfcc": 0.2})
            if kind != "rfft":
                return self._audio_custom(kind == "mfcc")
        n = int(self.pick({32: 0.5, 64: 0.7, 128: 1.0, 256: 1.3, 512: 1.5, 1024: 1.5, 2048: 1.2,
                           4096: 0.5}))  # fmt: skip
        if self.spec.small:
            n = min(n, 64)
        fh = 1 if self.u() < 0.8 else int(self.pick({2: 1.0, 4: 1.0, 8: 1.0, 16: 1.0, 32: 0.5}))
        frames = max(1, min(self.logu(1, 1024), MAX_ELEMS // 4 // (n * fh)))
        shape = (1, frames, fh, n) if self.u() < 0.6 else (frames, fh, n)
        x = self.new_input(shape, F32)
        y = self.tensor((*shape[:-2], fh, n // 2 + 1), dtype=DType.COMPLEX64)
        self.op("RFFT2D", [x.idx, self.const(np.array([fh, n], np.int32))], [y])
        parts = {"COMPLEX_ABS": 0.7, "REAL": 0.15, "IMAG": 0.15}
        chosen = [str(self.pick(parts))]
        if self.spec.version >= 20:
            # one to three of them on the same spectrum (the others are outputs): the same
            # transform with and without its magnitudes tells what the magnitudes cost, which a
            # transform always followed by one of them cannot
            for _ in range(int(self.pick({0: 0.5, 1: 0.3, 2: 0.2}))):
                chosen.append(str(self.pick({p: w for p, w in parts.items() if p not in chosen})))
        for op in chosen:
            z = self.tensor(y.shape, dtype=F32)
            self.op(op, [y.idx], [z])
        self.set(z)

    def k_spectrogram(self) -> None:
        """``AudioSpectrogram``, a custom op LiteRT's builtin resolver ships: windowed FFTs of a
        waveform."""
        self._audio_custom(False)

    def k_mfcc(self) -> None:
        """``Mfcc``, a custom op LiteRT's builtin resolver ships: a mel filterbank and a DCT
        of a spectrogram's frames."""
        self._audio_custom(True)

    def _audio_custom(self, mfcc: bool) -> None:
        """An ``AudioSpectrogram`` of a waveform, or an ``Mfcc`` of a spectrogram (its own, or
        an ``AudioSpectrogram``'s), with window, stride and mel channels as speech models use."""
        window = int(self.pick({64: 0.5, 128: 1.0, 256: 1.5, 400: 1.0, 480: 0.7, 512: 1.0,
                                1024: 0.7, 2048: 0.3}))  # fmt: skip
        if self.spec.small:
            window = min(window, 64)
        n = 1 << (window - 1).bit_length()  # the FFT length: the next power of two
        stride = max(window // int(self.pick({1: 0.3, 2: 1.0, 3: 0.3, 4: 0.5})), 1)
        frames = max(1, min(self.logu(1, 512), MAX_ELEMS // (n // 2 + 1)))
        if mfcc and self.u() < 0.5:  # on a spectrogram of its own (magnitudes: >= 0)
            x = self.new_input((1, frames, n // 2 + 1), F32)
            spec = self.tensor(x.shape, dtype=F32)
            self.op("ABS", [x.idx], [spec])
        else:
            channels = 1 if self.u() < 0.9 else 2
            x = self.new_input((window + stride * (frames - 1), channels), F32)
            spec = self.tensor((channels, frames, n // 2 + 1), dtype=F32)
            opts = {"magnitude_squared": self.u() < 0.7, "stride": stride, "window_size": window}
            self.op("AudioSpectrogram", [x.idx], [spec], custom_options=flexbuffers.Dumps(opts))
            self.macs += channels * frames * n * max(n.bit_length() - 1, 1) // 2
            if not mfcc:
                self.set(spec)
                return
        chans = int(self.pick({20: 0.5, 26: 0.5, 32: 0.7, 40: 1.5, 64: 0.7, 80: 0.5}))
        chans = min(chans, max(spec.shape[-1] // 2, 8))  # no more channels than bins feed
        dct = min(chans, int(self.pick({10: 0.5, 12: 0.5, 13: 1.0, 20: 0.5, 40: 0.5})))
        upper = float(self.pick({4000.0: 1.0, 7600.0: 0.7, 8000.0: 0.3}))
        mf: dict[str, float] = {"dct_coefficient_count": dct, "filterbank_channel_count": chans,
                "lower_frequency_limit": 20.0, "upper_frequency_limit": upper}  # fmt: skip
        rate = self.g.constant(self.name("rate"), np.array(16000, np.int32))
        y = self.tensor((*spec.shape[:-1], dct), dtype=F32)
        self.op("Mfcc", [spec.idx, rate], [y], custom_options=flexbuffers.Dumps(mf))
        self.macs += _numel(spec.shape[:-1]) * (spec.shape[-1] + chans * dct)
        self.set(y)

    def k_rnn(self) -> None:
        """A unidirectional sequence LSTM (what Keras LSTM layers convert to): four gates, the
        cell and output states carried over the steps in variable tensors."""
        x = self.seq()
        if len(x.shape) != 3 or x.dtype != F32:
            x = self.new_input((1, self.logu(1, 128), self.chan(4, 512)), F32)
        batch, steps, nin = x.shape
        cells = self.chan(4, 512)
        while cells > 4 and batch * steps * 4 * cells * (nin + cells) > MAX_KERNEL_MACS:
            cells //= 2
        if batch * steps * 4 * cells * (nin + cells) > MAX_KERNEL_MACS:
            x = self.new_input((1, min(steps, 16), min(nin, 64)), F32)
            batch, steps, nin = x.shape
        gates_x = [self.weights((cells, nin), nin + cells, None) for _ in range(4)]
        gates_h = [self.weights((cells, cells), nin + cells, None) for _ in range(4)]
        biases = [self.const(np.full(cells, 1.0 if g == 1 else 0.0, np.float32))
                  for g in range(4)]  # fmt: skip
        h = self.g.tensor(self.name("h"), F32, (batch, cells), is_variable=True)
        c = self.g.tensor(self.name("c"), F32, (batch, cells), is_variable=True)
        y = self.tensor((batch, steps, cells), dtype=F32)
        ins = [x.idx, *gates_x, *gates_h, -1, -1, -1, *biases, -1, -1, h, c, -1, -1, -1, -1]
        self.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [y], options={
            "fused_activation_function": "TANH", "time_major": False})  # fmt: skip
        self.macs += batch * steps * 4 * cells * (nin + cells)
        self.set(y)

    def k_other(self) -> None:
        x = self.anyt()
        if x.dtype != F32:
            return self.k_unary()
        kind = self.pick({"cast": 0.2, "select": 0.25, "reverse": 0.15, "prod": 0.1,
                          "pack": 0.15, "floordiv": 0.15})  # fmt: skip
        if kind == "cast":
            t = self.tensor(x.shape, dtype=I32)
            self.op("CAST", [x.idx], [t])
            y = self.tensor(x.shape, dtype=F32)
            self.op("CAST", [t.idx], [y])
        elif kind == "select":
            cond = self.tensor(x.shape, dtype=DType.BOOL)
            self.op("GREATER", [x.idx, self.const(np.array([0.0], np.float32))], [cond])
            y = self.tensor(x.shape, dtype=F32)
            self.op("SELECT_V2", [cond.idx, x.idx, self.const(np.array([0.0], np.float32))],
                    [y])  # fmt: skip
        elif kind == "reverse":
            y = self.tensor(x.shape, dtype=F32)
            self.op("REVERSE_V2", [x.idx, self.const(np.array([len(x.shape) - 1], np.int32))],
                    [y])  # fmt: skip
        elif kind == "prod":
            shape = x.shape[:-1] or (1,)
            y = self.tensor(shape, dtype=F32)
            self.op("REDUCE_PROD", [x.idx, self.const(np.array([len(x.shape) - 1], np.int32))],
                    [y], options={"keep_dims": False})  # fmt: skip
        elif kind == "pack":
            other = self.new_input(x.shape)
            y = self.tensor((*x.shape[:-1], x.shape[-1], 2), dtype=F32)
            self.op("PACK", [x.idx, other.idx], [y],
                    options={"values_count": 2, "axis": len(x.shape)})  # fmt: skip
        else:
            t = self.tensor(x.shape, dtype=I32)
            self.op("CAST", [x.idx], [t])
            d = self.tensor(x.shape, dtype=I32)
            self.op("FLOOR_DIV", [t.idx, self.const(np.array([3], np.int32))], [d])
            y = self.tensor(x.shape, dtype=F32)
            self.op("CAST", [d.idx], [y])
        self.set(y)
        return None


def _index_array(a: np.ndarray) -> np.ndarray:
    """A sparse tensor's index array in the narrowest type TFLite has for it."""
    top = int(a.max(initial=0))
    return a.astype(np.uint8 if top <= 0xFF else np.uint16 if top <= 0xFFFF else np.int32)


def _numel(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1
