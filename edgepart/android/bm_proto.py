"""The protobuf files TFLite's ``benchmark_model`` writes, and the per-node timings they give.

:func:`parse_op_profile_proto` reads ``--op_profiling_output_mode=proto`` files into the same
:class:`~edgepart.android.bm_op_profile.OpProfile` the text tables give;
:func:`parse_runtime_info` reads ``--export_model_runtime_info=true`` files (which ops each
delegate node replaced), and :func:`node_timings` joins the two. The messages are read with the
descriptors that ship in ``ai-edge-litert`` (see :func:`proto_message_class`).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import descriptor_pool, message_factory  # type: ignore[import-untyped, unused-ignore]
from google.protobuf.message import DecodeError  # type: ignore[import-untyped, unused-ignore]

from edgepart.android.bm_op_profile import OpProfile, OpRow, ProfileBlock, classify_node
from edgepart.errors import BenchmarkOutputError

__all__ = [
    "NodeTiming",
    "RuntimeInfo",
    "RuntimeNode",
    "RuntimeSubgraph",
    "node_timings",
    "parse_op_profile_proto",
    "parse_runtime_info",
    "proto_message_class",
]


_PROTO_MODULES = {
    "profiling_info_pb2": (
        "BenchmarkProfilingData",
        "ModelProfilingData",
        "SubGraphProfilingData",
        "DelegateProfilingData",
        "OpProfilingStat",
        "OpProfileData",
    ),
    "model_runtime_info_pb2": (
        "ModelRuntimeDetails",
        "RuntimeSubgraph",
        "Node",
        "DelegateNodeDetails",
        "Edge",
    ),
}


def proto_message_class(name: str) -> Any:
    """The generated class of message ``tflite.profiling.<name>`` (e.g. ``ModelRuntimeDetails``).

    The descriptors are the ones ai-edge-litert ships (``ai_edge_litert/*_pb2.py``), loaded into
    a private descriptor pool. Importing those modules directly would register
    ``tflite.profiling.*`` in protobuf's default pool, where TensorFlow registers the same names
    from its own copies: whichever is imported second then fails with "duplicate symbol". A
    private pool keeps both importable in one process.

    Raises
    ------
    BenchmarkOutputError
        If ``name`` is not one of those messages or ai-edge-litert's descriptors are missing.
    """
    if not any(name in names for names in _PROTO_MODULES.values()):
        raise BenchmarkOutputError(
            f"unknown benchmark proto message {name!r}; known: "
            + ", ".join(n for names in _PROTO_MODULES.values() for n in names)
        )
    return message_factory.GetMessageClass(
        _private_pool().FindMessageTypeByName(f"tflite.profiling.{name}")
    )


@functools.lru_cache(maxsize=1)
def _private_pool() -> Any:
    """A descriptor pool holding ai-edge-litert's two profiling protos (read, not imported)."""
    pool = descriptor_pool.DescriptorPool()
    for module in _PROTO_MODULES:  # profiling_info first: model_runtime_info depends on it
        spec = importlib.util.find_spec(f"ai_edge_litert.{module}")
        serialized = None
        if spec is not None and spec.origin is not None:
            with open(spec.origin, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "attr", "") == "AddSerializedFile"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, bytes)
                ):
                    serialized = node.args[0].value
        if serialized is None:
            raise BenchmarkOutputError(
                f"ai_edge_litert.{module} (the benchmark proto descriptors) was not found; "
                "install ai-edge-litert >= 2.0"
            )
        pool.AddSerializedFile(serialized)
    return pool


def _proto_rows(per_op_profiles: Iterable[Any]) -> tuple[OpRow, ...]:
    """``OpProfileData`` messages to rows in run order, with the table's % and cdf%."""
    ops = sorted(per_op_profiles, key=lambda p: p.run_order)
    total = sum(p.inference_microseconds.sum for p in ops)
    rows, cdf = [], 0.0
    for p in ops:
        st = p.inference_microseconds
        pct = st.sum * 100.0 / total if total else math.nan
        cdf += pct
        kind, index, dindex = classify_node(p.node_type, p.name)
        rows.append(
            OpRow(
                p.node_type,
                st.first / 1000.0,
                st.avg / 1000.0,
                pct,
                cdf,
                float(p.mem_kb.last),
                int(p.times_called),
                p.name,
                kind,
                index,
                dindex,
                min_us=float(st.min),
                max_us=float(st.max),
                std_us=float(st.stddev),
                count=int(st.count),
            )
        )
    return tuple(rows)


def parse_op_profile_proto(data: bytes, *, source: str = "<op profile proto>") -> OpProfile:
    """Parse a ``BenchmarkProfilingData`` file (``--op_profiling_output_mode=proto``).

    Percentages are recomputed from the per-op sums (the proto does not store them); they equal
    the stdout table's because the tool's run total is the sum of the same events.

    Raises
    ------
    BenchmarkOutputError
        If the bytes are not such a proto or hold no per-op data.
    """
    msg = proto_message_class("BenchmarkProfilingData")()
    try:
        msg.ParseFromString(bytes(data))
    except DecodeError as exc:
        raise BenchmarkOutputError(
            f"{source}: not a BenchmarkProfilingData proto ({exc}); pass the file written by "
            "--op_profiling_output_mode=proto --op_profiling_output_file=..."
        ) from None
    blocks = []
    for phase, prof in (("init", msg.init_profile), ("run", msg.runtime_profile)):
        for sg in prof.subgraph_profiles:
            blocks.append(
                ProfileBlock(
                    phase,
                    sg.subgraph_index,
                    sg.subgraph_name or None,
                    run_order=_proto_rows(sg.per_op_profiles),
                )
            )
        for dp in prof.delegate_profiles:
            blocks.append(
                ProfileBlock(
                    phase,
                    0,
                    dp.delegate_name or None,
                    delegate_internal=True,
                    run_order=_proto_rows(dp.per_op_profiles),
                )
            )
    if not any(b.run_order for b in blocks):
        raise BenchmarkOutputError(
            f"{source}: the proto holds no per-op profiles ({len(data)} bytes); was op "
            "profiling enabled (--enable_op_profiling=true)?"
        )
    return OpProfile(source, "proto", tuple(blocks))


@dataclass(frozen=True)
class RuntimeNode:
    """One node of a ``ModelRuntimeDetails`` subgraph.

    ``name`` is the builtin op name (e.g. ``CONV_2D``) or the custom/delegate kernel name;
    ``delegated_to`` is the node that replaced this one; ``replaced`` lists the nodes a delegate
    node took (``delegate`` is then its name).
    """

    id: int
    name: str
    type: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    delegated_to: int | None = None
    delegate: str | None = None
    replaced: tuple[int, ...] = ()


@dataclass(frozen=True)
class RuntimeSubgraph:
    """Nodes, execution plan and tensor count of one runtime subgraph."""

    index: int
    name: str
    nodes: tuple[RuntimeNode, ...]
    execution_plan: tuple[int, ...]
    num_tensors: int

    def placement(self) -> dict[int, str]:
        """Map each original node to ``cpu`` or the name of the delegate that took it."""
        out: dict[int, str] = {}
        by_id = {n.id: n for n in self.nodes}
        for n in self.nodes:
            if n.delegate is not None:
                continue
            if n.delegated_to is not None:
                out[n.id] = by_id[n.delegated_to].delegate or by_id[n.delegated_to].name
            else:
                out[n.id] = "cpu"
        return out


@dataclass(frozen=True)
class RuntimeInfo:
    """A parsed ``--model_runtime_info_output_file``."""

    source: str
    model_name: str
    subgraphs: tuple[RuntimeSubgraph, ...]


def parse_runtime_info(data: bytes, *, source: str = "<runtime info>") -> RuntimeInfo:
    """Parse a ``ModelRuntimeDetails`` proto (``--export_model_runtime_info=true``).

    Raises
    ------
    BenchmarkOutputError
        If the bytes are not such a proto, hold no subgraph, or a node points at a missing node.
    """
    msg = proto_message_class("ModelRuntimeDetails")()
    try:
        msg.ParseFromString(bytes(data))
    except DecodeError as exc:
        raise BenchmarkOutputError(
            f"{source}: not a ModelRuntimeDetails proto ({exc}); pass the file written by "
            "--model_runtime_info_output_file"
        ) from None
    subgraphs = []
    for sg in msg.subgraphs:
        nodes = []
        for n in sg.nodes:
            which = n.WhichOneof("node_info")
            nodes.append(
                RuntimeNode(
                    n.id,
                    n.name,
                    n.type,
                    tuple(n.inputs),
                    tuple(n.outputs),
                    delegated_to=n.delegated_to_node_id
                    if which == "delegated_to_node_id"
                    else None,
                    delegate=n.delegate_node_details.delegate_name
                    if which == "delegate_node_details"
                    else None,
                    replaced=tuple(n.delegate_node_details.tflite_node_ids_replaced)
                    if which == "delegate_node_details"
                    else (),
                )
            )
        ids = {n.id for n in nodes}
        for n in nodes:
            missing = [x for x in (n.delegated_to, *n.replaced) if x is not None and x not in ids]
            if missing:
                raise BenchmarkOutputError(
                    f"{source}: subgraph {sg.subgraph_id} node {n.id} refers to missing node(s) "
                    f"{missing}; the file is truncated or corrupted"
                )
        subgraphs.append(
            RuntimeSubgraph(
                sg.subgraph_id, sg.name, tuple(nodes), tuple(sg.execution_plan), len(sg.edges)
            )
        )
    if not subgraphs:
        raise BenchmarkOutputError(
            f"{source}: the runtime-info proto has no subgraphs ({len(data)} bytes)"
        )
    return RuntimeInfo(source, msg.model_name, tuple(subgraphs))


@dataclass(frozen=True)
class NodeTiming:
    """A regular-run timing joined to model ops.

    ``ops`` are the model op indices the time covers: the op itself for ``op`` rows, the ops a
    delegate replaced for ``delegate_kernel`` rows (empty without runtime info).
    """

    node_index: int
    node_type: str
    avg_ms: float
    first_ms: float
    executed_by: str
    ops: tuple[int, ...] = field(default_factory=tuple)


def node_timings(
    profile: OpProfile, runtime: RuntimeInfo | None = None, subgraph_index: int = 0
) -> tuple[NodeTiming, ...]:
    """Join the Run Order rows of one subgraph to op indices (and delegates, with ``runtime``).

    Raises
    ------
    BenchmarkOutputError
        If a row has no node index (legacy build; see :func:`infer_node_indices`) or names a
        node the runtime info does not have.
    """
    rows = [r for r in profile.run_rows(subgraph_index) if r.kind in ("op", "delegate_kernel")]
    sg = None
    if runtime is not None:
        matches = [s for s in runtime.subgraphs if s.index == subgraph_index]
        if not matches:
            raise BenchmarkOutputError(f"{runtime.source}: no subgraph {subgraph_index}")
        sg = {n.id: n for n in matches[0].nodes}
    out = []
    for r in rows:
        if r.node_index is None:
            raise BenchmarkOutputError(
                f"{profile.source}: row {r.name!r} has no ':N' node index (pre-TF 2.4 output); "
                "use infer_node_indices() for an undelegated run"
            )
        ops: tuple[int, ...] = (r.node_index,) if r.kind == "op" else ()
        by = "cpu" if r.kind == "op" else r.node_type
        if sg is not None:
            node = sg.get(r.node_index)
            if node is None:
                raise BenchmarkOutputError(
                    f"{profile.source}: row {r.name!r} names node {r.node_index}, which "
                    f"{runtime.source if runtime else ''} does not list"
                )
            if node.delegate is not None:
                ops, by = node.replaced, node.delegate
        out.append(NodeTiming(r.node_index, r.node_type, r.avg_ms, r.first_ms, by, ops))
    return tuple(out)
