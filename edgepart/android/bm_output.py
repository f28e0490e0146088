"""Parsers for everything TFLite's ``benchmark_model`` prints or writes.

Three kinds of output are handled, in every variant users post publicly:

* the **run log** (:func:`parse_benchmark_output`): parameter echo, delegate messages, the two
  ``Running benchmark ...`` stat lines (with or without ``p5= median= p95=``, or the
  ``count=N curr=X(all same)`` and ``count=0`` forms), the summary line in its current wording
  (``Inference timings in us: Init: .., First inference: .., Warmup (avg): ..,
  Inference (avg): ..``)
  and its legacy wording (``Average inference timings in us: Warmup: .., Init: .., Inference: ..``,
  also ``no stats:``), the memory lines (``Memory footprint delta ...``, the TF 2.3 wording
  ``Peak memory footprint (MB): init= overall=``, ``Overall peak memory footprint ...``), the
  runtime's ``Replacing N out of M node(s) ...`` / legacy ``Replacing N node(s) ...`` lines,
  GPU's ``Following operations are not supported by GPU delegate:`` blocks, and failures;
* the **per-op tables** (:func:`parse_op_profile_text`): the stdout layout with and without the
  legacy ``[start]`` column, and the CSV layout;
* the **protobuf files** (:func:`parse_op_profile_proto`, :func:`parse_runtime_info`) written by
  ``--op_profiling_output_mode=proto`` and ``--export_model_runtime_info=true``, read with the
  classes that ship in ``ai-edge-litert``.

Lines may carry the tool's ``INFO: ``/``WARN: ``/``ERROR: `` prefixes, logcat prefixes
(``05-30 13:04:39.021 25935 25935 I tflite  : ``, ``I/tflite: ``, Android Studio's columns) or
none (builds before ~TF 2.8 printed bare lines); tabs may have become spaces in a copy.

**What ``:N`` means.** The profiler names a node ``[<output tensor names>]:<node_index>``, where
``node_index`` indexes the subgraph's node table (``Subgraph::nodes_and_registration``). For the
model's own operators that is the operator's position in the flatbuffer subgraph. A node created
by a delegate (``TfLiteXNNPackDelegate``, ``TfLiteGpuDelegateV2`` ...) is appended to the table,
so its index is at least the number of original operators and names no model op; which ops it
replaced is recorded only in the runtime-info proto (:func:`node_timings` joins the two). Rows
``Delegate/<op>:<k>`` come from delegate-internal profiling and ``k`` is the delegate's own
operator counter, not a TFLite node index. Builds before ~TF 2.4 printed no suffix at all.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from edgepart.errors import BenchmarkOutputError

__all__ = [
    "BenchmarkFailure",
    "BenchmarkRun",
    "DelegateApplication",
    "DelegateReplacement",
    "GpuSupportReport",
    "MemoryFootprint",
    "NodeTiming",
    "NodeTypeSummary",
    "OpProfile",
    "OpRow",
    "ProfileBlock",
    "RunStats",
    "RuntimeInfo",
    "RuntimeNode",
    "RuntimeSubgraph",
    "infer_node_indices",
    "node_timings",
    "parse_benchmark_output",
    "parse_op_profile_proto",
    "parse_op_profile_text",
    "parse_runtime_info",
    "proto_message_class",
]

_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|-?inf)"

# ---------------------------------------------------------------------------------------------
# Line cleaning
# ---------------------------------------------------------------------------------------------

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
class _Line:
    number: int  # 1-based line number in the source text
    severity: str | None
    text: str


def _clean(text: str) -> list[_Line]:
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
        lines.append(_Line(number, severity, line))
    return lines


def _float(token: str) -> float:
    return float(token)


# ---------------------------------------------------------------------------------------------
# Run log
# ---------------------------------------------------------------------------------------------


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
    rf"^count=(\d+)(?: first=({_NUM}) curr=({_NUM}) min=({_NUM}) max=({_NUM}) avg=({_NUM})"
    rf" std=({_NUM})| curr=({_NUM})(\(all same\))?)?"
    rf"(?: p5=({_NUM}) median=({_NUM}) p95=({_NUM}))?\s*$"
)


def _parse_stat(text: str) -> RunStats | None:
    m = _STAT.match(text.strip())
    if not m:
        return None
    g = m.groups()
    count = int(g[0])
    pct = [None if v is None else _float(v) for v in g[9:12]]
    if g[1] is not None:
        first, curr, lo, hi, avg, std = (_float(v) for v in g[1:7])
        return RunStats(count, first, curr, lo, hi, avg, std, *pct)
    if g[7] is not None:
        v = _float(g[7])
        return RunStats(count, v, v, v, v, v, 0.0, *pct)
    return RunStats(count, p5=pct[0], median=pct[1], p95=pct[2])


@dataclass(frozen=True)
class MemoryFootprint:
    """Memory lines in MB; each is ``None`` when the build did not print it."""

    init_delta_mb: float | None = None
    overall_delta_mb: float | None = None
    peak_mb: float | None = None
    vm_rss_mb: float | None = None


@dataclass(frozen=True)
class DelegateApplication:
    """The tool's verdict after applying one delegate: ``full``, ``partial`` or ``none``."""

    provider: str
    outcome: str
    kernels: int | None = None


