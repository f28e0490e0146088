"""One run of a bundle (the job of ``edgepart run``): load it, set its inputs, run it once,
optionally verify the outputs against the source model and benchmark it.

:func:`run_bundle` returns a :class:`BundleRun`: where each partition really ran, the inputs
and outputs, the differences from the source model and the measured latency beside the plan's
predictions. Partitions whose delegate library is absent run on the host fallback executor and
say so (:attr:`BundleRun.executors`; a :class:`~edgepart.runtime.HostFallbackWarning` is
issued too).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgepart.bundle.format import Bundle, Plan
from edgepart.errors import UsageError
from edgepart.fileio import atomic_write
from edgepart.runtime.executors import ExecutorChoice
from edgepart.runtime.interpreter import PartitionedInterpreter
from edgepart.runtime.latency import run_once
from edgepart.runtime.shards import ShardGroup, shard_overlap
from edgepart.runtime.verification import (
    BenchReport,
    OutputDiff,
    benchmark_bundle,
    open_source_model,
    resolve_inputs,
    verify_outputs,
)

__all__ = ["BundleRun", "run_bundle"]

Inputs = Mapping[str, Any] | Sequence[str]


@dataclass(frozen=True, eq=False)
class BundleRun:
    """The result of :func:`run_bundle`.

    ``executors`` says, per partition in plan order, what it asked for and where it ran
    (``fallback`` when on the host instead of its processor); ``given`` the input names the
    caller supplied (the rest were random); ``diffs`` the comparison with the source model
    (``source``) when verified; ``benchmark`` the measured latency and throughput beside the
    plan's predictions when benchmarked.
    """

    bundle: str
    plan: Plan
    executors: tuple[ExecutorChoice, ...]
    parallel: bool
    inputs: tuple[np.ndarray, ...]
    outputs: tuple[np.ndarray, ...]
    given: frozenset[str]
    diffs: tuple[OutputDiff, ...] | None = None
    source: Path | None = None
    benchmark: BenchReport | None = None
    splits: tuple[ShardGroup, ...] = ()

    def shard_overlap(self, group: ShardGroup) -> float | None:
        """Seconds all shards of a split ran at once in the benchmark's timeline (None if not
        benchmarked)."""
        if self.benchmark is None:
            return None
        return shard_overlap(group, self.benchmark.timeline)

    def max_abs_diff(self) -> float | None:
        """The largest absolute difference from the source model (None if not verified)."""
        return None if self.diffs is None else max((d.max_abs for d in self.diffs), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        """What ``edgepart run --json`` writes: partitions, and verification and benchmark
        figures when they were asked for."""
        doc: dict[str, Any] = {
            "bundle": self.bundle,
            "partitions": [c.to_dict() for c in self.executors],
        }
        if self.splits:
            doc["splits"] = [
                {**g.to_dict(), "measured_overlap_s": self.shard_overlap(g)} for g in self.splits
            ]
        if self.diffs is not None:
            doc["verify"] = [d.__dict__ for d in self.diffs]
        if self.benchmark is not None:
            doc["benchmark"] = _bench_doc(self.benchmark)
        return doc

    def save_outputs(self, out_dir: str | os.PathLike[str]) -> list[Path]:
        """Write each output as ``out_dir/<name>.npy`` and each random input as
        ``out_dir/input.<name>.npy`` (names made file-safe); return the paths written."""
        out = Path(out_dir)
        written = []
        for t, y in zip(self.plan.outputs, self.outputs, strict=True):
            written.append(out / f"{_safe(t.name)}.npy")
            atomic_write(written[-1], _npy(y))
        for t, x in zip(self.plan.inputs, self.inputs, strict=True):
            if not self.given & {t.name, t.tensor_name, str(t.tensor)}:
                written.append(out / f"input.{_safe(t.name)}.npy")
                atomic_write(written[-1], _npy(x))
        return written


def run_bundle(
    bundle: str | os.PathLike[str] | Bundle,
    inputs: Inputs | None = None,
    *,
    random: bool = False,
    seed: int = 0,
    executor: str | None = None,
    delegate_libraries: Mapping[str, str] | None = None,
    fallback: bool = True,
    threads: int | None = None,
    parallel: bool = True,
    verify: bool = False,
    model: str | os.PathLike[str] | None = None,
    benchmark: bool = False,
    stream: int = 0,
    repeat: int = 100,
    warmup: int = 10,
) -> BundleRun:
    """Run a bundle once with one LiteRT interpreter per partition; verify it, benchmark it.

    Partitions whose delegate library is absent run on the host fallback executor their
    delegate file names (``library.fallback``) and say so (``executors[k].fallback``,
    ``executed_on``; a ``HostFallbackWarning`` too).

    Parameters
    ----------
    bundle
        A bundle directory, or a bundle built in memory.
    inputs
        Values by input name (signature name, tensor name or index): a mapping to arrays or
        ``.npy`` paths, or ``NAME=FILE.npy`` strings.
    random, seed
        Seeded random values for the inputs not given.
    executor
        Run every partition on this host kernel set: ``"xnnpack"``, ``"builtin"`` or
        ``"reference"``.
    delegate_libraries
        Delegate name -> external delegate library path (e.g. ``{"gpu": "/path/x.so"}``).
    fallback
        Run partitions whose delegate library is absent on the host; false makes that an
        error.
    threads
        CPU threads per partition interpreter.
    parallel
        Run partitions concurrently where the plan allows it (false: one after another).
    verify, model
        Run the source model (``model``, default: the path the manifest records, checked by
        SHA-256) on the same inputs and compare the outputs (``diffs``).
    benchmark, stream, repeat, warmup
        Measure latency (median, p90 over ``repeat`` runs after ``warmup``) and each
        partition alone; with ``stream > 0``, the throughput of ``stream`` pipelined inputs.

    Returns
    -------
    BundleRun
        Executors, inputs, outputs, ``diffs``, ``benchmark``; ``to_dict()`` and
        ``save_outputs(dir)``.

    Raises
    ------
    UsageError
        A bad argument, an unknown input, an unreadable input file, a missing source model.
    BundleError
        The bundle is missing, incomplete or corrupted.
    RuntimeBackendError
        A requested delegate library cannot be loaded (or is absent with
        ``fallback=False``).

    Examples
    --------
    >>> import tempfile, edgepart
    >>> out = tempfile.mkdtemp() + "/mnv2"
    >>> _ = edgepart.compile("examples/models/mobilenet_v2.tflite", "pixel8").save(out)
    >>> run = edgepart.run_bundle(out, random=True, verify=True)
    >>> [(c.partition, c.executed_on, c.fallback) for c in run.executors]
    [('p0', 'host CPU, XNNPACK', False)]
    >>> run.diffs[0].identical, run.outputs[0].shape
    (True, (1, 10))
    """
    if stream and not benchmark:
        raise UsageError("stream needs benchmark=True")
    if stream < 0 or repeat < 1 or warmup < 0:
        raise UsageError(
            f"stream >= 0, repeat >= 1 and warmup >= 0 needed; got {stream}, {repeat}, {warmup}"
        )
    loaded = bundle if isinstance(bundle, Bundle) else None
    interp = PartitionedInterpreter(
        None if isinstance(bundle, Bundle) else bundle,
        num_threads=threads,
        bundle=loaded,
        executor=executor,
        delegate_libraries=dict(delegate_libraries or {}),
        fallback="auto" if fallback else None,
        parallel=parallel,
    )
    try:
        interp.allocate_tensors()
        given = inputs if inputs is not None else ()
        xs = resolve_inputs(interp, given, random=random, seed=seed)
        ys = run_once(interp, xs)
        diffs = source = None
        if verify:
            source = open_source_model(interp, None if model is None else os.fspath(model))
            diffs = tuple(verify_outputs(interp, xs, ys, source, executor=executor))
        bench = None
        if benchmark:
            bench = benchmark_bundle(interp, xs, warmup=warmup, repeat=repeat, stream=stream)
        names = list(given) if isinstance(given, Mapping) else [s.partition("=")[0] for s in given]
        label = str(bundle) if loaded is None else str(loaded.path or "<bundle>")
        return BundleRun(
            bundle=label,
            plan=interp.plan,
            executors=tuple(interp.executors),
            parallel=interp.parallel,
            inputs=tuple(xs),
            outputs=tuple(ys),
            given=frozenset(str(n) for n in names),
            diffs=diffs,
            source=source,
            benchmark=bench,
            splits=tuple(interp.splits),
        )
    finally:
        interp.close()


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "output"


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _bench_doc(b: BenchReport) -> dict[str, Any]:
    return {
        "latency_median_s": b.latency.median_s,
        "latency_p90_s": b.latency.p90_s,
        "runs": b.latency.n,
        "predicted_latency_s": b.predicted_latency_s,
        "partitions": {
            k: {
                "median_s": s.median_s,
                "p90_s": s.p90_s,
                "predicted_s": b.predicted_partitions.get(k),
            }
            for k, s in b.partitions.items()
        },
        "timeline": {k: {"start_s": v.start_s, "end_s": v.end_s} for k, v in b.timeline.items()},
        "stream_items": b.stream_items,
        "stream_seconds": b.stream_seconds,
        "throughput_per_s": b.throughput_per_s,
        "predicted_period_s": b.predicted_period_s,
    }
