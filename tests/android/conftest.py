"""Fixtures: a private real adb server and emulated devices reached with ``adb connect``.

The helpers live in ``adb_fixtures.py`` (a uniquely named module, so test files can import them
whatever other ``conftest`` modules pytest has loaded).
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from adb_fixtures import (
    AdbServerHandle,
    EmulatedDevice,
    emulated_device,
    private_adb_server,
)
from bench_helpers import build_model


@pytest.fixture(scope="session", autouse=True)
def _hangup_kills() -> Iterator[None]:
    """Shells on the emulated device must die of SIGHUP, as adbd's do when the transport drops.

    A test run started under ``nohup`` ignores SIGHUP, and an ignored signal stays ignored
    through ``exec`` (``sh`` cannot even trap it back), so every command the emulator spawned
    would survive its hangup. Restore the default for this run's children.
    """
    before = signal.getsignal(signal.SIGHUP)
    if before == signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGHUP, before)


@pytest.fixture(scope="session")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdbServerHandle]:
    """One private real adb server for the whole test session."""
    with private_adb_server(tmp_path_factory.mktemp("adb-server")) as handle:
        yield handle


@pytest.fixture
def emu(adb_server: AdbServerHandle, tmp_path: Path) -> Iterator[EmulatedDevice]:
    """A fresh emulated device, connected, in state ``device``; checked for leaked processes."""
    with emulated_device(adb_server, tmp_path / "device") as device:
        yield device
        leaked = device.wait_no_processes()
        assert not leaked, f"device commands still running after the test: {leaked}"


@pytest.fixture
def env(emu: EmulatedDevice, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EmulatedDevice:
    """``emu`` as the one device the CLI finds: its server in the environment, no serial set,
    run records under ``tmp_path``."""
    monkeypatch.setenv("ADB_SERVER_SOCKET", emu.server.spec)
    monkeypatch.delenv("ANDROID_SERIAL", raising=False)
    monkeypatch.setenv("EDGEPART_RUNS_DIR", str(tmp_path / "runs"))
    return emu


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bench``/``profile`` test model of ``bench_helpers.build_model``, once per module."""
    return build_model(tmp_path_factory.mktemp("model") / "tiny.tflite")
