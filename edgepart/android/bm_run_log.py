"""The run log of TFLite's ``benchmark_model``: timings, memory, delegate messages, failures.

:func:`parse_benchmark_output` reads it in every variant users post publicly: the parameter
echo, delegate messages, the two ``Running benchmark ...`` stat lines (with or without ``p5=
median= p95=``, or the ``count=N curr=X(all same)`` and ``count=0`` forms), the summary line in
its current wording (``Inference timings in us: Init: .., First inference: .., Warmup (avg): ..,
Inference (avg): ..``) and its legacy wording (``Average inference timings in us: Warmup: ..,
Init: .., Inference: ..``, also ``no stats:``), the memory lines (``Memory footprint delta ...``,
the TF 2.3 wording ``Peak memory footprint (MB): init= overall=``, ``Overall peak memory
footprint ...``), the runtime's ``Replacing N out of M node(s) ...`` / legacy ``Replacing N
node(s) ...`` lines, GPU's ``Following operations are not supported by GPU delegate:`` blocks,
and failures. A per-op table printed in the same log is parsed by
:mod:`edgepart.android.bm_op_profile`; line prefixes are removed by
:mod:`edgepart.android.bm_lines`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from edgepart.android.bm_lines import NUM, LogLine, RunStats, clean_lines, parse_stat
from edgepart.android.bm_op_profile import PROFILE_SECTION, OpProfile, parse_profile_lines
from edgepart.errors import BenchmarkOutputError

__all__ = [
    "BenchmarkFailure",
    "BenchmarkRun",
    "DelegateApplication",
    "DelegateReplacement",
    "GpuSupportReport",
    "MemoryFootprint",
    "parse_benchmark_output",
]


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
    "session": re.compile(rf"^Initialized session in ({NUM}) ?ms\.?$"),
    "size": re.compile(rf"^The input model file size \(MB\): ({NUM})$"),
    "running": re.compile(r"^Running benchmark for at least (\d+) iterations"),
    "current": re.compile(
        rf"Inference timings in us: Init: ({NUM}), First inference: ({NUM}), "
        rf"Warmup \(avg\): ({NUM}), Inference \(avg\): ({NUM})"
    ),
    "legacy": re.compile(
        rf"Average inference timings in us: Warmup: ({NUM}), Init: ({NUM}), "
        rf"(?:Inference|no stats): ({NUM})"
    ),
    "mem_delta": re.compile(
        rf"(?:Memory footprint delta from the start of the tool|Peak memory footprint) "
        rf"\(MB\): init=({NUM}) overall=({NUM})"
    ),
    "mem_peak": re.compile(
        rf"Overall peak memory footprint \(MB\) via periodic monitoring: ({NUM})"
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
    lines = clean_lines(text)
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
    benchmarking_failed: LogLine | None = None
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
            fields.setdefault("init_us", float(m.group(1)) * 1000.0)
        elif (m := _RE["size"].match(t)) is not None:
            fields["model_size_mb"] = float(m.group(1))
        elif _RE["running"].match(t):
            pending_runs += 1
        elif t.startswith("count=") and (s := parse_stat(t)) is not None and pending_runs:
            stats.append(s)
            pending_runs -= 1
        elif (m := _RE["current"].search(t)) is not None:
            init, first, warm, inf = (float(v) for v in m.groups())
            fields.update(
                summary_format="current",
                init_us=init,
                first_inference_us=first,
                warmup_avg_us=warm,
                inference_avg_us=inf,
            )
        elif (m := _RE["legacy"].search(t)) is not None:
            warm, init, inf = (float(v) for v in m.groups())
            fields.update(
                summary_format="legacy", init_us=init, warmup_avg_us=warm, inference_avg_us=inf
            )
        elif (m := _RE["mem_delta"].search(t)) is not None:
            memory["init_delta_mb"], memory["overall_delta_mb"] = map(float, m.groups())
        elif (m := _RE["mem_peak"].search(t)) is not None:
            memory["peak_mb"] = float(m.group(1))
        elif (m := _RE["vmrss"].match(t)) is not None:
            memory["vm_rss_mb"] = float(m.group(1))
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
    if any(PROFILE_SECTION.match(ln.text.strip()) for ln in lines):
        profile = parse_profile_lines(lines, source)
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


def _gpu_block(lines: Sequence[LogLine], i: int) -> tuple[GpuSupportReport, int]:
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
