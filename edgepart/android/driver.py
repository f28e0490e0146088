"""Running jobs on one or more devices: one thread per device, jobs in order on each device.

A phone runs one benchmark at a time (two at once would measure each other), so jobs on one
device are sequential; several devices run in parallel threads. Results come back in the order
the serials were given, each device's records in job order, whatever finished first.

Failures are kept apart: a delegate that fails on the device is a ``failed`` record and the next
job runs; a timeout is an ``error`` record (the process was killed) and the next job runs; a lost
device, a dead adb server, an unauthorized device or an unusable ``benchmark_model`` end that
device's jobs (recorded in :attr:`DeviceResult.error`) but not the other devices'.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from edgepart.android.adb import Device
from edgepart.android.jobs import Job, RunSettings
from edgepart.android.outcome import run_record
from edgepart.android.runstore import RunStore, settings_digest
from edgepart.android.server import AdbServer
from edgepart.android.session import DeviceSession
from edgepart.errors import AdbError, EdgepartError

__all__ = ["DeviceResult", "Followup", "run_on_devices"]

log = logging.getLogger(__name__)

Followup = Callable[[Job, dict[str, Any]], list[Job]]
"""Called with each finished job and its record; returns jobs to run right after it."""


@dataclass
class DeviceResult:
    """What happened on one device: its description, records in job order, the fatal error."""

    serial: str
    info: dict[str, Any] | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    error_type: str | None = None
    started: float = 0.0
    finished: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "serial": self.serial,
            "device": self.info,
            "runs": self.records,
            "error": self.error,
            "error_type": self.error_type,
        }


def run_on_devices(
    serials: Sequence[str | None],
    jobs: Sequence[Job],
    settings: RunSettings,
    store: RunStore,
    *,
    server: AdbServer | None = None,
    followup: Followup | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[DeviceResult]:
    """Run ``jobs`` on every device of ``serials`` (``None``: ``ANDROID_SERIAL`` or the only one).

    Runs already final in ``store`` are not repeated (their records are returned with
    ``"resumed": True``). ``progress(done, total, label)`` is called after each run on any
    device (from the device threads; follow-up runs add to the total).
    """
    server = server or AdbServer.from_env()
    workdir = f"edgepart-{settings_digest(store.settings)}"
    counts = {"done": 0, "total": len(serials) * len(jobs)}
    lock = threading.Lock()

    def tick(serial: str, label: str, added: int) -> None:
        if progress is None:
            return
        with lock:
            counts["done"] += 1
            counts["total"] += added
            done, total = counts["done"], counts["total"]
        progress(done, total, f"{serial}: {label}")

    def one(serial: str | None) -> DeviceResult:
        return _run_device(serial, jobs, settings, store, server, followup, workdir, tick)

    if len(serials) == 1:
        return [one(serials[0])]
    with ThreadPoolExecutor(max_workers=len(serials), thread_name_prefix="adb-bench") as pool:
        return list(pool.map(one, serials))


def _run_device(
    serial: str | None,
    jobs: Sequence[Job],
    settings: RunSettings,
    store: RunStore,
    server: AdbServer,
    followup: Followup | None,
    workdir: str,
    tick: Callable[[str, str, int], None] | None = None,
) -> DeviceResult:
    res = DeviceResult(serial or "(default device)", started=time.monotonic())
    if serial is not None and _replay(res, jobs, store, followup):
        res.info = store.devices.get(serial)
        res.finished = time.monotonic()
        return res
    res.records.clear()
    session: DeviceSession | None = None
    failure: EdgepartError | None = None
    try:
        device = Device(serial, server=server)
        res.serial = device.serial
        res.info = device.info().to_dict()
        queue = list(jobs)
        while queue:
            job = queue.pop(0)
            rec = store.completed(device.serial, job.label)
            if rec is not None:
                rec = {**rec, "resumed": True}
            else:
                if session is None:
                    fresh = DeviceSession(device, settings, store, workdir_name=workdir)
                    session = fresh.__enter__()  # removes its work directory if it fails
                    store.note_device(device.serial, res.info)
                rec = _run_one(session, job, store)
            res.records.append(rec)
            more = followup(job, rec) if followup is not None else []
            queue[0:0] = more
            if tick is not None:
                tick(device.serial, job.label, len(more))
    except EdgepartError as err:
        failure = err
        res.error, res.error_type = str(err), type(err).__name__
        log.warning("%s: %s", res.serial, err)
    finally:
        if session is not None:
            try:
                session.close(failure)
            except AdbError as err:  # cleanup failed although the runs went well
                res.error, res.error_type = str(err), type(err).__name__
    if res.error is not None and store.runs:
        store.note_device(res.serial, {**(res.info or {}), "error": res.error})
    res.finished = time.monotonic()
    return res


def _replay(
    res: DeviceResult, jobs: Sequence[Job], store: RunStore, followup: Followup | None
) -> bool:
    """Fill ``res`` from the store alone; True if every job (and follow-up) is final there."""
    queue = list(jobs)
    while queue:
        job = queue.pop(0)
        rec = store.completed(res.serial, job.label)
        if rec is None:
            return False
        rec = {**rec, "resumed": True}
        res.records.append(rec)
        if followup is not None:
            queue[0:0] = followup(job, rec)
    return True


def _run_one(session: DeviceSession, job: Job, store: RunStore) -> dict[str, Any]:
    try:
        raw = session.run(job)
    except AdbError as err:
        # the device or server is gone: keep what the run printed, retry it on resume
        rec = {
            "serial": session.serial,
            "label": job.label,
            "delegate": str(job.delegate),
            "tags": dict(job.tags),
            "status": "error",
            "message": str(err),
            "log": store.run_file(session.serial, job.label, ".log"),
        }
        store.record(rec)
        raise
    rec, _ = run_record(session.serial, raw)
    store.record(rec)
    return {**rec, "resumed": False}
