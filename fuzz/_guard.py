"""What every harness checks besides "no exception but EdgepartError": bounded memory.

A harness's one-input function is wrapped so that the growth of the process's peak resident set
during one input is at most ``10 x len(input)``, with a floor of 1 MiB: CPython's small-object
allocator takes memory from the system in 1 MiB arenas, so a growth below that says nothing
about the input. Hangs are libFuzzer's ``-timeout`` (5 s, set by ``run.py``).
"""

from __future__ import annotations

import contextlib
import resource
import sys
from collections.abc import Callable

from edgepart.errors import EdgepartError

MEMORY_FACTOR = 10
ARENA = 1 << 20
REPORT_EVERY = 1000


class MemoryBlowup(AssertionError):
    """One input made the peak resident set grow more than ``MEMORY_FACTOR`` times its size."""


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


class Stats:
    """Counts of one harness's executions, read by ``run.py`` at exit."""

    runs = 0
    refused = 0
    accepted = 0
    largest_growth = 0
    largest_input = 0
    name = ""

    @classmethod
    def report(cls) -> None:
        """One line of counts on stderr (libFuzzer ends with exit(), so this runs periodically)."""
        print(
            f"fuzz {cls.name}: runs={cls.runs} accepted={cls.accepted} refused={cls.refused} "
            f"largest_input={cls.largest_input} largest_growth={cls.largest_growth}",
            file=sys.stderr,
            flush=True,
        )


def warm_up(one: Callable[[bytes], None], inputs: list[bytes]) -> None:
    """Run the seeds once, unchecked: first use imports modules and fills caches."""
    for data in inputs:
        with contextlib.suppress(EdgepartError):
            one(data)


def guarded(one: Callable[[bytes], None]) -> Callable[[bytes], None]:
    """``one`` with the memory check; an :class:`EdgepartError` is a refusal, not a failure."""

    def run(data: bytes) -> None:
        before = _peak()
        Stats.runs += 1
        if Stats.runs % REPORT_EVERY == 0:
            Stats.report()
        Stats.largest_input = max(Stats.largest_input, len(data))
        try:
            one(data)
            Stats.accepted += 1
        except EdgepartError as err:
            Stats.refused += 1
            msg = str(err)
            if "\n" in msg or not msg:
                raise AssertionError(f"error message is not one line: {msg!r}") from None
        growth = _peak() - before
        Stats.largest_growth = max(Stats.largest_growth, growth)
        if growth > max(ARENA, MEMORY_FACTOR * len(data)):
            raise MemoryBlowup(
                f"peak resident set grew {growth} bytes for a {len(data)}-byte input"
            )

    return run
