"""The per-op tables of TFLite's ``benchmark_model`` (``--enable_op_profiling=true``).

:func:`parse_op_profile_text` reads the stdout layout with and without the legacy ``[start]``
column, and the CSV layout; the proto layout is read by :mod:`edgepart.android.bm_proto`, into
the same :class:`OpProfile`.

**What ``:N`` means.** The profiler names a node ``[<output tensor names>]:<node_index>``, where
``node_index`` indexes the subgraph's node table (``Subgraph::nodes_and_registration``). For the
model's own operators that is the operator's position in the flatbuffer subgraph. A node created
by a delegate (``TfLiteXNNPackDelegate``, ``TfLiteGpuDelegateV2`` ...) is appended to the table,
so its index is at least the number of original operators and names no model op; which ops it
replaced is recorded only in the runtime-info proto (:func:`edgepart.android.bm_proto.node_timings`
joins the two). Rows ``Delegate/<op>:<k>`` come from delegate-internal profiling and ``k`` is the
delegate's own operator counter, not a TFLite node index. Builds before ~TF 2.4 printed no suffix
at all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from edgepart.android.bm_lines import NUM, LogLine, RunStats, clean_lines, parse_stat
from edgepart.errors import BenchmarkOutputError

__all__ = [
    "DELEGATE_KERNELS",
    "PROFILE_SECTION",
    "NodeTypeSummary",
    "OpProfile",
    "OpRow",
    "ProfileBlock",
    "classify_node",
    "infer_node_indices",
    "parse_op_profile_text",
    "parse_profile_lines",
]


DELEGATE_KERNELS = frozenset(
    {
        "TfLiteXNNPackDelegate",
        "TfLiteGpuDelegateV2",
        "TfLiteGpuDelegate",
        "TfLiteNnapiDelegate",
        "TfLiteHexagonDelegate",
        "TfLiteCoreMlDelegate",
        "DELEGATE",
    }
)


@dataclass(frozen=True)
class OpRow:
    """One row of a per-op table (times in ms, as printed).

    ``kind`` is ``op`` (a model operator, ``node_index`` = its op index), ``delegate_kernel`` (a
    node a delegate created; ``node_index`` is its node-table index), ``delegate_op`` (a
    ``Delegate/<op>:<k>`` row; ``delegate_op_index`` = ``k``) or ``event`` (an init-time event
    such as ``AllocateTensors/0``). ``node_index`` is ``None`` when the build printed no suffix.
    """

    node_type: str
    first_ms: float
    avg_ms: float
    percent: float
    cdf_percent: float
    mem_kb: float
    times_called: int
    name: str
    kind: str
    node_index: int | None = None
    delegate_op_index: int | None = None
    start_ms: float | None = None
    min_us: float | None = None
    max_us: float | None = None
    std_us: float | None = None
    count: int | None = None

    @property
    def op_index(self) -> int | None:
        """The model op index for ``op`` rows; ``None`` for every other kind."""
        return self.node_index if self.kind == "op" else None


@dataclass(frozen=True)
class NodeTypeSummary:
    """One ``Summary by node type`` row."""

    node_type: str
    count: int
    avg_ms: float
    avg_percent: float
    cdf_percent: float
    mem_kb: float
    times_called: int


@dataclass(frozen=True)
class ProfileBlock:
    """The tables of one phase (``init`` or ``run``) for one subgraph, or delegate internals."""

    phase: str
    subgraph_index: int = 0
    subgraph_name: str | None = None
    delegate_internal: bool = False
    run_order: tuple[OpRow, ...] = ()
    top_by_time: tuple[OpRow, ...] = ()
    by_node_type: tuple[NodeTypeSummary, ...] = ()
    nodes_executed: int | None = None
    timings: RunStats | None = None
    nodes_observed: int | None = None


@dataclass(frozen=True)
class OpProfile:
    """All profile blocks of one output; ``layout``: ``current``, ``start``, ``csv``, ``proto``."""

    source: str
    layout: str
    blocks: tuple[ProfileBlock, ...]
    skipped_lines: tuple[tuple[int, str], ...] = ()

    def run_rows(self, subgraph_index: int = 0) -> tuple[OpRow, ...]:
        """The ``Run Order`` rows of the regular-run profile of one subgraph."""
        for block in self.blocks:
            if (
                block.phase == "run"
                and not block.delegate_internal
                and block.subgraph_index == subgraph_index
            ):
                return block.run_order
        raise BenchmarkOutputError(
            f"{self.source}: no regular-run profile for subgraph {subgraph_index}; the output "
            "has " + ", ".join(sorted({f"{b.phase}/{b.subgraph_index}" for b in self.blocks}))
        )


# the header of a per-op table section (the run log looks for it: a log may embed a table)
PROFILE_SECTION = re.compile(
    r"^=+ (Run Order|Top by Computation Time|Top by Memory Use|Summary by node type) =+$"
)
_ROW_CURRENT = re.compile(
    rf"^(?P<type>\S(?:.*?\S)?)\s+(?P<first>{NUM})\s+(?P<avg>{NUM})\s+(?P<pct>{NUM})%\s+"
    rf"(?P<cdf>{NUM})%\s+(?P<mem>{NUM})\s+(?P<times>\d+)\s+(?P<name>\S.*?)\s*$"
)
_ROW_START = re.compile(
    rf"^(?P<type>\S(?:.*?\S)?)\s+(?P<start>{NUM})\s+(?P<first>{NUM})\s+(?P<avg>{NUM})\s+"
    rf"(?P<pct>{NUM})%\s+(?P<cdf>{NUM})%\s+(?P<mem>{NUM})\s+(?P<times>\d+)\s+(?P<name>\S.*?)\s*$"
)
_TYPE_ROW = re.compile(
    rf"^(?P<type>\S(?:.*?\S)?)\s+(?P<count>\d+)\s+(?P<avg>{NUM})\s+(?P<pct>{NUM})%\s+"
    rf"(?P<cdf>{NUM})%\s+(?P<mem>{NUM})\s+(?P<times>\d+)\s*$"
)
_OP_NAME = re.compile(r"^\[.*\]:(\d+)$")
_DELEGATE_OP_NAME = re.compile(r"^Delegate/.*:(\d+)$")
_EVENT_NAME = re.compile(r"^[A-Za-z]\w*/\d+$")
_SUBGRAPH_HEADER = re.compile(
    r"^(?:Primary graph \(name: (.*)\)|Subgraph \(index: (\d+), "
    r"name: (.*?)\)) profile:$"
)


def classify_node(node_type: str, name: str) -> tuple[str, int | None, int | None]:
    if (m := _DELEGATE_OP_NAME.match(name)) is not None:
        return "delegate_op", None, int(m.group(1))
    index = int(m.group(1)) if (m := _OP_NAME.match(name)) is not None else None
    delegate_like = node_type.startswith("TfLite") and "Delegate" in node_type
    if node_type in DELEGATE_KERNELS or delegate_like:
        return "delegate_kernel", index, None
    if index is None and _EVENT_NAME.match(name) and not name.startswith("["):
        return "event", None, None
    return "op", index, None


def _row(
    node_type: str, name: str, nums: Sequence[str], times: str, start: str | None = None
) -> OpRow:
    kind, index, dindex = classify_node(node_type, name)
    first, avg, pct, cdf, mem = (float(v.rstrip("%")) for v in nums)
    return OpRow(
        node_type,
        first,
        avg,
        pct,
        cdf,
        mem,
        int(times),
        name,
        kind,
        index,
        dindex,
        None if start is None else float(start),
    )


def _csv_row(text: str, legacy: bool) -> OpRow | None:
    parts = text.rsplit(", ", 8 if legacy else 7)
    if len(parts) != (9 if legacy else 8):
        return None
    try:
        if legacy:
            return _row(parts[0], parts[8], parts[2:7], parts[7], start=parts[1])
        return _row(parts[0], parts[7], parts[1:6], parts[6])
    except ValueError:
        return None


def _csv_type_row(text: str) -> NodeTypeSummary | None:
    parts = text.rsplit(", ", 6)
    if len(parts) != 7:
        return None
    try:
        return NodeTypeSummary(
            parts[0],
            int(parts[1]),
            float(parts[2]),
            float(parts[3].rstrip("%")),
            float(parts[4].rstrip("%")),
            float(parts[5]),
            int(parts[6]),
        )
    except ValueError:
        return None


def parse_op_profile_text(text: str, *, source: str = "<op profile>") -> OpProfile:
    """Parse the per-op tables printed to stdout or written in CSV mode (both layouts).

    Raises
    ------
    BenchmarkOutputError
        If there is no ``Run Order`` / ``Summary by node type`` section, or a section whose rows
        all fail to parse.
    """
    return parse_profile_lines(clean_lines(text), source)


def parse_profile_lines(lines: Sequence[LogLine], source: str) -> OpProfile:
    blocks: list[ProfileBlock] = []
    skipped: list[tuple[int, str]] = []
    layout: str | None = None
    cur: dict[str, object] | None = None
    phase = "run"
    sub_index, sub_name, internal = 0, None, False
    section: str | None = None
    rows: dict[str, list[object]] = {}
    csv = legacy = False

    def flush() -> None:
        nonlocal cur
        if cur is not None and (
            rows.get("Run Order")
            or rows.get("Summary by node type")
            or cur.get("timings") is not None
        ):
            blocks.append(
                ProfileBlock(
                    phase=str(cur["phase"]),
                    subgraph_index=int(cur["sub"]),  # type: ignore[call-overload]
                    subgraph_name=cur["name"],  # type: ignore[arg-type]
                    delegate_internal=bool(cur["internal"]),
                    run_order=tuple(rows.get("Run Order", ())),  # type: ignore[arg-type]
                    top_by_time=tuple(rows.get("Top by Computation Time", ())),  # type: ignore[arg-type]
                    by_node_type=tuple(rows.get("Summary by node type", ())),  # type: ignore[arg-type]
                    nodes_executed=cur.get("executed"),  # type: ignore[arg-type]
                    timings=cur.get("timings"),  # type: ignore[arg-type]
                    nodes_observed=cur.get("observed"),  # type: ignore[arg-type]
                )
            )
        cur = None
        rows.clear()

    def start_block() -> None:
        nonlocal cur
        flush()
        cur = {"phase": phase, "sub": sub_index, "name": sub_name, "internal": internal}

    for ln in lines:
        t = ln.text.strip()
        if not t:
            section = None
            continue
        if t.startswith("Profiling Info for Benchmark Initialization"):
            flush()
            phase, sub_index, sub_name, internal, section = "init", 0, None, False, None
            continue
        if t.startswith("Operator-wise Profiling Info for Regular Benchmark Runs"):
            flush()
            phase, sub_index, sub_name, internal, section = "run", 0, None, False, None
            continue
        if (m := _SUBGRAPH_HEADER.match(t)) is not None:
            flush()
            sub_index = 0 if m.group(2) is None else int(m.group(2))
            sub_name = m.group(1) if m.group(2) is None else m.group(3)
            internal, section = False, None
            continue
        if t == "Delegate internal:":
            flush()
            internal, section = True, None
            continue
        if (m := PROFILE_SECTION.match(t)) is not None:
            section = m.group(1)
            # A block starts at its Run Order table (or at any table the block already has).
            if cur is None or section == "Run Order" or section in rows:
                start_block()
            rows.setdefault(section, [])
            continue
        if "Timings (microseconds): " in t and cur is not None:
            cur["timings"] = parse_stat(t.split("Timings (microseconds): ", 1)[1])
            section = None
            continue
        if (m := re.match(r"^(\d+) nodes observed$", t)) and cur is not None:
            cur["observed"] = int(m.group(1))
            continue
        if (m := re.match(r"^Number of nodes executed: (\d+)$", t)) is not None:
            # Printed just before "Summary by node type"; a fragment may start right here.
            if cur is None:
                start_block()
            assert cur is not None
            cur["executed"] = int(m.group(1))
            continue
        if t.startswith("Memory (bytes):") or section is None:
            continue
        if t.startswith("[node type]") or t.startswith("node type, "):
            csv = t.startswith("node type, ")
            legacy = "[start]" in t or t.startswith("node type, start,")
            this = "csv" if csv else ("start" if legacy else "current")
            layout = layout or this
            continue
        if t.startswith("[Node type]"):
            continue
        if section == "Summary by node type":
            summary = _csv_type_row(t) if csv else None
            if summary is None and (m := _TYPE_ROW.match(t)) is not None:
                summary = NodeTypeSummary(
                    m["type"],
                    int(m["count"]),
                    float(m["avg"]),
                    float(m["pct"]),
                    float(m["cdf"]),
                    float(m["mem"]),
                    int(m["times"]),
                )
            if summary is None:
                skipped.append((ln.number, t))
            else:
                rows[section].append(summary)
            continue
        row: OpRow | None = None
        if csv:
            row = _csv_row(t, legacy)
        elif (m := (_ROW_START if legacy else _ROW_CURRENT).match(t)) is not None:
            row = _row(
                m["type"],
                m["name"],
                [m["first"], m["avg"], m["pct"], m["cdf"], m["mem"]],
                m["times"],
                m.groupdict().get("start"),
            )
        if row is None:
            skipped.append((ln.number, t))
        else:
            rows[section].append(row)
    flush()
    if not blocks:
        raise BenchmarkOutputError(
            f"{source}: no per-op profile table found (expected a '==== Run Order ====' "
            "section); run benchmark_model with --enable_op_profiling=true"
        )
    for block in blocks:
        if block.run_order == () and block.by_node_type == () and block.timings is None:
            raise BenchmarkOutputError(f"{source}: a profile section has no parsable rows")
    return OpProfile(source, layout or "current", tuple(blocks), tuple(skipped))


def infer_node_indices(profile: OpProfile) -> OpProfile:
    """Fill missing node indices from the Run Order position (pre-~TF 2.4 builds print none).

    Only valid when the run was not delegated (then the execution plan is the op order), so it
    refuses tables containing delegate rows.

    Raises
    ------
    BenchmarkOutputError
        If any run-phase row is a delegate row or already carries an index.
    """
    blocks = []
    for block in profile.blocks:
        if block.phase != "run" or block.delegate_internal:
            blocks.append(block)
            continue
        for row in block.run_order:
            if row.kind != "op" or row.node_index is not None:
                raise BenchmarkOutputError(
                    f"{profile.source}: cannot infer op indices from run order: row "
                    f"{row.name!r} is a {row.kind} row"
                    + (" with an explicit index" if row.node_index is not None else "")
                )
        order = {row.name: i for i, row in enumerate(block.run_order)}
        blocks.append(
            replace(
                block,
                run_order=tuple(replace(r, node_index=order[r.name]) for r in block.run_order),
                top_by_time=tuple(
                    replace(r, node_index=order.get(r.name)) for r in block.top_by_time
                ),
            )
        )
    return replace(profile, blocks=tuple(blocks))
