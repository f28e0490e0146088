"""Running one command on a device through adb's shell protocol v2, with a hard deadline.

The command line is built from an argument list (:func:`~edgepart.android.quoting.join_argv`)
and wrapped as ``echo MARKER$$ >&2 && exec ARGV``: the shell reports its PID on stderr and then
becomes the program, so the PID is the program's. If the deadline passes, edgepart closes the
stream (adbd then sends SIGHUP) and kills the PID's process group and the PID with SIGKILL from
a second shell, then confirms the process is gone. The shell protocol carries stdout, stderr and
the exit status as separate packets (``shell_protocol.h``); a stream that ends without an exit
packet means the device or the server went away, which is then told apart with the server's
device list.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass

from edgepart.android.quoting import join_argv, quote_arg
from edgepart.android.server import AdbServer
from edgepart.errors import (
    AdbError,
    AdbServerError,
    CommandTimeoutError,
    DeviceDisconnectedError,
    EdgepartError,
)

__all__ = [
    "KILL_TIMEOUT",
    "PID_MARKER",
    "CommandResult",
    "build_command_line",
    "kill_remote",
    "run_shell",
]

log = logging.getLogger(__name__)

PID_MARKER = "__EDGEPART_PID__="
KILL_TIMEOUT = 5.0  # seconds allowed for killing a timed-out command
_STDOUT, _STDERR, _EXIT, _CLOSE_STDIN = 1, 2, 3, 4
_HEADER = struct.Struct("<BI")


@dataclass(frozen=True)
class CommandResult:
    """What a device command produced.

    Attributes
    ----------
    argv
        The argument list that was run.
    stdout, stderr
        Decoded as UTF-8 (invalid bytes replaced); the PID marker line is removed from stderr.
    exit_code
        The program's exit status; ``128 + N`` if signal N killed it; 126/127 when the shell could
        not execute or find it.
    seconds
        Wall time on the host from opening the stream to the exit packet.
    pid
        The program's PID on the device, when the wrapper reported it.
    """

    argv: tuple[str, ...]
    stdout: str
    stderr: str
    exit_code: int
    seconds: float
    pid: int | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def build_command_line(argv: Sequence[str], cwd: str | None = None) -> str:
    """The device command line for ``argv``: quoted, PID-reporting, optionally in ``cwd``."""
    line = f"echo {PID_MARKER}$$ >&2 && exec {join_argv(argv)}"
    return f"cd {quote_arg(cwd)} && {line}" if cwd else line


def display(argv: Sequence[str], limit: int = 120) -> str:
    """A short one-line rendering of a command for messages."""
    text = " ".join(argv).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Packets:
    """Incremental parser of shell-v2 packets; strips the PID marker from stderr."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.exit_code: int | None = None
        self.pid: int | None = None
        self._head_done = False

    def feed(self, data: bytes) -> None:
        self._buf += data
        while len(self._buf) >= _HEADER.size:
            kind, size = _HEADER.unpack_from(self._buf)
            if len(self._buf) < _HEADER.size + size:
                return
            payload = bytes(self._buf[_HEADER.size : _HEADER.size + size])
            del self._buf[: _HEADER.size + size]
            if kind == _STDOUT:
                self.stdout += payload
            elif kind == _STDERR:
                self.stderr += payload
                self._strip_marker()
            elif kind == _EXIT and payload:
                self.exit_code = payload[0]

    def _strip_marker(self) -> None:
        if self._head_done:
            return
        marker = PID_MARKER.encode()
        head = bytes(self.stderr[: len(marker)])
        if not marker.startswith(head) and not head.startswith(marker):
            self._head_done = True  # stderr did not start with the marker (e.g. `cd` failed)
            return
        newline = self.stderr.find(b"\n")
        if newline < 0:
            return  # wait for the rest of the marker line
        text = bytes(self.stderr[len(marker) : newline])
        if head == marker and text.isdigit():
            self.pid = int(text)
            del self.stderr[: newline + 1]
        self._head_done = True


