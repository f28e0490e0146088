"""Executors: how one partition runs in its own LiteRT interpreter.

Four kinds, chosen per partition from its plan entry and its delegate's file
(``delegates/NAME.yaml``, key ``library``):

``xnnpack``, ``builtin``, ``reference``
    The host executors (:mod:`edgepart.devices.host_executors`): LiteRT's CPU kernel sets. A
    delegate whose file says ``load: builtin`` runs on the one it names (``xnnpack`` for the
    XNNPACK delegate, ``builtin`` for ``cpu_builtin``).
``delegate``
    An external delegate library loaded with ``load_delegate(path, options)`` (``load:
    external``: the GPU, NNAPI, Hexagon, Edge TPU delegates where their libraries exist); ops
    the delegate declines run on LiteRT's CPU kernels, as in LiteRT itself.

Choosing (:func:`choose_executor`) is a pure decision returned as an :class:`ExecutorChoice`;
opening (:func:`open_partition`) applies it. A delegate partition needs a library: given
explicitly by the user (``delegate_libraries``, ``--delegate-library``, or the environment
variable ``EDGEPART_DELEGATE_<NAME>``), or discovered by the file names its delegate file lists
(``library.files``) on the library path. A bundle names delegates, never libraries: nothing in
a plan chooses code to load (``docs/security.md``). With none, the partition runs on the
*host fallback* executor (the delegate file's ``library.fallback``, ``xnnpack`` for every
shipped one, unless the caller names one) and the choice says so (``fallback=True``,
``executed_on`` naming the host). A library that was asked for explicitly but cannot be loaded
is an error (:class:`RuntimeBackendError`), never a silent fallback.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ai_edge_litert.interpreter import Interpreter, OpResolverType
from ai_edge_litert.interpreter import load_delegate as litert_load_delegate

from edgepart.devices.delegate import DelegateSpec, accelerator_kernels, load_delegate
from edgepart.devices.host_executors import DEFAULT_EXECUTOR, EXECUTOR_NAMES, HOST_EXECUTORS
from edgepart.devices.search_path import find
from edgepart.errors import BundleError, RuntimeBackendError, UsageError
from edgepart.tflite.litert_safety import check_model
from edgepart.tflite.reader import read_model_bytes

if TYPE_CHECKING:
    from edgepart.bundle.format import PartitionEntry

__all__ = [
    "AUTO_FALLBACK",
    "EXECUTORS",
    "ExecutorChoice",
    "check_for_litert",
    "check_host_can_run",
    "choose_executor",
    "delegate_file",
    "get_executor",
    "open_partition",
    "prepare_error",
    "register_executor",
]

log = logging.getLogger(__name__)

AUTO_FALLBACK = "auto"
"""``fallback`` value meaning: the host executor the partition's delegate file names."""


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
    host: str = DEFAULT_EXECUTOR  # the host executor standing in if the library fails to load

    @property
    def executed_on(self) -> str:
        """Human label of where the partition really runs (says ``fallback`` when it is)."""
        if self.kind == "delegate":
            return f"{self.requested} delegate ({self.library})"
        where = HOST_EXECUTORS[self.kind].description
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


def check_for_litert(blob: bytes, where: str) -> None:
    """Refuse a partition file LiteRT would crash on, before any interpreter sees it
    (:mod:`edgepart.tflite.litert_safety`)."""
    check_model(read_model_bytes(blob, source=where), where)


def _kernels(resolver: str) -> OpenFn:
    def open_(choice: ExecutorChoice, blob: bytes, threads: int) -> Any:
        check_for_litert(blob, f"partition {choice.partition}")
        return Interpreter(
            model_content=blob,
            num_threads=threads,
            experimental_op_resolver_type=OpResolverType[resolver],
        )

    return open_


for _host in HOST_EXECUTORS.values():
    register_executor(_host.name)(_kernels(_host.resolver))