@dataclass(frozen=True)
class DelegateReplacement:
    """A runtime ``Replacing ... node(s) with delegate (...) node, yielding K partitions`` line.

    ``total_nodes`` and ``subgraph`` are ``None`` for the legacy wording. ``partitions`` counts
    every node subset of the partitioning, CPU subsets included.
    """

    replaced: int
    total_nodes: int | None
    delegate: str
    partitions: int
    subgraph: int | None = None
    subgraph_name: str | None = None


@dataclass(frozen=True)
class GpuSupportReport:
    """A ``Following operations are not supported by GPU delegate:`` block."""

    reasons: tuple[tuple[str, str], ...]
    gpu_ops: int | None
    cpu_ops: int | None


@dataclass(frozen=True)
class BenchmarkFailure:
    """Why a run failed: ``kind`` is one of model_load, delegate_apply, cpu_fallback,
    allocate, invoke, usage, signature, unknown; ``detail`` holds related error lines."""

    kind: str
    message: str
    line: int
    detail: tuple[str, ...] = ()


@dataclass(frozen=True)
class BenchmarkRun:
    """Everything recognised in one ``benchmark_model`` run log (times in microseconds)."""

    source: str
    summary_format: str | None = None  # "current", "legacy" or None when no summary line
    init_us: float | None = None
    first_inference_us: float | None = None
    warmup_avg_us: float | None = None
    inference_avg_us: float | None = None
    warmup: RunStats | None = None
    inference: RunStats | None = None
    model_size_mb: float | None = None
    memory: MemoryFootprint | None = None
    delegates_created: tuple[str, ...] = ()
    applications: tuple[DelegateApplication, ...] = ()
    replacements: tuple[DelegateReplacement, ...] = ()
    xnnpack_created: bool = False
    gpu_support: tuple[GpuSupportReport, ...] = ()
    nnapi_accelerators: tuple[str, ...] = ()
    unconsumed_flags: tuple[str, ...] = ()
    unavailable: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    failure: BenchmarkFailure | None = None
    profile: OpProfile | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None and self.inference_avg_us is not None

    def raise_for_failure(self) -> None:
        """Raise :class:`BenchmarkOutputError` if the tool reported a failure."""
        if self.failure is None:
            return
        f = self.failure
        hint = _FAILURE_HINTS.get(f.kind, "see the tool's error lines")
        detail = f" ({'; '.join(f.detail)})" if f.detail else ""
        raise BenchmarkOutputError(
            f"{self.source}:{f.line}: benchmark_model failed ({f.kind}): {f.message}{detail}; "
            f"{hint}"
        )

    def delegate_outcome(self, provider: str) -> str:
        """``full``/``partial``/``none`` for ``provider`` (e.g. ``GPU``); ``absent`` if not applied.

        ``absent`` is what a run shows when the delegate could not even be created (a build
        without it, ``... acceleration is unsupported on this platform``, an external library
        that would not load): the tool then runs on CPU without saying so in the summary.
        """
        for app in self.applications:
            if app.provider.upper() == provider.upper():
                return app.outcome
        return "absent"


