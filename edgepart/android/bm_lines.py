"""The lines of ``benchmark_model`` output (logcat and severity prefixes removed) and its
``count= first= curr= min= max= avg= std=`` stat lines.

Lines may carry the tool's ``INFO: ``/``WARN: ``/``ERROR: `` prefixes, logcat prefixes
(``05-30 13:04:39.021 25935 25935 I tflite  : ``, ``I/tflite: ``, Android Studio's columns) or
none (builds before ~TF 2.8 printed bare lines); tabs may have become spaces in a copy. The
run-log parser (:mod:`edgepart.android.bm_run_log`) and the per-op table parser
(:mod:`edgepart.android.bm_op_profile`) read what :func:`clean_lines` returns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["NUM", "LogLine", "RunStats", "clean_lines", "parse_stat"]

# a number as the tool prints it
NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|-?inf)"

_LOGCAT_THREADTIME = re.compile(
    r"^\d\d-\d\d \d\d:\d\d:\d\d\.\d+\s+\d+\s+\d+\s+([VDIWEF])\s+[^:]*?\s*: ?"
)
_LOGCAT_STUDIO = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+\s+\d+-\d+\s+\S+\s+\S+\s+([VDIWEF])\s\s?"
)
_LOGCAT_BRIEF = re.compile(r"^([VDIWEF])/[^:(]+(?:\(\s*\d+\))?\s*: ?")
_LOGCAT_STUDIO_OLD = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \d+-\d+/\S+ ([VDIWEF])/[^:]+: ?"
)
_SEVERITY = re.compile(r"^(INFO|WARN|WARNING|ERROR|VERBOSE|FATAL|<Unknown severity>): ?")
_LETTER = {"V": "VERBOSE", "D": "DEBUG", "I": "INFO", "W": "WARN", "E": "ERROR", "F": "FATAL"}


@dataclass(frozen=True)
class LogLine:
    """One line of output: its number, its severity (from a prefix, if any), its text."""

    number: int  # 1-based line number in the source text
    severity: str | None
    text: str


def clean_lines(text: str) -> list[LogLine]:
    """Split into lines with logcat and severity prefixes removed (severity kept)."""
    lines = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r\n")
        severity = None
        for pattern in (_LOGCAT_THREADTIME, _LOGCAT_STUDIO, _LOGCAT_STUDIO_OLD, _LOGCAT_BRIEF):
            m = pattern.match(line)
            if m:
                severity = _LETTER[m.group(1)]
                line = line[m.end() :]
                break
        m = _SEVERITY.match(line.lstrip())
        if m:
            severity = "WARN" if m.group(1) == "WARNING" else m.group(1)
            line = line.lstrip()[m.end() :]
        lines.append(LogLine(number, severity, line))
    return lines


@dataclass(frozen=True)
class RunStats:
    """One ``count= first= curr= min= max= avg= std=`` stat line (all values in microseconds).

    ``count=N curr=X(all same)`` gives ``first=min=max=avg=X`` and ``std=0``; ``count=0`` leaves
    everything but ``count`` as ``None``. Percentiles are ``None`` on builds that do not print them.
    """

    count: int
    first: float | None = None
    curr: float | None = None
    min: float | None = None
    max: float | None = None
    avg: float | None = None
    std: float | None = None
    p5: float | None = None
    median: float | None = None
    p95: float | None = None


_STAT = re.compile(
    rf"^count=(\d+)(?: first=({NUM}) curr=({NUM}) min=({NUM}) max=({NUM}) avg=({NUM})"
    rf" std=({NUM})| curr=({NUM})(\(all same\))?)?"
    rf"(?: p5=({NUM}) median=({NUM}) p95=({NUM}))?\s*$"
)


def parse_stat(text: str) -> RunStats | None:
    """The stat line in ``text`` (see :class:`RunStats`), or None if it is not one."""
    m = _STAT.match(text.strip())
    if not m:
        return None
    g = m.groups()
    count = int(g[0])
    pct = [None if v is None else float(v) for v in g[9:12]]
    if g[1] is not None:
        first, curr, lo, hi, avg, std = (float(v) for v in g[1:7])
        return RunStats(count, first, curr, lo, hi, avg, std, *pct)
    if g[7] is not None:
        v = float(g[7])
        return RunStats(count, v, v, v, v, v, 0.0, *pct)
    return RunStats(count, p5=pct[0], median=pct[1], p95=pct[2])
