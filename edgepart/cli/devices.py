"""``edgepart devices``: list Android devices attached to the adb server."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import edgepart
from edgepart import jsondoc as _json

__all__ = ["register"]

_HINTS = {
    "unauthorized": "accept the USB debugging prompt on the phone",
    "offline": "replug the cable or `adb connect` again",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "devices",
        help="list attached Android devices (model, SoC, Android version, ABI)",
        description="List the Android devices the adb server knows, with model, SoC, Android "
        "version, SDK level and ABI. The server is the one adb uses (ADB_SERVER_SOCKET, "
        "ANDROID_ADB_SERVER_PORT) unless --adb-server is given; it is not started unless "
        "--start-server is given.",
    )
    parser.add_argument("--serial", "-s", help="show only this device")
    parser.add_argument("--adb-server", metavar="tcp:HOST:PORT", help="adb server address")
    parser.add_argument(
        "--start-server", action="store_true", help="start a local adb server if none is running"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    found = edgepart.adb_devices(
        adb_server=args.adb_server, start_server=args.start_server, serial=args.serial
    )
    devices = found.devices
    if args.json:
        print(_json.text(found.to_dict(), indent=2, default=str))
        return 0
    if not devices:
        what = f"device {args.serial} is" if args.serial else "no Android device is"
        print(
            f"{what} attached to the adb server at {found.server}: connect a phone with USB "
            "debugging on (or `adb connect HOST:PORT`), then run this again",
            file=sys.stderr,
        )
        return 1 if args.serial else 0
    header = ("SERIAL", "STATE", "MODEL", "SOC", "ANDROID", "SDK", "ABI")
    rows = [header]
    for d in devices:
        rows.append(
            (
                d.serial,
                d.state,
                d.model or "-",
                d.soc or "-",
                d.android_version or "-",
                str(d.sdk) if d.sdk is not None else "-",
                d.abi or "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    for d in devices:
        if d.state in _HINTS:
            print(f"note: {d.serial} is {d.state}: {_HINTS[d.state]}", file=sys.stderr)
    return 0
