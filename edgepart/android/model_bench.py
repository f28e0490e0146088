"""Benchmark a model on Android devices through adb with TFLite's ``benchmark_model``.

With phones attached (not run as a test: it needs them)::

    report = bench_model("mnv2.tflite", delegates=[parse_delegate("xnnpack"),
                         parse_delegate("gpu")], serials=["R5CT...", "emulator-5554"])
    [(r["serial"], r["label"], r["status"]) for r in report.records]

Each ``(device, delegate)`` pair is one run of ``benchmark_model`` with the delegate's flags
(:mod:`edgepart.android.bm_flags`); devices run in parallel, delegates one after the other on a
device. Records are written to a results directory as they complete (see
:mod:`edgepart.android.runstore`); ``resume=True`` skips the runs already final there, so a run
cut short by an unplugged phone or a hang is finished by running the same command again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgepart.android.bm_flags import DelegateChoice
from edgepart.android.driver import DeviceResult, run_on_devices
from edgepart.android.jobs import Job, RunSettings
from edgepart.android.runstore import RunStore, default_results_dir, file_digest
from edgepart.android.server import AdbServer
from edgepart.errors import (
    AdbError,
    BenchmarkOutputError,
    EdgepartError,
    ModelFormatError,
    UsageError,
)
from edgepart.fileio import open_regular
from edgepart.progress import ProgressCallback

__all__ = ["BenchReport", "bench_model", "check_model_file", "check_unique", "open_store"]


@dataclass
class BenchReport:
    """The outcome of one ``bench``/``profile``/``bundle`` command over all its devices."""

    kind: str
    target: str
    results_dir: Path
    settings: dict[str, Any]
    devices: list[DeviceResult]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def records(self) -> list[dict[str, Any]]:
        """Every run record, devices in the order given, runs in job order."""
        return [r for d in self.devices for r in d.records]

    def failure_message(self) -> str | None:
        """One line for an incomplete result (lost device, timeout...), else ``None``."""
        errors = [d.error for d in self.devices if d.error]
        errors += [r["message"] for r in self.records if r.get("status") == "error"]
        if not errors:
            failed = [r["message"] for r in self.records if r.get("status") == "failed"]
            if failed and not any(r.get("status") == "ok" for r in self.records):
                more = f" (and {len(failed) - 1} more failed run(s))" if len(failed) > 1 else ""
                return f"no run succeeded: {failed[0]}{more}"
            return None
        done = sum(1 for r in self.records if r.get("status") in ("ok", "failed"))
        more = f" (and {len(errors) - 1} more problem(s), listed above)" if len(errors) > 1 else ""
        if not self.records and all(d.error for d in self.devices):
            return errors[0] + more
        return (
            f"{errors[0]}{more}; {done} run(s) completed and kept in {self.results_dir}: run "
            f"the same command with --resume {self.results_dir} to finish the rest"
        )

    def failure(self) -> EdgepartError | None:
        """:meth:`failure_message` as the error to raise: adb trouble, or no usable run."""
        message = self.failure_message()
        if message is None:
            return None
        if message.startswith("no run succeeded"):
            return BenchmarkOutputError(message)
        return AdbError(message)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "target": self.target,
            "results_dir": str(self.results_dir),
            "settings": self.settings,
            "devices": [d.to_json() for d in self.devices],
            **self.extra,
        }


def check_model_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as a Path, after checking it is a readable ``.tflite`` flatbuffer."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{p}: no such model file")
    fd = open_regular(p, what=".tflite model", error=ModelFormatError)
    try:
        head = os.read(fd, 8)
    finally:
        os.close(fd)
    if len(head) < 8 or head[4:8] != b"TFL3":
        raise ModelFormatError(
            f"{p}: byte 4: file identifier is {head[4:8]!r}, not b'TFL3'; give a .tflite model"
        )
    return p


def check_unique(what: str, items: Sequence[object]) -> None:
    """Refuse duplicates in a repeated option (``--serial``, ``--delegate``)."""
    seen: set[str] = set()
    for item in items:
        key = str(item)
        if key in seen:
            raise UsageError(f"{what} {key} is given twice; give each once")
        seen.add(key)


def open_store(
    kind: str,
    target: Path,
    settings: dict[str, Any],
    results_dir: str | os.PathLike[str] | None,
    resume: bool,
) -> RunStore:
    """The results directory for a command (default: derived from its settings)."""
    where = Path(results_dir) if results_dir else default_results_dir(kind, target, settings)
    return RunStore(where, kind, settings, resume=resume)


def bench_model(
    model: str | os.PathLike[str],
    *,
    delegates: Sequence[DelegateChoice],
    serials: Sequence[str] = (),
    threads: int | None = None,
    settings: RunSettings | None = None,
    results_dir: str | os.PathLike[str] | None = None,
    resume: bool = False,
    server: AdbServer | None = None,
    progress: ProgressCallback | None = None,
) -> BenchReport:
    """Run ``benchmark_model`` for every delegate on every device (see the module docstring).

    Parameters
    ----------
    model
        Local ``.tflite`` file; pushed once per device.
    delegates
        One run per delegate, in this order, on each device.
    serials
        Devices (run in parallel); empty means ``ANDROID_SERIAL`` or the only one attached.
    threads
        ``--num_threads``; ``None`` keeps the tool's default.
    settings
        Binary, CPU mask, run counts and timeout.
    results_dir, resume
        Where records go, and whether runs already final there are skipped.
    progress
        ``progress(done, total, label)`` after each run on any device.

    Raises
    ------
    UsageError, ModelFormatError
        Before anything runs, for bad arguments.
    """
    settings = settings or RunSettings()
    path = check_model_file(model)
    if not delegates:
        raise UsageError("give at least one --delegate")
    check_unique("--delegate", list(delegates))
    check_unique("--serial", list(serials))
    if threads is not None and threads < 1:
        raise UsageError(f"--threads {threads}: need at least 1")
    store_settings = {
        "model": path.name,
        "model_sha256": file_digest(path),
        "threads": threads,
        **settings.to_json(),
    }
    store = open_store("bench", path, store_settings, results_dir, resume)
    jobs = [Job(str(d), str(path), d, threads) for d in delegates]
    devices = run_on_devices(
        list(serials) or [None], jobs, settings, store, server=server, progress=progress
    )
    return BenchReport("bench", str(path), store.path, store.settings, devices)
