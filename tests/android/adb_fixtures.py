"""Helpers for the adb tests: a private real adb server and emulated devices behind it.

Tests never touch a user's adb server or keys: the server runs in the foreground as a child of
the test process (``adb -L tcp:PORT nodaemon server``) on a free port with ``HOME`` pointing at a
temporary folder (so its ``~/.android/adbkey`` is fresh), USB, mDNS and emulator-port scanning
off. Teardown asks it to ``kill-server`` and, failing that, kills it by its PID.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from adb_emulator import AdbEmulator

from edgepart.android.server import AdbServer, adb_binary


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_is_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def isolated_env(home: Path) -> dict[str, str]:
    """Environment for a private adb server/client that cannot see the user's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ADB_", "ANDROID_"))}
    env.update(HOME=str(home), ADB_MDNS="0", ADB_LIBUSB="0", ADB_USB="0", ADB_EMU="0")
    return env


@dataclass
class AdbServerHandle:
    """A private adb server started for the tests."""

    server: AdbServer
    adb: str
    env: dict[str, str]
    proc: subprocess.Popen[bytes]
    log: Path

    def run(self, *args: str, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
        """Run the real adb client against this server."""
        env = dict(self.env, ADB_SERVER_SOCKET=self.server.spec)
        return subprocess.run(
            [self.adb, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    def state(self, serial: str) -> str | None:
        return self.server.state(serial)


@contextlib.contextmanager
def private_adb_server(workdir: Path) -> Iterator[AdbServerHandle]:
    """Start ``adb nodaemon server`` on a free port; always stopped on exit."""
    home = workdir / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = isolated_env(home)
    port = free_port()
    adb = adb_binary()
    log = workdir / "adb-server.log"
    with open(log, "wb") as log_file:
        proc = subprocess.Popen(
            [adb, "-L", f"tcp:{port}", "nodaemon", "server"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    handle = AdbServerHandle(AdbServer("127.0.0.1", port), adb, env, proc, log)
    try:
        deadline = time.monotonic() + 20
        while not handle.server.is_running(timeout=1.0):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"adb server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.05)
        yield handle
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            handle.run("kill-server", timeout=5)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@dataclass
class EmulatedDevice:
    """An emulated phone connected to a private adb server."""

    serial: str
    emulator: AdbEmulator
    adb: AdbServerHandle
    sandbox: Path
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def server(self) -> AdbServer:
        return self.adb.server

    def host_path(self, device_path: str) -> Path:
        path = self.emulator.host_path(device_path)
        assert path is not None
        return path

    def wait_state(self, want: str | None, timeout: float = 60.0) -> None:
        """Poll adb until the device is in state ``want`` (adb reconnects with backoff, which
        takes longer on a loaded machine; the timeout only bounds a hang)."""
        deadline = time.monotonic() + timeout
        while self.adb.state(self.serial) != want:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.serial} stayed {self.adb.state(self.serial)!r}, wanted {want!r}"
                )
            time.sleep(0.05)

    def wait_no_processes(self, timeout: float = 5.0) -> list[int]:
        deadline = time.monotonic() + timeout
        while self.emulator.live_processes() and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.emulator.live_processes()


@contextlib.contextmanager
def emulated_device(
    adb: AdbServerHandle, sandbox: Path, **emulator_args: Any
) -> Iterator[EmulatedDevice]:
    """Start an :class:`AdbEmulator`, ``adb connect`` to it, and tear both down on exit."""
    emulator = AdbEmulator(sandbox, **emulator_args).start()
    device = EmulatedDevice(emulator.serial, emulator, adb, sandbox)
    try:
        out = adb.run("connect", emulator.serial)
        assert out.returncode == 0, out.stderr
        device.wait_state("unauthorized" if emulator.unauthorized else "device")
        yield device
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            adb.run("disconnect", emulator.serial, timeout=5)
        emulator.stop()
