"""PyTorch sources through ``litert-torch`` (the optional extra ``edgepart[torch]``).

A source is a ``torch.export`` program saved with ``torch.export.save`` (``.pt2``): a graph and
its weights, no pickled Python code to run. It is converted with ``litert_torch.convert`` on
sample arguments of the fixed input shapes; quantization is applied afterwards to the float
``.tflite`` by ``ai-edge-quantizer`` (which ``litert-torch`` installs), with these recipes:

* ``fp16``: float16 weights, float compute (weight-only, ``FLOAT_CASTING`` to 16 bits);
* ``dynamic``: int8 channel-wise weights, activations quantized on the fly
  (``dynamic_wi8_afp32``);
* ``int8``: int8 weights and activations (``static_wi8_ai8``), calibrated on the samples.

PyTorch, ``litert-torch`` and ``ai-edge-quantizer`` are imported inside these functions only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgepart.convert.inputs import InputSpec, Sample, resolve_inputs
from edgepart.convert.quiet import quiet_all
from edgepart.errors import ConversionError, UsageError

__all__ = ["TorchSource", "convert_torch", "load_torch_source"]

_DTYPES = {
    "torch.float32": "float32",
    "torch.float16": "float16",
    "torch.int64": "int64",
    "torch.int32": "int32",
    "torch.int8": "int8",
    "torch.uint8": "uint8",
    "torch.bool": "bool",
}


@dataclass
class TorchSource:
    """A loaded ``.pt2`` program, ready to convert and to run as the reference."""

    kind: str
    path: str
    inputs: list[InputSpec]
    outputs: list[str]
    module: Any

    def reference(self, sample: Sample) -> dict[str, np.ndarray]:
        """The program's outputs for ``sample`` (PyTorch, eager)."""
        import torch  # optional and heavy (edgepart[torch]); loaded by _modules() already

        with torch.no_grad():
            y = self.module(
                *[torch.from_numpy(np.ascontiguousarray(sample[s.name])) for s in self.inputs]
            )
        ys = list(y) if isinstance(y, (list, tuple)) else [y]
        return {n: v.detach().numpy() for n, v in zip(self.outputs, ys, strict=True)}


def _modules() -> tuple[Any, Any]:
    try:
        # optional and heavy (edgepart[torch], seconds to import): only for PyTorch sources
        with quiet_all():  # TensorFlow's and torchao's start-up lines
            import litert_torch
            import torch
    except ImportError:
        raise UsageError(
            "converting PyTorch programs needs litert-torch: pip install 'edgepart[torch]'"
        ) from None
    return torch, litert_torch


def load_torch_source(
    path: str | os.PathLike[str], input_shapes: dict[str | None, tuple[int, ...]]
) -> TorchSource:
    """Load a ``torch.export`` program (``.pt2``).

    Raises
    ------
    ConversionError
        The file is not a loadable exported program.
    """
    p = os.fspath(path)
    torch, _ = _modules()
    try:
        ep = torch.export.load(p)
    except Exception as err:  # RuntimeError, zipfile errors, ...
        text = " ".join(str(err).split())[:300]
        raise ConversionError(f"{p}: cannot load the torch.export program: {text}") from None
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    declared = []
    for name in ep.graph_signature.user_inputs:
        node = placeholders.get(name)
        val = None if node is None else node.meta.get("val")
        if val is None or not hasattr(val, "shape"):
            raise ConversionError(
                f"{p}: input {name!r} is not a tensor; only tensor inputs convert"
            )
        shape = tuple(int(d) if isinstance(d, int) else None for d in val.shape)
        dtype = _DTYPES.get(str(val.dtype))
        if dtype is None:
            raise ConversionError(f"{p}: input {name!r} has dtype {val.dtype}, not convertible")
        declared.append((name, shape, dtype))
    # litert-torch names the signature's inputs args_0, args_1, ... in the program's order
    specs = [
        InputSpec(f"args_{k}", s.shape, s.dtype)
        for k, s in enumerate(resolve_inputs(declared, input_shapes, p))
    ]
    n_out = len(ep.graph_signature.user_outputs)
    outputs = [f"output_{k}" for k in range(n_out)]
    module = ep.module()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        module.eval()  # BatchNorm and Dropout in inference mode, as the program was exported
    return TorchSource("torch", p, specs, outputs, module)


def convert_torch(
    src: TorchSource,
    quantize: str,
    calibration: Sequence[Sample] | None,
    *,
    int8_io: bool = False,
) -> tuple[bytes, list[str]]:
    """Convert with ``litert_torch.convert``, then quantize (module docstring).

    Raises
    ------
    ConversionError
        litert-torch or the quantizer failed (their message, on one line).
    """
    if int8_io:
        raise UsageError("--int8-io is not available for PyTorch sources (I/O stays float32)")
    torch, litert_torch = _modules()
    args = tuple(torch.zeros(s.shape, dtype=getattr(torch, s.dtype)) for s in src.inputs)
    try:
        with quiet_all():
            edge = litert_torch.convert(src.module, args)
            content = bytes(edge.model_content())
    except Exception as err:  # litert-torch raises many kinds
        text = " ".join(str(err).split())[:300]
        raise ConversionError(f"{src.path}: litert-torch failed: {text}") from None
    if quantize == "none":
        return content, []
    try:
        with quiet_all():
            return _quantize(content, quantize, calibration, src), []
    except (ValueError, RuntimeError) as err:
        text = " ".join(str(err).split())[:300]
        raise ConversionError(
            f"{src.path}: ai-edge-quantizer ({quantize}) failed: {text}"
        ) from None


def _quantize(
    content: bytes, mode: str, calibration: Sequence[Sample] | None, src: TorchSource
) -> bytes:
    # optional and heavy (comes with litert-torch, imports TensorFlow): only when quantizing
    from ai_edge_quantizer import quantizer, recipe
    from ai_edge_quantizer.algorithm_manager import AlgorithmName
    from ai_edge_quantizer.recipe_manager import RecipeManager
    from ai_edge_quantizer.utils.tfl_interpreter_utils import create_tfl_interpreter

    qt = quantizer.Quantizer(content)
    if mode == "fp16":
        rm = RecipeManager()
        rm.add_weight_only_config(
            ".*",
            "*",
            16,
            algorithm_key=AlgorithmName.FLOAT_CASTING,
        )
        qt.load_quantization_recipe(rm.get_quantization_recipe())
    elif mode == "dynamic":
        qt.load_quantization_recipe(recipe.dynamic_wi8_afp32())
    else:
        qt.load_quantization_recipe(recipe.static_wi8_ai8())
    result = None
    if qt.need_calibration:
        key = next(iter(create_tfl_interpreter(content).get_signature_list()))
        result = qt.calibrate({key: [dict(s) for s in calibration or ()]})
    return bytes(qt.quantize(result, enable_progress_report=False).quantized_model)
