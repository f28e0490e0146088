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
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from edgepart.cost.stats import STAT_GETTERS as _STAT_GETTERS
from edgepart.cost.stats import Stats, stats_from_samples
from edgepart.errors import LatencyTableError
from edgepart.fileio import atomic_write_text
from edgepart.jsondoc import load_file

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
UNKNOWN = "unknown"
"""The source of an op no estimate covers (a compiled accelerator program without a table
entry): its latency is counted as 0 and every report says it is left out."""
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
    if not os.path.lexists(p):
        raise LatencyTableError(f"{p}: no such latency table file")
    # NaN and Infinity parse: the table's validator names the JSON path of each
    doc = load_file(
        p, what="latency table", limit=TABLE_LIMIT, error=LatencyTableError, constants=True
    )
    return table_from_dict(doc, p)


TABLE_LIMIT = 1 << 30
"""Largest latency-table file read (1 GiB)."""


def table_from_dict(doc: Any, where: str = "<table>") -> LatencyTable:
    """Validate a parsed latency-table document (see :func:`load_table`)."""
    procs = check_document(doc, where)
    return LatencyTable(procs, where)


def tables_from(paths: Iterable[str | os.PathLike[str]]) -> LatencyTable:
    """Load several tables and merge them in order."""
    out = LatencyTable()
    for p in paths:
        out = out.merge(load_table(p))
    return out


# Validation of latency-table documents: every error names the file and the JSON path.

_KINDS = ("op", "group")
_STATS = ("median_s", "p10_s", "p90_s", "min_s", "count")


def _fail(where: str, path: str, msg: str) -> LatencyTableError:
    return LatencyTableError(f"{where}: {path}: {msg}")


def _obj(v: Any, where: str, path: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _fail(where, path, f"expected an object, got {type(v).__name__}")
    return v


def _num(v: Any, where: str, path: str, *, integer: bool = False) -> float:
    ok = isinstance(v, int) if integer else isinstance(v, (int, float))
    if isinstance(v, bool) or not ok or not math.isfinite(v) or v < 0:
        kind = "a non-negative integer" if integer else "a finite non-negative number"
        raise _fail(where, path, f"expected {kind}, got {v!r}")
    return float(v)


def _str(v: Any, where: str, path: str) -> str:
    if not isinstance(v, str):
        raise _fail(where, path, f"expected a string, got {v!r}")
    return v


def check_stats(v: Any, where: str, path: str) -> Stats:
    d = _obj(v, where, path)
    for k in _STATS:
        if k not in d:
            raise _fail(
                where, f"{path}.{k}", "missing (stats need median_s, p10_s, p90_s, min_s and count)"
            )
    med = _num(d["median_s"], where, f"{path}.median_s")
    p10 = _num(d["p10_s"], where, f"{path}.p10_s")
    p90 = _num(d["p90_s"], where, f"{path}.p90_s")
    mn = _num(d["min_s"], where, f"{path}.min_s")
    count = int(_num(d["count"], where, f"{path}.count", integer=True))
    if count < 1:
        raise _fail(where, f"{path}.count", "must be at least 1")
    if not (mn <= p10 <= med <= p90):
        raise _fail(
            where,
            path,
            f"statistics out of order: need min_s <= p10_s <= median_s <= "
            f"p90_s, got {mn}, {p10}, {med}, {p90}",
        )
    warm = int(_num(d.get("warmup", 0), where, f"{path}.warmup", integer=True))
    batch = int(_num(d.get("batch", 1), where, f"{path}.batch", integer=True))
    return Stats(med, p10, p90, mn, count, warm, max(batch, 1))


def check_document(doc: Any, where: str) -> dict[str, ProcessorTable]:
    """The processors of a validated document."""
    d = _obj(doc, where, "$")
    if d.get("format") != FORMAT:
        raise _fail(
            where,
            "$.format",
            f"expected {FORMAT!r}, got {d.get('format')!r}; "
            "is this a latency table written by `edgepart profile`?",
        )
    if d.get("version") != VERSION:
        raise _fail(
            where,
            "$.version",
            f"unsupported version {d.get('version')!r}; this edgepart reads version {VERSION}",
        )
    procs = _obj(d.get("processors"), where, "$.processors")
    out: dict[str, ProcessorTable] = {}
    for name in sorted(procs):
        out[name] = _check_processor(name, procs[name], where, f"$.processors.{name}")
    return out


def _statistic(v: Any, where: str, path: str) -> str:
    if v not in ("median", "p10", "min"):
        raise _fail(where, path, f"expected one of ['median', 'p10', 'min'], got {v!r}")
    return str(v)


def _check_processor(name: str, v: Any, where: str, path: str) -> ProcessorTable:
    d = _obj(v, where, path)
    threads = int(_num(d.get("threads", 1), where, f"{path}.threads", integer=True))
    ovh = d.get("invoke_overhead")
    pt = ProcessorTable(
        name=name,
        device=_str(d.get("device", ""), where, f"{path}.device"),
        executor=_str(d.get("executor", ""), where, f"{path}.executor"),
        threads=threads,
        source=_str(d.get("source", ""), where, f"{path}.source"),
        statistic=_statistic(d.get("statistic", "median"), where, f"{path}.statistic"),
        invoke_overhead=None if ovh is None else check_stats(ovh, where, f"{path}.invoke_overhead"),
        delegate_overhead=None
        if d.get("delegate_overhead") is None
        else check_stats(d["delegate_overhead"], where, f"{path}.delegate_overhead"),
    )
    entries = d.get("entries", [])
    if not isinstance(entries, list):
        raise _fail(where, f"{path}.entries", "expected a list of entries")
    for i, e in enumerate(entries):
        ep = f"{path}.entries[{i}]"
        ed = _obj(e, where, ep)
        key = _str(ed.get("key"), where, f"{ep}.key")
        if key in pt.entries:
            raise _fail(
                where,
                ep,
                f"duplicate key {key[:80]!r} (first at another entry); "
                "merge duplicates before writing",
            )
        kind = ed.get("kind", "op")
        if kind not in _KINDS:
            raise _fail(where, f"{ep}.kind", f"expected one of {list(_KINDS)}, got {kind!r}")
        stats = check_stats(ed.get("stats"), where, f"{ep}.stats")
        value = ed.get("value_s", stats.median_s)
        extra = {k: v for k, v in ed.items() if k not in _ENTRY_FIELDS}
        pt.add(
            Entry(
                key=key,
                family=_str(ed.get("family", key), where, f"{ep}.family"),
                kind=kind,
                flops=float(_num(ed.get("flops", 0), where, f"{ep}.flops")),
                bytes=float(_num(ed.get("bytes", 0), where, f"{ep}.bytes")),
                stats=stats,
                value_s=float(_num(value, where, f"{ep}.value_s")),
                extra=extra,
            )
        )
    models = d.get("models", [])
    if not isinstance(models, list):
        raise _fail(where, f"{path}.models", "expected a list")
    for i, m in enumerate(models):
        md = _obj(m, where, f"{path}.models[{i}]")
        check_stats(md.get("stats"), where, f"{path}.models[{i}].stats")
        pt.models.append(md)
    return pt


_ENTRY_FIELDS = frozenset({"key", "family", "kind", "flops", "bytes", "stats", "value_s"})
