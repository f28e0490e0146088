"""Kernel-fusion detection, nn-Meter style: time A, B and A->B; fused if the pair is much cheaper.

nn-Meter (MobiSys'21) declares ops A and B fused when ``T_A + T_B - T_AB > alpha * min(T_A,
T_B)`` with ``alpha = 0.5``. Times here are per-invocation-overhead-free values, so a pair that
merely saves one invocation does not count as fused.

Which pairs are tested is the executor's business. LiteRT's builtin and reference kernels run
one kernel per node, so nothing is tested for them. XNNPACK builds one subgraph of the whole
delegated partition and its subgraph optimizer merges some nodes; the candidates tested are the
edges where the consumer is a clamp-like activation (``RELU``, ``RELU6``, ``RELU_N1_TO_1``,
``RELU_0_TO_1``: XNNPACK fuses clamps into their producer), the producer is a ``PAD`` (it folds
constant padding into the following convolution or pooling), or either side is a copy-like op
(``RESHAPE``, ``SQUEEZE``, ``EXPAND_DIMS``). Each candidate is measured, never assumed.
Detected pairs grow into chains when the next op passes the same test against the group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from edgepart.cost.table import Stats
from edgepart.cost.units import Unit, UnitResult
from edgepart.ir import analysis
from edgepart.ir.graph import Subgraph
from edgepart.schema import opnames

__all__ = ["ALPHA", "candidate_pairs", "candidate_units", "detect", "is_fused"]

ALPHA = 0.5
MAX_CHAIN = 4  # longest fused chain tried (every candidate chain is timed up front)

CLAMPS = frozenset({"RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1"})
COPIES = frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS"})
PADS = frozenset({"PAD", "PADV2"})
FUSING_EXECUTORS = frozenset({"xnnpack"})


def is_fused(t_a: float, t_b: float, t_ab: float, alpha: float = ALPHA) -> bool:
    """nn-Meter's rule: the pair saves more than ``alpha`` of the cheaper op's time."""
    return t_a + t_b - t_ab > alpha * min(t_a, t_b)


def candidate_pairs(sg: Subgraph, executor: str) -> list[tuple[int, ...]]:
    """Edges (producer, consumer) worth testing for fusion on ``executor``, in producer order.

    The producer's single output must feed only the consumer and not be a subgraph output
    (otherwise it is materialized anyway). Vectorized: fast on 100,000-op graphs.
    """
    if executor not in FUSING_EXECUTORS or sg.num_ops == 0:
        return []
    outs = sg.op_outputs
    one_out = np.flatnonzero(outs.lengths() == 1)
    t = outs.idx[outs.ptr[one_out]].astype(np.int64)
    keep = t >= 0
    a, t = one_out[keep], t[keep]
    is_out = np.zeros(sg.num_tensors, dtype=bool)
    is_out[sg.outputs.astype(np.int64)] = True
    cons = analysis.consumers(sg)
    single = (cons.lengths()[t] == 1) & ~is_out[t]
    a, t = a[single], t[single]
    b = cons.idx[cons.ptr[t]]
    codes = sg.op_builtin
    ca, cb = codes[a], codes[b]
    ok = (
        np.isin(cb, _codes(CLAMPS))
        | np.isin(ca, _codes(PADS))
        | np.isin(ca, _codes(COPIES))
        | np.isin(cb, _codes(COPIES))
    )
    return list(zip(a[ok].tolist(), b[ok].tolist(), strict=True))


def _codes(names: frozenset[str]) -> list[int]:
    return [opnames.builtin_code(n) for n in sorted(names)]


def candidate_units(sg: Subgraph, units: Sequence[Unit], executor: str) -> list[Unit]:
    """Every group :func:`detect` may ask for, so the profiler can time them up front.

    The first-wave pairs, and each pair grown along further candidate edges up to
    :data:`MAX_CHAIN` ops (a superset of the chains detection can try).
    """
    single = {u.ops[0]: u for u in units if len(u.ops) == 1}
    nxt: dict[int, int] = {}
    for a, b in candidate_pairs(sg, executor):
        if a in single and b in single:
            nxt.setdefault(a, b)
    out: list[Unit] = []
    used: set[int] = set()
    starts = []
    for a, b in nxt.items():
        if a not in used and b not in used:
            used.update((a, b))
            starts.append([a, b])
    for chain in starts:
        while True:
            helpers = tuple(sorted({h for op in chain for h in single[op].helpers}))
            out.append(Unit(tuple(chain), helpers))
            nb = nxt.get(chain[-1])
            if nb is None or nb in used or len(chain) >= MAX_CHAIN:
                break
            chain = [*chain, nb]
    return out


MeasureMany = Callable[[list[Unit]], list[tuple[float, Stats] | None]]
Record = Callable[[Unit, Stats, str], UnitResult]


def detect(
    sg: Subgraph,
    results: Sequence[UnitResult],
    measure_many: MeasureMany,
    record: Record,
    *,
    executor: str,
    alpha: float = ALPHA,
) -> tuple[list[UnitResult], list[tuple[int, ...]]]:
    """Test the candidate pairs in waves; returns the new unit results and the fused groups.

    Wave 1 times every candidate pair with its two members again, interleaved, and applies
    :func:`is_fused` to those fresh values. Each later wave tries to extend every fused chain by
    the candidate pair starting at its last op. Only single-op units take part (state groups
    stay as they are). ``record(unit, stats, role)`` turns a group's stats into a result.
    """
    single: dict[int, UnitResult] = {
        r.unit.ops[0]: r for r in results if len(r.unit.ops) == 1 and r.stats is not None
    }
    nxt: dict[int, int] = {}
    for a, b in candidate_pairs(sg, executor):
        if a in single and b in single:
            nxt.setdefault(a, b)
    chains: list[list[int]] = []
    chain_res: list[UnitResult] = []
    used: set[int] = set()
    # wave 1: pairs (an op starts at most one pair, and is in at most one)
    trials = []
    for a, b in nxt.items():
        if a in used or b in used:
            continue
        used.update((a, b))
        trials.append([a, b])
    while trials:
        batch: list[Unit] = []
        for ops in trials:
            head = Unit(tuple(ops[:-1]), _helpers(single, ops[:-1]))
            last = Unit((ops[-1],), _helpers(single, ops[-1:]))
            batch += [head, last, Unit(tuple(ops), _helpers(single, ops))]
        timed = measure_many(batch)
        grown: list[list[int]] = []
        for k, ops in enumerate(trials):
            t_head, t_last, t_all = timed[3 * k : 3 * k + 3]
            if t_head is None or t_last is None or t_all is None:
                continue
            if not is_fused(t_head[0], t_last[0], t_all[0], alpha):
                record(batch[3 * k + 2], t_all[1], "fusion_test")
                continue
            res = record(batch[3 * k + 2], t_all[1], "fused")
            if len(ops) == 2:
                chains.append(ops)
                chain_res.append(res)
            else:
                g = next(i for i, c in enumerate(chains) if c == ops[:-1])
                chains[g] = ops
                chain_res[g] = res
            grown.append(ops)
        trials = []
        for ops in grown:
            nb = nxt.get(ops[-1])
            if nb is not None and nb not in used and len(ops) < MAX_CHAIN:
                used.add(nb)
                trials.append([*ops, nb])
    if not chains:
        return list(results), []
    member = {op: g for g, c in enumerate(chains) for op in c}
    out: list[UnitResult] = []
    emitted: set[int] = set()
    for r in results:
        rops = r.unit.ops
        if len(rops) == 1 and rops[0] in member:
            g = member[rops[0]]
            if g not in emitted:
                emitted.add(g)
                out.append(chain_res[g])
            continue
        out.append(r)
    return out, [tuple(c) for c in chains]


def _helpers(single: dict[int, UnitResult], ops: Sequence[int]) -> tuple[int, ...]:
    return tuple(sorted({h for op in ops for h in single[op].unit.helpers}))
