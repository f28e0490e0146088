"""Static arena plans of a buffer table, a model or a bundle, strategy by strategy (the job of
``edgepart plan-memory``).

The input decides what is planned: a ``.csv`` buffer table (``id,lower,upper,size
[,alignment]``, half-open lifetimes, :func:`edgepart.memory.csvio.read_buffers_csv`), a
``.tflite`` model (one arena per subgraph, TFLite's lifetime rules,
:func:`edgepart.memory.model_problem.model_problem`), or a bundle directory: every partition
alone and all of them together (:func:`edgepart.bundle.plan_bundle_arena`, the one entry point
for arenas across partitions), compared per memory. :func:`write_tflm_plan` writes a copy of a
model carrying TFLite Micro's offline memory plan.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from edgepart.bundle.arena_plan import BundleArena, plan_bundle_arena
from edgepart.bundle.format import Bundle
from edgepart.bundle.load import load_bundle
from edgepart.errors import UsageError
from edgepart.fileio import atomic_write_text
from edgepart.ir.graph import Model
from edgepart.ir.shapes import apply_input_shapes
from edgepart.memory.arena import DEFAULT_TIME_LIMIT, ArenaPlan, plan_arena
from edgepart.memory.csvio import read_buffers_csv, write_offsets_csv, write_plan_json
from edgepart.memory.global_plan import PartitionedPlan
from edgepart.memory.model_problem import model_problem, offline_plan
from edgepart.memory.partitioned_report import format_partitioned, partitioned_json
from edgepart.memory.problem import DEFAULT_ALIGNMENT, MemoryProblem
from edgepart.memory.runtime import RuntimeMemory, runtime_memory
from edgepart.memory.strategies_report import format_strategies
from edgepart.tflite.reader import read_model, read_model_bytes
from edgepart.tflite.writer import save_model

__all__ = ["STRATEGIES", "MemoryPlans", "plan_memory", "write_tflm_plan"]

STRATEGIES = ("tflite", "portfolio", "search")
"""The strategies ``plan-memory`` compares, in the order it runs them."""


@dataclass(frozen=True, eq=False)
class MemoryPlans:
    """The plans of one input, by strategy (in the order run; offsets come from the last).

    ``kind`` is ``"buffers"`` (a CSV table), ``"model"`` or ``"bundle"``. For the first two,
    ``problem`` is the planning problem and ``plans`` its plan per strategy; for a bundle,
    ``arenas`` holds per strategy every partition's own plan and the global plan.
    """

    path: Path
    kind: str
    strategies: tuple[str, ...]
    problem: MemoryProblem | None = None
    plans: Mapping[str, ArenaPlan] | None = None
    arenas: Mapping[str, BundleArena] | None = None
    runtime: Mapping[str, RuntimeMemory] | None = None
    """What LiteRT allocates to run it (:mod:`edgepart.memory.runtime`): for a model, its main
    subgraph under XNNPACK (LiteRT's default) and under the builtin kernels; for a bundle, each
    partition on the host executor it runs on here, and ``"all"``."""

    @property
    def last(self) -> str:
        """The strategy whose offsets :meth:`save` writes."""
        return self.strategies[-1]

    def report(self) -> str:
        """The comparison table: per memory and strategy, peak, lower bound and their ratio;
        then the memory LiteRT allocates to run it."""
        text = self._arena_report()
        if self.runtime:
            text += format_runtime(self.runtime)
        return text

    def _arena_report(self) -> str:
        if self.arenas is not None:
            last = self.arenas[self.last]
            assert last.buffers is not None
            pb = last.buffers
            title = (
                f"{self.path}: {len(pb.partitions)} partitions, memories from "
                f"{last.memories_from}, host memory {pb.host_memory}"
            )
            return format_partitioned(title, {s: _partitioned(a) for s, a in self.arenas.items()})
        assert self.problem is not None and self.plans is not None
        return format_strategies(str(self.path), self.problem, self.plans)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the offsets of the last strategy: ``.json`` for the plan document, anything
        else for the CSV buffer table (for a bundle: its global buffers; the JSON then holds
        the global plan in the ``arena.json`` format and every partition's own offsets)."""
        as_json = Path(path).suffix.lower() == ".json"
        if self.arenas is not None:
            arena = self.arenas[self.last]
            assert arena.buffers is not None and arena.global_plan is not None
            if as_json:
                name = os.path.basename(os.path.normpath(os.fspath(self.path)))
                doc = partitioned_json(name, arena.memories_from, _partitioned(arena), self.last)
                atomic_write_text(path, doc)
            else:
                write_offsets_csv(arena.buffers.problem, arena.global_plan, path)
            return
        assert self.problem is not None and self.plans is not None
        if as_json:
            write_plan_json(self.plans[self.last], path)
        else:
            write_offsets_csv(self.problem, self.plans[self.last], path)


def plan_memory(
    path: str | os.PathLike[str],
    *,
    strategies: Sequence[str] = STRATEGIES,
    time_limit: float | None = None,
    node_limit: int | None = None,
    alignment: int = DEFAULT_ALIGNMENT,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> MemoryPlans:
    """Plan tensor offsets in static arenas and compare strategies against the lower bound;
    for a model or a bundle, also add up what LiteRT allocates to run it (arena, persistent
    buffers, XNNPACK's packed weights and workspace: :mod:`edgepart.memory.runtime`).

    Parameters
    ----------
    path
        A ``.csv`` buffer table (``id,lower,upper,size[,alignment]``, half-open lifetimes), a
        ``.tflite`` model (one arena per subgraph, TFLite's lifetime rules) or a bundle
        directory (every partition alone and all of them together: one global arena per
        memory domain, boundary tensors shared where processors share memory, concurrent
        partitions kept apart).
    strategies
        Strategies to run in order (``"tflite"``, ``"portfolio"``, ``"search"``); offsets
        come from the last.
    time_limit
        Seconds for the portfolio and search per run (default 0.5; for a bundle, per
        partition and for the global plan).
    node_limit
        Search-node budget per arena: reproducible results when the search does not finish.
    alignment
        Alignment for buffers that do not give one (64, as TFLite).
    input_shapes
        For a model: input name -> the shape it runs at (see :func:`edgepart.claims`); a
        bundle runs at the sizes it records.

    Returns
    -------
    MemoryPlans
        The plans per strategy, ``report()`` (peak, bound and ratio per memory) and
        ``save(path)`` (offsets: ``.json`` plan document, anything else CSV).

    Raises
    ------
    UsageError
        A bad argument, or nothing to plan.
    BufferTableError
        An invalid buffer table (``.csv``).
    ModelFormatError, BundleError
        The model or bundle does not load.

    Examples
    --------
    >>> import edgepart
    >>> plans = edgepart.plan_memory("examples/models/mobilenet_v2.tflite",
    ...                              strategies=["tflite", "portfolio"])
    >>> arena = plans.plans["portfolio"].arenas["sg0"]
    >>> arena.lower_bound <= arena.size <= plans.plans["tflite"].arenas["sg0"].size
    True
    """
    strategies = tuple(strategies)
    unknown = [s for s in strategies if s not in STRATEGIES]
    if not strategies or unknown:
        raise UsageError(
            f"strategies {list(unknown or strategies)}: choose from {', '.join(STRATEGIES)}"
        )
    if time_limit is not None and time_limit < 0:
        raise UsageError(f"time_limit must be >= 0, got {time_limit}")
    if node_limit is not None and node_limit < 1:
        raise UsageError(f"node_limit must be >= 1, got {node_limit}")
    if alignment < 1:
        raise UsageError(f"alignment must be >= 1, got {alignment}")
    limit = DEFAULT_TIME_LIMIT if time_limit is None else time_limit
    p = Path(path)
    if p.is_dir():
        if input_shapes:
            raise UsageError(f"{p}: --input-shape goes with a model; a bundle has its sizes")
        bundle = load_bundle(p)
        arenas = {
            s: plan_bundle_arena(
                bundle,
                strategy=s,
                time_limit=limit,
                node_limit=node_limit,
                alignment=alignment,
                per_partition=True,
            )
            for s in strategies
        }
        return MemoryPlans(p, "bundle", strategies, arenas=arenas, runtime=bundle_runtime(bundle))
    runtime = None
    if p.suffix.lower() == ".tflite":
        model = apply_input_shapes(read_model(p), input_shapes)
        kind, problem = "model", model_problem(model, alignment=alignment)
        runtime = {
            f"model ({ex})": runtime_memory(model, executor=ex) for ex in ("xnnpack", "builtin")
        }
    else:
        if input_shapes:
            raise UsageError(f"{p}: --input-shape goes with a model")
        kind, problem = "buffers", read_buffers_csv(p, default_alignment=alignment)
    if not len(problem):
        raise UsageError(f"{p}: no buffers to plan")
    plans = {
        s: plan_arena(problem, strategy=s, time_limit=limit, node_limit=node_limit)
        for s in strategies
    }
    return MemoryPlans(p, kind, strategies, problem=problem, plans=plans, runtime=runtime)


def write_tflm_plan(
    model: Model | str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    strategy: str = "search",
    time_limit: float | None = None,
    node_limit: int | None = None,
) -> ArenaPlan:
    """Write a copy of ``model`` carrying TFLite Micro's ``OfflineMemoryAllocation`` metadata.

    Subgraph 0 is planned without in-place sharing (each tensor its own buffer) at TFLM's
    16-byte alignment.

    Parameters
    ----------
    model
        A read model or a ``.tflite`` path.
    out
        The ``.tflite`` file to write.
    strategy, time_limit, node_limit
        As for :func:`plan_memory` (one strategy).

    Returns
    -------
    ArenaPlan
        The plan; its arena ``"sg0"`` has the size and lower bound.

    Raises
    ------
    UsageError
        ``model`` is not a ``.tflite`` model.
    ModelFormatError
        The model does not load.
    ArenaOverflowError
        The arena is larger than TFLite Micro's 32-bit offsets can address.

    Examples
    --------
    >>> import tempfile, edgepart
    >>> out = tempfile.mkdtemp() + "/mnv2_tflm.tflite"
    >>> plan = edgepart.write_tflm_plan("examples/models/mobilenet_v2.tflite", out,
    ...                                 strategy="portfolio")
    >>> plan.arenas["sg0"].size >= plan.arenas["sg0"].lower_bound > 0
    True
    """
    if not isinstance(model, Model) and Path(model).suffix.lower() != ".tflite":
        raise UsageError(f"{model}: a TFLite Micro plan needs a .tflite model")
    limit = DEFAULT_TIME_LIMIT if time_limit is None else time_limit
    planned, plan = offline_plan(model, strategy=strategy, time_limit=limit, node_limit=node_limit)
    save_model(planned, out)
    return plan


def bundle_runtime(bundle: Bundle) -> dict[str, RuntimeMemory]:
    """What LiteRT allocates for each partition of a bundle (one interpreter each) and in all.

    A partition runs here on its explicit executor, else on XNNPACK (the host executor of the
    CPU delegates, and the host fallback of the accelerator delegates)."""
    out: dict[str, RuntimeMemory] = {}
    for entry in bundle.plan.partitions:
        ex = entry.executor.kind if entry.executor is not None else "xnnpack"
        ex = "xnnpack" if ex in ("delegate",) else ex
        piece = read_model_bytes(bundle.partition_bytes[entry.id], source=entry.file)
        out[entry.id] = runtime_memory(piece, executor=ex)
    if out:
        parts = list(out.values())
        total = parts[0]
        for r in parts[1:]:
            total = total + r
        out["all"] = total
    return out


def format_runtime(runtime: Mapping[str, RuntimeMemory]) -> str:
    """Lines of what LiteRT allocates, one per interpreter (model, partition or ``all``)."""
    lines = [
        "as LiteRT allocates it (heap bytes, and how much of it becomes resident; modelled: the "
        "runtime's fixed part and the builtin kernels' scratch, im2col and ruy's weight cache, "
        "are left out):"
    ]
    for label, r in runtime.items():
        parts = [f"arena {_b(r.arena)}"]
        if r.persistent:
            detail = ", ".join(
                f"{k} {_b(v)}"
                for k, v in (
                    ("dequantized", r.dequantized),
                    ("densified", r.densified),
                    ("variables", r.variables),
                )
                if v
            )
            parts.append(f"persistent {_b(r.persistent)}" + (f" ({detail})" if detail else ""))
        for name, v in (
            ("XNNPACK packed weights", r.xnnpack_packed),
            ("unpacked copies", r.xnnpack_unpacked),
            ("indirection", r.xnnpack_indirection),
            ("workspace", r.xnnpack_workspace),
            ("bookkeeping", r.bookkeeping),
        ):
            if v:
                parts.append(f"{name} {_b(v)}")
        lines.append(
            f"  {label:<18} total {_b(r.total)} (resident {_b(r.resident)}): " + ", ".join(parts)
        )
    packing = sorted({r.packing for r in runtime.values() if r.packing})
    if packing:
        lines.append("  XNNPACK's weights packed as on this host: " + "; ".join(packing))
    return "\n".join(lines) + "\n"


def _b(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):.2f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f} KiB"
    return f"{n} B"


def _partitioned(arena: BundleArena) -> PartitionedPlan:
    assert arena.partitioned is not None  # plan_memory asks for per-partition plans
    return arena.partitioned
