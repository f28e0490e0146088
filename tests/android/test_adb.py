"""edgepart.android.adb against an emulated device through the real adb server."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from adb_fixtures import AdbServerHandle, EmulatedDevice, emulated_device

from edgepart.android.adb import Device, DeviceInfo, list_devices, parse_devices, parse_getprop
from edgepart.android.server import AdbServer
from edgepart.errors import AdbError, DeviceNotFoundError, RemoteCommandError, UsageError


def device(emu: EmulatedDevice) -> Device:
    return Device(emu.serial, server=emu.server)


# --- discovery ---------------------------------------------------------------------------------


def test_list_devices_reads_model_soc_android_and_abi(emu: EmulatedDevice) -> None:
    infos = [d for d in list_devices(emu.server) if d.serial == emu.serial]
    assert infos == [
        DeviceInfo(
            serial=emu.serial,
            state="device",
            model="Edgepart Emulated Phone",
            soc="EMU8000",
            board_platform="emuplatform",
            android_version="14",
            sdk=34,
            abi="arm64-v8a",
            transport_id=infos[0].transport_id,
        )
    ]
    assert infos[0].transport_id is not None


def test_soc_falls_back_to_board_platform(adb_server: AdbServerHandle, tmp_path: Path) -> None:
    props = {
        "ro.soc.model": "",
        "ro.board.platform": "kalama",
        "ro.build.version.release": "13",
        "ro.build.version.sdk": "33",
        "ro.product.model": "Pixel 7",
    }
    with emulated_device(adb_server, tmp_path / "d", props=props) as emu:
        info = device(emu).info()
    assert (info.model, info.soc, info.board_platform, info.sdk) == (
        "Pixel 7",
        "kalama",
        "kalama",
        33,
    )


def test_server_and_serial_come_from_the_environment(
    emu: EmulatedDevice, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADB_SERVER_SOCKET", emu.server.spec)
    monkeypatch.setenv("ANDROID_SERIAL", emu.serial)
    assert Device().serial == emu.serial
    assert emu.serial in [d.serial for d in list_devices(details=False)]
    monkeypatch.delenv("ADB_SERVER_SOCKET")
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(emu.server.port))
    assert AdbServer.from_env() == emu.server
    assert Device().serial == emu.serial


def test_choosing_among_several_devices(
    emu: EmulatedDevice, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANDROID_SERIAL", raising=False)
    with emulated_device(emu.adb, tmp_path / "second") as second:
        with pytest.raises(UsageError, match=r"devices are attached .*--serial or ANDROID_SERIAL"):
            Device(server=emu.server)
        monkeypatch.setenv("ANDROID_SERIAL", second.serial)
        assert Device(server=emu.server).serial == second.serial
        assert Device(emu.serial, server=emu.server).serial == emu.serial  # explicit wins


def test_unknown_serial_names_the_attached_ones(emu: EmulatedDevice) -> None:
    with pytest.raises(DeviceNotFoundError) as info:
        Device("10.0.0.9:5555", server=emu.server)
    message = str(info.value)
    assert "10.0.0.9:5555" in message and emu.serial in message and "\n" not in message


def test_parsers_handle_real_listing_and_getprop_text() -> None:
    listing = (
        "List of devices attached\n"
        "0123456789ABCDEF       device usb:1-1 product:oriole model:Pixel_6 device:oriole "
        "transport_id:3\n"
        "R58M123               no permissions (missing udev rules? user is in the plugdev group);"
        " see [http://developer.android.com/tools/device.html] usb:1-2 transport_id:4\n"
        "emulator-5554          offline transport_id:5\n"
    )
    got = parse_devices(listing)
    assert [(d.serial, d.state, d.model, d.transport_id) for d in got] == [
        ("0123456789ABCDEF", "device", "Pixel_6", 3),
        (
            "R58M123",
            "no permissions (missing udev rules? user is in the plugdev group); see "
            "[http://developer.android.com/tools/device.html]",
            None,
            4,
        ),
        ("emulator-5554", "offline", None, 5),
    ]
    props = parse_getprop("[ro.product.model]: [Pixel 6]\n[ro.soc.model]: [GS101]\n[x]: []\n")
    assert props == {"ro.product.model": "Pixel 6", "ro.soc.model": "GS101", "x": ""}


# --- commands ----------------------------------------------------------------------------------


def test_exit_codes_and_separate_streams(emu: EmulatedDevice) -> None:
    dev = device(emu)
    res = dev.shell(["sh", "-c", "echo out; echo err >&2; exit 7"], timeout=20)
    assert (res.stdout, res.stderr, res.exit_code) == ("out\n", "err\n", 7)
    assert res.pid is not None
    assert dev.shell(["true"]).exit_code == 0
    assert dev.shell(["sh", "-c", "kill -9 $$"]).exit_code == 128 + 9  # killed by a signal
    with pytest.raises(RemoteCommandError, match="exit status 3: boom"):
        dev.shell(["sh", "-c", "echo boom >&2; exit 3"], check=True)


def test_arguments_are_quoted_not_injected(emu: EmulatedDevice) -> None:
    args = [
        "a b",
        "it's",
        '"dq"',
        "$HOME",
        "${PATH}",
        "`touch /data/local/tmp/pwned1`",
        "$(touch /data/local/tmp/pwned2)",
        "; touch /data/local/tmp/pwned3",
        "&& touch pwned4",
        "| tee pwned5",
        "x\n",
        "touch /data/local/tmp/pwned6",
        "*",
        "~",
        "line1\nline2",
        "",
        "back\\slash",
        "ünï ✓",
    ]
    res = device(emu).shell(["printf", "%s\\0", *args], cwd="/data/local/tmp")
    assert res.exit_code == 0
    assert res.stdout.split("\0")[:-1] == args
    assert sorted(os.listdir(emu.host_path("/data/local/tmp"))) == []  # nothing was created


def test_cwd_is_quoted_too(emu: EmulatedDevice) -> None:
    dev = device(emu)
    emu.host_path("/data/local/tmp/dir with space;x").mkdir()
    res = dev.shell(["pwd"], cwd="/data/local/tmp/dir with space;x")
    assert res.stdout == "/data/local/tmp/dir with space;x\n"
    res = dev.shell(["pwd"], cwd="/data/local/tmp/missing")
    assert res.exit_code != 0 and "missing" in res.stderr


def test_large_output_crosses_flow_control(emu: EmulatedDevice) -> None:
    res = device(emu).shell(["sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' a; echo E >&2"])
    assert (len(res.stdout), set(res.stdout), res.stderr) == (3_000_000, {"a"}, "E\n")


# --- files -------------------------------------------------------------------------------------


def test_push_pull_round_trip_of_a_multi_megabyte_file(emu: EmulatedDevice, tmp_path: Path) -> None:
    src = tmp_path / "model.tflite"
    src.write_bytes(os.urandom(12 * 1024 * 1024 + 7))
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    dev = device(emu)
    with dev.make_workdir() as wd:
        remote = wd.push(src)
        assert remote == f"{wd.path}/model.tflite" and dev.exists(remote)
        on_device = emu.host_path(remote)
        assert hashlib.sha256(on_device.read_bytes()).hexdigest() == digest
        sums = dev.shell(["sha256sum", remote], check=True).stdout
        assert sums.split()[0] == digest
        back = wd.pull("model.tflite", tmp_path / "out" / "back.tflite")
        assert hashlib.sha256(back.read_bytes()).hexdigest() == digest


def test_pull_of_a_missing_file_leaves_nothing_behind(emu: EmulatedDevice, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    dst = out / "keep.txt"
    dst.write_text("old")
    with pytest.raises(AdbError, match="No such file or directory") as info:
        device(emu).pull("/data/local/tmp/absent.csv", dst)
    assert "\n" not in str(info.value)
    assert dst.read_text() == "old"
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]  # no staging debris


def test_pull_a_directory(emu: EmulatedDevice, tmp_path: Path) -> None:
    root = emu.host_path("/data/local/tmp/results")
    (root / "sub").mkdir(parents=True)
    (root / "a.csv").write_text("1")
    (root / "sub/b.pb").write_bytes(b"\x00\x01")
    got = device(emu).pull("/data/local/tmp/results", tmp_path / "res")
    assert (got / "a.csv").read_text() == "1" and (got / "sub/b.pb").read_bytes() == b"\x00\x01"


def test_bad_paths_are_usage_errors(emu: EmulatedDevice, tmp_path: Path) -> None:
    dev = device(emu)
    with pytest.raises(UsageError, match="no such file"):
        dev.push(tmp_path / "nope", "/data/local/tmp/x")
    (tmp_path / "f").write_text("x")
    with pytest.raises(UsageError, match="must be absolute"):
        dev.push(tmp_path / "f", "data/local/tmp/x")


# --- work directories --------------------------------------------------------------------------


def test_workdir_is_removed_even_when_the_block_fails(emu: EmulatedDevice, tmp_path: Path) -> None:
    dev = device(emu)
    (tmp_path / "m.bin").write_bytes(b"m" * 1000)
    tmp = emu.host_path("/data/local/tmp")
    with pytest.raises(RuntimeError, match="mid-run"), dev.make_workdir() as wd:
        wd.push(tmp_path / "m.bin")
        dev.shell(["mkdir", "-p", wd.join("deep/er")], check=True)
        dev.shell(["touch", wd.join("deep/er/f")], check=True)
        assert wd.listdir() == ["deep", "m.bin"]
        raise RuntimeError("mid-run")
    assert os.listdir(tmp) == []
    with dev.make_workdir(name="resume-me", keep=True) as kept:
        kept.push(tmp_path / "m.bin", "again.bin")
    assert os.listdir(tmp) == ["resume-me"]
    kept.cleanup()
    assert os.listdir(tmp) == []


def test_workdir_paths_cannot_escape(emu: EmulatedDevice) -> None:
    wd = device(emu).make_workdir(name="w")
    assert wd.join("a/b") == "/data/local/tmp/w/a/b"
    with pytest.raises(UsageError, match="outside"):
        wd.join("../x")
    with pytest.raises(UsageError):
        device(emu).make_workdir(name="a/../..")
    with pytest.raises(UsageError):
        device(emu).make_workdir(base="/")
