"""Shape propagation: every tensor's shape at the input sizes the user gives, as LiteRT sizes it.

A ``.tflite`` file stores one ``shape`` per tensor and a ``shape_signature`` with ``-1`` for the
dimensions the converter could not fix. Two things make the stored shapes wrong for a real run:

* a dynamic input (``[-1, -1]`` audio, a ``-1`` batch) is stored with placeholder sizes (1);
  LiteRT runs it after ``resize_tensor_input`` at the size the application gives;
* shapes computed inside the model (``SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE``) are stored at
  a placeholder size (``[1, 1, 1, 2048]`` where a run has ``[1, 43, 1, 2048]``).

:func:`resolve_shapes` sets the main subgraph's inputs to the given sizes (the stored shape for
inputs not given, which is what LiteRT allocates without a resize) and propagates shapes op by
op, evaluating small shape-computing tensors (``SHAPE``, slicing, packing, arithmetic on int
vectors) with NumPy so that computed shapes resolve to what a run produces. Control flow is
followed: ``IF`` branches, ``WHILE`` cond/body and ``CALL_ONCE`` init subgraphs are propagated
with the shapes of their call sites.

It also mirrors *when* LiteRT learns each shape. ``AllocateTensors`` prepares ops in execution
order and stops at the first op whose output it cannot size at prepare time (a ``RESHAPE`` whose
shape tensor is computed at run time, a ``SLICE`` with computed bounds, ...): that op's outputs
are *dynamic* and every later op is prepared only during ``invoke``
(``Subgraph::PrepareOpsStartingAt``). A value is known at prepare time when it is a constant or
an op computed it in ``Prepare`` (LiteRT's persistent read-only tensors: ``SHAPE`` always,
``STRIDED_SLICE``/``GATHER``/``CONCATENATION``/``MUL``/``RESHAPE``/... of such values; see
``tflite/kernels/*.cc``). :class:`SubgraphShapes` records the first dynamic op
(``dynamic_op``), which static-shape delegates (GPU, NNAPI, Edge TPU) depend on: LiteRT refuses
them on a graph with dynamic tensors.

Shapes that depend on the *data* (the number of boxes ``NON_MAX_SUPPRESSION`` keeps, a ``WHERE``)
cannot be known before a run: those tensors keep their stored shape and are listed in
``SubgraphShapes.unknown``. Ops without a shape rule (most custom ops) keep their stored output
shapes when their inputs have their stored shapes, and are reported otherwise.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from edgepart.errors import ModelFormatError, UsageError
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model, Subgraph
from edgepart.ir.shape_rules import (
    FLOW,
    MAX_VALUE_ELEMENTS,
    RULES,
    VALUES,
    Ctx,
    Shape,
    Unknown,
    fmt_shape,
    np_dtype,
)
from edgepart.ir.values import Csr

__all__ = [
    "InputShape",
    "InputShapeNote",
    "ShapeResolution",
    "SubgraphShapes",
    "apply_input_shapes",
    "has_dynamic_dims",
    "parse_input_shape",
    "resolve_shapes",
]


@dataclass(frozen=True)
class InputShape:
    """One input of the main subgraph and the size it runs at."""

    name: str
    tensor: int
    signature: tuple[int, ...] | None
    stored: Shape
    shape: Shape
    given: bool

    @property
    def dynamic(self) -> bool:
        """True if the input has a ``-1`` in its shape signature."""
        return self.signature is not None and -1 in self.signature


class InputShapeNote(UserWarning):
    """A dynamic input runs at LiteRT's default size because no size was given for it."""


