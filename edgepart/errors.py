"""The edgepart exception hierarchy.

Every error a user can trigger is an :class:`EdgepartError`. Messages say what went wrong, where
(file, byte offset, op index, tensor, YAML key path) and how to fix it, on one line, so the CLI can
print ``edgepart: error: <message>`` and exit with status 2.

Requests and data are told apart: :class:`UsageError` is a request that is wrong in itself (an
argument value or combination, a missing file, a file of the wrong kind for the argument, a
mismatch between two inputs). Invalid *content* of a document edgepart reads raises the error of
that kind of document (:class:`ModelFormatError`, :class:`ProfileError`, :class:`BundleError`,
:class:`PlanError`, :class:`CostGraphError`, :class:`LatencyTableError`,
:class:`BufferTableError`, :class:`BenchmarkOutputError`), whether it came from a file or was
built in Python. Every class is raised somewhere (``tests/test_errors.py`` checks it).
"""

from __future__ import annotations

__all__ = [
    "AdbError",
    "AdbServerError",
    "ArenaOverflowError",
    "BenchmarkOutputError",
    "BufferTableError",
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
    "PredictorError",
    "ProfileError",
    "RemoteBinaryError",
    "RemoteCommandError",
    "RuntimeBackendError",
    "UnsteadyMachineError",
    "UnsupportedOpError",
    "UsageError",
]


class EdgepartError(Exception):
    """Root of every error edgepart raises on bad input or an impossible request.

    Never raised itself: catch it to handle every edgepart error (the CLI does, and exits 2).
    """


class UsageError(EdgepartError):
    """A request that is wrong in itself: an argument value or combination, a missing file or
    directory, a file of the wrong kind for its argument (e.g. a ``.tflite`` given to
    ``convert``), or two inputs that do not belong together (a model that is not the bundle's)."""


class ModelFormatError(EdgepartError):
    """A ``.tflite`` file or :class:`~edgepart.ir.graph.Model` is not well formed: the reader's
    flatbuffer checks (names the byte offset), the IR's invariants (``ir.verify``), a cycle in
    the ops, or a malformed control-flow or metadata table."""


class ProfileError(EdgepartError):
    """A delegate or device-profile YAML file is invalid, or a name finds no such file on the
    search path (names the file and the key path)."""


class UnsupportedOpError(EdgepartError):
    """An op or tensor of the model that the requested component cannot handle: a tensor type
    a bundle cannot pass between partitions or in and out (RESOURCE, VARIANT, ...), a constant
    model output no partition computes (names the op or tensor)."""


class PredictorError(EdgepartError):
    """A latency predictor or calibration measurements file that cannot be used (names the file
    and the JSON path), or a fit that cannot be made from the measurements given (too few
    measured kernels)."""


class CostGraphError(EdgepartError):
    """A cost-graph document (JSON file or dict) is invalid (names the JSON path)."""


class LatencyTableError(EdgepartError):
    """A latency-table file or document is invalid, or a device profile's processor names a
    table that does not fit it (names the file and entry)."""


class BufferTableError(EdgepartError):
    """A buffer table for the arena planner is invalid: a ``buffers.csv`` row or header (names
    the file and line), or the columns of a :class:`~edgepart.memory.problem.MemoryProblem`
    (names the buffer)."""


class ConversionError(EdgepartError):
    """A source model cannot be loaded or converted to TFLite, or the converted model fails its
    checks (names the file and the failing op or layer, with the converter's own words)."""


class PlacementInfeasibleError(EdgepartError):
    """No placement satisfies the support and memory constraints: an op or node no processor
    can run, or weights that fit no unit (names the op or unit and the numbers)."""


class PlanError(EdgepartError):
    """A partition plan breaks a placement rule or its schedule: ops placed twice or not at
    all, a non-convex partition, partitions that depend on each other in a cycle, a cut that
    splits state, a processor, unit or executor the profile does not have, or a ``plan.json``
    that fails its schema or rules (names the partition, node or unit)."""


class ArenaOverflowError(EdgepartError):
    """A memory plan does not fit its arena or capacity (including TFLite Micro's 32-bit
    offsets), or an arena plan is inconsistent with its buffers (names the memory and buffer)."""


class OutputError(EdgepartError):
    """An output file or directory cannot be written (a full disk, permissions, a path that is
    a FIFO's reader-less end or a directory), or replacing it would delete files edgepart did
    not write. Whatever was at the output before is left in place."""


class PassError(EdgepartError):
    """A graph pass produced an invalid graph: an extracted partition that does not read back
    as a valid model (names the pass, the ones before it and the partition). Always an edgepart
    bug, never the user's input."""


class BundleError(EdgepartError):
    """A bundle directory is missing, incomplete, corrupted or of an unknown version (names the
    file and the JSON path)."""


class RuntimeBackendError(EdgepartError):
    """An executor or delegate library cannot be loaded, or LiteRT cannot prepare or invoke a
    partition (names the library or partition and LiteRT's message)."""


class UnsteadyMachineError(EdgepartError):
    """The machine ran too unsteadily to measure, and the caller asked to stop then
    (``calibrate --host --require-steady``): says how unsteady, and that nothing was written."""


class AdbError(EdgepartError):
    """The adb server, a device, or a command run through adb failed (the subclasses say how;
    this class itself for failures adb reports in no more specific way)."""


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
    """``benchmark_model`` output (run log, per-op table in text, CSV or proto, runtime info, or
    its ``--help`` text) is unrecognizable or reports a failure (names the source and line)."""
