"""Android devices through the real adb server: discovery, push, pull, shell, checks.

With a phone attached (not run as a test: it needs one)::

    dev = Device()                         # ANDROID_SERIAL, or the only attached device
    with dev.make_workdir() as wd:         # /data/local/tmp/edgepart-XXXX, always removed
        model = wd.push("model.tflite")
        res = dev.shell(["ls", "-l", model], timeout=10)

The server is the one adb itself would use (``ADB_SERVER_SOCKET``, ``ANDROID_ADB_SERVER_PORT``;
see :mod:`edgepart.android.server`) unless ``server=`` is given; the device is ``serial=``, else
``ANDROID_SERIAL``, else the only one attached. Queries and shell commands speak the server's
smart-socket protocol; push and pull run the ``adb`` binary. Every call has a timeout, and every
failure is an :class:`~edgepart.errors.AdbError` subclass with a one-line what/how-to-fix message.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from edgepart.android.devinfo import DeviceInfo, info_from_props, parse_devices, parse_getprop
from edgepart.android.server import AdbServer, classify_failure
from edgepart.android.shell import CommandResult, display, run_shell
from edgepart.android.workdir import DEFAULT_REMOTE_BASE, RemoteWorkdir
from edgepart.errors import (
    AdbError,
    AdbServerError,
    DeviceDisconnectedError,
    DeviceNotFoundError,
    RemoteBinaryError,
    RemoteCommandError,
    UsageError,
)

__all__ = [
    "CommandResult",
    "Device",
    "DeviceInfo",
    "list_devices",
    "parse_devices",
    "parse_getprop",
]

log = logging.getLogger(__name__)


def list_devices(
    server: AdbServer | None = None, *, details: bool = True, timeout: float = 10.0
) -> list[DeviceInfo]:
    """All devices attached to the adb server, sorted by serial.

    Parameters
    ----------
    server
        Defaults to :meth:`AdbServer.from_env`.
    details
        Read model, SoC, Android version, SDK and ABI from each usable device's properties.
    timeout
        Seconds allowed for each device's property query.

    Raises
    ------
    AdbServerError
        If the server is not running (it is never started implicitly).
    """
    server = server or AdbServer.from_env()
    entries = sorted(parse_devices(server.devices_text()), key=lambda d: d.serial)
    if not details:
        return entries
    out = []
    for entry in entries:
        if entry.state == "device":
            try:
                props = parse_getprop(run_shell(server, entry.serial, ["getprop"], timeout).stdout)
                entry = info_from_props(entry, props)
            except AdbError as err:
                log.warning("could not read properties of %s: %s", entry.serial, err)
        out.append(entry)
    return out


class Device:
    """One usable device (state ``device``) on an adb server.

    The constructor picks and checks the device.

    Raises
    ------
    AdbServerError
        The server is not running.
    DeviceNotFoundError
        No device, or not ``serial``, is attached.
    DeviceUnauthorizedError, DeviceDisconnectedError
        The device has not accepted this computer's key, or is offline.
    UsageError
        Several devices are attached and none was chosen.
    """

    def __init__(self, serial: str | None = None, *, server: AdbServer | None = None) -> None:
        self.server = server or AdbServer.from_env()
        self.serial = _choose(self.server, serial or os.environ.get("ANDROID_SERIAL") or None)
        features = self.server.features(self.serial)
        if "shell_v2" not in features:
            raise AdbError(
                f"device {self.serial} lacks adb's shell protocol v2 (needs Android 7.0+), which "
                "edgepart needs for exit statuses and separate stderr: use a newer device"
            )
        self.features = features

    def __repr__(self) -> str:
        return f"Device({self.serial!r}, server={self.server.spec!r})"

    # --- commands ------------------------------------------------------------------------------
    def shell(
        self,
        argv: Sequence[str],
        timeout: float = 60.0,
        *,
        cwd: str | None = None,
        check: bool = False,
    ) -> CommandResult:
        """Run ``argv`` (quoted argument by argument, never pasted) and wait up to ``timeout`` s.

        ``argv[0]`` is executed (``exec``), so it must be a program, not a shell builtin; for
        shell syntax pass a constant script and the data as arguments:
        ``["sh", "-c", 'cat "$1" | wc -l', "sh", path]``.

        With ``check=True`` an exit status of 126/127 raises :class:`RemoteBinaryError` and any
        other non-zero status :class:`RemoteCommandError`. Timeouts raise
        :class:`CommandTimeoutError` after killing the remote process.
        """
        result = run_shell(self.server, self.serial, argv, timeout, cwd)
        if check and not result.ok:
            last = (result.stderr.strip().splitlines() or ["no stderr"])[-1]
            if result.exit_code in (126, 127):
                raise RemoteBinaryError(
                    f"{result.argv[0]} could not be executed on {self.serial} (exit "
                    f"{result.exit_code}: {last}): push it and make it executable, then retry"
                )
            raise RemoteCommandError(
                f"`{display(result.argv)}` failed on {self.serial} with exit status "
                f"{result.exit_code}: {last}"
            )
        return result

    def getprop(self, timeout: float = 10.0) -> dict[str, str]:
        """All system properties."""
        return parse_getprop(self.shell(["getprop"], timeout, check=True).stdout)

    def info(self, timeout: float = 10.0) -> DeviceInfo:
        """Model, SoC, Android version, SDK and ABI of this device."""
        return info_from_props(DeviceInfo(self.serial, "device"), self.getprop(timeout))

    def exists(self, remote: str, timeout: float = 10.0) -> bool:
        """Whether ``remote`` exists on the device."""
        return self._test('[ -e "$1" ]', remote, timeout)

    def file_is_executable(self, remote: str, timeout: float = 10.0) -> bool:
        """Whether ``remote`` is a regular file the shell user may execute."""
        return self._test('[ -f "$1" ] && [ -x "$1" ]', remote, timeout)

    def check_executable(self, remote: str, timeout: float = 10.0) -> None:
        """Raise :class:`RemoteBinaryError` saying why ``remote`` cannot be run, if it cannot."""
        script = (
            'if [ ! -e "$1" ]; then echo missing; elif [ ! -f "$1" ]; then echo notfile; '
            'elif [ ! -x "$1" ]; then echo noexec; else echo ok; fi'
        )
        verdict = self.shell(["sh", "-c", script, "sh", remote], timeout, check=True).stdout
        verdict = verdict.strip()
        if verdict == "missing":
            raise RemoteBinaryError(
                f"{remote} does not exist on {self.serial}: push it (give the local binary's "
                "path), then retry"
            )
        if verdict == "notfile":
            raise RemoteBinaryError(
                f"{remote} on {self.serial} is not a regular file: give the path of the binary "
                "itself, then retry"
            )
        if verdict == "noexec":
            raise RemoteBinaryError(
                f"{remote} on {self.serial} is not executable: run `adb shell chmod 755 {remote}` "
                "(binaries edgepart pushes are made executable), then retry"
            )

    def _test(self, script: str, remote: str, timeout: float) -> bool:
        return self.shell(["sh", "-c", script, "sh", remote], timeout).exit_code == 0

    # --- files ---------------------------------------------------------------------------------
    def push(
        self,
        local: str | os.PathLike[str],
        remote: str,
        timeout: float = 300.0,
        *,
        executable: bool = False,
    ) -> None:
        """Copy ``local`` to the absolute device path ``remote`` (parents are created)."""
        src = Path(local)
        if not src.exists():
            raise UsageError(f"cannot push {src}: no such file or directory on this computer")
        _check_remote(remote)
        proc = self.server.run_adb(
            ["push", str(src.resolve()), remote], timeout, serial=self.serial
        )
        if proc.returncode != 0:
            raise self._transfer_error(f"push of {src} to {remote}", proc.stderr)
        if executable:
            self.shell(["chmod", "755", remote], 30.0, check=True)

    def pull(self, remote: str, local: str | os.PathLike[str], timeout: float = 300.0) -> Path:
        """Copy the device file or directory ``remote`` to ``local``, all or nothing."""
        _check_remote(remote)
        dst = Path(local)
        dst.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{dst.name}.", suffix=".pull", dir=dst.parent))
        try:
            proc = self.server.run_adb(
                ["pull", remote, str(staging.resolve()) + "/"], timeout, serial=self.serial
            )
            if proc.returncode != 0:
                raise self._transfer_error(f"pull of {remote}", proc.stderr)
            got = staging / Path(remote.rstrip("/")).name
            if dst.is_dir() and not dst.is_symlink():
                shutil.rmtree(dst)
            os.replace(got, dst)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return dst

    def _transfer_error(self, what: str, stderr: str) -> AdbError:
        try:
            state = self.server.state(self.serial)
        except AdbServerError as err:
            return err
        if state != "device":
            return DeviceDisconnectedError(
                f"device {self.serial} disconnected during the {what} (now "
                f"{state or 'not listed'}): reconnect it, then retry"
            )
        lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
        errors = [ln for ln in lines if "error" in ln.lower()] or lines or ["no message"]
        detail = errors[0].removeprefix("adb: error: ").removeprefix("adb: ")
        if "unauthorized" in detail:
            return classify_failure(detail, self.serial, self.server)
        return AdbError(
            f"{what} failed on {self.serial}: {detail}: check the path and free space, then retry"
        )

    def make_workdir(
        self, *, base: str = DEFAULT_REMOTE_BASE, name: str | None = None, keep: bool = False
    ) -> RemoteWorkdir:
        """A working directory under ``base``; use ``with`` so it is always removed.

        ``name`` fixes the directory name (e.g. to resume a run); by default a fresh
        ``edgepart-<random>`` is used. ``keep=True`` leaves it in place on exit.
        """
        return RemoteWorkdir(self, base=base, name=name, keep=keep)


def _check_remote(remote: str) -> None:
    if not remote.startswith("/") or "\0" in remote or "\n" in remote:
        raise UsageError(f"device path {remote!r} must be absolute, e.g. /data/local/tmp/x")


def _choose(server: AdbServer, serial: str | None) -> str:
    devices = parse_devices(server.devices_text())
    listed = ", ".join(d.serial for d in devices) or "none"
    if serial is None:
        if not devices:
            raise DeviceNotFoundError(
                f"no Android device is attached to the adb server at {server.spec}: connect a "
                "phone with USB debugging on (or `adb connect HOST:PORT`), then retry"
            )
        if len(devices) > 1:
            raise UsageError(
                f"{len(devices)} devices are attached ({listed}): choose one with --serial or "
                "ANDROID_SERIAL"
            )
        entry = devices[0]
    else:
        found = [d for d in devices if d.serial == serial]
        if not found:
            raise DeviceNotFoundError(
                f"device {serial} is not attached to the adb server at {server.spec} (attached: "
                f"{listed}): check the serial with `edgepart devices`, then retry"
            )
        entry = found[0]
    if entry.state in ("unauthorized", "offline"):
        raise classify_failure(entry.state, entry.serial, server)
    if entry.state != "device":
        raise AdbError(
            f"device {entry.serial} is in state '{entry.state}', not 'device': boot it normally "
            "with USB debugging on, then retry"
        )
    return entry.serial