@dataclass(frozen=True)
class SubgraphShapes:
    """What propagation learned about one subgraph.

    ``dynamic_op`` is the first op (in execution order) whose outputs LiteRT cannot size in
    ``AllocateTensors``, with ``dynamic_tensor`` its first such output; ``deferred`` marks the
    tensors LiteRT sizes only during ``invoke`` (that op's outputs and everything after it);
    ``dynamic_ops`` every op whose outputs LiteRT makes dynamic when it prepares it. ``fixed``
    is true when the user gave a size to every dynamic input (the model runs at fixed sizes).
    ``unknown`` lists tensors whose run-time shape depends on the data (kept at their stored
    shape); ``unresolved`` names ops without a shape rule whose inputs changed.
    """

    index: int
    deferred: np.ndarray
    dynamic_ops: np.ndarray
    fixed: bool = False
    dynamic_op: int | None = None
    dynamic_tensor: int | None = None
    unknown: tuple[int, ...] = ()
    unresolved: tuple[tuple[int, str], ...] = ()
    values: Mapping[int, np.ndarray] = dataclasses.field(default_factory=dict)

    @property
    def has_dynamic_tensors(self) -> bool:
        """True if LiteRT's ``HasDynamicTensors()`` would be true after ``AllocateTensors``."""
        return self.dynamic_op is not None


@dataclass(frozen=True)
class ShapeResolution:
    """The result of :func:`resolve_shapes`: the model with every tensor's resolved shape."""

    model: Model
    inputs: tuple[InputShape, ...]
    subgraphs: tuple[SubgraphShapes, ...]
    changed: bool
    problem: str | None = None

    @property
    def input_shapes(self) -> dict[str, list[int]]:
        """``{input name: shape}`` for every main-subgraph input (what a bundle records)."""
        return {i.name: list(i.shape) for i in self.inputs}

    def note(self) -> str | None:
        """One line naming the dynamic inputs that took LiteRT's default size, or None."""
        defaulted = [i for i in self.inputs if i.dynamic and not i.given]
        if self.problem is not None:
            return f"{self.problem}; shapes from there on are the file's"
        if not defaulted:
            return None
        parts = ", ".join(
            f"{i.name} {fmt_shape(i.signature or ())} -> {fmt_shape(i.shape)}" for i in defaulted
        )
        example = defaulted[0]
        dims = ",".join(
            "N" if s == -1 else str(d)
            for s, d in zip(example.signature or (), example.shape, strict=False)
        )
        return (
            f"dynamic input{'s' if len(defaulted) > 1 else ''} {parts}: the size LiteRT "
            f"allocates without a resize; give --input-shape {example.name}={dims} "
            "(input_shapes= in the API) for another size"
        )


def has_dynamic_dims(model: Model) -> bool:
    """True if any tensor of any subgraph has a ``-1`` in its shape signature."""
    for sg in model.subgraphs:
        if sg.tensor_has_signature.any() and (sg.tensor_signature.idx == -1).any():
            return True
    return False


def parse_input_shape(spec: str) -> tuple[str, tuple[int, ...]]:
    """``"NAME=1,1280"`` -> ``("NAME", (1, 1280))`` (the CLI's ``--input-shape``).

    ``NAME=`` with nothing after it is a scalar. The name may itself contain ``=`` only before
    the last one.

    Raises
    ------
    UsageError
        The spec is not ``NAME=D0,D1,...`` with positive integer dimensions.

    Examples
    --------
    >>> parse_input_shape("input_1=1,1280")
    ('input_1', (1, 1280))
    """
    name, sep, dims = spec.rpartition("=")
    if not sep or not name:
        raise UsageError(f"--input-shape {spec!r}: expected NAME=D0,D1,... (e.g. input_1=1,1280)")
    text = dims.strip().strip("[]()")
    try:
        shape = tuple(int(d) for d in text.split(",") if d.strip()) if text else ()
    except ValueError:
        raise UsageError(
            f"--input-shape {spec!r}: dimensions must be integers separated by commas"
        ) from None
    if any(d < 1 for d in shape):
        raise UsageError(f"--input-shape {spec!r}: every dimension must be >= 1")
    return name, shape


# --------------------------------------------------------------------------------------------
# Entry point.
# --------------------------------------------------------------------------------------------


