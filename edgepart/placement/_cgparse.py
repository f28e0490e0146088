"""Validate a cost-graph JSON document into plain Python columns (no NumPy, no semantics).

Every check names the JSON path of the offending value (``nodes[17].latency_s.gpu``) and what
is allowed. The structural rules mirror ``edgepart/schemas/costgraph.schema.json``; the
cross-reference rules (unknown ids, duplicate tensors, cycles) cannot be said in JSON Schema
and live here only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from edgepart.placement._jsonpath import MAX_INT, Ctx

FORMAT = "edgepart-costgraph"
VERSION = 1
KINDS = ("cpu", "gpu", "dsp", "npu", "tpu", "other")
UNSUPPORTED = "unsupported"
MAX_UNITS = 1024
"""Most units a processor may have (every unit is a schedule lane the solvers allocate)."""
MAX_TOTAL_BYTES = 1 << 62
"""Bound on the sum of all tensor and weight bytes, so no total overflows 64 bits."""

# Model options of a processor (docs/costgraph.md section 1): its units copy tensors with their
# own cores; each unit runs one convex partition; hand-offs between partitions of one unit pay
# the domain's self-link.
PROC_OPTIONS = ("transfers_on_unit", "single_partition", "charge_unit_handoffs")

_TOP_REQ = ("format", "version", "processors", "nodes")
_TOP_OPT = ("name", "links", "edges", "inputs", "outputs", "host_domain", "baseline", "metadata")


@dataclass
class Raw:
    """Validated columns, still in document order."""

    name: str = ""
    proc_names: list[str] = field(default_factory=list)
    proc_kinds: list[str] = field(default_factory=list)
    proc_units: list[int] = field(default_factory=list)
    proc_mem: list[int] = field(default_factory=list)  # -1 = unlimited
    proc_domain: list[str] = field(default_factory=list)
    proc_dispatch: list[float] = field(default_factory=list)
    proc_tflite: list[tuple[int | None, int | None]] = field(default_factory=list)
    proc_copies: list[bool] = field(default_factory=list)  # transfers_on_unit
    proc_single: list[bool] = field(default_factory=list)  # single_partition
    proc_handoff: list[bool] = field(default_factory=list)  # charge_unit_handoffs
    host_domain: str = ""
    links: list[tuple[str, str, float, float]] = field(default_factory=list)  # inv bandwidth
    node_ids: list[int | str] = field(default_factory=list)
    node_names: list[str | None] = field(default_factory=list)
    node_ops: list[str | None] = field(default_factory=list)
    latency: list[list[float]] = field(default_factory=list)  # inf = unsupported
    weight_bytes: list[int] = field(default_factory=list)
    output_bytes: list[int | None] = field(default_factory=list)
    coloc: list[str | None] = field(default_factory=list)
    # tensors: (src node index or -1, label or input name, bytes or None, override)
    tensors: list[list[Any]] = field(default_factory=list)
    edge_src: list[int] = field(default_factory=list)
    edge_dst: list[int] = field(default_factory=list)
    edge_tensor: list[int] = field(default_factory=list)
    input_consumers: list[tuple[int, int]] = field(default_factory=list)  # (tensor, node)
    output_tensors: list[int] = field(default_factory=list)
    baseline_delegate: str | None = None
    baseline_cpu: str | None = None


def parse(doc: Any, source: str) -> Raw:
    """Check ``doc`` (parsed JSON) and return its columns; raises ``CostGraphError``."""
    c = Ctx(source)
    c.obj(doc, "", _TOP_REQ, _TOP_OPT)
    if doc["format"] != FORMAT:
        c.fail("format", f"expected {FORMAT!r}, got {doc['format']!r}")
    if doc["version"] != VERSION or isinstance(doc["version"], bool):
        c.fail("version", f"unsupported version {doc['version']!r}; this edgepart reads {VERSION}")
    r = Raw(name=c.string(doc.get("name", ""), "name"))
    _processors(c, doc["processors"], r)
    domains = set(r.proc_domain)
    r.host_domain = doc.get("host_domain", _default_host(r))
    if r.host_domain not in domains:
        c.name(r.host_domain, "host_domain")
        domains.add(r.host_domain)
    _links(c, doc.get("links", []), r, domains)
    index = _nodes(c, doc["nodes"], r)
    keys: dict[tuple[int, Any], int] = {}
    _edges(c, doc.get("edges", []), r, index, keys)
    _inputs(c, doc.get("inputs", []), r, index)
    _outputs(c, doc.get("outputs", []), r, index, keys)
    _baseline(c, doc.get("baseline", {}), r)
    if "metadata" in doc and not isinstance(doc["metadata"], Mapping):
        c.fail("metadata", "expected an object")
    total = sum(r.weight_bytes) + sum(t[2] or 0 for t in r.tensors)
    if total > MAX_TOTAL_BYTES:
        c.fail("nodes", f"tensor and weight bytes add up to {total}, more than 2^62")
    return r


def _default_host(r: Raw) -> str:
    for kind, dom in zip(r.proc_kinds, r.proc_domain, strict=True):
        if kind == "cpu":
            return dom
    return r.proc_domain[0]


def _processors(c: Ctx, procs: Any, r: Raw) -> None:
    req = ("name", "kind")
    opt = ("units", "memory_bytes", "memory_domain", "dispatch_s", "tflite", *PROC_OPTIONS)
    for i, p in enumerate(c.array(procs, "processors", nonempty=True)):
        path = f"processors[{i}]"
        c.obj(p, path, req, opt)
        name = c.name(p["name"], f"{path}.name")
        if name in r.proc_names:
            c.fail(f"{path}.name", f"duplicate processor name {name!r}")
        kind = p["kind"]
        if kind not in KINDS:
            c.fail(f"{path}.kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
        mem = p.get("memory_bytes")
        r.proc_names.append(name)
        r.proc_kinds.append(kind)
        r.proc_units.append(
            c.integer(p.get("units", 1), f"{path}.units", minimum=1, maximum=MAX_UNITS)
        )
        r.proc_mem.append(
            -1 if mem is None else c.integer(mem, f"{path}.memory_bytes", maximum=1 << 62)
        )
        r.proc_domain.append(c.name(p.get("memory_domain", name), f"{path}.memory_domain"))
        r.proc_dispatch.append(c.number(p.get("dispatch_s", 0.0), f"{path}.dispatch_s"))
        flags = [c.boolean(p.get(k, False), f"{path}.{k}") for k in PROC_OPTIONS]
        r.proc_copies.append(flags[0])
        r.proc_single.append(flags[1])
        r.proc_handoff.append(flags[2])
        tfl = p.get("tflite", {})
        c.obj(tfl, f"{path}.tflite", (), ("max_delegated_partitions", "min_nodes_per_partition"))
        mx, mn = tfl.get("max_delegated_partitions"), tfl.get("min_nodes_per_partition")
        r.proc_tflite.append(
            (
                None if mx is None else c.integer(mx, f"{path}.tflite.max_delegated_partitions"),
                None if mn is None else c.integer(mn, f"{path}.tflite.min_nodes_per_partition"),
            )
        )


def _links(c: Ctx, links: Any, r: Raw, domains: set[str]) -> None:
    seen: dict[tuple[str, str], int] = {}
    for i, lk in enumerate(c.array(links, "links")):
        path = f"links[{i}]"
        c.obj(lk, path, ("src", "dst"), ("latency_s", "bandwidth_bytes_per_s", "symmetric"))
        ends = []
        for key in ("src", "dst"):
            d = c.name(lk[key], f"{path}.{key}")
            if d not in domains:
                c.fail(f"{path}.{key}", f"unknown memory domain {d!r}; known: {_lst(domains)}")
            ends.append(d)
        lat = c.number(lk.get("latency_s", 0.0), f"{path}.latency_s")
        bw = lk.get("bandwidth_bytes_per_s")
        inv = (
            0.0
            if bw is None
            else 1.0 / c.number(bw, f"{path}.bandwidth_bytes_per_s", positive=True)
        )
        sym = c.boolean(lk.get("symmetric", True), f"{path}.symmetric")
        pairs = [(ends[0], ends[1])]
        if sym and ends[0] != ends[1]:
            pairs.append((ends[1], ends[0]))
        for a, b in pairs:
            if (a, b) in seen:
                c.fail(path, f"link {a}->{b} is already given by links[{seen[(a, b)]}]")
            seen[(a, b)] = i
            r.links.append((a, b, lat, inv))
    for a in sorted(domains):
        for b in sorted(domains):
            if a != b and (a, b) not in seen:
                c.fail(
                    "links",
                    f"no link from memory domain {a!r} to {b!r}; add "
                    f'{{"src": "{a}", "dst": "{b}", "latency_s": ..., '
                    '"bandwidth_bytes_per_s": ...}',
                )


_NODE_REQ = ("id", "latency_s")
_NODE_OPT = ("name", "op", "weight_bytes", "output_bytes", "colocation")
_NODE_KEYS = frozenset(_NODE_REQ + _NODE_OPT)
_EDGE_KEYS = frozenset(("src", "dst", "bytes", "tensor", "transfer_s"))
_INF = math.inf


def _fast_count(v: Any) -> bool:
    return type(v) is int and 0 <= v <= MAX_INT


def _node_fast(nd: Any, procs: tuple[str, ...]) -> tuple[Any, ...] | None:
    """A well-formed node checked without building paths; None sends it to the slow path."""
    if type(nd) is not dict or not _NODE_KEYS.issuperset(nd):
        return None
    nid, lat = nd.get("id"), nd.get("latency_s")
    if not ((type(nid) is int and nid >= 0) or (type(nid) is str and nid)):
        return None
    if type(lat) is not dict or len(lat) != len(procs):
        return None
    row = []
    for p in procs:
        x: Any = lat.get(p)
        tx = type(x)
        if tx is float or tx is int:
            if not 0 <= x < _INF:
                return None
            row.append(float(x))
        elif x == UNSUPPORTED:
            row.append(_INF)
        else:
            return None
    name, op, co = nd.get("name"), nd.get("op"), nd.get("colocation")
    wb, ob = nd.get("weight_bytes", 0), nd.get("output_bytes")
    if (name is not None and type(name) is not str) or (op is not None and type(op) is not str):
        return None
    if not _fast_count(wb) or (ob is not None and not _fast_count(ob)):
        return None
    if co is not None and type(co) is not str and type(co) is not int:
        return None
    return nid, name, op, row, wb, ob, None if co is None else str(co)


def _nodes(c: Ctx, nodes: Any, r: Raw) -> dict[int | str, int]:
    procs = tuple(r.proc_names)
    index: dict[int | str, int] = {}
    for i, nd in enumerate(c.array(nodes, "nodes", nonempty=True)):
        rec = _node_fast(nd, procs)
        if rec is None:
            rec = _node_slow(c, nd, f"nodes[{i}]", procs)
        nid = rec[0]
        if nid in index:
            c.fail(f"nodes[{i}].id", f"duplicate node id {nid!r} (first at nodes[{index[nid]}])")
        index[nid] = i
        r.node_ids.append(nid)
        r.node_names.append(rec[1])
        r.node_ops.append(rec[2])
        r.latency.append(rec[3])
        r.weight_bytes.append(rec[4])
        r.output_bytes.append(rec[5])
        r.coloc.append(rec[6])
    return index


def _node_slow(c: Ctx, nd: Any, path: str, procs: tuple[str, ...]) -> tuple[Any, ...]:
    c.obj(nd, path, _NODE_REQ, _NODE_OPT)
    nid = c.node_id(nd["id"], f"{path}.id")
    lat = nd["latency_s"]
    c.obj(lat, f"{path}.latency_s", procs, ())
    row = []
    for p in procs:
        v = lat[p]
        ok = v == UNSUPPORTED or (
            not isinstance(v, (str, bool)) and isinstance(v, (int, float)) and 0 <= v < _INF
        )
        if not ok:
            c.fail(f"{path}.latency_s.{p}", f'expected seconds >= 0 or "unsupported", got {v!r}')
        row.append(_INF if v == UNSUPPORTED else float(v))
    name = None if nd.get("name") is None else c.string(nd["name"], f"{path}.name")
    op = None if nd.get("op") is None else c.string(nd["op"], f"{path}.op")
    wb = c.integer(nd.get("weight_bytes", 0), f"{path}.weight_bytes")
    ob = nd.get("output_bytes")
    ob = None if ob is None else c.integer(ob, f"{path}.output_bytes")
    co = nd.get("colocation")
    if co is not None and (isinstance(co, bool) or not isinstance(co, (int, str))):
        c.fail(f"{path}.colocation", f"expected a group name (string or integer), got {co!r}")
    return nid, name, op, row, wb, ob, None if co is None else str(co)


def _ref(c: Ctx, v: Any, path: str, index: dict[int | str, int]) -> int:
    nid = c.node_id(v, path)
    if nid not in index:
        c.fail(path, f"unknown node id {nid!r}")
    return index[nid]


def _override(c: Ctx, v: Any, path: str, domains: set[str]) -> Any:
    if isinstance(v, Mapping):
        out: dict[tuple[str, str], float] = {}
        for k, s in v.items():
            a, sep, b = str(k).partition("->")
            if not sep or a not in domains or b not in domains:
                c.fail(f"{path}.{k}", f"expected a key 'SRC->DST' over domains {_lst(domains)}")
            out[(a, b)] = c.number(s, f"{path}.{k}")
        return tuple(sorted(out.items()))
    return c.number(v, path)


def _tensor(r: Raw, keys: dict[tuple[int, Any], int], src: int, label: Any) -> int:
    t = keys.get((src, label))
    if t is None:
        t = keys[(src, label)] = len(r.tensors)
        r.tensors.append([src, label, None, None, None])  # bytes, override, first path
    return t


def _edges(
    c: Ctx, edges: Any, r: Raw, index: dict[int | str, int], keys: dict[tuple[int, Any], int]
) -> None:
    domains = set(r.proc_domain) | {r.host_domain}
    seen: set[tuple[int, int]] = set()
    tensors, out_b = r.tensors, r.output_bytes
    for i, e in enumerate(c.array(edges, "edges")):
        # Fast path: a plain edge between known nodes with an int size or none.
        if type(e) is dict and _EDGE_KEYS.issuperset(e) and "transfer_s" not in e:
            s, d = index.get(e.get("src"), -1), index.get(e.get("dst"), -1)  # type: ignore[arg-type]
            label = e.get("tensor", 0)
            nb = e.get("bytes")
            if nb is None:
                nb = out_b[s] if s >= 0 else None
            tl = type(label)
            if (
                s >= 0
                and d >= 0
                and s != d
                and nb is not None
                and _fast_count(nb)
                and (tl is int or tl is str)
                and type(e["src"]) in (int, str)
                and type(e["dst"]) in (int, str)
            ):
                t = keys.get((s, label))
                if t is None:
                    t = keys[(s, label)] = len(tensors)
                    tensors.append([s, label, nb, None, f"edges[{i}]"])
                    rec = None
                else:
                    rec = tensors[t]
                if (t, d) not in seen and (rec is None or (rec[2] == nb and rec[3] is None)):
                    seen.add((t, d))
                    r.edge_src.append(s)
                    r.edge_dst.append(d)
                    r.edge_tensor.append(t)
                    continue
        _edge_slow(c, e, f"edges[{i}]", r, index, keys, seen, domains)


def _edge_slow(
    c: Ctx,
    e: Any,
    path: str,
    r: Raw,
    index: dict[int | str, int],
    keys: dict[tuple[int, Any], int],
    seen: set[tuple[int, int]],
    domains: set[str],
) -> None:
    c.obj(e, path, ("src", "dst"), ("bytes", "tensor", "transfer_s"))
    s = _ref(c, e["src"], f"{path}.src", index)
    d = _ref(c, e["dst"], f"{path}.dst", index)
    if s == d:
        c.fail(path, f"self-loop on node {r.node_ids[s]!r}; a node cannot consume its output")
    label = c.label(e.get("tensor", 0), f"{path}.tensor")
    t = _tensor(r, keys, s, label)
    if (t, d) in seen:
        c.fail(path, "duplicates an earlier edge with the same src, dst and tensor")
    nb = e.get("bytes")
    if nb is None:
        nb = r.output_bytes[s]
        if nb is None:
            c.fail(
                f"{path}.bytes",
                "missing; give the tensor size in bytes or set the source node's output_bytes",
            )
    else:
        nb = c.integer(nb, f"{path}.bytes")
    ov = e.get("transfer_s")
    if ov is not None:
        ov = _override(c, ov, f"{path}.transfer_s", domains)
    _merge_tensor(c, r.tensors[t], nb, ov, path)
    seen.add((t, d))
    r.edge_src.append(s)
    r.edge_dst.append(d)
    r.edge_tensor.append(t)


def _merge_tensor(c: Ctx, rec: list[Any], nb: int, ov: Any, path: str) -> None:
    if rec[4] is None:
        rec[2], rec[3], rec[4] = nb, ov, path
        return
    if rec[2] != nb:
        c.fail(
            path, f"tensor size {nb} differs from {rec[2]} given by {rec[4]} for the same tensor"
        )
    if rec[3] != ov:
        c.fail(path, f"transfer_s differs from the one given by {rec[4]} for the same tensor")


def _inputs(c: Ctx, inputs: Any, r: Raw, index: dict[int | str, int]) -> None:
    names: set[str] = set()
    for i, inp in enumerate(c.array(inputs, "inputs")):
        path = f"inputs[{i}]"
        c.obj(inp, path, ("name", "bytes", "consumers"), ())
        name = c.string(inp["name"], f"{path}.name")
        if name in names:
            c.fail(f"{path}.name", f"duplicate input name {name!r}")
        names.add(name)
        t = len(r.tensors)
        r.tensors.append([-1, name, c.integer(inp["bytes"], f"{path}.bytes"), None, path])
        cons = c.array(inp["consumers"], f"{path}.consumers", nonempty=True)
        done: set[int] = set()
        for j, v in enumerate(cons):
            d = _ref(c, v, f"{path}.consumers[{j}]", index)
            if d in done:
                c.fail(f"{path}.consumers[{j}]", f"node {v!r} is listed twice")
            done.add(d)
            r.input_consumers.append((t, d))


def _outputs(
    c: Ctx, outputs: Any, r: Raw, index: dict[int | str, int], keys: dict[tuple[int, Any], int]
) -> None:
    done: set[int] = set()
    for i, out in enumerate(c.array(outputs, "outputs")):
        path = f"outputs[{i}]"
        c.obj(out, path, ("src",), ("tensor", "bytes"))
        s = _ref(c, out["src"], f"{path}.src", index)
        label = c.label(out.get("tensor", 0), f"{path}.tensor")
        t = _tensor(r, keys, s, label)
        if t in done:
            c.fail(path, "this tensor is already listed as a model output")
        done.add(t)
        nb = out.get("bytes")
        rec = r.tensors[t]
        if nb is None:
            nb = rec[2] if rec[4] is not None else r.output_bytes[s]
            if nb is None:
                c.fail(f"{path}.bytes", "missing; give the output size in bytes")
        else:
            nb = c.integer(nb, f"{path}.bytes")
        _merge_tensor(c, rec, nb, rec[3] if rec[4] is not None else None, path)
        r.output_tensors.append(t)


def _baseline(c: Ctx, b: Any, r: Raw) -> None:
    c.obj(b, "baseline", (), ("delegate", "cpu"))
    for key in ("delegate", "cpu"):
        v = b.get(key)
        if v is not None and v not in r.proc_names:
            c.fail(f"baseline.{key}", f"unknown processor {v!r}; known: {_lst(r.proc_names)}")
        setattr(r, f"baseline_{key}", v)


def _lst(xs: Any) -> str:
    return ", ".join(sorted(map(str, xs)))
