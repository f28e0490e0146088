#!/usr/bin/env python3
"""Build the architectures of TFLite's published Pixel benchmarks, with random weights.

TFLite's "Performance measurement" page (``tensorflow/lite/g3doc/performance/measurement.md``,
https://www.tensorflow.org/lite/performance/measurement, section "Android performance
benchmarks") gives latencies on a Pixel 3 and a Pixel 4 (Android 10, ``benchmark_model``, CPU
with 4 threads, GPU delegate, NNAPI delegate) for six models of the 2018 TFLite model zoo. Those
files cannot be downloaded here, and latency does not depend on weight values, so this tool
rebuilds the same architectures in TensorFlow with seeded random weights and converts them:

- ``mobilenet_v1_1.0_224``: ``tf.keras.applications.MobileNet`` (alpha 1.0, 224x224), float;
- ``mobilenet_v1_1.0_224_quant``: the same, fully integer-quantized (int8 kernels, uint8 input
  and output as the zoo's quantized model has) with a seeded random representative dataset;
- ``nasnet_mobile``: ``tf.keras.applications.NASNetMobile`` (224x224);
- ``squeezenet``: SqueezeNet 1.0 (Iandola et al. 2016: fire modules, 224x224), written here;
- ``inception_resnet_v2``: ``tf.keras.applications.InceptionResNetV2`` (299x299);
- ``inception_v4``: Inception-v4 (Szegedy et al. 2016, 299x299), written here.

and, for the EfficientNet-Lite figures measured on a Pixel 4 (``tensorflow/tpu``,
``models/official/efficientnet/lite/README.md``: CPU 4 threads float and 8-bit, GPU):

- ``efficientnet_lite0`` .. ``efficientnet_lite4`` (224, 240, 260, 280, 300 px) and their
  ``_quant`` twins: EfficientNet-B0's stages scaled by width and depth as EfficientNet-Lite
  scales them (no squeeze-and-excitation, ReLU6, the stem's 32 and the head's 1,280 channels
  and the first and last stages' repeats kept), written here.

Each model is built in a process of its own (TensorFlow's process-global name counters would
make a second build in one process differ): a child imports TensorFlow once and forks one
process per model to build, so the import is paid once per run, not once per model. Models are
cached in ``$EDGEPART_PHONE_MODELS_DIR`` or ``~/.cache/edgepart/phone_models`` with
``manifest.json`` (sha256, size, op count). The published figures and their sources are in
``edgepart/data/latency/tflite_published_pixel.json``; ``tools/fit_phone_profiles.py`` fits
the Pixel profiles from both.

Usage::

    python tools/build_phone_models.py            # build what is missing
    python tools/build_phone_models.py --list     # names and cached state
    python tools/build_phone_models.py --force squeezenet
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MODELS = (
    "mobilenet_v1_1.0_224",
    "mobilenet_v1_1.0_224_quant",
    "nasnet_mobile",
    "squeezenet",
    "inception_resnet_v2",
    "inception_v4",
    *(f"efficientnet_lite{i}{q}" for i in range(5) for q in ("", "_quant")),
)
RECIPE_VERSION = 2
SEED = 20260101


def out_dir() -> Path:
    env = os.environ.get("EDGEPART_PHONE_MODELS_DIR")
    return Path(env) if env else Path.home() / ".cache" / "edgepart" / "phone_models"


# ---------------------------------------------------------------------------- architectures


def _squeezenet(tf: Any) -> Any:
    L = tf.keras.layers

    def fire(x: Any, s: int, e: int) -> Any:
        x = L.Conv2D(s, 1, activation="relu")(x)
        a = L.Conv2D(e, 1, activation="relu")(x)
        b = L.Conv2D(e, 3, padding="same", activation="relu")(x)
        return L.Concatenate()([a, b])

    inp = L.Input((224, 224, 3), batch_size=1)
    x = L.Conv2D(96, 7, strides=2, activation="relu")(inp)
    x = L.MaxPooling2D(3, 2)(x)
    x = fire(x, 16, 64)
    x = fire(x, 16, 64)
    x = fire(x, 32, 128)
    x = L.MaxPooling2D(3, 2)(x)
    x = fire(x, 32, 128)
    x = fire(x, 48, 192)
    x = fire(x, 48, 192)
    x = fire(x, 64, 256)
    x = L.MaxPooling2D(3, 2)(x)
    x = fire(x, 64, 256)
    x = L.Conv2D(1000, 1, activation="relu")(x)
    x = L.GlobalAveragePooling2D()(x)
    x = L.Softmax()(x)
    return tf.keras.Model(inp, x)


def _inception_v4(tf: Any) -> Any:
    L = tf.keras.layers

    def cbr(x: Any, f: int, k: Any, s: int = 1, p: str = "same") -> Any:
        x = L.Conv2D(f, k, strides=s, padding=p, use_bias=False)(x)
        x = L.BatchNormalization(scale=False)(x)
        return L.Activation("relu")(x)

    def stem(x: Any) -> Any:
        x = cbr(x, 32, 3, 2, "valid")
        x = cbr(x, 32, 3, 1, "valid")
        x = cbr(x, 64, 3)
        x = L.Concatenate()([L.MaxPooling2D(3, 2)(x), cbr(x, 96, 3, 2, "valid")])
        a = cbr(cbr(x, 64, 1), 96, 3, 1, "valid")
        b = cbr(cbr(cbr(cbr(x, 64, 1), 64, (1, 7)), 64, (7, 1)), 96, 3, 1, "valid")
        x = L.Concatenate()([a, b])
        return L.Concatenate()([cbr(x, 192, 3, 2, "valid"), L.MaxPooling2D(3, 2)(x)])

    def block_a(x: Any) -> Any:
        a = cbr(L.AveragePooling2D(3, 1, "same")(x), 96, 1)
        b = cbr(x, 96, 1)
        c = cbr(cbr(x, 64, 1), 96, 3)
        d = cbr(cbr(cbr(x, 64, 1), 96, 3), 96, 3)
        return L.Concatenate()([a, b, c, d])

    def reduction_a(x: Any) -> Any:
        a = L.MaxPooling2D(3, 2)(x)
        b = cbr(x, 384, 3, 2, "valid")
        c = cbr(cbr(cbr(x, 192, 1), 224, 3), 256, 3, 2, "valid")
        return L.Concatenate()([a, b, c])

    def block_b(x: Any) -> Any:
        a = cbr(L.AveragePooling2D(3, 1, "same")(x), 128, 1)
        b = cbr(x, 384, 1)
        c = cbr(cbr(cbr(x, 192, 1), 224, (1, 7)), 256, (7, 1))
        d = cbr(x, 192, 1)
        for f, k in ((192, (7, 1)), (224, (1, 7)), (224, (7, 1)), (256, (1, 7))):
            d = cbr(d, f, k)
        return L.Concatenate()([a, b, c, d])

    def reduction_b(x: Any) -> Any:
        a = L.MaxPooling2D(3, 2)(x)
        b = cbr(cbr(x, 192, 1), 192, 3, 2, "valid")
        c = cbr(cbr(cbr(cbr(x, 256, 1), 256, (1, 7)), 320, (7, 1)), 320, 3, 2, "valid")
        return L.Concatenate()([a, b, c])

    def block_c(x: Any) -> Any:
        a = cbr(L.AveragePooling2D(3, 1, "same")(x), 256, 1)
        b = cbr(x, 256, 1)
        c = cbr(x, 384, 1)
        c = L.Concatenate()([cbr(c, 256, (1, 3)), cbr(c, 256, (3, 1))])
        d = cbr(cbr(cbr(x, 384, 1), 448, (1, 3)), 512, (3, 1))
        d = L.Concatenate()([cbr(d, 256, (1, 3)), cbr(d, 256, (3, 1))])
        return L.Concatenate()([a, b, c, d])

    inp = L.Input((299, 299, 3), batch_size=1)
    x = stem(inp)
    for _ in range(4):
        x = block_a(x)
    x = reduction_a(x)
    for _ in range(7):
        x = block_b(x)
    x = reduction_b(x)
    for _ in range(3):
        x = block_c(x)
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dense(1000, activation="softmax")(x)
    return tf.keras.Model(inp, x)


# EfficientNet-B0's stages (repeats, kernel, stride, output channels, expansion) and
# EfficientNet-Lite's scalings (width, depth, input size): Tan and Le 2019, and the Lite README
_B0_STAGES = (
    (1, 3, 1, 16, 1),
    (2, 3, 2, 24, 6),
    (2, 5, 2, 40, 6),
    (3, 3, 2, 80, 6),
    (3, 5, 1, 112, 6),
    (4, 5, 2, 192, 6),
    (1, 3, 1, 320, 6),
)
_LITE = {0: (1.0, 1.0, 224), 1: (1.0, 1.1, 240), 2: (1.1, 1.2, 260), 3: (1.2, 1.4, 280),
         4: (1.4, 1.8, 300)}  # fmt: skip


def _efficientnet_lite(tf: Any, width: float, depth: float, size: int) -> Any:
    import math

    L = tf.keras.layers

    def channels(c: int) -> int:  # scaled, to a multiple of 8, never below 90% of the scaled
        w = c * width
        n = max(8, int(w + 4) // 8 * 8)
        return n + 8 if n < 0.9 * w else n

    def cbr(x: Any, f: int, k: int = 1, s: int = 1, relu: bool = True, dw: bool = False) -> Any:
        if dw:
            x = L.DepthwiseConv2D(k, s, padding="same", use_bias=False)(x)
        else:
            x = L.Conv2D(f, k, s, padding="same", use_bias=False)(x)
        x = L.BatchNormalization()(x)
        return L.ReLU(6.0)(x) if relu else x

    inp = L.Input((size, size, 3), batch_size=1)
    x = cbr(inp, 32, 3, 2)
    cin = 32
    for i, (repeats, k, stride, cout, expand) in enumerate(_B0_STAGES):
        cout = channels(cout)
        if 0 < i < len(_B0_STAGES) - 1:
            repeats = math.ceil(depth * repeats)
        for j in range(repeats):
            s = stride if j == 0 else 1
            h = cbr(x, cin * expand) if expand != 1 else x
            h = cbr(h, 0, k, s, dw=True)
            h = cbr(h, cout, relu=False)
            x = L.Add()([x, h]) if s == 1 and cin == cout else h
            cin = cout
    x = cbr(x, 1280)
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dense(1000, activation="softmax")(x)
    return tf.keras.Model(inp, x)


def build(name: str) -> bytes:
    """Build and convert one model (call in a fresh process)."""
    import numpy as np
    import tensorflow as tf

    tf.keras.utils.set_random_seed(SEED)
    apps = tf.keras.applications

    # a batch of one, as the zoo's models have: static shapes everywhere (a dynamic batch
    # dimension would keep the GPU and NNAPI delegates from taking anything)
    def inp(size: int) -> Any:
        return tf.keras.Input((size, size, 3), batch_size=1)

    if name.startswith("mobilenet_v1"):
        model = apps.MobileNet(input_tensor=inp(224), alpha=1.0, weights=None)
        size = 224
    elif name == "nasnet_mobile":
        model = apps.NASNetMobile(input_tensor=inp(224), weights=None)
        size = 224
    elif name == "squeezenet":
        model = _squeezenet(tf)
        size = 224
    elif name == "inception_resnet_v2":
        model = apps.InceptionResNetV2(input_tensor=inp(299), weights=None)
        size = 299
    elif name == "inception_v4":
        model = _inception_v4(tf)
        size = 299
    elif name.startswith("efficientnet_lite"):
        width, depth, size = _LITE[int(name.removesuffix("_quant")[-1])]
        model = _efficientnet_lite(tf, width, depth, size)
    else:
        raise SystemExit(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if name.endswith("_quant"):
        rng = np.random.default_rng(SEED)

        def data() -> Any:
            for _ in range(8):
                yield [rng.uniform(-1, 1, (1, size, size, 3)).astype(np.float32)]

        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = data
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = tf.uint8
        conv.inference_output_type = tf.uint8
    out: bytes = conv.convert()
    return out


# ---------------------------------------------------------------------------- cache


def manifest(directory: Path) -> dict[str, Any]:
    p = directory / "manifest.json"
    if p.is_file():
        data: dict[str, Any] = json.loads(p.read_text())
        return data
    return {"models": {}}


def _op_count(data: bytes) -> int:
    try:
        from ai_edge_litert import schema_py_generated as schema

        m = schema.Model.GetRootAsModel(data, 0)
        return int(m.Subgraphs(0).OperatorsLength())
    except Exception:
        return -1


def ensure(name: str, *, force: bool = False) -> Path:
    """The cached model file, built in a child process if missing (or ``force``)."""
    return ensure_many([name], force=force)[name]


def _cached(d: Path, name: str) -> bool:
    path = d / f"{name}.tflite"
    entry = manifest(d)["models"].get(name)
    return (
        path.is_file()
        and entry is not None
        and entry.get("recipe_version") == RECIPE_VERSION
        and hashlib.sha256(path.read_bytes()).hexdigest() == entry.get("sha256")
    )


def ensure_many(names: Sequence[str], *, force: bool = False) -> dict[str, Path]:
    """The cached model files, the missing ones (all with ``force``) built by one child process
    that imports TensorFlow once and forks a process per model (:func:`_build_forked`)."""
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise SystemExit(f"unknown model {unknown[0]!r}; known: {', '.join(MODELS)}")
    d = out_dir()
    d.mkdir(parents=True, exist_ok=True)
    todo = [n for n in dict.fromkeys(names) if force or not _cached(d, n)]
    if todo:
        with tempfile.TemporaryDirectory() as tmp:
            files = {n: Path(tmp) / f"{n}.tflite" for n in todo}
            code = (
                "import sys; sys.path.insert(0, sys.argv[1]); import build_phone_models as b; "
                "sys.exit(b._build_forked(sys.argv[2:]))"
            )
            env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
            args = [a for n in todo for a in (n, str(files[n]))]
            r = subprocess.run(
                [sys.executable, "-c", code, str(Path(__file__).parent), *args],
                env=env,
                capture_output=True,
                text=True,
            )
            tail = " | ".join((r.stderr or "").strip().splitlines()[-3:])
            for n in todo:  # the models built before a failure are kept; that one is named
                if not files[n].is_file():
                    raise SystemExit(f"building {n} failed: {tail}")
                _install(d, n, files[n].read_bytes())
            if r.returncode != 0:
                raise SystemExit(f"building {', '.join(todo)} failed: {tail}")
    return {n: d / f"{n}.tflite" for n in names}


def _build_forked(args: Sequence[str]) -> int:
    """Child process: import TensorFlow, then build each ``name dest`` pair of ``args`` in a
    fork of this process (each build starts from the same fresh TensorFlow state, as in a
    process of its own, without importing TensorFlow again: 8 s a model here). Stops at the
    first failure (exit status 1, its traceback on stderr)."""
    import keras  # noqa: F401
    import tensorflow  # noqa: F401
    from build_corpus import fork_child  # this directory

    for name, dest in zip(args[::2], args[1::2], strict=True):

        def work(name: str = name, dest: str = dest) -> int:
            part = Path(dest + ".part")  # a file at dest is a complete model
            part.write_bytes(build(name))
            os.replace(part, dest)
            return 0

        _, wait_status = os.waitpid(fork_child(work), 0)
        if os.waitstatus_to_exitcode(wait_status) != 0:
            return 1
    return 0


def _install(d: Path, name: str, data: bytes) -> None:
    path = d / f"{name}.tflite"
    part = path.with_suffix(".part")
    part.write_bytes(data)
    os.replace(part, path)
    man = manifest(d)
    man["models"][name] = {
        "file": path.name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "ops": _op_count(data),
        "recipe_version": RECIPE_VERSION,
        "seed": SEED,
    }
    tmpm = d / "manifest.json.part"
    tmpm.write_text(json.dumps(man, indent=1, sort_keys=True) + "\n")
    os.replace(tmpm, d / "manifest.json")


def ensure_all(force: bool = False) -> dict[str, Path]:
    return ensure_many(MODELS, force=force)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="models to build (default: all)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--force", action="store_true", help="rebuild even if cached")
    args = ap.parse_args(argv)
    if args.list:
        man = manifest(out_dir())["models"]
        for n in MODELS:
            e = man.get(n)
            state = f"cached {e['size']:,} B, {e['ops']} ops" if e else "not built"
            print(f"{n:<28} {state}")
        return 0
    for n in args.names or MODELS:
        p = ensure(n, force=args.force)
        print(f"{n:<28} {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
