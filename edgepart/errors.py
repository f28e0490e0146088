"""The edgepart exception hierarchy.

Every error a user can trigger is an :class:`EdgepartError`. Messages say what went wrong, where
(file, byte offset, op index, tensor, YAML key path) and how to fix it, on one line, so the CLI can
print ``edgepart: error: <message>`` and exit with status 2.
"""

from __future__ import annotations

__all__ = [
    "AdbError",
    "AdbServerError",
    "ArenaOverflowError",
    "BenchmarkOutputError",
    "BundleError",
    "CommandTimeoutError",
    "ConversionError",
    "CostGraphError",
    "DeviceDisconnectedError",
    "DeviceNotFoundError",
    "DeviceUnauthorizedError",
    "EdgepartError",
    "LatencyTableError",
    "ModelFormatError",
    "OutputError",
    "PassError",
    "PlacementInfeasibleError",
    "PlanError",
    "ProfileError",
    "RemoteBinaryError",
    "RemoteCommandError",
    "RuntimeBackendError",
    "UnsupportedOpError",
    "UsageError",
]


class EdgepartError(Exception):
    """Root of every error edgepart raises on bad input or an impossible request."""


class UsageError(EdgepartError):
    """A request that is malformed in itself (bad argument combination, missing file)."""


class ModelFormatError(EdgepartError):
    """A ``.tflite`` file is not a well-formed TFLite flatbuffer (names the byte offset)."""


class ProfileError(EdgepartError):
    """A delegate or device-profile YAML file is invalid (names the file and key path)."""


class UnsupportedOpError(EdgepartError):
    """An op cannot be handled by the requested component (names op index and code)."""


class CostGraphError(EdgepartError):
    """A cost-graph JSON document is invalid (names the JSON path)."""


class LatencyTableError(EdgepartError):
    """A latency-table file is invalid (names the file and entry)."""


class ConversionError(EdgepartError):
    """A source model cannot be loaded or converted to TFLite (names the file and the failing
    op or layer, with the converter's own words)."""


class PlacementInfeasibleError(EdgepartError):
    """No placement satisfies the support and memory constraints (names the op or unit)."""


class PlanError(EdgepartError):
    """A partition plan breaks a placement rule or its schedule (names partition, node, unit)."""


class ArenaOverflowError(EdgepartError):
    """A memory plan does not fit its arena, or a plan is inconsistent."""


class OutputError(EdgepartError):
    """An output file or directory cannot be written (a full disk, permissions, a path that is
    a FIFO's reader-less end or a directory), or replacing it would delete files edgepart did
    not write. Whatever was at the output before is left in place."""


class PassError(EdgepartError):
    """A graph pass produced an invalid graph (names the pass and the ones before it)."""


class BundleError(EdgepartError):
    """A bundle directory is missing, incomplete, corrupted or of an unknown version."""


class RuntimeBackendError(EdgepartError):
    """An executor or delegate library cannot be loaded or fails at run time."""


class AdbError(EdgepartError):
    """The adb server, a device, or a command run through adb failed."""


class AdbServerError(AdbError):
    """The adb server cannot be reached, started, or understood."""


class DeviceNotFoundError(AdbError):
    """No device, or not the requested serial, is attached to the adb server."""


class DeviceUnauthorizedError(AdbError):
    """The device has not accepted this computer's adb key (USB debugging prompt)."""


class DeviceDisconnectedError(AdbError):
    """The device is offline or went away while a transfer or command was running."""


class CommandTimeoutError(AdbError):
    """A command on the device did not finish in time; it was killed where possible."""


class RemoteBinaryError(AdbError):
    """A program on the device is missing, not a file, or not executable."""


class RemoteCommandError(AdbError):
    """A command on the device exited with a failure status."""


class BenchmarkOutputError(EdgepartError):
    """``benchmark_model`` output (text, CSV or proto) is unrecognizable or reports a failure."""
