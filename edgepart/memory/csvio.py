"""Buffer tables as CSV and plans as CSV or JSON.

Input (the format MiniMalloc and other allocators use, so any tool can cross-check the same
instance): one buffer per row, ``id,lower,upper,size[,alignment]`` with half-open lifetimes
``[lower, upper)``. The header line is optional; with a header, columns are found by name and
two more are accepted: ``offset`` (a fixed offset, empty for none) and ``memory`` (the arena).
Blank lines and lines starting with ``#`` are skipped. Every error names the file and line.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from edgepart.errors import BufferTableError, UsageError
from edgepart.fileio import atomic_write_text, read_regular
from edgepart.memory.arena import ArenaPlan
from edgepart.memory.problem import DEFAULT_ALIGNMENT, DEFAULT_MEMORY, MemoryProblem

__all__ = ["read_buffers_csv", "write_offsets_csv", "write_plan_json"]

CSV_LIMIT = 1 << 30
"""Largest buffer table read (1 GiB)."""

_POSITIONAL = ("id", "lower", "upper", "size", "alignment")
_KNOWN = frozenset((*_POSITIONAL, "offset", "memory"))
_REQUIRED = ("id", "lower", "upper", "size")


def read_buffers_csv(
    path: str | os.PathLike[str], *, default_alignment: int = DEFAULT_ALIGNMENT
) -> MemoryProblem:
    """Read a buffer table.

    Raises
    ------
    UsageError
        If the file is missing or unreadable.
    BufferTableError
        Naming ``file:line``, if a row or the header is invalid.
    """
    path = Path(path)
    data = read_regular(path, what="buffer table (CSV)", limit=CSV_LIMIT)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BufferTableError(
            f"{path}: not UTF-8 text ({err.reason} at byte {err.start})"
        ) from None
    rows = [
        (n, [cell.strip() for cell in row])
        for n, row in enumerate(csv.reader(io.StringIO(text)), start=1)
        if row and any(c.strip() for c in row) and not row[0].lstrip().startswith("#")
    ]
    if not rows:
        raise BufferTableError(
            f"{path}: no buffers (expected rows id,lower,upper,size[,alignment])"
        )
    columns, rows = _columns(path, rows)
    cols: dict[str, list[int]] = {k: [] for k in ("lower", "upper", "size", "alignment", "offset")}
    ids: list[str] = []
    memories: list[str] = []
    first_line: dict[str, int] = {}
    positional = columns == _POSITIONAL
    for line, cells in rows:
        if positional and len(cells) == 4:
            cells = [*cells, ""]  # alignment is optional per row
        if positional and len(cells) != 5:
            raise BufferTableError(
                f"{path}:{line}: expected 4 or 5 columns (id,lower,upper,size[,alignment]), "
                f"got {len(cells)}"
            )
        if len(cells) != len(columns):
            raise BufferTableError(
                f"{path}:{line}: expected {len(columns)} columns ({','.join(columns)}), "
                f"got {len(cells)}"
            )
        rec = dict(zip(columns, cells, strict=True))
        bid = rec["id"]
        if not bid:
            raise BufferTableError(f"{path}:{line}: empty buffer id")
        if bid in first_line:
            raise BufferTableError(
                f"{path}:{line}: buffer id {bid!r} already used on line {first_line[bid]}"
            )
        first_line[bid] = line
        lower = _int(path, line, rec, "lower")
        upper = _int(path, line, rec, "upper")
        size = _int(path, line, rec, "size")
        align = _int(path, line, rec, "alignment") if rec.get("alignment") else default_alignment
        offset = _int(path, line, rec, "offset") if rec.get("offset") else -1
        if lower >= upper:
            raise BufferTableError(
                f"{path}:{line}: buffer {bid!r} has empty lifetime [{lower}, {upper}); "
                "lifetimes are half-open, so upper must exceed lower"
            )
        if size < 0:
            raise BufferTableError(f"{path}:{line}: buffer {bid!r} has negative size {size}")
        if align < 1:
            raise BufferTableError(
                f"{path}:{line}: buffer {bid!r} has alignment {align}; need >= 1"
            )
        if offset < -1 or (offset >= 0 and offset % align):
            raise BufferTableError(
                f"{path}:{line}: buffer {bid!r} has fixed offset {offset}, which must be "
                f"non-negative and a multiple of its alignment {align}"
            )
        ids.append(bid)
        for key, val in zip(cols, (lower, upper, size, align, offset), strict=True):
            cols[key].append(val)
        memories.append(rec.get("memory") or DEFAULT_MEMORY)
    return MemoryProblem.from_arrays(
        ids=ids,
        lower=cols["lower"],
        upper=cols["upper"],
        size=cols["size"],
        alignment=cols["alignment"],
        fixed=cols["offset"],
        memory=memories,
    )


def _columns(
    path: Path, rows: list[tuple[int, list[str]]]
) -> tuple[tuple[str, ...], list[tuple[int, list[str]]]]:
    """Column names (from the header or by position) and the data rows."""
    line, first = rows[0]
    if len(first) > 1 and not _is_int(first[1]) and any(c.lower() in _KNOWN for c in first):
        names = tuple(c.lower() for c in first)
        unknown = [c for c in names if c not in _KNOWN]
        if unknown:
            raise BufferTableError(
                f"{path}:{line}: unknown column {unknown[0]!r}; known columns: "
                f"{', '.join(sorted(_KNOWN))}"
            )
        missing = [c for c in _REQUIRED if c not in names]
        if missing:
            raise BufferTableError(f"{path}:{line}: header lacks column {missing[0]!r}")
        if len(set(names)) != len(names):
            raise BufferTableError(f"{path}:{line}: header repeats a column")
        return names, rows[1:]
    return _POSITIONAL, rows


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _int(path: Path, line: int, rec: dict[str, str], key: str) -> int:
    text = rec[key]
    if len(text) > 24:  # never hand Python a 4,300-digit number
        raise UsageError(f"{path}:{line}: {key} {text[:24]!r}... is not a 64-bit integer")
    try:
        value = int(text)
    except ValueError:
        raise BufferTableError(f"{path}:{line}: {key} {text!r} is not an integer") from None
    if abs(value) >= 1 << 62:
        raise BufferTableError(f"{path}:{line}: {key} {value} is out of range (|value| < 2^62)")
    return value


def write_offsets_csv(
    problem: MemoryProblem, plan: ArenaPlan, path: str | os.PathLike[str]
) -> None:
    """Write ``id,lower,upper,size,alignment,offset[,memory]`` (the input plus offsets)."""
    multi = len(problem.memories) > 1
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["id", "lower", "upper", "size", "alignment", "offset"] + (["memory"] * multi))
    for i, bid in enumerate(problem.ids):
        row = [
            bid,
            int(problem.lower[i]),
            int(problem.upper[i]),
            int(problem.size[i]),
            int(problem.alignment[i]),
            plan.offsets[bid],
        ]
        if multi:
            row.append(problem.memories[int(problem.memory[i])])
        w.writerow(row)
    atomic_write_text(path, out.getvalue())


def write_plan_json(plan: ArenaPlan, path: str | os.PathLike[str]) -> None:
    """Write :meth:`ArenaPlan.to_json` (no timings, so the file is reproducible)."""
    atomic_write_text(path, plan.to_json())
