"""Predictors from per-op latency tables (a phone's ``edgepart profile --adb``, or a host's).

A latency table measured on a device holds, per op of a profiled model, what that op took
(and, for a delegate, what each DELEGATE partition took). That is kernel-level data of the
kind the host calibration measures with generated chains, so the same fitting applies
(:func:`edgepart.cost.predictor_fit.fit_config`): every model of the table is decomposed into
kernels with the table's executor; each kernel whose ops all have an entry becomes a chain of
one kernel with the entries' time, and each delegate-partition entry a chain of the kernels
of its ops with the partition's time. The result is a predictor configuration of the usual
format, so models never profiled on the device are predicted from those that were.

Entries are found by op signature (the table's keys), so a table measured on one model covers
every op of the same signature in another; delegate partitions by the op indices the phone
profiler records (``op_indices``), checked against the signature.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from edgepart.cost.kernels import Kernels, decompose
from edgepart.cost.predictor import ConfigPredictor, Predictor
from edgepart.cost.predictor_fit import FitReport, chain_data, config_predictor, fit_config
from edgepart.cost.signature import group_signature, op_signatures
from edgepart.cost.table import ProcessorTable
from edgepart.errors import PredictorError, UsageError
from edgepart.ir.graph import Model

__all__ = ["config_from_tables", "predictor_from_tables", "table_chains"]


def _sub(k: Kernels, idx: Sequence[int]) -> Kernels:
    ii = np.asarray(list(idx), dtype=np.int64)
    return Kernels(
        types=[k.types[i] for i in ii.tolist()],
        features=k.features[ii],
        ops=[k.ops[i] for i in ii.tolist()],
        op_kernel=np.zeros(0, np.int64),
        repeat=k.repeat[ii],
        executor=k.executor,
    )


#: The time given a kernel whose ops were measured but valued zero: the table stores what an
#: op adds beyond the invocation's fixed cost, never below zero, so a cheap op (a small
#: softmax) can come out as 0 on a noisy run. It is cheaper than the profiler can tell, not
#: unmeasured; a chain at this floor keeps its kernel type in the fit (a type without chains
#: has no model, and every model with the op would fail to estimate) and prices it near zero.
UNRESOLVED_S = 1e-8


def _occurrences(e_role: str, raw_list: Sequence[Any]) -> list[list[int]]:
    """The op sets an entry names: a segment's ``op_indices`` is one flat list of ops; a
    delegate partition's holds one list (or one index) per occurrence of its signature."""
    if e_role == "segment":
        return [[int(o) for o in raw_list]] if all(isinstance(o, int) for o in raw_list) else []
    return [[int(o) for o in (raw if isinstance(raw, list) else [raw])] for raw in raw_list]


def table_chains(
    model: Model, pt: ProcessorTable, executor: str
) -> list[tuple[Kernels, float, float, str | None]]:
    """The chains (kernels, time, fixed cost, class) one table gives for one model.

    Delegate partitions stand in for their ops (which have no entries of their own); a
    segment (``edgepart.profiling.segments``, ops timed together in context) is a chain beside
    its ops' single-op chains.
    """
    sg = model.main
    sigs = op_signatures(sg)
    k = decompose(model, executor)
    value = {key: e.value_s for key, e in pt.entries.items()}
    out: list[tuple[Kernels, float, float, str | None]] = []
    in_partition: set[int] = set()
    for key, e in sorted(pt.entries.items()):
        role = e.extra.get("role")
        if e.kind != "group" or role not in ("delegate_partition", "segment"):
            continue
        for members in _occurrences(role, e.extra.get("op_indices", [])):
            if not members or max(members) >= sg.num_ops or min(members) < 0:
                continue
            if group_signature(sg, members, [sigs[i] for i in members]).key != key:
                continue
            kid = sorted({int(k.op_kernel[o]) for o in members if k.op_kernel[o] >= 0})
            if kid and e.value_s > 0:
                out.append((_sub(k, kid), e.value_s, 0.0, None))
                if role == "delegate_partition":
                    in_partition.update(members)
    # single ops (CPU rows, host units): kernels whose every op has an entry
    for j, kops in enumerate(k.ops):
        if any(o in in_partition for o in kops) or k.repeat[j] != 1:
            continue
        vals = [value.get(sigs[o].key) for o in kops]
        if any(v is None for v in vals):
            continue
        t = max(float(sum(v for v in vals if v is not None)), UNRESOLVED_S)
        cls = k.types[j].partition(".")[2]
        out.append((_sub(k, [j]), t, 0.0, cls))
    return out


def config_from_tables(
    name: str,
    pairs: Sequence[tuple[Model, ProcessorTable]],
    *,
    family: str = "linear",
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> tuple[ConfigPredictor, FitReport]:
    """One predictor configuration fitted from tables of one processor (module docstring).

    Raises
    ------
    UsageError
        If the tables give too few kernels or their executors differ.
    """
    if not pairs:
        raise UsageError("no latency tables to fit")
    pts = [pt for _, pt in pairs]
    ex = pts[0].executor or "xnnpack"
    if any((pt.executor or "xnnpack") != ex or pt.threads != pts[0].threads for pt in pts):
        raise UsageError("the tables were measured with different executors or threads")
    executor = {"cpu": "builtin"}.get(ex, ex)
    items = []
    for model, pt in pairs:
        items.extend(table_chains(model, pt, executor))
    if len(items) < 6:
        raise PredictorError(
            f"{name}: the tables give {len(items)} kernels with a measured time; need 6 or more"
        )
    d = chain_data(items, min_rows=1)
    models, rep = fit_config(name, d, family=family, seed=seed, progress=progress)
    pt0 = pts[0]
    node = {executor: pt0.delegate_node_s} if pt0.delegate_node_s else {}
    cp = config_predictor(name, executor, pt0.threads, pt0.invoke_overhead_s, node, models, rep)
    return cp, rep


def predictor_from_tables(
    pairs: Sequence[tuple[Model, ProcessorTable]],
    *,
    family: str = "linear",
    seed: int = 0,
) -> Predictor:
    """A predictor (one configuration per table processor) from measured per-op tables."""
    by_proc: dict[str, list[tuple[Model, ProcessorTable]]] = {}
    for m, pt in pairs:
        by_proc.setdefault(pt.name, []).append((m, pt))
    configs = {}
    devices: set[str] = set()
    for name, ps in sorted(by_proc.items()):
        cp, _ = config_from_tables(name, ps, family=family, seed=seed)
        configs[name] = cp
        devices.update(pt.device for _, pt in ps)
    return Predictor(
        device="; ".join(sorted(d for d in devices if d)) or "device",
        obtained="measured",
        source=(
            f"fitted from per-op latency tables of {len(pairs)} profiled model(s) "
            "(edgepart profile), processors " + ", ".join(sorted(by_proc))
        ),
        configs=configs,
        calibration={"tables": len(pairs)},
    )