@register_executor("delegate")
def _delegate(choice: ExecutorChoice, blob: bytes, threads: int) -> Any:
    assert choice.library is not None
    check_for_litert(blob, f"partition {choice.partition}")
    delegate = load_delegate_checked(choice.library, choice.options, choice.requested)
    return Interpreter(model_content=blob, num_threads=threads, experimental_delegates=[delegate])


def load_delegate_checked(library: str, options: Mapping[str, str], name: str) -> Any:
    """``load_delegate`` with the failure modes turned into one-line errors.

    The library is opened with ``ctypes`` first: LiteRT's own loader raises ``OSError`` or
    ``AttributeError`` from inside its constructor for a missing file or a library without the
    external-delegate entry points, and then prints a second error from its finalizer.
    """

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
        return litert_load_delegate(library, dict(options))
    except (ValueError, RuntimeError) as err:
        msg = " ".join(str(err).split())
        raise RuntimeBackendError(
            f"the {name} delegate library {library!r} refused to create a delegate: {msg}"
        ) from None


def delegate_file(name: str) -> DelegateSpec | None:
    """The delegate file ``name`` on the search path, or None (a bundle made elsewhere)."""
    return load_delegate(name) if find("delegates", name) is not None else None


def choose_executor(
    entry: PartitionEntry,
    *,
    override: str | None = None,
    libraries: Mapping[str, Any] | None = None,
    fallback: str | None = AUTO_FALLBACK,
    environ: Mapping[str, str] | None = None,
) -> ExecutorChoice:
    """Decide the executor of one partition (no library is loaded here).

    Parameters
    ----------
    entry
        The partition's plan entry (``delegate`` and optional explicit ``executor``).
    override
        Run every partition on this host executor (``xnnpack``, ``builtin``, ``reference``).
    libraries
        Delegate name -> library path, or ``{"library": path, "options": {...}}``.
    fallback
        Host executor for delegate partitions without a library: ``"auto"`` (the delegate
        file's ``library.fallback``), a host executor name, or ``None`` to make that an error.
    environ
        Where ``EDGEPART_DELEGATE_<NAME>`` is looked up (default ``os.environ``).

    Raises
    ------
    UsageError
        An override or fallback that is not a host executor.
    RuntimeBackendError
        No library for a delegate partition while ``fallback`` is None.
    """
    if override is not None:
        if override not in HOST_EXECUTORS:
            raise UsageError(f"executor override must be one of {', '.join(EXECUTOR_NAMES)}")
        return ExecutorChoice(entry.id, entry.delegate, override, explicit=True)
    if fallback is not None and fallback != AUTO_FALLBACK and fallback not in HOST_EXECUTORS:
        raise UsageError(
            f"fallback executor must be {AUTO_FALLBACK} or one of {', '.join(EXECUTOR_NAMES)}, "
            f"got {fallback!r}"
        )
    ex = entry.executor
    name = (ex.delegate or entry.delegate) if ex is not None else entry.delegate
    if ex is not None and ex.kind != "delegate":
        return ExecutorChoice(entry.id, name, ex.kind, explicit=True)
    spec = delegate_file(name)
    if ex is None:
        if spec is not None and spec.host_executor is not None:
            return ExecutorChoice(entry.id, name, spec.host_executor)
        if spec is None and name in HOST_EXECUTORS:  # a plan may name a kernel set directly
            return ExecutorChoice(entry.id, name, name)
    host = spec.library.fallback if spec is not None else DEFAULT_EXECUTOR
    if fallback is not None and fallback != AUTO_FALLBACK:
        host = fallback
    options = dict(spec.library.options) if spec is not None else {}
    options.update(ex.options if ex is not None else {})
    library, explicit = _library_for(
        name,
        libraries or {},
        options,
        environ or os.environ,
        spec.library.stems if spec is not None else (),
    )
    if library is not None:
        return ExecutorChoice(
            entry.id, name, "delegate", library, options, explicit=explicit, host=host
        )
    if fallback is None:
        raise RuntimeBackendError(
            f"partition {entry.id} needs the {name} delegate but no library is configured and "
            f"fallback is disabled; pass delegate_libraries={{'{name}': PATH}} or set "
            f"EDGEPART_DELEGATE_{name.upper()}"
        )
    return ExecutorChoice(
        entry.id,
        name,
        host,
        fallback=True,
        reason=f"no {name} delegate library on this machine",
        host=host,
    )


