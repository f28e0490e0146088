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

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from edgepart.runtime.routing import Routes

__all__ = ["Concurrent", "Serial"]

RunPart = Callable[[int], None]


class Serial:
    """Partitions one after another in plan order."""

    def __init__(self, run_part: RunPart, n: int) -> None:
        self._run = run_part
        self._order = range(n)

    def run(self) -> None:
        run = self._run
        for k in self._order:
            run(k)

    def close(self) -> None:
        pass


class Concurrent:
    """One worker per unit; cross-unit dependencies are waited for with events."""

    def __init__(self, run_part: RunPart, routes: Routes) -> None:
        self._run = run_part
        self._routes = routes
        self._done = [threading.Event() for _ in routes.units]
        self._errors: list[tuple[int, BaseException]] = []
        self._lock = threading.Lock()
        n_workers = len(routes.unit_lists) - 1
        self._pool = ThreadPoolExecutor(max_workers=n_workers, thread_name_prefix="edgepart-unit")

    def run(self) -> None:
        for e in self._done:
            e.clear()
        self._errors.clear()
        lists = self._routes.unit_lists
        futures = [self._pool.submit(self._unit, lst) for lst in lists[1:]]
        try:
            self._unit(lists[0])
        finally:
            for f in futures:
                f.result()
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
        self._pool.shutdown(wait=True)
