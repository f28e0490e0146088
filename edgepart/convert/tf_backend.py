"""Keras and SavedModel sources through TensorFlow's own ``TFLiteConverter``.

TensorFlow is imported inside these functions only: importing edgepart must stay cheap and must
not need TensorFlow (it is an optional dependency, ``edgepart[tf]``).

Both kinds of source become one ``tf.function`` with a fixed input signature (names made
TensorFlow-safe, shapes from :func:`edgepart.convert.inputs.resolve_inputs`) returning a dict
of named outputs; its concrete function is what the converter reads, and calling it gives the
reference outputs the converted model is checked against. A Keras file is loaded with
``safe_mode=True`` and ``compile=False``: no code is loaded from the file (a ``Lambda`` layer
holding Python bytecode is refused by Keras itself).

Quantization modes (TensorFlow's post-training options):

* ``none``: float32 as trained;
* ``fp16``: float16 weights (``Optimize.DEFAULT`` + ``supported_types=[float16]``); the CPU
  dequantizes them once, the GPU delegate computes in fp16;
* ``dynamic``: int8 weights, activations quantized on the fly by hybrid kernels
  (``Optimize.DEFAULT`` without a representative dataset);
* ``int8``: full-integer (``TFLITE_BUILTINS_INT8``, calibrated on a representative dataset);
  inputs and outputs stay float32 with QUANTIZE/DEQUANTIZE at the edges unless ``int8_io``.

Ops with no TFLite builtin: the converter's error names them ("Flex ops: ..."); with
``select_tf_ops`` the conversion is repeated with ``SELECT_TF_OPS`` so they become Flex custom
ops (TensorFlow kernels run by the Flex delegate), otherwise the error is reported.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgepart.convert.inputs import InputSpec, Sample, resolve_inputs
from edgepart.convert.quiet import quiet_fds as _quiet_fds
from edgepart.errors import ConversionError, UsageError

__all__ = ["TfSource", "convert_tf", "load_tf_source"]

QUANTIZE_MODES = ("none", "fp16", "dynamic", "int8")

_FLEX = re.compile(r"(?:TF Select ops|Flex ops):\s*([^\n]+)")


@dataclass
class TfSource:
    """A loaded Keras or SavedModel source, ready to convert and to run as the reference."""

    kind: str  # "keras" | "savedmodel"
    path: str
    inputs: list[InputSpec]  # names as in the converted model's signature
    outputs: list[str]
    function: Any  # the tf.function with the fixed input signature
    trackable: Any  # what keeps the variables alive (the Keras model or the loaded SavedModel)

    def reference(self, sample: Sample) -> dict[str, np.ndarray]:
        """The source model's outputs for ``sample`` (TensorFlow, eager)."""
        tf = _tf()
        args = [tf.constant(sample[s.name]) for s in self.inputs]
        out = self.function(*args)
        return {k: np.asarray(v.numpy()) for k, v in out.items()}


def _tf() -> Any:
    if "tensorflow" not in sys.modules:
        # C++ INFO/WARNING lines (oneDNN, CPU features) say nothing about the user's model
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        with _quiet_fds():  # absl's and oneDNN's start-up lines
            import tensorflow as tf  # heavy (seconds): loaded only when a conversion runs
    except ImportError:
        raise UsageError(
            "converting Keras or SavedModel sources needs TensorFlow: pip install 'edgepart[tf]'"
        ) from None
    tf.get_logger().setLevel(logging.ERROR)
    return tf


def _safe_name(name: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.]", "_", name).strip("_.") or "input"
    if not base[0].isalpha():
        base = "x_" + base
    out, k = base, 1
    while out in taken:
        k += 1
        out = f"{base}_{k}"
    taken.add(out)
    return out


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text[:400] + ("..." if len(text) > 400 else "")


