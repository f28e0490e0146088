"""The host executors: LiteRT's CPU kernel sets, named once for every layer.

A partition runs either on an external delegate library or on one of these kernel sets of the
host's LiteRT (``ai_edge_litert.interpreter.OpResolverType``). Delegate files name them (the
kernel set a CPU delegate *is*, or the host fallback of an accelerator); bundles, the runtime,
host profiling and the command line take the same names.

>>> list(HOST_EXECUTORS)
['xnnpack', 'builtin', 'reference']
>>> HOST_EXECUTORS["builtin"].resolver
'BUILTIN_WITHOUT_DEFAULT_DELEGATES'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["DEFAULT_EXECUTOR", "EXECUTOR_NAMES", "HOST_EXECUTORS", "MAX_THREADS", "HostExecutor"]

MAX_THREADS = 256
"""Most CPU threads one interpreter may be given: LiteRT's builtin kernels reserve memory per
thread (a plan asking for a million took 16 GB), and no edge CPU has more cores."""


@dataclass(frozen=True, slots=True)
class HostExecutor:
    """One LiteRT kernel set on the host CPU.

    ``resolver`` is the ``OpResolverType`` member that selects it; ``description`` is how run
    reports name it.
    """

    name: str
    resolver: str
    description: str


HOST_EXECUTORS: Mapping[str, HostExecutor] = {
    e.name: e
    for e in (
        # LiteRT's default: builtin kernels with the XNNPACK delegate applied lazily.
        HostExecutor("xnnpack", "AUTO", "host CPU, XNNPACK"),
        HostExecutor("builtin", "BUILTIN_WITHOUT_DEFAULT_DELEGATES", "host CPU, builtin kernels"),
        HostExecutor("reference", "BUILTIN_REF", "host CPU, reference kernels"),
    )
}
"""The executors by name, in a fixed order (fastest first)."""

EXECUTOR_NAMES: tuple[str, ...] = tuple(HOST_EXECUTORS)
DEFAULT_EXECUTOR = "xnnpack"
"""What LiteRT runs when nothing else is asked for, and the usual host fallback."""