_FAILURE_HINTS = {
    "model_load": "check the --graph path on the device and that the file is a .tflite model",
    "delegate_apply": "the delegate rejected the model; try another delegate or "
    "cpu_fallback, and see the detail lines",
    "cpu_fallback": "the delegate did not take the whole graph; drop require_full_delegation",
    "allocate": "tensor allocation failed; check input shapes and free memory",
    "invoke": "an op failed at run time; see the detail lines",
    "usage": "fix the benchmark_model command line",
    "signature": "pass --signature_to_run_for with one of the model's signatures",
}

_RE = {
    "session": re.compile(rf"^Initialized session in ({_NUM}) ?ms\.?$"),
    "size": re.compile(rf"^The input model file size \(MB\): ({_NUM})$"),
    "running": re.compile(r"^Running benchmark for at least (\d+) iterations"),
    "current": re.compile(
        rf"Inference timings in us: Init: ({_NUM}), First inference: ({_NUM}), "
        rf"Warmup \(avg\): ({_NUM}), Inference \(avg\): ({_NUM})"
    ),
    "legacy": re.compile(
        rf"Average inference timings in us: Warmup: ({_NUM}), Init: ({_NUM}), "
        rf"(?:Inference|no stats): ({_NUM})"
    ),
    "mem_delta": re.compile(
        rf"(?:Memory footprint delta from the start of the tool|Peak memory footprint) "
        rf"\(MB\): init=({_NUM}) overall=({_NUM})"
    ),
    "mem_peak": re.compile(
        rf"Overall peak memory footprint \(MB\) via periodic monitoring: ({_NUM})"
    ),
    "vmrss": re.compile(r"^- VmRSS\s*: (\d+) MB"),
    "created": re.compile(r"^(\S+) delegate created\.$"),
    "applied": re.compile(
        r"^Explicitly applied (\S+) delegate, and the model graph will be "
        r"(completely|partially) executed by the delegate(?: w/ (\d+) delegate kernels)?\.?$"
    ),
    "not_applied": re.compile(
        r"^Though (\S+) delegate is explicitly applied, the model graph will not be executed"
    ),
    "replacing_new": re.compile(
        r"Replacing (\d+) out of (\d+) node\(s\) with delegate \(([^)]*)\) node, yielding "
        r"(\d+) partitions(?: for subgraph (\d+)(?: \((.*)\))?)?"
    ),
    "replacing_old": re.compile(
        r"Replacing (\d+) node\(s\) with delegate \(([^)]*)\) node, yielding (\d+) partitions"
    ),
    "gpu_start": re.compile(r"Following operations are not supported by GPU delegate:"),
    "gpu_end": re.compile(
        r"^(\d+) operations will run on the GPU, and the remaining (\d+) operations? will run "
        r"on the CPU"
    ),
    "gpu_none": re.compile(r"^No operations will run on the GPU, and all (\d+) operations? will"),
    "gpu_reason": re.compile(r"^([A-Z][A-Z0-9_]*(?: [A-Za-z0-9_]+)?):(?: (.*))?$"),
    "nnapi_acc": re.compile(r"^NNAPI accelerators available: \[(.*)\]"),
    "unconsumed": re.compile(r"^Unconsumed cmdline flags: (.*)$"),
}

_UNAVAILABLE = (
    re.compile(r"GPU acceleration is unsupported on this platform"),
    re.compile(r"NNAPI acceleration is unsupported on this platform"),
    re.compile(r"Could not create Hexagon delegate"),
    re.compile(r"Unable to load external delegate from"),
    re.compile(r"Couldn't load NNAPI support library"),
)

_FAILURES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "model_load",
        re.compile(
            r"^(Failed to load model \S.*|Failed to mmap model \S.*|"
            r"Failed to initialize model loader with path .*|"
            r"Could not open '.*'\.?)$"
        ),
    ),
    ("delegate_apply", re.compile(r"^Failed to apply (\S+) delegate\.?$")),
    ("cpu_fallback", re.compile(r"^Disallowed CPU fallback detected\.?$")),
    ("allocate", re.compile(r"^Failed to allocate tensors!?$")),
    ("invoke", re.compile(r"^Node number \d+ \(.*\) failed to invoke\.?$")),
    ("usage", re.compile(r"^Please specify the name of your TF Lite input file with --graph$")),
    ("signature", re.compile(r"^Signature not specified or incorrect\.")),
)
_DETAIL = re.compile(
    r"(failed to prepare|Restored original execution plan|TfLiteGpuDelegate (?:Init|Prepare)|"
    r"Can not open OpenCL|Falling back to OpenGL|OpenGL-based API|Attempting to use a delegate)"
)


