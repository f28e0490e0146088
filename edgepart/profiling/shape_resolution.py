"""Tensor shapes as LiteRT resolves them, for models whose stored shapes are not the real ones.

A model's flatbuffer stores each tensor's shape as the converter inferred it. When shapes
depend on the inputs (a dynamic batch, a ``RESHAPE`` to a shape computed by ``SHAPE`` and
``PACK`` ops) the stored shape can be a placeholder (``-1`` in the shape signature, ``[]`` or
``[1]``), and costing the op from it is wrong. :func:`resolved_subgraph` lets the real runtime
resolve them: it prepares the model with LiteRT (builtin kernels, inputs resized to the
requested shapes), runs it once on seeded inputs (untimed: only the shapes are read), and
returns the main subgraph with every tensor's shape as the interpreter reports it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from edgepart.errors import RuntimeBackendError
from edgepart.ir.graph import Model, Subgraph
from edgepart.ir.values import Csr
from edgepart.profiling.timing import fill_inputs

__all__ = ["needs_resolution", "resolved_subgraph"]


def needs_resolution(sg: Subgraph) -> bool:
    """Whether some tensor of ``sg`` has a dynamic dimension in its shape signature."""
    sig = sg.tensor_signature
    return bool(len(sig.idx) and (np.asarray(sig.idx) < 0).any())


def resolved_subgraph(
    model: Model,
    content: bytes,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    seed: int = 0,
) -> Subgraph:
    """The main subgraph with the shapes LiteRT resolves (see the module docstring).

    Parameters
    ----------
    model
        The model (read from ``content``).
    content
        The model file's bytes.
    input_shapes
        Input tensor name to shape, for inputs with dynamic dimensions (default: as stored).

    Raises
    ------
    RuntimeBackendError
        If LiteRT cannot prepare or run the model.
    """
    it = None
    last = ""
    # builtin kernels first (every op keeps its own tensors); some models need XNNPACK's
    # custom ops (Convolution2DTransposeBias) or its handling of their weights
    for resolver in (
        OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        OpResolverType.AUTO,
    ):
        try:
            cand = Interpreter(
                model_content=content,
                num_threads=1,
                experimental_op_resolver_type=resolver,
                experimental_preserve_all_tensors=True,
            )
            for d in cand.get_input_details():
                want = (input_shapes or {}).get(str(d["name"]))
                if want is not None:
                    cand.resize_tensor_input(d["index"], [int(v) for v in want], strict=False)
            cand.allocate_tensors()
            fill_inputs(cand, seed)
            cand.invoke()
            it = cand
            break
        except (RuntimeError, ValueError) as err:
            msg = str(err).strip().splitlines()
            last = msg[0] if msg else str(err)
    if it is None:
        raise RuntimeBackendError(f"LiteRT cannot run the model to resolve its shapes: {last}")
    sg = model.main
    shapes = [tuple(int(v) for v in sg.tensor_shape.row(t)) for t in range(sg.num_tensors)]
    for d in it.get_tensor_details():
        t = int(d["index"])
        if 0 <= t < sg.num_tensors:
            shape = tuple(int(v) for v in d["shape"])
            if shape or not shapes[t]:
                shapes[t] = shape
    return dataclasses.replace(sg, tensor_shape=Csr.from_rows(shapes))
