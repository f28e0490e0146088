"""The measured schedule of a bundle: when each partition starts and ends inside one ``invoke``.

:func:`measure_timeline` runs whole invocations through a scheduler of the same kind the
interpreter uses (serial, or one worker per unit with the same dependency waits), with each
partition's run wrapped in two ``perf_counter`` reads. Times are relative to the start of the
invocation; the median start and end over ``repeat`` invocations are reported per partition, so
partitions that overlap in the real run overlap in the result. This is the record
``edgepart run --benchmark --json`` writes under ``benchmark.timeline`` and ``edgepart report``
draws as the measured Gantt chart. Partitions run where ``executors`` says (a host fallback for
an absent delegate is a host timing, not the processor's).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from edgepart.runtime.dispatch import Concurrent
from edgepart.runtime.latency import run_once

if TYPE_CHECKING:
    from edgepart.runtime.interpreter import PartitionedInterpreter

__all__ = ["PartitionSpan", "measure_timeline"]


@dataclass(frozen=True)
class PartitionSpan:
    """Median start and end of one partition, seconds from the start of ``invoke``."""

    start_s: float
    end_s: float
    runs: int


def measure_timeline(
    interp: PartitionedInterpreter,
    inputs: Sequence[np.ndarray],
    *,
    warmup: int = 3,
    repeat: int = 20,
) -> dict[str, PartitionSpan]:
    """Per partition id, its median :class:`PartitionSpan` over ``repeat`` invocations."""
    run_once(interp, inputs)  # sets the inputs; every partition has valid data from here on
    n = len(interp.plan.partitions)
    starts = np.zeros((repeat, n))
    ends = np.zeros((repeat, n))
    row = [0]
    clock = time.perf_counter
    t0 = [0.0]
    run_part = interp._run_part

    def timed(k: int) -> None:
        a = clock()
        run_part(k)
        b = clock()
        r = row[0]
        if r >= 0:
            starts[r, k] = a - t0[0]
            ends[r, k] = b - t0[0]

    if interp.parallel:
        sched = Concurrent(timed, interp._routes)
        run = sched.run
    else:

        def run() -> None:
            for k in range(n):
                timed(k)

        sched = None
    try:
        row[0] = -1
        for _ in range(warmup):
            run()
        for r in range(repeat):
            row[0] = r
            t0[0] = clock()
            run()
    finally:
        if sched is not None:
            sched.close()
    return {
        p.id: PartitionSpan(float(np.median(starts[:, k])), float(np.median(ends[:, k])), repeat)
        for k, p in enumerate(interp.plan.partitions)
    }
