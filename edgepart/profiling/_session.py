"""One profiling run's shared state (timers by signature, the table being filled) and helpers."""

from __future__ import annotations

import logging
import os
import platform
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from edgepart.cost.signature import OpSig, group_signature, op_signatures
from edgepart.cost.table import Entry, ProcessorTable, Stats
from edgepart.cost.units import Unit, UnitResult
from edgepart.cost.work import OpWork, op_work
from edgepart.errors import EdgepartError
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model, Subgraph
from edgepart.profiling.standalone import standalone_model
from edgepart.profiling.timing import Timer, prepare, run_rounds
from edgepart.tflite.writer import write_model

if TYPE_CHECKING:
    from edgepart.profiling.host import ProfileConfig

__all__ = ["Session", "activation_names", "cache_bytes", "host_description", "stat_value"]

log = logging.getLogger(__name__)


def host_description() -> str:
    """A short description of this machine (CPU model and core count)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"host {platform.machine()} {cpu}, {os.cpu_count()} cores"


def cache_bytes(root: str = "/sys/devices/system/cpu/cpu0/cache") -> dict[int, int]:
    """Bytes of the data (or unified) cache at each level that CPU 0 sees, as Linux reports
    them (``{1: 49152, 2: 2097152, 3: 314572800}``; empty where the kernel says nothing)."""
    out: dict[int, int] = {}
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return out
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    for name in names:
        try:
            kind, level, size = (
                Path(root, name, f).read_text(encoding="ascii").strip()
                for f in ("type", "level", "size")
            )
        except OSError:
            continue
        digits = size[:-1] if size[-1:] in units else size
        if kind in ("Data", "Unified") and level.isdigit() and digits.isdigit():
            out[int(level)] = int(digits) * units.get(size[-1:], 1)
    return out


def stat_value(stats: Stats, statistic: str) -> float:
    return {"median": stats.median_s, "p10": stats.p10_s, "min": stats.min_s}[statistic]


class Session:
    """Shared state of one profiling run: timers by signature key, the table being filled."""

    def __init__(self, model: Model, cfg: ProfileConfig, pt: ProcessorTable) -> None:
        self.model = model
        self.sg = model.main
        self.cfg = cfg
        self.pt = pt
        self.sigs: list[OpSig] = op_signatures(self.sg)
        self.work: OpWork = op_work(self.sg, model)
        self.timers: dict[str, Timer] = {}
        self.sizes: dict[str, int] = {}  # bytes of each timed unit's model
        self.ops_of: dict[str, set[frozenset[int]]] = {}  # the ops of every unit of a key
        self.errors: dict[str, str] = {}
        self.overhead_s = 0.0
        self.node_s = 0.0  # one delegate node (XNNPACK partition) beyond a bare invocation
        self.values: dict[str, np.ndarray] = {}

    def key(self, u: Unit) -> tuple[str, str, str]:
        if len(u.ops) == 1:
            s = self.sigs[u.ops[0]]
            return s.key, s.family, "op"
        g = group_signature(self.sg, list(u.ops), [self.sigs[i] for i in u.ops])
        return g.key, g.family, "group"

    def prepare(self, u: Unit) -> Timer | None:
        key = self.key(u)[0]
        self.ops_of.setdefault(key, set()).add(frozenset(u.ops))
        if key in self.timers or key in self.errors:
            return self.timers.get(key)
        try:
            content = write_model(standalone_model(self.model, list(u.ops), list(u.helpers)))
            self.sizes[key] = len(content)
            self.timers[key] = prepare(
                content, self.cfg.executor, self.cfg.threads, self.cfg.timing, self.values
            )
        except EdgepartError as e:
            self.errors[key] = str(e)
            log.warning("cannot time %s: %s", [self.sg.describe_op(i) for i in u.ops], e)
        return self.timers.get(key)

    def warm_keys(self, big: Callable[[int], bool]) -> set[str]:
        """Keys of the timers to time in warm blocks: those whose models are ``big`` (by their
        bytes), and every unit inside one of them, so that a pair and its members, whose times
        are subtracted (fusion, context), are measured alike."""
        keys = {k for k, n in self.sizes.items() if k in self.timers and big(n)}
        outer = [ops for k in keys for ops in self.ops_of[k]]
        for k, sets in self.ops_of.items():
            if k in self.timers and any(a <= b for a in sets for b in outer):
                keys.add(k)
        return keys

    def prepare_ops(self, ops: list[int], helpers: list[int]) -> Timer | None:
        """A timer of an arbitrary convex set of ops (a segment), or None if it cannot run."""
        try:
            content = write_model(standalone_model(self.model, ops, helpers))
            return prepare(
                content, self.cfg.executor, self.cfg.threads, self.cfg.timing, self.values
            )
        except EdgepartError as e:
            log.warning("cannot time segment of ops %d..%d: %s", ops[0], ops[-1], e)
            return None

    def record_segment(self, ops: list[int], timer: Timer) -> None:
        """A segment's in-context time as a group entry (role ``segment``) naming its ops, so
        the cost model can find it in this model and scale its ops' values to it."""
        g = group_signature(self.sg, ops, [self.sigs[i] for i in ops])
        stats = timer.stats()
        value = self.value(stats, timer.delegate_nodes)
        self.pt.add(
            Entry(
                g.key,
                g.family,
                "group",
                float(self.work.flops[ops].sum()),
                float(self.work.bytes[ops].sum()),
                stats,
                value,
                {
                    "ops": len(ops),
                    "op": self.sg.op_name(ops[0]),
                    "role": "segment",
                    "delegate_nodes": timer.delegate_nodes,
                    "op_indices": [int(i) for i in ops],
                },
            )
        )

    def record(self, u: Unit, stats: Stats | None, role: str) -> UnitResult:
        key, family, kind = self.key(u)
        if stats is None:
            return UnitResult(u, key, kind, 0.0, None, self.errors.get(key, "not timed"))
        nodes = self.delegate_nodes(key)
        value = self.value(stats, nodes)
        ops = list(u.ops)
        extra = {
            "ops": len(ops),
            "op": self.sg.op_name(ops[0]),
            "role": role,
            "delegate_nodes": nodes,
        }
        self.pt.add(
            Entry(
                key,
                family,
                kind,
                float(self.work.flops[ops].sum()),
                float(self.work.bytes[ops].sum()),
                stats,
                value,
                extra,
            )
        )
        return UnitResult(u, key, kind, value, stats)

    def delegate_nodes(self, key: str) -> int:
        t = self.timers.get(key)
        return t.delegate_nodes if t is not None else 0

    def value(self, stats: Stats, delegate_nodes: int) -> float:
        """What a unit adds inside a larger invocation: its time minus the invocation's fixed
        cost and minus its delegate nodes' cost (a whole model pays that once per partition)."""
        v = stat_value(stats, self.cfg.statistic) - self.overhead_s - delegate_nodes * self.node_s
        return max(v, 0.0)

    def measure_many(self, units: list[Unit]) -> list[tuple[float, Stats] | None]:
        """Values of ``units`` measured under the same conditions.

        If every unit was already timed in the main interleaved rounds (candidate pairs are
        prepared up front), those samples are used as they are; otherwise all of them get fresh
        interleaved samples together (so a comparison never mixes two moments of the machine).
        """
        timers = [self.prepare(u) for u in units]
        already = all(t is not None and t.done and t.samples for t in timers)
        starts: list[tuple[Timer, int] | None] = []
        for t in timers:
            if t is None:
                starts.append(None)
            elif already:
                starts.append((t, 0))
            else:
                reps = max(self.cfg.timing.min_repeats, min(t.repeats, 50))
                starts.append((t, t.more(reps)))
        if not already:
            run_rounds([st[0] for st in starts if st is not None])
        out: list[tuple[float, Stats] | None] = []
        for start in starts:
            if start is None:
                out.append(None)
                continue
            timer, since = start
            st = timer.stats(since)
            out.append((self.value(st, timer.delegate_nodes), st))
        return out


def activation_names(sg: Subgraph) -> list[str]:
    """Unambiguous names of the non-constant tensors ops read (extracted units' inputs)."""
    t = sg.op_inputs.idx.astype(np.int64)
    t = np.unique(t[t >= 0])
    # plain data only: LiteRT crashes reading resource handles or variables back
    dt = sg.tensor_dtype[t]
    plain = (dt != DType.RESOURCE) & (dt != DType.VARIANT) & (dt != DType.STRING)
    t = t[~sg.tensor_is_constant[t] & ~sg.tensor_is_variable[t] & plain]
    counts = Counter(sg.tensor_names)
    return [sg.tensor_names[i] for i in t.tolist() if counts[sg.tensor_names[i]] == 1]