def _library_for(
    name: str,
    libraries: Mapping[str, Any],
    options: dict[str, str],
    environ: Mapping[str, str],
    stems: tuple[str, ...],
) -> tuple[str | None, bool]:
    given = libraries.get(name)
    if isinstance(given, Mapping):
        options.update({str(k): str(v) for k, v in given.get("options", {}).items()})
        given = given.get("library")
    if given:
        return str(given), True
    env = environ.get(f"EDGEPART_DELEGATE_{name.upper()}")
    if env:
        return env, True
    for stem in stems:
        found = ctypes.util.find_library(stem)
        if found:
            return found, False
    return None, False


def check_host_can_run(entry: PartitionEntry, choice: ExecutorChoice, blob: bytes) -> None:
    """Refuse to run a partition on a host executor when it holds an accelerator's compiled
    program (an ``edgetpu-custom-op``): no CPU kernel exists for it, so there is no fallback.

    Raises
    ------
    RuntimeBackendError
        One line: which partition, which program, which library it needs.
    """
    kernels = accelerator_kernels()
    if not kernels:
        return
    model = read_model_bytes(blob, source=entry.file)
    found = sorted({sg.op_name(i) for sg in model.subgraphs for i in range(sg.num_ops)} & kernels)
    if not found:
        return
    spec = delegate_file(entry.delegate)
    files = ", ".join(spec.library.files) if spec is not None and spec.library.files else ""
    need = f"the {entry.delegate} runtime library" + (f" ({files})" if files else "")
    why = f"; {choice.reason}" if choice.reason else ""
    raise RuntimeBackendError(
        f"partition {entry.id} runs a compiled {found[0]} program, which needs {need}{why}; "
        "a compiled program has no CPU kernel, so it cannot fall back to the host: run the "
        f"bundle where the device and its library are (--delegate-library "
        f"{entry.delegate}=PATH)"
    )


def prepare_error(where: str, err: Exception) -> BundleError:
    """LiteRT's failure to prepare a model as one line, with what to do about it."""
    msg = " ".join(str(err).split())
    hint = ""
    m = re.search(r"unresolved custom op: ([\w./-]+)", msg)
    if m:
        hint = (
            f"; LiteRT here has no kernel for the custom op {m.group(1).rstrip('.')}: register "
            "it in the "
            "interpreter that runs the model (the framework that made the model ships it, e.g. "
            "MediaPipe)"
        )
        msg = f"Encountered unresolved custom op: {m.group(1).rstrip('.')}"
    elif "reshape" in msg.lower() or "failed to prepare" in msg:
        hint = (
            "; if the model has inputs of dynamic size, give their sizes with --input-shape "
            "and re-create the bundle"
        )
    return BundleError(f"{where}: LiteRT cannot prepare it: {msg[:300]}{hint}")


def open_partition(
    choice: ExecutorChoice, blob: bytes, threads: int, fallback: str | None = AUTO_FALLBACK
) -> tuple[Any, ExecutorChoice]:
    """Create the partition's interpreter; a discovered (not explicit) delegate that fails to
    load falls back to the host executor (``fallback``, or with ``"auto"`` the choice's
    ``host``), and the returned choice records why."""
    try:
        return get_executor(choice.kind)(choice, blob, threads), choice
    except RuntimeBackendError as err:
        if choice.kind != "delegate" or choice.explicit or fallback is None:
            raise
        reason = f"{choice.library} failed to load ({err})"
        log.warning("partition %s: %s; running on the host", choice.partition, reason)
        host = choice.host if fallback == AUTO_FALLBACK else fallback
        fb = replace(choice, kind=host, library=None, fallback=True, reason=reason)
        return get_executor(host)(fb, blob, threads), fb
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
