"""One device's side of a benchmark: work directory, ``benchmark_model``, pushed models, runs.

With a phone attached (not run as a test: it needs one)::

    with DeviceSession(Device(serial), settings, store) as s:
        raw = s.run(Job("xnnpack", "model.tflite", parse_delegate("xnnpack")))

Entering the session reads the device's properties, creates a work directory (named after the
run settings, so a run interrupted by an unplugged cable and resumed later first removes what
the interrupted run left there), pushes ``benchmark_model`` (or checks that the device path
given is an executable file) and reads its ``--help`` to learn which flags it has. Leaving
removes the work directory, also after a failure. Each run's log and pulled files go straight
into the :class:`~edgepart.android.runstore.RunStore`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import TracebackType

from edgepart.android.adb import CommandResult, Device, DeviceInfo
from edgepart.android.bm_flags import (
    BenchmarkOptions,
    build_command,
    flags_from_help,
    tool_delegate,
)
from edgepart.android.jobs import (
    DEFAULT_REMOTE_BINARY,
    BinarySpec,
    Job,
    RawRun,
    RunSettings,
)
from edgepart.android.runstore import RunStore, slug
from edgepart.android.shell import display
from edgepart.android.workdir import RemoteWorkdir
from edgepart.errors import (
    AdbError,
    AdbServerError,
    BenchmarkOutputError,
    CommandTimeoutError,
    DeviceDisconnectedError,
    RemoteBinaryError,
)

__all__ = [
    "DEFAULT_REMOTE_BINARY",
    "BinarySpec",
    "DeviceSession",
    "Job",
    "RawRun",
    "RunSettings",
]

log = logging.getLogger(__name__)

HELP_TIMEOUT = 60.0
PULL_TIMEOUT = 120.0


class DeviceSession:
    """A device prepared for benchmarking (see the module docstring)."""

    def __init__(
        self, device: Device, settings: RunSettings, store: RunStore, *, workdir_name: str
    ) -> None:
        self.device = device
        self.serial = device.serial
        self.settings = settings
        self.store = store
        self.workdir_name = workdir_name
        self.info: DeviceInfo | None = None
        self.workdir: RemoteWorkdir | None = None
        self.binary = ""
        self.flags: frozenset[str] = frozenset()
        self._models: dict[str, str] = {}

    # --- lifecycle -----------------------------------------------------------------------------
    def __enter__(self) -> DeviceSession:
        self.info = self.device.info()
        workdir = self.device.make_workdir(name=self.workdir_name)
        workdir.cleanup()  # what an interrupted earlier run left there is stale
        self.workdir = workdir.create()
        try:
            self.binary = self._binary()
            self.flags = self._flags()
        except BaseException as err:
            self._remove_workdir(err)
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(exc)

    def close(self, exc: BaseException | None = None) -> None:
        """Remove the work directory; with ``exc`` (the run failed) a failure is only logged."""
        self._remove_workdir(exc)

    def _remove_workdir(self, exc: BaseException | None) -> None:
        if self.workdir is None:
            return
        try:
            self.workdir.cleanup()
        except AdbError as err:
            if exc is None:
                raise
            # the device is gone: the resumed run reuses (and then removes) the same directory
            log.warning("could not remove %s on %s: %s", self.workdir.path, self.serial, err)

    def _binary(self) -> str:
        assert self.workdir is not None
        spec = self.settings.binary
        if spec.local:
            return self.workdir.push(spec.local, "benchmark_model", executable=True)
        remote = spec.remote or DEFAULT_REMOTE_BINARY
        try:
            self.device.check_executable(remote)
        except RemoteBinaryError as err:
            if spec.remote:
                raise
            if "does not exist" in str(err):
                raise RemoteBinaryError(
                    f"{remote} does not exist on {self.serial} (the default benchmark_model "
                    "path): pass --benchmark-binary LOCAL_PATH to push one, or --remote-binary "
                    "DEVICE_PATH for one already on the device"
                ) from None
            raise
        return remote

    def _flags(self) -> frozenset[str]:
        res = self.device.shell([self.binary, "--help"], HELP_TIMEOUT)
        if res.exit_code in (126, 127):
            last = (res.stderr.strip().splitlines() or ["no message"])[-1]
            abi = self.info.abi if self.info else None
            raise RemoteBinaryError(
                f"{self.binary} could not be executed on {self.serial} (exit {res.exit_code}: "
                f"{last}): give a benchmark_model built for {abi or 'the device ABI'}"
            )
        try:
            return flags_from_help(res.stdout + "\n" + res.stderr)
        except BenchmarkOutputError:
            first = (res.stdout + res.stderr).strip().splitlines()[:1] or ["no output"]
            raise RemoteBinaryError(
                f"{self.binary} on {self.serial} does not look like TFLite's benchmark_model: "
                f"its --help lists no --graph flag (first line: {first[0][:80]!r})"
            ) from None

    # --- runs ----------------------------------------------------------------------------------
    def remote_model(self, local: str) -> str:
        """Push ``local`` once into the work directory; returns its device path."""
        assert self.workdir is not None
        if local not in self._models:
            used = set(self._models.values())
            stem = slug(Path(local).name.removesuffix(".tflite"))
            name, k = f"{stem}.tflite", 1
            while self.workdir.join(name) in used:
                name, k = f"{stem}-{k}.tflite", k + 1
            self._models[local] = self.workdir.push(local, name)
        return self._models[local]

    def run(self, job: Job) -> RawRun:
        """Run ``job``; timeouts are returned in :attr:`RawRun.timeout` (the device is usable).

        Raises
        ------
        DeviceDisconnectedError, AdbServerError, DeviceUnauthorizedError, ...
            When the device or the server is lost; the partial log is saved first.
        """
        assert self.workdir is not None
        raw = RawRun(job)
        missing = [f for f in tool_delegate(job.delegate).flag_names if f not in self.flags]
        if missing:
            raw.unsupported = (
                f"this benchmark_model has no --{missing[0]} flag (built without the "
                f"{job.delegate.kind} delegate), so it would silently run on the CPU"
            )
            return raw
        opts = self._options(job, raw)
        raw.argv = tuple(build_command(self.binary, opts, supported_flags=self.flags))
        log.info("%s: %s", self.serial, display(raw.argv))
        try:
            res = self.device.shell(raw.argv, self.settings.timeout, cwd=self.workdir.path)
        except CommandTimeoutError as err:
            raw.timeout = err
            self._absorb(raw, getattr(err, "partial", None))
            self._save_log(raw)
            return raw
        except AdbError as err:
            self._absorb(raw, getattr(err, "partial", None))
            self._save_log(raw)
            raise
        self._absorb(raw, res)
        self._save_log(raw)
        if res.exit_code == 0:
            self._pull(raw)
        return raw

    def _options(self, job: Job, raw: RawRun) -> BenchmarkOptions:
        assert self.workdir is not None
        s = self.settings
        mode = job.op_profiling
        if mode == "auto":
            mode = "proto" if "op_profiling_output_mode" in self.flags else "text"
        raw.op_mode = mode
        out_file = runtime = None
        if mode in ("proto", "csv"):
            out_file = self._remote_file(
                raw, "op_profile", ".ops.pb" if mode == "proto" else ".ops.csv"
            )
        if job.runtime_info and "export_model_runtime_info" in self.flags:
            runtime = self._remote_file(raw, "runtime_info", ".runtime.pb")
        return BenchmarkOptions(
            graph=self.remote_model(job.model),
            delegate=job.delegate,
            num_threads=job.threads,
            warmup_runs=s.warmup,
            warmup_min_secs=0.0 if s.warmup is not None else None,
            num_runs=s.runs,
            min_secs=0.0 if s.runs is not None else None,
            op_profiling=mode is not None,
            op_profiling_mode="stdout" if mode in (None, "text") else mode,
            op_profiling_output_file=out_file,
            runtime_info_output_file=runtime,
            cpu_mask=s.cpu_mask,
        )

    def _remote_file(self, raw: RawRun, role: str, suffix: str) -> str:
        assert self.workdir is not None
        remote = self.workdir.join(slug(raw.job.label) + suffix)
        raw.remote_files[role] = (remote, suffix)
        return remote

    @staticmethod
    def _absorb(raw: RawRun, res: CommandResult | None) -> None:
        if res is None:
            return
        raw.exit_code, raw.stdout, raw.stderr, raw.seconds = (
            res.exit_code,
            res.stdout,
            res.stderr,
            res.seconds,
        )

    def _save_log(self, raw: RawRun) -> None:
        head = f"$ {' '.join(raw.argv)}\n# exit {raw.exit_code} after {raw.seconds:.2f} s\n"
        rel = self.store.run_file(self.serial, raw.job.label, ".log")
        raw.log = self.store.write_file(rel, head + raw.text)

    def _pull(self, raw: RawRun) -> None:
        for role, (remote, suffix) in sorted(raw.remote_files.items()):
            rel = self.store.run_file(self.serial, raw.job.label, suffix)
            try:
                self.device.pull(remote, self.store.abspath(rel), PULL_TIMEOUT)
            except (DeviceDisconnectedError, AdbServerError):
                raise
            except AdbError as err:
                log.warning("%s: %s was not written by the run: %s", self.serial, remote, err)
                continue
            raw.files[role] = rel
