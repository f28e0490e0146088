"""Run native work that may crash in a child process, so the caller survives and says why.

LiteRT (like any native library) can still crash on inputs no check anticipated.
:func:`run_isolated` runs a function in a fresh ``spawn`` child (no state shared with the
parent, which may already hold interpreters and their threads) and returns its result; an
:class:`~edgepart.errors.EdgepartError` raised in the child is raised in the parent, and a child
killed by a signal becomes one :class:`~edgepart.errors.RuntimeBackendError` line naming the
signal and the last progress label it reported (``run --verify`` and ``profile`` use this).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

from edgepart.devices import search_path
from edgepart.devices.search_path import using_search_path
from edgepart.errors import EdgepartError, RuntimeBackendError

__all__ = ["run_isolated"]

Progress = Callable[[int, int, str], None]


def run_isolated(
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    *,
    what: str,
    progress: Progress | None = None,
) -> Any:
    """``fn(*args)`` (with ``progress=`` when ``progress`` is given) in a child process.

    ``fn`` must be a module-level function and its arguments and result picklable. The search
    path given with ``--search-path`` is the child's too.

    Raises
    ------
    EdgepartError
        What ``fn`` raised in the child.
    RuntimeBackendError
        The child died (a crash in native code: the signal is named) or raised something other
        than an EdgepartError (its last line).
    """
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    dirs = [str(d) for d in search_path._option_dirs]
    child = ctx.Process(
        target=_child, args=(send, fn, args, progress is not None, dirs, os.getpid()), daemon=True
    )
    child.start()
    send.close()
    last = ""
    outcome: tuple[str, Any] | None = None
    try:
        while outcome is None:
            try:
                kind, payload = receive.recv()
            except EOFError:
                break
            if kind == "progress":
                last = str(payload[2])
                if progress is not None:
                    progress(*payload)
            else:
                outcome = (kind, payload)
    finally:
        receive.close()
        child.join()
    if outcome is not None and outcome[0] == "ok":
        return outcome[1]
    if outcome is not None:
        raise outcome[1]
    code = child.exitcode or 0
    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
    during = f" while at {last!r}" if last else ""
    raise RuntimeBackendError(
        f"{what}: LiteRT crashed ({how}){during}; edgepart ran it in a separate process and "
        "survived, but this input cannot be run here"
    )


def _child(
    send: Any,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    report: bool,
    dirs: list[str],
    parent: int,
) -> None:
    _die_with_parent(parent)

    def progress(done: int, total: int, label: str) -> None:
        send.send(("progress", (done, total, label)))

    try:
        with using_search_path(dirs):
            result = fn(*args, progress=progress) if report else fn(*args)
        send.send(("ok", result))
    except EdgepartError as err:
        send.send(("error", err))
    except BaseException as err:  # anything else: one line, not a traceback in the parent
        last = traceback.format_exception_only(type(err), err)[-1].strip()
        send.send(("error", RuntimeBackendError(f"failed in the child process: {last}")))
    finally:
        send.close()


def _die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this child when the process that started it dies (even by SIGKILL), so a
    killed ``profile`` leaves no LiteRT work running; if the parent is already gone, exit."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(ctypes.c_int(1), ctypes.c_ulong(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # no prctl: the child still ends when it next reports
        return
    if os.getppid() != parent:  # it died before prctl took effect
        os._exit(1)