def parse_benchmark_output(text: str, *, source: str = "<benchmark_model output>") -> BenchmarkRun:
    """Parse one run log (stdout and stderr together, or a logcat capture).

    A failed run is a result, not an exception: check :attr:`BenchmarkRun.failure` or call
    :meth:`BenchmarkRun.raise_for_failure`. If a per-op table is present it is parsed into
    :attr:`BenchmarkRun.profile`.

    Raises
    ------
    BenchmarkOutputError
        If nothing in ``text`` is recognisable as benchmark_model output (no summary, stat line,
        failure message or profile table).
    """
    lines = _clean(text)
    fields: dict[str, object] = {}
    stats: list[RunStats] = []
    pending_runs = 0
    created: list[str] = []
    applications: list[DelegateApplication] = []
    replacements: list[DelegateReplacement] = []
    gpu: list[GpuSupportReport] = []
    unconsumed: list[str] = []
    unavailable: list[str] = []
    errors: list[str] = []
    failure: BenchmarkFailure | None = None
    benchmarking_failed: _Line | None = None
    memory: dict[str, float] = {}
    nnapi: tuple[str, ...] = ()
    xnnpack = False
    i = 0
    while i < len(lines):
        ln = lines[i]
        t = ln.text.strip()
        i += 1
        if ln.severity in ("ERROR", "FATAL") and t:
            errors.append(t)
        if (m := _RE["session"].match(t)) is not None:
            fields.setdefault("init_us", _float(m.group(1)) * 1000.0)
        elif (m := _RE["size"].match(t)) is not None:
            fields["model_size_mb"] = _float(m.group(1))
        elif _RE["running"].match(t):
            pending_runs += 1
        elif t.startswith("count=") and (s := _parse_stat(t)) is not None and pending_runs:
            stats.append(s)
            pending_runs -= 1
        elif (m := _RE["current"].search(t)) is not None:
            init, first, warm, inf = (_float(v) for v in m.groups())
            fields.update(
                summary_format="current",
                init_us=init,
                first_inference_us=first,
                warmup_avg_us=warm,
                inference_avg_us=inf,
            )
        elif (m := _RE["legacy"].search(t)) is not None:
            warm, init, inf = (_float(v) for v in m.groups())
            fields.update(
                summary_format="legacy", init_us=init, warmup_avg_us=warm, inference_avg_us=inf
            )
        elif (m := _RE["mem_delta"].search(t)) is not None:
            memory["init_delta_mb"], memory["overall_delta_mb"] = map(_float, m.groups())
        elif (m := _RE["mem_peak"].search(t)) is not None:
            memory["peak_mb"] = _float(m.group(1))
        elif (m := _RE["vmrss"].match(t)) is not None:
            memory["vm_rss_mb"] = _float(m.group(1))
        elif (m := _RE["created"].match(t)) is not None:
            created.append(m.group(1))
        elif (m := _RE["applied"].match(t)) is not None:
            outcome = "full" if m.group(2) == "completely" else "partial"
            kernels = int(m.group(3)) if m.group(3) else None
            applications.append(DelegateApplication(m.group(1), outcome, kernels))
        elif (m := _RE["not_applied"].match(t)) is not None:
            applications.append(DelegateApplication(m.group(1), "none", 0))
        elif (m := _RE["replacing_new"].search(t)) is not None:
            a, b, name, k, sg, sg_name = m.groups()
            replacements.append(
                DelegateReplacement(
                    int(a), int(b), name, int(k), None if sg is None else int(sg), sg_name
                )
            )
        elif (m := _RE["replacing_old"].search(t)) is not None:
            replacements.append(
                DelegateReplacement(int(m.group(1)), None, m.group(2), int(m.group(3)))
            )
        elif "Created TensorFlow Lite XNNPACK delegate for CPU" in t:
            xnnpack = True
        elif _RE["gpu_start"].search(t):
            report, i = _gpu_block(lines, i)
            gpu.append(report)
        elif (m := _RE["nnapi_acc"].match(t)) is not None:
            nnapi = tuple(s.strip() for s in m.group(1).split(",") if s.strip())
        elif (m := _RE["unconsumed"].match(t)) is not None:
            unconsumed.extend(m.group(1).split())
        elif any(p.search(t) for p in _UNAVAILABLE):
            unavailable.append(t)
        elif t == "Benchmarking failed.":
            benchmarking_failed = ln
        else:
            for kind, pattern in _FAILURES:
                if failure is None and pattern.match(t):
                    detail = tuple(e for e in errors if _DETAIL.search(e))
                    failure = BenchmarkFailure(kind, t, ln.number, detail)
                    break
    if failure is None and benchmarking_failed is not None:
        last = errors[-2] if len(errors) >= 2 else "no reason printed"
        failure = BenchmarkFailure("unknown", last, benchmarking_failed.number)

    profile: OpProfile | None = None
    if any(_SECTION.match(ln.text.strip()) for ln in lines):
        profile = _parse_profile_lines(lines, source)
    if not (
        fields
        or stats
        or failure
        or profile
        or replacements
        or applications
        or gpu
        or created
        or xnnpack
        or unavailable
        or unconsumed
    ):
        raise BenchmarkOutputError(
            f"{source}: no benchmark_model output recognised (no 'Inference timings in us' "
            "summary, stat line, failure message or per-op table); pass the tool's complete "
            "stdout and stderr"
        )
    warmup = stats[0] if stats else None
    inference = stats[1] if len(stats) > 1 else None
    if "first_inference_us" not in fields and warmup is not None and warmup.first is not None:
        fields["first_inference_us"] = warmup.first
    return BenchmarkRun(
        source=source,
        warmup=warmup,
        inference=inference,
        memory=MemoryFootprint(**memory) if memory else None,
        delegates_created=tuple(created),
        applications=tuple(applications),
        replacements=tuple(replacements),
        xnnpack_created=xnnpack,
        gpu_support=tuple(gpu),
        nnapi_accelerators=nnapi,
        unconsumed_flags=tuple(unconsumed),
        unavailable=tuple(unavailable),
        errors=tuple(errors),
        failure=failure,
        profile=profile,
        **fields,  # type: ignore[arg-type]
    )


