"""The signature runner of a partitioned interpreter (LiteRT's ``SignatureRunner`` shape)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from edgepart.bundle.format import Plan
from edgepart.runtime.details import TensorValueError

if TYPE_CHECKING:
    from edgepart.runtime.interpreter import PartitionedInterpreter

__all__ = ["PartitionedSignatureRunner"]


class PartitionedSignatureRunner:
    """``runner(**inputs) -> {output name: array}`` over the model's signature names.

    Outputs are returned in signature-name order, as LiteRT does. Unlike LiteRT's runner it
    cannot resize inputs: every input must have the shape the bundle was written for.
    """

    def __init__(self, interpreter: PartitionedInterpreter, plan: Plan) -> None:
        self._interp = interpreter
        self._inputs = {t.name: t.tensor for t in sorted(plan.inputs, key=lambda t: t.name)}
        self._outputs = {t.name: t.tensor for t in sorted(plan.outputs, key=lambda t: t.name)}

    def __call__(self, **kwargs: Any) -> dict[str, np.ndarray]:
        if len(kwargs) != len(self._inputs):
            raise TensorValueError(
                "Invalid number of inputs provided for running a SignatureDef, expected "
                f"{len(self._inputs)} vs provided {len(kwargs)} (inputs: {list(self._inputs)})"
            )
        for name in kwargs:
            if name not in self._inputs:
                raise TensorValueError(
                    f"Invalid Input name ({name}) for SignatureDef; inputs: {list(self._inputs)}"
                )
        interp = self._interp
        if interp._scheduler is None:  # LiteRT's runner allocates on every call
            interp.allocate_tensors()
        for name, value in kwargs.items():
            interp.set_tensor(self._inputs[name], value)
        interp.invoke()
        return {name: interp.get_tensor(t) for name, t in self._outputs.items()}

    def get_input_details(self) -> dict[str, dict[str, Any]]:
        by_index = {d["index"]: d for d in self._interp.get_input_details()}
        return {name: by_index[t] for name, t in self._inputs.items()}

    def get_output_details(self) -> dict[str, dict[str, Any]]:
        by_index = {d["index"]: d for d in self._interp.get_output_details()}
        return {name: by_index[t] for name, t in self._outputs.items()}
