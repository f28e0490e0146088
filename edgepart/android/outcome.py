"""What one ``benchmark_model`` run on a device amounts to: a status, a one-line message, numbers.

:func:`run_record` turns a :class:`~edgepart.android.session.RawRun` into the JSON record the
results directory keeps:

* ``ok``: the tool printed steady-state timings; ``summary`` holds init, first inference,
  warm-up, steady state (median, p5-p95, min, max, std) and memory where printed, and
  ``delegate`` what the delegate really took (``full``/``partial``/``none``/``absent``) and
  where the run executed;
* ``failed``: the tool's own verdict (``Failed to apply GPU delegate.``, model load failure,
  unrecognisable output from an older or newer build, a delegate the binary lacks): final;
* ``error``: the run did not finish (timeout); retried by ``--resume``.
"""

from __future__ import annotations

from typing import Any

from edgepart.android.bm_flags import DelegateChoice, tool_delegate
from edgepart.android.bm_lines import RunStats
from edgepart.android.bm_run_log import BenchmarkRun, parse_benchmark_output
from edgepart.android.jobs import RawRun
from edgepart.errors import BenchmarkOutputError

__all__ = ["delegate_verdict", "parse_log", "run_record", "summarize"]


def _ms(us: float | None) -> float | None:
    return None if us is None else round(us / 1000.0, 6)


def _stats(st: RunStats | None) -> dict[str, Any] | None:
    if st is None:
        return None
    return {
        "count": st.count,
        "first_ms": _ms(st.first),
        "avg_ms": _ms(st.avg),
        "median_ms": _ms(st.median),
        "p5_ms": _ms(st.p5),
        "p95_ms": _ms(st.p95),
        "min_ms": _ms(st.min),
        "max_ms": _ms(st.max),
        "std_ms": _ms(st.std),
    }


def summarize(run: BenchmarkRun) -> dict[str, Any]:
    """Init, first, warm-up, steady-state and memory figures of a run (ms / MB; None if absent)."""
    mem = run.memory
    steady = _stats(run.inference)
    if steady is None and run.inference_avg_us is not None:
        steady = {"count": None, "avg_ms": _ms(run.inference_avg_us)}
    return {
        "summary_format": run.summary_format,
        "init_ms": _ms(run.init_us),
        "first_ms": _ms(run.first_inference_us),
        "warmup_avg_ms": _ms(run.warmup_avg_us),
        "warmup": _stats(run.warmup),
        "steady": steady,
        "model_size_mb": run.model_size_mb,
        "memory": None
        if mem is None
        else {
            "init_delta_mb": mem.init_delta_mb,
            "overall_delta_mb": mem.overall_delta_mb,
            "peak_mb": mem.peak_mb,
            "vm_rss_mb": mem.vm_rss_mb,
        },
    }


def delegate_verdict(run: BenchmarkRun, choice: DelegateChoice) -> dict[str, Any]:
    """Which delegate really ran the graph, from the tool's own messages.

    The delegate file's ``benchmark_model.provider`` is the name the tool logs when it applies
    the delegate; a delegate with none (the builtin kernels) is never reported, so it ran.
    """
    cpu = (
        "XNNPACK"
        if run.xnnpack_created
        or any(r.delegate == "TfLiteXNNPackDelegate" for r in run.replacements)
        else "builtin kernels"
    )
    tool = tool_delegate(choice)
    provider = tool.provider
    if provider is None:
        return {"outcome": "builtin", "applied": True, "executed_on": "CPU, builtin kernels"}
    outcome = run.delegate_outcome(provider)
    kernels = next(
        (a.kernels for a in run.applications if a.provider.upper() == provider.upper()), None
    )
    out: dict[str, Any] = {
        "outcome": outcome,
        "kernels": kernels,
        "applied": outcome in ("full", "partial"),
    }
    if outcome == "full":
        out["executed_on"] = f"{provider} (whole graph)"
    elif outcome == "partial":
        out["executed_on"] = f"{provider} ({kernels} partitions) + CPU for the rest"
    elif outcome == "none":
        # A CPU kernel set that took no ops leaves the builtin kernels (its own CPU fallback).
        cpu = "builtin kernels" if tool.host_executor is not None else cpu
        out["executed_on"] = f"CPU, {cpu}: the {provider} delegate took no ops"
    else:
        out["executed_on"] = f"CPU, {cpu}: {provider} delegate unavailable"
        out["detail"] = run.unavailable[0] if run.unavailable else "the tool never applied it"
    rep = [r for r in run.replacements if r.total_nodes is not None]
    if rep:
        out["replaced_nodes"] = sum(r.replaced for r in rep)
        out["total_nodes"] = rep[0].total_nodes
    return out


def parse_log(text: str, source: str) -> BenchmarkRun:
    """Parse a run's combined output (re-exported for resumed runs)."""
    return parse_benchmark_output(text, source=source)


def run_record(serial: str, raw: RawRun) -> tuple[dict[str, Any], BenchmarkRun | None]:
    """The results-directory record of one run, and the parsed run when there is one."""
    job = raw.job
    rec: dict[str, Any] = {
        "serial": serial,
        "label": job.label,
        "delegate": str(job.delegate),
        "threads": job.threads,
        "tags": dict(job.tags),
        "argv": list(raw.argv),
        "exit_code": raw.exit_code,
        "seconds": round(raw.seconds, 3),
        "log": raw.log,
        "files": dict(raw.files),
        "op_mode": raw.op_mode,
    }
    where = f"{serial} {job.label}"
    if raw.unsupported:
        return {**rec, "status": "failed", "message": f"{where}: {raw.unsupported}"}, None
    if raw.timeout is not None:
        return {**rec, "status": "error", "message": str(raw.timeout)}, None
    try:
        run = parse_log(raw.text, where)
    except BenchmarkOutputError:
        msg = (
            f"{where}: exit {raw.exit_code}, and the output is not benchmark_model output this "
            "edgepart recognises (an older or newer format?); the raw log is kept in "
            f"{raw.log}"
        )
        return {**rec, "status": "failed", "message": msg}, None
    rec["summary"] = summarize(run)
    if run.failure is not None:
        f = run.failure
        detail = f" ({f.detail[0]})" if f.detail else ""
        msg = f"{where}: benchmark_model failed ({f.kind}): {f.message}{detail}"
        return {**rec, "status": "failed", "message": msg}, run
    if raw.exit_code != 0:
        last = (run.errors or (raw.stderr.strip().splitlines() or ["no error message"]))[-1]
        msg = f"{where}: benchmark_model exited with status {raw.exit_code}: {last}"
        return {**rec, "status": "failed", "message": msg}, run
    if run.inference is None and run.inference_avg_us is None:
        msg = (
            f"{where}: the output has no steady-state timings this edgepart recognises (an "
            f"older or newer format?); the raw log is kept in {raw.log}"
        )
        return {**rec, "status": "failed", "message": msg}, run
    verdict = delegate_verdict(run, job.delegate)
    rec["delegate_verdict"] = verdict
    note = "" if verdict["applied"] else f"; note: {verdict['executed_on']}"
    if "detail" in verdict:
        note += f" ({verdict['detail']})"
    return {**rec, "status": "ok", "message": f"{where}: ok{note}"}, run
