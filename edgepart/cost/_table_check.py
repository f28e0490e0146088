"""Validation of latency-table documents: every error names the file and the JSON path."""

from __future__ import annotations

import math
from typing import Any

from edgepart.cost.table import FORMAT, VERSION, Entry, ProcessorTable, Stats
from edgepart.errors import LatencyTableError

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
