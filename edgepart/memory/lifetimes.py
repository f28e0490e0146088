"""Tensor lifetimes over an execution order, with TFLite's ``ArenaPlanner`` semantics.

Reproduces ``ArenaPlanner::PlanAllocations`` and ``IdentifyInPlaceTensors`` (LiteRT
``tflite/arena_planner.cc``): reference counts over the ops in execution order; graph outputs,
graph inputs and variables get an extra reference so they are never freed; graph inputs and
variables are allocated at node 0; an op's outputs are allocated at that op, and an input is
freed at the op where its count reaches zero. Tensors nobody consumes are never freed either.
Constants live in the model file, not in an arena; variables live in the persistent arena.

In-place sharing: an op whose kernel declares ``kTfLiteInplaceOpInput{N}Shared`` gives its first
output the buffer of input ``N`` (the first eligible one). Refused when the input is a graph
input, the output a graph output, or the input is not an arena tensor. Unless the kernel also
declares ``kTfLiteInplaceOpDataUnmodified``, the input must also have the output's byte size
(more than 4 bytes), a single consumer, and its root buffer a single consumer too. Shared
tensors are resolved to a root, whose lifetime then runs to the last consumer of any tensor
sharing it.

Timeline: op ``k`` of the order is time ``k``; TFLite's inclusive ``[first, last]`` node range
becomes ``[first, last + 1)``; never-freed tensors end at ``len(order) + 1`` (one step "after
the run"), which keeps TFLite's "whole run = allocated at node 0 and never freed" test exact
(a tensor freed by the last op ends at ``len(order)``, not at ``len(order) + 1``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgepart.ir.graph import Subgraph
from edgepart.memory._libstdcxx import std_sort, unordered_set_order
from edgepart.schema import opnames

__all__ = ["INPLACE_OPS", "PREPARE_FOLDED", "Lifetimes", "tflite_lifetimes"]

_INPUT0, _INPUT1, _UNMODIFIED = 1, 2, 4
INPLACE_OPS: dict[str, int] = {
    # kTfLiteInplaceOpInput0Shared | kTfLiteInplaceOpDataUnmodified
    "RESHAPE": _INPUT0 | _UNMODIFIED,
    "SQUEEZE": _INPUT0 | _UNMODIFIED,
    "EXPAND_DIMS": _INPUT0 | _UNMODIFIED,
    "BITCAST": _INPUT0 | _UNMODIFIED,
    # kTfLiteInplaceOpInput0Shared | kTfLiteInplaceOpInput1Shared
    "ADD": _INPUT0 | _INPUT1,
    "SUB": _INPUT0 | _INPUT1,
    "MUL": _INPUT0 | _INPUT1,
    "DIV": _INPUT0 | _INPUT1,
    # kTfLiteInplaceOpInput0Shared
    "SOFTMAX": _INPUT0,
    "DYNAMIC_UPDATE_SLICE": _INPUT0,
}
"""Kernels that declare in-place sharing in LiteRT's builtin registrations (``reshape.cc``,
``squeeze.cc``, ``expand_dims.cc``, ``bitcast.cc``, ``add.cc``, ``sub.cc``, ``mul.cc``, ``div.cc``,
``activations.cc`` (softmax), ``dynamic_update_slice.cc``); ADD, SUB, MUL, DIV, SOFTMAX and
RESHAPE sharing is also observed on ai-edge-litert 2.3.0 (tests/memory/test_tflite_arena.py)."""

# Kernels that compute their output once at Prepare time, into a persistent read-only tensor
# outside the arena (``SetTensorToPersistentRo``): always, or when the inputs listed are all
# constant or themselves persistent read-only (``IsConstantOrPersistentTensor``); ``None`` = all.
# From LiteRT's kernels (shape.cc, rank.cc, size.cc, mul.cc, concatenation.cc, reshape.cc,
# range.cc, gather.cc, broadcast_args.cc, strided_slice.cc); other kernels may fold too.
PREPARE_FOLDED: dict[str, tuple[int, ...] | None] = {
    "SHAPE": (),
    "RANK": (),
    "SIZE": (),
    "MUL": (0, 1),
    "CONCATENATION": None,
    "RESHAPE": (0, 1),
    "RANGE": (0, 1, 2),
    "GATHER": (0, 1),
    "BROADCAST_ARGS": (0, 1),
    "STRIDED_SLICE": (0, 1, 2),
}

_SCALAR_BYTES = 4
_RW, _PERSISTENT, _MMAP = 0, 1, 2  # kTfLiteArenaRw, kTfLiteArenaRwPersistent, kTfLiteMmapRo
_NEVER = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Lifetimes:
    """Arena tensors of one subgraph with half-open lifetimes on the order's timeline.

    ``tensors`` are the root tensors that own arena buffers; ``lower``/``upper`` their lifetimes
    and ``nbytes`` their sizes. ``persistent`` flags variables (TFLite's persistent arena).
    ``alias`` maps every tensor sharing a root's buffer to that root. ``horizon`` is
    ``len(order) + 1``. ``rank`` is each buffer's position in TFLite's allocation order.
    """

    tensors: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    nbytes: np.ndarray
    persistent: np.ndarray
    alias: dict[int, int]
    horizon: int
    rank: np.ndarray


def tflite_lifetimes(
    sg: Subgraph,
    order: Sequence[int] | None = None,
    *,
    inputs: Sequence[int] | None = None,
    outputs: Sequence[int] | None = None,
    inplace: bool = True,
    temporaries: Sequence[tuple[int, int] | tuple[int, int, bool]] = (),
) -> Lifetimes:
    """Lifetimes of ``sg``'s arena tensors when its ops run in ``order``.

    Parameters
    ----------
    sg
        The subgraph.
    order
        Op indices in execution order (default: all ops in index order, as TFLite runs them).
        A subset plans one partition of the subgraph.
    inputs, outputs
        Tensors treated as graph inputs/outputs (default: the subgraph's). For a partition, the
        tensors it receives from and hands to other partitions.
    inplace
        Apply TFLite's in-place sharing rules.
    temporaries
        Kernel scratch buffers ``(position in order, bytes[, persistent])`` living during one
        op; they get ids ``num_tensors + j`` (TFLite appends them to the tensor list at Prepare
        time). Persistent ones go to the persistent arena but still take part in the sort.
    """
    ops = list(range(sg.num_ops)) if order is None else [int(k) for k in order]
    n_t = sg.num_tensors
    g_in = np.asarray(sg.inputs if inputs is None else inputs, dtype=np.int64)
    g_out = np.asarray(sg.outputs if outputs is None else outputs, dtype=np.int64)
    g_in, g_out = g_in[g_in >= 0], g_out[g_out >= 0]
    nbytes = sg.tensor_nbytes.astype(np.int64)
    ins_l = [sg.op_inputs.row(k).tolist() for k in ops]
    outs_l = [sg.op_outputs.row(k).tolist() for k in ops]
    names = [opnames.builtin_name(int(c)) for c in sg.op_builtin[ops]] if ops else []
    const, persistent = _allocation_kinds(sg, names, ins_l, outs_l)
    variables = np.flatnonzero(sg.tensor_is_variable)

    base = np.zeros(n_t, dtype=np.int64)
    np.add.at(base, g_out, 1)
    np.add.at(base, variables, 1)
    np.add.at(base, g_in, 1)
    alloc = np.full(n_t, _NEVER, dtype=np.int64)
    alloc[variables] = 0
    alloc[g_in] = 0
    uses = base.copy()
    for row in ins_l:
        for t in row:
            if t >= 0:
                uses[t] += 1

    alias: dict[int, int] = {}
    if inplace:
        # Sharing is decided before the kernels' Prepare (``PlanAllocations``), when only
        # constants and variables are outside the arena; CalculateAllocations later drops it
        # where Prepare moved the root out of the arena.
        plan_ro = sg.tensor_is_constant & ~sg.tensor_is_variable
        alias = _inplace(
            names, ins_l, outs_l, uses, nbytes, plan_ro, sg.tensor_is_variable, g_in, g_out
        )
        alias = {o: r for o, r in alias.items() if not (const[r] or persistent[r])}

    def root(t: int) -> int:
        return alias.get(t, t)

    refs = base.copy()
    for row in ins_l:
        for t in row:
            if t >= 0:
                refs[root(t)] += 1
    dealloc = np.full(n_t, _NEVER, dtype=np.int64)
    for k, (row_in, row_out) in enumerate(zip(ins_l, outs_l, strict=True)):
        for t in row_out:
            if t >= 0 and alloc[t] == _NEVER:
                alloc[t] = k
        for t in row_in:
            if t < 0:
                continue
            r = root(t)
            refs[r] -= 1
            if refs[r] == 0 and alloc[r] != _NEVER and dealloc[r] == _NEVER:
                dealloc[r] = k
    if temporaries:
        pos = np.array([tmp[0] for tmp in temporaries], dtype=np.int64)
        alloc = np.concatenate([alloc, pos])
        dealloc = np.concatenate([dealloc, pos])
        nbytes = np.concatenate([nbytes, [tmp[1] for tmp in temporaries]]).astype(np.int64)
        const = np.concatenate([const, np.zeros(len(pos), bool)])
        pers = [bool(tmp[2]) if len(tmp) > 2 else False for tmp in temporaries]
        persistent = np.concatenate([persistent, np.array(pers, dtype=bool)])
    horizon = len(ops) + 1
    owned = (alloc != _NEVER) & ~const
    if alias:
        owned[np.fromiter(alias, dtype=np.int64)] = False
    tensors = np.flatnonzero(owned)
    lower = alloc[tensors]
    upper = np.where(dealloc[tensors] == _NEVER, horizon, dealloc[tensors] + 1)
    # the persistent arena allocates from the first node to the end (arena_planner.cc:
    # last_node = max): persistent buffers never share memory
    upper = np.where(persistent[tensors], horizon, upper)
    order_ids = _allocation_order(
        outs_l, g_in, variables, n_t, temporaries, alloc, dealloc, nbytes, const, persistent
    )
    rank = np.full(len(alloc), -1, dtype=np.int64)
    rank[order_ids] = np.arange(len(order_ids))
    return Lifetimes(
        tensors=tensors,
        lower=lower,
        upper=upper,
        nbytes=nbytes[tensors],
        persistent=persistent[tensors],
        alias=alias,
        horizon=horizon,
        rank=rank[tensors],
    )


def _allocation_order(
    outs_l: list[list[int]],
    g_in: np.ndarray,
    variables: np.ndarray,
    n_t: int,
    temporaries: Sequence[tuple[int, int] | tuple[int, int, bool]],
    alloc: np.ndarray,
    dealloc: np.ndarray,
    nbytes: np.ndarray,
    const: np.ndarray,
    persistent: np.ndarray,
) -> list[int]:
    """Tensor ids in the order ``CalculateAllocations`` allocates them.

    The vector is built node by node from ``nodes_to_tensors_`` (``std::unordered_set``s filled
    with the node's outputs, for node 0 first variables and graph inputs, then at allocation
    time the node's temporaries; iterated in libstdc++ hash order), keeps arena
    tensors with bytes and persistent tensors (in-place outputs included: they are skipped only
    when placed), then goes through ``std::sort`` with ``CreateTensorAllocationVector``'s
    comparator: whole-run tensors first by id, then size descending, then first node.
    """
    inserted: list[list[int]] = [[t for t in row if t >= 0] for row in outs_l] or [[]]
    inserted[0] = variables.tolist() + g_in.tolist() + inserted[0]
    for j, tmp in enumerate(temporaries):
        inserted[tmp[0]].append(n_t + j)
    seq = [
        t
        for node in inserted
        for t in unordered_set_order(node)
        if alloc[t] != _NEVER and not const[t] and (persistent[t] or nbytes[t] > 0)
    ]
    whole = (alloc == 0) & (dealloc == _NEVER)
    whole_l, size_l, node_l = whole.tolist(), nbytes.tolist(), alloc.tolist()

    def less(a: int, b: int) -> bool:
        if whole_l[a]:
            return a < b if whole_l[b] else True
        if whole_l[b]:
            return False
        if size_l[a] != size_l[b]:
            return size_l[a] > size_l[b]  # type: ignore[no-any-return]
        return node_l[a] < node_l[b]  # type: ignore[no-any-return]

    return std_sort(seq, less)


def _allocation_kinds(
    sg: Subgraph, names: list[str], ins_l: list[list[int]], outs_l: list[list[int]]
) -> tuple[np.ndarray, np.ndarray]:
    """``(read_only, persistent)`` flags: constants and Prepare-folded outputs are read-only;
    variables, dequantized constant weights (DEQUANTIZE of a constant, dequantize.cc) and
    densified weights (DENSIFY, whose input must be constant, densify.cc) live in the persistent
    arena. A DEQUANTIZE of a densified weight reads no constant: its output is an ordinary
    arena tensor, recomputed each run."""
    const = sg.tensor_is_constant & ~sg.tensor_is_variable
    read_only = const.copy()
    persistent = sg.tensor_is_variable.astype(bool).copy()
    for name, row_in, row_out in zip(names, ins_l, outs_l, strict=True):
        if name == "DENSIFY" or (
            name == "DEQUANTIZE" and row_in and row_in[0] >= 0 and const[row_in[0]]
        ):
            persistent[[t for t in row_out if t >= 0]] = True
            continue
        if name not in PREPARE_FOLDED:
            continue
        need = PREPARE_FOLDED[name]
        picked = row_in if need is None else [row_in[i] for i in need if i < len(row_in)]
        if all(t < 0 or read_only[t] for t in picked):
            read_only[[t for t in row_out if t >= 0]] = True
    return read_only, persistent


def _inplace(
    names: list[str],
    ins_l: list[list[int]],
    outs_l: list[list[int]],
    uses: np.ndarray,
    nbytes: np.ndarray,
    const: np.ndarray,
    persistent: np.ndarray,
    g_in: np.ndarray,
    g_out: np.ndarray,
) -> dict[int, int]:
    """``IdentifyInPlaceTensors``: output tensor -> root tensor whose buffer it reuses."""
    is_in = set(g_in.tolist())
    is_out = set(g_out.tolist())
    kind = np.where(const, _MMAP, np.where(persistent, _PERSISTENT, _RW))
    alias: dict[int, int] = {}
    for name, row_in, row_out in zip(names, ins_l, outs_l, strict=True):
        flags = INPLACE_OPS.get(name, 0)
        if not flags or not row_out:
            continue
        changed = not flags & _UNMODIFIED
        out = row_out[0]
        if out < 0:
            continue
        chosen = -1
        for i, t in enumerate(row_in[:3]):  # kTfLiteMaxSharableOpInputs
            if t < 0 or not flags & (_INPUT0 << i):
                continue
            if changed and (nbytes[t] != nbytes[out] or nbytes[t] <= _SCALAR_BYTES or uses[t] > 1):
                continue
            if t in is_in or out in is_out:
                continue
            # Allocation types must match unless the input is an arena (read-write) tensor.
            if kind[t] != kind[out] and kind[t] != _RW:
                continue
            chosen = t
            break
        if chosen < 0:
            continue
        r = alias.get(chosen, chosen)
        if changed and uses[r] > 1:
            continue
        alias[out] = r
    return alias
