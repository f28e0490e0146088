"""The real world, emulated: hangs, unplugged cables, unauthorized phones, dead servers, bad
binaries. Every failure must be a one-line AdbError subclass and must never hang the caller."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest
from adb_fixtures import (
    AdbServerHandle,
    EmulatedDevice,
    emulated_device,
    free_port,
    port_is_open,
    private_adb_server,
)

from edgepart.android.adb import Device, list_devices
from edgepart.android.server import AdbServer
from edgepart.errors import (
    AdbServerError,
    CommandTimeoutError,
    DeviceDisconnectedError,
    DeviceUnauthorizedError,
    RemoteBinaryError,
)

MARGIN = 3.0  # seconds allowed beyond a timeout for closing the stream and killing the process


def device(emu: EmulatedDevice) -> Device:
    return Device(emu.serial, server=emu.server)


def one_line(err: BaseException) -> str:
    text = str(err)
    assert text and "\n" not in text, text
    return text


# --- hangs -------------------------------------------------------------------------------------


def test_hanging_command_times_out_and_is_killed(emu: EmulatedDevice) -> None:
    emu.emulator.hang_when("bm-hang", delay=0.3)  # the process stops making progress
    dev = device(emu)
    started = time.monotonic()
    with pytest.raises(CommandTimeoutError) as info:
        dev.shell(["sh", "-c", "echo started; exec sleep 60 # bm-hang"], timeout=2.0)
    elapsed = time.monotonic() - started
    assert 2.0 <= elapsed < 2.0 + MARGIN
    message = one_line(info.value)
    assert "did not finish within 2 s" in message and "was killed" in message
    partial = info.value.partial  # type: ignore[attr-defined]
    assert partial.stdout == "started\n" and partial.exit_code == -1
    assert emu.wait_no_processes() == []  # the stopped process really is gone


def test_long_command_times_out_without_faults(emu: EmulatedDevice) -> None:
    started = time.monotonic()
    with pytest.raises(CommandTimeoutError, match="`sleep 30`"):
        device(emu).shell(["sleep", "30"], timeout=1.0)
    assert time.monotonic() - started < 1.0 + MARGIN
    assert emu.wait_no_processes() == []
    assert device(emu).shell(["echo", "still usable"]).stdout == "still usable\n"


def test_wedged_daemon_times_out_opening_the_service(emu: EmulatedDevice) -> None:
    emu.emulator.stall_when("never-answered")
    started = time.monotonic()
    with pytest.raises(CommandTimeoutError, match="did not open") as info:
        device(emu).shell(["echo", "never-answered"], timeout=1.0)
    assert time.monotonic() - started < 1.0 + MARGIN
    one_line(info.value)


# --- disconnects -------------------------------------------------------------------------------


def test_unplugged_mid_command(emu: EmulatedDevice) -> None:
    emu.emulator.disconnect_when("bm-unplug", delay=0.5)
    dev = device(emu)
    started = time.monotonic()
    with pytest.raises(DeviceDisconnectedError) as info:
        dev.shell(["sh", "-c", "echo partial-line; exec sleep 30 # bm-unplug"], timeout=20)
    assert time.monotonic() - started < 5  # noticed at once, not at the timeout
    message = one_line(info.value)
    assert emu.serial in message and "reconnect" in message and "offline" in message
    assert info.value.partial.stdout == "partial-line\n"  # type: ignore[attr-defined]
    assert emu.wait_no_processes() == []  # SIGHUP reached it, as adbd does
    with pytest.raises(DeviceDisconnectedError, match="is offline"):
        Device(emu.serial, server=emu.server)
    with pytest.raises(DeviceDisconnectedError):
        dev.shell(["true"], timeout=5)


def test_unplugged_mid_push(emu: EmulatedDevice, tmp_path: Path) -> None:
    src = tmp_path / "big.tflite"
    src.write_bytes(b"\x5a" * (4 * 1024 * 1024))
    emu.emulator.disconnect_when("big.tflite")
    with pytest.raises(DeviceDisconnectedError, match="during the push") as info:
        device(emu).push(src, "/data/local/tmp/big.tflite", timeout=20)
    one_line(info.value)
    half = emu.host_path("/data/local/tmp/big.tflite")
    deadline = time.monotonic() + 5
    while half.exists() and time.monotonic() < deadline:  # the device cleans up on its own time
        time.sleep(0.02)
    assert not half.exists()  # like adbd, the emulator unlinks a file whose push failed


def test_unplugged_mid_pull_keeps_the_old_local_file(emu: EmulatedDevice, tmp_path: Path) -> None:
    emu.host_path("/data/local/tmp/out.pb").write_bytes(b"\x01" * (3 * 1024 * 1024))
    dst = tmp_path / "local" / "out.pb"
    dst.parent.mkdir()
    dst.write_bytes(b"previous")
    dev = device(emu)
    emu.emulator.disconnect_when("out.pb")
    with pytest.raises(DeviceDisconnectedError, match="during the pull"):
        dev.pull("/data/local/tmp/out.pb", dst, timeout=20)
    assert dst.read_bytes() == b"previous"
    assert [p.name for p in dst.parent.iterdir()] == ["out.pb"]


def test_workdir_cleanup_after_unplug_keeps_the_original_error(
    emu: EmulatedDevice, caplog: pytest.LogCaptureFixture
) -> None:
    dev = device(emu)
    emu.emulator.disconnect_when("bm-unplug", delay=0.2)
    caplog.set_level(logging.WARNING)
    with pytest.raises(DeviceDisconnectedError), dev.make_workdir() as wd:
        dev.shell(["sh", "-c", "exec sleep 30 # bm-unplug"], timeout=20)
    assert wd.cleanup_error is not None and "could not remove" in caplog.text
    emu.emulator.clear_faults()
    emu.emulator.replug()
    emu.wait_state("device", timeout=30)
    wd.cleanup()  # once the phone is back the directory can go
    assert not emu.host_path(wd.path).exists()


# --- authorization and the server --------------------------------------------------------------


def test_unauthorized_device(adb_server: AdbServerHandle, tmp_path: Path) -> None:
    with emulated_device(adb_server, tmp_path / "d", unauthorized=True) as emu:
        listed = {d.serial: d for d in list_devices(emu.server)}
        assert listed[emu.serial].state == "unauthorized" and listed[emu.serial].model is None
        with pytest.raises(DeviceUnauthorizedError) as info:
            Device(emu.serial, server=emu.server)
        message = one_line(info.value)
        assert message.startswith(f"device {emu.serial} is unauthorized: accept the USB debugging")
        emu.emulator.authorize()
        emu.wait_state("device")
        assert device(emu).shell(["true"]).exit_code == 0


def test_server_not_running_is_reported_and_not_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    server = AdbServer("127.0.0.1", port)
    with pytest.raises(AdbServerError) as info:
        list_devices(server)
    message = one_line(info.value)
    assert f"cannot reach the adb server at tcp:127.0.0.1:{port}" in message
    assert "adb start-server" in message
    monkeypatch.setenv("ADB_SERVER_SOCKET", f"tcp:127.0.0.1:{port}")
    with pytest.raises(AdbServerError):
        Device()
    assert not port_is_open(port)  # nothing was started behind the user's back


def test_server_dies_mid_command(tmp_path: Path) -> None:
    with private_adb_server(tmp_path / "srv") as srv, emulated_device(srv, tmp_path / "d") as emu:
        dev = device(emu)
        killer = threading.Timer(0.5, lambda: srv.run("kill-server", timeout=5))
        killer.start()
        started = time.monotonic()
        with pytest.raises(AdbServerError) as info:
            dev.shell(["sh", "-c", "echo before; exec sleep 30"], timeout=20)
        killer.join()
        assert time.monotonic() - started < 5
        message = one_line(info.value)
        assert message.startswith(f"the adb server at {srv.server.spec} went away while")
        assert info.value.partial.stdout == "before\n"  # type: ignore[attr-defined]
        assert emu.wait_no_processes() == []  # the transport closed, so the device hung up


# --- binaries ----------------------------------------------------------------------------------


def test_missing_and_non_executable_binaries(emu: EmulatedDevice, tmp_path: Path) -> None:
    tool = tmp_path / "benchmark_model"
    tool.write_text("#!/bin/sh\necho ran\n")
    dev = device(emu)
    remote = "/data/local/tmp/benchmark_model"
    dev.push(tool, remote, executable=True)
    assert dev.file_is_executable(remote)
    dev.check_executable(remote)
    assert dev.shell([remote], check=True).stdout == "ran\n"

    emu.emulator.chmod(remote, 0o644)
    assert dev.exists(remote) and not dev.file_is_executable(remote)
    with pytest.raises(RemoteBinaryError, match="is not executable: run `adb shell chmod 755"):
        dev.check_executable(remote)
    with pytest.raises(RemoteBinaryError, match="exit 126"):
        dev.shell([remote], check=True)

    emu.emulator.remove(remote)
    assert not dev.exists(remote)
    with pytest.raises(RemoteBinaryError, match="does not exist") as info:
        dev.check_executable(remote)
    one_line(info.value)
    with pytest.raises(RemoteBinaryError, match="exit 127"):
        dev.shell([remote], check=True)

    with pytest.raises(RemoteBinaryError, match="not a regular file"):
        dev.check_executable("/data/local/tmp")
