"""Conversion of trained models to checked ``.tflite`` files (``edgepart convert``).

:func:`convert_model` takes a Keras file (``.keras``, ``.h5``), a SavedModel directory or a
PyTorch ``torch.export`` program (``.pt2``, with ``edgepart[torch]``) through the real converters
(TensorFlow's ``TFLiteConverter``; ``litert-torch``), quantizes it (``none``, ``fp16``,
``dynamic``, ``int8``), and checks the result against the source model's outputs.
"""

from __future__ import annotations

from edgepart.convert.checks import LIMITS, OutputCheck
from edgepart.convert.inputs import InputSpec
from edgepart.convert.pipeline import QUANTIZE_MODES, ConversionResult, convert_model, source_kind

__all__ = [
    "LIMITS",
    "QUANTIZE_MODES",
    "ConversionResult",
    "InputSpec",
    "OutputCheck",
    "convert_model",
    "source_kind",
]
