#!/usr/bin/env python3
"""Build edgepart's seeded test-model corpus with real TensorFlow (random weights, no downloads).

Each model comes from a *recipe*: a function that builds a small TensorFlow/Keras model from a
fixed seed and converts it with ``tf.lite.TFLiteConverter``. Built models are cached in an output
directory (``$EDGEPART_CORPUS_DIR`` or ``~/.cache/edgepart/corpus``) next to ``manifest.json``,
which records, per model, its file, sha256, size, op count of subgraph 0, subgraph count, feature
tags, whether LiteRT can run it on this host, a description and the recipe version. A model is
rebuilt only when its file is missing, does not match the manifest, or its recipe version changed.

As a script::

    python tools/build_corpus.py                 # build/refresh the default corpus
    python tools/build_corpus.py --list          # list recipes (and built state)
    python tools/build_corpus.py resnet50        # build named models (default or on-demand)
    python tools/build_corpus.py --all --check   # build everything, then run each in LiteRT
    python tools/build_corpus.py --export-examples   # copy the small models to examples/models/

As a module (tests put ``tools/`` on ``sys.path``)::

    import build_corpus
    path = build_corpus.ensure("mobilenet_v2")
    paths = build_corpus.ensure_all()            # the default corpus, name -> Path

Why child processes: TensorFlow names functions and control-flow subgraphs with process-global
counters (``cond_true_90``), so a model built after another in the same process gets different
names and different bytes. Each recipe therefore runs in its own process, forked from a "zygote"
that has imported TensorFlow (about 5 CPU-seconds) but run nothing: every build starts from the
same state as a fresh interpreter, so files are byte-identical however builds are grouped or
ordered, and TensorFlow never enters the caller's process (pytest). LiteRT runnability is probed
in yet another process so a crashing kernel cannot take the build down. Locks are per model, and
files and the manifest are replaced atomically, so concurrent builders are safe.

This tool deliberately imports nothing from ``edgepart``: it is the test infrastructure for that
package and must keep working while the package is being changed.
"""

# mypy: disable-error-code="untyped-decorator"
# (tf.function is untyped: TensorFlow is imported lazily as Any)
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import hashlib
import itertools
import json
import os
import queue
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT",
    "FEATURES",
    "ON_DEMAND",
    "RECIPES",
    "BuildContext",
    "Built",
    "CorpusError",
    "Recipe",
    "analyze",
    "check_features",
    "default_names",
    "default_out_dir",
    "ensure",
    "ensure_all",
    "export_examples",
    "feature",
    "get_recipe",
    "load_manifest",
    "main",
    "probe",
    "recipe",
]

# Bump when a helper shared by several recipes changes what they produce (conditioning, conversion
# wrappers); it is part of every model's version string, so such a change rebuilds everything.
COMMON_VERSION = "1"
MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = 1
EXAMPLE_MAX_BYTES = 2 * 1024 * 1024
REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES_DIR = REPO_ROOT / "examples" / "models"

# Environment for the TensorFlow worker and LiteRT probe processes: quiet logs, no oneDNN (its
# kernels are picked per CPU ISA, which would make calibration statistics host-dependent), no GPU.
_CHILD_ENV = {
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "TF_ENABLE_ONEDNN_OPTS": "0",
    "CUDA_VISIBLE_DEVICES": "-1",
    "KERAS_BACKEND": "tensorflow",
    "PYTHONHASHSEED": "0",
    "ABSL_MIN_LOG_LEVEL": "3",
}


class CorpusError(RuntimeError):
    """A recipe failed to build, a model lacks a declared feature, or a name is unknown."""


# --------------------------------------------------------------------------------------------
# Registries: recipes and feature checks.
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BuildContext:
    """What a recipe gets: its name and seed, and seeded NumPy generators."""

    name: str
    seed: int

    def rng(self, stream: int = 0) -> Any:
        """Return a NumPy Generator for an independent, reproducible random stream."""
        import numpy as np

        return np.random.default_rng([self.seed, stream])


@dataclasses.dataclass
class Built:
    """A recipe's result: the model bytes and optional TensorFlow references to check it against.

    ``references`` maps a signature key to ``(tf_callable, positional_inputs, input_names)``; the
    worker runs the converted model in LiteRT on the same inputs and fails the build if any
    output differs from TensorFlow's by more than ``atol``.
    """

    tflite: bytes
    references: dict[str, tuple[Callable[..., Any], list[Any], list[str]]] = dataclasses.field(
        default_factory=dict
    )
    atol: float = 1e-4


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A registered model recipe."""

    name: str
    version: str
    build: Callable[[BuildContext], Built]
    features: tuple[str, ...]
    description: str
    default: bool
    example: bool
    seed: int
    timeout: float

    @property
    def full_version(self) -> str:
        """The version recorded in the manifest: common helpers plus the recipe's own."""
        return f"c{COMMON_VERSION}.r{self.version}"


RECIPES: dict[str, Recipe] = {}


def recipe(
    name: str,
    *,
    version: str,
    features: Sequence[str],
    description: str,
    default: bool = True,
    example: bool = False,
    seed: int = 0,
    timeout: float = 600.0,
) -> Callable[[Callable[[BuildContext], Built]], Callable[[BuildContext], Built]]:
    """Register a recipe function under ``name`` (decorator)."""

    def register(fn: Callable[[BuildContext], Built]) -> Callable[[BuildContext], Built]:
        if name in RECIPES:
            raise ValueError(f"recipe {name!r} registered twice")
        unknown = [f for f in features if f not in FEATURES]
        if unknown:
            raise ValueError(
                f"recipe {name!r}: unknown features {unknown}; known: {sorted(FEATURES)}"
            )
        RECIPES[name] = Recipe(
            name, version, fn, tuple(features), description, default, example, seed, timeout
        )
        return fn

    return register


def get_recipe(name: str) -> Recipe:
    """Return the recipe called ``name``; a miss lists the valid names."""
    try:
        return RECIPES[name]
    except KeyError:
        raise CorpusError(
            f"unknown corpus model {name!r}; valid names: {', '.join(sorted(RECIPES))}"
        ) from None


def default_names() -> list[str]:
    """Names of the default corpus (registration order)."""
    return [r.name for r in RECIPES.values() if r.default]


FeatureCheck = Callable[["ModelSummary"], bool]
FEATURES: dict[str, FeatureCheck] = {}


def feature(name: str) -> Callable[[FeatureCheck], FeatureCheck]:
    """Register a predicate that decides whether a model summary has feature ``name``."""

    def register(fn: FeatureCheck) -> FeatureCheck:
        FEATURES[name] = fn
        return fn

    return register


# --------------------------------------------------------------------------------------------
# Model analysis (flatbuffer, lazily: never copies weight bytes).
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class TensorInfo:
    """What feature checks need to know about one tensor."""

    name: str
    dtype: str
    shape: list[int]
    shape_signature: list[int] | None
    constant: bool
    nbytes: int
    sparse: bool
    scales: int
    quantized_dimension: int


@dataclasses.dataclass
class ModelSummary:
    """A structural summary of a ``.tflite`` file."""

    ops: list[list[str]]
    tensors: list[list[TensorInfo]]
    inputs: list[list[int]]
    outputs: list[list[int]]
    subgraph_refs: list[tuple[int, str, list[int]]]
    signatures: list[str]
    constant_bytes: int

    def opnames(self) -> set[str]:
        """All op names over every subgraph."""
        return {op for sg in self.ops for op in sg}


def _schema() -> Any:
    from ai_edge_litert import schema_py_generated

    return schema_py_generated