def resolve_shapes(
    model: Model,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    subgraph: int = 0,
    lenient: bool = False,
) -> ShapeResolution:
    """Propagate shapes through ``model`` with its inputs at ``input_shapes``.

    Parameters
    ----------
    model
        The model as read.
    input_shapes
        Input name (signature input name, tensor name, or tensor index as a string) -> shape.
        Inputs not named run at their stored shape, as LiteRT allocates them without a resize.
        Only dimensions that are ``-1`` in the shape signature may change.
    subgraph
        The entry subgraph whose inputs the names refer to (0, the main graph, by default).
    lenient
        When an op cannot run at the sizes, keep the file's shapes from that op on and
        describe the problem in ``problem`` (and :meth:`ShapeResolution.note`) instead of
        raising: for summaries of a model whose default sizes do not run.

    Returns
    -------
    ShapeResolution
        The model with resolved shapes (the same object when nothing changed), the inputs'
        sizes and per-subgraph findings.

    Raises
    ------
    UsageError
        An unknown input name, a rank or fixed dimension that does not match the model, or
        sizes the model cannot run at (an op rejects them: names the op and the shapes).
    """
    entry = model.subgraphs[subgraph]
    names = _input_names(model, subgraph)
    given: dict[int, Shape] = {}
    for key, dims in (input_shapes or {}).items():
        t = _find_input(entry, names, str(key))
        sig = entry.tensor_signature.row_tuple(t) if entry.tensor_has_signature[t] else None
        stored = entry.tensor_shape.row_tuple(t)
        shape = tuple(int(d) for d in dims)
        label = names.get(t, entry.tensor_names[t])
        if len(shape) != len(stored):
            raise UsageError(
                f"--input-shape {key}: the input is {len(stored)}-D (shape signature "
                f"{fmt_shape(sig or stored)}), got {len(shape)} dimension(s) {fmt_shape(shape)}"
            )
        if any(d < 1 for d in shape):
            raise UsageError(f"--input-shape {key}: every dimension must be >= 1")
        if sig is not None:
            fixed = [
                i for i, (s, d) in enumerate(zip(sig, shape, strict=True)) if s != -1 and s != d
            ]
            if fixed:
                i = fixed[0]
                raise UsageError(
                    f"--input-shape {key}: dimension {i} of input {label!r} is fixed at "
                    f"{sig[i]} (shape signature {fmt_shape(sig)}); only -1 dimensions can be set"
                )
        given[t] = shape
    inputs = tuple(
        InputShape(
            name=names.get(int(t), entry.tensor_names[int(t)]),
            tensor=int(t),
            signature=entry.tensor_signature.row_tuple(int(t))
            if entry.tensor_has_signature[int(t)]
            else None,
            stored=entry.tensor_shape.row_tuple(int(t)),
            shape=given.get(int(t), entry.tensor_shape.row_tuple(int(t))),
            given=int(t) in given,
        )
        for t in entry.inputs.tolist()
    )
    run = _Propagation(model, lenient)
    try:
        run.subgraph(subgraph, {t: s for t, s in given.items()}, caller=None)
    except UsageError as err:
        raise UsageError(f"{err}{_default_hint(inputs)}") from None
    # Subgraphs not reached from the entry (other signatures) are propagated at their stored
    # input shapes, as LiteRT allocates them.
    for k in range(len(model.subgraphs)):
        if k not in run.done:
            run.subgraph(k, {}, caller=None)
    # every dynamic input has a size the user chose: the model runs at fixed sizes
    sized = all(i.given or not i.dynamic for i in inputs) and any(i.given for i in inputs)
    infos = tuple(run.done[k].info(k, sized) for k in range(len(model.subgraphs)))
    new_subgraphs = []
    changed = False
    for k, sg in enumerate(model.subgraphs):
        shapes = run.done[k].shapes
        if shapes != sg.tensor_shape.tolist():
            changed = True
            new = dataclasses.replace(
                sg,
                tensor_shape=Csr.from_rows(shapes, dtype=np.int32),
                tensor_signature=_agreeing_signatures(sg, shapes),
            )
        else:
            new = sg
        # replace() builds a new subgraph: cached sizes (numel, nbytes) recompute from shapes
        new_subgraphs.append(dataclasses.replace(new, shape_info=infos[k]))
    resolved = dataclasses.replace(model, subgraphs=tuple(new_subgraphs))
    problem = None if run.problem is None else f"{run.problem}{_default_hint(inputs)}"
    return ShapeResolution(resolved, inputs, infos, changed, problem)


