"""Fast score-only evaluation for the searches: the C kernel when built, the Python one otherwise.

:class:`Scorer` scores placements and lists of *moves* (each move sets some nodes to some units)
against a base placement, with keys ``(primary, secondary, spread)`` exactly as the reference
kernel (:func:`edgepart.placement._core.run`) computes them; the C kernel (``_evalc.c``) is a
line-by-line port that gives bit-identical keys. Without the C extension every call runs the
Python kernel, so results never depend on whether it was built, only the speed does.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from edgepart.placement import _core
from edgepart.placement.costgraph import CostGraph

try:  # the optional C accelerator (setup.py builds it; absent: the Python kernel)
    from edgepart.placement import _evalc  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - exercised only without a C compiler
    _evalc = None

__all__ = ["HAVE_C", "Key", "Scorer", "scorer"]

HAVE_C = _evalc is not None
INF = math.inf
Key = tuple[float, float, float]
_INF_KEY: Key = (INF, INF, 0.0)


def _i32(x: object) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(x, dtype=np.int32))


def _make_kernel(g: CostGraph, c: _core.Compiled) -> object:
    assert _evalc is not None
    prod = np.asarray(c.inc_prod, dtype=np.int64).reshape(-1, 3)
    inp = np.asarray(c.inc_input, dtype=np.int64).reshape(-1, 2)
    gptr = np.zeros(len(c.groups) + 1, dtype=np.int64)
    gptr[1:] = np.cumsum([len(m) for m in c.groups]) if c.groups else []
    gidx = np.asarray([v for m in c.groups for v in m], dtype=np.int64)
    u8 = np.uint8
    dims = (
        c.n,
        c.nu,
        c.nd,
        g.num_procs,
        len(g.tensor_src),
        c.host,
        len(prod),
        len(inp),
        len(c.out_t),
        len(c.groups),
        int(c.limited),
        int(c.any_copy),
        int(c.any_single),
    )
    arrays = (
        _i32(g.succ.ptr),
        _i32(g.succ.idx),
        _i32(g.pred.ptr),
        _i32(g.pred.idx),
        _i32(np.diff(g.pred.ptr)),
        np.ascontiguousarray(g.latency, dtype=np.float64),
        _i32(g.unit_proc),
        _i32(g.proc_domain[g.unit_proc]),
        np.ascontiguousarray(g.proc_dispatch[g.unit_proc], dtype=np.float64),
        np.ascontiguousarray(g.proc_memory[g.unit_proc], dtype=np.float64),
        np.ascontiguousarray(g.proc_copies[g.unit_proc], dtype=u8),
        np.ascontiguousarray(g.proc_single[g.unit_proc], dtype=u8),
        np.ascontiguousarray(g.proc_unit_handoff[g.unit_proc], dtype=u8),
        np.ascontiguousarray(g.self_link, dtype=u8),
        np.ascontiguousarray(g.weight_bytes, dtype=np.int64),
        np.ascontiguousarray(g.activation_bytes, dtype=np.int64),
        _i32(prod[:, 0]),
        _i32(prod[:, 1]),
        _i32(prod[:, 2]),
        _i32(inp[:, 0]),
        _i32(inp[:, 1]),
        _i32(g.tensor_src),
        _i32(g.output_tensors),
        np.ascontiguousarray(g.transfer_cost, dtype=np.float64),
        _i32(gptr),
        _i32(gidx),
    )
    return _evalc.make(dims, arrays)


class Scorer:
    """Scores placements of one graph for one objective (see the module docstring).

    ``evaluations`` counts every placement scored (moves included), the unit budgets count.
    """

    def __init__(self, g: CostGraph, objective: str, *, use_c: bool | None = None) -> None:
        self.c = _core.compiled(g)  # no strong reference to g: the cache below is keyed by it
        self.throughput = objective == "throughput"
        self.use_c = HAVE_C if use_c is None else (use_c and HAVE_C)
        self.kernel = _make_kernel(g, self.c) if self.use_c else None
        self.evaluations = 0

    def _key(self, ok: bool, lat: float, per: float, sp: float) -> Key:
        if not ok:
            return _INF_KEY
        return (per, sp, lat) if self.throughput else (lat, per, sp)

    def _kind(self, spread: bool) -> int:
        """The tie-breaker: partition ends for latency, load balance for throughput."""
        return 0 if not spread else (2 if self.throughput else 1)

    def score(self, units: np.ndarray | list[int], spread: bool = True) -> Key:
        """The key of one placement: ``(latency, period, spread)`` or, for throughput,
        ``(period, balance, latency)`` (balance = sum of squared unit and link loads: on a
        period plateau, moving load off one of several equally busy units is progress)."""
        self.evaluations += 1
        if self.kernel is not None:
            ok, lat, per, sp = _evalc.score(self.kernel, _i32(units), self._kind(spread))
            return self._key(ok, lat, per, sp)
        ul = units.tolist() if isinstance(units, np.ndarray) else list(units)
        r = _core.run(self.c, ul, False, self._kind(spread))
        return self._key(r.feasible, r.latency, r.period, r.spread)

    def scan(
        self,
        base: np.ndarray,
        move_ptr: np.ndarray,
        move_node: np.ndarray,
        move_unit: np.ndarray,
        cur: Key,
        *,
        first: bool = True,
        spread: bool = True,
    ) -> tuple[int, np.ndarray, int]:
        """Score moves against ``base``; return (the first or best improving move or -1, keys,
        number of moves scored). Keys of moves not scored are left at ``inf``."""
        m = len(move_ptr) - 1
        keys = np.full((max(m, 0), 3), INF)
        if m <= 0:
            return -1, keys, 0
        if self.kernel is not None:
            idx, done = _evalc.scan(
                self.kernel,
                _i32(base),
                _i32(move_ptr),
                _i32(move_node),
                _i32(move_unit),
                1 if self.throughput else 0,
                cur,
                self._kind(spread),
                first,
                keys,
            )
            self.evaluations += int(done)
            return int(idx), keys, int(done)
        units = np.asarray(base, dtype=np.int64).tolist()
        mp, mn, mu = move_ptr.tolist(), move_node.tolist(), move_unit.tolist()
        best, best_key, done = -1, cur, 0
        for i in range(m):
            a, b = mp[i], mp[i + 1]
            saved = [units[mn[j]] for j in range(a, b)]
            for j in range(a, b):
                units[mn[j]] = mu[j]
            r = _core.run(self.c, units, False, self._kind(spread))
            for j in range(b - 1, a - 1, -1):
                units[mn[j]] = saved[j - a]
            done += 1
            key = self._key(r.feasible, r.latency, r.period, r.spread)
            keys[i] = key if r.feasible else (INF, INF, 0.0)
            if r.feasible and better(key, best_key):
                best, best_key = i, key
                if first:
                    break
        self.evaluations += done
        return best, keys, done

    def detail(self, units: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(part_of, part_unit, start, end)`` of a feasible placement (partitions in creation
        order); empty arrays when it is infeasible."""
        n = self.c.n
        if self.kernel is not None:
            po = np.empty(n, np.int32)
            pu = np.empty(n, np.int32)
            st = np.empty(n, np.float64)
            en = np.empty(n, np.float64)
            nq = _evalc.detail(self.kernel, _i32(units), po, pu, st, en)
            if nq == 0:
                return (np.zeros(0, np.int64),) * 2 + (np.zeros(0),) * 2
            return po.astype(np.int64), pu[:nq].astype(np.int64), st[:nq], en[:nq]
        r = _core.run(self.c, np.asarray(units).tolist(), True)
        if not r.feasible:
            return (np.zeros(0, np.int64),) * 2 + (np.zeros(0),) * 2
        return (
            np.asarray(r.part_of, np.int64),
            np.asarray(r.part_unit, np.int64),
            np.asarray(r.start),
            np.asarray(r.end),
        )


def better(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """Lexicographically strictly better, ignoring float noise below one part in 10^12."""
    for x, y in zip(a, b, strict=True):
        if x < y * (1 - 1e-12):
            return True
        if x > y * (1 + 1e-12):
            return False
    return False


_SCORERS: weakref.WeakKeyDictionary[CostGraph, dict[str, Scorer]] = weakref.WeakKeyDictionary()


def scorer(g: CostGraph, objective: str) -> Scorer:
    """A cached :class:`Scorer` for ``g`` (its evaluation counter is shared: read differences)."""
    d = _SCORERS.setdefault(g, {})
    s = d.get(objective)
    if s is None:
        s = d[objective] = Scorer(g, objective)
    return s
