"""The :class:`CostModel` the partitioner calls: op, group, partition and transfer costs.

A cost model combines a device's :class:`~edgepart.cost.hardware.Hardware` (roofs, overheads,
links) with measured latency tables and a latency predictor. For each processor, an op's latency
comes from, in order of preference, a *measured* table entry, a value *interpolated* from
measured ops of the same family, a *predicted* one (the processor's executor configuration in
the device's :class:`~edgepart.cost.predictor.Predictor`: the op's share of its kernel), or the
*roofline*; every number says which (:class:`~edgepart.cost.table.Estimate`), and predicted
ones carry the predictor's uncertainty band.

Costing is per subgraph and cached: :meth:`CostModel.costs` computes the work of all ops, their
signatures and an ``[ops, processors]`` latency matrix once (vectorized; one table lookup per
distinct signature), then every query is an array lookup.

Terms of a placed model's latency, all first-class here:

- per op (or fused group) on its processor: :meth:`GraphCosts.op_latency`,
  :meth:`GraphCosts.group_latency` (fusion-aware: a group the executor runs as one kernel, as
  recorded in the table, costs its measured group time; context-aware: an op measured together
  with the op before it costs what it adds after that op, when both are in the set, see
  :mod:`edgepart.cost.context`);
- per partition invocation: the processor's dispatch overhead, :meth:`GraphCosts.invoke_overhead`
  (measured by the profiler where a table exists, else the profile's ``dispatch_overhead_s``);
  :meth:`GraphCosts.partition_latency` = overhead + group latency + one delegate node per
  delegate partition (counted with TFLite's partitioning algorithm);
- per tensor crossing a partition boundary between memory domains: link latency plus bytes over
  link bandwidth, :meth:`GraphCosts.transfer_cost` (zero within one domain, ``inf`` without a
  link).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable, Mapping
from functools import cached_property

import numpy as np

from edgepart.claim.delegation import claim
from edgepart.cost._table_costs import (
    SOURCES,
    SRC,
    apply_context,
    fill_from_table,
    fill_missing,
    table_groups,
)
from edgepart.cost.context import predecessors
from edgepart.cost.delegate_nodes import ControlEdges, count_nodes, metadata_edges
from edgepart.cost.hardware import Hardware
from edgepart.cost.kernels import Kernels
from edgepart.cost.predicted_costs import PredictedCosts, predicted_costs
from edgepart.cost.predictor import Predictor, load_predictor
from edgepart.cost.programs import compiled_programs
from edgepart.cost.roofline import Roofline, roofline
from edgepart.cost.signature import op_signatures
from edgepart.cost.table import (
    INTERPOLATED,
    MEASURED,
    PREDICTED,
    ROOFLINE,
    UNKNOWN,
    Estimate,
    LatencyTable,
    load_table,
)
from edgepart.cost.work import OpWork, op_work
from edgepart.errors import LatencyTableError
from edgepart.ir.graph import Model, Subgraph

__all__ = ["SOURCES", "CostModel", "GraphCosts"]

_SRC = SRC


class CostModel:
    """Latency and transfer costs on one device (see the module docstring).

    Parameters
    ----------
    hardware
        The device's processors and links.
    tables
        Measured latency tables (merged); a processor uses the table processor of the same
        name unless ``table_for`` maps it to another (e.g. ``{"cpu": "host_xnnpack_1t"}``).
        A processor whose ``latency_table`` names a file gets that file's table.
    predictor
        A latency predictor (object or file path) for processors without a table; by default
        the one the device profile names (``Hardware.predictor``). ``False`` uses none.
    """

    def __init__(
        self,
        hardware: Hardware,
        tables: LatencyTable | None = None,
        *,
        table_for: Mapping[str, str] | None = None,
        predictor: Predictor | str | bool | None = None,
    ) -> None:
        self.hardware = hardware
        self.tables = tables or LatencyTable()
        self.table_for = dict(table_for or {})
        self.predictor: Predictor | None = None
        if predictor is None:
            predictor = hardware.predictor
        if isinstance(predictor, str):
            self.predictor = load_predictor(predictor)
        elif isinstance(predictor, Predictor):
            self.predictor = predictor
        for spec in hardware.processors:
            if spec.latency_table and spec.name not in self.table_for:
                # a processor pointing at a table file: merge it, use its only processor
                own = load_table(spec.latency_table)
                if len(own.processors) != 1:
                    raise LatencyTableError(
                        f"{spec.latency_table}: processor {spec.name!r} points at this table, "
                        f"which has {sorted(own.processors)}; give it exactly one processor "
                        "or map it with table_for"
                    )
                self.tables = self.tables.merge(own)
                self.table_for[spec.name] = next(iter(own.processors))
        for proc, tname in self.table_for.items():
            hardware.processor(proc)  # raises listing the processors
            self.tables.processor(tname)  # raises listing the table's processors
        self._cache: weakref.WeakKeyDictionary[Subgraph, GraphCosts] = weakref.WeakKeyDictionary()

    def table_name(self, proc: str) -> str | None:
        """The latency-table processor backing ``proc``, or ``None``."""
        name = self.table_for.get(proc, proc)
        return name if name in self.tables.processors else None

    def costs(self, sg: Subgraph, model: Model | None = None) -> GraphCosts:
        """The (cached) costs of every op of ``sg`` on every processor."""
        gc = self._cache.get(sg)
        if gc is None:
            gc = GraphCosts(self, sg, model)
            self._cache[sg] = gc
        return gc


class GraphCosts:
    """Costs of one subgraph on one device; built by :meth:`CostModel.costs`."""

    def __init__(self, cm: CostModel, sg: Subgraph, model: Model | None) -> None:
        self.cm = cm
        self.sg = sg
        hw = cm.hardware
        self.processors = hw.processor_names
        self.work: OpWork = op_work(sg, model)
        self.roofline: Roofline = roofline(self.work, hw)
        lat = self.roofline.time_s.copy()
        src = np.full(lat.shape, _SRC[ROOFLINE], dtype=np.int8)
        # a compiled accelerator program (an Edge TPU executable) has no roofline: its work is
        # not in the graph; only a measured table entry gives its time (filled in below)
        self.unknown_why: dict[int, str] = compiled_programs(sg)
        for op in self.unknown_why:
            lat[op, :] = 0.0
            src[op, :] = _SRC[UNKNOWN]
        self._groups: list[list[tuple[tuple[int, ...], str]]] = [[] for _ in self.processors]
        self._gid = np.full((sg.num_ops, len(self.processors)), -1, dtype=np.int64)
        # ops the table says run inside a delegate, and what one delegate partition costs
        self._delegated = np.zeros((sg.num_ops, len(self.processors)), dtype=bool)
        self._node_s = np.zeros(len(self.processors))
        # context (see edgepart.cost.context): the predecessor an op's latency assumes runs just
        # before it in the same invocation (-1: none), and its latency without that predecessor
        self._ctx_pred = np.full((sg.num_ops, len(self.processors)), -1, dtype=np.int64)
        self._alone = lat.copy()
        self._claim: np.ndarray | None = None  # XNNPACK's predicted ops, computed if needed
        self._overhead: list[Estimate] = []
        sigs = None
        self._pred: list[PredictedCosts | None] = [None] * len(self.processors)
        kernel_cache: dict[str, Kernels] = {}  # processors of one executor share its kernels
        for p, proc in enumerate(hw.processors):
            tname = cm.table_name(proc.name)
            if tname is None:
                pc = None
                if cm.predictor is not None:
                    if sigs is None:
                        sigs = op_signatures(sg)
                    pc = predicted_costs(
                        model, sg, self.work, sigs, lat[:, p], cm.predictor, proc.delegate,
                        proc.threads, kernel_cache,
                    )  # fmt: skip
                if pc is None:
                    self._overhead.append(Estimate(proc.invoke_overhead_s, "profile"))
                    continue
                self._pred[p] = pc
                lat[:, p] = pc.latency
                src[:, p] = _SRC[PREDICTED]
                self._delegated[:, p] = pc.delegated
                self._node_s[p] = pc.node_s
                self._groups[p] = [(g, "") for g in pc.groups]
                for gi, grp in enumerate(pc.groups):
                    self._gid[list(grp), p] = gi
                self._alone[:, p] = lat[:, p]
                self._overhead.append(
                    Estimate(pc.invoke_s, PREDICTED, f"predictor {pc.config.name} invocation")
                )
                continue
            pt = cm.tables.processors[tname]
            self._overhead.append(
                Estimate(pt.invoke_overhead_s, MEASURED, "table invoke_overhead")
                if pt.invoke_overhead is not None
                else Estimate(proc.invoke_overhead_s, "profile")
            )
            if sigs is None:
                sigs = op_signatures(sg)
            fill_from_table(pt, sigs, self.work, lat[:, p], src[:, p], self._delegated[:, p])
            fill_missing(pt, sg, self.work, lat[:, p], src[:, p])
            self._node_s[p] = pt.delegate_node_s
            self._groups[p] = table_groups(sg, pt, sigs, lat[:, p], src[:, p])
            for g, (ops, key) in enumerate(self._groups[p]):
                self._gid[list(ops), p] = g
                entry = pt.entries[key]
                if int(entry.extra.get("delegate_nodes", 0)) > 0:
                    members = list(ops)
                    state = entry.extra.get("role") != "fused"
                    if state and pt.executor == "xnnpack" and model is not None:
                        # a state group's entry says the delegate took some of its ops, not
                        # which: the ones XNNPACK claims (edgepart.claim's exact plan prediction)
                        members = [o for o in members if self._claimed(model)[o]]
                    self._delegated[members, p] = True
            self._alone[:, p] = lat[:, p]
            self._ctx_pred[:, p] = apply_context(
                sg, pt, sigs, lat[:, p], self._gid[:, p] >= 0, predecessors(sg, self.work.folded)
            )
        self.latency = lat
        self.source = src
        self._meta_edges = metadata_edges(sg, model)

    def _claimed(self, model: Model) -> np.ndarray:
        """Per op: whether XNNPACK takes it in the whole subgraph (computed once)."""
        if self._claim is None:
            si = next(i for i, s in enumerate(model.subgraphs) if s is self.sg)
            owner = claim(model, subgraph=si).owner
            self._claim = np.array([o is not None for o in owner], dtype=bool)
        return self._claim

    # ------------------------------------------------------------------ queries
    def proc_index(self, proc: str | int) -> int:
        if isinstance(proc, int):
            return proc
        try:
            return self.processors.index(proc)
        except ValueError:
            raise LatencyTableError(
                f"no processor {proc!r}; processors: {list(self.processors)}"
            ) from None

    def op_latency(self, op: int, proc: str | int) -> Estimate:
        """Latency of one op inside an invocation on ``proc`` (no dispatch overhead)."""
        p = self.proc_index(proc)
        return Estimate(float(self.latency[op, p]), SOURCES[int(self.source[op, p])])

    def group_latency(self, ops: Iterable[int], proc: str | int) -> Estimate:
        """Latency of a set of ops run in one invocation on ``proc``, fusion-aware.

        Fused groups (from the table) wholly inside the set cost their group entry; other ops
        cost their own. The source is the least certain one used.
        """
        p = self.proc_index(proc)
        idx = np.unique(
            np.asarray(ops if isinstance(ops, np.ndarray) else list(ops), dtype=np.int64)
        )
        # group members carry shares summing to the group's measured value, so a whole group
        # adds up exactly; a group cut by the set runs unfused, which its shares understate
        total = float(self.latency[idx, p].sum())
        ctx = self._ctx_pred[idx, p]
        has = ctx >= 0
        if has.any():  # ops whose measured predecessor is not in the set pay their own time
            member = np.zeros(self.sg.num_ops, dtype=bool)
            member[idx] = True
            lost = idx[has][~member[ctx[has]]]
            total += float((self._alone[lost, p] - self.latency[lost, p]).sum())
        worst = int(self.source[idx, p].max(initial=0))
        groups = self._groups[p]
        if groups:
            gid = self._gid[idx, p]
            gid = gid[gid >= 0]
            if len(gid):
                sizes = np.array([len(g[0]) for g in groups])
                counts = np.bincount(gid, minlength=len(groups))
                if ((counts > 0) & (counts < sizes)).any():
                    worst = max(worst, _SRC[INTERPOLATED])
        return Estimate(total, SOURCES[worst], f"{len(idx)} ops")

    def invoke_overhead(self, proc: str | int) -> Estimate:
        """Fixed cost of one partition invocation on ``proc``."""
        return self._overhead[self.proc_index(proc)]

    def partition_latency(self, ops: Iterable[int], proc: str | int) -> Estimate:
        """One invocation of ``ops`` on ``proc``.

        Dispatch overhead, plus the group latency, plus one delegate node per delegate
        partition the executor would form among the ops (measured per-node cost times the
        number of connected groups of ops the table records as delegated).
        """
        p = self.proc_index(proc)
        idx = np.unique(np.asarray(ops if isinstance(ops, np.ndarray) else list(ops), np.int64))
        g = self.group_latency(idx, p)
        o = self.invoke_overhead(p)
        parts = self.delegate_partitions(idx, p) if self._node_s[p] > 0 else 0
        total = g.seconds + o.seconds + parts * float(self._node_s[p])
        detail = f"{g.detail} + overhead ({o.source})"
        if parts:
            detail += f" + {parts} delegate partition(s)"
        low = high = None
        pc = self._pred[p]
        if pc is not None and len(idx):
            kt = pc.ktype[idx]
            ok = kt >= 0
            w = np.bincount(kt[ok], weights=self.latency[idx[ok], p], minlength=len(pc.types))
            by_type = {pc.types[i]: float(v) for i, v in enumerate(w) if v > 0}
            lo, hi = pc.config.band(by_type, float(w.sum()))
            fixed = total - g.seconds
            low = fixed + g.seconds / (1 + hi)
            high = fixed + g.seconds / (1 + lo) if lo > -1 else float("inf")
        return Estimate(total, g.source, detail, low, high)

    def delegate_partitions(self, ops: Iterable[int], proc: str | int) -> int:
        """Delegate kernels the executor forms among ``ops`` (the table's delegated ones),
        counted with TFLite's own partitioning
        (:func:`edgepart.cost.delegate_nodes.count_nodes`)."""
        p = self.proc_index(proc)
        idx = np.unique(np.asarray(ops if isinstance(ops, np.ndarray) else list(ops), np.int64))
        return count_nodes(self.sg, idx, self._delegated[idx, p], self._control)

    @cached_property
    def _control(self) -> ControlEdges:
        return ControlEdges.of(self.sg, self._meta_edges)

    def transfer_cost(self, tensor: int, src: str | int, dst: str | int) -> float:
        """Seconds to hand ``tensor`` from processor ``src`` to ``dst`` (0 within one domain)."""
        return self.transfer_bytes(float(self.sg.tensor_nbytes[tensor]), src, dst)

    def transfer_bytes(self, nbytes: float, src: str | int, dst: str | int) -> float:
        """Seconds to move ``nbytes`` between the memory domains of two processors."""
        hw = self.cm.hardware
        a = hw.processors[self.proc_index(src)].domain
        b = hw.processors[self.proc_index(dst)].domain
        if a == b:
            return 0.0
        link = hw.link(a, b)
        return math.inf if link is None else link.cost(nbytes)

    def groups(self, proc: str | int) -> list[tuple[int, ...]]:
        """Op groups on ``proc`` costed by a group entry (fused kernels, shared state)."""
        return [g[0] for g in self._groups[self.proc_index(proc)]]

    def source_counts(self, proc: str | int) -> dict[str, int]:
        """How many ops' latencies on ``proc`` come from each source."""
        p = self.proc_index(proc)
        counts = np.bincount(self.source[:, p], minlength=len(SOURCES))
        out = {s: int(c) for s, c in zip(SOURCES, counts, strict=True)}
        if not out[UNKNOWN]:  # only compiled programs are unknown: listed when present
            del out[UNKNOWN]
        return out
