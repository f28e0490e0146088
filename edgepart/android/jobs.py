"""What to run on a device: the ``benchmark_model`` binary, shared settings, jobs, raw results.

Plain values, decided before anything touches a device; :class:`~edgepart.android.session.
DeviceSession` applies them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgepart.android.bm_flags import DelegateChoice
from edgepart.android.runstore import file_digest
from edgepart.errors import CommandTimeoutError, UsageError

__all__ = [
    "DEFAULT_REMOTE_BINARY",
    "BinarySpec",
    "Job",
    "RawRun",
    "RunSettings",
]

DEFAULT_REMOTE_BINARY = "/data/local/tmp/benchmark_model"


@dataclass(frozen=True)
class BinarySpec:
    """Where ``benchmark_model`` comes from: a local file to push, or a path on the device."""

    local: str | None = None
    remote: str | None = None

    def __post_init__(self) -> None:
        if self.local and self.remote:
            raise UsageError("give either --benchmark-binary (push) or --remote-binary, not both")
        if self.local and not Path(self.local).is_file():
            raise UsageError(
                f"--benchmark-binary {self.local}: no such file on this computer; give the path "
                "of a benchmark_model built for the phone (e.g. android_aarch64_benchmark_model)"
            )
        if self.remote and not self.remote.startswith("/"):
            raise UsageError(f"--remote-binary {self.remote!r} must be an absolute device path")

    def settings(self) -> dict[str, str]:
        """What identifies the binary in the run settings (pushed file digest, or device path)."""
        if self.local:
            return {"binary_sha256": file_digest(self.local)}
        return {"binary_path": self.remote or DEFAULT_REMOTE_BINARY}


@dataclass(frozen=True)
class RunSettings:
    """Settings shared by every run of one command."""

    binary: BinarySpec = field(default_factory=BinarySpec)
    cpu_mask: str | None = None
    runs: int | None = None
    warmup: int | None = None
    timeout: float = 600.0

    def __post_init__(self) -> None:
        if self.timeout <= 0:
            raise UsageError(f"--timeout {self.timeout:g}: need a positive number of seconds")
        for name in ("runs", "warmup"):
            value = getattr(self, name)
            if value is not None and value < (1 if name == "runs" else 0):
                raise UsageError(f"--{name} {value}: need at least {1 if name == 'runs' else 0}")

    def to_json(self) -> dict[str, Any]:
        return {
            **self.binary.settings(),
            "cpu_mask": self.cpu_mask,
            "runs": self.runs,
            "warmup": self.warmup,
        }


@dataclass(frozen=True)
class Job:
    """One ``benchmark_model`` run on one device.

    ``label`` is unique per device (file names, resume); ``op_profiling`` is ``None`` or one of
    ``auto`` (proto where the binary has it, else the stdout table), ``proto``, ``csv``,
    ``text``; ``runtime_info`` asks for the runtime-info proto where the binary has it.
    """

    label: str
    model: str
    delegate: DelegateChoice
    threads: int | None = None
    op_profiling: str | None = None
    runtime_info: bool = False
    tags: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class RawRun:
    """What one run produced: the command, its output, and the files pulled into the store."""

    job: Job
    argv: tuple[str, ...] = ()
    exit_code: int = -1
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    log: str | None = None
    files: dict[str, str] = field(default_factory=dict)
    remote_files: dict[str, tuple[str, str]] = field(default_factory=dict)
    op_mode: str | None = None
    timeout: CommandTimeoutError | None = None
    unsupported: str | None = None

    @property
    def text(self) -> str:
        return (
            self.stdout
            + ("\n" if self.stdout and not self.stdout.endswith("\n") else "")
            + (self.stderr)
        )