def _agreeing_signatures(sg: Subgraph, shapes: Sequence[Sequence[int]]) -> Csr:
    """The subgraph's shape signatures, each fixed dimension that contradicts the propagated
    shape made ``-1``: a converter can record a size its kernels do not compute (an RFFT2D
    output signed ``[-1, -1, 2048]`` that LiteRT sizes ``[1, 43, 1025]``), and the resolved
    model must stay self-consistent (:func:`edgepart.ir.verify.check_model`)."""
    sig = sg.tensor_signature
    rows = None
    for t in np.flatnonzero(sg.tensor_has_signature).tolist():
        row = sig.row_tuple(t)
        shape = shapes[t]
        if len(row) != len(shape):
            continue
        if any(s != -1 and s != d for s, d in zip(row, shape, strict=True)):
            if rows is None:
                rows = [list(r) for r in sig.tolist()]
            rows[t] = [s if s == -1 or s == d else -1 for s, d in zip(row, shape, strict=True)]
    return sig if rows is None else Csr.from_rows(rows, dtype=sig.idx.dtype)


def _default_hint(inputs: Sequence[InputShape]) -> str:
    """``; input X [-1,-1] ran at LiteRT's default [1,1]: give --input-shape X=N,N`` or ''."""
    defaulted = [i for i in inputs if i.dynamic and not i.given]
    if not defaulted:
        given = [f"{i.name}={','.join(map(str, i.shape))}" for i in inputs if i.given]
        return f"; check --input-shape {' '.join(given)}" if given else ""
    i = defaulted[0]
    dims = ",".join(
        "N" if s == -1 else str(d) for s, d in zip(i.signature or (), i.shape, strict=False)
    )
    return (
        f"; dynamic input {i.name} {fmt_shape(i.signature or ())} ran at LiteRT's default size "
        f"{fmt_shape(i.shape)}: give --input-shape {i.name}={dims} (input_shapes= in the API)"
    )


def apply_input_shapes(
    model: Model,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    subgraph: int = 0,
    note: bool = True,
    lenient: bool = False,
) -> Model:
    """``resolve_shapes(model, input_shapes).model``, warning once when dynamic inputs take
    LiteRT's default size (:class:`InputShapeNote`, the line the CLI prints).

    A model already resolved (every subgraph carries ``shape_info``) is returned as is when no
    sizes are given.
    """
    if not input_shapes and all(sg.shape_info is not None for sg in model.subgraphs):
        return model
    res = resolve_shapes(model, input_shapes, subgraph=subgraph, lenient=lenient)
    text = res.note() if note else None
    if text:
        warnings.warn(text, InputShapeNote, stacklevel=2)
    return res.model


def _input_names(model: Model, subgraph: int) -> dict[int, str]:
    names: dict[int, str] = {}
    for s in model.signature_defs:
        if s.subgraph == subgraph:
            for name, t in s.inputs:
                names.setdefault(int(t), name)
    return names


def _find_input(sg: Subgraph, names: dict[int, str], key: str) -> int:
    ins = [int(t) for t in sg.inputs.tolist()]
    for t in ins:
        if key in (names.get(t), sg.tensor_names[t]):
            return t
    if key.lstrip("-").isdigit() and int(key) in ins:
        return int(key)
    listed = ", ".join(repr(names.get(t, sg.tensor_names[t])) for t in ins)
    raise UsageError(f"--input-shape {key}: not an input of the model; inputs: {listed}")


