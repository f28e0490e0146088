"""Memory problems from ``.tflite`` models, tensor offsets, and TFLM offline plans.

One arena per subgraph (TFLite plans each subgraph separately): memory ``sg<k>`` holds the
read-write arena tensors of subgraph ``k`` with TFLite's lifetimes (:mod:`.lifetimes`), memory
``sg<k>/persistent`` its variables. Buffer ids are ``sg<k>:t<i>`` for tensor ``i``.

TFLite Micro reads a plan from the model's ``OfflineMemoryAllocation`` metadata: little-endian
int32 words ``[version=1, subgraph, n, offset_0, ..., offset_{n-1}]`` with one offset per tensor
of the subgraph (``-1`` = let the runtime place it; constants are ignored). The plan written
here is made *without* TFLite's in-place sharing (TFLM kernels do not promise to run in place),
so every planned tensor has its own buffer; variables are left to the runtime (``-1``).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgepart.errors import ArenaOverflowError, ModelFormatError, UsageError
from edgepart.ir.analysis import topological_order
from edgepart.ir.graph import BufferTable, Model
from edgepart.ir.values import Metadata
from edgepart.memory.arena import DEFAULT_TIME_LIMIT, ArenaPlan, plan_arena
from edgepart.memory.lifetimes import Lifetimes, tflite_lifetimes
from edgepart.memory.problem import DEFAULT_ALIGNMENT, MemoryProblem
from edgepart.tflite.reader import read_model

__all__ = [
    "OFFLINE_PLAN_METADATA",
    "ModelBuffers",
    "model_buffers",
    "model_problem",
    "offline_plan",
    "offline_plan_words",
    "tensor_offsets",
    "with_offline_plan",
]

OFFLINE_PLAN_METADATA = "OfflineMemoryAllocation"


@dataclass(frozen=True)
class ModelBuffers:
    """A model's planning problem plus the way back from buffers to tensors."""

    problem: MemoryProblem
    subgraphs: tuple[int, ...]
    lifetimes: tuple[Lifetimes, ...]
    num_tensors: tuple[int, ...]


def _load(model: Model | str | os.PathLike[str]) -> Model:
    if isinstance(model, Model):
        return model
    return read_model(Path(model))


def model_buffers(
    model: Model | str | os.PathLike[str],
    *,
    alignment: int = DEFAULT_ALIGNMENT,
    inplace: bool = True,
    subgraphs: list[int] | None = None,
) -> ModelBuffers:
    """Buffers of every (or the chosen) subgraph of ``model`` with TFLite's lifetimes.

    Raises
    ------
    ModelFormatError
        A subgraph's ops form a cycle (no order runs them, so no lifetimes exist).
    UsageError
        A chosen subgraph that does not exist.
    """
    m = _load(model)
    chosen = list(range(len(m.subgraphs))) if subgraphs is None else subgraphs
    ids: list[str] = []
    cols: dict[str, list[int]] = {"lower": [], "upper": [], "size": [], "rank": []}
    memory: list[str] = []
    lts: list[Lifetimes] = []
    for k in chosen:
        if not 0 <= k < len(m.subgraphs):
            raise UsageError(f"model has {len(m.subgraphs)} subgraphs, no subgraph {k}")
        try:  # a cycle has no order to run in, so no lifetimes
            topological_order(m.subgraphs[k])
        except ModelFormatError as err:
            raise ModelFormatError(f"{m.source or 'model'}: subgraph {k}: {err}") from None
        lt = tflite_lifetimes(m.subgraphs[k], inplace=inplace)
        lts.append(lt)
        ids += [f"sg{k}:t{t}" for t in lt.tensors.tolist()]
        cols["lower"] += lt.lower.tolist()
        cols["upper"] += lt.upper.tolist()
        cols["size"] += lt.nbytes.tolist()
        cols["rank"] += lt.rank.tolist()
        memory += [f"sg{k}/persistent" if p else f"sg{k}" for p in lt.persistent.tolist()]
    problem = MemoryProblem.from_arrays(
        ids=ids,
        memory=memory,
        alignment=alignment,
        **cols,  # type: ignore[arg-type]
    )
    return ModelBuffers(
        problem, tuple(chosen), tuple(lts), tuple(m.subgraphs[k].num_tensors for k in chosen)
    )


