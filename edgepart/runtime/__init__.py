"""Run bundles: every partition in its own LiteRT interpreter, behind LiteRT's Interpreter API.

:class:`PartitionedInterpreter` is the entry point (see ``docs/runtime.md``); executors per
processor are in :mod:`edgepart.runtime.executors`, tensor routing in
:mod:`edgepart.runtime.routing`, concurrent scheduling in :mod:`edgepart.runtime.dispatch` and
streaming in :mod:`edgepart.runtime.stream`.
"""

from __future__ import annotations

from edgepart.runtime.details import PartitionInvokeError, TensorValueError
from edgepart.runtime.executors import (
    AUTO_FALLBACK,
    EXECUTORS,
    ExecutorChoice,
    choose_executor,
    get_executor,
    register_executor,
)
from edgepart.runtime.interpreter import HostFallbackWarning, PartitionedInterpreter

__all__ = [
    "AUTO_FALLBACK",
    "EXECUTORS",
    "ExecutorChoice",
    "HostFallbackWarning",
    "PartitionInvokeError",
    "PartitionedInterpreter",
    "TensorValueError",
    "choose_executor",
    "get_executor",
    "register_executor",
]
