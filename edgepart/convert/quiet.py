"""Keeping the converters' and LiteRT's own console output out of edgepart's.

TensorFlow, the MLIR converter and LiteRT write from C++ straight to file descriptors 1 and 2
(start-up banners, "Created TensorFlow Lite XNNPACK delegate", converter diagnostics), which
Python-level redirection cannot catch. :func:`quiet_fds` points both descriptors at a temporary
file for the duration of a call; the text stays readable, because a converter's error details
are in it.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any

__all__ = ["quiet_all", "quiet_fds"]


@contextlib.contextmanager
def quiet_fds() -> Iterator[Any]:
    """Send what C++ code prints on fds 1 and 2 to a temporary file (readable afterwards through
    the yielded object's ``read()``) while Python's ``sys.stdout``/``sys.stderr`` keep writing to
    the real streams (progress bars, warnings)."""
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:
        saved: list[tuple[int, int]] = []
        streams = (sys.stdout, sys.stderr)
        swapped: list[Any] = []
        try:
            for fd in (1, 2):
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    streams[fd - 1].flush()
                saved.append((fd, os.dup(fd)))
                os.dup2(log.fileno(), fd)
            for (fd, copy), stream in zip(saved, streams, strict=True):
                if getattr(stream, "fileno", None) is None:
                    continue
                with contextlib.suppress(OSError, ValueError):
                    if stream.fileno() != fd:
                        continue  # already redirected at the Python level (pytest capsys)
                    real = open(copy, "w", closefd=False, buffering=1, encoding="utf-8")  # noqa: SIM115
                    swapped.append(real)
                    if fd == 1:
                        sys.stdout = real
                    else:
                        sys.stderr = real
        except OSError:  # no real fds (embedded interpreters): leave output alone
            pass
        try:
            yield _Log(log)
        finally:
            for real in swapped:
                with contextlib.suppress(OSError, ValueError):
                    real.flush()
            sys.stdout, sys.stderr = streams
            for real in swapped:
                real.close()
            for fd, copy in saved:
                os.dup2(copy, fd)
                os.close(copy)


class _Log:
    def __init__(self, f: Any) -> None:
        self._f = f

    def read(self) -> str:
        self._f.flush()
        self._f.seek(0)
        text: str = self._f.read()
        return text


@contextlib.contextmanager
def quiet_all() -> Iterator[Any]:
    """:func:`quiet_fds` plus Python-level prints, log records and warnings, for libraries that
    narrate their work on stdout (``litert-torch``'s step log, ``ai-edge-quantizer``'s bars)."""
    buf = io.StringIO()
    previous = logging.root.manager.disable
    with quiet_fds() as log, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
                yield log
        finally:
            logging.disable(previous)
