"""Keras source models for the ``convert`` tests, built with TensorFlow in a child process.

``python keras_zoo.py OUT [NAME ...]`` writes ``OUT/<name>.keras`` for each architecture
(default: all), conditioned so their outputs depend on their inputs (BatchNorm statistics from
one training-mode batch, as ``tools/build_corpus.py`` does), plus these extras:

* ``cnn.h5``: the same CNN in the legacy HDF5 format;
* ``savedmodel/``: a SavedModel (a tf.Module with a ``serving_default`` signature, dynamic batch);
* ``flex_savedmodel/``: a SavedModel using ``tf.linalg.inv`` (no TFLite builtin: Flex op);
* ``calib/<name>/``: 32 ``.npy`` samples per architecture, uniform in [-1, 1] (one file each).

Everything is seeded: the same command writes the same models.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ARCHITECTURES = ("cnn", "mobilenet_v2", "resnet", "mlp", "transformer", "multi_io")


def _cnn(keras: Any) -> Any:
    inp = keras.Input((32, 32, 3), name="image")
    x = keras.layers.Conv2D(16, 3, padding="same")(inp)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.ReLU()(x)
    x = keras.layers.MaxPooling2D(2)(x)
    x = keras.layers.Conv2D(32, 3, padding="same", activation="relu")(x)
    x = keras.layers.AveragePooling2D(2)(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(10, name="logits")(x)
    out = keras.layers.Softmax(name="probs")(x)
    return keras.Model(inp, out, name="cnn")


def _mobilenet_v2(keras: Any) -> Any:
    return keras.applications.MobileNetV2(
        input_shape=(64, 64, 3), alpha=0.35, weights=None, classes=10
    )


def _resnet(keras: Any) -> Any:
    inp = keras.Input((32, 32, 3), name="image")
    x = keras.layers.Conv2D(16, 3, padding="same", use_bias=False)(inp)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.ReLU()(x)
    for filters, stride in ((16, 1), (32, 2), (64, 2)):
        y = keras.layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False)(x)
        y = keras.layers.BatchNormalization()(y)
        y = keras.layers.ReLU()(y)
        y = keras.layers.Conv2D(filters, 3, padding="same", use_bias=False)(y)
        y = keras.layers.BatchNormalization()(y)
        if stride != 1 or x.shape[-1] != filters:
            x = keras.layers.Conv2D(filters, 1, strides=stride, use_bias=False)(x)
        x = keras.layers.ReLU()(keras.layers.Add()([x, y]))
    x = keras.layers.GlobalAveragePooling2D()(x)
    out = keras.layers.Dense(10, activation="softmax", name="probs")(x)
    return keras.Model(inp, out, name="resnet")


def _mlp(keras: Any) -> Any:
    inp = keras.Input((64,), name="features")
    x = keras.layers.Dense(128, activation="relu")(inp)
    x = keras.layers.Dense(128, activation="tanh")(x)
    x = keras.layers.Dense(64, activation="relu")(x)
    out = keras.layers.Dense(5, name="scores")(x)
    return keras.Model(inp, out, name="mlp")


def _transformer(keras: Any) -> Any:
    inp = keras.Input((16, 32), name="tokens")
    att = keras.layers.MultiHeadAttention(num_heads=4, key_dim=8)(inp, inp)
    x = keras.layers.LayerNormalization()(keras.layers.Add()([inp, att]))
    ff = keras.layers.Dense(64, activation="gelu")(x)
    ff = keras.layers.Dense(32)(ff)
    x = keras.layers.LayerNormalization()(keras.layers.Add()([x, ff]))
    x = keras.layers.GlobalAveragePooling1D()(x)
    out = keras.layers.Dense(6, activation="softmax", name="probs")(x)
    return keras.Model(inp, out, name="transformer")


def _multi_io(keras: Any) -> Any:
    img = keras.Input((16, 16, 3), name="image")
    meta = keras.Input((8,), name="meta")
    x = keras.layers.Conv2D(8, 3, activation="relu")(img)
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Concatenate()([x, keras.layers.Dense(8, activation="relu")(meta)])
    cls = keras.layers.Dense(4, activation="softmax", name="cls")(x)
    reg = keras.layers.Dense(2, name="box")(x)
    return keras.Model([img, meta], [cls, reg], name="multi_io")


BUILDERS: dict[str, Callable[[Any], Any]] = {
    "cnn": _cnn,
    "mobilenet_v2": _mobilenet_v2,
    "resnet": _resnet,
    "mlp": _mlp,
    "transformer": _transformer,
    "multi_io": _multi_io,
}


def _condition(keras: Any, model: Any, rng: Any) -> None:
    """BatchNorm layers get random affine terms and the statistics of one real batch."""
    import numpy as np

    bns = [la for la in model.layers if isinstance(la, keras.layers.BatchNormalization)]
    if not bns:
        return
    for la in bns:
        la.gamma.assign(rng.uniform(0.5, 1.5, la.gamma.shape).astype(np.float32))
        la.beta.assign(rng.uniform(-0.1, 0.4, la.beta.shape).astype(np.float32))
        la.momentum = 0.0
    batch = [rng.uniform(-1, 1, (8, *t.shape[1:])).astype(np.float32) for t in model.inputs]
    model(batch if len(batch) > 1 else batch[0], training=True)


def _samples(model: Any, out: Path, rng: Any, count: int = 32) -> None:
    import numpy as np

    out.mkdir(parents=True, exist_ok=True)
    for t in model.inputs:
        name = str(t.name)
        for k in range(count):
            x = rng.uniform(-1, 1, (1, *t.shape[1:])).astype(np.float32)
            prefix = f"{name}." if len(model.inputs) > 1 else ""
            np.save(out / f"{prefix}{k:03d}.npy", x)


def build(out: Path, names: list[str]) -> None:
    import keras
    import numpy as np
    import tensorflow as tf

    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        keras.utils.set_random_seed(7)
        rng = np.random.default_rng(11)
        model = BUILDERS[name](keras)
        _condition(keras, model, rng)
        model.save(out / f"{name}.keras")
        _samples(model, out / "calib" / name, rng)
        if name == "cnn":
            model.save(out / "cnn.h5")
    if set(names) == set(ARCHITECTURES):
        _savedmodels(tf, out)


def _savedmodels(tf: Any, out: Path) -> None:
    import numpy as np

    rng = np.random.default_rng(5)
    w1 = tf.constant(rng.standard_normal((12, 24)).astype(np.float32) / 12**0.5)
    w2 = tf.constant(rng.standard_normal((24, 3)).astype(np.float32) / 24**0.5)

    class Dense(tf.Module):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.w1 = tf.Variable(w1)
            self.w2 = tf.Variable(w2)

        @tf.function(input_signature=[tf.TensorSpec([None, 12], tf.float32, name="x")])
        def serve(self, x: Any) -> Any:
            h = tf.nn.relu(tf.matmul(x, self.w1))
            return {"y": tf.nn.softmax(tf.matmul(h, self.w2))}

    m = Dense()
    tf.saved_model.save(m, str(out / "savedmodel"), signatures={"serving_default": m.serve})

    class Inverse(tf.Module):  # type: ignore[misc, name-defined]
        @tf.function(input_signature=[tf.TensorSpec([1, 4, 4], tf.float32, name="x")])
        def serve(self, x: Any) -> Any:
            # MatrixInverse has no TFLite builtin: the converter needs SELECT_TF_OPS (Flex)
            y = tf.linalg.inv(x + 4.0 * tf.eye(4))
            return {"y": tf.nn.relu(tf.reshape(y, [1, 16]))}

    f = Inverse()
    tf.saved_model.save(f, str(out / "flex_savedmodel"), signatures={"serving_default": f.serve})


if __name__ == "__main__":
    build(Path(sys.argv[1]), sys.argv[2:] or list(ARCHITECTURES))
