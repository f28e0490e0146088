"""Measured schedules for the report, from the JSON that ``run`` and ``bench`` write.

Two sources, recognized by their content:

* ``edgepart run BUNDLE --benchmark --json FILE`` (this host): ``benchmark.timeline`` holds each
  partition's median start and end inside an invocation, measured with the runtime's real
  scheduler (:mod:`edgepart.runtime.timeline`), and ``partitions`` says what each partition
  really ran on (a host fallback for an absent delegate says so);
* ``edgepart bench BUNDLE --adb --json > FILE`` (phones): per device, each partition's median
  latency from ``benchmark_model`` running that partition alone. There are no start times, so
  the bars are placed by list scheduling: in plan order, each partition starts when its
  dependencies have ended and its unit is free; transfers are not measured and take no time.

Each source becomes a :class:`MeasuredSchedule` (bars on the plan's units) whose ``label`` says
where it was measured; host timings are never labelled as the device's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from edgepart.errors import UsageError
from edgepart.jsondoc import load_file

__all__ = ["MeasuredSchedule", "load_measured"]


@dataclass(frozen=True)
class MeasuredSchedule:
    """Bars ``(partition id, start_s, end_s)`` of one measured run, with what it was."""

    label: str
    kind: str  # "host" | "phone"
    bars: tuple[tuple[str, float, float], ...]
    latency_s: float | None
    notes: tuple[str, ...] = field(default=())
    host_partitions: tuple[str, ...] = field(default=())
    """Partitions that ran on the host fallback instead of their processor."""


def load_measured(
    path: str | os.PathLike[str], partitions: Sequence[Any]
) -> list[MeasuredSchedule]:
    """The measured schedules in ``path`` for a plan with these partitions (plan order).

    Raises
    ------
    UsageError
        The file is missing, not JSON, of neither kind, or names partitions the plan lacks.
    """
    p = os.fspath(path)
    try:
        doc = load_file(p, what="measurement record (JSON)", limit=1 << 30, error=UsageError)
    except UsageError as err:
        raise UsageError(f"--measured {err}") from None
    ids = [q.id for q in partitions]
    if isinstance(doc, dict) and isinstance(doc.get("benchmark"), dict):
        return [_host(doc, p, ids)]
    if isinstance(doc, dict) and doc.get("kind") == "bundle" and "partitions" in doc:
        return _phones(doc, p, partitions)
    raise UsageError(
        f"--measured {p}: not a record of `edgepart run --benchmark --json FILE` nor of "
        "`edgepart bench BUNDLE --adb --json`"
    )


def _host(doc: Mapping[str, Any], path: str, ids: Sequence[str]) -> MeasuredSchedule:
    bench = doc["benchmark"]
    timeline = bench.get("timeline")
    if not isinstance(timeline, dict) or not timeline:
        raise UsageError(
            f"--measured {path}: the run record has no benchmark.timeline (written by "
            "`edgepart run --benchmark --json` of this version); run the benchmark again"
        )
    if set(timeline) != set(ids):
        raise UsageError(
            f"--measured {path}: partitions {sorted(timeline)} do not match the plan's "
            f"{list(ids)}; give the record of a run of this bundle"
        )
    bars = tuple(
        (pid, float(timeline[pid]["start_s"]), float(timeline[pid]["end_s"])) for pid in ids
    )
    ran = {str(r.get("partition")): r for r in doc.get("partitions", []) if isinstance(r, dict)}
    fallback = [pid for pid in ids if ran.get(pid, {}).get("fallback")]
    notes = ["measured on this host with LiteRT (edgepart run --benchmark)"]
    if fallback:
        notes.append(
            f"{', '.join(fallback)} ran on the host fallback executor (no delegate library for "
            "their processor here): those bars are host CPU timings, not the processor's"
        )
    label = "measured: host run" + (
        " (host fallback for " + ", ".join(fallback) + ")" if fallback else ""
    )
    return MeasuredSchedule(
        label, "host", bars, bench.get("latency_median_s"), tuple(notes), tuple(fallback)
    )


def _phones(doc: Mapping[str, Any], path: str, partitions: Sequence[Any]) -> list[MeasuredSchedule]:
    ids = [q.id for q in partitions]
    devices = {str(d.get("serial")): d.get("device") or {} for d in doc.get("devices", [])}
    out = []
    for serial in sorted(doc["partitions"]):
        rows = {r["id"]: r for r in doc["partitions"][serial]}
        if set(rows) != set(ids):
            raise UsageError(
                f"--measured {path}: device {serial} has partitions {sorted(rows)}, the plan "
                f"{list(ids)}; give the record of a bench of this bundle"
            )
        missing = [pid for pid in ids if rows[pid].get("median_ms") is None]
        if missing:
            continue  # a device where some partition did not run has no schedule to draw
        dur = {pid: float(rows[pid]["median_ms"]) / 1e3 for pid in ids}
        bars = _list_schedule(partitions, dur)
        info = devices.get(serial) or {}
        name = info.get("model") or serial
        fell = [pid for pid in ids if rows[pid].get("status") == "fallback"]
        notes = [
            f"benchmark_model on {name} ({serial}): each partition's median alone, placed in "
            "plan order after its dependencies (transfers not measured)"
        ]
        if fell:
            notes.append(f"{', '.join(fell)} fell back to XNNPACK on the device")
        out.append(
            MeasuredSchedule(
                f"measured: {name}", "phone", tuple(bars), max(b[2] for b in bars), tuple(notes)
            )
        )
    if not out:
        raise UsageError(f"--measured {path}: no device measured every partition")
    return out


def _list_schedule(
    partitions: Sequence[Any], dur: Mapping[str, float]
) -> list[tuple[str, float, float]]:
    end: dict[str, float] = {}
    free: dict[str, float] = {}
    bars = []
    for p in partitions:
        start = max([end[d] for d in p.depends_on] + [free.get(p.unit_name, 0.0)])
        e = start + dur[p.id]
        end[p.id] = e
        free[p.unit_name] = e
        bars.append((p.id, start, e))
    return bars
