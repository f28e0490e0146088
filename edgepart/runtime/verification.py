"""Inputs, verification against the source model, and benchmarks of a bundle (the API behind
``edgepart run``). Results are values; the CLI formats them."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from edgepart.devices.host_executors import DEFAULT_EXECUTOR, HOST_EXECUTORS
from edgepart.errors import UsageError
from edgepart.fileio import read_npy, sha256_regular
from edgepart.isolate import run_isolated
from edgepart.runtime.executors import prepare_error
from edgepart.runtime.latency import LatencyStats, run_once, time_calls
from edgepart.runtime.timeline import PartitionSpan, measure_timeline
from edgepart.tflite.litert_safety import check_model
from edgepart.tflite.reader import read_model

if TYPE_CHECKING:
    from edgepart.runtime.interpreter import PartitionedInterpreter

__all__ = [
    "DEFAULT_RTOL",
    "BenchReport",
    "OutputDiff",
    "benchmark_bundle",
    "failed_outputs",
    "open_source_model",
    "random_inputs",
    "reference_outputs",
    "resolve_inputs",
    "verify_outputs",
]


def random_value(
    dtype: Any,
    shape: Sequence[int],
    rng: np.random.Generator,
    bounds: tuple[int, int] | None = None,
) -> np.ndarray:
    """Seeded random data: floats ~ N(0, 1), integers in [-100, 100] clipped to the type, or
    in ``bounds`` (inclusive) where the model reads the input as indices."""
    dt = np.dtype(dtype)
    shape = [int(d) for d in shape]
    if np.issubdtype(dt, np.floating) or np.issubdtype(dt, np.complexfloating):
        return rng.standard_normal(shape).astype(dt)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -100), min(info.max, 100)
    if bounds is not None:
        lo, hi = max(info.min, bounds[0]), min(info.max, bounds[1])
    return rng.integers(lo, hi, shape, endpoint=True).astype(dt)


def random_inputs(
    details: Sequence[Mapping[str, Any]],
    seed: int = 0,
    bounds: Mapping[int, tuple[int, int]] | None = None,
) -> list[np.ndarray]:
    """One random array per input detail, in order; ``bounds`` (by detail ``index``) keeps
    integer inputs in the ranges the model accepts."""
    rng = np.random.default_rng(seed)
    bounds = bounds or {}
    return [random_value(d["dtype"], d["shape"], rng, bounds.get(int(d["index"]))) for d in details]


def resolve_inputs(
    interp: PartitionedInterpreter,
    given: Sequence[str] | Mapping[str, Any],
    *,
    random: bool = False,
    seed: int = 0,
) -> list[np.ndarray]:
    """Inputs in ``get_input_details()`` order from given values and/or random data.

    ``given`` is a sequence of ``NAME=FILE.npy`` specs (the CLI's ``--input``) or a mapping
    ``NAME -> array or .npy path``; ``NAME`` is a signature input name, a tensor name or a
    tensor index.
    """
    details = interp.get_input_details()
    names = [t.name for t in interp.plan.inputs]
    keys: dict[str, int] = {}
    for k, t in enumerate(interp.plan.inputs):
        for key in (t.name, t.tensor_name, str(t.tensor)):
            keys.setdefault(key, k)
    values: list[np.ndarray | None] = [None] * len(details)
    if isinstance(given, Mapping):
        for name, value in given.items():
            if str(name) not in keys:
                raise UsageError(f"inputs[{name!r}]: not an input of this bundle; inputs: {names}")
            values[keys[str(name)]] = (
                _load_npy(str(name), value)
                if isinstance(value, (str, os.PathLike))
                else np.asarray(value)
            )
    else:
        for spec in given:
            name, sep, file = spec.partition("=")
            if not sep or name not in keys:
                raise UsageError(
                    f"--input {spec!r}: expected NAME=FILE.npy with NAME one of {names}"
                )
            values[keys[name]] = _load_npy(name, file)
    fill = random_inputs(details, seed, interp.input_ranges()) if random else None
    missing = [t.name for t, v in zip(interp.plan.inputs, values, strict=True) if v is None]
    if missing and fill is None:
        raise UsageError(
            f"no value for input(s) {missing}; give --input NAME=FILE.npy or --random "
            "(Python: inputs={NAME: array} or random=True)"
        )
    return [v if v is not None else fill[k] for k, v in enumerate(values)]  # type: ignore[index]


def _load_npy(name: str, file: str | os.PathLike[str]) -> np.ndarray:
    try:
        return read_npy(file, what=".npy input")  # type: ignore[no-any-return]
    except UsageError as err:
        raise UsageError(f"--input {name}: {err}") from None


def open_source_model(interp: PartitionedInterpreter, model: str | None) -> Path:
    """The source model file (``model`` or the manifest's path), checked against its sha256."""
    src = interp.bundle.manifest["source_model"]
    path = model or src["path"]
    if path is None:
        raise UsageError("the bundle does not record its source model's path; pass --model")
    p = Path(path)
    if not p.exists():
        raise UsageError(f"source model {p} not found; pass --model PATH")
    digest, _ = sha256_regular(p, what="source .tflite model")
    if digest != src["sha256"]:
        raise UsageError(
            f"{p} is not the model this bundle was made from (sha256 {digest[:12]}..., the "
            f"manifest records {src['sha256'][:12]}...); pass the right --model"
        )
    return p


DEFAULT_RTOL = 1e-4
"""Default scale-relative tolerance of a verification (float kernels that sum in another order
differ around 1e-6; an integer output that differs at all fails unless an ``atol`` allows it)."""


def failed_outputs(
    diffs: Sequence[OutputDiff], *, atol: float | None = None, rtol: float = DEFAULT_RTOL
) -> list[str]:
    """Names of the outputs that fail verification.

    Parameters
    ----------
    diffs
        The comparisons :func:`verify_outputs` returned (``run_bundle(..., verify=True)``).
    atol
        If given, an output fails when its largest absolute difference exceeds it.
    rtol
        Otherwise an output fails when its ``max_rel`` exceeds ``rtol``; integer outputs must
        be identical.

    Returns
    -------
    list of str
        The failing outputs' names, in ``diffs`` order (empty when verification passes).

    Examples
    --------
    >>> d = OutputDiff("y", max_abs=1e-3, max_rel=1e-3, identical=False, integer=False)
    >>> failed_outputs([d]), failed_outputs([d], rtol=1e-2), failed_outputs([d], atol=1e-2)
    (['y'], [], [])
    """
    bad = []
    for d in diffs:
        if d.identical:
            continue
        ok = d.max_abs <= atol if atol is not None else (d.max_rel <= rtol and not d.integer)
        if not ok:
            bad.append(d.name)
    return bad


@dataclass(frozen=True)
class OutputDiff:
    """How a partitioned output differs from the source model's."""

    name: str
    max_abs: float
    max_rel: float
    identical: bool
    integer: bool = False


def verify_outputs(
    interp: PartitionedInterpreter,
    inputs: Sequence[np.ndarray],
    got: Sequence[np.ndarray],
    model_path: str | os.PathLike[str],
    *,
    executor: str | None = None,
) -> list[OutputDiff]:
    """Run the source model with LiteRT on ``inputs`` and compare with ``got``.

    ``max_rel`` is the largest absolute difference over the largest magnitude of the source
    model's output (a scale-free figure that does not blow up at zeros).

    The source model is checked for what crashes LiteRT
    (:mod:`edgepart.tflite.litert_safety`) and then run in a child process
    (:func:`edgepart.isolate.run_isolated`): a crash there is reported, not shared.
    """
    host = HOST_EXECUTORS.get(executor or DEFAULT_EXECUTOR, HOST_EXECUTORS[DEFAULT_EXECUTOR])
    plan = interp.plan
    path = os.fspath(model_path)
    check_model(read_model(path), path)
    if plan.subgraph != 0 and plan.signature_key is None:
        raise UsageError(f"subgraph {plan.subgraph} has no signature to verify it through")
    wanted = run_isolated(
        reference_outputs,
        (
            path,
            host.resolver,
            interp.num_threads,
            None if plan.subgraph == 0 else plan.signature_key,
            [(t.tensor, t.name, list(t.shape)) for t in plan.inputs],
            [(t.tensor, t.name) for t in plan.outputs],
            list(inputs),
        ),
        what=f"--verify: the source model {path}",
    )
    out = []
    for t, g, want in zip(plan.outputs, got, wanted, strict=True):
        a, b = np.asarray(g, np.float64), np.asarray(want, np.float64)
        diff = float(np.abs(a - b).max()) if a.size else 0.0
        scale = float(np.abs(b).max()) if b.size else 0.0
        out.append(
            OutputDiff(
                t.name,
                diff,
                diff / scale if scale else diff,
                bool(np.array_equal(g, want, equal_nan=True)),
                np.asarray(want).dtype.kind in "biu",
            )
        )
    return out


def reference_outputs(
    path: str,
    resolver: str,
    threads: int,
    signature_key: str | None,
    inputs: Sequence[tuple[int, str, list[int]]],
    outputs: Sequence[tuple[int, str]],
    values: Sequence[np.ndarray],
) -> list[np.ndarray]:
    """The source model's outputs for ``values`` with LiteRT (run by :func:`verify_outputs` in
    a child process); subgraph 0 by tensor index, at the sizes the bundle was built for
    (``resize_tensor_input``, as an application does before ``allocate_tensors``), another
    subgraph through ``signature_key``.

    Raises
    ------
    UsageError
        LiteRT cannot load or run the model (its message on one line).
    BundleError
        LiteRT cannot prepare the model at the bundle's input sizes.
    """
    try:
        ref = Interpreter(
            model_path=path,
            num_threads=threads,
            experimental_op_resolver_type=OpResolverType[resolver],
        )
        if signature_key is None:
            stored = {int(d["index"]): list(d["shape"]) for d in ref.get_input_details()}
            resized = [(t, shape) for t, _, shape in inputs if t in stored and stored[t] != shape]
            if resized:  # a failure at the bundle's sizes is the sizes' (the hint says so)
                try:
                    for t, shape in resized:
                        ref.resize_tensor_input(t, shape)
                    ref.allocate_tensors()
                except (ValueError, RuntimeError) as err:
                    raise prepare_error(f"source model {path}", err) from None
            else:
                ref.allocate_tensors()
            for (t, _, _), x in zip(inputs, values, strict=True):
                ref.set_tensor(t, x)
            ref.invoke()
            return [ref.get_tensor(t) for t, _ in outputs]
        res = ref.get_signature_runner(signature_key)(
            **{name: x for (_, name, _), x in zip(inputs, values, strict=True)}
        )
        return [res[name] for _, name in outputs]
    except (RuntimeError, ValueError) as err:
        msg = " ".join(str(err).split())
        raise UsageError(f"--verify: LiteRT cannot run the source model {path}: {msg}") from None


@dataclass(frozen=True)
class BenchReport:
    """Measured latency (and throughput) beside the plan's predictions."""

    latency: LatencyStats
    partitions: Mapping[str, LatencyStats]
    predicted_latency_s: float | None
    predicted_period_s: float | None
    predicted_partitions: Mapping[str, float | None]
    stream_items: int = 0
    stream_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    timeline: Mapping[str, PartitionSpan] = field(default_factory=dict)
    """Median start/end of each partition inside an invocation (:mod:`.timeline`)."""

    @property
    def throughput_per_s(self) -> float | None:
        return self.stream_items / self.stream_seconds if self.stream_seconds else None


def benchmark_bundle(
    interp: PartitionedInterpreter,
    inputs: Sequence[np.ndarray],
    *,
    warmup: int = 10,
    repeat: int = 100,
    stream: int = 0,
) -> BenchReport:
    """Time ``invoke`` end to end and each partition alone; optionally stream ``stream`` items.

    Per-partition times are taken after a full run (so every partition has valid inputs),
    calling each partition's own interpreter ``repeat`` times.
    """
    run_once(interp, inputs)
    lat = time_calls(interp.invoke, warmup=warmup, repeat=repeat)
    parts = {}
    predicted: dict[str, float | None] = {}
    for p, it in zip(interp.plan.partitions, interp._parts, strict=True):
        parts[p.id] = time_calls(it.invoke, warmup=max(1, warmup // 2), repeat=repeat)
        pred = p.predicted or {}
        dur = pred.get("duration_s")
        if dur is None and pred.get("start_s") is not None and pred.get("end_s") is not None:
            dur = pred["end_s"] - pred["start_s"]
        predicted[p.id] = dur
    timeline = measure_timeline(interp, inputs, warmup=min(warmup, 3), repeat=max(1, repeat // 5))
    plan_pred = interp.plan.predicted or {}
    n_stream, secs = 0, 0.0
    if stream > 0:
        items = [list(inputs)] * stream
        for _ in interp.run_stream(items[: min(stream, 20)]):
            pass
        t0 = time.perf_counter()
        for _ in interp.run_stream(items):
            n_stream += 1
        secs = time.perf_counter() - t0
    return BenchReport(
        latency=lat,
        partitions=parts,
        predicted_latency_s=plan_pred.get("latency_s"),
        predicted_period_s=plan_pred.get("period_s"),
        predicted_partitions=predicted,
        stream_items=n_stream,
        stream_seconds=secs,
        timeline=timeline,
    )
