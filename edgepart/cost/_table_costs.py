"""Latency-table side of :mod:`edgepart.cost.model`: per-signature lookups and group entries."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from edgepart.cost import fusion
from edgepart.cost.context import ROLE
from edgepart.cost.signature import OpSig, group_key, group_signature
from edgepart.cost.table import INTERPOLATED, MEASURED, PREDICTED, ROOFLINE, UNKNOWN, ProcessorTable
from edgepart.cost.units import state_groups
from edgepart.cost.work import OpWork
from edgepart.ir.graph import Subgraph

__all__ = ["SOURCES", "SRC", "apply_context", "fill_from_table", "fill_missing", "table_groups"]

SOURCES = (MEASURED, INTERPOLATED, PREDICTED, ROOFLINE, UNKNOWN)
SRC = {s: i for i, s in enumerate(SOURCES)}


def fill_from_table(
    pt: ProcessorTable,
    sigs: Sequence[OpSig],
    work: OpWork,
    lat: np.ndarray,
    src: np.ndarray,
    delegated: np.ndarray,
) -> None:
    """Overwrite roofline values with measured/interpolated ones, one lookup per signature.

    Ops of one signature have the same shapes, hence the same work, so one answer serves all.
    """
    cls = np.empty(len(sigs), dtype=np.int64)
    first: dict[int, int] = {}
    for i, s in enumerate(sigs):
        cls[i] = first.setdefault(id(s), i)
    reps = np.unique(cls)
    vals = np.full(len(sigs), np.nan)
    codes = np.full(len(sigs), -1, dtype=np.int8)
    dlg = np.zeros(len(sigs), dtype=bool)
    flops, nbytes = work.flops, work.bytes
    for i in reps.tolist():
        s = sigs[i]
        est = pt.lookup(s.key, s.family, float(flops[i]), float(nbytes[i]))
        if est is not None:
            vals[i] = est.seconds
            codes[i] = SRC[est.source]
            dlg[i] = pt.delegated(s.key, s.family)
    hit = (codes[cls] >= 0) & ~work.folded
    lat[hit] = vals[cls][hit]
    src[hit] = codes[cls][hit]
    delegated[hit] = dlg[cls][hit]


def fill_missing(
    pt: ProcessorTable, sg: Subgraph, work: OpWork, lat: np.ndarray, src: np.ndarray
) -> None:
    """Ops the table does not cover whose estimate is not finite (no roofline peak for their
    dtype, as in a processor known only by its table) get one scaled from the table itself:
    the measured ops of the same kind (else all measured ops), seconds per byte moved, median;
    flagged ``interpolated``. A model whose op failed to time, or whose shapes are computed at
    run time, then still gets a finite latency."""
    bad = ~np.isfinite(lat) & ~work.folded
    if not bad.any():
        return
    per_op: dict[str, list[float]] = {}
    every: list[float] = []
    for e in pt.entries.values():
        if e.kind != "op" or e.bytes <= 0:
            continue
        rate = e.value_s / e.bytes
        every.append(rate)
        per_op.setdefault(str(e.extra.get("op", "")), []).append(rate)
    if not every:
        return
    glob = float(np.median(every))
    nbytes = work.bytes.astype(np.float64)
    for i in np.flatnonzero(bad).tolist():
        rates = per_op.get(sg.op_name(i))
        rate = float(np.median(rates)) if rates else glob
        lat[i] = rate * max(float(nbytes[i]), 1.0)
        src[i] = SRC[INTERPOLATED]


def table_groups(
    sg: Subgraph, pt: ProcessorTable, sigs: Sequence[OpSig], lat: np.ndarray, src: np.ndarray
) -> list[tuple[tuple[int, ...], str]]:
    """Groups with a table entry: state groups and fused chains; attribute their time to members.

    Members get shares of the group's value in proportion to their current estimates, so the
    matrix sums to the group value when the whole group is placed together.
    """
    found: list[tuple[tuple[int, ...], str]] = []
    cands: list[tuple[tuple[int, ...], str]] = []
    for ops in state_groups(sg):
        key = group_signature(sg, list(ops), [sigs[i] for i in ops]).key
        cands.append((ops, key))
    fused_keys = {k for k, e in pt.entries.items() if e.extra.get("role") == "fused"}
    if fused_keys:
        cands.extend(_fused_chains(sg, pt.executor, sigs, fused_keys, fusion.candidate_pairs))
    # segments (edgepart.profiling.segments) name their ops; they apply where those ops have
    # the recorded signatures (the model they were measured on), after the groups inside them
    for key, seg in sorted(pt.entries.items()):
        if seg.extra.get("role") != "segment":
            continue
        members = seg.extra.get("op_indices")
        if not isinstance(members, list) or not members:
            continue
        ops = tuple(int(i) for i in members)
        if max(ops) >= sg.num_ops or min(ops) < 0:
            continue
        if group_signature(sg, list(ops), [sigs[i] for i in ops]).key == key:
            cands.append((tuple(sorted(ops)), key))
    for ops, key in cands:
        e = pt.entries.get(key)
        if e is None:
            continue
        idx = list(ops)
        share = lat[idx].astype(np.float64)
        tot = share.sum()
        share = share / tot if tot > 0 and np.isfinite(tot) else np.full(len(idx), 1 / len(idx))
        lat[idx] = e.value_s * share
        src[idx] = SRC[MEASURED]
        found.append((ops, key))
    return found


def _fused_chains(
    sg: Subgraph,
    executor: str,
    sigs: Sequence[OpSig],
    fused_keys: set[str],
    pairs_of: Callable[[Subgraph, str], list[tuple[int, ...]]],
) -> list[tuple[tuple[int, ...], str]]:
    """Chains built from candidate pairs whose group key the table marks as fused."""
    keys: dict[int, str] = {}
    pair_keys: dict[tuple[int, ...], str] = {}

    def key_of(i: int) -> str:
        s = sigs[i]
        k = keys.get(id(s))
        if k is None:
            k = keys[id(s)] = s.key
        return k

    def key_of_chain(ops: list[int]) -> str:
        # candidate chains are linear (each member feeds the next); one string per distinct
        # sequence of signatures
        ident = tuple(id(sigs[i]) for i in ops)
        k = pair_keys.get(ident)
        if k is None:
            edges = [(j, j + 1) for j in range(len(ops) - 1)]
            k = pair_keys[ident] = group_key([key_of(i) for i in ops], edges)
        return k

    chains: list[list[int]] = []
    chain_key: list[str] = []
    chain_of: dict[int, int] = {}
    for a, b in pairs_of(sg, executor):
        if b in chain_of:
            continue
        if a in chain_of and chains[chain_of[a]][-1] != a:
            continue
        base = chains[chain_of[a]] if a in chain_of else [a]
        trial = [*base, b]
        key = key_of_chain(trial)
        if key not in fused_keys:
            continue
        if a in chain_of:
            base.append(b)
            chain_key[chain_of[a]] = key
            chain_of[b] = chain_of[a]
        else:
            chains.append(trial)
            chain_key.append(key)
            chain_of[a] = chain_of[b] = len(chains) - 1
    return [(tuple(c), k) for c, k in zip(chains, chain_key, strict=True)]


def apply_context(
    sg: Subgraph,
    pt: ProcessorTable,
    sigs: Sequence[OpSig],
    lat: np.ndarray,
    grouped: np.ndarray,
    pred: np.ndarray,
) -> np.ndarray:
    """Replace op latencies by what they add right after their predecessor, where measured.

    For an op ``b`` whose predecessor ``a = pred[b]`` has a context-pair entry with it (see
    :mod:`edgepart.cost.context`) and neither is in a group entry (``grouped``), ``lat[b]``
    becomes ``value(pair) - lat[a]`` (the first op's own value, before any replacement), at
    least 0. Returns, per op, the predecessor the value assumes (-1 where nothing changed).
    Vectorized: one key and one lookup per distinct (signature, signature, edge) triple.
    """
    n = len(lat)
    used = np.full(n, -1, dtype=np.int64)
    if not any(e.extra.get("role") == ROLE for e in pt.entries.values()):
        return used
    b = np.flatnonzero(pred >= 0)
    b = b[~grouped[b] & ~grouped[pred[b]]]
    if not len(b):
        return used
    a = pred[b]
    # signature classes (ops of one signature share the OpSig object)
    ids = np.fromiter(map(id, sigs), np.int64, n)
    _, rep, inv_ids = np.unique(ids, return_index=True, return_inverse=True)
    cls = rep[np.asarray(inv_ids).reshape(-1)].astype(np.int64)  # first op of each class
    feeds = _feeds_pred(sg, pred)[b]
    code = (cls[a] * n + cls[b]) * 2 + feeds  # one integer per (class, class, edge) triple
    uniq, inv = np.unique(code, return_inverse=True)
    val = np.full(len(uniq), np.nan)
    for k, c in enumerate(uniq.tolist()):
        ca, cb, f = c // 2 // n, c // 2 % n, c % 2
        key = group_key([sigs[ca].key, sigs[cb].key], [(0, 1)] if f else [])
        e = pt.entries.get(key)
        if e is not None and e.extra.get("role") == ROLE:
            val[k] = e.value_s
    v = val[np.asarray(inv).reshape(-1)]
    hit = ~np.isnan(v)
    b, a, v = b[hit], a[hit], v[hit]
    lat[b] = np.maximum(v - lat[a], 0.0)  # fancy indexing reads lat[a] before the write
    used[b] = a
    return used


def _feeds_pred(sg: Subgraph, pred: np.ndarray) -> np.ndarray:
    """Per op: whether its predecessor ``pred[op]`` produces one of its inputs."""
    producer = np.full(sg.num_tensors, -1, dtype=np.int64)
    outs = sg.op_outputs
    t = outs.idx.astype(np.int64)
    ok = t >= 0
    producer[t[ok]] = outs.row_ids()[ok]
    ins = sg.op_inputs
    t = ins.idx.astype(np.int64)
    rows = ins.row_ids()
    ok = t >= 0
    hit = np.zeros(len(t), dtype=bool)
    hit[ok] = (producer[t[ok]] == pred[rows[ok]]) & (pred[rows[ok]] >= 0)
    out = np.zeros(sg.num_ops, dtype=bool)
    out[rows[hit]] = True
    return out