def _gpu_block(lines: Sequence[_Line], i: int) -> tuple[GpuSupportReport, int]:
    """Read reason lines after the GPU header until the ops-count line (or a non-reason line)."""
    reasons: list[tuple[str, str]] = []
    while i < len(lines):
        t = lines[i].text.strip()
        if (m := _RE["gpu_end"].match(t)) is not None:
            return GpuSupportReport(tuple(reasons), int(m.group(1)), int(m.group(2))), i + 1
        if (m := _RE["gpu_none"].match(t)) is not None:
            return GpuSupportReport(tuple(reasons), 0, int(m.group(1))), i + 1
        if (m := _RE["gpu_reason"].match(t)) is None:
            break
        reasons.append((m.group(1), (m.group(2) or "").strip()))
        i += 1
    return GpuSupportReport(tuple(reasons), None, None), i


# ---------------------------------------------------------------------------------------------
# Per-op tables
# ---------------------------------------------------------------------------------------------

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


_SECTION = re.compile(
    r"^=+ (Run Order|Top by Computation Time|Top by Memory Use|Summary by node type) =+$"
)
_ROW_CURRENT = re.compile(
    rf"^(?P<type>\S(?:.*?\S)?)\s+(?P<first>{_NUM})\s+(?P<avg>{_NUM})\s+(?P<pct>{_NUM})%\s+"
    rf"(?P<cdf>{_NUM})%\s+(?P<mem>{_NUM})\s+(?P<times>\d+)\s+(?P<name>\S.*?)\s*$"
)
_ROW_START = re.compile(
    rf"^(?P<type>\S(?:.*?\S)?)\s+(?P<start>{_NUM})\s+(?P<first>{_NUM})\s+(?P<avg>{_NUM})\s+"
    rf"(?P<pct>{_NUM})%\s+(?P<cdf>{_NUM})%\s+(?P<mem>{_NUM})\s+(?P<times>\d+)\s+(?P<name>\S.*?)\s*$"
)
_TYPE_ROW = re.compile(
    rf"^(?P<type>\S(?:.*?\S)?)\s+(?P<count>\d+)\s+(?P<avg>{_NUM})\s+(?P<pct>{_NUM})%\s+"
    rf"(?P<cdf>{_NUM})%\s+(?P<mem>{_NUM})\s+(?P<times>\d+)\s*$"
)
_OP_NAME = re.compile(r"^\[.*\]:(\d+)$")
_DELEGATE_OP_NAME = re.compile(r"^Delegate/.*:(\d+)$")
_EVENT_NAME = re.compile(r"^[A-Za-z]\w*/\d+$")
_SUBGRAPH_HEADER = re.compile(
    r"^(?:Primary graph \(name: (.*)\)|Subgraph \(index: (\d+), "
    r"name: (.*?)\)) profile:$"
)


