"""Latency statistics of repeated measurements (:class:`Stats`) and how they are computed."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "STAT_GETTERS",
    "Stats",
    "fit_intercept",
    "fit_slope",
    "median_stats",
    "stats_from_samples",
]


@dataclass(frozen=True)
class Stats:
    """Latency statistics of one measured item, in seconds."""

    median_s: float
    p10_s: float
    p90_s: float
    min_s: float
    count: int
    warmup: int = 0
    batch: int = 1

    def to_json(self) -> dict[str, Any]:
        return {
            "median_s": float(self.median_s),
            "p10_s": float(self.p10_s),
            "p90_s": float(self.p90_s),
            "min_s": float(self.min_s),
            "count": int(self.count),
            "warmup": int(self.warmup),
            "batch": int(self.batch),
        }


STAT_GETTERS: dict[str, Callable[[Stats], float]] = {
    "median": lambda s: s.median_s,
    "p10": lambda s: s.p10_s,
    "min": lambda s: s.min_s,
}


def stats_from_samples(samples_s: list[float], warmup: int, batch: int) -> Stats:
    """Median, p10, p90 and min of per-invocation samples (seconds)."""
    xs = sorted(samples_s)
    return Stats(
        median_s=_quantile(xs, 0.5),
        p10_s=_quantile(xs, 0.1),
        p90_s=_quantile(xs, 0.9),
        min_s=xs[0] if xs else math.nan,
        count=len(xs),
        warmup=warmup,
        batch=batch,
    )


def median_stats(items: Sequence[Stats]) -> Stats:
    """Each statistic's median over ``items`` (the same item measured at several moments).

    The medians keep min <= p10 <= median <= p90 (a median is monotone); count is the total,
    warm-up and batch those of the first item.
    """
    if not items:
        raise ValueError("median_stats of no statistics")

    def med(get: Callable[[Stats], float]) -> float:
        return float(np.median([get(s) for s in items]))

    return Stats(
        median_s=med(lambda s: s.median_s),
        p10_s=med(lambda s: s.p10_s),
        p90_s=med(lambda s: s.p90_s),
        min_s=med(lambda s: s.min_s),
        count=sum(s.count for s in items),
        warmup=items[0].warmup,
        batch=items[0].batch,
    )


def _quantile(xs: list[float], q: float) -> float:
    if not xs:
        return math.nan
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (pos - lo) * (xs[hi] - xs[lo])


def fit_intercept(lengths: Sequence[int], stats: Sequence[Stats]) -> Stats:
    """Least-squares intercept at length 0 of each statistic against ``lengths``.

    Statistics are fitted one by one, then made monotone (min <= p10 <= median <= p90) and
    clamped at 0; count, warm-up and batch are those of the shortest chain.
    """
    return _fit_line(lengths, stats, 0)


def fit_slope(lengths: Sequence[float], stats: Sequence[Stats]) -> Stats:
    """Least-squares slope of each statistic against ``lengths`` (what one more unit adds),
    made monotone and clamped at 0 like :func:`fit_intercept`."""
    return _fit_line(lengths, stats, 1)


def _fit_line(lengths: Sequence[float], stats: Sequence[Stats], term: int) -> Stats:
    """Coefficient ``term`` (0: intercept, 1: slope) of a line per statistic (see above)."""
    x = np.asarray(lengths, dtype=np.float64)
    if len(x) < 2 or len(x) != len(stats):
        raise ValueError("need at least two chain lengths, one Stats each")
    a = np.vstack([np.ones_like(x), x]).T

    def coef(vals: list[float]) -> float:
        c = np.linalg.lstsq(a, np.asarray(vals, dtype=np.float64), rcond=None)[0]
        return max(float(c[term]), 0.0)

    mn = coef([s.min_s for s in stats])
    p10 = max(coef([s.p10_s for s in stats]), mn)
    med = max(coef([s.median_s for s in stats]), p10)
    p90 = max(coef([s.p90_s for s in stats]), med)
    first = stats[0]
    return Stats(med, p10, p90, mn, min(s.count for s in stats), first.warmup, first.batch)
