"""Talking to the adb server: where it is, its smart-socket protocol, and the ``adb`` binary.

The adb server (``adb start-server``) owns the devices; clients reach it over TCP with
"smart socket" requests: four hex digits of length, the request, then ``OKAY`` or ``FAIL`` plus a
hex-length message. ``host:`` requests are answered by the server itself; after
``host:transport:SERIAL`` the socket is switched to the device and the next request opens a
device service (``shell,v2,raw:...``). edgepart speaks that protocol itself for queries and shell
commands (so every read has a deadline and a server that is down is reported rather than
silently started) and runs the real ``adb`` binary for file transfer.

Where the server is, in adb's own order of precedence: ``ADB_SERVER_SOCKET`` (``tcp:PORT`` or
``tcp:HOST:PORT``), else ``ANDROID_ADB_SERVER_ADDRESS`` / ``ANDROID_ADB_SERVER_PORT``, else
``127.0.0.1:5037``.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from edgepart.android.devinfo import parse_devices
from edgepart.errors import (
    AdbError,
    AdbServerError,
    CommandTimeoutError,
    DeviceDisconnectedError,
    DeviceNotFoundError,
    DeviceUnauthorizedError,
    UsageError,
)

__all__ = ["DEFAULT_PORT", "AdbServer", "adb_binary", "classify_failure"]

log = logging.getLogger(__name__)

DEFAULT_PORT = 5037
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def adb_binary() -> str:
    """Path of the ``adb`` client: the one on ``PATH``, else the one bundled with ``adbutils``.

    Raises
    ------
    AdbServerError
        If neither exists.
    """
    found = shutil.which("adb")
    if found:
        return found
    try:
        import adbutils  # heavy (~0.1 s to import): loaded only when adb is not on PATH

        bundled = str(adbutils.adb_path())
    except Exception as err:  # adbutils raises its own error types when it has no binary
        raise AdbServerError(
            f"no adb binary found on PATH or in adbutils ({err}): install Android platform-tools "
            "or `pip install adbutils`, then retry"
        ) from err
    return bundled


def classify_failure(message: str, serial: str | None, server: AdbServer) -> AdbError:
    """Turn an adb server ``FAIL`` message (or adb client stderr) into an edgepart error."""
    text = " ".join(message.split())
    low = text.lower()
    who = f"device {serial}" if serial else "the device"
    if "unauthorized" in low:
        return DeviceUnauthorizedError(
            f"{who} is unauthorized: accept the USB debugging prompt on the phone (revoke USB "
            "debugging authorizations and replug if no prompt shows), then retry"
        )
    if "offline" in low:
        return DeviceDisconnectedError(
            f"{who} is offline: replug the cable (or `adb connect` again for Wi-Fi devices) "
            "and wait until `adb devices` lists it as 'device', then retry"
        )
    if "not found" in low or "no devices" in low:
        return DeviceNotFoundError(
            f"{who} is not attached to the adb server at {server.spec}: check `adb devices`, "
            "the cable, or `adb connect HOST:PORT`, then retry"
        )
    return AdbError(f"adb server at {server.spec} refused the request for {who}: {text}")


@dataclass(frozen=True)
class AdbServer:
    """Address of an adb server and the smart-socket requests edgepart sends to it."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT

    # --- where ---------------------------------------------------------------------------------
    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AdbServer:
        """The server adb itself would use, from ``ADB_SERVER_SOCKET`` and friends."""
        env = os.environ if env is None else env
        spec = env.get("ADB_SERVER_SOCKET", "").strip()
        if spec:
            return cls.parse(spec, source="ADB_SERVER_SOCKET")
        host = env.get("ANDROID_ADB_SERVER_ADDRESS", "").strip() or "127.0.0.1"
        port_text = env.get("ANDROID_ADB_SERVER_PORT", "").strip() or str(DEFAULT_PORT)
        return cls(host, _port(port_text, "ANDROID_ADB_SERVER_PORT"))

    @classmethod
    def parse(cls, spec: str, source: str = "--adb-server") -> AdbServer:
        """Parse ``tcp:PORT``, ``tcp:HOST:PORT`` or ``HOST:PORT``."""
        body = spec[4:] if spec.startswith("tcp:") else spec
        if ":" not in body and spec.startswith("tcp:"):
            return cls("127.0.0.1", _port(body, source))
        host, sep, port_text = body.rpartition(":")
        if not sep or not host or "/" in body or spec.startswith(("local", "vsock", "acceptfd")):
            raise UsageError(
                f"{source}={spec!r} is not a TCP address: use tcp:PORT or tcp:HOST:PORT"
            )
        return cls(host.strip("[]"), _port(port_text, source))

    @property
    def spec(self) -> str:
        return f"tcp:{self.host}:{self.port}"

    @property
    def is_local(self) -> bool:
        return self.host in _LOCAL_HOSTS

    # --- smart sockets -------------------------------------------------------------------------
    def connect(self, timeout: float = 5.0) -> socket.socket:
        """Open a TCP connection to the server.

        Raises
        ------
        AdbServerError
            If nothing answers at the address (the server is not running).
        """
        try:
            sock = socket.create_connection((self.host, self.port), timeout=timeout)
        except OSError as err:
            reason = err.strerror or type(err).__name__
            raise AdbServerError(
                f"cannot reach the adb server at {self.spec} ({reason}): start it with "
                "`adb start-server` (or `edgepart devices --start-server`), or point "
                "ADB_SERVER_SOCKET at a running server, then retry"
            ) from err
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def request(self, sock: socket.socket, service: str, serial: str | None = None) -> None:
        """Send one request on ``sock`` and consume ``OKAY``; raise the mapped error on ``FAIL``."""
        raw = service.encode("utf-8")
        if len(raw) > 0xFFFF:
            raise UsageError(f"adb request of {len(raw)} bytes is longer than adb's 65535 limit")
        sock.sendall(f"{len(raw):04x}".encode() + raw)
        status = _recv_exact(sock, 4, self)
        if status == b"OKAY":
            return
        if status == b"FAIL":
            raise classify_failure(self._read_block(sock), serial, self)
        raise AdbServerError(f"adb server at {self.spec} answered {status!r} to {service!r}")

    def _read_block(self, sock: socket.socket) -> str:
        length = int(_recv_exact(sock, 4, self), 16)
        return _recv_exact(sock, length, self).decode("utf-8", "replace")

    def query(self, service: str, timeout: float = 5.0, serial: str | None = None) -> str:
        """Run a ``host:`` request that answers with one length-prefixed string."""
        with self.connect(timeout) as sock:
            try:
                self.request(sock, service, serial)
                return self._read_block(sock)
            except TimeoutError as err:
                raise AdbServerError(
                    f"adb server at {self.spec} did not answer {service!r} within {timeout:g} s: "
                    "restart it with `adb kill-server && adb start-server`, then retry"
                ) from err

    def open_service(self, serial: str, service: str, timeout: float) -> socket.socket:
        """Connect to the device ``serial`` and open ``service`` on it; the socket is the stream.

        Raises
        ------
        CommandTimeoutError
            If the device does not accept the service within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        sock = self.connect(max(timeout, 0.5))
        try:
            self.request(sock, f"host:transport:{serial}", serial)
            sock.settimeout(max(deadline - time.monotonic(), 0.01))
            self.request(sock, service, serial)
        except TimeoutError as err:
            sock.close()
            raise CommandTimeoutError(
                f"device {serial} did not open {service.split(':')[0]!r} within {timeout:g} s: "
                "its adb daemon is not responding; replug it or run `adb reconnect`, then retry"
            ) from err
        except BaseException:
            sock.close()
            raise
        return sock

    def version(self, timeout: float = 5.0) -> int:
        """The server's protocol version (41 for every adb since 2019)."""
        return int(self.query("host:version", timeout), 16)

    def is_running(self, timeout: float = 2.0) -> bool:
        try:
            self.version(timeout)
        except AdbServerError:
            return False
        return True

    def devices_text(self, timeout: float = 5.0) -> str:
        """The server's ``host:devices-l`` listing."""
        return self.query("host:devices-l", timeout)

    def state(self, serial: str, timeout: float = 3.0) -> str | None:
        """The device's state (``device``, ``offline``, ``unauthorized``...), None if unlisted."""
        found = [d for d in parse_devices(self.devices_text(timeout)) if d.serial == serial]
        return found[0].state if found else None

    def features(self, serial: str, timeout: float = 5.0) -> frozenset[str]:
        """Feature names the device announced in its banner (``shell_v2``, ``stat_v2``...)."""
        text = self.query(f"host-serial:{serial}:features", timeout, serial)
        return frozenset(f for f in text.strip().split(",") if f)

    # --- the adb binary ------------------------------------------------------------------------
    def adb_env(self) -> dict[str, str]:
        """Environment for the ``adb`` binary so it talks to this server and no other."""
        env = {k: v for k, v in os.environ.items() if k not in ("ANDROID_SERIAL",)}
        env.pop("ANDROID_ADB_SERVER_ADDRESS", None)
        env.pop("ANDROID_ADB_SERVER_PORT", None)
        env["ADB_SERVER_SOCKET"] = self.spec
        return env

    def run_adb(
        self, args: Sequence[str], timeout: float, serial: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the ``adb`` client against this server; the client is killed on timeout."""
        argv = [adb_binary(), *(["-s", serial] if serial else []), *args]
        log.debug("running %s", argv)
        try:
            return subprocess.run(
                argv,
                env=self.adb_env(),
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired as err:
            raise CommandTimeoutError(
                f"`adb {' '.join(args)}` did not finish within {timeout:g} s and was stopped: "
                "check the device connection or raise the timeout, then retry"
            ) from err

    def start(self, timeout: float = 30.0) -> None:
        """Start a server at this (local) address with ``adb start-server``.

        Raises
        ------
        UsageError
            If the address is not on this computer.
        AdbServerError
            If the server does not come up.
        """
        if not self.is_local:
            raise UsageError(f"cannot start an adb server on remote host {self.host}")
        env = self.adb_env()
        env["ADB_SERVER_SOCKET"] = f"tcp:{self.port}"  # the local form is the one adb may start
        try:
            proc = subprocess.run(
                [adb_binary(), "start-server"],
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired as err:
            raise AdbServerError(f"`adb start-server` did not finish within {timeout:g} s") from err
        if proc.returncode != 0 or not self.is_running():
            detail = " ".join(proc.stderr.split()) or f"exit status {proc.returncode}"
            raise AdbServerError(
                f"could not start the adb server at {self.spec}: {detail}; run "
                "`adb start-server` by hand to see why"
            )


def _port(text: str, source: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 < port < 65536:
        raise UsageError(f"{source}: {text!r} is not a TCP port (1-65535)")
    return port


def _recv_exact(sock: socket.socket, size: int, server: AdbServer) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise AdbServerError(
                f"adb server at {server.spec} closed the connection mid-reply: it may have "
                "crashed or been killed; restart it with `adb start-server`, then retry"
            )
        data += chunk
    return bytes(data)