def _classify(node_type: str, name: str) -> tuple[str, int | None, int | None]:
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
    kind, index, dindex = _classify(node_type, name)
    first, avg, pct, cdf, mem = (_float(v.rstrip("%")) for v in nums)
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
        None if start is None else _float(start),
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
            _float(parts[2]),
            _float(parts[3].rstrip("%")),
            _float(parts[4].rstrip("%")),
            _float(parts[5]),
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
    return _parse_profile_lines(_clean(text), source)


def _parse_profile_lines(lines: Sequence[_Line], source: str) -> OpProfile:
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
        if (m := _SECTION.match(t)) is not None:
            section = m.group(1)
            # A block starts at its Run Order table (or at any table the block already has).
            if cur is None or section == "Run Order" or section in rows:
                start_block()
            rows.setdefault(section, [])
            continue
        if "Timings (microseconds): " in t and cur is not None:
            cur["timings"] = _parse_stat(t.split("Timings (microseconds): ", 1)[1])
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
                    _float(m["avg"]),
                    _float(m["pct"]),
                    _float(m["cdf"]),
                    _float(m["mem"]),
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


# ---------------------------------------------------------------------------------------------
# Protobuf outputs
# ---------------------------------------------------------------------------------------------


_PROTO_MODULES = {
    "profiling_info_pb2": (
        "BenchmarkProfilingData",
        "ModelProfilingData",
        "SubGraphProfilingData",
        "DelegateProfilingData",
        "OpProfilingStat",
        "OpProfileData",
    ),
    "model_runtime_info_pb2": (
        "ModelRuntimeDetails",
        "RuntimeSubgraph",
        "Node",
        "DelegateNodeDetails",
        "Edge",
    ),
}


def proto_message_class(name: str) -> Any:
    """The generated class of message ``tflite.profiling.<name>`` (e.g. ``ModelRuntimeDetails``).

    The descriptors are the ones ai-edge-litert ships (``ai_edge_litert/*_pb2.py``), loaded into
    a private descriptor pool. Importing those modules directly would register
    ``tflite.profiling.*`` in protobuf's default pool, where TensorFlow registers the same names
    from its own copies: whichever is imported second then fails with "duplicate symbol". A
    private pool keeps both importable in one process.

    Raises
    ------
    BenchmarkOutputError
        If ``name`` is not one of those messages or ai-edge-litert's descriptors are missing.
    """
    if not any(name in names for names in _PROTO_MODULES.values()):
        raise BenchmarkOutputError(
            f"unknown benchmark proto message {name!r}; known: "
            + ", ".join(n for names in _PROTO_MODULES.values() for n in names)
        )
    from google.protobuf import message_factory  # type: ignore[import-untyped, unused-ignore]

    return message_factory.GetMessageClass(
        _private_pool().FindMessageTypeByName(f"tflite.profiling.{name}")
    )


@functools.lru_cache(maxsize=1)
def _private_pool() -> Any:
    """A descriptor pool holding ai-edge-litert's two profiling protos (read, not imported)."""
    import ast
    import importlib.util

    from google.protobuf import descriptor_pool  # type: ignore[import-untyped, unused-ignore]

    pool = descriptor_pool.DescriptorPool()
    for module in _PROTO_MODULES:  # profiling_info first: model_runtime_info depends on it
        spec = importlib.util.find_spec(f"ai_edge_litert.{module}")
        serialized = None
        if spec is not None and spec.origin is not None:
            with open(spec.origin, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "attr", "") == "AddSerializedFile"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, bytes)
                ):
                    serialized = node.args[0].value
        if serialized is None:
            raise BenchmarkOutputError(
                f"ai_edge_litert.{module} (the benchmark proto descriptors) was not found; "
                "install ai-edge-litert >= 2.0"
            )
        pool.AddSerializedFile(serialized)
    return pool


