"""Android phones through adb: list them, run ``benchmark_model`` on a model or every partition
of a bundle, and profile a model per op into a latency table.

The real adb client and server are used; nothing is emulated here. Results are kept as runs
complete (``results_dir``), so an interrupted command resumes where it stopped.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from edgepart.android.adb import DeviceInfo, list_devices
from edgepart.android.bm_flags import parse_delegate
from edgepart.android.bundle_bench import bench_bundle as _bench_bundle
from edgepart.android.jobs import BinarySpec, RunSettings
from edgepart.android.model_bench import BenchReport
from edgepart.android.model_bench import bench_model as _bench_model
from edgepart.android.server import AdbServer
from edgepart.cost.table import LatencyTable
from edgepart.errors import UsageError
from edgepart.profiling.phone import profile_model_adb
from edgepart.progress import ProgressCallback

__all__ = [
    "AdbDevices",
    "BenchReport",
    "adb_devices",
    "bench_bundle",
    "bench_model",
    "profile_phone",
]


@dataclass(frozen=True)
class AdbDevices:
    """The adb server asked (``tcp:HOST:PORT``) and the devices it knows, sorted by serial."""

    server: str
    devices: list[DeviceInfo]

    def to_dict(self) -> dict[str, object]:
        """What ``edgepart devices --json`` prints."""
        return {"adb_server": self.server, "devices": [d.to_dict() for d in self.devices]}


def adb_devices(
    *,
    adb_server: str | None = None,
    start_server: bool = False,
    serial: str | None = None,
) -> AdbDevices:
    """The Android devices the adb server knows, with model, SoC, Android version, SDK, ABI.

    Parameters
    ----------
    adb_server
        ``tcp:HOST:PORT`` (default: the server adb uses, from ``ADB_SERVER_SOCKET`` or
        ``ANDROID_ADB_SERVER_PORT``).
    start_server
        Start a local adb server if none is running (never done otherwise).
    serial
        Only this device.

    Returns
    -------
    AdbDevices
        The server and its devices (``state`` is ``device``, ``unauthorized``, ``offline``...).

    Raises
    ------
    AdbServerError
        The server cannot be reached (or started).

    Examples
    --------
    No phone and no adb server are attached to the machines this was built on; asking a port
    where no server listens says so:

    >>> import edgepart
    >>> edgepart.adb_devices(adb_server="tcp:127.0.0.1:9")
    Traceback (most recent call last):
    ...
    edgepart.errors.AdbServerError: ...127.0.0.1:9...
    """
    server = AdbServer.parse(adb_server) if adb_server else AdbServer.from_env()
    if start_server and not server.is_running():
        server.start()
    devices = list_devices(server)
    if serial:
        devices = [d for d in devices if d.serial == serial]
    return AdbDevices(server.spec, devices)


def bench_model(
    model: str | os.PathLike[str],
    *,
    delegates: Sequence[str] = ("xnnpack",),
    threads: int | None = None,
    serials: Sequence[str] = (),
    adb_server: str | None = None,
    cpu_mask: str | None = None,
    benchmark_binary: str | None = None,
    remote_binary: str | None = None,
    runs: int | None = None,
    warmup: int | None = None,
    timeout: float = 600.0,
    results_dir: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
) -> BenchReport:
    """Run TFLite's ``benchmark_model`` on a model on Android phones, once per delegate.

    Reports init, first, warm-up and steady-state latency (median and spread), memory and
    where the model really ran (the delegate's verdict from the tool's log).

    Parameters
    ----------
    model
        A local ``.tflite`` file (pushed once per device).
    delegates
        One run per delegate, side by side: ``cpu`` (builtin kernels), ``xnnpack``, ``gpu``,
        ``nnapi``, ``hexagon`` or ``external:DEVICE_PATH``.
    threads
        ``--num_threads`` (default: the tool's).
    serials
        Devices, run in parallel (default ``ANDROID_SERIAL`` or the only device attached).
    adb_server
        ``tcp:HOST:PORT`` (default: the server adb uses).
    cpu_mask
        Pin to CPUs with ``taskset`` (hex, e.g. ``f0``).
    benchmark_binary, remote_binary
        A local ``benchmark_model`` to push, or one already on the device (default
        ``/data/local/tmp/benchmark_model``).
    runs, warmup
        Regular and warm-up runs (``--num_runs`` / ``--warmup_runs`` with minimum seconds 0).
    timeout
        Seconds per run.
    results_dir
        Keep results here and skip runs already completed there (default: a fresh directory
        under ``./edgepart-runs`` named after the settings).
    progress
        ``progress(done, total, label)`` after each run on any device, e.g. an
        :class:`edgepart.Progress` bar.

    Returns
    -------
    BenchReport
        Per device, every run's record; ``failure()`` gives the error of an incomplete run.

    Raises
    ------
    UsageError, ModelFormatError
        Bad arguments or model, before anything runs.
    AdbError
        The adb server or a device cannot be reached.

    Examples
    --------
    No phone is attached to the machines this was built on; with no adb server at the address
    given, the report says so (``failure()`` is what the CLI raises):

    >>> import tempfile, edgepart
    >>> report = edgepart.bench_model("examples/models/mobilenet_v2.tflite",
    ...                               delegates=["cpu", "gpu"], adb_server="tcp:127.0.0.1:9",
    ...                               results_dir=tempfile.mkdtemp())
    >>> print(report.failure())  # doctest: +ELLIPSIS
    cannot reach the adb server at tcp:127.0.0.1:9 (Connection refused): start it with ...
    """
    return _bench_model(
        model,
        delegates=[parse_delegate(d) for d in delegates],
        threads=threads,
        progress=progress,
        **_common(
            serials,
            adb_server,
            cpu_mask,
            benchmark_binary,
            remote_binary,
            runs,
            warmup,
            timeout,
            results_dir,
        ),
    )


def bench_bundle(
    bundle: str | os.PathLike[str],
    *,
    delegate_libraries: Mapping[str, str] | None = None,
    threads: int | None = None,
    serials: Sequence[str] = (),
    adb_server: str | None = None,
    cpu_mask: str | None = None,
    benchmark_binary: str | None = None,
    remote_binary: str | None = None,
    runs: int | None = None,
    warmup: int | None = None,
    timeout: float = 600.0,
    results_dir: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
) -> BenchReport:
    """Run ``benchmark_model`` on every partition of a bundle on Android phones, each with the
    delegate its plan assigns, beside the plan's predictions.

    A partition whose delegate the tool cannot apply on the phone runs on the CPU instead and
    is reported as such.

    Parameters
    ----------
    bundle
        A bundle directory.
    delegate_libraries
        Delegate name -> external delegate library on the device (an absolute device path,
        e.g. ``{"edgetpu": "/data/local/tmp/libedgetpu.so.1"}``).
    threads, serials, adb_server, cpu_mask, benchmark_binary, remote_binary, runs, warmup, \
timeout, results_dir, progress
        As for :func:`bench_model`.

    Returns
    -------
    BenchReport
        Per device and partition: status, processor, delegate, what it ran with, median and
        spread, prediction and their ratio (``extra["partitions"]``), and totals.

    Raises
    ------
    BundleError
        The bundle is missing, incomplete or corrupted (checked before anything runs).
    UsageError
        Bad arguments.
    AdbError
        The adb server or a device cannot be reached.

    Examples
    --------
    >>> import tempfile, edgepart
    >>> out = tempfile.mkdtemp()
    >>> _ = edgepart.compile("examples/models/mobilenet_v2.tflite", "pixel8").save(out + "/b")
    >>> report = edgepart.bench_bundle(out + "/b", adb_server="tcp:127.0.0.1:9",
    ...                                results_dir=out + "/runs")
    >>> rows = report.extra["partitions"]["(default device)"]
    >>> [(p["id"], p["status"], p["delegate"]) for p in rows]
    [('p0', 'not run', 'xnnpack')]
    >>> print(report.failure())  # doctest: +ELLIPSIS
    cannot reach the adb server at tcp:127.0.0.1:9 (Connection refused): start it with ...
    """
    libs = dict(delegate_libraries or {})
    for name, path in libs.items():
        if not name or not str(path).startswith("/"):
            raise UsageError(
                f"delegate library {name}={path!r}: give an absolute device path, e.g. "
                "edgetpu=/data/local/tmp/libedgetpu.so.1"
            )
    return _bench_bundle(
        bundle,
        threads=threads,
        libraries=libs,
        progress=progress,
        **_common(
            serials,
            adb_server,
            cpu_mask,
            benchmark_binary,
            remote_binary,
            runs,
            warmup,
            timeout,
            results_dir,
        ),
    )


def profile_phone(
    model: str | os.PathLike[str],
    *,
    delegates: Sequence[str] = ("xnnpack",),
    threads: int = 1,
    op_output: str = "auto",
    statistic: str = "p10",
    processor: str | None = None,
    output: str | os.PathLike[str] | None = None,
    serials: Sequence[str] = (),
    adb_server: str | None = None,
    cpu_mask: str | None = None,
    benchmark_binary: str | None = None,
    remote_binary: str | None = None,
    runs: int | None = None,
    warmup: int | None = None,
    timeout: float = 600.0,
    results_dir: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
) -> tuple[BenchReport, LatencyTable]:
    """Profile a model per op on Android phones with ``benchmark_model``, written as a latency
    table in the same format as :func:`edgepart.profile_host` writes.

    Parameters
    ----------
    model
        A local ``.tflite`` file.
    delegates
        One profile per delegate (a processor of the table each): as for :func:`bench_model`.
    threads
        ``--num_threads``.
    op_output
        Per-op output to request: ``"auto"`` (proto where the binary supports it, else the
        stdout table), ``"proto"``, ``"csv"`` or ``"text"``.
    statistic
        The statistic an entry's value is taken from (``"p10"``, ``"median"``, ``"min"``).
    processor
        The processor name in the table (default: from the device and delegate).
    output
        Write the latency table here too (it is always kept in ``results_dir``).
    serials, adb_server, cpu_mask, benchmark_binary, remote_binary, runs, warmup, timeout, \
results_dir, progress
        As for :func:`bench_model`.

    Returns
    -------
    tuple of BenchReport and LatencyTable
        The runs and the table.

    Raises
    ------
    UsageError, ModelFormatError
        Bad arguments or model, before anything runs.
    AdbError
        The adb server or a device cannot be reached.
    BenchmarkOutputError
        Every run finished but none gave a usable per-op profile.

    Examples
    --------
    >>> import tempfile, edgepart
    >>> report, table = edgepart.profile_phone("examples/models/mobilenet_v2.tflite",
    ...                                        adb_server="tcp:127.0.0.1:9",
    ...                                        results_dir=tempfile.mkdtemp())
    >>> table.processors, print(report.failure())  # doctest: +ELLIPSIS
    cannot reach the adb server at tcp:127.0.0.1:9 (Connection refused): start it with ...
    ({}, None)
    """
    report, table = profile_model_adb(
        model,
        delegates=[parse_delegate(d) for d in delegates],
        threads=threads,
        op_output=op_output,
        statistic=statistic,
        processor=processor,
        output=output,
        progress=progress,
        **_common(
            serials,
            adb_server,
            cpu_mask,
            benchmark_binary,
            remote_binary,
            runs,
            warmup,
            timeout,
            results_dir,
        ),
    )
    return report, table


class _Common(TypedDict):
    serials: list[str]
    settings: RunSettings
    results_dir: str | os.PathLike[str] | None
    resume: bool
    server: AdbServer | None


def _common(
    serials: Sequence[str],
    adb_server: str | None,
    cpu_mask: str | None,
    benchmark_binary: str | None,
    remote_binary: str | None,
    runs: int | None,
    warmup: int | None,
    timeout: float,
    results_dir: str | os.PathLike[str] | None,
) -> _Common:
    """The device, binary and run settings every phone command shares."""
    settings = RunSettings(
        binary=BinarySpec(benchmark_binary, remote_binary),
        cpu_mask=cpu_mask,
        runs=runs,
        warmup=warmup,
        timeout=timeout,
    )
    return {
        "serials": list(serials),
        "settings": settings,
        "results_dir": results_dir,
        "resume": results_dir is not None,
        "server": AdbServer.parse(adb_server) if adb_server else None,
    }
