"""``edgepart profiles``: list, show and validate device profiles and delegate files."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, is_dataclass
from typing import Any

import edgepart
from edgepart import jsondoc as _json

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "profiles",
        help="list and show device profiles and delegate capability files",
        description="List and show the shipped device profiles (device_profiles/*.yaml) and "
        "delegate files (delegates/*.yaml), or validate your own files.",
    )
    ps = p.add_subparsers(dest="action", metavar="ACTION")
    ps.add_parser("list", help="list device profiles and delegates (the default)")
    s = ps.add_parser("show", help="show one device profile (name or path)")
    s.add_argument("profile")
    d = ps.add_parser("delegate", help="show one delegate file (name or path)")
    d.add_argument("delegate")
    v = ps.add_parser("validate", help="validate profile or delegate YAML files")
    v.add_argument("files", nargs="+")
    for q in (s, d, p):
        q.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run, action=None)


def run(args: argparse.Namespace) -> int:
    action = args.action or "list"
    if action == "list":
        profiles = [edgepart.load_device(n) for n in edgepart.device_names()]
        delegates = [edgepart.load_delegate(n) for n in edgepart.delegate_names()]
        if getattr(args, "json", False):
            names = {
                "profiles": [p.name for p in profiles],
                "delegates": [d.name for d in delegates],
            }
            print(json.dumps(names, indent=2))
            return 0
        where = {
            kind: {e.name: _origin(e) for e in edgepart.catalog(kind)}
            for kind in ("device_profiles", "delegates")
        }
        print("Device profiles:")
        for p in profiles:
            procs = ", ".join(f"{x.name} ({x.kind}, {x.delegate})" for x in p.processors)
            print(f"  {p.name:<18} {p.title}: {procs}{where['device_profiles'].get(p.name, '')}")
        print("Delegates:")
        for d in delegates:
            pol = d.policy
            cap = pol.max_delegated_partitions or "no cap"
            origin = where["delegates"].get(d.name, "")
            summary = f"{len(d.ops)} ops, {pol.method}, partitions {cap}"
            print(f"  {d.name:<12} {d.title}: {summary}{origin}")
        return 0
    if action in ("show", "delegate"):
        show = action == "show"
        obj = edgepart.load_device(args.profile) if show else edgepart.load_delegate(args.delegate)
        if args.json:
            print(_json.text(_jsonable(obj), indent=2, default=str))
        else:
            print(_format_profile(obj) if show else _format_delegate(obj))
        return 0
    for f in args.files:
        edgepart.validate_yaml(f)
        print(f"{f}: ok")
    return 0


def _jsonable(obj: Any) -> Any:
    if is_dataclass(obj) and not isinstance(obj, type):
        return {k: _jsonable(v) for k, v in asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (frozenset, set)):
        return sorted(_jsonable(v) for v in obj)
    if hasattr(obj, "name") and hasattr(obj, "value") and not isinstance(obj, (int, float)):
        return obj.name  # enums such as DType
    if callable(obj):
        return getattr(obj, "__name__", str(obj))
    return obj


def _q(q: Any, unit: str) -> str:
    v = q.value
    for div, pre in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:.3g} {pre}{unit} [{q.provenance}]"
    if v and v < 1e-3:
        return f"{v * 1e6:.3g} u{unit} [{q.provenance}]"
    return f"{v:.3g} {unit} [{q.provenance}]"


def _format_profile(p: Any) -> str:
    lines = [f"{p.name}: {p.title}", f"  SoC: {p.soc}", f"  file: {p.path}"]
    if p.default_delegates:
        lines.append(f"  default delegates: {', '.join(p.default_delegates)} (then xnnpack)")
    for k, v in p.context.items():
        lines.append(f"  {k}: {v}")
    lines.append("  memory domains:")
    for m in p.memory_domains.values():
        lines.append(
            f"    {m.name}: {_q(m.capacity_bytes, 'B')}, {_q(m.bandwidth_bytes_per_s, 'B/s')}"
        )
    lines.append("  processors:")
    for x in p.processors:
        peaks = ", ".join(f"{dt} {_q(q, 'op/s')}" for dt, q in x.peak_ops_per_s.items())
        lines.append(
            f"    {x.name} ({x.kind}, delegate {x.delegate}): "
            f"{int(x.units.value)} units, {int(x.threads.value)} threads"
        )
        lines.append(f"      peak: {peaks}")
        lines.append(
            f"      memory: {x.memory_domain}, {_q(x.memory_bandwidth_bytes_per_s, 'B/s')},"
            f" {_q(x.memory_capacity_bytes, 'B')}; dispatch "
            f"{_q(x.dispatch_overhead_s, 's')}"
        )
    if p.links:
        lines.append("  links:")
        for link in p.links:
            lines.append(
                f"    {link.src} -> {link.dst}: {_q(link.bandwidth_bytes_per_s, 'B/s')}, "
                f"latency {_q(link.latency_s, 's')}"
            )
    return "\n".join(lines)


def _format_delegate(d: Any) -> str:
    pol = d.policy
    lines = [
        f"{d.name}: {d.title} ({d.kernel_name}, target {d.target})",
        f"  file: {d.path}",
        f"  claiming: {pol.method}, helper {pol.helper}, max partitions "
        f"{pol.max_delegated_partitions or 'unlimited'}, min nodes {pol.min_nodes_per_partition}",
        f"  source: {d.source}",
        f"  ops ({len(d.ops)}):",
    ]
    for name, rule in sorted(d.ops.items()):
        bits = []
        if rule.max_version is not None:
            bits.append(f"v<={rule.max_version}")
        if rule.max_rank is not None:
            bits.append(f"rank<={rule.max_rank}")
        bits += [c.label for c in rule.constraints]
        lines.append(f"    {name}" + (f": {'; '.join(bits)}" if bits else ""))
    return "\n".join(lines)


def _origin(entry: Any) -> str:
    """`` [from ORIGIN: PATH; hides FILES]`` for a name that is not from the shipped files."""
    if entry.shipped:
        return ""
    hides = f"; hides {', '.join(str(p) for p in entry.shadows)}" if entry.shadows else ""
    return f"  [from {entry.origin}: {entry.path}{hides}]"