# --------------------------------------------------------------------------------------------
# The propagation.
# --------------------------------------------------------------------------------------------


class _SubgraphRun:
    """Per-subgraph state: shapes, values, LiteRT prepare-time knowledge."""

    def __init__(self, sg: Subgraph) -> None:
        self.sg = sg
        self.shapes: list[Shape] = sg.tensor_shape.tolist()
        n = sg.num_tensors
        self.values: dict[int, np.ndarray] = {}
        self.pk = np.zeros(n, dtype=bool)  # LiteRT knows the value in Prepare
        self.known = np.ones(n, dtype=bool)  # the shape is the run-time shape
        self.deferred = np.zeros(n, dtype=bool)
        self.dynamic_ops = np.zeros(sg.num_ops, dtype=bool)
        self.dynamic_op: int | None = None
        self.dynamic_tensor: int | None = None
        self.unresolved: list[tuple[int, str]] = []
        self.has_dynamic = False
        self.handles: dict[int, tuple[str, str]] = {}  # VAR_HANDLE output -> variable key

    def info(self, k: int, fixed: bool) -> SubgraphShapes:
        small = {t: v for t, v in self.values.items() if not self.sg.tensor_is_constant[t]}
        return SubgraphShapes(
            index=k,
            deferred=self.deferred,
            dynamic_ops=self.dynamic_ops,
            fixed=fixed,
            dynamic_op=self.dynamic_op,
            dynamic_tensor=self.dynamic_tensor,
            unknown=tuple(int(t) for t in np.flatnonzero(~self.known)),
            unresolved=tuple(self.unresolved),
            values=small,
        )


