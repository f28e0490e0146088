"""The timing loop used by ``edgepart run --benchmark`` and ``benchmarks/runtime.py``.

Latency: ``warmup`` untimed calls, then ``repeat`` calls each timed with ``perf_counter``;
the median and the 90th percentile are reported (means are too sensitive to a shared, noisy
machine). Throughput (:func:`time_stream`): the wall time of streaming ``n`` inputs, end to end
(``n / total``, which includes filling and draining the pipeline: with ``s`` equal stages
about ``s - 1`` extra periods), and in steady state (``(n - 1) / (last result - first
result)``, one result per period once the pipeline is full).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from edgepart.runtime.interpreter import PartitionedInterpreter

__all__ = ["LatencyStats", "StreamStats", "run_once", "time_calls", "time_stream"]


@dataclass(frozen=True)
class LatencyStats:
    """Seconds per call over ``n`` timed calls."""

    n: int
    median_s: float
    p90_s: float
    min_s: float
    mean_s: float

    @staticmethod
    def of(samples: list[float] | np.ndarray) -> LatencyStats:
        a = np.asarray(samples, dtype=np.float64)
        return LatencyStats(
            len(a),
            float(np.median(a)),
            float(np.percentile(a, 90)),
            float(a.min()),
            float(a.mean()),
        )


def time_calls(fn: Callable[[], object], *, warmup: int = 10, repeat: int = 100) -> LatencyStats:
    """Call ``fn`` ``warmup`` times untimed, then ``repeat`` times timed."""
    for _ in range(warmup):
        fn()
    samples = np.empty(repeat)
    clock = time.perf_counter
    for i in range(repeat):
        t0 = clock()
        fn()
        samples[i] = clock() - t0
    return LatencyStats.of(samples)


@dataclass(frozen=True)
class StreamStats:
    """Timing of one stream of ``n`` results."""

    n: int
    total_s: float
    """From asking for the first result to receiving the last."""
    steady_s: float
    """From receiving the first result to receiving the last."""

    @property
    def throughput_per_s(self) -> float:
        """End to end: ``n / total_s`` (includes pipeline fill and drain)."""
        return self.n / self.total_s if self.total_s > 0 else 0.0

    @property
    def steady_per_s(self) -> float | None:
        """Steady state: ``(n - 1) / steady_s``; ``None`` with fewer than 2 results."""
        return (self.n - 1) / self.steady_s if self.n > 1 and self.steady_s > 0 else None


def time_stream(results: Iterable[object]) -> StreamStats:
    """Drain ``results`` (e.g. a ``run_stream`` generator, which starts work on first use)."""
    clock = time.perf_counter
    t0 = clock()
    first = last = t0
    n = 0
    for _ in results:
        last = clock()
        if n == 0:
            first = last
        n += 1
    return StreamStats(n, last - t0, last - first)


def run_once(interp: PartitionedInterpreter, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Set the inputs, invoke once, return copies of the outputs (output-detail order)."""
    for d, x in zip(interp.get_input_details(), inputs, strict=True):
        interp.set_tensor(d["index"], x)
    interp.invoke()
    return [interp.get_tensor(d["index"]) for d in interp.get_output_details()]
