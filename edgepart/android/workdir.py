"""A working directory on the device that is always removed (``with dev.make_workdir() as wd``)."""

from __future__ import annotations

import logging
import os
import posixpath
import re
import secrets
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from edgepart.errors import AdbError, RemoteCommandError, UsageError

if TYPE_CHECKING:
    from edgepart.android.adb import Device

__all__ = ["DEFAULT_REMOTE_BASE", "RemoteWorkdir"]

log = logging.getLogger(__name__)

DEFAULT_REMOTE_BASE = "/data/local/tmp"
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")


class RemoteWorkdir:
    """A directory ``BASE/NAME`` on a device, created on enter and removed on exit.

    Removal is attempted even when the block raised; if the device is gone by then, the
    failure is logged and kept in :attr:`cleanup_error` so the original error propagates.
    """

    def __init__(
        self,
        device: Device,
        *,
        base: str = DEFAULT_REMOTE_BASE,
        name: str | None = None,
        keep: bool = False,
    ) -> None:
        name = name or f"edgepart-{secrets.token_hex(4)}"
        if not _NAME.match(name) or name in (".", ".."):
            raise UsageError(f"work directory name {name!r} may use only [A-Za-z0-9_.+-]")
        base = posixpath.normpath(base)
        if not base.startswith("/") or base == "/":
            raise UsageError(f"work directory base {base!r} must be an absolute directory below /")
        self.device = device
        self.path = f"{base}/{name}"
        self.keep = keep
        self.created = False
        self.cleanup_error: AdbError | None = None

    def __repr__(self) -> str:
        return f"RemoteWorkdir({self.device.serial!r}, {self.path!r})"

    def create(self) -> RemoteWorkdir:
        """Make the directory (and its parents)."""
        self.device.shell(["mkdir", "-p", self.path], 30.0, check=True)
        self.created = True
        return self

    def __enter__(self) -> RemoteWorkdir:
        return self.create()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.keep:
            return
        try:
            self.cleanup()
        except AdbError as err:
            self.cleanup_error = err
            if kind is None:
                raise
            log.warning("could not remove %s on %s: %s", self.path, self.device.serial, err)

    def cleanup(self, timeout: float = 30.0) -> None:
        """Remove the directory and everything in it; idempotent."""
        result = self.device.shell(["rm", "-rf", self.path], timeout)
        if not result.ok:
            raise RemoteCommandError(
                f"could not remove {self.path} on {self.device.serial} (exit {result.exit_code}: "
                f"{result.stderr.strip()}): remove it with `adb shell rm -rf {self.path}`"
            )
        self.created = False

    def join(self, *parts: str) -> str:
        """The device path of ``parts`` inside this directory (no escaping via ``..``)."""
        path = posixpath.normpath(posixpath.join(self.path, *parts))
        if not path.startswith(self.path + "/"):
            raise UsageError(f"{'/'.join(parts)!r} points outside the work directory {self.path}")
        return path

    def push(
        self,
        local: str | os.PathLike[str],
        name: str | None = None,
        *,
        executable: bool = False,
        timeout: float = 300.0,
    ) -> str:
        """Push ``local`` into the directory as ``name`` (default: its own name).

        Returns the device path of the pushed file.
        """
        remote = self.join(name or Path(local).name)
        self.device.push(local, remote, timeout, executable=executable)
        return remote

    def pull(self, name: str, local: str | os.PathLike[str], timeout: float = 300.0) -> Path:
        """Pull ``name`` from the directory to ``local`` (all or nothing)."""
        return self.device.pull(self.join(name), local, timeout)

    def listdir(self, timeout: float = 30.0) -> list[str]:
        """Names in the directory, sorted."""
        out = self.device.shell(["ls", "-A", self.path], timeout, check=True).stdout
        return sorted(line for line in out.splitlines() if line)
