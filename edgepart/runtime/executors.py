"""Executors: how one partition runs in its own LiteRT interpreter.

Four kinds, chosen per partition from its plan entry:

``xnnpack``
    LiteRT's default CPU path: builtin kernels with the XNNPACK delegate applied
    (``OpResolverType.AUTO``). Used for the ``xnnpack`` delegate.
``builtin``
    Optimized builtin kernels with default delegates disabled
    (``OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES``). Used for ``cpu_builtin``.
``reference``
    LiteRT's reference kernels (``OpResolverType.BUILTIN_REF``): slow, for checking.
``delegate``
    An external delegate library loaded with ``load_delegate(path, options)`` (how the GPU,
    NNAPI, Hexagon, Edge TPU and NPU delegates are loaded where those libraries exist); ops the
    delegate declines run on LiteRT's CPU kernels, as in LiteRT itself.

Choosing (:func:`choose_executor`) is a pure decision returned as an :class:`ExecutorChoice`;
opening (:func:`open_partition`) applies it. A delegate partition needs a library: given
explicitly (``delegate_libraries``, the plan's ``executor.library``, or the environment variable
``EDGEPART_DELEGATE_<NAME>``), or discovered by its usual file name on the library path. With
none, the partition runs on the *host fallback* executor (``xnnpack`` unless configured) and the
choice says so (``fallback=True``, ``executed_on`` naming the host). A library that was asked
for explicitly but cannot be loaded is an error (:class:`RuntimeBackendError`), never a silent
fallback.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from edgepart.errors import BundleError, RuntimeBackendError, UsageError

if TYPE_CHECKING:
    from edgepart.bundle.format import PartitionEntry

__all__ = [
    "DEFAULT_LIBRARIES",
    "DELEGATE_KERNELS",
    "EXECUTORS",
    "ExecutorChoice",
    "choose_executor",
    "get_executor",
    "open_partition",
    "register_executor",
]

log = logging.getLogger(__name__)

DELEGATE_KERNELS = {"xnnpack": "xnnpack", "cpu_builtin": "builtin", "reference": "reference"}
"""Profile delegates that are host CPU kernel sets, and the executor each maps to."""

DEFAULT_LIBRARIES: Mapping[str, tuple[str, ...]] = {
    "gpu": ("tensorflowlite_gpu_delegate",),
    "gpu_mldrift": ("LiteRtGpuAccelerator",),
    "edgetpu": ("edgetpu",),
    "hexagon": ("hexagon_delegate",),
    "nnapi": ("nnapi_delegate",),
    "npu": (),
}
"""Library names (for ``ctypes.util.find_library``) tried when no library is configured."""

_DESCRIPTION = {
    "xnnpack": "host CPU, XNNPACK",
    "builtin": "host CPU, builtin kernels",
    "reference": "host CPU, reference kernels",
}


@dataclass(frozen=True)
class ExecutorChoice:
    """What a partition was asked to run on and what it actually runs on."""

    partition: str
    requested: str
    kind: str
    library: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    explicit: bool = False
    fallback: bool = False
    reason: str = ""

    @property
    def executed_on(self) -> str:
        """Human label of where the partition really runs (says ``fallback`` when it is)."""
        if self.kind == "delegate":
            return f"{self.requested} delegate ({self.library})"
        where = _DESCRIPTION[self.kind]
        if self.fallback:
            return f"{where} (host fallback for {self.requested}: {self.reason})"
        return where

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "requested": self.requested,
            "executor": self.kind,
            "library": self.library,
            "fallback": self.fallback,
            "reason": self.reason,
            "executed_on": self.executed_on,
        }


OpenFn = Callable[[ExecutorChoice, bytes, int], Any]
EXECUTORS: dict[str, OpenFn] = {}


def register_executor(kind: str) -> Callable[[OpenFn], OpenFn]:
    """Decorator adding an executor ``(choice, model_bytes, threads) -> Interpreter``."""

    def deco(fn: OpenFn) -> OpenFn:
        EXECUTORS[kind] = fn
        return fn

    return deco


def get_executor(kind: str) -> OpenFn:
    """The executor registered as ``kind``; the error lists the valid names."""
    try:
        return EXECUTORS[kind]
    except KeyError:
        raise UsageError(
            f"unknown executor {kind!r}; valid executors: {', '.join(sorted(EXECUTORS))}"
        ) from None


def _kernels(resolver: str) -> OpenFn:
    def open_(choice: ExecutorChoice, blob: bytes, threads: int) -> Any:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        return Interpreter(
            model_content=blob,
            num_threads=threads,
            experimental_op_resolver_type=OpResolverType[resolver],
        )

    return open_


register_executor("xnnpack")(_kernels("AUTO"))
register_executor("builtin")(_kernels("BUILTIN_WITHOUT_DEFAULT_DELEGATES"))
register_executor("reference")(_kernels("BUILTIN_REF"))


@register_executor("delegate")
def _delegate(choice: ExecutorChoice, blob: bytes, threads: int) -> Any:
    from ai_edge_litert.interpreter import Interpreter

    assert choice.library is not None
    delegate = load_delegate_checked(choice.library, choice.options, choice.requested)
    return Interpreter(model_content=blob, num_threads=threads, experimental_delegates=[delegate])


def load_delegate_checked(library: str, options: Mapping[str, str], name: str) -> Any:
    """``load_delegate`` with the failure modes turned into one-line errors.

    The library is opened with ``ctypes`` first: LiteRT's own loader raises ``OSError`` or
    ``AttributeError`` from inside its constructor for a missing file or a library without the
    external-delegate entry points, and then prints a second error from its finalizer.
    """
    from ai_edge_litert.interpreter import load_delegate

    try:
        lib = ctypes.CDLL(library)
    except OSError as err:
        raise RuntimeBackendError(
            f"cannot load the {name} delegate library {library!r}: {err}; check the path "
            "(or drop it to run the partition on the host fallback)"
        ) from None
    missing = [
        s
        for s in ("tflite_plugin_create_delegate", "tflite_plugin_destroy_delegate")
        if not hasattr(lib, s)
    ]
    if missing:
        raise RuntimeBackendError(
            f"{library!r} is not a TFLite external delegate library (no {missing[0]} symbol); "
            f"give the {name} delegate's external-delegate .so"
        )
    try:
        return load_delegate(library, dict(options))
    except (ValueError, RuntimeError) as err:
        msg = " ".join(str(err).split())
        raise RuntimeBackendError(
            f"the {name} delegate library {library!r} refused to create a delegate: {msg}"
        ) from None


def choose_executor(
    entry: PartitionEntry,
    *,
    override: str | None = None,
    libraries: Mapping[str, Any] | None = None,
    fallback: str | None = "xnnpack",
    environ: Mapping[str, str] | None = None,
) -> ExecutorChoice:
    """Decide the executor of one partition (no library is loaded here).

    Parameters
    ----------
    entry
        The partition's plan entry (``delegate`` and optional explicit ``executor``).
    override
        Run every partition on this kernel set (``xnnpack``, ``builtin``, ``reference``).
    libraries
        Delegate name -> library path, or ``{"library": path, "options": {...}}``.
    fallback
        Host executor for delegate partitions without a library; ``None`` makes that an error.
    environ
        Where ``EDGEPART_DELEGATE_<NAME>`` is looked up (default ``os.environ``).
    """
    if override is not None:
        if override not in _DESCRIPTION:
            raise UsageError(f"executor override must be one of {', '.join(_DESCRIPTION)}")
        return ExecutorChoice(entry.id, entry.delegate, override, explicit=True)
    ex = entry.executor
    name = (ex.delegate or entry.delegate) if ex is not None else entry.delegate
    if ex is not None and ex.kind != "delegate":
        return ExecutorChoice(entry.id, name, ex.kind, explicit=True)
    if ex is None and entry.delegate in DELEGATE_KERNELS:
        return ExecutorChoice(entry.id, name, DELEGATE_KERNELS[entry.delegate])
    options = dict(ex.options) if ex is not None else {}
    library, explicit = _library_for(
        name,
        ex.library if ex is not None else None,
        libraries or {},
        options,
        environ or os.environ,
    )
    if library is not None:
        return ExecutorChoice(entry.id, name, "delegate", library, options, explicit=explicit)
    if fallback is None:
        raise RuntimeBackendError(
            f"partition {entry.id} needs the {name} delegate but no library is configured and "
            f"fallback is disabled; pass delegate_libraries={{'{name}': PATH}} or set "
            f"EDGEPART_DELEGATE_{name.upper()}"
        )
    return ExecutorChoice(
        entry.id,
        name,
        fallback,
        fallback=True,
        reason=f"no {name} delegate library on this machine",
    )


def _library_for(
    name: str,
    in_plan: str | None,
    libraries: Mapping[str, Any],
    options: dict[str, str],
    environ: Mapping[str, str],
) -> tuple[str | None, bool]:
    given = libraries.get(name)
    if isinstance(given, Mapping):
        options.update({str(k): str(v) for k, v in given.get("options", {}).items()})
        given = given.get("library")
    if given:
        return str(given), True
    if in_plan:
        return in_plan, True
    env = environ.get(f"EDGEPART_DELEGATE_{name.upper()}")
    if env:
        return env, True
    for stem in DEFAULT_LIBRARIES.get(name, ()):
        found = ctypes.util.find_library(stem)
        if found:
            return found, False
    return None, False


def open_partition(
    choice: ExecutorChoice, blob: bytes, threads: int, fallback: str | None = "xnnpack"
) -> tuple[Any, ExecutorChoice]:
    """Create the partition's interpreter; a discovered (not explicit) delegate that fails to
    load falls back to the host executor, and the returned choice records why."""
    try:
        return get_executor(choice.kind)(choice, blob, threads), choice
    except RuntimeBackendError as err:
        if choice.kind != "delegate" or choice.explicit or fallback is None:
            raise
        reason = f"{choice.library} failed to load ({err})"
        log.warning("partition %s: %s; running on the host", choice.partition, reason)
        fb = replace(choice, kind=fallback, library=None, fallback=True, reason=reason)
        return get_executor(fallback)(fb, blob, threads), fb
    except (ValueError, RuntimeError) as err:
        msg = " ".join(str(err).split())
        if choice.kind == "delegate":
            raise RuntimeBackendError(
                f"partition {choice.partition}: the {choice.requested} delegate "
                f"({choice.library}) failed on this partition: {msg}"
            ) from None
        raise BundleError(
            f"partition {choice.partition}: LiteRT cannot load it on {choice.executed_on}: {msg}"
        ) from None
