"""The cost model's view of a device: processors with roofs and overheads, links between memories.

:class:`Hardware` is what roofline and transfer estimates need from a device profile, and
nothing else. :func:`load_hardware` reads a device profile (``device_profiles/*.yaml`` by name
or path, through :mod:`edgepart.devices.profile`) and :func:`hardware_from_profile` converts an
already loaded one; tests and tools can also build :class:`Hardware` directly.

Units are SI throughout: operations per second, bytes per second, bytes, seconds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from edgepart.devices import profile as devprofile
from edgepart.errors import ProfileError
from edgepart.ir.dtypes import DType

__all__ = [
    "Hardware",
    "LinkSpec",
    "ProcessorSpec",
    "hardware_from_profile",
    "load_hardware",
    "peak_key",
]

# Which peak a dtype computes at, in order of preference: a processor without an fp16 peak runs
# fp16 at its fp32 rate, 8-bit integer types share the int8 rate, and so on.
_DEFAULT_FALLBACK = ("INT32", "FLOAT32", "FLOAT16", "INT8")
_PEAK_FALLBACK: dict[str, tuple[str, ...]] = {
    "FLOAT32": ("FLOAT32", "FLOAT16"),
    "FLOAT16": ("FLOAT16", "FLOAT32"),
    "BFLOAT16": ("BFLOAT16", "FLOAT16", "FLOAT32"),
    "FLOAT64": ("FLOAT64", "FLOAT32"),
    "BOOL": _DEFAULT_FALLBACK,
    "INT8": ("INT8", "UINT8", "INT16", "FLOAT16", "FLOAT32"),
    "UINT8": ("UINT8", "INT8", "INT16", "FLOAT16", "FLOAT32"),
    "INT16": ("INT16", "INT8", "FLOAT16", "FLOAT32"),
    "INT4": ("INT4", "INT8", "FLOAT16", "FLOAT32"),
    "INT32": ("INT32", "FLOAT32", "INT8"),
    "INT64": ("INT64", "INT32", "FLOAT32"),
}


def peak_key(dtype: int | DType) -> str:
    """The canonical dtype name a peak is looked up under (``"FLOAT32"``, ``"INT8"``, ...)."""
    try:
        return DType(int(dtype)).name
    except ValueError:
        return "FLOAT32"


@dataclass(frozen=True)
class ProcessorSpec:
    """One processor as the cost model sees it.

    Attributes
    ----------
    peak_ops
        Peak operations per second by dtype name (``"FLOAT32"``, ``"FLOAT16"``, ``"INT8"``);
        a dtype without an entry uses the nearest one (see :meth:`peak`).
    bandwidth
        Sustainable bytes per second between the processor and its memory.
    op_overhead_s
        Fixed cost per kernel launch (added to every op's roofline time).
    invoke_overhead_s
        Fixed cost per partition invocation (delegate dispatch, driver call, sync).
    domain
        The memory this processor reads and writes; transfers happen between domains.
    latency_table
        Path of a measured latency table for this processor, or ``None``.
    """

    name: str
    kind: str = "cpu"
    peak_ops: Mapping[str, float] = field(default_factory=dict)
    bandwidth: float = 10e9
    op_overhead_s: float = 0.0
    invoke_overhead_s: float = 0.0
    domain: str = "dram"
    delegate: str | None = None
    units: int = 1
    threads: int = 1
    memory_bytes: float = math.inf
    latency_table: str | None = None

    def peak(self, dtype: int | DType | str) -> float:
        """Peak ops/s for a dtype, falling back to related dtypes; 0 if none applies.

        Float types fall back only to other float peaks (a processor with only an int8 peak
        cannot run float work); integer types fall back to wider ones, then to float.
        """
        key = dtype if isinstance(dtype, str) else peak_key(dtype)
        for k in _PEAK_FALLBACK.get(key, _DEFAULT_FALLBACK):
            v = self.peak_ops.get(k)
            if v:
                return float(v)
        return 0.0

    @property
    def ridge(self) -> float:
        """FLOPs per byte at which the FLOAT32 roof meets the bandwidth roof."""
        return self.peak("FLOAT32") / self.bandwidth if self.bandwidth > 0 else math.inf


@dataclass(frozen=True)
class LinkSpec:
    """A path between two memory domains: fixed latency plus bytes over bandwidth."""

    src: str
    dst: str
    bandwidth: float
    latency_s: float = 0.0

    def cost(self, nbytes: float) -> float:
        """Seconds to move ``nbytes`` over this link."""
        return self.latency_s + (nbytes / self.bandwidth if self.bandwidth > 0 else math.inf)


@dataclass(frozen=True)
class Hardware:
    """Processors and links of one device (see the module docstring)."""

    name: str
    processors: tuple[ProcessorSpec, ...]
    links: tuple[LinkSpec, ...] = ()
    source: str | None = None
    predictor: str | None = None  # latency predictor file (edgepart.cost.predictor)

    def processor(self, name: str) -> ProcessorSpec:
        """The processor called ``name``; the error lists the valid names."""
        for p in self.processors:
            if p.name == name:
                return p
        names = [p.name for p in self.processors]
        raise ProfileError(f"{self.name}: no processor {name!r}; processors: {names}")

    @property
    def processor_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.processors)

    def link(self, src_domain: str, dst_domain: str) -> LinkSpec | None:
        """The link from one domain to another (either direction if only one is listed)."""
        if src_domain == dst_domain:
            return None
        back = None
        for lk in self.links:
            if lk.src == src_domain and lk.dst == dst_domain:
                return lk
            if lk.src == dst_domain and lk.dst == src_domain:
                back = lk
        return back


_PEAK_NAMES = {
    "fp32": "FLOAT32",
    "fp16": "FLOAT16",
    "int8": "INT8",
    "int16": "INT16",
    "bf16": "BFLOAT16",
    "int4": "INT4",
}


def hardware_from_profile(profile: Any) -> Hardware:
    """Convert a loaded :class:`edgepart.devices.profile.DeviceProfile` to :class:`Hardware`.

    The profile's ``dispatch_overhead_s`` is a per-invocation cost (``invoke_overhead_s``);
    profiles carry no per-kernel launch cost, so ``op_overhead_s`` is 0.
    """
    procs = []
    for p in profile.processors:
        procs.append(
            ProcessorSpec(
                name=p.name,
                kind=p.kind,
                peak_ops={
                    _PEAK_NAMES.get(k, k.upper()): float(q.value)
                    for k, q in p.peak_ops_per_s.items()
                },
                bandwidth=float(p.memory_bandwidth_bytes_per_s.value),
                invoke_overhead_s=float(p.dispatch_overhead_s.value),
                domain=p.memory_domain,
                delegate=p.delegate,
                units=int(p.units.value),
                threads=int(p.threads.value),
                memory_bytes=float(p.memory_capacity_bytes.value),
            )
        )
    links = tuple(
        LinkSpec(lk.src, lk.dst, float(lk.bandwidth_bytes_per_s.value), float(lk.latency_s.value))
        for lk in profile.links
    )
    return Hardware(
        profile.name,
        tuple(procs),
        links,
        getattr(profile, "path", None) or None,
        getattr(profile, "latency_predictor", None) or None,
    )


def load_hardware(name_or_path: str) -> Hardware:
    """Load a device profile by shipped name or YAML path and convert it.

    Raises
    ------
    ProfileError
        If the profile cannot be found or is invalid (names file and key path).
    """
    return hardware_from_profile(devprofile.load_profile(name_or_path))
