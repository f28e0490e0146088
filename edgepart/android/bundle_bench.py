"""Benchmark every partition of a bundle on Android devices, beside the plan's predictions.

Each partition file (``partitions/<id>.tflite``, a standalone model) is pushed and run with
``benchmark_model`` using the delegate its plan entry names, with the flags its delegate file
gives (``benchmark_model.flags``: ``gpu.yaml`` says ``--use_gpu=true``, ``cpu_builtin.yaml``
``--use_xnnpack=false``, ...). Any delegate given ``--delegate-library NAME=PATH`` runs as the
tool's external delegate (``--external_delegate_path=PATH``, with the file's
``library.options`` as ``--external_delegate_options``); a delegate the tool can only load that
way (``edgetpu``) needs one. An explicit plan executor runs the delegate file that is that
kernel set (``xnnpack``, ``builtin``); ``reference`` runs the builtin kernels (the tool has no
reference-kernel mode).

Fallback follows the bundle runtime (``edgepart.runtime.executors``): a partition whose delegate
cannot run it (the delegate failed, took no ops, is missing from the binary, or has no way to
be applied) runs on the host fallback executor, ``xnnpack``, and the report says so. Measured
latencies are those of each partition on its own; the plan's prediction may also count boundary
copies and concurrency, which a per-partition run does not have.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from edgepart import jsondoc as _json
from edgepart.android.bm_flags import EXTERNAL, DelegateChoice, bench_spec, tool_delegate
from edgepart.android.driver import DeviceResult, run_on_devices
from edgepart.android.jobs import Job, RunSettings
from edgepart.android.model_bench import BenchReport, check_unique, open_store
from edgepart.android.server import AdbServer
from edgepart.bundle import load_bundle
from edgepart.devices.delegate import delegate_names, load_delegate
from edgepart.devices.host_executors import DEFAULT_EXECUTOR, HOST_EXECUTORS
from edgepart.errors import UsageError
from edgepart.progress import ProgressCallback

__all__ = ["FALLBACK", "bench_bundle", "partition_delegate", "partition_rows"]

FALLBACK = DEFAULT_EXECUTOR
_TOOL_KERNELS = {"reference": "builtin"}  # the tool has no reference kernels: builtin stand in


def _kernel_choice(executor: str) -> DelegateChoice:
    """The tool delegate of a host executor: the delegate file that is that kernel set."""
    want = _TOOL_KERNELS.get(executor, executor)
    for n in delegate_names():
        spec = load_delegate(n)
        if spec.host_executor == want and spec.benchmark_model is not None:
            return DelegateChoice(spec.benchmark_model.label)
    raise UsageError(
        f"no delegate file on the search path is the {want} kernel set (library: {{load: "
        f"builtin, executor: {want}}}) with benchmark_model flags"
    )


def partition_delegate(
    entry: Any, libraries: Mapping[str, str]
) -> tuple[DelegateChoice | None, str]:
    """The tool delegate for a plan entry, or ``None`` and why it cannot be applied."""
    ex = entry.executor
    name = (ex.delegate or entry.delegate) if ex is not None else entry.delegate
    if ex is not None and ex.kind != "delegate":
        return _kernel_choice(ex.kind), ""
    spec = bench_spec(name)
    if spec is None and name in HOST_EXECUTORS and name not in libraries:
        return _kernel_choice(name), ""  # a plan may name a kernel set directly
    if name in libraries:
        options = tuple(sorted(spec.library.options.items())) if spec is not None else ()
        return DelegateChoice(EXTERNAL, libraries[name], options), ""
    if spec is None or spec.benchmark_model is None:
        return None, (
            f"no delegate file with benchmark_model flags for the {name} delegate: pass "
            f"--delegate-library {name}=DEVICE_PATH to load it as an external delegate"
        )
    if spec.benchmark_model.needs_library:
        return None, (
            f"benchmark_model loads the {name} delegate as an external library: pass "
            f"--delegate-library {name}=DEVICE_PATH to apply it"
        )
    return DelegateChoice(spec.benchmark_model.label), ""


def _fallback_job(entry: Any, model: str, threads: int | None, reason: str) -> Job:
    tags = {"partition": entry.id, "role": "fallback", "reason": reason}
    return Job(
        f"{entry.id}@{FALLBACK}-fallback", model, _kernel_choice(FALLBACK), threads, tags=tags
    )


def bench_bundle(
    bundle: str | os.PathLike[str],
    *,
    serials: Sequence[str] = (),
    threads: int | None = None,
    libraries: Mapping[str, str] | None = None,
    settings: RunSettings | None = None,
    results_dir: str | os.PathLike[str] | None = None,
    resume: bool = False,
    server: AdbServer | None = None,
    progress: ProgressCallback | None = None,
) -> BenchReport:
    """Benchmark each partition of ``bundle`` with its delegate (fallback as documented above).

    ``progress(done, total, label)`` is called after each run on any device.

    Raises
    ------
    BundleError
        If the bundle is missing, incomplete or corrupted (checked before anything runs).
    """
    settings = settings or RunSettings()
    libraries = dict(libraries or {})
    loaded = load_bundle(bundle)
    root = loaded.path or Path(bundle)
    check_unique("--serial", list(serials))
    if threads is not None and threads < 1:
        raise UsageError(f"--threads {threads}: need at least 1")
    manifest = _json.dumps(loaded.manifest)
    store_settings = {
        "bundle": root.name,
        "manifest_sha256": hashlib.sha256(manifest).hexdigest(),
        "threads": threads,
        "libraries": libraries,
        **settings.to_json(),
    }
    store = open_store("bundle", root, store_settings, results_dir, resume)
    entries = {e.id: e for e in loaded.plan.partitions}
    jobs, model_of, threads_of = [], {}, {}
    for e in loaded.plan.partitions:
        model_of[e.id] = str(root / e.file)
        threads_of[e.id] = e.threads or threads
        choice, why = partition_delegate(e, libraries)
        if choice is None:
            jobs.append(_fallback_job(e, model_of[e.id], threads_of[e.id], why))
            continue
        tags = {"partition": e.id, "role": "primary"}
        jobs.append(Job(f"{e.id}@{choice}", model_of[e.id], choice, threads_of[e.id], tags=tags))

    def followup(job: Job, rec: dict[str, Any]) -> list[Job]:
        if job.tags.get("role") != "primary" or tool_delegate(job.delegate).host_executor:
            return []
        verdict = rec.get("delegate_verdict") or {}
        if rec.get("status") == "failed":
            reason = rec.get("message", "the delegate run failed")
        elif rec.get("status") == "ok" and not verdict.get("applied", True):
            reason = f"{job.label}: {verdict.get('executed_on')}"
        else:
            return []
        pid = str(job.tags["partition"])
        return [_fallback_job(entries[pid], model_of[pid], threads_of[pid], reason)]

    devices = run_on_devices(
        list(serials) or [None],
        jobs,
        settings,
        store,
        server=server,
        followup=followup,
        progress=progress,
    )
    report = BenchReport("bundle", str(root), store.path, store.settings, devices)
    plan = loaded.plan
    report.extra["plan"] = {
        "device_profile": plan.device_profile,
        "predicted": dict(plan.predicted or {}),
        "partitions": [
            {
                "id": e.id,
                "processor": e.processor,
                "unit": e.unit,
                "delegate": e.delegate,
                "ops": len(e.ops),
                "predicted": dict(e.predicted or {}),
            }
            for e in plan.partitions
        ],
    }
    rows = {d.serial: partition_rows(plan, d) for d in devices}
    report.extra["partitions"] = rows
    report.extra["totals"] = {s: _totals(plan, r) for s, r in rows.items() if r}
    report.extra["fallbacks"] = {
        s: [
            f"{r['id']}: ran with {FALLBACK} because {r['fallback_reason']}"
            for r in rs
            if r["fallback_reason"]
        ]
        for s, rs in rows.items()
    }
    return report


def _predicted_ms(pred: Mapping[str, Any] | None) -> float | None:
    if not pred:
        return None
    if pred.get("duration_s") is not None:
        return float(pred["duration_s"]) * 1e3
    if pred.get("start_s") is not None and pred.get("end_s") is not None:
        return (float(pred["end_s"]) - float(pred["start_s"])) * 1e3
    return None


def partition_rows(plan: Any, device: DeviceResult) -> list[dict[str, Any]]:
    """One row per plan partition: what ran, measured median and spread, prediction, ratio."""
    by_part: dict[str, dict[str, dict[str, Any]]] = {}
    for rec in device.records:
        tags = rec.get("tags") or {}
        by_part.setdefault(str(tags.get("partition")), {})[str(tags.get("role"))] = rec
    rows = []
    for e in plan.partitions:
        recs = by_part.get(e.id, {})
        primary, fallback = recs.get("primary"), recs.get("fallback")
        chosen = fallback if fallback is not None else primary
        steady = ((chosen or {}).get("summary") or {}).get("steady") or {}
        median = steady.get("median_ms", steady.get("avg_ms"))
        if chosen is None or chosen.get("status") != "ok":
            median = None
        spread = "-"
        if median is not None and steady.get("p5_ms") is not None:
            spread = f"{steady['p5_ms']:.3f}-{steady['p95_ms']:.3f}"
        predicted = _predicted_ms(e.predicted)
        # benchmark_model prints whole microseconds: a partition faster than 1 us reads 0, and a
        # ratio of 0 to its prediction would claim a 100 % miss that was never measured.
        below = median == 0
        status = "not run" if chosen is None else str(chosen.get("status"))
        if fallback is not None and status == "ok":
            status = "fallback"
        reason = None
        if fallback is not None:
            reason = (fallback.get("tags") or {}).get("reason")
        rows.append(
            {
                "id": e.id,
                "status": status,
                "processor": f"{e.processor}:{e.unit}",
                "delegate": e.delegate,
                "ran_with": "-" if chosen is None else str(chosen.get("delegate")),
                "median_ms": median,
                "spread": spread,
                "predicted_ms": predicted,
                "below_resolution": below,
                "ratio": None if median is None or below or not predicted else median / predicted,
                "executed_on": ((chosen or {}).get("delegate_verdict") or {}).get(
                    "executed_on", ""
                ),
                "fallback_reason": reason,
            }
        )
    return rows


def _totals(plan: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    measured = [r["median_ms"] for r in rows]
    predicted = [r["predicted_ms"] for r in rows]
    pred = plan.predicted or {}
    return {
        "measured_ms": sum(measured) if all(m is not None for m in measured) else None,
        "predicted_ms": sum(predicted) if all(p is not None for p in predicted) else None,
        "plan_latency_ms": float(pred["latency_s"]) * 1e3 if pred.get("latency_s") else None,
    }
