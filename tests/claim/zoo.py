"""Small TensorFlow-built models exercising XNNPACK's op and dtype rules (float, int8, fp16,
dynamic-range), mixed with ops XNNPACK refuses. Used with LiteRT as the oracle."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Builder = Callable[[], tuple[object, list[object]]]


def _convert(tf, fn, specs, quant=None, seed=0):
    conv = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function(*specs)], fn)
    rng = np.random.default_rng(seed)

    def rep():
        for _ in range(4):
            yield [rng.standard_normal([d or 1 for d in s.shape]).astype(np.float32) for s in specs]

    if quant == "fp16":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.target_spec.supported_types = [tf.float16]
    elif quant == "dynamic":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    elif quant in ("int8", "int8io"):
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = rep
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if quant == "int8io":
            conv.inference_input_type = tf.int8
            conv.inference_output_type = tf.int8
    elif quant == "int8mixed":  # int8 where possible, float fallback for the rest
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = rep
    return conv.convert()


def build_zoo(out_dir) -> dict[str, object]:
    """Write the zoo's .tflite files into ``out_dir``; returns name -> path."""
    import tensorflow as tf

    rng = np.random.default_rng(1)
    w = lambda *s: tf.constant(rng.standard_normal(s).astype(np.float32) * 0.1)  # noqa: E731

    k1, k2, kdw = w(3, 3, 3, 8), w(1, 1, 8, 16), w(3, 3, 16, 1)
    fc1, fc2 = w(64, 32), w(32, 10)
    big = w(512, 256)

    def cnn(x):
        y = tf.nn.relu6(tf.nn.conv2d(x, k1, 2, "SAME") + 0.1)
        y = tf.nn.conv2d(y, k2, 1, "VALID")
        y = tf.nn.depthwise_conv2d(y, kdw, [1, 1, 1, 1], "SAME")
        y = tf.nn.max_pool2d(y, 2, 2, "VALID")
        y = tf.nn.avg_pool2d(y, 2, 2, "SAME")
        y = tf.pad(y, [[0, 0], [1, 1], [1, 1], [0, 0]])
        y = tf.image.resize(y, [8, 8], method="bilinear")
        y = tf.concat([y, tf.nn.leaky_relu(y, 0.2)], axis=3)
        y = tf.reduce_mean(y, axis=[1, 2])
        y = tf.reshape(y, [1, 32])
        y = tf.concat([y, y * 2.0], axis=1)
        y = tf.nn.tanh(tf.matmul(y, fc1))
        y = tf.matmul(y, fc2)
        return tf.nn.softmax(y)

    def mixed(x):  # refused ops in the middle of supported chains
        a = tf.nn.relu(x * 2.0)
        b = tf.math.cumsum(x, axis=1)
        c = tf.nn.sigmoid(a + 1.0)
        d = tf.math.cumsum(b, axis=1)
        e = tf.argmax(c, axis=1)
        f = tf.cast(e, tf.float32)
        g = tf.gather(c, [0, 2, 4], axis=1)
        return c + d, f * 3.0, tf.exp(g)

    def shapes(x):
        y = tf.transpose(x, [0, 2, 1])
        y = tf.strided_slice(y, [0, 0, 0], [1, 4, 6], [1, 1, 1])
        y = tf.slice(y, [0, 1, 1], [1, 3, 4])
        a, b = tf.split(y, 2, axis=2)
        y = tf.concat([tf.square(a), tf.abs(b), tf.math.maximum(a, b)], axis=2)
        y = tf.reduce_max(y, axis=2) - tf.reduce_sum(y, axis=2)
        z = tf.strided_slice(x, [0, 0, 0], [1, 8, 8], [1, 2, 1])  # stride 2: refused
        return y, tf.math.rsqrt(tf.abs(z) + 1.0), tf.nn.elu(x), tf.math.squared_difference(x, x)

    def dense_big(x):
        return tf.nn.relu(tf.matmul(x, big))

    def bmm(x, y):
        return tf.matmul(x, y) + 1.0

    def softmax_beta(x):
        return tf.nn.softmax(x * 2.0), tf.nn.gelu(x), tf.math.floor(x), tf.math.ceil(x)

    def rank5(x):
        y = tf.reshape(x * 2.0, [1, 2, 2, 2, 8])
        y = tf.nn.relu(y) + 1.0
        return tf.reshape(y, [1, 64])

    models = {
        "zoo_cnn_f32": (cnn, [tf.TensorSpec([1, 32, 32, 3])], None),
        "zoo_cnn_int8": (cnn, [tf.TensorSpec([1, 32, 32, 3])], "int8"),
        "zoo_cnn_int8io": (cnn, [tf.TensorSpec([1, 32, 32, 3])], "int8io"),
        "zoo_cnn_fp16": (cnn, [tf.TensorSpec([1, 32, 32, 3])], "fp16"),
        "zoo_cnn_dynamic": (cnn, [tf.TensorSpec([1, 32, 32, 3])], "dynamic"),
        "zoo_mixed_f32": (mixed, [tf.TensorSpec([1, 8])], None),
        "zoo_mixed_int8": (mixed, [tf.TensorSpec([1, 8])], "int8mixed"),
        "zoo_shapes_f32": (shapes, [tf.TensorSpec([1, 8, 8])], None),
        "zoo_dense_dynamic": (dense_big, [tf.TensorSpec([1, 512])], "dynamic"),
        "zoo_dense_fp16": (dense_big, [tf.TensorSpec([1, 512])], "fp16"),
        "zoo_bmm_f32": (bmm, [tf.TensorSpec([2, 4, 8]), tf.TensorSpec([2, 8, 3])], None),
        "zoo_unary_f32": (softmax_beta, [tf.TensorSpec([1, 16])], None),
        "zoo_rank5_f32": (rank5, [tf.TensorSpec([1, 64])], None),
    }
    out = {}
    for name, (fn, specs, quant) in models.items():
        data = _convert(tf, tf.function(fn), specs, quant)
        path = out_dir / f"{name}.tflite"
        path.write_bytes(data)
        out[name] = path
    return out
