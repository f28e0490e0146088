"""Build stage training models (edgepart.runtime.training) of a seeded Keras MLP with TensorFlow.

The model: ``keras.Sequential`` of Dense layers (ReLU, the last linear) with random weights
(seeded), cut into pipeline stages by layer. Each stage becomes one ``.tflite`` file with its
weights and gradient accumulators as resource variables and three signatures, converted with
TFLite builtins only (LiteRT runs them without the TF kernels):

* ``forward(x) -> y``;
* ``backward(x, dy) -> dx``: recomputes the stage's activations from its stashed input
  (activation checkpointing inside the stage), back-propagates ``dy`` through its layers, adds
  the weight gradients to the accumulators; the last stage takes ``target`` and returns
  ``loss`` too (``0.5 * sum((y - target)^2)`` over the micro-batch, so accumulated gradients
  are the whole batch's);
* ``apply(lr) -> w{i}, b{i}``: ``w -= lr * grad``, accumulators zeroed, the new weights out.

Gradients are written out (ReLU's as a mask) because TensorFlow's gradient kernels
(``ReluGrad``) are not TFLite builtins. :func:`reference_step` gives the same SGD step on the
whole batch with ``tf.GradientTape`` on the Keras model, to check the pipeline against.

Usage::

    python tools/build_training_stages.py OUT_DIR [--stages 0,1 2 3] [--micro-batch 4]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

LAYERS = (64, 64, 32, 8)
"""Units of the Dense layers (ReLU, the last linear)."""
FEATURES = 32
"""Input features."""
DEFAULT_STAGES = ((0, 1), (2,), (3,))
"""Layers of each stage."""


def keras_model(seed: int = 0) -> Any:
    """The seeded Keras MLP."""
    import keras  # lazy: TensorFlow only to build

    keras.utils.set_random_seed(seed)
    layers = [keras.Input((FEATURES,))]
    for k, units in enumerate(LAYERS):
        act = "relu" if k < len(LAYERS) - 1 else None
        layers.append(keras.layers.Dense(units, activation=act, name=f"dense{k}"))
    return keras.Sequential(layers)


def stage_module(model: Any, layers: Sequence[int], last: bool, batch: int) -> Any:
    """A ``tf.Module`` with the three signatures of one stage."""
    import tensorflow as tf  # lazy: TensorFlow only to build

    dense = [model.layers[k] for k in layers]
    n_in = dense[0].kernel.shape[0]
    n_out = dense[-1].kernel.shape[1]
    relu = [k < len(LAYERS) - 1 for k in layers]

    class Stage(tf.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.w = [tf.Variable(d.kernel.numpy()) for d in dense]
            self.b = [tf.Variable(d.bias.numpy()) for d in dense]
            self.gw = [tf.Variable(tf.zeros_like(d.kernel)) for d in dense]
            self.gb = [tf.Variable(tf.zeros_like(d.bias)) for d in dense]

        def _forward(self, x: Any) -> tuple[Any, list[Any], list[Any]]:
            xs, pres = [], []
            for w, b, r in zip(self.w, self.b, relu, strict=True):
                xs.append(x)
                pre = tf.matmul(x, w) + b
                pres.append(pre)
                x = tf.nn.relu(pre) if r else pre
            return x, xs, pres

        @tf.function(input_signature=[tf.TensorSpec([batch, n_in], tf.float32)])
        def forward(self, x: Any) -> Any:
            return {"y": self._forward(x)[0]}

        def _backward(self, x: Any, dy: Any) -> Any:
            _, xs, pres = self._forward(x)
            d = dy
            for k in reversed(range(len(self.w))):
                if relu[k]:
                    d = d * tf.cast(pres[k] > 0, tf.float32)
                self.gw[k].assign_add(tf.matmul(xs[k], d, transpose_a=True))
                self.gb[k].assign_add(tf.reduce_sum(d, axis=0))
                d = tf.matmul(d, self.w[k], transpose_b=True)
            return d

        @tf.function(
            input_signature=[
                tf.TensorSpec([batch, n_in], tf.float32),
                tf.TensorSpec([batch, n_out], tf.float32),
            ]
        )
        def backward(self, x: Any, dy: Any) -> Any:
            return {"dx": self._backward(x, dy)}

        @tf.function(
            input_signature=[
                tf.TensorSpec([batch, n_in], tf.float32),
                tf.TensorSpec([batch, n_out], tf.float32),
            ]
        )
        def backward_loss(self, x: Any, target: Any) -> Any:
            y = self._forward(x)[0]
            loss = 0.5 * tf.reduce_sum(tf.square(y - target))
            return {"dx": self._backward(x, y - target), "loss": loss}

        @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
        def apply(self, lr: Any) -> Any:
            out = {}
            for k, w, b, gw, gb in zip(layers, self.w, self.b, self.gw, self.gb, strict=True):
                w.assign_sub(lr * gw)
                b.assign_sub(lr * gb)
                gw.assign(tf.zeros_like(gw))
                gb.assign(tf.zeros_like(gb))
                out[f"w{k}"] = w.read_value()
                out[f"b{k}"] = b.read_value()
            return out

    return Stage()


def convert(module: Any, last: bool, workdir: Path) -> bytes:
    """The stage module as a TFLite model (builtins only, resource variables kept)."""
    import tensorflow as tf  # lazy: TensorFlow only to build

    signatures = {
        "forward": module.forward.get_concrete_function(),
        "backward": (module.backward_loss if last else module.backward).get_concrete_function(),
        "apply": module.apply.get_concrete_function(),
    }
    tf.saved_model.save(module, str(workdir), signatures=signatures)
    conv = tf.lite.TFLiteConverter.from_saved_model(str(workdir), signature_keys=list(signatures))
    conv.experimental_enable_resource_variables = True
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    blob: bytes = conv.convert()
    return blob


def build(
    out_dir: Path,
    stages: Sequence[Sequence[int]] = DEFAULT_STAGES,
    micro_batch: int = 4,
    seed: int = 0,
) -> list[Path]:
    """Write ``stage{k}.tflite`` for every stage into ``out_dir``; returns their paths."""
    import tempfile

    flat = [k for s in stages for k in s]
    if flat != list(range(len(LAYERS))):
        raise SystemExit(f"stages {stages} must list layers 0..{len(LAYERS) - 1} in order")
    model = keras_model(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, layers in enumerate(stages):
        last = k == len(stages) - 1
        module = stage_module(model, layers, last, micro_batch)
        with tempfile.TemporaryDirectory() as d:
            blob = convert(module, last, Path(d) / "saved")
        path = out_dir / f"stage{k}.tflite"
        path.write_bytes(blob)
        paths.append(path)
    return paths


def reference_step(
    inputs: Sequence[np.ndarray], targets: Sequence[np.ndarray], lr: float, seed: int = 0
) -> tuple[list[float], dict[str, np.ndarray]]:
    """The same step on the whole batch with ``tf.GradientTape`` on the Keras model: the
    per-micro-batch losses and the weights after ``w -= lr * grad`` (``w{k}``, ``b{k}``)."""
    import tensorflow as tf  # lazy: TensorFlow only to build

    model = keras_model(seed)
    x = tf.constant(np.concatenate(inputs))
    t = tf.constant(np.concatenate(targets))
    with tf.GradientTape() as tape:
        y = model(x)
        loss = 0.5 * tf.reduce_sum(tf.square(y - t))
    names = [(f"w{k}", f"b{k}") for k in range(len(LAYERS))]
    variables = [(d.kernel, d.bias) for d in model.layers]
    grads = tape.gradient(loss, variables)
    out = {}
    for nk, vk, gk in zip(names, variables, grads, strict=True):
        for name, var, g in zip(nk, vk, gk, strict=True):
            out[name] = (var - lr * g).numpy()
    ys = np.split(y.numpy(), len(inputs))
    losses = [float(0.5 * np.sum(np.square(a - b))) for a, b in zip(ys, targets, strict=True)]
    return losses, out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument(
        "--stages",
        nargs="+",
        default=[",".join(map(str, s)) for s in DEFAULT_STAGES],
        help="layers of each stage, comma-separated (default: 0,1 2 3)",
    )
    ap.add_argument("--micro-batch", type=int, default=4)
    args = ap.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    stages = [tuple(int(k) for k in s.split(",")) for s in args.stages]
    for p in build(args.out_dir, stages, args.micro_batch):
        print(p, p.stat().st_size, "bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
