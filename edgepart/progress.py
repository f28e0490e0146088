"""Progress bars for long steps: drawn on a terminal, silent everywhere else.

Long steps (conversion with calibration, profiling, the exact solver, benchmarking several
phones) report progress through a plain callback, ``progress(done, total, label)``, so the layer
doing the work imports nothing to draw with; the command line passes a :class:`Progress`, which
is such a callable::

    with Progress("calibrating", unit="sample") as bar:
        for k, sample in enumerate(samples):
            ...
            bar(k + 1, len(samples), name)

A bar draws on its stream (stderr by default) only when that stream is a terminal, so logs,
pipes, CI output and captured test output never see carriage returns.
``EDGEPART_PROGRESS=0`` turns bars off on a terminal too, and ``EDGEPART_PROGRESS=1`` forces them
on (for a terminal the process cannot see as one). Redraws are throttled to ``min_interval``
seconds; the last state is drawn when the bar closes, followed by a newline. Calls may come from
several threads (one per phone).
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TypeVar

__all__ = ["Progress", "ProgressCallback", "progress_enabled", "track"]

ProgressCallback = Callable[[int, int, str], None]
"""``progress(done, total, label)``: ``done`` of ``total`` units finished, ``label`` says what."""

T = TypeVar("T")

_WIDTH = 24  # characters of the bar itself


def progress_enabled(stream: IO[str]) -> bool:
    """True if a bar should draw on ``stream`` (see the module docstring)."""
    env = os.environ.get("EDGEPART_PROGRESS", "").strip()
    if env in ("0", "1"):
        return env == "1"
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed stream
        return False


def _clock(seconds: float) -> str:
    s = int(seconds)
    return (
        f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
    )


class Progress:
    """One progress bar; call it as ``bar(done, total, label)`` or use :meth:`advance`.

    Parameters
    ----------
    desc
        What the step is ("calibrating", "profiling").
    total
        Units of work, if known up front (a call may change it).
    unit
        What a unit is ("op", "sample", "run"), shown after the count.
    stream
        Where to draw; default ``sys.stderr`` (looked up when the bar is created).
    enabled
        Draw or not; default: :func:`progress_enabled` on ``stream``.
    min_interval
        Seconds between redraws (the final state is always drawn).
    """

    def __init__(
        self,
        desc: str,
        total: int | None = None,
        *,
        unit: str = "",
        stream: IO[str] | None = None,
        enabled: bool | None = None,
        min_interval: float = 0.1,
    ) -> None:
        self.desc = desc
        self.total = total
        self.unit = unit
        self.done = 0
        self.label = ""
        self._stream = stream  # None: whatever sys.stderr is when drawing (it may be swapped)
        self.enabled = progress_enabled(stream or sys.stderr) if enabled is None else enabled
        self._min_interval = min_interval
        self._t0 = time.monotonic()
        self._last_draw = -float("inf")
        self._drawn = False
        self._closed = False
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ updates
    def __call__(self, done: int, total: int | None = None, label: str = "") -> None:
        """Set the state: ``done`` of ``total`` units, working on ``label``."""
        with self._lock:
            self.done = int(done)
            if total is not None:
                self.total = int(total)
            self.label = label
            self._maybe_draw()

    def advance(self, n: int = 1, label: str = "") -> None:
        """``n`` more units are done."""
        with self._lock:
            self.done += n
            self.label = label
            self._maybe_draw()

    def close(self) -> None:
        """Draw the final state and end the line (nothing if the bar never drew)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self.enabled and self._drawn:
                self._draw()
                self._write("\n")

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ drawing
    def line(self) -> str:
        """The text of the bar as it would be drawn now."""
        elapsed = time.monotonic() - self._t0
        unit = f" {self.unit}" if self.unit else ""
        if self.total:
            frac = min(max(self.done / self.total, 0.0), 1.0)
            full = int(frac * _WIDTH)
            bar = "#" * full + "-" * (_WIDTH - full)
            eta = ""
            if 0 < self.done < self.total:
                eta = f" <{_clock(elapsed / self.done * (self.total - self.done))}"
            text = (
                f"{self.desc} [{bar}] {self.done}/{self.total}{unit} {frac * 100:3.0f}% "
                f"{_clock(elapsed)}{eta}"
            )
        else:
            text = f"{self.desc} {self.done}{unit} {_clock(elapsed)}"
        if self.label:
            text += f" {self.label}"
        return text

    def _maybe_draw(self) -> None:
        if not self.enabled or self._closed:
            return
        now = time.monotonic()
        final = self.total is not None and self.done >= self.total
        if final or now - self._last_draw >= self._min_interval:
            self._last_draw = now
            self._draw()

    def _draw(self) -> None:
        width = max(20, shutil.get_terminal_size((80, 24)).columns - 1)
        text = self.line()[:width]
        self._write("\r" + text.ljust(width))
        self._drawn = True

    def _write(self, text: str) -> None:
        stream = self._stream or sys.stderr
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):  # the terminal went away: stop drawing, keep working
            self.enabled = False


def track(
    items: Iterable[T],
    desc: str,
    total: int | None = None,
    *,
    unit: str = "",
    stream: IO[str] | None = None,
    enabled: bool | None = None,
) -> Iterator[T]:
    """Yield ``items`` while a :class:`Progress` counts them (closed when the loop ends)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with Progress(desc, total, unit=unit, stream=stream, enabled=enabled) as bar:
        for item in items:
            yield item
            bar.advance()