def model_problem(
    model: Model | str | os.PathLike[str], *, alignment: int = DEFAULT_ALIGNMENT
) -> MemoryProblem:
    """The planning problem of a model (all subgraphs), for ``edgepart plan-memory``."""
    return model_buffers(model, alignment=alignment).problem


def tensor_offsets(mb: ModelBuffers, plan: ArenaPlan, subgraph: int = 0) -> np.ndarray:
    """Offset of every tensor of ``subgraph`` in its read-write arena.

    ``-1`` for tensors outside that arena (constants, variables, unused tensors); tensors that
    share a buffer in place get their root's offset.
    """
    if subgraph not in mb.subgraphs:
        raise UsageError(f"subgraph {subgraph} was not planned (planned: {list(mb.subgraphs)})")
    pos = mb.subgraphs.index(subgraph)
    lt = mb.lifetimes[pos]
    out = np.full(mb.num_tensors[pos], -1, dtype=np.int64)
    for t, p in zip(lt.tensors.tolist(), lt.persistent.tolist(), strict=True):
        if not p:
            out[t] = plan.offsets[f"sg{subgraph}:t{t}"]
    for t, r in lt.alias.items():
        out[t] = out[r]
    return out


def offline_plan_words(offsets: np.ndarray, subgraph: int) -> np.ndarray:
    """The ``OfflineMemoryAllocation`` payload (int32 little-endian words) for one subgraph."""
    head = np.array([1, subgraph, len(offsets)], dtype="<i4")
    if len(offsets) and offsets.max() >= 2**31:
        raise ArenaOverflowError("offline plan offsets must fit in int32 (arena larger than 2 GiB)")
    return np.concatenate([head, offsets.astype("<i4")])


def with_offline_plan(model: Model, words: np.ndarray) -> Model:
    """A copy of ``model`` whose metadata carries the offline plan ``words``.

    An existing ``OfflineMemoryAllocation`` entry is replaced; the data goes into a new buffer.
    """
    blob = words.astype("<i4").tobytes()
    old = model.buffers
    buffers = BufferTable(
        mems=(*old.mems, blob),
        mem=np.append(old.mem, len(old.mems)).astype(old.mem.dtype),
        start=np.append(old.start, 0).astype(old.start.dtype),
        length=np.append(old.length, len(blob)).astype(old.length.dtype),
        external=np.append(old.external, False).astype(old.external.dtype),
    )
    meta = tuple(md for md in model.metadata if md.name != OFFLINE_PLAN_METADATA)
    meta += (Metadata(OFFLINE_PLAN_METADATA, len(old)),)
    return dataclasses.replace(model, buffers=buffers, metadata=meta)


def offline_plan(
    model: Model | str | os.PathLike[str],
    *,
    subgraph: int = 0,
    strategy: str = "search",
    time_limit: float | None = None,
    node_limit: int | None = None,
    alignment: int = 16,
) -> tuple[Model, ArenaPlan]:
    """A copy of ``model`` carrying a TFLM ``OfflineMemoryAllocation`` plan for ``subgraph``.

    Planned without in-place sharing (each tensor gets its own buffer, see the module
    docstring); TFLM aligns arena tensors to 16 bytes. Returns the new model and the plan.
    """
    m = _load(model)
    mb = model_buffers(m, alignment=alignment, inplace=False, subgraphs=[subgraph])
    plan = plan_arena(
        mb.problem,
        strategy=strategy,
        time_limit=DEFAULT_TIME_LIMIT if time_limit is None else time_limit,
        node_limit=node_limit,
    )
    words = offline_plan_words(tensor_offsets(mb, plan, subgraph), subgraph)
    return with_offline_plan(m, words), plan