def _proto_rows(per_op_profiles: Iterable[Any]) -> tuple[OpRow, ...]:
    """``OpProfileData`` messages to rows in run order, with the table's % and cdf%."""
    ops = sorted(per_op_profiles, key=lambda p: p.run_order)
    total = sum(p.inference_microseconds.sum for p in ops)
    rows, cdf = [], 0.0
    for p in ops:
        st = p.inference_microseconds
        pct = st.sum * 100.0 / total if total else math.nan
        cdf += pct
        kind, index, dindex = _classify(p.node_type, p.name)
        rows.append(
            OpRow(
                p.node_type,
                st.first / 1000.0,
                st.avg / 1000.0,
                pct,
                cdf,
                float(p.mem_kb.last),
                int(p.times_called),
                p.name,
                kind,
                index,
                dindex,
                min_us=float(st.min),
                max_us=float(st.max),
                std_us=float(st.stddev),
                count=int(st.count),
            )
        )
    return tuple(rows)


def parse_op_profile_proto(data: bytes, *, source: str = "<op profile proto>") -> OpProfile:
    """Parse a ``BenchmarkProfilingData`` file (``--op_profiling_output_mode=proto``).

    Percentages are recomputed from the per-op sums (the proto does not store them); they equal
    the stdout table's because the tool's run total is the sum of the same events.

    Raises
    ------
    BenchmarkOutputError
        If the bytes are not such a proto or hold no per-op data.
    """
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped, unused-ignore]

    msg = proto_message_class("BenchmarkProfilingData")()
    try:
        msg.ParseFromString(bytes(data))
    except DecodeError as exc:
        raise BenchmarkOutputError(
            f"{source}: not a BenchmarkProfilingData proto ({exc}); pass the file written by "
            "--op_profiling_output_mode=proto --op_profiling_output_file=..."
        ) from None
    blocks = []
    for phase, prof in (("init", msg.init_profile), ("run", msg.runtime_profile)):
        for sg in prof.subgraph_profiles:
            blocks.append(
                ProfileBlock(
                    phase,
                    sg.subgraph_index,
                    sg.subgraph_name or None,
                    run_order=_proto_rows(sg.per_op_profiles),
                )
            )
        for dp in prof.delegate_profiles:
            blocks.append(
                ProfileBlock(
                    phase,
                    0,
                    dp.delegate_name or None,
                    delegate_internal=True,
                    run_order=_proto_rows(dp.per_op_profiles),
                )
            )
    if not any(b.run_order for b in blocks):
        raise BenchmarkOutputError(
            f"{source}: the proto holds no per-op profiles ({len(data)} bytes); was op "
            "profiling enabled (--enable_op_profiling=true)?"
        )
    return OpProfile(source, "proto", tuple(blocks))


@dataclass(frozen=True)
class RuntimeNode:
    """One node of a ``ModelRuntimeDetails`` subgraph.

    ``name`` is the builtin op name (e.g. ``CONV_2D``) or the custom/delegate kernel name;
    ``delegated_to`` is the node that replaced this one; ``replaced`` lists the nodes a delegate
    node took (``delegate`` is then its name).
    """

    id: int
    name: str
    type: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    delegated_to: int | None = None
    delegate: str | None = None
    replaced: tuple[int, ...] = ()


@dataclass(frozen=True)
class RuntimeSubgraph:
    """Nodes, execution plan and tensor count of one runtime subgraph."""

    index: int
    name: str
    nodes: tuple[RuntimeNode, ...]
    execution_plan: tuple[int, ...]
    num_tensors: int

    def placement(self) -> dict[int, str]:
        """Map each original node to ``cpu`` or the name of the delegate that took it."""
        out: dict[int, str] = {}
        by_id = {n.id: n for n in self.nodes}
        for n in self.nodes:
            if n.delegate is not None:
                continue
            if n.delegated_to is not None:
                out[n.id] = by_id[n.delegated_to].delegate or by_id[n.delegated_to].name
            else:
                out[n.id] = "cpu"
        return out


@dataclass(frozen=True)
class RuntimeInfo:
    """A parsed ``--model_runtime_info_output_file``."""

    source: str
    model_name: str
    subgraphs: tuple[RuntimeSubgraph, ...]


