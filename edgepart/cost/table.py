"""Latency tables: measured per-op and per-fused-group latencies, by processor and signature.

The file format is JSON, versioned and deterministic (keys sorted, entries sorted by key, no
timestamps); ``docs/latency_tables.md`` documents it. In short::

    {"format": "edgepart-latency-table", "version": 1,
     "processors": {"<processor>": {
         "device": ..., "executor": ..., "threads": 1, "source": ..., "statistic": "p10",
         "invoke_overhead": <stats>,          # one empty invocation, paid once per partition
         "entries": [{"key": <signature key>, "kind": "op" | "group", "family": ...,
                      "flops": ..., "bytes": ..., "stats": <stats>, ...}],
         "models": [{"name": ..., "ops": n, "stats": <stats>}]}}}

    <stats> = {"median_s", "p10_s", "p90_s", "min_s", "count", "warmup", "batch"}

:meth:`ProcessorTable.lookup` prefers a measured entry with the exact key; else it
*interpolates* from measured entries of the same family (same op, version, dtypes, constness,
ranks and options; only sizes differ), scaling by FLOPs (or by bytes for ops without FLOPs);
else it returns ``None`` and the caller falls back to the roofline. Every answer says which.
"""

from __future__ import annotations

import bisect
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from edgepart.cost.stats import STAT_GETTERS as _STAT_GETTERS
from edgepart.cost.stats import Stats, stats_from_samples
from edgepart.errors import LatencyTableError
from edgepart.fileio import atomic_write_text

__all__ = [
    "FORMAT",
    "VERSION",
    "Entry",
    "Estimate",
    "LatencyTable",
    "ProcessorTable",
    "Stats",
    "load_table",
    "stats_from_samples",
]

FORMAT = "edgepart-latency-table"
VERSION = 1

MEASURED, INTERPOLATED, ROOFLINE = "measured", "interpolated", "roofline"
PREDICTED = "predicted"


@dataclass(frozen=True)
class Entry:
    """One measured op or fused group.

    ``value_s`` is the latency the cost model uses: the median minus the processor's measured
    per-invocation overhead (what the op adds inside a larger invocation), never below zero.
    """

    key: str
    family: str
    kind: str  # "op" or "group"
    flops: float
    bytes: float
    stats: Stats
    value_s: float
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d = dict(self.extra)
        d.update(
            key=self.key,
            family=self.family,
            kind=self.kind,
            flops=float(self.flops),
            bytes=float(self.bytes),
            stats=self.stats.to_json(),
            value_s=float(self.value_s),
        )
        return d


@dataclass(frozen=True)
class Estimate:
    """A latency answer and where it came from (``measured``/``interpolated``/``predicted``/
    ``roofline``); predictions carry the band the measured value is expected in (10th to
    90th percentile of the predictor's cross-validated errors), else ``None``."""

    seconds: float
    source: str
    detail: str = ""
    low_s: float | None = None
    high_s: float | None = None


@dataclass
class ProcessorTable:
    """The measurements of one processor (one executor and thread count on one device)."""

    name: str
    device: str = ""
    executor: str = ""
    threads: int = 1
    source: str = ""
    statistic: str = "median"
    invoke_overhead: Stats | None = None
    delegate_overhead: Stats | None = None
    entries: dict[str, Entry] = field(default_factory=dict)
    models: list[dict[str, Any]] = field(default_factory=list)
    _families: dict[str, tuple[list[float], list[Entry]]] | None = field(default=None, repr=False)

    @property
    def invoke_overhead_s(self) -> float:
        """The overhead in the statistic the entries' values were computed with."""
        if self.invoke_overhead is None:
            return 0.0
        return float(_STAT_GETTERS[self.statistic](self.invoke_overhead))

    @property
    def delegate_node_s(self) -> float:
        """What one delegate node (partition) adds to an invocation, 0 if not measured."""
        if self.delegate_overhead is None or self.invoke_overhead is None:
            return 0.0
        get = _STAT_GETTERS[self.statistic]
        return max(float(get(self.delegate_overhead) - get(self.invoke_overhead)), 0.0)

    def add(self, entry: Entry) -> None:
        self.entries[entry.key] = entry
        self._families = None

    def _index(self) -> dict[str, tuple[list[float], list[Entry]]]:
        if self._families is None:
            fam: dict[str, list[tuple[float, str, Entry]]] = {}
            for e in self.entries.values():
                fam.setdefault(e.family, []).append((_size(e.flops, e.bytes), e.key, e))
            self._families = {}
            for k, rows in fam.items():
                rows.sort(key=lambda r: (r[0], r[1]))
                self._families[k] = ([r[0] for r in rows], [r[2] for r in rows])
        return self._families

    def lookup(self, key: str, family: str, flops: float, nbytes: float) -> Estimate | None:
        """Measured or interpolated latency of an op/group, or ``None`` (use the roofline).

        Interpolation is linear in work between the two measured family members that bracket
        it; outside the measured range the nearest member is scaled in proportion to work.
        """
        e = self.entries.get(key)
        if e is not None:
            return Estimate(e.value_s, MEASURED, e.key)
        fam = self._index().get(family)
        if not fam:
            return None
        sizes, members = fam
        w = _size(flops, nbytes)
        if w <= 0:
            return None
        j = bisect.bisect_left(sizes, w)
        if 0 < j < len(sizes) and sizes[j - 1] < w:
            lo, hi = members[j - 1], members[j]
            s0, s1 = sizes[j - 1], sizes[j]
            f = (w - s0) / (s1 - s0)
            v = lo.value_s + f * (hi.value_s - lo.value_s)
            return Estimate(v, INTERPOLATED, f"between {lo.key} and {hi.key}")
        near = members[min(j, len(members) - 1)]
        s = sizes[min(j, len(sizes) - 1)]
        if s <= 0:
            return None
        return Estimate(near.value_s * w / s, INTERPOLATED, f"scaled from {near.key}")

    def delegated(self, key: str, family: str) -> bool:
        """Whether the executor ran this op (or, if unmeasured, its family) in a delegate."""
        e = self.entries.get(key)
        if e is not None:
            return int(e.extra.get("delegate_nodes", 0)) > 0
        fam = self._index().get(family)
        if not fam:
            return False
        return any(int(m.extra.get("delegate_nodes", 0)) > 0 for m in fam[1])

    def restat(self, statistic: str) -> ProcessorTable:
        """A copy whose entry values use another statistic (``median``, ``p10`` or ``min``).

        ``value_s`` becomes that statistic of the entry minus the same statistic of the
        invocation overhead, so predictions and measurements can be compared like for like.
        """
        get = _STAT_GETTERS.get(statistic)
        if get is None:
            raise LatencyTableError(
                f"unknown statistic {statistic!r}; choose one of {sorted(_STAT_GETTERS)}"
            )
        ovh = get(self.invoke_overhead) if self.invoke_overhead else 0.0
        node = 0.0
        if self.delegate_overhead is not None:
            node = max(get(self.delegate_overhead) - ovh, 0.0)
        out = replace(
            self, entries={}, models=list(self.models), statistic=statistic, _families=None
        )
        for e in self.entries.values():
            k = int(e.extra.get("delegate_nodes", 0))
            out.add(replace(e, value_s=max(get(e.stats) - ovh - k * node, 0.0)))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "executor": self.executor,
            "threads": self.threads,
            "source": self.source,
            "statistic": self.statistic,
            "invoke_overhead": self.invoke_overhead.to_json() if self.invoke_overhead else None,
            "delegate_overhead": (
                self.delegate_overhead.to_json() if self.delegate_overhead else None
            ),
            "entries": [self.entries[k].to_json() for k in sorted(self.entries)],
            "models": sorted(self.models, key=lambda m: str(m.get("name", ""))),
        }


