"""LiteRT-shaped tensor detail dicts and input checks for the partitioned interpreter."""

from __future__ import annotations

from typing import Any

import numpy as np

from edgepart.bundle.format import ModelTensor
from edgepart.errors import RuntimeBackendError, UsageError

__all__ = [
    "PartitionInvokeError",
    "StageFailedError",
    "TensorValueError",
    "check_value",
    "detail_from_partition",
    "detail_from_plan",
]


class TensorValueError(UsageError, ValueError):
    """A value of the wrong dtype or shape, or a tensor index that cannot be set or read.

    Also a ``ValueError``, which is what LiteRT's ``Interpreter`` raises in these cases, so
    code written against LiteRT keeps catching it.
    """


class StageFailedError(RuntimeBackendError):
    """A pipeline stage failed or its worker (thread, Ray actor or node) died mid-stream.

    ``incomplete`` lists the input indices (in stream order) that produced no output;
    ``stage`` is the failing stage's index (-1 if unknown).
    """

    def __init__(self, message: str, incomplete: tuple[int, ...] = (), stage: int = -1) -> None:
        super().__init__(message)
        self.incomplete = incomplete
        self.stage = stage


class PartitionInvokeError(RuntimeBackendError, RuntimeError):
    """A partition's LiteRT ``invoke`` failed (names the partition, its unit and executor).

    Also a ``RuntimeError``, which is what LiteRT's ``Interpreter.invoke`` raises.
    """


def detail_from_partition(it: Any, local: int, tensor: int, side: str) -> dict[str, Any]:
    """The LiteRT detail dict of a partition tensor, re-indexed to the source tensor index."""
    details = it.get_input_details() if side == "input" else it.get_output_details()
    for d in details:
        if d["index"] == local:
            out = dict(d)
            out["index"] = tensor
            return out
    raise AssertionError(f"partition tensor {local} is not a partition {side}")


def detail_from_plan(t: ModelTensor) -> dict[str, Any]:
    """Details for a model input that no partition reads (built from the plan)."""
    q = t.quantization
    scales = np.asarray(q["scales"] if q else [], np.float32)
    zps = np.asarray(q["zero_points"] if q else [], np.int32)
    sig = t.shape if t.shape_signature is None else t.shape_signature
    return {
        "name": t.tensor_name,
        "index": t.tensor,
        "shape": np.asarray(t.shape, np.int32),
        "shape_signature": np.asarray(sig, np.int32),
        "dtype": np.dtype(t.dtype).type,
        "quantization": (float(scales[0]), int(zps[0])) if len(scales) == 1 else (0.0, 0),
        "quantization_parameters": {
            "scales": scales,
            "zero_points": zps,
            "quantized_dimension": int(q["quantized_dimension"]) if q else 0,
            "block_size": 0,
        },
        "sparsity_parameters": {},
    }


def check_value(value: Any, detail: dict[str, Any]) -> np.ndarray:
    """``value`` as an array of exactly the tensor's dtype and shape, else one clear error."""
    arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    want = np.dtype(detail["dtype"])
    what = f"tensor {detail['index']} {detail['name']!r}"
    if arr.dtype != want:
        raise TensorValueError(
            f"cannot set {what}: got {arr.dtype} but it is {want}; convert with "
            f".astype(np.{want.name})"
        )
    shape = tuple(int(x) for x in detail["shape"])
    if arr.shape != shape:
        raise TensorValueError(
            f"cannot set {what}: got shape {list(arr.shape)} but it is {list(shape)}; partition "
            "shapes are fixed when the bundle is written: partition the model again with "
            "--input-shape "
            f"{detail.get('name', 'NAME')}={','.join(str(d) for d in arr.shape)} "
            "(input_shapes= in the API) for this size"
        )
    return arr