def parse_runtime_info(data: bytes, *, source: str = "<runtime info>") -> RuntimeInfo:
    """Parse a ``ModelRuntimeDetails`` proto (``--export_model_runtime_info=true``).

    Raises
    ------
    BenchmarkOutputError
        If the bytes are not such a proto, hold no subgraph, or a node points at a missing node.
    """
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped, unused-ignore]

    msg = proto_message_class("ModelRuntimeDetails")()
    try:
        msg.ParseFromString(bytes(data))
    except DecodeError as exc:
        raise BenchmarkOutputError(
            f"{source}: not a ModelRuntimeDetails proto ({exc}); pass the file written by "
            "--model_runtime_info_output_file"
        ) from None
    subgraphs = []
    for sg in msg.subgraphs:
        nodes = []
        for n in sg.nodes:
            which = n.WhichOneof("node_info")
            nodes.append(
                RuntimeNode(
                    n.id,
                    n.name,
                    n.type,
                    tuple(n.inputs),
                    tuple(n.outputs),
                    delegated_to=n.delegated_to_node_id
                    if which == "delegated_to_node_id"
                    else None,
                    delegate=n.delegate_node_details.delegate_name
                    if which == "delegate_node_details"
                    else None,
                    replaced=tuple(n.delegate_node_details.tflite_node_ids_replaced)
                    if which == "delegate_node_details"
                    else (),
                )
            )
        ids = {n.id for n in nodes}
        for n in nodes:
            missing = [x for x in (n.delegated_to, *n.replaced) if x is not None and x not in ids]
            if missing:
                raise BenchmarkOutputError(
                    f"{source}: subgraph {sg.subgraph_id} node {n.id} refers to missing node(s) "
                    f"{missing}; the file is truncated or corrupted"
                )
        subgraphs.append(
            RuntimeSubgraph(
                sg.subgraph_id, sg.name, tuple(nodes), tuple(sg.execution_plan), len(sg.edges)
            )
        )
    if not subgraphs:
        raise BenchmarkOutputError(
            f"{source}: the runtime-info proto has no subgraphs ({len(data)} bytes)"
        )
    return RuntimeInfo(source, msg.model_name, tuple(subgraphs))


@dataclass(frozen=True)
class NodeTiming:
    """A regular-run timing joined to model ops.

    ``ops`` are the model op indices the time covers: the op itself for ``op`` rows, the ops a
    delegate replaced for ``delegate_kernel`` rows (empty without runtime info).
    """

    node_index: int
    node_type: str
    avg_ms: float
    first_ms: float
    executed_by: str
    ops: tuple[int, ...] = field(default_factory=tuple)


def node_timings(
    profile: OpProfile, runtime: RuntimeInfo | None = None, subgraph_index: int = 0
) -> tuple[NodeTiming, ...]:
    """Join the Run Order rows of one subgraph to op indices (and delegates, with ``runtime``).

    Raises
    ------
    BenchmarkOutputError
        If a row has no node index (legacy build; see :func:`infer_node_indices`) or names a
        node the runtime info does not have.
    """
    rows = [r for r in profile.run_rows(subgraph_index) if r.kind in ("op", "delegate_kernel")]
    sg = None
    if runtime is not None:
        matches = [s for s in runtime.subgraphs if s.index == subgraph_index]
        if not matches:
            raise BenchmarkOutputError(f"{runtime.source}: no subgraph {subgraph_index}")
        sg = {n.id: n for n in matches[0].nodes}
    out = []
    for r in rows:
        if r.node_index is None:
            raise BenchmarkOutputError(
                f"{profile.source}: row {r.name!r} has no ':N' node index (pre-TF 2.4 output); "
                "use infer_node_indices() for an undelegated run"
            )
        ops: tuple[int, ...] = (r.node_index,) if r.kind == "op" else ()
        by = "cpu" if r.kind == "op" else r.node_type
        if sg is not None:
            node = sg.get(r.node_index)
            if node is None:
                raise BenchmarkOutputError(
                    f"{profile.source}: row {r.name!r} names node {r.node_index}, which "
                    f"{runtime.source if runtime else ''} does not list"
                )
            if node.delegate is not None:
                ops, by = node.replaced, node.delegate
        out.append(NodeTiming(r.node_index, r.node_type, r.avg_ms, r.first_ms, by, ops))
    return tuple(out)
