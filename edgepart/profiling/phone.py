"""Per-op profiles on Android devices -> a latency table in the cost model's format.

With a phone attached (not run as a test: it needs one)::

    report, table = profile_model_adb("mnv2.tflite",
                                      delegates=[parse_delegate("cpu"), parse_delegate("gpu")])
    table.save("pixel7.json")

Each ``(device, delegate)`` run uses ``--enable_op_profiling=true``: the proto output where the
binary has ``--op_profiling_output_mode`` (else its stdout table; ``csv`` and ``text`` can be
forced), and the runtime-info proto where it has ``--export_model_runtime_info``. Rows become
table entries as :mod:`edgepart.profiling.op_table` describes. One processor per
``(device, delegate)``, named ``<device model>_<delegate>_<threads>t`` (plus the serial when two
devices are the same model); its ``device`` field names model, SoC, Android version and serial,
and its ``models`` entry holds the device properties, the delegate's verdict and which ops each
kernel took.

An accelerator delegate (gpu, nnapi, hexagon, external) that took no ops yields no processor:
its run measured the CPU, which the ``cpu``/``xnnpack`` profiles already describe. Rows of such a
delegate's CPU fallback are not put in the accelerator's table either (they are listed in the
``models`` entry's placement).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from edgepart.android.bm_flags import DelegateChoice, parse_delegate, tool_delegate
from edgepart.android.bm_op_profile import OpProfile, parse_op_profile_text
from edgepart.android.bm_proto import RuntimeInfo, parse_op_profile_proto, parse_runtime_info
from edgepart.android.driver import DeviceResult, run_on_devices
from edgepart.android.jobs import Job, RunSettings
from edgepart.android.model_bench import BenchReport, check_model_file, check_unique, open_store
from edgepart.android.outcome import parse_log
from edgepart.android.runstore import RunStore, file_digest, slug
from edgepart.android.server import AdbServer
from edgepart.cost.table import LatencyTable
from edgepart.errors import BenchmarkOutputError, UsageError
from edgepart.profiling.op_table import CPU_KERNELS, attribute_rows, model_entry, processor_table
from edgepart.progress import ProgressCallback
from edgepart.tflite.reader import read_model

__all__ = ["OP_OUTPUTS", "processor_name", "profile_model_adb"]

OP_OUTPUTS = ("auto", "proto", "csv", "text")


def _model_slug(info: dict[str, Any] | None) -> str:
    return slug((info or {}).get("model") or "android").lower()


def processor_name(info: dict[str, Any] | None, delegate: DelegateChoice, threads: int) -> str:
    """``<device model>_<delegate>_<threads>t``, lower case (e.g. ``pixel_7_gpu_1t``)."""
    model = _model_slug(info)
    kind = delegate.kind
    if kind == "external":
        kind = "external_" + slug(Path(delegate.path or "lib").name.split(".")[0]).lower()
    return f"{model}_{kind}_{threads}t"


def profile_model_adb(
    model: str | os.PathLike[str],
    *,
    delegates: Sequence[DelegateChoice],
    serials: Sequence[str] = (),
    threads: int = 1,
    settings: RunSettings | None = None,
    op_output: str = "auto",
    statistic: str = "p10",
    processor: str | None = None,
    output: str | os.PathLike[str] | None = None,
    results_dir: str | os.PathLike[str] | None = None,
    resume: bool = False,
    server: AdbServer | None = None,
    progress: ProgressCallback | None = None,
) -> tuple[BenchReport, LatencyTable]:
    """Profile ``model`` per op on every device with every delegate; return the latency table.

    The table is written to ``results_dir/table.json`` and, if given, to ``output`` (both
    atomically), also when some device failed: what was measured is kept.
    ``progress(done, total, label)`` is called after each run on any device.

    Raises
    ------
    UsageError, ModelFormatError
        Bad arguments, before anything runs.
    BenchmarkOutputError
        When every run finished but none gave a usable per-op profile.
    """
    settings = settings or RunSettings()
    path = check_model_file(model)
    if op_output not in OP_OUTPUTS:
        raise UsageError(f"--op-output {op_output!r}: choose one of {', '.join(OP_OUTPUTS)}")
    if not delegates:
        raise UsageError("give at least one --delegate")
    check_unique("--delegate", list(delegates))
    check_unique("--serial", list(serials))
    if threads < 1:
        raise UsageError(f"--threads {threads}: need at least 1")
    if processor and (len(delegates) > 1 or len(serials) > 1):
        raise UsageError("--processor names one table processor: give one device and delegate")
    ir = read_model(path)
    store_settings = {
        "model": path.name,
        "model_sha256": file_digest(path),
        "threads": threads,
        "op_output": op_output,
        **settings.to_json(),
    }
    store = open_store("profile", path, store_settings, results_dir, resume)
    jobs = [
        Job(str(d), str(path), d, threads, op_profiling=op_output, runtime_info=True)
        for d in delegates
    ]
    devices = run_on_devices(
        list(serials) or [None], jobs, settings, store, server=server, progress=progress
    )
    report = BenchReport("profile", str(path), store.path, store.settings, devices)
    table, summaries, skipped = _build(ir, path, devices, store, threads, statistic, processor)
    report.extra.update(processors=summaries, skipped=skipped)
    if table.processors:
        table.save(store.path / "table.json")
        report.extra["table"] = str(store.path / "table.json")
        if output is not None:
            table.save(output)
            report.extra["table"] = str(output)
    elif report.failure_message() is None:
        raise BenchmarkOutputError(
            "no per-op profile could be turned into a latency table: "
            + ("; ".join(skipped) or "no run succeeded")
        )
    return report, table


def _build(
    ir: Any,
    path: Path,
    devices: list[DeviceResult],
    store: RunStore,
    threads: int,
    statistic: str,
    processor: str | None,
) -> tuple[LatencyTable, list[dict[str, Any]], list[str]]:
    table = LatencyTable()
    summaries: list[dict[str, Any]] = []
    skipped: list[str] = []
    names = [_model_slug(d.info) for d in devices]
    clash = len(set(names)) < len(names)
    for d in devices:
        for rec in d.records:
            if rec.get("status") != "ok":
                continue
            where = f"{d.serial} {rec['label']}"
            delegate = parse_delegate(rec["delegate"])
            host = tool_delegate(delegate).host_executor  # a CPU kernel set, or None
            verdict = rec.get("delegate_verdict") or {}
            if host is None and not verdict.get("applied"):
                skipped.append(
                    f"{where}: {verdict.get('executed_on')}; those are CPU times, which the cpu "
                    "and xnnpack profiles measure, so no table processor for it"
                )
                continue
            try:
                profile, runtime, run = _load(store, rec, where)
                rows = attribute_rows(profile, runtime, ir)
            except BenchmarkOutputError as err:
                skipped.append(str(err))
                continue
            name = processor or processor_name(d.info, delegate, threads)
            if clash and not processor:
                name += "_" + slug(d.serial).lower()
            mine = (
                rows if host is not None else [a for a in rows if a.executed_by not in CPU_KERNELS]
            )
            info = d.info or {}
            pt = processor_table(
                name,
                ir,
                mine,
                device=_device_text(info, d.serial),
                executor=host or str(delegate),
                threads=threads,
                source=_source(rec, profile, runtime),
                statistic=statistic,
                warmup=run.warmup.count if run.warmup else 0,
            )
            placement: dict[str, list[int]] = {}
            for a in rows:
                placement.setdefault(a.executed_by, []).extend(a.ops)
            predicted = sum(e.value_s for e in pt.entries.values())
            adb = {
                "serial": d.serial,
                "device": info,
                "delegate": rec["delegate"],
                "delegate_verdict": verdict,
                "placement": {k: sorted(v) for k, v in sorted(placement.items())},
                "op_profile_layout": profile.layout,
                "runtime_info": runtime is not None,
                "argv": rec.get("argv"),
            }
            entry = model_entry(path.name, ir.subgraphs[0].num_ops, run, predicted, adb)
            if entry is not None:
                pt.models.append(entry)
            table = table.merge(LatencyTable({name: pt}))
            groups = [e for e in pt.entries.values() if e.kind == "group"]
            steady = (rec.get("summary") or {}).get("steady") or {}
            summaries.append(
                {
                    "processor": name,
                    "serial": d.serial,
                    "delegate": rec["delegate"],
                    "op_entries": len(pt.entries) - len(groups),
                    "group_entries": len(groups),
                    "ops_in_groups": sum(
                        int(e.extra.get("ops", 0)) * int(e.extra.get("instances", 1))
                        for e in groups
                    ),
                    "rows_not_in_table": len(rows) - len(mine),
                    "layout": profile.layout,
                    "runtime_info": runtime is not None,
                    "sum_ms": predicted * 1e3,
                    "measured_ms": steady.get("median_ms", steady.get("avg_ms")),
                }
            )
    return table, summaries, skipped


def _load(
    store: RunStore, rec: dict[str, Any], where: str
) -> tuple[OpProfile, RuntimeInfo | None, Any]:
    """The run, its per-op profile and runtime info, re-read from the results directory."""
    log_path = store.path / rec["log"]
    run = parse_log(log_path.read_text(encoding="utf-8"), where)
    files = rec.get("files") or {}
    mode = rec.get("op_mode")
    if mode in ("proto", "csv"):
        if "op_profile" not in files:
            raise BenchmarkOutputError(
                f"{where}: the run wrote no {mode} per-op file; see {log_path}"
            )
        f = store.path / files["op_profile"]
        if mode == "proto":
            profile = parse_op_profile_proto(f.read_bytes(), source=str(f))
        else:
            profile = parse_op_profile_text(f.read_text(encoding="utf-8"), source=str(f))
    elif run.profile is not None:
        profile = run.profile
    else:
        raise BenchmarkOutputError(f"{where}: no per-op table in the output; see {log_path}")
    runtime = None
    if "runtime_info" in files:
        f = store.path / files["runtime_info"]
        runtime = parse_runtime_info(f.read_bytes(), source=str(f))
    return profile, runtime, run


def _device_text(info: dict[str, Any], serial: str) -> str:
    bits = [
        info.get("soc") and f"SoC {info['soc']}",
        info.get("android_version") and f"Android {info['android_version']}",
        info.get("sdk") and f"SDK {info['sdk']}",
        info.get("abi"),
        f"adb serial {serial}",
    ]
    return f"{info.get('model') or 'Android device'} ({', '.join(str(b) for b in bits if b)})"


def _source(rec: dict[str, Any], profile: OpProfile, runtime: RuntimeInfo | None) -> str:
    argv = rec.get("argv") or []
    flags = " ".join(a for a in argv[1:] if not a.startswith("--graph="))
    return (
        f"benchmark_model over adb ({flags}); per-op layout {profile.layout}, runtime info "
        f"{'yes' if runtime is not None else 'no'}; entries hold the tool's per-op mean (no "
        "median or percentiles are reported), value = the statistic of that mean"
    )