def analyze(data: bytes | bytearray | memoryview) -> ModelSummary:
    """Summarize a ``.tflite`` flatbuffer (ops, tensors, control-flow references, signatures)."""
    s = _schema()
    op_names = {v: k for k, v in vars(s.BuiltinOperator).items() if not k.startswith("_")}
    type_names = {v: k for k, v in vars(s.TensorType).items() if not k.startswith("_")}
    m = s.Model.GetRootAs(data, 0)
    codes = []
    for i in range(m.OperatorCodesLength()):
        oc = m.OperatorCodes(i)
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        name = op_names.get(code, f"BUILTIN_{code}")
        if name == "CUSTOM":
            name = "CUSTOM:" + (oc.CustomCode() or b"").decode()
        codes.append(name)
    buffer_sizes = []
    for i in range(m.BuffersLength()):
        b = m.Buffers(i)
        buffer_sizes.append(max(b.DataLength(), b.Size() if b.Offset() > 1 else 0))
    ops: list[list[str]] = []
    tensors: list[list[TensorInfo]] = []
    inputs: list[list[int]] = []
    outputs: list[list[int]] = []
    refs: list[tuple[int, str, list[int]]] = []
    const_bytes = 0
    # Option tables that reference subgraphs, and the fields holding the indices.
    sub_fields = {
        "IF": ("IfOptions", ("ThenSubgraphIndex", "ElseSubgraphIndex")),
        "WHILE": ("WhileOptions", ("CondSubgraphIndex", "BodySubgraphIndex")),
        "CALL_ONCE": ("CallOnceOptions", ("InitSubgraphIndex",)),
    }
    for g in range(m.SubgraphsLength()):
        sg = m.Subgraphs(g)
        names = []
        for i in range(sg.OperatorsLength()):
            op = sg.Operators(i)
            name = codes[op.OpcodeIndex()]
            names.append(name)
            if name in sub_fields:
                table_name, fields = sub_fields[name]
                table = op.BuiltinOptions()
                opts = getattr(s, table_name)()
                opts.Init(table.Bytes, table.Pos)
                refs.append((g, name, [getattr(opts, f)() for f in fields]))
        ops.append(names)
        infos = []
        for i in range(sg.TensorsLength()):
            t = sg.Tensors(i)
            nbytes = buffer_sizes[t.Buffer()] if t.Buffer() < len(buffer_sizes) else 0
            const_bytes += nbytes
            q = t.Quantization()
            infos.append(
                TensorInfo(
                    name=(t.Name() or b"").decode(),
                    dtype=type_names.get(t.Type(), str(t.Type())),
                    shape=[int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else [],
                    shape_signature=[int(d) for d in t.ShapeSignatureAsNumpy()]
                    if t.ShapeSignatureLength()
                    else None,
                    constant=nbytes > 0,
                    nbytes=nbytes,
                    sparse=t.Sparsity() is not None,
                    scales=q.ScaleLength() if q is not None else 0,
                    quantized_dimension=q.QuantizedDimension() if q is not None else 0,
                )
            )
        tensors.append(infos)
        inputs.append([int(x) for x in sg.InputsAsNumpy()] if sg.InputsLength() else [])
        outputs.append([int(x) for x in sg.OutputsAsNumpy()] if sg.OutputsLength() else [])
    sigs = [
        (m.SignatureDefs(i).SignatureKey() or b"").decode() for i in range(m.SignatureDefsLength())
    ]
    return ModelSummary(ops, tensors, inputs, outputs, refs, sigs, const_bytes)


def check_features(summary: ModelSummary, features: Iterable[str]) -> list[str]:
    """Return the features (of ``features``) that ``summary`` does not have."""
    missing = []
    for f in features:
        check = FEATURES.get(f)
        if check is None or not check(summary):
            missing.append(f)
    return missing


def _any_tensor(s: ModelSummary, pred: Callable[[TensorInfo], bool]) -> bool:
    return any(pred(t) for sg in s.tensors for t in sg)


def _main_io_dtypes(s: ModelSummary, *, numeric_only: bool = False) -> set[str]:
    t = s.tensors[0]
    dtypes = {t[i].dtype for i in s.inputs[0] + s.outputs[0]}
    # Integer inputs such as a loop's trip count do not make a model "integer".
    return {d for d in dtypes if d.startswith("FLOAT")} if numeric_only else dtypes


@feature("cnn")
def _f_cnn(s: ModelSummary) -> bool:
    return "CONV_2D" in s.ops[0] and "DEPTHWISE_CONV_2D" in s.ops[0]


@feature("conv")
def _f_conv(s: ModelSummary) -> bool:
    return "CONV_2D" in s.opnames()


@feature("float32")
def _f_float32(s: ModelSummary) -> bool:
    return _main_io_dtypes(s, numeric_only=True) == {"FLOAT32"} and not _any_tensor(
        s, lambda t: t.constant and t.dtype in ("INT8", "FLOAT16")
    )


@feature("int8_io")
def _f_int8_io(s: ModelSummary) -> bool:
    return _main_io_dtypes(s) == {"INT8"}


@feature("full_int8")
def _f_full_int8(s: ModelSummary) -> bool:
    # Every activation of the main subgraph is integer; constants are int8 weights / int32 biases.
    return (
        all(t.dtype in ("INT8", "INT32") for t in s.tensors[0] if not t.constant)
        and "DEQUANTIZE" not in s.ops[0]
    )


@feature("per_channel")
def _f_per_channel(s: ModelSummary) -> bool:
    return _any_tensor(s, lambda t: t.constant and t.dtype == "INT8" and t.scales > 1)


@feature("dynamic_range")
def _f_dynamic_range(s: ModelSummary) -> bool:
    # Hybrid ops: int8 constant weights while the model's inputs and outputs stay float32.
    return _main_io_dtypes(s) == {"FLOAT32"} and _any_tensor(
        s, lambda t: t.constant and t.dtype == "INT8"
    )


@feature("fp16_weights")
def _f_fp16(s: ModelSummary) -> bool:
    return "DEQUANTIZE" in s.ops[0] and _any_tensor(
        s, lambda t: t.constant and t.dtype == "FLOAT16"
    )


@feature("sparse")
def _f_sparse(s: ModelSummary) -> bool:
    return _any_tensor(s, lambda t: t.sparse)


@feature("densify")
def _f_densify(s: ModelSummary) -> bool:
    return "DENSIFY" in s.opnames()


@feature("custom_op")
def _f_custom(s: ModelSummary) -> bool:
    return any(op.startswith("CUSTOM:") for op in s.opnames())


@feature("if")
def _f_if(s: ModelSummary) -> bool:
    return any(kind == "IF" for _, kind, _ in s.subgraph_refs)


@feature("while")
def _f_while(s: ModelSummary) -> bool:
    return any(kind == "WHILE" for _, kind, _ in s.subgraph_refs)


@feature("call_once")
def _f_call_once(s: ModelSummary) -> bool:
    return any(kind == "CALL_ONCE" for _, kind, _ in s.subgraph_refs)


@feature("resource_variables")
def _f_resource(s: ModelSummary) -> bool:
    return {"VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"} <= s.opnames()


@feature("multi_subgraph")
def _f_multi_subgraph(s: ModelSummary) -> bool:
    return len(s.ops) >= 2


@feature("lstm")
def _f_lstm(s: ModelSummary) -> bool:
    return "UNIDIRECTIONAL_SEQUENCE_LSTM" in s.ops[0]


@feature("attention")
def _f_attention(s: ModelSummary) -> bool:
    return {"BATCH_MATMUL", "SOFTMAX"} <= set(s.ops[0])


@feature("layer_norm")
def _f_layer_norm(s: ModelSummary) -> bool:
    # The converter decomposes LayerNormalization into these element-wise ops.
    return {"MEAN", "SQUARED_DIFFERENCE", "RSQRT"} <= set(s.ops[0])


@feature("gelu")
def _f_gelu(s: ModelSummary) -> bool:
    return "GELU" in s.ops[0]


@feature("dynamic_batch")
def _f_dynamic_batch(s: ModelSummary) -> bool:
    t = s.tensors[0]
    return any((t[i].shape_signature or [0])[0] == -1 for i in s.inputs[0])


@feature("multi_signature")
def _f_multi_signature(s: ModelSummary) -> bool:
    return len(s.signatures) >= 2


@feature("concat")
def _f_concat(s: ModelSummary) -> bool:
    return s.ops[0].count("CONCATENATION") >= 4


@feature("ops_4k")
def _f_ops_4k(s: ModelSummary) -> bool:
    return len(s.ops[0]) >= 3900


@feature("ops_300")
def _f_ops_300(s: ModelSummary) -> bool:
    return 250 <= len(s.ops[0]) <= 400 and len(set(s.ops[0])) >= 6


@feature("weights_400mb")
def _f_weights_400mb(s: ModelSummary) -> bool:
    return s.constant_bytes >= 380_000_000


# --------------------------------------------------------------------------------------------
# TensorFlow helpers (only ever called inside the worker process).
# --------------------------------------------------------------------------------------------


def _tf() -> Any:
    import tensorflow as tf

    return tf


def _init_tensorflow(seed: int) -> None:
    """Quiet, single-threaded, seeded TensorFlow: reproducible numerics across hosts."""
    import logging

    tf = _tf()
    tf.get_logger().setLevel(logging.ERROR)
    with contextlib.suppress(RuntimeError):  # raises only if TF already ran an op
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    import keras

    keras.utils.set_random_seed(seed)


def _convert(
    module: Any, functions: Sequence[Any], configure: Callable[[Any], None] | None = None
) -> bytes:
    """Convert ``functions`` (tf.functions with input signatures) of ``module`` to TFLite."""
    tf = _tf()
    concrete = [f.get_concrete_function() for f in functions]
    converter = tf.lite.TFLiteConverter.from_concrete_functions(concrete, module)
    if configure is not None:
        configure(converter)
    return bytes(converter.convert())


def _keras_constants(model: Any) -> Callable[[Any], Any]:
    """Return ``f(x)`` running ``model`` with its weights baked in as graph constants.

    ``stateless_call`` with constant tensors gives the converter a graph with no variables, so
    the fast concrete-function path needs no SavedModel round trip (6x faster than
    ``from_keras_model`` on MobileNetV2) and the batch dimension stays as declared.
    """
    tf = _tf()
    trainable = [v.numpy() for v in model.trainable_variables]
    non_trainable = [v.numpy() for v in model.non_trainable_variables]

    def call(x: Any) -> Any:
        y, _ = model.stateless_call(
            [tf.constant(a) for a in trainable],
            [tf.constant(a) for a in non_trainable],
            x,
            training=False,
        )
        return y

    return call


def _serving_module(
    fn: Callable[[Any], Any], shape: Sequence[int | None], in_name: str, out_name: str
) -> Any:
    """A tf.Module whose ``serve`` signature maps ``in_name`` to ``{out_name: fn(x)}``."""
    tf = _tf()

    class Serving(tf.Module):  # type: ignore[misc, name-defined]
        @tf.function(input_signature=[tf.TensorSpec(list(shape), tf.float32, name=in_name)])
        def serve(self, x: Any) -> Any:
            return {out_name: fn(x)}

    return Serving()


def _condition_batchnorm(model: Any, ctx: BuildContext, batch_shape: Sequence[int]) -> None:
    """Give every BatchNormalization layer random affine terms and matching moving statistics.

    A randomly initialized Keras CNN with moving mean 0 / variance 1 collapses: its activations
    die out through the ReLU6 stack and every input gives the same output, which would make
    "bit-identical output" tests pass vacuously and quantization scales meaningless. Setting
    momentum to 0 and running one training-mode batch stores each layer's real batch statistics.
    """
    import keras
    import numpy as np

    rng = ctx.rng(101)
    for layer in model.layers:
        if not isinstance(layer, keras.layers.BatchNormalization):
            continue
        if layer.gamma is not None:
            layer.gamma.assign(rng.uniform(0.5, 1.5, layer.gamma.shape).astype(np.float32))
        if layer.beta is not None:
            layer.beta.assign(rng.uniform(-0.1, 0.4, layer.beta.shape).astype(np.float32))
        layer.momentum = 0.0
    x = rng.uniform(-1.0, 1.0, tuple(batch_shape)).astype(np.float32)
    model(x, training=True)


def _uniform(ctx: BuildContext, stream: int, shape: Sequence[int], scale: float = 1.0) -> Any:
    import numpy as np

    return ctx.rng(stream).uniform(-scale, scale, tuple(shape)).astype(np.float32)


def _glorot(rng: Any, fan_in: float, shape: Sequence[int], gain: float = 1.0) -> Any:
    import numpy as np

    return (rng.standard_normal(tuple(shape)) * (gain / np.sqrt(fan_in))).astype(np.float32)


def _ref(
    target: Any, *arrays: Any, names: Sequence[str], method: str = "serve"
) -> tuple[Callable[..., Any], list[Any], list[str]]:
    """A reference for :class:`Built`: ``target.<method>`` (a tf.Module) or ``target`` itself.

    The closure holds the module itself: a tf.function method keeps only a weak reference to
    its instance, which the recipe's locals stop keeping alive when the recipe returns.
    """
    if callable(target) and not hasattr(target, "trainable_variables"):
        return (target, list(arrays), list(names))
    return (lambda *a: getattr(target, method)(*a), list(arrays), list(names))


# --------------------------------------------------------------------------------------------
# Recipes: the default corpus.
# --------------------------------------------------------------------------------------------

MBV2_SHAPE = (1, 96, 96, 3)


def _mobilenet_v2(
    ctx: BuildContext, shape: Sequence[int] = MBV2_SHAPE, alpha: float = 0.35, classes: int = 10
) -> tuple[Any, Any]:
    """A conditioned Keras MobileNetV2 and its serving module (``input`` -> ``probs``)."""
    import keras

    model = keras.applications.MobileNetV2(
        input_shape=tuple(shape[1:]), alpha=alpha, weights=None, classes=classes
    )
    _condition_batchnorm(model, ctx, (4, *shape[1:]))
    return model, _serving_module(_keras_constants(model), shape, "input", "probs")


def _representative(ctx: BuildContext, shape: Sequence[int], count: int = 16) -> Callable[[], Any]:
    def gen() -> Iterator[dict[str, Any]]:
        rng = ctx.rng(202)
        for _ in range(count):
            yield {"input": rng.uniform(-1.0, 1.0, tuple(shape)).astype("float32")}

    return gen


@recipe(
    "mobilenet_v2",
    version="1",
    features=["cnn", "float32"],
    description="Keras MobileNetV2 alpha=0.35 at 96x96x3, 10 classes, float32, batch 1, "
    "BatchNorm folded; random conditioned weights.",
    example=True,
)
def _r_mobilenet_v2(ctx: BuildContext) -> Built:
    _, module = _mobilenet_v2(ctx)
    x = _uniform(ctx, 1, MBV2_SHAPE)
    return Built(
        _convert(module, [module.serve]), {"serving_default": _ref(module, x, names=["input"])}
    )


@recipe(
    "mobilenet_v2_int8",
    version="1",
    features=["cnn", "int8_io", "full_int8", "per_channel"],
    description="mobilenet_v2 with full-integer int8 post-training quantization: per-channel "
    "weights, int8 input/output, calibrated on 16 seeded uniform[-1,1] inputs.",
    example=True,
)
def _r_mobilenet_v2_int8(ctx: BuildContext) -> Built:
    tf = _tf()
    _, module = _mobilenet_v2(ctx)

    def configure(c: Any) -> None:
        c.optimizations = [tf.lite.Optimize.DEFAULT]
        c.representative_dataset = _representative(ctx, MBV2_SHAPE)
        c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        c.inference_input_type = tf.int8
        c.inference_output_type = tf.int8

    return Built(_convert(module, [module.serve], configure))


@recipe(
    "mobilenet_v2_dynamic",
    version="1",
    features=["cnn", "dynamic_range", "per_channel"],
    description="mobilenet_v2 with dynamic-range quantization (int8 weights, float32 "
    "activations, hybrid kernels; Optimize.DEFAULT without a representative dataset).",
)
def _r_mobilenet_v2_dynamic(ctx: BuildContext) -> Built:
    tf = _tf()
    _, module = _mobilenet_v2(ctx)

    def configure(c: Any) -> None:
        c.optimizations = [tf.lite.Optimize.DEFAULT]

    return Built(_convert(module, [module.serve], configure))


@recipe(
    "mobilenet_v2_fp16",
    version="1",
    features=["cnn", "fp16_weights"],
    description="mobilenet_v2 with float16 weights: each weight is a float16 constant feeding "
    "a DEQUANTIZE op; activations stay float32.",
)
def _r_mobilenet_v2_fp16(ctx: BuildContext) -> Built:
    tf = _tf()
    _, module = _mobilenet_v2(ctx)

    def configure(c: Any) -> None:
        c.optimizations = [tf.lite.Optimize.DEFAULT]
        c.target_spec.supported_types = [tf.float16]

    x = _uniform(ctx, 1, MBV2_SHAPE)
    refs = {"serving_default": _ref(module, x, names=["input"])}
    # fp16 rounding of the weights moves outputs slightly; the check still catches a broken model.
    return Built(_convert(module, [module.serve], configure), refs, atol=2e-2)


@recipe(
    "sparse_mlp",
    version="2",
    features=["sparse", "densify", "float32"],
    description="3-layer MLP 64-128-64-10 with a softmax, converted with "
    "Optimize.EXPERIMENTAL_SPARSITY: layer 1 is 85% randomly sparse (stored CSR, read back by "
    "DENSIFY), layer 2 is 80% 1x4-block sparse (stored block-sparse, consumed directly by "
    "FULLY_CONNECTED), layer 3 dense.",
    example=True,
)
def _r_sparse_mlp(ctx: BuildContext) -> Built:
    import numpy as np

    tf = _tf()
    rng = ctx.rng(1)
    w1 = _glorot(rng, 64 * 0.15, (64, 128))
    w1[rng.random(w1.shape) < 0.85] = 0.0
    # TFLite stores FC weights as [out, in]; a 1x4 block there is 4 consecutive *inputs*.
    w2 = _glorot(rng, 128 * 0.2, (128, 64))
    keep = rng.random((128 // 4, 64)) >= 0.8
    w2 = w2 * np.repeat(keep, 4, axis=0).astype(np.float32)
    w3 = _glorot(rng, 64, (64, 10))
    b1 = rng.uniform(0.0, 0.2, 128).astype(np.float32)
    b2 = rng.uniform(0.0, 0.2, 64).astype(np.float32)

    class Mlp(tf.Module):  # type: ignore[misc, name-defined]
        @tf.function(input_signature=[tf.TensorSpec([1, 64], tf.float32, name="x")])
        def serve(self, x: Any) -> Any:
            h = tf.nn.relu(tf.matmul(x, w1) + b1)
            h = tf.nn.relu(tf.matmul(h, w2) + b2)
            return {"probs": tf.nn.softmax(tf.matmul(h, w3))}

    m = Mlp()

    def configure(c: Any) -> None:
        c.optimizations = [tf.lite.Optimize.EXPERIMENTAL_SPARSITY]

    x = _uniform(ctx, 2, (1, 64))
    return Built(_convert(m, [m.serve], configure), {"serving_default": _ref(m, x, names=["x"])})


@recipe(
    "custom_op",
    version="1",
    features=["custom_op"],
    description="Keyword-spotting-style audio model: tf.raw_ops.AudioSpectrogram and Mfcc become "
    "CUSTOM ops 'AudioSpectrogram' and 'Mfcc' (allow_custom_ops; LiteRT's builtin resolver "
    "ships both kernels, so it runs), then FULLY_CONNECTED layers and SOFTMAX.",
    example=True,
)
def _r_custom_op(ctx: BuildContext) -> Built:
    tf = _tf()
    rng = ctx.rng(1)
    frames, coeffs = 30, 13  # 4000 samples, window 256, stride 128 -> 30 frames
    w1 = _glorot(rng, frames * coeffs, (frames * coeffs, 32))
    w2 = _glorot(rng, 32, (32, 4))

    class Kws(tf.Module):  # type: ignore[misc, name-defined]
        @tf.function(input_signature=[tf.TensorSpec([4000, 1], tf.float32, name="audio")])
        def serve(self, audio: Any) -> Any:
            spec = tf.raw_ops.AudioSpectrogram(
                input=audio, window_size=256, stride=128, magnitude_squared=True
            )
            mfcc = tf.raw_ops.Mfcc(
                spectrogram=spec,
                sample_rate=tf.constant(16000),
                upper_frequency_limit=4000.0,
                lower_frequency_limit=20.0,
                filterbank_channel_count=40,
                dct_coefficient_count=coeffs,
            )
            h = tf.nn.relu(tf.matmul(tf.reshape(mfcc, [1, frames * coeffs]), w1))
            return {"probs": tf.nn.softmax(tf.matmul(h, w2))}

    m = Kws()

    def configure(c: Any) -> None:
        c.allow_custom_ops = True

    audio = _uniform(ctx, 2, (4000, 1), 0.5)
    return Built(
        _convert(m, [m.serve], configure), {"serving_default": _ref(m, audio, names=["audio"])}
    )


@recipe(
    "cond",
    version="1",
    features=["if", "multi_subgraph", "float32"],
    description="tf.cond on a data-dependent predicate: FULLY_CONNECTED, SUM, GREATER, then an IF "
    "op whose then-branch (FC+ReLU) and else-branch (TANH, MUL) are separate subgraphs.",
    example=True,
)
def _r_cond(ctx: BuildContext) -> Built:
    tf = _tf()
    rng = ctx.rng(1)
    w_in, w_then, w_out = (_glorot(rng, 16, (16, 16)) for _ in range(3))

    class Cond(tf.Module):  # type: ignore[misc, name-defined]
        @tf.function(input_signature=[tf.TensorSpec([1, 16], tf.float32, name="x")])
        def serve(self, x: Any) -> Any:
            h = tf.matmul(x, w_in)
            h = tf.cond(
                tf.reduce_sum(h) > 0.0,
                lambda: tf.nn.relu(tf.matmul(h, w_then)),
                lambda: tf.tanh(h) * 2.0,
            )
            return {"y": tf.matmul(h + 1.0, w_out)}

    m = Cond()
    x = _uniform(ctx, 2, (1, 16))
    # The reference uses the input as given and its negation so both branches are checked.
    refs = {"serving_default": _ref(m, x, names=["x"])}
    built = Built(_convert(m, [m.serve]), refs)
    built.references["serving_default#neg"] = _ref(m, -x, names=["x"])
    return built


@recipe(
    "while_loop",
    version="2",
    features=["while", "multi_subgraph", "float32"],
    description="tf.while_loop with a trip count from the int32 input 'steps': FC before, a WHILE "
    "op with cond (LESS) and body (FC, TANH, ADD) subgraphs, TANH and FC after.",
    example=True,
)
def _r_while_loop(ctx: BuildContext) -> Built:
    import numpy as np

    tf = _tf()
    rng = ctx.rng(1)
    w_in, w_body, w_out = (_glorot(rng, 16, (16, 16)) for _ in range(3))

    class Loop(tf.Module):  # type: ignore[misc, name-defined]
        @tf.function(
            input_signature=[
                tf.TensorSpec([1, 16], tf.float32, name="x"),
                tf.TensorSpec([], tf.int32, name="steps"),
            ]
        )
        def serve(self, x: Any, steps: Any) -> Any:
            h0 = tf.matmul(x, w_in)

            def body(i: Any, h: Any) -> Any:
                return i + 1, tf.tanh(tf.matmul(h, w_body)) + h * 0.5

            _, h = tf.while_loop(lambda i, h: i < steps, body, [tf.constant(0), h0])
            return {"y": tf.matmul(tf.tanh(h), w_out)}

    m = Loop()
    x = _uniform(ctx, 2, (1, 16))
    refs = {"serving_default": _ref(m, x, np.int32(5), names=["x", "steps"])}
    return Built(_convert(m, [m.serve]), refs)


@recipe(
    "resource_vars",
    version="2",
    features=["call_once", "resource_variables", "multi_subgraph", "float32"],
    description="Stateful model: two tf.Variables (a running average and a call counter) read and "
    "updated on every invoke; CALL_ONCE runs an init subgraph of VAR_HANDLE/ASSIGN_VARIABLE, the "
    "main subgraph uses VAR_HANDLE/READ_VARIABLE/ASSIGN_VARIABLE, then stateless TANH, FC and "
    "SOFTMAX. Outputs change per invoke.",
    example=True,
)
def _r_resource_vars(ctx: BuildContext) -> Built:
    import numpy as np

    tf = _tf()
    rng = ctx.rng(1)
    w = _glorot(rng, 16, (16, 16))
    w_post = _glorot(rng, 16, (16, 8))

    class Stateful(tf.Module):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.acc = tf.Variable(np.zeros((1, 16), np.float32), name="acc")
            self.count = tf.Variable(0.0, name="count")

        @tf.function(input_signature=[tf.TensorSpec([1, 16], tf.float32, name="x")])
        def serve(self, x: Any) -> Any:
            self.acc.assign(self.acc * 0.9 + tf.nn.relu(tf.matmul(x, w)))
            self.count.assign_add(1.0)
            # stateless layers after the state update, as real stateful models have
            return {"y": tf.nn.softmax(tf.matmul(tf.tanh(self.acc / self.count), w_post))}

    m = Stateful()

    def configure(c: Any) -> None:
        c.experimental_enable_resource_variables = True

    tflite = _convert(m, [m.serve], configure)
    # Reference after conversion: the TF module's variables are still at their initial values.
    x = _uniform(ctx, 2, (1, 16))
    return Built(tflite, {"serving_default": _ref(m, x, names=["x"])})


@recipe(
    "lstm",
    version="1",
    features=["lstm", "float32"],
    description="Two stacked Keras LSTM layers (32 then 16 units, 16 steps x 8 features, batch 1) "
    "and a Dense head, fused by the converter into UNIDIRECTIONAL_SEQUENCE_LSTM ops. Keras 3 "
    "no longer tags its LSTM for fusion, so the recipe runs the Keras layers' weights through "
    "the Keras-2-style 'lstm_' composite function the converter recognizes; the build checks "
    "the fused model against the Keras 3 LSTM itself.",
    example=True,
)
def _r_lstm(ctx: BuildContext) -> Built:
    import keras

    tf = _tf()
    batch, steps, feats, units = 1, 16, 8, (32, 16)
    inp = keras.Input((steps, feats), batch_size=batch)
    lstm1 = keras.layers.LSTM(units[0], return_sequences=True)
    lstm2 = keras.layers.LSTM(units[1])
    head = keras.layers.Dense(4)
    reference = keras.Model(inp, head(lstm2(lstm1(inp))))

    def standard_lstm(
        inputs: Any, init_h: Any, init_c: Any, kernel: Any, rec: Any, bias: Any
    ) -> Any:
        # Argument order and the 5 results follow Keras 2's standard_lstm, which the converter's
        # PrepareCompositeFunctions pass expects; the gate order i, f, c, o matches Keras 3.
        def step(carry: Any, x: Any) -> Any:
            h, c = carry
            z = tf.matmul(x, kernel) + tf.matmul(h, rec) + bias
            i, f, g, o = tf.split(z, 4, axis=1)
            c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
            return tf.sigmoid(o) * tf.tanh(c), c

        hs, cs = tf.scan(step, tf.transpose(inputs, [1, 0, 2]), initializer=(init_h, init_c))
        outputs = tf.transpose(hs, [1, 0, 2])
        return outputs[:, -1, :], outputs, hs[-1], cs[-1], tf.constant(0.0)

    fused = tf.function(
        standard_lstm,
        autograph=False,
        experimental_attributes={
            "api_implements": "lstm_edgepart_corpus",
            "api_preferred_device": "CPU",
            "time_major": False,
            "go_backwards": False,
        },
    )
    weights = [
        [v.numpy() for v in (layer.cell.kernel, layer.cell.recurrent_kernel, layer.cell.bias)]
        for layer in (lstm1, lstm2)
    ]
    head_k, head_b = head.kernel.numpy(), head.bias.numpy()

    class Seq(tf.Module):  # type: ignore[misc, name-defined]
        @tf.function(input_signature=[tf.TensorSpec([batch, steps, feats], tf.float32, name="seq")])
        def serve(self, x: Any) -> Any:
            for (k, r, b), n in zip(weights, units, strict=True):
                z = tf.zeros([batch, n])
                last, x, _, _, _ = fused(x, z, z, tf.constant(k), tf.constant(r), tf.constant(b))
            return {"out": tf.matmul(last, head_k) + head_b}

    m = Seq()
    x = _uniform(ctx, 2, (batch, steps, feats))

    def keras_reference(seq: Any) -> Any:
        return {"out": reference(seq)}

    return Built(
        _convert(m, [m.serve]), {"serving_default": _ref(keras_reference, x, names=["seq"])}
    )


@recipe(
    "transformer",
    version="1",
    features=["attention", "layer_norm", "gelu", "float32"],
    description="Two-layer Keras transformer encoder (16 tokens x 32 dims, 4-head "
    "MultiHeadAttention, post-LayerNorm residuals, GELU feed-forward 64) with mean pooling and a "
    "Dense head: BATCH_MATMUL/SOFTMAX attention, decomposed layer norms, GELU ops.",
    example=True,
)
def _r_transformer(ctx: BuildContext) -> Built:
    import keras

    tokens, dim, heads = 16, 32, 4
    inp = keras.Input((tokens, dim), batch_size=1)
    x = inp + _uniform(ctx, 1, (1, tokens, dim), 0.1)  # learned-position-embedding stand-in
    for _ in range(2):
        att = keras.layers.MultiHeadAttention(heads, dim // heads)(x, x)
        x = keras.layers.LayerNormalization()(x + att)
        ff = keras.layers.Dense(64, activation="gelu")(x)
        ff = keras.layers.Dense(dim)(ff)
        x = keras.layers.LayerNormalization()(x + ff)
    out = keras.layers.Dense(8)(keras.layers.GlobalAveragePooling1D()(x))
    model = keras.Model(inp, out)
    module = _serving_module(_keras_constants(model), (1, tokens, dim), "tokens", "logits")
    x0 = _uniform(ctx, 2, (1, tokens, dim))
    return Built(
        _convert(module, [module.serve]),
        {"serving_default": _ref(module, x0, names=["tokens"])},
    )


@recipe(
    "dynamic_batch",
    version="1",
    features=["dynamic_batch", "conv", "float32"],
    description="Small Keras CNN (Conv2D, MaxPool, Flatten, Dense) whose input batch dimension is "
    "dynamic: shape [1,16,16,4] with shape_signature [-1,16,16,4]; Flatten becomes "
    "SHAPE/STRIDED_SLICE/PACK/RESHAPE.",
    example=True,
)
def _r_dynamic_batch(ctx: BuildContext) -> Built:
    import keras

    inp = keras.Input((16, 16, 4))
    y = keras.layers.Conv2D(8, 3, activation="relu")(inp)
    y = keras.layers.MaxPooling2D()(y)
    y = keras.layers.Conv2D(8, 3, activation="relu")(y)
    y = keras.layers.Dense(5)(keras.layers.Flatten()(y))
    model = keras.Model(inp, y)
    module = _serving_module(_keras_constants(model), (None, 16, 16, 4), "images", "out")
    x = _uniform(ctx, 2, (3, 16, 16, 4))  # checked at batch 3, not the default 1
    return Built(
        _convert(module, [module.serve]), {"serving_default": _ref(module, x, names=["images"])}
    )


@recipe(
    "multi_signature",
    version="1",
    features=["multi_signature", "multi_subgraph", "float32"],
    description="tf.Module with three signatures, one subgraph each: 'classify' (small CNN on "
    "32x32x3), 'encode' (MLP 64->32) and 'decode' (MLP 32->64).",
    example=True,
)
def _r_multi_signature(ctx: BuildContext) -> Built:
    tf = _tf()
    rng = ctx.rng(1)
    k1 = _glorot(rng, 27, (3, 3, 3, 8))
    k2 = _glorot(rng, 72, (3, 3, 8, 16))
    wc = _glorot(rng, 16, (16, 5))
    we1, we2 = _glorot(rng, 64, (64, 48)), _glorot(rng, 48, (48, 32))
    wd1, wd2 = _glorot(rng, 32, (32, 48)), _glorot(rng, 48, (48, 64))

    class Multi(tf.Module):  # type: ignore[misc, name-defined]
        @tf.function(input_signature=[tf.TensorSpec([1, 32, 32, 3], tf.float32, name="image")])
        def classify(self, image: Any) -> Any:
            h = tf.nn.relu(tf.nn.conv2d(image, k1, 2, "SAME"))
            h = tf.nn.relu(tf.nn.conv2d(h, k2, 2, "SAME"))
            return {"probs": tf.nn.softmax(tf.matmul(tf.reduce_mean(h, axis=[1, 2]), wc))}

        @tf.function(input_signature=[tf.TensorSpec([1, 64], tf.float32, name="features")])
        def encode(self, features: Any) -> Any:
            return {"code": tf.tanh(tf.matmul(tf.nn.relu(tf.matmul(features, we1)), we2))}

        @tf.function(input_signature=[tf.TensorSpec([1, 32], tf.float32, name="code")])
        def decode(self, code: Any) -> Any:
            return {"features": tf.matmul(tf.nn.relu(tf.matmul(code, wd1)), wd2)}

    m = Multi()
    refs = {
        "classify": _ref(m, _uniform(ctx, 2, (1, 32, 32, 3)), names=["image"], method="classify"),
        "encode": _ref(m, _uniform(ctx, 3, (1, 64)), names=["features"], method="encode"),
        "decode": _ref(m, _uniform(ctx, 4, (1, 32)), names=["code"], method="decode"),
    }
    return Built(_convert(m, [m.classify, m.encode, m.decode]), refs)


def _dense_net(
    ctx: BuildContext,
    shape: Sequence[int],
    stem: int,
    blocks: Sequence[int],
    growth: int,
    classes: int,
) -> Any:
    """A DenseNet-BC: BN-ReLU-Conv1x1(4k)-BN-ReLU-Conv3x3(k) layers concatenated onto the block's
    running feature map, transitions halving channels and resolution."""
    import keras

    layers = keras.layers
    inp = keras.Input(tuple(shape[1:]), batch_size=shape[0])
    x = layers.Conv2D(stem, 3, padding="same", use_bias=False)(inp)
    for b, count in enumerate(blocks):
        for _ in range(count):
            y = layers.ReLU()(layers.BatchNormalization()(x))
            y = layers.Conv2D(4 * growth, 1, use_bias=False)(y)
            y = layers.ReLU()(layers.BatchNormalization()(y))
            y = layers.Conv2D(growth, 3, padding="same", use_bias=False)(y)
            x = layers.Concatenate()([x, y])
        if b < len(blocks) - 1:
            x = layers.ReLU()(layers.BatchNormalization()(x))
            x = layers.Conv2D(x.shape[-1] // 2, 1, use_bias=False)(x)
            x = layers.AveragePooling2D(2)(x)
    x = layers.ReLU()(layers.BatchNormalization()(x))
    x = layers.Dense(classes, activation="softmax")(layers.GlobalAveragePooling2D()(x))
    model = keras.Model(inp, x)
    _condition_batchnorm(model, ctx, (4, *shape[1:]))
    return model


@recipe(
    "densenet_tiny",
    version="1",
    features=["concat", "conv", "float32"],
    description="DenseNet-BC style CNN at 32x32x3: stem conv 16, three dense blocks of 4 layers "
    "(growth 8, 1x1 bottleneck then 3x3), transitions with compression 0.5; every layer's "
    "output stays live until its block's last CONCATENATION (memory-planner stress case).",
    example=True,
)
def _r_densenet_tiny(ctx: BuildContext) -> Built:
    shape = (1, 32, 32, 3)
    model = _dense_net(ctx, shape, stem=16, blocks=(4, 4, 4), growth=8, classes=10)
    module = _serving_module(_keras_constants(model), shape, "input", "probs")
    x = _uniform(ctx, 2, shape)
    return Built(
        _convert(module, [module.serve]), {"serving_default": _ref(module, x, names=["input"])}
    )


# --------------------------------------------------------------------------------------------
# Recipes: on demand (large or slow; built only when named).
# --------------------------------------------------------------------------------------------


@recipe(
    "mobilenet_v2_224",
    version="1",
    features=["cnn", "float32"],
    description="Keras MobileNetV2 alpha=1.0 at 224x224x3 with the 1000-class head (published "
    "cost: 300 M multiply-adds), float32, batch 1; random conditioned weights.",
    default=False,
    timeout=1200.0,
)
def _r_mobilenet_v2_224(ctx: BuildContext) -> Built:
    shape = (1, 224, 224, 3)
    _, module = _mobilenet_v2(ctx, shape, alpha=1.0, classes=1000)
    x = _uniform(ctx, 1, shape)
    return Built(
        _convert(module, [module.serve]), {"serving_default": _ref(module, x, names=["input"])}
    )


@recipe(
    "resnet50",
    version="1",
    features=["conv", "float32"],
    description="Keras ResNet50 (v1 layout) at 224x224x3 with the 1000-class head (about 3.9 G "
    "multiply-adds), float32, batch 1; random conditioned weights.",
    default=False,
    timeout=1800.0,
)
def _r_resnet50(ctx: BuildContext) -> Built:
    import keras

    shape = (1, 224, 224, 3)
    model = keras.applications.ResNet50(weights=None, input_shape=shape[1:], classes=1000)
    _condition_batchnorm(model, ctx, (2, *shape[1:]))
    module = _serving_module(_keras_constants(model), shape, "input", "probs")
    x = _uniform(ctx, 1, shape)
    return Built(
        _convert(module, [module.serve]), {"serving_default": _ref(module, x, names=["input"])}
    )


BIG_GRAPH_BLOCKS = 1000


@recipe(
    "big_graph_4k",
    version="1",
    features=["ops_4k", "conv", "float32"],
    description="Generated 4,000-op chain on an 8x8x8 tensor: 1000 blocks of CONV_2D 3x3, "
    "TANH or LOGISTIC (alternating), MUL and ADD (h = act(conv(x)); x = h*x + h), converted "
    "by TensorFlow.",
    default=False,
    timeout=1800.0,
)
def _r_big_graph_4k(ctx: BuildContext) -> Built:
    tf = _tf()
    rng = ctx.rng(1)
    kernels = [_glorot(rng, 72, (3, 3, 8, 8)) for _ in range(BIG_GRAPH_BLOCKS)]

    class Chain(tf.Module):  # type: ignore[misc, name-defined]
        @tf.function(input_signature=[tf.TensorSpec([1, 8, 8, 8], tf.float32, name="x")])
        def serve(self, x: Any) -> Any:
            for i, k in enumerate(kernels):
                a = tf.nn.conv2d(x, k, 1, "SAME")
                h = tf.tanh(a) if i % 2 == 0 else tf.sigmoid(a)
                x = h * x + h
            return {"y": x}

    m = Chain()
    x = _uniform(ctx, 2, (1, 8, 8, 8))
    return Built(_convert(m, [m.serve]), {"serving_default": _ref(m, x, names=["x"])}, atol=1e-3)


BIG_WEIGHTS_DIMS = (4096, 8192, 4096, 8192, 10)


@recipe(
    "big_weights_400mb",
    version="1",
    features=["weights_400mb", "float32"],
    description="Four FULLY_CONNECTED layers 4096-8192-4096-8192-10 (100.7 M float32 parameters, "
    "403 MB of weights). Built through tf.Variables and a SavedModel, which takes about 30 "
    "CPU-seconds and 2.5 GB peak resident memory; baking the weights in as graph constants "
    "instead took the converter several minutes and about 17 GB in a trial.",
    default=False,
    timeout=2400.0,
)
def _r_big_weights_400mb(ctx: BuildContext) -> Built:
    import numpy as np

    tf = _tf()
    rng = ctx.rng(1)
    dims = BIG_WEIGHTS_DIMS

    class Wide(tf.Module):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.ws = [
                tf.Variable(
                    rng.standard_normal((a, b), dtype=np.float32) * np.float32(1.0 / np.sqrt(a)),
                    name=f"w{i}",
                )
                for i, (a, b) in enumerate(itertools.pairwise(dims))
            ]

        @tf.function(input_signature=[tf.TensorSpec([1, dims[0]], tf.float32, name="x")])
        def serve(self, x: Any) -> Any:
            for w in self.ws[:-1]:
                x = tf.nn.relu(tf.matmul(x, w))
            return {"y": tf.matmul(x, self.ws[-1])}

    m = Wide()
    with tempfile.TemporaryDirectory(prefix="edgepart-corpus-") as tmp:
        tf.saved_model.save(m, tmp, signatures={"serving_default": m.serve})
        data = bytes(tf.lite.TFLiteConverter.from_saved_model(tmp).convert())
    x = _uniform(ctx, 2, (1, dims[0]))
    return Built(data, {"serving_default": _ref(m, x, names=["x"])}, atol=1e-3)


@recipe(
    "ops_300",
    version="1",
    features=["ops_300", "conv", "float32"],
    description="DenseNet-BC style CNN at 64x64x3 with dense blocks of 6, 12, 24 and 16 layers "
    "(DenseNet-121's layout, growth 12): about 300 ops of CONV_2D, MUL/ADD (unfolded "
    "pre-activation BatchNorm), CONCATENATION, pooling, FULLY_CONNECTED and SOFTMAX; for "
    "profiling-time tests.",
    default=False,
    timeout=1200.0,
)
def _r_ops_300(ctx: BuildContext) -> Built:
    shape = (1, 64, 64, 3)
    model = _dense_net(ctx, shape, stem=24, blocks=(6, 12, 24, 16), growth=12, classes=100)
    module = _serving_module(_keras_constants(model), shape, "input", "probs")
    x = _uniform(ctx, 2, shape)
    return Built(
        _convert(module, [module.serve]), {"serving_default": _ref(module, x, names=["input"])}
    )


# Real-size models for the tensor-parallel table (docs/tensor_parallel.md), float and int8.

IMAGENET_SHAPE = (1, 224, 224, 3)


def _int8_configure(ctx: BuildContext, shape: Sequence[int], count: int = 8) -> Any:
    """Full-integer post-training quantization, calibrated on seeded uniform inputs; ops with no
    int8 kernel (none in these models, checked by the ``full_int8`` feature) would fail."""
    tf = _tf()

    def configure(c: Any) -> None:
        c.optimizations = [tf.lite.Optimize.DEFAULT]
        c.representative_dataset = _representative(ctx, shape, count)
        c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        c.inference_input_type = tf.int8
        c.inference_output_type = tf.int8

    return configure


def _efficientnet_b0(ctx: BuildContext) -> Any:
    import keras

    model = keras.applications.EfficientNetB0(
        weights=None, input_shape=IMAGENET_SHAPE[1:], classes=1000
    )
    _condition_batchnorm(model, ctx, (2, *IMAGENET_SHAPE[1:]))
    return _serving_module(_keras_constants(model), IMAGENET_SHAPE, "input", "probs")


@recipe(
    "efficientnet_b0",
    version="1",
    features=["cnn", "float32"],
    description="Keras EfficientNetB0 at 224x224x3 with the 1000-class head (published cost: "
    "0.39 G multiply-adds; MBConv blocks with squeeze-and-excitation and swish), float32, batch "
    "1; random conditioned weights.",
    default=False,
    timeout=1800.0,
)
def _r_efficientnet_b0(ctx: BuildContext) -> Built:
    module = _efficientnet_b0(ctx)
    x = _uniform(ctx, 1, IMAGENET_SHAPE)
    return Built(
        _convert(module, [module.serve]),
        {"serving_default": _ref(module, x, names=["input"])},
        atol=1e-3,
    )


VIT_S16 = {"patch": 16, "dim": 384, "depth": 12, "heads": 6, "mlp": 1536}


def _vit(ctx: BuildContext, cfg: dict[str, int] = VIT_S16) -> Any:
    """A ViT-S/16-shaped Keras model: 16x16 patch embedding, learned position embedding, 12
    pre-norm blocks (multi-head attention, GELU MLP), mean pooling (no class token), 1000-class
    head; random Glorot weights (no BatchNorm to condition)."""
    import keras

    p, dim = cfg["patch"], cfg["dim"]
    tokens = (IMAGENET_SHAPE[1] // p) * (IMAGENET_SHAPE[2] // p)
    inp = keras.Input(IMAGENET_SHAPE[1:], batch_size=1)
    x = keras.layers.Conv2D(dim, p, strides=p)(inp)
    x = keras.layers.Reshape((tokens, dim))(x)
    x = x + _uniform(ctx, 3, (1, tokens, dim), 0.02)
    for _ in range(cfg["depth"]):
        h = keras.layers.LayerNormalization(epsilon=1e-6)(x)
        h = keras.layers.MultiHeadAttention(cfg["heads"], dim // cfg["heads"])(h, h)
        x = x + h
        h = keras.layers.LayerNormalization(epsilon=1e-6)(x)
        h = keras.layers.Dense(cfg["mlp"], activation="gelu")(h)
        x = x + keras.layers.Dense(dim)(h)
    x = keras.layers.LayerNormalization(epsilon=1e-6)(x)
    out = keras.layers.Dense(1000)(keras.layers.GlobalAveragePooling1D()(x))
    model = keras.Model(inp, out)
    return _serving_module(_keras_constants(model), IMAGENET_SHAPE, "input", "logits")


@recipe(
    "vit_s16",
    version="1",
    features=["attention", "float32", "gelu", "layer_norm"],
    description="ViT-S/16 shape (patch 16, width 384, 12 blocks of 6-head attention and a "
    "1536-wide GELU MLP; 22 M parameters, 4.6 G multiply-adds) at 224x224x3, mean pooling "
    "instead of a class token, float32, batch 1; random Glorot weights.",
    default=False,
    timeout=1800.0,
)
def _r_vit_s16(ctx: BuildContext) -> Built:
    module = _vit(ctx)
    x = _uniform(ctx, 1, IMAGENET_SHAPE)
    return Built(
        _convert(module, [module.serve]),
        {"serving_default": _ref(module, x, names=["input"])},
        atol=1e-3,
    )


def _int8_recipe(
    name: str,
    base: str,
    build: Callable[[BuildContext], Any],
    what: str,
    features: Sequence[str] = ("full_int8", "int8_io", "per_channel"),
) -> None:
    @recipe(
        name,
        version="1",
        features=list(features),
        description=f"{what} with full-integer int8 post-training quantization (per-channel "
        "weights, int8 input/output, calibrated on 8 seeded uniform[-1,1] inputs); the same "
        f"random weights as {base}.",
        default=False,
        timeout=3600.0,
    )
    def _r(ctx: BuildContext) -> Built:
        module = build(ctx)
        return Built(_convert(module, [module.serve], _int8_configure(ctx, IMAGENET_SHAPE)))


def _mobilenet_v2_224_module(ctx: BuildContext) -> Any:
    return _mobilenet_v2(ctx, IMAGENET_SHAPE, alpha=1.0, classes=1000)[1]


def _resnet50_module(ctx: BuildContext) -> Any:
    import keras

    model = keras.applications.ResNet50(weights=None, input_shape=IMAGENET_SHAPE[1:], classes=1000)
    _condition_batchnorm(model, ctx, (2, *IMAGENET_SHAPE[1:]))
    return _serving_module(_keras_constants(model), IMAGENET_SHAPE, "input", "probs")


_int8_recipe("mobilenet_v2_224_int8", "mobilenet_v2_224", _mobilenet_v2_224_module,
             "Keras MobileNetV2 alpha=1.0 at 224x224x3")  # fmt: skip
_int8_recipe("resnet50_int8", "resnet50", _resnet50_module, "Keras ResNet50 at 224x224x3")
_int8_recipe("efficientnet_b0_int8", "efficientnet_b0", _efficientnet_b0,
             "Keras EfficientNetB0 at 224x224x3")  # fmt: skip
# the converter keeps a few ViT activations wider than int8 (no full_int8 feature; see --list)
_int8_recipe(
    "vit_s16_int8", "vit_s16", _vit, "ViT-S/16 shape at 224x224x3", ("int8_io", "per_channel")
)


DEFAULT: list[str] = default_names()
ON_DEMAND: list[str] = [r.name for r in RECIPES.values() if not r.default]

# --------------------------------------------------------------------------------------------
# Worker and probe (child processes).
# --------------------------------------------------------------------------------------------


def _compare_with_references(built: Built) -> None:
    """Run the converted model in LiteRT and compare every reference signature with TensorFlow."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_content=built.tflite)
    for key, (fn, arrays, names) in built.references.items():
        signature = key.split("#", 1)[0]
        runner = interpreter.get_signature_runner(signature)
        got = runner(**{n: np.asarray(a) for n, a in zip(names, arrays, strict=True)})
        want = {k: np.asarray(v) for k, v in fn(*arrays).items()}
        if set(got) != set(want):
            raise CorpusError(
                f"signature {key!r}: LiteRT outputs {sorted(got)} != TF {sorted(want)}"
            )
        for out, value in want.items():
            diff = float(np.max(np.abs(got[out].astype(np.float64) - value.astype(np.float64))))
            if not diff <= built.atol:
                raise CorpusError(
                    f"signature {key!r} output {out!r}: LiteRT differs from TensorFlow by {diff:g} "
                    f"(tolerance {built.atol:g})"
                )
            if np.all(value == value.flat[0]) and value.size > 1:
                raise CorpusError(f"signature {key!r} output {out!r} is constant: degenerate model")


def _worker(name: str, dest: str) -> int:
    """Build one recipe in this (fresh) process and write the model bytes to ``dest``."""
    r = get_recipe(name)
    _init_tensorflow(r.seed)
    built = r.build(BuildContext(name=name, seed=r.seed))
    if built.references:
        _compare_with_references(built)
    Path(dest).write_bytes(built.tflite)
    return 0


def _random_inputs(details: Mapping[str, Mapping[str, Any]], rng: Any) -> dict[str, Any]:
    import numpy as np

    feeds = {}
    for name, d in details.items():
        sig = d.get("shape_signature")
        shape = [
            2 if s == -1 else int(s) for s in (sig if sig is not None and len(sig) else d["shape"])
        ]
        dtype = np.dtype(d["dtype"])
        if dtype.kind == "f":
            feeds[name] = rng.uniform(-1.0, 1.0, shape).astype(dtype)
        elif dtype == np.bool_:
            feeds[name] = rng.random(shape) < 0.5
        elif dtype.kind in "iu" and dtype.itemsize == 1:
            info = np.iinfo(dtype)
            feeds[name] = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
        else:  # counts and indices: keep them small and non-negative
            feeds[name] = rng.integers(0, 4, shape).astype(dtype)
    return feeds


def _probe_child(path: str) -> int:
    """Load ``path`` in LiteRT with and without default delegates; invoke every signature."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    result: dict[str, Any] = {"runnable": True, "errors": {}}
    for label, resolver in (
        ("default", OpResolverType.AUTO),
        ("no_default_delegates", OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES),
    ):
        try:
            interp = Interpreter(model_path=path, experimental_op_resolver_type=resolver)
            sigs = interp.get_signature_list()
            rng = np.random.default_rng(0)
            if sigs:
                for key in sorted(sigs):
                    runner = interp.get_signature_runner(key)
                    runner(**_random_inputs(runner.get_input_details(), rng))
            else:
                interp.allocate_tensors()
                details = {str(d["index"]): d for d in interp.get_input_details()}
                for idx, value in _random_inputs(details, rng).items():
                    interp.set_tensor(int(idx), value)
                interp.invoke()
        except Exception as e:  # any failure to load/allocate/invoke means "not runnable"
            result["runnable"] = False
            result["errors"][label] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
    print("PROBE " + json.dumps(result, sort_keys=True))
    return 0


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(_CHILD_ENV)
    return env


def probe(path: str | os.PathLike[str], timeout: float = 600.0) -> dict[str, Any]:
    """Run ``path`` in LiteRT in a child process; return ``{"runnable": bool, "errors": {...}}``."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_probe", str(path)]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=_child_env()
        )
    except subprocess.TimeoutExpired:
        return {"runnable": False, "errors": {"probe": f"timed out after {timeout:g} s"}}
    for line in proc.stdout.splitlines():
        if line.startswith("PROBE "):
            return dict(json.loads(line[len("PROBE ") :]))
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]
    return {
        "runnable": False,
        "errors": {"probe": f"LiteRT process died (exit {proc.returncode}): {tail}"},
    }


# --------------------------------------------------------------------------------------------
# Cache, manifest, locking.
# --------------------------------------------------------------------------------------------


def default_out_dir() -> Path:
    """``$EDGEPART_CORPUS_DIR`` or ``~/.cache/edgepart/corpus``."""
    env = os.environ.get("EDGEPART_CORPUS_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "edgepart" / "corpus"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _dump_json(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()


def load_manifest(out_dir: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Read ``manifest.json`` of ``out_dir`` (an empty manifest if missing or unreadable)."""
    path = Path(out_dir or default_out_dir()) / MANIFEST_NAME
    try:
        data = json.loads(path.read_text())
        if isinstance(data, dict) and isinstance(data.get("models"), dict):
            return data
    except (OSError, ValueError):
        pass
    return {"format": MANIFEST_FORMAT, "models": {}}


@contextlib.contextmanager
def _locked(out_dir: Path, names: Iterable[str]) -> Iterator[None]:
    """Hold exclusive locks ``out_dir/.lock.<name>`` for ``names`` (sorted: no deadlock).

    One lock per model: building resnet50 in one process does not hold up another that only
    needs ``cond``. Concurrent builders of the same model wait, then find it fresh.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        for name in sorted(set(names)):
            f = stack.enter_context((out_dir / f".lock.{name}").open("a"))
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)  # released when the file closes
        yield


def _record(out_dir: Path, name: str, entry: Mapping[str, Any]) -> None:
    """Merge one model's entry into the manifest (read-modify-write under the manifest lock)."""
    with _locked(out_dir, ["manifest"]):
        manifest = load_manifest(out_dir)
        manifest["models"][name] = dict(entry)
        manifest.update({"format": MANIFEST_FORMAT, "tools": _versions()})
        manifest["models"] = dict(sorted(manifest["models"].items()))
        _atomic_write(out_dir / MANIFEST_NAME, _dump_json(manifest))


def _is_fresh(out_dir: Path, r: Recipe, entry: Mapping[str, Any] | None) -> bool:
    if not entry or entry.get("version") != r.full_version:
        return False
    path = out_dir / str(entry.get("file", ""))
    try:
        if path.stat().st_size != entry.get("size"):
            return False
    except OSError:
        return False
    return _sha256(path) == entry.get("sha256")


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in ("tensorflow-cpu", "tensorflow", "keras", "ai-edge-litert"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[dist] = metadata.version(dist)
    return out


def _manifest_entry(
    r: Recipe, path: Path, summary: ModelSummary, probed: Mapping[str, Any]
) -> dict[str, Any]:
    t0 = summary.tensors[0]
    entry: dict[str, Any] = {
        "file": path.name,
        "sha256": _sha256(path),
        "size": path.stat().st_size,
        "ops": len(summary.ops[0]),
        "subgraphs": len(summary.ops),
        "runnable": bool(probed.get("runnable")),
        "version": r.full_version,
        **_recipe_metadata(r),
        "seed": r.seed,
        "signatures": summary.signatures,
        "inputs": [
            {
                "name": t0[i].name,
                "dtype": t0[i].dtype,
                "shape": t0[i].shape,
                "shape_signature": t0[i].shape_signature,
            }
            for i in summary.inputs[0]
        ],
    }
    if probed.get("errors"):
        entry["probe_errors"] = probed["errors"]
    return entry


class _Zygote:
    """A child process that imports TensorFlow once, then forks one grandchild per recipe.

    Importing TensorFlow costs about 5 CPU-seconds, more than most recipes take to build. The
    zygote never runs a TensorFlow op itself, so every forked build starts from the identical
    post-import state (the same global name counters) as a fresh process would: the bytes do not
    depend on which recipes shared a zygote or in what order (tests check this).
    """

    def __init__(self, log_dir: Path) -> None:
        fd, log = tempfile.mkstemp(prefix=".zygote.", suffix=".log", dir=log_dir)
        self.log = Path(log)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--_zygote"]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=fd,
            env=_child_env(),
            text=True,
            bufsize=1,
        )
        os.close(fd)

    def _read(self, timeout: float) -> dict[str, Any]:
        import select

        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else None
        if line is None:
            raise TimeoutError
        if not line:
            tail = _tail(self.log)
            raise CorpusError(f"TensorFlow build process died: {tail}")
        return dict(json.loads(line))

    def build(self, name: str, dest: Path, log: Path, timeout: float) -> int:
        """Build recipe ``name`` into ``dest`` (output to ``log``); return the exit status."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"name": name, "dest": str(dest), "log": str(log)}) + "\n")
        self.proc.stdin.flush()
        pid = int(self._read(600.0)["pid"])
        try:
            return int(self._read(timeout)["status"])
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)  # the grandchild we asked for; the zygote then reports it
            self._read(60.0)
            raise CorpusError(f"recipe {name!r} timed out after {timeout:g} s") from None

    def close(self) -> None:
        """Stop the zygote (it exits when its stdin closes)."""
        with contextlib.suppress(OSError):
            if self.proc.stdin:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        with contextlib.suppress(FileNotFoundError):
            self.log.unlink()


def _zygote_main() -> int:
    """Zygote loop: import TensorFlow, then fork a build per JSON request read from stdin."""
    # The point of the zygote: pay for these imports once, before forking.
    import keras  # noqa: F401
    import tensorflow  # noqa: F401

    for line in sys.stdin:
        req = json.loads(line)

        def build(req: dict[str, str] = req) -> int:
            fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            sys.stdin.close()
            return _worker(req["name"], req["dest"])

        pid = fork_child(build)
        print(json.dumps({"pid": pid}), flush=True)
        _, wait_status = os.waitpid(pid, 0)
        print(json.dumps({"status": os.waitstatus_to_exitcode(wait_status)}), flush=True)
    return 0


def fork_child(work: Callable[[], int]) -> int:
    """Fork; the child runs ``work`` (its traceback on stderr if it raises) and exits with its
    status, never returning to the caller's code. The parent gets the child's pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            status = work()
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    return pid


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "no output"
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(kept[-lines:]) if kept else "no output"


def _build_one(r: Recipe, out_dir: Path, zygote: _Zygote) -> tuple[dict[str, Any], float]:
    """Build ``r`` in ``zygote``, verify, probe and install it; return (entry, seconds)."""
    start = time.monotonic()
    final = out_dir / f"{r.name}.tflite"
    # We hold this model's lock, so temp files for it can only be leftovers of a killed build.
    for leftover in out_dir.glob(f".{r.name}.*.tflite.tmp*"):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{r.name}.", suffix=".tflite.tmp", dir=out_dir)
    os.close(fd)
    tmp, log = Path(tmp_name), Path(tmp_name + ".log")
    try:
        status = zygote.build(r.name, tmp, log, r.timeout)
        if status != 0 or tmp.stat().st_size == 0:
            raise CorpusError(f"recipe {r.name!r} failed (exit {status}): {_tail(log)}")
        summary = analyze(tmp.read_bytes())
        missing = check_features(summary, r.features)
        if missing:
            raise CorpusError(
                f"recipe {r.name!r} declares features {missing} that the built model lacks; "
                "fix the recipe or its feature list"
            )
        probed = probe(tmp, timeout=r.timeout)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the corpus is shared read-only data
        os.replace(tmp, final)
        return _manifest_entry(r, final, summary, probed), time.monotonic() - start
    finally:
        for leftover in (tmp, log):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def _recipe_metadata(r: Recipe) -> dict[str, Any]:
    return {
        "default": r.default,
        "description": r.description,
        "features": sorted(r.features),
    }


def _sync_metadata(out_dir: Path, fresh: Sequence[Recipe]) -> None:
    """Refresh descriptive fields of cached entries whose recipe text changed (no rebuild)."""
    entries = load_manifest(out_dir)["models"]
    for r in fresh:
        entry = entries.get(r.name, {})
        want = _recipe_metadata(r)
        if any(entry.get(k) != v for k, v in want.items()):
            _record(out_dir, r.name, {**entry, **want})


def _resolve(names: Iterable[str] | None) -> list[Recipe]:
    return [get_recipe(n) for n in (default_names() if names is None else names)]


def ensure_all(
    names: Iterable[str] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    force: bool = False,
    jobs: int | None = None,
    report: Callable[[str], None] | None = None,
) -> dict[str, Path]:
    """Build (or reuse cached) models; return ``{name: path}``.

    Parameters
    ----------
    names
        Recipe names; ``None`` means the default corpus.
    out_dir
        Cache directory; default :func:`default_out_dir`.
    force
        Rebuild even if the cached file is fresh.
    jobs
        Parallel worker processes (default: 2, capped at the CPU count).
    report
        Called with one progress line per built model.
    """
    recipes = _resolve(names)
    out = Path(out_dir) if out_dir is not None else default_out_dir()
    paths = {r.name: out / f"{r.name}.tflite" for r in recipes}

    def stale() -> list[Recipe]:
        entries = load_manifest(out)["models"]
        return [r for r in recipes if not _is_fresh(out, r, entries.get(r.name))]

    # Files and manifest are replaced atomically, so checking without a lock is safe; the common
    # case (everything cached) never waits for another process's build.
    todo = list(recipes) if force else stale()
    _sync_metadata(out, [r for r in recipes if r not in todo])
    if not todo:
        return paths
    with _locked(out, [r.name for r in todo]):
        if not force:
            todo = stale()  # someone may have built them while we waited
        if not todo:
            return paths
        workers = max(1, min(jobs or min(2, os.cpu_count() or 1), len(todo)))
        errors: list[str] = []
        zygotes: queue.Queue[_Zygote] = queue.Queue()

        def build(r: Recipe) -> tuple[dict[str, Any], float]:
            z = zygotes.get()
            try:
                entry, seconds = _build_one(r, out, z)
                _record(out, r.name, entry)
                return entry, seconds
            finally:
                zygotes.put(z)

        with contextlib.ExitStack() as stack:
            for _ in range(workers):
                z = _Zygote(out)
                stack.callback(z.close)
                zygotes.put(z)
            pool = stack.enter_context(ThreadPoolExecutor(max_workers=workers))
            # Registration order keeps the log readable; the default recipes are all small.
            futures = {r.name: pool.submit(build, r) for r in todo}
            for name, fut in futures.items():
                try:
                    entry, seconds = fut.result()
                except Exception as e:  # keep building the others; report all failures
                    errors.append(str(e) if isinstance(e, CorpusError) else f"{name}: {e!r}")
                    continue
                if report:
                    report(
                        f"built {name}: {seconds:.1f} s, {entry['size']} bytes, "
                        f"{entry['ops']} ops, {entry['subgraphs']} subgraph(s), "
                        f"runnable={entry['runnable']}"
                    )
        if errors:
            raise CorpusError("; ".join(errors))
    return paths


def ensure(name: str, out_dir: str | os.PathLike[str] | None = None) -> Path:
    """Build (or reuse) the model ``name`` and return its path."""
    return ensure_all([name], out_dir)[name]


def export_examples(
    out_dir: str | os.PathLike[str] | None = None,
    dest: str | os.PathLike[str] = EXAMPLES_DIR,
) -> list[Path]:
    """Copy the recipes marked ``example`` (each under 2 MiB) into ``dest`` with a manifest."""
    chosen = [r.name for r in RECIPES.values() if r.example]
    paths = ensure_all(chosen, out_dir)
    manifest = load_manifest(out_dir)
    dest_dir = Path(dest)
    entries, written = {}, []
    for name in chosen:
        src = paths[name]
        size = src.stat().st_size
        if size > EXAMPLE_MAX_BYTES:
            raise CorpusError(
                f"{name}: {size} bytes exceeds the {EXAMPLE_MAX_BYTES}-byte example limit"
            )
        target = dest_dir / src.name
        _atomic_write(target, src.read_bytes())
        entries[name] = manifest["models"][name]
        written.append(target)
    _atomic_write(
        dest_dir / MANIFEST_NAME,
        _dump_json(
            {"format": MANIFEST_FORMAT, "tools": manifest.get("tools", {}), "models": entries}
        ),
    )
    return written


# --------------------------------------------------------------------------------------------
# Command line.
# --------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="build_corpus.py",
        description="Build edgepart's seeded TFLite test corpus with TensorFlow (cached).",
    )
    p.add_argument(
        "names", nargs="*", metavar="NAME", help="models to build (default: the default corpus)"
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output directory (default: $EDGEPART_CORPUS_DIR or ~/.cache/edgepart/corpus)",
    )
    p.add_argument("--all", action="store_true", help="default and on-demand models")
    p.add_argument("--list", action="store_true", help="list recipes and what is built, then exit")
    p.add_argument("--check", action="store_true", help="after building, run every model in LiteRT")
    p.add_argument("--force", action="store_true", help="rebuild even if cached")
    p.add_argument("--jobs", type=int, default=None, help="parallel builds (default 2)")
    p.add_argument(
        "--export-examples",
        action="store_true",
        help=f"copy the small example models into {EXAMPLES_DIR.relative_to(REPO_ROOT)}/",
    )
    p.add_argument("--_worker", help=argparse.SUPPRESS)
    p.add_argument("--_dest", help=argparse.SUPPRESS)
    p.add_argument("--_probe", help=argparse.SUPPRESS)
    p.add_argument("--_zygote", action="store_true", help=argparse.SUPPRESS)
    return p


def _list(out_dir: Path, names: Sequence[str]) -> None:
    models = load_manifest(out_dir)["models"]
    for name in names:
        r = RECIPES[name]
        entry = models.get(name)
        if entry and entry.get("version") == r.full_version:
            state = (
                f"built {entry['size']:>11,d} B {entry['ops']:>5d} ops runnable={entry['runnable']}"
            )
        else:
            state = "not built" if not entry else "stale"
        kind = "default" if r.default else "on-demand"
        print(f"{name:22s} {kind:9s} {r.full_version:6s} {state}")
        print(f"    features: {', '.join(r.features)}")
        print(f"    {r.description}")


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    if args._worker:
        return _worker(args._worker, args._dest)
    if args._probe:
        return _probe_child(args._probe)
    if args._zygote:
        return _zygote_main()
    out_dir = args.out if args.out is not None else default_out_dir()
    try:
        names = list(args.names) or (list(RECIPES) if args.all else default_names())
        for n in names:
            get_recipe(n)
        if args.list:
            _list(out_dir, names)
            return 0
        start = time.monotonic()
        paths = ensure_all(
            names, out_dir, force=args.force, jobs=args.jobs, report=lambda s: print(s, flush=True)
        )
        print(f"{len(paths)} model(s) ready in {out_dir} ({time.monotonic() - start:.1f} s)")
        status = 0
        if args.check:
            models = load_manifest(out_dir)["models"]
            for name, path in paths.items():
                res = probe(path)
                expected = models[name]["runnable"]
                ok = res["runnable"] == expected
                errs = "; ".join(f"{k}: {v}" for k, v in sorted(res["errors"].items()))
                print(
                    f"check {name}: runnable={res['runnable']} (manifest {expected})"
                    + (f" [{errs}]" if errs else "")
                    + ("" if ok else "  MISMATCH")
                )
                status = status if ok else 1
        if args.export_examples:
            for p in export_examples(out_dir):
                print(f"exported {p.relative_to(REPO_ROOT) if p.is_relative_to(REPO_ROOT) else p}")
        return status
    except CorpusError as e:
        print(f"build_corpus: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