def _size(flops: float, nbytes: float) -> float:
    """The work measure interpolation scales by: FLOPs, or bytes for ops without FLOPs."""
    return float(flops) if flops > 0 else float(nbytes)


@dataclass
class LatencyTable:
    """Latency tables of one or more processors (see the module docstring)."""

    processors: dict[str, ProcessorTable] = field(default_factory=dict)
    path: str | None = None

    def processor(self, name: str) -> ProcessorTable:
        """The table of processor ``name``; the error lists the processors present."""
        try:
            return self.processors[name]
        except KeyError:
            raise LatencyTableError(
                f"{self.path or 'latency table'}: no processor {name!r}; "
                f"it has {sorted(self.processors)}"
            ) from None

    def merge(self, other: LatencyTable) -> LatencyTable:
        """A new table with ``other``'s processors and entries added; ``other`` wins on a tie."""
        out = LatencyTable({}, self.path)
        for src in (self, other):
            for name, pt in src.processors.items():
                cur = out.processors.get(name)
                if cur is None:
                    cur = out.processors[name] = replace(
                        pt, entries=dict(pt.entries), models=list(pt.models), _families=None
                    )
                    continue
                if (
                    pt.executor
                    and cur.executor
                    and (pt.executor, pt.threads)
                    != (
                        cur.executor,
                        cur.threads,
                    )
                ):
                    raise LatencyTableError(
                        f"{src.path or 'latency table'}: processor {name!r} was measured with "
                        f"{pt.executor}/{pt.threads} threads but the table it merges into has "
                        f"{cur.executor}/{cur.threads}; rename one processor"
                    )
                for e in pt.entries.values():
                    cur.add(e)
                cur.models.extend(pt.models)
                if pt.invoke_overhead is not None:
                    cur.invoke_overhead = pt.invoke_overhead
                if pt.delegate_overhead is not None:
                    cur.delegate_overhead = pt.delegate_overhead
        return out

    def restat(self, statistic: str) -> LatencyTable:
        """Every processor's :meth:`ProcessorTable.restat`."""
        return LatencyTable({k: v.restat(statistic) for k, v in self.processors.items()}, self.path)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "processors": {k: self.processors[k].to_json() for k in sorted(self.processors)},
        }

    def dumps(self) -> str:
        """The canonical JSON text (sorted keys, stable float formatting)."""
        return json.dumps(self.to_json(), indent=1, sort_keys=True, allow_nan=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the table atomically."""
        atomic_write_text(path, self.dumps())


def load_table(path: str | os.PathLike[str]) -> LatencyTable:
    """Read and validate a latency table file.

    Raises
    ------
    LatencyTableError
        Naming the file and the JSON path of the first invalid field.
    """
    p = os.fspath(path)
    try:
        with open(p, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise LatencyTableError(f"{p}: no such latency table file") from None
    except json.JSONDecodeError as err:
        raise LatencyTableError(
            f"{p}: not JSON (line {err.lineno}, column {err.colno}: {err.msg})"
        ) from None
    return table_from_dict(doc, p)


def table_from_dict(doc: Any, where: str = "<table>") -> LatencyTable:
    """Validate a parsed latency-table document (see :func:`load_table`)."""
    from edgepart.cost._table_check import check_document

    procs = check_document(doc, where)
    return LatencyTable(procs, where)


def tables_from(paths: Iterable[str | os.PathLike[str]]) -> LatencyTable:
    """Load several tables and merge them in order."""
    out = LatencyTable()
    for p in paths:
        out = out.merge(load_table(p))
    return out
