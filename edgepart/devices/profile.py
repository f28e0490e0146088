"""Device profiles (``device_profiles/*.yaml``): processors, memories, links; every number sourced.

A profile describes one real device: its processors (kind, the LiteRT delegate that reaches it,
unit and thread counts, peak throughput per dtype, memory bandwidth and capacity, dispatch
overhead), its memory domains and the links between them. Every number is a :class:`Quantity`
carrying its provenance (``vendor_spec``, ``third_party``, ``measured`` or ``estimated``) and a
source note, so estimates are never mistaken for measurements. Format: ``docs/profiles.md``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgepart.devices import search_path
from edgepart.devices.delegate import delegate_names
from edgepart.devices.yaml_files import Loc, check_header, load_yaml, resolve_yaml
from edgepart.errors import ProfileError

__all__ = [
    "HOST",
    "PROVENANCES",
    "DeviceProfile",
    "Link",
    "MemoryDomain",
    "Processor",
    "Quantity",
    "host_profile_path",
    "load_profile",
    "profile_dir",
    "profile_names",
]

SCHEMA = "edgepart/device@1"
PROVENANCES = ("vendor_spec", "third_party", "measured", "estimated")
KINDS = ("cpu", "gpu", "dsp", "npu")
DTYPES = ("fp32", "fp16", "int8")

MAX_UNITS = 1024
"""Most units (and threads) a processor may have: every unit is a schedule lane, so the
placement's arrays grow with the count."""


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number with its unit (implied by the field), provenance and source note."""

    value: float
    provenance: str
    source: str


@dataclass(frozen=True, slots=True)
class MemoryDomain:
    """A memory processors read and write (DRAM, on-chip SRAM, GPU-local memory)."""

    name: str
    capacity_bytes: Quantity
    bandwidth_bytes_per_s: Quantity
    note: str = ""


@dataclass(frozen=True, slots=True)
class Processor:
    """One compute unit group of a device, reached through one LiteRT delegate."""

    name: str
    kind: str
    delegate: str
    units: Quantity
    threads: Quantity
    peak_ops_per_s: Mapping[str, Quantity]
    memory_bandwidth_bytes_per_s: Quantity
    memory_capacity_bytes: Quantity
    memory_domain: str
    dispatch_overhead_s: Quantity
    note: str = ""
    transfers_on_unit: bool = False  # placement model options (docs/costgraph.md)
    single_partition: bool = False


@dataclass(frozen=True, slots=True)
class Link:
    """A data path between two memory domains (a copy or cache-coherent hand-over)."""

    src: str
    dst: str
    bandwidth_bytes_per_s: Quantity
    latency_s: Quantity
    note: str = ""


@dataclass(frozen=True, slots=True)
class DeviceProfile:
    """A validated device profile."""

    name: str
    title: str
    soc: str
    source: str
    processors: tuple[Processor, ...]
    memory_domains: Mapping[str, MemoryDomain]
    links: tuple[Link, ...]
    default_delegates: tuple[str, ...] = ()
    context: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""
    latency_predictor: str = ""  # absolute path of the predictor file, "" if none

    def processor(self, name: str) -> Processor:
        for p in self.processors:
            if p.name == name:
                return p
        raise ProfileError(
            f"{self.path}: no processor {name!r}; processors: "
            f"{', '.join(p.name for p in self.processors)}"
        )

    def processor_for_delegate(self, delegate: str) -> Processor | None:
        for p in self.processors:
            if p.delegate == delegate:
                return p
        return None


def profile_dir() -> Path:
    """The directory of the shipped profiles (``<repo>/device_profiles``)."""
    return search_path.shipped_dir("device_profiles")


def profile_names() -> list[str]:
    """Names of the device profiles on the search path (user directories and shipped), sorted."""
    return search_path.names("device_profiles")


HOST = "host"


def host_profile_path() -> Path:
    """Where ``edgepart calibrate --host`` writes this machine's profile (``host.yaml``):
    ``$EDGEPART_HOST_PROFILE`` if set, else ``$XDG_CACHE_HOME/edgepart/host/host.yaml``
    (``~/.cache/...`` without it)."""
    env = os.environ.get("EDGEPART_HOST_PROFILE")
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "edgepart" / "host" / "host.yaml"


def load_profile(name_or_path: str | os.PathLike[str]) -> DeviceProfile:
    """Load a profile by name (``"pixel8"``, found on the search path) or a YAML file by path.

    The name ``host`` (unless a shipped profile has it) is this machine's calibrated profile,
    :func:`host_profile_path`.

    Raises
    ------
    ProfileError
        Unknown name (listing the known ones), no calibrated host profile, or any invalid
        field (file and key path).
    """
    if os.fspath(name_or_path) == HOST and HOST not in profile_names():
        host = host_profile_path()
        if not host.is_file():
            raise ProfileError(
                f"no calibrated host profile at {host}: run `edgepart calibrate --host` "
                "(it measures this machine and writes one)"
            )
        name_or_path = str(host)
    path, mtime = resolve_yaml(name_or_path, "device_profiles", "device profile")
    # A profile names delegates, which the search path resolves: the cache keys on it too.
    return _load_cached(path, mtime, search_path.search_key())


@functools.lru_cache(maxsize=64)
def _load_cached(path: str, mtime: float, where: tuple[str, ...]) -> DeviceProfile:
    return _parse(load_yaml(path), Loc(path))


def _quantity(v: Any, loc: Loc, *, positive: bool = True) -> Quantity:
    d = loc.mapping(v)
    loc.keys(d, ("value", "provenance", "source"), ())
    value = (loc / "value").number(d["value"], lo=0.0)
    if positive and value <= 0:
        raise (loc / "value").error(f"{d['value']} is out of range; allowed: > 0")
    return Quantity(
        value,
        (loc / "provenance").choice(d["provenance"], PROVENANCES),
        (loc / "source").string(d["source"]),
    )


def _parse(doc: Any, loc: Loc) -> DeviceProfile:
    d = loc.mapping(doc)
    loc.keys(
        d,
        ("schema", "name", "title", "soc", "source", "memory_domains", "processors"),
        ("links", "default_delegates", "context", "latency_predictor"),
    )
    name = check_header(d, loc, SCHEMA)
    predictor = ""
    if "latency_predictor" in d:
        rel = (loc / "latency_predictor").string(d["latency_predictor"])
        pp = Path(rel) if os.path.isabs(rel) else Path(loc.file).resolve().parent / rel
        if not pp.is_file():
            raise (loc / "latency_predictor").error(f"no such predictor file {str(pp)!r}")
        predictor = str(pp)
    domains: dict[str, MemoryDomain] = {}
    ml = loc / "memory_domains"
    for dn, body in ml.mapping(d["memory_domains"]).items():
        bl = ml / dn
        b = bl.mapping(body)
        bl.keys(b, ("capacity_bytes", "bandwidth_bytes_per_s"), ("note",))
        domains[dn] = MemoryDomain(
            dn,
            _quantity(b["capacity_bytes"], bl / "capacity_bytes"),
            _quantity(b["bandwidth_bytes_per_s"], bl / "bandwidth_bytes_per_s"),
            (bl / "note").string(b.get("note", "-")),
        )
    if not domains:
        raise ml.error("expected at least one memory domain")
    known = delegate_names()
    procs = []
    pl = loc / "processors"
    seen: set[str] = set()
    for i, body in enumerate(pl.sequence(d["processors"], nonempty=True)):
        procs.append(_processor(body, pl / i, domains, known, seen))
    links = []
    ll = loc / "links"
    for i, body in enumerate(ll.sequence(d.get("links", []))):
        il = ll / i
        b = il.mapping(body)
        il.keys(b, ("from", "to", "bandwidth_bytes_per_s", "latency_s"), ("note",))
        src = (il / "from").choice(b["from"], domains)
        dst = (il / "to").choice(b["to"], domains)
        if src == dst:
            raise (il / "to").error(f"{dst!r} links a memory domain to itself")
        links.append(
            Link(
                src,
                dst,
                _quantity(b["bandwidth_bytes_per_s"], il / "bandwidth_bytes_per_s"),
                _quantity(b["latency_s"], il / "latency_s", positive=False),
                (il / "note").string(b.get("note", "-")),
            )
        )
    defaults = (loc / "default_delegates").string_list(d.get("default_delegates", []), known)
    context: dict[str, Any] = {}
    cl = loc / "context"
    for k, v in cl.mapping(d.get("context", {})).items():
        if not isinstance(v, (bool, int, float, str)):
            raise (cl / k).error(f"expected a scalar, got {v!r}")
        context[k] = v
    return DeviceProfile(
        name=name,
        title=(loc / "title").string(d["title"]),
        soc=(loc / "soc").string(d["soc"]),
        source=(loc / "source").string(d["source"]),
        processors=tuple(procs),
        memory_domains=domains,
        links=tuple(links),
        default_delegates=defaults,
        context=context,
        path=loc.file,
        latency_predictor=predictor,
    )


def _processor(
    body: Any, loc: Loc, domains: Mapping[str, MemoryDomain], known: list[str], seen: set[str]
) -> Processor:
    b = loc.mapping(body)
    loc.keys(
        b,
        (
            "name",
            "kind",
            "delegate",
            "units",
            "threads",
            "peak_ops_per_s",
            "memory_bandwidth_bytes_per_s",
            "memory_capacity_bytes",
            "memory_domain",
            "dispatch_overhead_s",
        ),
        ("note", "transfers_on_unit", "single_partition"),
    )
    name = (loc / "name").string(b["name"])
    if name in seen:
        raise (loc / "name").error(f"processor name {name!r} is used twice")
    seen.add(name)
    peaks: dict[str, Quantity] = {}
    kl = loc / "peak_ops_per_s"
    pk = kl.mapping(b["peak_ops_per_s"])
    if not pk:
        raise kl.error(f"expected at least one of {', '.join(DTYPES)}")
    for dt, q in pk.items():
        if dt not in DTYPES:
            raise (kl / dt).error(f"unknown dtype; allowed: {', '.join(DTYPES)}")
        peaks[dt] = _quantity(q, kl / dt)
    units = _quantity(b["units"], loc / "units")
    threads = _quantity(b["threads"], loc / "threads")
    for q, key in ((units, "units"), (threads, "threads")):
        if q.value != int(q.value):
            raise (loc / key / "value").error(f"{q.value} is not allowed; allowed: a whole number")
        if q.value > MAX_UNITS:
            raise (loc / key / "value").error(
                f"{q.value:g} is out of range; allowed: <= {MAX_UNITS} (one unit per core or "
                "accelerator instance)"
            )
    return Processor(
        name=name,
        kind=(loc / "kind").choice(b["kind"], KINDS),
        delegate=(loc / "delegate").choice(b["delegate"], known),
        units=units,
        threads=threads,
        peak_ops_per_s=peaks,
        memory_bandwidth_bytes_per_s=_quantity(
            b["memory_bandwidth_bytes_per_s"], loc / "memory_bandwidth_bytes_per_s"
        ),
        memory_capacity_bytes=_quantity(b["memory_capacity_bytes"], loc / "memory_capacity_bytes"),
        memory_domain=(loc / "memory_domain").choice(b["memory_domain"], domains),
        dispatch_overhead_s=_quantity(
            b["dispatch_overhead_s"], loc / "dispatch_overhead_s", positive=False
        ),
        note=(loc / "note").string(b.get("note", "-")),
        transfers_on_unit=(loc / "transfers_on_unit").boolean(b.get("transfers_on_unit", False)),
        single_partition=(loc / "single_partition").boolean(b.get("single_partition", False)),
    )