def load_tf_source(
    path: str | os.PathLike[str],
    kind: str,
    input_shapes: dict[str | None, tuple[int, ...]],
    signature: str | None = None,
) -> TfSource:
    """Load a ``.keras``/``.h5`` file (``kind="keras"``) or a SavedModel directory.

    Raises
    ------
    ConversionError
        The file cannot be loaded (corrupted, a custom layer whose code is not registered,
        unsafe deserialization refused), or it has no usable signature.
    UsageError
        Input shapes are missing or contradict the model (see ``resolve_inputs``).
    """
    p = os.fspath(path)
    tf = _tf()
    if kind == "keras":
        import keras  # comes with TensorFlow (see _tf); loaded only for Keras sources

        try:
            with _quiet_fds():
                model = keras.saving.load_model(p, compile=False, safe_mode=True)
        except Exception as err:  # Keras raises ValueError, TypeError, OSError, ...
            raise ConversionError(f"{p}: cannot load the Keras model: {_one_line(err)}") from None
        try:
            ktensors = list(model.inputs)
        except (AttributeError, ValueError):
            ktensors = []
        if not ktensors:
            raise ConversionError(
                f"{p}: the Keras model declares no inputs (a subclassed model that was never "
                "built); save a functional or Sequential model, or export a SavedModel"
            )
        kdeclared: list[tuple[str, tuple[int | None, ...] | None, str]] = [
            (str(t.name), tuple(t.shape), np.dtype(str(t.dtype)).name) for t in ktensors
        ]
        specs = resolve_inputs(kdeclared, input_shapes, p)
        taken: set[str] = set()
        safe = [InputSpec(_safe_name(s.name, taken), s.shape, s.dtype) for s in specs]
        out_names = _output_names(model)

        # Weights enter the graph as constants through stateless_call: converting a function
        # that reads Keras 3 variables keeps them as resource variables (READ_VARIABLE ops on
        # uninitialized tensors), and constants need no SavedModel round trip.
        trainable = [tf.constant(v.numpy()) for v in model.trainable_variables]
        frozen = [tf.constant(v.numpy()) for v in model.non_trainable_variables]

        def serve(*args: Any) -> dict[str, Any]:
            x = list(args) if len(args) > 1 else args[0]
            y, _ = model.stateless_call(trainable, frozen, x, training=False)
            ys = list(y) if isinstance(y, (list, tuple)) else [y]
            if isinstance(y, dict):
                return {_out_key(k): v for k, v in y.items()}
            return dict(zip(out_names, ys, strict=True))

        tensor_specs = [tf.TensorSpec(s.shape, s.dtype, name=s.name) for s in safe]
        fn = tf.function(serve, input_signature=tensor_specs)
        trackable = model
    elif kind == "savedmodel":
        try:
            with _quiet_fds():
                loaded = tf.saved_model.load(p)
        except Exception as err:  # OSError, ValueError, tf.errors.*
            raise ConversionError(f"{p}: cannot load the SavedModel: {_one_line(err)}") from None
        sigs = dict(loaded.signatures)
        if not sigs:
            raise ConversionError(f"{p}: the SavedModel has no signatures to convert")
        key = signature or ("serving_default" if "serving_default" in sigs else None)
        if key is None:
            if len(sigs) != 1:
                raise UsageError(
                    f"{p}: the SavedModel has signatures {sorted(sigs)}; pick one with --signature"
                )
            key = next(iter(sigs))
        if key not in sigs:
            raise UsageError(f"--signature {key}: {p} has signatures {sorted(sigs)}")
        sig = sigs[key]
        _, kw = sig.structured_input_signature
        if not kw:
            raise ConversionError(f"{p}: signature {key!r} has no named inputs")
        declared: list[tuple[str, tuple[int | None, ...] | None, str]] = []
        for name in sorted(kw):
            spec = kw[name]
            shape = None if spec.shape.rank is None else tuple(spec.shape.as_list())
            declared.append((name, shape, np.dtype(spec.dtype.as_numpy_dtype).name))
        specs = resolve_inputs(declared, input_shapes, f"{p} (signature {key})")
        taken = set()
        safe = [InputSpec(_safe_name(s.name, taken), s.shape, s.dtype) for s in specs]
        original = [s.name for s in specs]
        out_names = sorted(sig.structured_outputs)

        def serve_sm(*args: Any) -> dict[str, Any]:
            res = sig(**dict(zip(original, args, strict=True)))
            return {_out_key(k): res[k] for k in out_names}

        tensor_specs = [tf.TensorSpec(s.shape, s.dtype, name=s.name) for s in safe]
        fn = tf.function(serve_sm, input_signature=tensor_specs)
        out_names = [_out_key(k) for k in out_names]
        trackable = loaded
    else:
        raise UsageError(f"unknown TensorFlow source kind {kind!r}")
    return TfSource(kind, p, safe, list(out_names), fn, trackable)


