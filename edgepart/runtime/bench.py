"""The timing loop used by ``edgepart run --benchmark`` and ``benchmarks/runtime.py``.

Latency: ``warmup`` untimed calls, then ``repeat`` calls each timed with ``perf_counter``;
the median and the 90th percentile are reported (means are too sensitive to a shared, noisy
machine). Throughput: the wall time of streaming ``n`` inputs after a warm-up stream.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["LatencyStats", "time_calls"]


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
