"""Unit tests for locating the adb server and mapping its failures."""

from __future__ import annotations

import pytest

from edgepart.android.server import AdbServer, classify_failure
from edgepart.errors import (
    AdbError,
    DeviceDisconnectedError,
    DeviceNotFoundError,
    DeviceUnauthorizedError,
    UsageError,
)


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({}, AdbServer("127.0.0.1", 5037)),
        ({"ADB_SERVER_SOCKET": "tcp:6000"}, AdbServer("127.0.0.1", 6000)),
        ({"ADB_SERVER_SOCKET": "tcp:10.1.2.3:6001"}, AdbServer("10.1.2.3", 6001)),
        ({"ADB_SERVER_SOCKET": "tcp:[::1]:6002"}, AdbServer("::1", 6002)),
        ({"ANDROID_ADB_SERVER_PORT": "6003"}, AdbServer("127.0.0.1", 6003)),
        (
            {"ANDROID_ADB_SERVER_ADDRESS": "hostbox", "ANDROID_ADB_SERVER_PORT": "6004"},
            AdbServer("hostbox", 6004),
        ),
        # adb's own precedence: the socket spec wins over address/port
        (
            {"ADB_SERVER_SOCKET": "tcp:6005", "ANDROID_ADB_SERVER_PORT": "6006"},
            AdbServer("127.0.0.1", 6005),
        ),
    ],
)
def test_server_address_from_environment(env: dict[str, str], want: AdbServer) -> None:
    assert AdbServer.from_env(env) == want


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"ADB_SERVER_SOCKET": "localabstract:adb"}, "ADB_SERVER_SOCKET='localabstract:adb'"),
        ({"ADB_SERVER_SOCKET": "tcp:host:notaport"}, "is not a TCP port"),
        ({"ANDROID_ADB_SERVER_PORT": "70000"}, "ANDROID_ADB_SERVER_PORT: '70000'"),
    ],
)
def test_bad_server_settings_name_the_variable(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        AdbServer.from_env(env)
    assert fragment in str(info.value)


def test_server_spec_and_locality() -> None:
    assert AdbServer.parse("tcp:5038").spec == "tcp:127.0.0.1:5038"
    assert AdbServer.parse("192.168.0.2:5037").is_local is False
    assert AdbServer().is_local


def test_fail_messages_map_to_error_classes() -> None:
    server = AdbServer("127.0.0.1", 5037)
    unauthorized = (
        "device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set\n"
        "Try 'adb kill-server' if that seems wrong.\n"
    )
    cases = [
        (unauthorized, DeviceUnauthorizedError, "is unauthorized: accept the USB debugging"),
        ("device offline", DeviceDisconnectedError, "is offline: replug"),
        ("device 'x:1' not found", DeviceNotFoundError, "is not attached to the adb server"),
        ("no devices/emulators found", DeviceNotFoundError, "is not attached"),
        ("something new", AdbError, "refused the request for device S: something new"),
    ]
    for message, kind, fragment in cases:
        err = classify_failure(message, "S", server)
        assert type(err) is kind
        assert fragment in str(err) and "\n" not in str(err)
