"""The emulated device, driven by the real ``adb`` client and server (no edgepart code involved)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

from adb_fixtures import AdbServerHandle, EmulatedDevice, emulated_device


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_adb_lists_the_banner_properties(emu: EmulatedDevice) -> None:
    out = emu.adb.run("devices", "-l").stdout
    line = next(ln for ln in out.splitlines() if ln.startswith(emu.serial))
    assert line.split()[1] == "device"
    assert "model:Edgepart_Emulated_Phone" in line  # adb turns spaces into underscores
    assert "product:edgepart_emu" in line and "device:emu64a" in line
    features = emu.adb.run("-s", emu.serial, "features").stdout.split()
    assert {"shell_v2", "stat_v2", "ls_v2", "fixed_push_mkdir"} <= set(features)


def test_adb_shell_exit_status_and_streams(emu: EmulatedDevice) -> None:
    res = emu.adb.run("-s", emu.serial, "shell", "echo to-out; echo to-err >&2; exit 42")
    assert (res.returncode, res.stdout, res.stderr) == (42, "to-out\n", "to-err\n")
    res = emu.adb.run("-s", emu.serial, "shell", "getprop", "ro.build.version.sdk")
    assert (res.returncode, res.stdout) == (0, "34\n")


def test_raw_services_without_the_shell_protocol(emu: EmulatedDevice) -> None:
    res = emu.adb.run("-s", emu.serial, "exec-out", "echo raw; echo merged >&2")
    assert (res.returncode, res.stdout) == (0, "raw\nmerged\n")  # exec: has one stream only
    res = emu.adb.run("-s", emu.serial, "shell", "-x", "echo v1")  # -x: no shell protocol
    assert res.stdout == "v1\n"


def test_adb_shell_forwards_stdin(emu: EmulatedDevice, tmp_path: Path) -> None:
    src = tmp_path / "stdin.txt"
    src.write_text("through stdin\n")
    env = dict(emu.adb.env, ADB_SERVER_SOCKET=emu.server.spec)
    with open(src, "rb") as stdin:
        res = subprocess.run(
            [emu.adb.adb, "-s", emu.serial, "shell", "cat"],
            stdin=stdin,
            env=env,
            capture_output=True,
            timeout=20,
            check=False,
        )
    assert (res.returncode, res.stdout) == (0, b"through stdin\n")


def test_device_paths_map_into_the_sandbox(emu: EmulatedDevice) -> None:
    res = emu.adb.run(
        "-s", emu.serial, "shell", "echo hi > /data/local/tmp/f.txt && ls /data/local/tmp/f.txt"
    )
    assert (res.returncode, res.stdout) == (0, "/data/local/tmp/f.txt\n")  # output is unmapped
    assert emu.host_path("/data/local/tmp/f.txt").read_text() == "hi\n"


def test_adb_push_pull_round_trip(emu: EmulatedDevice, tmp_path: Path) -> None:
    src = tmp_path / "blob.bin"
    src.write_bytes(os.urandom(6 * 1024 * 1024 + 123))
    res = emu.adb.run("-s", emu.serial, "push", str(src), "/data/local/tmp/sub/dir/blob.bin")
    assert res.returncode == 0, res.stderr
    assert sha256(emu.host_path("/data/local/tmp/sub/dir/blob.bin")) == sha256(src)
    back = tmp_path / "back.bin"
    res = emu.adb.run("-s", emu.serial, "pull", "/data/local/tmp/sub/dir/blob.bin", str(back))
    assert res.returncode == 0, res.stderr
    assert sha256(back) == sha256(src)
    res = emu.adb.run("-s", emu.serial, "pull", "/data/local/tmp/sub", str(tmp_path / "tree"))
    assert res.returncode == 0, res.stderr
    assert sha256(tmp_path / "tree/dir/blob.bin") == sha256(src)  # LIS2 directory walk


def test_adb_push_keeps_the_executable_bit(emu: EmulatedDevice, tmp_path: Path) -> None:
    tool = tmp_path / "tool.sh"
    tool.write_text('#!/bin/sh\necho tool ran with "$1"\n')
    tool.chmod(0o755)
    assert emu.adb.run("-s", emu.serial, "push", str(tool), "/data/local/tmp/").returncode == 0
    res = emu.adb.run("-s", emu.serial, "shell", "/data/local/tmp/tool.sh", "'a b'")
    assert (res.returncode, res.stdout) == (0, "tool ran with a b\n")


def test_adb_reports_device_side_failures(emu: EmulatedDevice, tmp_path: Path) -> None:
    res = emu.adb.run("-s", emu.serial, "pull", "/data/local/tmp/absent", str(tmp_path / "x"))
    assert res.returncode != 0 and "No such file or directory" in res.stderr
    src = tmp_path / "f"
    src.write_text("x")
    res = emu.adb.run("-s", emu.serial, "push", str(src), "/proc/not-mapped")
    assert res.returncode != 0 and "Read-only file system" in res.stderr


def test_unauthorized_device_then_user_allows(adb_server: AdbServerHandle, tmp_path: Path) -> None:
    with emulated_device(adb_server, tmp_path / "dev", unauthorized=True) as dev:
        assert adb_server.state(dev.serial) == "unauthorized"
        res = adb_server.run("-s", dev.serial, "shell", "true")
        assert res.returncode != 0 and "unauthorized" in res.stderr
        # the server offers its public key, as to a phone showing the prompt, after its
        # signatures fail: asynchronously, so on a loaded host it may come after the refusal
        deadline = time.monotonic() + 20
        while not any(t.public_keys for t in list(dev.emulator._transports)):
            assert time.monotonic() < deadline, "adb never offered its public key"
            time.sleep(0.05)
        dev.emulator.authorize()
        dev.wait_state("device")
        assert adb_server.run("-s", dev.serial, "shell", "true").returncode == 0


def test_unplug_makes_the_device_offline_and_replug_brings_it_back(emu: EmulatedDevice) -> None:
    emu.emulator.unplug()
    emu.wait_state("offline")
    assert emu.adb.run("-s", emu.serial, "shell", "true").returncode != 0
    emu.emulator.replug()
    emu.wait_state("device", timeout=30)  # adb's reconnect loop finds it again
    assert emu.adb.run("-s", emu.serial, "shell", "true").returncode == 0