def _out_key(name: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", str(name)) or "output"


def _output_names(model: Any) -> list[str]:
    names = list(getattr(model, "output_names", None) or [])
    n_out = len(model.outputs) if getattr(model, "outputs", None) else 1
    if len(names) != n_out:
        names = [f"output_{k}" for k in range(n_out)]
    taken: set[str] = set()
    return [_safe_name(n, taken) for n in names]


def convert_tf(
    src: TfSource,
    quantize: str,
    representative: Callable[[], Iterator[Sample]] | None = None,
    *,
    select_tf_ops: bool = True,
    int8_io: bool = False,
) -> tuple[bytes, list[str]]:
    """Convert ``src``; returns the model bytes and the ops that needed ``SELECT_TF_OPS``
    (empty if the builtins sufficed).

    Raises
    ------
    ConversionError
        The converter failed (its own message, cut to one line), or ops need
        ``SELECT_TF_OPS`` and ``select_tf_ops`` is False.
    """
    if quantize not in QUANTIZE_MODES:
        raise UsageError(f"--quantize {quantize}: choose one of {', '.join(QUANTIZE_MODES)}")
    if quantize == "int8" and representative is None:
        raise UsageError("int8 quantization needs a representative dataset")
    if int8_io and quantize != "int8":
        raise UsageError("--int8-io goes with --quantize int8")
    tf = _tf()
    concrete = src.function.get_concrete_function()

    def attempt(flex: bool) -> bytes:
        conv = tf.lite.TFLiteConverter.from_concrete_functions([concrete], src.trackable)
        ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8 if quantize == "int8" else None]
        ops = [o for o in ops if o is not None] or [tf.lite.OpsSet.TFLITE_BUILTINS]
        if flex:
            ops.append(tf.lite.OpsSet.SELECT_TF_OPS)
        conv.target_spec.supported_ops = ops
        if quantize in ("fp16", "dynamic", "int8"):
            conv.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "fp16":
            conv.target_spec.supported_types = [tf.float16]
        if quantize == "int8":
            conv.representative_dataset = representative
            if int8_io:
                conv.inference_input_type = tf.int8
                conv.inference_output_type = tf.int8
        with _quiet_fds() as log, warnings.catch_warnings():
            # TF's calibrator runs its deprecated tf.lite.Interpreter and says so each time
            warnings.simplefilter("ignore", UserWarning)
            try:
                return bytes(conv.convert())
            except Exception as err:  # ConverterError and friends
                raise _ConvertFailed(str(err) + "\n" + log.read()) from None

    try:
        return attempt(False), []
    except _ConvertFailed as fail:
        flex = _flex_ops(fail.text)
        if not flex:
            raise ConversionError(
                f"{src.path}: the TFLite converter failed: {_reason(fail.text)}"
            ) from None
        if not select_tf_ops:
            raise ConversionError(
                f"{src.path}: ops {', '.join(flex)} have no TFLite builtin kernel; allow "
                "SELECT_TF_OPS (drop --no-select-tf-ops) or replace them in the model"
            ) from None
    try:
        return attempt(True), flex
    except _ConvertFailed as fail:
        raise ConversionError(
            f"{src.path}: the TFLite converter failed even with SELECT_TF_OPS: {_reason(fail.text)}"
        ) from None


class _ConvertFailed(Exception):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _flex_ops(text: str) -> list[str]:
    names: list[str] = []
    for m in _FLEX.finditer(text):
        for op in m.group(1).split(","):
            op = op.strip().rstrip(".")
            if op and not op.startswith("Flex"):
                op = "Flex" + op  # the custom code the op gets in the converted model
            if op and op not in names:
                names.append(op)
    return sorted(names)


def _reason(text: str) -> str:
    """The converter's most telling line (an ``error:`` line of the MLIR log if any)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error:" in ln:
            return ln[ln.index("error:") :][:300]
    return (lines[0] if lines else "no message")[:300]
