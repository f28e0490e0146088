"""``edgepart devices`` against the private adb server and emulated devices."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from adb_fixtures import (
    AdbServerHandle,
    EmulatedDevice,
    emulated_device,
    free_port,
    isolated_env,
    port_is_open,
    private_adb_server,
)

from edgepart.android.server import AdbServer
from edgepart.cli import main


def test_table_lists_model_soc_android_and_abi(
    emu: EmulatedDevice, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["devices", "--adb-server", emu.server.spec, "--serial", emu.serial]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["SERIAL", "STATE", "MODEL", "SOC", "ANDROID", "SDK", "ABI"]
    assert out[1].split() == [
        emu.serial,
        "device",
        "Edgepart",
        "Emulated",
        "Phone",
        "EMU8000",
        "14",
        "34",
        "arm64-v8a",
    ]


def test_json_output(
    emu: EmulatedDevice, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADB_SERVER_SOCKET", emu.server.spec)  # no --adb-server: from the env
    assert main(["devices", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    mine = [d for d in doc["devices"] if d["serial"] == emu.serial]
    assert doc["adb_server"] == emu.server.spec
    assert mine[0]["soc"] == "EMU8000" and mine[0]["android_version"] == "14"


def test_unauthorized_row_gets_a_hint(
    adb_server: AdbServerHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with emulated_device(adb_server, tmp_path / "d", unauthorized=True) as emu:
        assert main(["devices", "--adb-server", emu.server.spec, "-s", emu.serial]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[1].split()[:2] == [emu.serial, "unauthorized"]
    assert f"note: {emu.serial} is unauthorized: accept the USB debugging prompt" in captured.err


def test_no_device_attached(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with private_adb_server(tmp_path / "srv") as srv:
        assert main(["devices", "--adb-server", srv.server.spec]) == 0
    err = capsys.readouterr().err
    assert err.startswith("no Android device is attached to the adb server at tcp:127.0.0.1:")


def test_server_down_is_one_line_and_status_2(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.run(
        [sys.executable, "-m", "edgepart", "devices", "--adb-server", f"tcp:127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=isolated_env(tmp_path),
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(
        f"edgepart: error: cannot reach the adb server at tcp:127.0.0.1:{port}"
    )
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_start_server_on_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    for key, value in isolated_env(tmp_path).items():
        monkeypatch.setenv(key, value)  # the started server uses a throw-away HOME
    try:
        assert main(["devices", "--adb-server", f"tcp:{port}", "--start-server"]) == 0
        assert AdbServer("127.0.0.1", port).is_running()
    finally:
        server = AdbServer("127.0.0.1", port)
        if server.is_running():
            server.run_adb(["kill-server"], timeout=10)
        deadline = time.monotonic() + 10
        while port_is_open(port) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert not port_is_open(port)
    assert "no Android device is attached" in capsys.readouterr().err
