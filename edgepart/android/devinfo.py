"""What the adb server and ``getprop`` say about a device, as plain values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

__all__ = ["DeviceInfo", "info_from_props", "parse_devices", "parse_getprop"]

_LISTING_KEYS = ("product", "model", "device", "transport_id", "usb")


@dataclass(frozen=True)
class DeviceInfo:
    """One device as the adb server lists it, plus what its properties say when it is usable."""

    serial: str
    state: str
    model: str | None = None
    soc: str | None = None
    board_platform: str | None = None
    android_version: str | None = None
    sdk: int | None = None
    abi: str | None = None
    transport_id: int | None = None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def parse_devices(text: str) -> list[DeviceInfo]:
    """Parse ``adb devices -l`` / ``host:devices-l`` output (states may contain spaces)."""
    devices = []
    for line in text.splitlines():
        tokens = line.split()
        if not tokens or line.startswith(("List of devices", "*")):
            continue
        attrs: dict[str, str] = {}
        state: list[str] = []
        for token in tokens[1:]:
            key, sep, value = token.partition(":")
            if sep and key in _LISTING_KEYS:
                attrs[key] = value
            else:
                state.append(token)
        tid = attrs.get("transport_id", "")
        devices.append(
            DeviceInfo(
                serial=tokens[0],
                state=" ".join(state) or "unknown",
                model=attrs.get("model"),
                transport_id=int(tid) if tid.isdigit() else None,
            )
        )
    return devices


def parse_getprop(text: str) -> dict[str, str]:
    """Parse ``getprop`` output (``[key]: [value]`` lines)."""
    props = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and "]: [" in line and line.endswith("]"):
            key, _, value = line[1:-1].partition("]: [")
            props[key] = value
    return props


def info_from_props(entry: DeviceInfo, props: Mapping[str, str]) -> DeviceInfo:
    """``entry`` completed from system properties (SoC: ``ro.soc.model``, Android 12+, else
    ``ro.board.platform``, else ``ro.hardware``)."""

    def get(*keys: str) -> str | None:
        return next((props[k] for k in keys if props.get(k)), None)

    sdk = get("ro.build.version.sdk")
    return DeviceInfo(
        serial=entry.serial,
        state=entry.state,
        model=get("ro.product.model") or entry.model,
        soc=get("ro.soc.model", "ro.board.platform", "ro.hardware"),
        board_platform=get("ro.board.platform"),
        android_version=get("ro.build.version.release"),
        sdk=int(sdk) if sdk and sdk.isdigit() else None,
        abi=get("ro.product.cpu.abi"),
        transport_id=entry.transport_id,
    )