def _exchange(
    server: AdbServer, serial: str, line: str, deadline: float, packets: _Packets
) -> bool:
    """Run ``line`` as a shell-v2 service, feeding ``packets``; True if the deadline passed."""
    sock = server.open_service(serial, f"shell,v2,raw:{line}", deadline - time.monotonic())
    try:
        sock.sendall(_HEADER.pack(_CLOSE_STDIN, 0))  # nothing will come on stdin
        while packets.exit_code is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            sock.settimeout(remaining)
            try:
                data = sock.recv(1 << 16)
            except TimeoutError:
                return True
            except OSError:
                data = b""  # a reset is an end of stream like any other
            if not data:
                break
            packets.feed(data)
    finally:
        sock.close()  # for a command still running, adbd now sends it SIGHUP
    return False


def run_shell(
    server: AdbServer, serial: str, argv: Sequence[str], timeout: float, cwd: str | None = None
) -> CommandResult:
    """Run ``argv`` on device ``serial`` and wait at most ``timeout`` seconds.

    After a timeout, killing the remote process takes at most :data:`KILL_TIMEOUT` more seconds.

    Raises
    ------
    CommandTimeoutError
        The deadline passed; the remote process was killed where possible. ``err.partial``
        holds the :class:`CommandResult` collected so far (``exit_code`` -1).
    DeviceDisconnectedError
        The device went offline or away before the command reported its exit status;
        ``err.partial`` holds the output collected so far.
    AdbError
        Any other adb failure (server down, unauthorized, device not found...).
    """
    args = tuple(argv)
    line = build_command_line(args, cwd)
    started = time.monotonic()
    packets = _Packets()
    timed_out = _exchange(server, serial, line, started + timeout, packets)
    result = CommandResult(
        argv=args,
        stdout=packets.stdout.decode("utf-8", "replace"),
        stderr=packets.stderr.decode("utf-8", "replace"),
        exit_code=-1 if packets.exit_code is None else packets.exit_code,
        seconds=time.monotonic() - started,
        pid=packets.pid,
    )
    if timed_out:
        pid = packets.pid
        if kill_remote(server, serial, pid):
            what = f"the remote process (pid {pid}) was killed"
        else:
            known = f"pid {pid}" if pid is not None else "its pid never arrived"
            what = f"the remote process could not be confirmed killed ({known})"
        err: AdbError = CommandTimeoutError(
            f"`{display(args)}` on {serial} did not finish within {timeout:g} s and {what}: "
            "raise the timeout or find out why it hangs, then retry"
        )
        raise _with_partial(err, result)
    if packets.exit_code is None:
        raise _with_partial(_lost(server, serial, args), result)
    return result


def kill_remote(
    server: AdbServer, serial: str, pid: int | None, timeout: float | None = None
) -> bool:
    """SIGKILL ``pid`` and its process group on the device; True once it is confirmed gone."""
    if pid is None:
        return False
    # adbd starts every shell with setsid(), so the pid leads its own process group; the pid is
    # an int we parsed, so building this constant script by formatting is safe.
    script = (
        f"kill -9 -{pid} 2>/dev/null; kill -9 {pid} 2>/dev/null; "
        f"for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 {pid} 2>/dev/null || exit 0; sleep 0.1; done; "
        "exit 1"
    )
    packets = _Packets()
    try:
        _exchange(server, serial, script, time.monotonic() + (timeout or KILL_TIMEOUT), packets)
    except EdgepartError as err:
        log.warning("could not kill pid %s on %s: %s", pid, serial, err)
        return False
    return packets.exit_code == 0


def _lost(server: AdbServer, serial: str, args: tuple[str, ...]) -> AdbError:
    try:
        state = server.state(serial)
    except AdbServerError:
        return AdbServerError(
            f"the adb server at {server.spec} went away while `{display(args)}` ran on {serial}: "
            "restart it with `adb start-server`, then retry"
        )
    if state != "device":
        return DeviceDisconnectedError(
            f"device {serial} disconnected while running `{display(args)}` (now "
            f"{state or 'not listed'}): reconnect it (cable, or `adb connect` for Wi-Fi), "
            "then retry"
        )
    return AdbError(
        f"the adb stream closed before `{display(args)}` reported its exit status on {serial}: "
        "retry; if it keeps happening, restart the adb server"
    )


def _with_partial(err: AdbError, result: CommandResult) -> AdbError:
    err.partial = result  # type: ignore[attr-defined]
    return err
