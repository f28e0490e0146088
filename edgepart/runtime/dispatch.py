"""Running the partitions of one inference: in order, or concurrently across units.

:class:`Serial` runs partitions in plan (dependency) order on the calling thread.
:class:`Concurrent` gives every unit a worker that runs that unit's partitions in plan order,
waiting for dependencies on other units; the calling thread is the worker of the first unit.
LiteRT releases the GIL inside ``invoke``, so partitions on different units overlap. Waiting
only for cross-unit dependencies and running each unit's list in a topological order cannot
deadlock: a wait chain would need a dependency pointing backwards in that order.

An error in one partition is re-raised to the caller after every worker has stopped;
partitions that depend on the failed one are skipped, and the error of the earliest failed
partition (in plan order) is the one raised.
"""

from __future__ import annotations

import functools
import queue
import threading
import weakref
from collections.abc import Callable

from edgepart.errors import UsageError
from edgepart.runtime.routing import Routes

__all__ = ["Concurrent", "Serial"]

RunPart = Callable[[int], None]


class Serial:
    """Partitions one after another in plan order, by one callable that runs them all.

    The interpreter passes a single loop over pre-bound calls (no per-partition dispatch):
    with several small partitions the Python work between two LiteRT invokes is part of the
    latency.
    """

    def __init__(self, run_all: Callable[[], None]) -> None:
        self.run = run_all

    def close(self) -> None:
        pass


class Concurrent:
    """One worker per unit; cross-unit dependencies are waited for with events.

    The workers are threads started once and kept (not a pool task per ``invoke``): each waits
    on its own queue for the next run, so an ``invoke`` costs one queue hand-off per extra
    unit. A worker holds no reference to the scheduler between runs; when the scheduler is
    closed or garbage-collected, its workers are told to stop.
    """

    def __init__(self, run_part: RunPart, routes: Routes) -> None:
        self._run = run_part
        self._routes = routes
        self._done = [threading.Event() for _ in routes.units]
        self._errors: list[tuple[int, BaseException]] = []
        self._lock = threading.Lock()
        self._go: list[queue.SimpleQueue[Callable[[], None] | None]] = [
            queue.SimpleQueue() for _ in routes.unit_lists[1:]
        ]
        self._finished: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(
                target=_worker, args=(go, self._finished), daemon=True, name=f"edgepart-unit-{i}"
            )
            for i, go in enumerate(self._go, start=1)
        ]
        for th in self._threads:
            th.start()
        self._finalizer = weakref.finalize(self, _stop_workers, self._go)

    def run(self) -> None:
        if not self._finalizer.alive:
            raise UsageError("this interpreter was closed; create a new one to invoke again")
        for e in self._done:
            e.clear()
        self._errors.clear()
        lists = self._routes.unit_lists
        for go, lst in zip(self._go, lists[1:], strict=True):
            go.put(functools.partial(self._unit, lst))
        try:
            self._unit(lists[0])
        finally:
            for _ in self._go:
                self._finished.get()
        if self._errors:
            _, err = min(self._errors, key=lambda e: e[0])
            raise err

    def _unit(self, positions: tuple[int, ...]) -> None:
        waits = self._routes.waits
        for k in positions:
            for d in waits[k]:
                self._done[d].wait()
            if not self._errors:
                try:
                    self._run(k)
                except BaseException as err:  # re-raised by run()
                    with self._lock:
                        self._errors.append((k, err))
            self._done[k].set()

    def close(self) -> None:
        self._finalizer()
        for th in self._threads:
            th.join()


def _worker(
    go: queue.SimpleQueue[Callable[[], None] | None], finished: queue.SimpleQueue[None]
) -> None:
    """Run each job put on ``go`` (a unit's partitions) until ``None`` arrives."""
    while True:
        job = go.get()
        if job is None:
            return
        try:
            job()  # _unit records partition errors itself
        finally:
            del job  # hold no reference to the scheduler between runs
            finished.put(None)


def _stop_workers(gos: list[queue.SimpleQueue[Callable[[], None] | None]]) -> None:
    for go in gos:
        go.put(None)
