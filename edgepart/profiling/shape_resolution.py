"""Tensor shapes as LiteRT resolves them, for models whose stored shapes are not the real ones.

A model's flatbuffer stores each tensor's shape as the converter inferred it. When shapes
depend on the inputs (a dynamic batch, a ``RESHAPE`` to a shape computed by ``SHAPE`` and
``PACK`` ops) the stored shape can be a placeholder (``-1`` in the shape signature, ``[]`` or
``[1]``), and costing the op from it is wrong. :func:`resolved_subgraph` lets the real runtime
resolve them: it prepares the model with LiteRT (builtin kernels, inputs resized to the
requested shapes), runs it once on seeded inputs (untimed: only the shapes are read), and
returns the main subgraph with every tensor's shape as the interpreter reports it.

The same run counts the iterations of ``WHILE`` loops whose trip count depends on the inputs
(:func:`resolve`): a loop variable the body steps by a constant (the counter every
``tf.while_loop`` carries) moved from its value before the loop to its value after it in that
many steps. The inputs are the seeded ones edgepart times models with
(:func:`edgepart.profiling.timing.fill_inputs`), so an estimate and a timing of the model
count the same iterations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from edgepart.cost.kernels import uncounted_loops
from edgepart.errors import RuntimeBackendError
from edgepart.ir.graph import Model, Subgraph
from edgepart.ir.values import Csr
from edgepart.profiling.timing import fill_inputs

__all__ = ["Resolution", "needs_resolution", "needs_run", "resolve", "resolved_subgraph"]


def needs_resolution(sg: Subgraph) -> bool:
    """Whether some tensor of ``sg`` has a dynamic dimension in its shape signature."""
    sig = sg.tensor_signature
    return bool(len(sig.idx) and (np.asarray(sig.idx) < 0).any())


def needs_run(model: Model) -> bool:
    """Whether predicting ``model`` takes a run of it: dynamic shapes to resolve, or a loop
    whose trip count depends on the inputs."""
    return needs_resolution(model.main) or bool(uncounted_loops(model))


@dataclasses.dataclass(frozen=True)
class Resolution:
    """What one untimed run of a model tells a prediction of it.

    ``subgraph``: the main subgraph with the shapes LiteRT resolved; ``trips``: per main
    subgraph ``WHILE`` op whose count depends on the inputs
    (:func:`~edgepart.cost.kernels.uncounted_loops`), its iterations in the run, where a
    counter shows them.
    """

    subgraph: Subgraph
    trips: dict[int, float]


def resolve(
    model: Model,
    content: bytes,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    seed: int = 0,
) -> Resolution:
    """Run the model once, untimed, and read its shapes and loop counts (module docstring).

    Raises
    ------
    RuntimeBackendError
        If LiteRT cannot prepare or run the model.
    """
    it = _run_once(content, input_shapes, seed)
    return Resolution(_with_shapes(model, it), _loop_trips(model, it))


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
    return _with_shapes(model, _run_once(content, input_shapes, seed))


def _run_once(content: bytes, input_shapes: Mapping[str, Sequence[int]] | None, seed: int) -> Any:
    """An interpreter that ran the model once on seeded inputs, every tensor kept."""
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
    return it


def _with_shapes(model: Model, it: Any) -> Subgraph:
    sg = model.main
    shapes = [tuple(int(v) for v in sg.tensor_shape.row(t)) for t in range(sg.num_tensors)]
    for d in it.get_tensor_details():
        t = int(d["index"])
        if 0 <= t < sg.num_tensors:
            shape = tuple(int(v) for v in d["shape"])
            if shape or not shapes[t]:
                shapes[t] = shape
    return dataclasses.replace(sg, tensor_shape=Csr.from_rows(shapes))


def _loop_trips(model: Model, it: Any) -> dict[int, float]:
    """Iterations of the main subgraph's input-dependent ``WHILE`` loops in the run of ``it``:
    a loop variable whose body output is ``ADD`` (or ``SUB``) of that variable and a scalar
    constant steps by it each iteration, so (after - before) / step iterations ran. Loops
    without such a counter are left out."""
    sg = model.main
    out: dict[int, float] = {}
    for op in uncounted_loops(model):
        refs = sg.op(op).subgraph_refs
        if len(refs) < 2:  # a WHILE names its condition and its body
            continue
        body = model.subgraphs[refs[1]]
        ins = [int(t) for t in sg.op_inputs.row(op)]
        outs = [int(t) for t in sg.op_outputs.row(op)]
        for j, step in _counters(body):
            if j >= min(len(ins), len(outs)):
                continue
            try:
                before = np.asarray(it.get_tensor(ins[j])).reshape(-1)
                after = np.asarray(it.get_tensor(outs[j])).reshape(-1)
            except (ValueError, RuntimeError):
                continue
            if before.size != 1 or after.size != 1:
                continue
            n = (float(after[0]) - float(before[0])) / step
            if n >= 0 and n == round(n):
                out[op] = float(round(n))
                break
    return out


def _counters(body: Subgraph) -> list[tuple[int, float]]:
    """Loop variables ``j`` a body steps by a nonzero scalar constant: body output ``j`` is
    ``ADD(input j, c)`` (step c) or ``SUB(input j, c)`` (step -c)."""
    producer = {int(t): i for i in range(body.num_ops) for t in body.op_outputs.row(i)}
    inputs = [int(t) for t in body.inputs]
    found = []
    for j, t in enumerate(int(t) for t in body.outputs):
        i = producer.get(t)
        if i is None or j >= len(inputs) or body.op_name(i) not in ("ADD", "SUB"):
            continue
        a, b = (int(x) for x in body.op_inputs.row(i)[:2])
        if a != inputs[j] or b < 0 or not body.tensor_is_constant[b]:
            continue
        try:
            c = np.asarray(body.tensor(b).numpy()).reshape(-1)
        except (ValueError, TypeError):
            continue
        if c.size == 1 and c.dtype.kind in "iu" and c[0] != 0:
            found.append((j, float(c[0]) * (1 if body.op_name(i) == "ADD" else -1)))
    return found