class _Propagation:
    def __init__(self, model: Model, lenient: bool = False) -> None:
        self.model = model
        self.lenient = lenient
        self.problem: str | None = None
        self.done: dict[int, _SubgraphRun] = {}
        self.active: set[int] = set()
        self.variables: dict[tuple[str, str], Shape] = {}  # resource variable -> its shape

    def subgraph(self, k: int, inputs: Mapping[int, Shape], caller: str | None) -> _SubgraphRun:
        """Propagate subgraph ``k`` with input tensors at ``inputs`` (others stored)."""
        sg = self.model.subgraphs[k]
        if k in self.active:  # recursion through control flow: keep what the file says
            return self.done.get(k) or _SubgraphRun(sg)
        self.active.add(k)
        try:
            st = _SubgraphRun(sg)
            for t, shape in inputs.items():
                st.shapes[t] = tuple(int(d) for d in shape)
            const = sg.tensor_is_constant
            for t in np.flatnonzero(const).tolist():
                st.pk[t] = True
                if int(sg.tensor_numel[t]) <= MAX_VALUE_ELEMENTS:
                    v = _constant_value(sg, t)
                    if v is not None:
                        st.values[t] = v
            for t in _empty_tensors(sg):
                # a zero-element tensor nothing writes (a RESHAPE-to-scalar's shape): its value
                # is known (empty) even though LiteRT does not treat it as a constant
                st.values[t] = np.zeros(st.shapes[t], dtype=np_dtype(sg, t))
            for op in range(sg.num_ops):
                self._op(st, k, op)
            self.done[k] = st
            return st
        finally:
            self.active.discard(k)

    # ------------------------------------------------------------------ one op
    def _op(self, st: _SubgraphRun, k: int, op: int) -> None:
        sg = st.sg
        name = sg.op_name(op)
        ins = sg.op_inputs.row_tuple(op)
        outs = sg.op_outputs.row_tuple(op)
        ctx = Ctx(self, st, k, op, name, ins, outs)
        rule = RULES.get(name)
        deferred_before = st.has_dynamic
        if any(t >= 0 and not st.known[t] for t in ins) and name not in FLOW:
            # an input of unknown run-time shape: outputs are unknown too
            for t in outs:
                st.known[t] = False
            new_shapes: list[Shape | None] = [None] * len(outs)
            dyn = False
        elif rule is None:
            new_shapes, dyn = self._default(st, ctx)
        else:
            try:
                new_shapes = list(rule(ctx))
            except Unknown:
                new_shapes = [None] * len(outs)
            except UsageError as err:
                if not self.lenient:
                    raise
                self.problem = self.problem or str(err)
                new_shapes = [None] * len(outs)
            except IndexError:  # fewer operands than the op has: a defect of the model
                msg = (
                    f"subgraph {k} op {op} ({name}): has {len(ins)} inputs and {len(outs)} "
                    "outputs, fewer than the op needs; the model is malformed"
                )
                if not self.lenient:
                    raise ModelFormatError(msg) from None
                self.problem = self.problem or msg
                new_shapes = [None] * len(outs)
            dyn = ctx.dynamic
        for t, s in zip(outs, new_shapes, strict=False):
            if t < 0:
                continue
            if s is None:
                st.known[t] = False
            else:
                st.shapes[t] = tuple(int(d) for d in s)
        # values: computed for small outputs when every input value is known
        if name in VALUES and all(st.known[t] for t in outs if t >= 0):
            try:
                vals = VALUES[name](ctx)
            except Unknown:
                vals = None
            except (ValueError, IndexError, TypeError, ZeroDivisionError, OverflowError):
                vals = None
            if vals is not None:
                for t, v in zip(outs, vals, strict=False):
                    if t >= 0 and v is not None and v.size <= MAX_VALUE_ELEMENTS:
                        st.values[t] = v
        # LiteRT's prepare-time knowledge: an op prepared during invoke (after the first
        # dynamic op) follows the same rules, so persistence and dynamic outputs carry on
        if ctx.persistent:
            for t in outs:
                if t >= 0:
                    st.pk[t] = True
        st.dynamic_ops[op] = dyn
        if dyn and not deferred_before:
            st.has_dynamic = True
            st.dynamic_op = op
            st.dynamic_tensor = next((t for t in outs if t >= 0), None)
        if dyn or deferred_before:
            for t in outs:
                if t >= 0:
                    st.deferred[t] = True

    def _default(self, st: _SubgraphRun, ctx: Ctx) -> tuple[list[Shape | None], bool]:
        """No rule: outputs keep their stored shapes when the inputs kept theirs."""
        sg = st.sg
        changed = [t for t in ctx.ins if t >= 0 and st.shapes[t] != sg.tensor_shape.row_tuple(t)]
        if not changed:
            return [st.shapes[t] if t >= 0 else None for t in ctx.outs], False
        st.unresolved.append((ctx.op, ctx.name))
        return [None] * len(ctx.outs), False


def _constant_value(sg: Subgraph, t: int) -> np.ndarray | None:
    if sg.tensor_sparsity[t] is not None:
        return None
    dt = DType(int(sg.tensor_dtype[t])).numpy
    if dt is None:
        return None
    data = sg.buffers.data(int(sg.tensor_buffer[t]))
    shape = sg.tensor_shape.row_tuple(t)
    need = int(np.prod(shape, dtype=np.int64)) * np.dtype(dt).itemsize
    if len(data) < need:
        return None
    return np.frombuffer(data[:need].tobytes(), dtype=dt).reshape(shape)


def _empty_tensors(sg: Subgraph) -> list[int]:
    """Tensors of zero elements that no op writes and that are not inputs or variables."""
    zero = (sg.tensor_numel == 0) & (sg.tensor_shape.lengths() > 0)
    if not zero.any():
        return []
    produced = np.zeros(sg.num_tensors, dtype=bool)
    produced[sg.op_outputs.idx[sg.op_outputs.idx >= 0]] = True
    zero &= ~produced & ~sg.tensor_is_variable
    zero[sg.inputs.astype(np.int64)] = False
    return [int(t) for t in np.flatnonzero(zero)]


# --------------------------------------------------------------------------------------------
