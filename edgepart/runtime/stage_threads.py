"""Run a stage plan on this host: one thread per stage, bounded queues between them.

The bundle's partitions (one per stage, :meth:`edgepart.api.pipelines.PipelinePlan.bundle`) run
in plan order as a chain: stage ``k`` takes an item from its input queue (the first stage
straight from the inputs), reads the tensors it needs from the item's tensor map, invokes its
own LiteRT interpreter (a :class:`StageWorker`) and adds its outputs to the map before handing
the item on (the last stage keeps the results): no other thread runs. Every queue
holds at most ``queue_depth`` items, so a fast stage blocks on a full queue instead of running
ahead (back-pressure: memory stays bounded whatever the stage speeds). Each stage records when
it started and ended every item: the measured timeline (:class:`PipelineRun`), the same
:class:`~edgepart.placement.schedules.Timeline` figures the simulator gives.

A failing stage passes an error marker on in place of the item and keeps consuming, so no
thread waits forever; the caller gets :class:`~edgepart.runtime.details.StageFailedError` with
the inputs that did not complete. :class:`StageWorker` is also what a Ray actor holds in
:mod:`edgepart.runtime.ray_stages`.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from edgepart.errors import UsageError
from edgepart.placement.schedules import Event, Op, StageCosts, Timeline, simulate, timeline_of
from edgepart.runtime.details import StageFailedError, TensorValueError
from edgepart.runtime.executors import ExecutorChoice, choose_executor, open_partition
from edgepart.runtime.loading import check_partition_io

if TYPE_CHECKING:
    from edgepart.bundle.format import Bundle

__all__ = [
    "PipelineRun",
    "StageSpec",
    "StageWorker",
    "run_schedule",
    "run_stages",
    "stage_specs",
]

_STOP = object()


@dataclass(frozen=True)
class StageSpec:
    """What one stage's worker needs (picklable: it travels to Ray actors).

    ``inputs``/``outputs`` pair the partition file's tensor index with the source tensor.
    """

    id: str
    blob: bytes
    inputs: tuple[tuple[int, int], ...]
    outputs: tuple[tuple[int, int], ...]
    threads: int
    choice: ExecutorChoice


@dataclass(frozen=True)
class _Failure:
    stage: int
    message: str


def stage_specs(bundle: Bundle, num_threads: int = 1) -> list[StageSpec]:
    """The stages of a bundle, in plan (dependency) order.

    Parameters
    ----------
    bundle
        A loaded bundle (one partition per stage).
    num_threads
        Interpreter threads of partitions whose plan entry names none.

    Returns
    -------
    list of StageSpec
        One per partition.
    """
    out = []
    for entry in bundle.plan.partitions:
        out.append(
            StageSpec(
                entry.id,
                bundle.partition_bytes[entry.id],
                tuple((r.index, r.tensor) for r in entry.inputs),
                tuple((r.index, r.tensor) for r in entry.outputs),
                entry.threads or num_threads,
                choose_executor(entry),
            )
        )
    return out


class StageWorker:
    """One stage's LiteRT interpreter: tensor map in, the stage's outputs out."""

    def __init__(self, spec: StageSpec) -> None:
        it, self.choice = open_partition(spec.choice, spec.blob, spec.threads)
        it.allocate_tensors()
        self.spec = spec
        self._it = it
        self._set = it.set_tensor
        self._get = it.get_tensor
        self._invoke = it.invoke

    def check(self, entry: Any) -> None:
        """The partition file has the inputs and outputs the plan entry says."""
        check_partition_io(self._it, entry)

    def __call__(self, tensors: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        for local, t in self.spec.inputs:
            self._set(local, tensors[t])
        self._invoke()
        return {t: self._get(local) for local, t in self.spec.outputs}


@dataclass(frozen=True, eq=False)
class PipelineRun:
    """A measured run: outputs in input order, the measured timeline and the simulated one.

    ``stage_s``: each stage's median time over the run (its own events); ``pinned``: the CPU
    each stage's thread was pinned to (None: not pinned);
    ``simulated``: the stream schedule simulated on those median times with the run's queue
    depth, the prediction the measured figures are compared with.
    """

    outputs: list[list[np.ndarray]]
    measured: Timeline
    simulated: Timeline
    stage_s: tuple[float, ...]
    wall_s: float
    pinned: tuple[int | None, ...] = ()

    @property
    def throughput(self) -> float:
        """Items per second in steady state (1 / the measured period)."""
        return 1.0 / self.measured.period_s if self.measured.period_s > 0 else float("inf")


def run_stages(
    bundle: Bundle,
    inputs: Iterable[Sequence[Any]],
    *,
    queue_depth: int = 2,
    num_threads: int = 1,
    workers: Sequence[StageWorker] | None = None,
    pin: bool | None = None,
) -> PipelineRun:
    """Stream ``inputs`` through the bundle's stages (module docstring).

    Parameters
    ----------
    bundle
        The stage plan's bundle (one partition per stage).
    inputs
        Items, each a sequence of arrays in the model's input order.
    queue_depth
        Items each queue between two stages holds.
    num_threads
        Interpreter threads of stages whose plan entry names none.
    workers
        Ready workers to reuse (from :func:`stage_specs`), one per partition.
    pin
        Pin stage ``k``'s thread to its own CPU (the ``k``-th this process may run on), so
        two stages never share a core or move between cores mid-stream. ``None``: pin when
        every stage runs one interpreter thread and there are CPUs for all of them (measured
        on this 2-core host: 2-5 % more throughput for 2 stages); ``False``: never.

    Returns
    -------
    PipelineRun
        Outputs (model output order), the measured and the simulated timelines.

    Raises
    ------
    UsageError
        ``queue_depth`` below 1, or no inputs.
    TensorValueError
        An item has the wrong number of values.
    StageFailedError
        A stage failed; lists the inputs that did not complete.
    """
    if queue_depth < 1:
        raise UsageError(f"queue_depth must be >= 1, got {queue_depth}")
    plan = bundle.plan
    if workers is None:
        workers = [StageWorker(s) for s in stage_specs(bundle, num_threads)]
        for w, entry in zip(workers, plan.partitions, strict=True):
            w.check(entry)
    n = len(workers)
    in_t = [t.tensor for t in plan.inputs]
    out_t = [t.tensor for t in plan.outputs]
    # the first stage reads the inputs itself and the last keeps the results: no feeder or
    # collector thread, so two stages on two cores share them with nothing else
    qs: list[queue.Queue[Any]] = [queue.Queue(maxsize=queue_depth) for _ in range(n - 1)]
    marks: list[list[tuple[int, float, float]]] = [[] for _ in range(n)]
    clock = time.perf_counter
    feed_error: list[BaseException] = []
    results: dict[int, list[np.ndarray]] = {}
    failed: dict[int, _Failure] = {}

    def source() -> Iterator[Any]:
        try:
            for i, item in enumerate(inputs):
                values = list(item)
                if len(values) != len(in_t):
                    raise TensorValueError(
                        f"input {i} has {len(values)} values; the model has {len(in_t)} inputs"
                    )
                yield i, {t: np.asarray(v) for t, v in zip(in_t, values, strict=True)}
        except BaseException as err:  # raised in the caller's thread after the drain
            feed_error.append(err)

    def received(inq: queue.Queue[Any]) -> Iterator[Any]:
        while (msg := inq.get()) is not _STOP:
            yield msg

    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if pin is None:
        pin = len(cpus) >= n and all(w.spec.threads == 1 for w in workers)
    pinned: list[int | None] = [cpus[k] if pin and k < len(cpus) else None for k in range(n)]

    def stage(k: int) -> None:
        cpu = pinned[k]
        if cpu is not None:  # this thread only (Linux: a thread is a task)
            os.sched_setaffinity(0, {cpu})
            applied = os.sched_getaffinity(0)  # what the kernel did
            pinned[k] = cpu if applied == {cpu} else None
        work, rec = workers[k], marks[k].append
        items = source() if k == 0 else received(qs[k - 1])
        for i, tensors in items:
            if not isinstance(tensors, _Failure):
                try:
                    t0 = clock()
                    got = work(tensors)
                    rec((i, t0, clock()))
                    tensors.update(got)
                except Exception as err:  # reported with the inputs that did not complete
                    tensors = _Failure(k, " ".join(str(err).split()))
            if k + 1 < n:
                qs[k].put((i, tensors))
            elif isinstance(tensors, _Failure):
                failed[i] = tensors
            else:
                results[i] = [tensors[t] for t in out_t]
        if k + 1 < n:
            qs[k].put(_STOP)

    threads = [threading.Thread(target=stage, args=(k,), daemon=True) for k in range(n)]
    t_start = clock()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = clock() - t_start
    if feed_error:
        raise feed_error[0]
    if failed:
        first = failed[min(failed)]
        bad = tuple(sorted(failed))
        raise StageFailedError(
            f"stage {first.stage} ({plan.partitions[first.stage].id}) failed on input "
            f"{bad[0]}: {first.message}; {len(bad)} input(s) did not complete: "
            f"{list(bad[:20])}{' ...' if len(bad) > 20 else ''}",
            bad,
            first.stage,
        )
    m = len(results)
    if m == 0:
        raise UsageError("no inputs to stream")
    events = [Event(k, "F", k, i, a, b) for k in range(n) for i, a, b in marks[k]]
    stage_s = tuple(float(np.median([b - a for _, a, b in marks[k]])) for k in range(n))
    costs = StageCosts(stage_s)
    measured = timeline_of(costs, "stream", m, events)
    simulated = simulate(costs, "stream", m, queue_depth=queue_depth)
    return PipelineRun(
        [results[i] for i in range(m)], measured, simulated, stage_s, wall, tuple(pinned)
    )


def run_schedule(
    ops: Sequence[Sequence[Op]],
    work: Callable[[Op], None],
    *,
    timeout_s: float = 600.0,
) -> list[Event]:
    """Execute a per-device operation order (a micro-batch schedule) with real work.

    Device ``d`` is a thread running ``ops[d]`` in order; an operation first waits until the
    operations it depends on have finished (the previous stage's forward of the same
    micro-batch; for a backward, its own forward and the next stage's backward), then calls
    ``work(op)``. Returns the measured events (device, kind, stage, micro, start, end in
    ``perf_counter`` seconds), from which :meth:`Timeline.order` reads each device's order.

    Parameters
    ----------
    ops
        ``ops[d]``: device ``d``'s operations (:func:`~edgepart.placement.schedules.schedule_ops`).
    work
        Runs one operation (e.g. a stage interpreter's invoke for a forward).
    timeout_s
        Longest wait for a dependency; beyond it the run stops with an error (a schedule that
        deadlocks, or a device that failed).

    Returns
    -------
    list of Event
        Every operation, as measured.

    Raises
    ------
    StageFailedError
        ``work`` raised, or a dependency never finished; lists the micro-batches whose
        operations did not all complete.
    """
    n_stages = 1 + max(op.stage for seq in ops for op in seq)
    done: dict[tuple[str, int, int], threading.Event] = {
        (op.kind, op.stage, op.micro): threading.Event() for seq in ops for op in seq
    }
    events: list[Event] = []
    lock = threading.Lock()
    errors: list[tuple[Op, str]] = []
    clock = time.perf_counter

    def deps(op: Op) -> list[tuple[str, int, int]]:
        if op.kind == "F":
            return [("F", op.stage - 1, op.micro)] if op.stage > 0 else []
        out = [("F", op.stage, op.micro)]
        if op.stage + 1 < n_stages:
            out.append(("B", op.stage + 1, op.micro))
        return out

    def device(d: int) -> None:
        for op in ops[d]:
            for key in deps(op):
                ev = done.get(key)
                if ev is None or not ev.wait(timeout_s):
                    with lock:
                        errors.append((op, f"waited {timeout_s:g} s for {key}"))
                    for other in done.values():
                        other.set()
                    return
                if errors:
                    return
            t0 = clock()
            try:
                work(op)
            except Exception as err:  # reported with the micro-batches that did not complete
                with lock:
                    errors.append((op, " ".join(str(err).split())))
                for ev in done.values():  # every waiting device wakes, sees the error, stops
                    ev.set()
                return
            t1 = clock()
            with lock:
                events.append(Event(d, op.kind, op.stage, op.micro, t0, t1))
            done[(op.kind, op.stage, op.micro)].set()

    threads = [threading.Thread(target=device, args=(d,), daemon=True) for d in range(len(ops))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        op, msg = errors[0]
        finished = {(e.kind, e.stage, e.micro) for e in events}
        bad = tuple(sorted({key[2] for key in done if key not in finished}))
        raise StageFailedError(
            f"{op.kind}{op.micro} on stage {op.stage} failed: {msg}; micro-batches not "
            f"complete: {list(bad[:20])}",
            bad,
            op.stage,
        )
    return events
