"""The whole job for a model: place it on a device's processors, then apply the placement.

Two steps, as ``edgepart partition MODEL --profile DEVICE [-o OUT/]`` runs them:

* :func:`partition_model` decides: the model's main subgraph under the profile becomes a cost
  graph (claim rules, the cost model with any measured latency tables, the fusion pre-pass:
  :func:`edgepart.lowering.from_model.model_costgraph`), TFLite's default placement is
  computed as the baseline, and a solver places the nodes. The result, a :class:`ModelPlan`,
  is a value with its report; nothing is written.
* :func:`compile_placement` applies a decision: the partitions as op sets, the partitioner's
  plan keys, and the bundle built in memory (one ``.tflite`` per partition, ``plan.json``,
  the global ``arena.json``, ``report.txt``, the manifest). The result, a
  :class:`CompiledModel`, can be inspected before :meth:`CompiledModel.save` writes it.

:func:`compile_model` runs both. :func:`partition_specs` gives the bundle partition specs of a
decision, for callers that build bundles themselves (:func:`edgepart.bundle.build_bundle`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from edgepart.bundle.format import Arena, Bundle, Plan
from edgepart.bundle.tensor_parallel import CollectiveEntry, SplitEntry
from edgepart.bundle.write import PartitionSpec, build_bundle, save_bundle
from edgepart.cost.hardware import hardware_from_profile
from edgepart.cost.model import CostModel
from edgepart.cost.table import LatencyTable, load_table
from edgepart.cost.table_use import check_tables_used
from edgepart.deploy.apply import PlacedPartition, placed_partitions
from edgepart.deploy.apply import partition_specs as _specs
from edgepart.deploy.collectives import tensor_parallel_entries
from edgepart.deploy.plan_keys import partitioner_keys, tensor_parallel_key
from edgepart.deploy.report_text import format_model_report, format_split_report
from edgepart.deploy.splits import SplitTaken, TensorParallel, place_with_splits
from edgepart.devices.profile import DeviceProfile, load_profile
from edgepart.ir.graph import Model
from edgepart.ir.shapes import apply_input_shapes
from edgepart.lowering.default_placement import DefaultPlacement
from edgepart.lowering.from_model import ModelProblem
from edgepart.placement.solve import Solution, SolveOptions
from edgepart.tflite.reader import read_model

__all__ = [
    "REPORT_FILE",
    "CompiledModel",
    "ModelPlan",
    "compile_model",
    "compile_placement",
    "partition_model",
    "partition_specs",
]

REPORT_FILE = "partition_report.txt"
"""The partitioner's report, written beside the bundle's own files (not in its manifest)."""

LatencyTables = Sequence[str | os.PathLike[str] | LatencyTable] | LatencyTable


@dataclass(frozen=True, eq=False)
class ModelPlan:
    """A solved model: the problem, TFLite's default, the checked solution and its partitions.

    ``seconds`` holds the wall-clock time of the two stages (``"lowering"``: reading and
    lowering the model to a cost graph with its baseline; ``"solve"``: the solver and, with
    tensor parallelism, the split models tried), for reports; nothing else depends on it.

    ``tensor_parallel`` says which layers were split (``docs/tensor_parallel.md``). When splits
    are taken, ``problem`` is the *split* model's (its ops index the split graph), ``default``
    is TFLite's default for the source model and ``solution.baseline`` its prediction.
    """

    problem: ModelProblem
    default: DefaultPlacement
    solution: Solution
    partitions: list[PlacedPartition]
    seconds: Mapping[str, float] = field(default_factory=dict)
    tensor_parallel: TensorParallel | None = None

    @property
    def splits(self) -> tuple[SplitTaken, ...]:
        """The splits the plan takes (empty when none)."""
        return () if self.tensor_parallel is None else self.tensor_parallel.taken

    def report(self) -> str:
        """The partition report (deterministic text: no wall-clock times, no arena)."""
        text = format_model_report(self.problem, self.solution, self.partitions, self.default)
        return text + format_split_report(self.problem, self.partitions, self.tensor_parallel)

    def specs(self) -> list[PartitionSpec]:
        """The bundle partition specs of this plan (ids ``p0, p1, ...``, with predictions)."""
        return _specs(self.problem, self.solution.evaluation, self.partitions)


@dataclass(frozen=True, eq=False)
class CompiledModel:
    """A placement applied: the partitions, ``plan.json``, the memory plan and the bundle, in
    memory until :meth:`save` writes them.

    ``placement`` is the decision (:class:`ModelPlan`); ``bundle`` the bundle built from it
    (no path yet); ``report_text`` the partition report, with the arena per memory domain when
    the bundle has one.
    """

    placement: ModelPlan
    bundle: Bundle
    report_text: str
    source_path: str | None = None

    @property
    def plan(self) -> Plan:
        """The bundle plan (``plan.json``), partitioner keys included."""
        return self.bundle.plan

    @property
    def arena(self) -> Arena | None:
        """The memory plan across partitions (``arena.json``), or None without one."""
        return self.bundle.arena

    @property
    def partitions(self) -> list[PlacedPartition]:
        """The partitions as op sets, in creation order (= plan order)."""
        return self.placement.partitions

    def report(self) -> str:
        """The partition report (what ``edgepart partition`` prints and writes)."""
        return self.report_text

    def save(self, out_dir: str | os.PathLike[str]) -> Bundle:
        """Write the bundle directory ``out_dir`` (with ``partition_report.txt``); return it.

        The directory is built in a temporary sibling and renamed into place only when
        complete; an existing bundle there is replaced, any other non-empty directory refused.
        """
        return save_bundle(
            self.bundle, out_dir, extra_files={REPORT_FILE: self.report_text.encode("utf-8")}
        )


def partition_model(
    model: Model | str | os.PathLike[str],
    profile: DeviceProfile | str | os.PathLike[str],
    method: str = "heuristic",
    options: SolveOptions | None = None,
    *,
    latency_tables: LatencyTables = (),
    table_for: Mapping[str, str] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    split: bool = True,
) -> ModelPlan:
    """Place ``model``'s main subgraph on the processors of ``profile`` (nothing is written).

    Parameters
    ----------
    model
        A read :class:`~edgepart.ir.graph.Model` or a ``.tflite`` path.
    profile
        A device profile (loaded, a shipped name or a YAML path).
    method
        ``"heuristic"``, ``"exact"`` or ``"edge-cut"`` (a registered solver).
    options
        Objective, seed, effort, time limit and edge-cut settings.
    latency_tables
        Measured latency tables (paths or loaded), merged in order; the cost model uses them
        where they cover an op.
    table_for
        Back profile processor ``PROC`` with latency-table processor ``TABLEPROC``.
    split
        Consider tensor-parallel splits (:mod:`edgepart.deploy.splits`): a layer is split
        across units when the whole model is predicted at least 10 % faster, or when its
        weights fit no unit; ``False`` places the model as it is.

    Raises
    ------
    ProfileError, LatencyTableError, ModelFormatError, UsageError, PlacementInfeasibleError
        As the steps below raise them (the profile is loaded first, then the tables, then the
        model).
    """
    t0 = time.perf_counter()
    prof = profile if isinstance(profile, DeviceProfile) else load_profile(profile)
    tables = _tables(latency_tables)
    if not isinstance(model, Model):
        model = read_model(model)
    model = apply_input_shapes(model, input_shapes)
    # a latency table that backs no processor is an error, not silently unused
    check_tables_used(
        tables, [(p.name, p.kind) for p in prof.processors], dict(table_for or {}), prof.name
    )
    cm = CostModel(hardware_from_profile(prof), tables, table_for=dict(table_for or {}))
    t1 = time.perf_counter()
    placed = place_with_splits(model, prof, cm, method, options, split=split)
    problem, sol = placed.problem, placed.solution
    parts = placed_partitions(problem, sol.evaluation)
    seconds = {
        "lowering": t1 - t0 + placed.seconds["lowering"],
        "solve": placed.seconds["solve"],
    }
    return ModelPlan(problem, placed.default, sol, parts, seconds, placed.tensor_parallel)


def compile_placement(
    placement: ModelPlan,
    *,
    arena: bool = True,
    source_path: str | os.PathLike[str] | None = None,
) -> CompiledModel:
    """Apply ``placement``: the bundle (partition files, ``plan.json``, the global arena across
    partitions unless ``arena`` is false, ``report.txt``, manifest) built in memory.

    ``source_path`` is recorded in the manifest (default: the model's own source file).

    Raises
    ------
    UsageError
        A partition cannot become a standalone file (e.g. a tensor without a NumPy type on a
        boundary).
    """
    problem = placement.problem
    keys = partitioner_keys(problem, placement.solution, placement.partitions, placement.default)
    tp = placement.tensor_parallel
    splits: list[SplitEntry] = []
    collectives: list[CollectiveEntry] = []
    if tp is not None and tp.taken:
        keys["tensor_parallel"] = tensor_parallel_key(tp)
        splits, collectives = tensor_parallel_entries(problem, placement.partitions, tp.taken)
    bundle = build_bundle(
        problem.model,
        placement.specs(),
        subgraph=problem.subgraph,
        profile=problem.profile,
        plan_extra=keys,
        arena="global" if arena else None,
        source_path=source_path,
        splits=splits,
        collectives=collectives,
    )
    report = format_model_report(
        problem,
        placement.solution,
        placement.partitions,
        placement.default,
        None if bundle.arena is None else bundle.arena.doc,
    ) + format_split_report(problem, placement.partitions, tp)
    path = None if source_path is None else os.fspath(source_path)
    return CompiledModel(placement, bundle, report, path)


def compile_model(
    model: Model | str | os.PathLike[str],
    profile: DeviceProfile | str | os.PathLike[str],
    method: str = "heuristic",
    options: SolveOptions | None = None,
    *,
    latency_tables: LatencyTables = (),
    table_for: Mapping[str, str] | None = None,
    arena: bool = True,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    split: bool = True,
) -> CompiledModel:
    """:func:`partition_model`, then :func:`compile_placement` (see both)."""
    placement = partition_model(
        model,
        profile,
        method,
        options,
        latency_tables=latency_tables,
        table_for=table_for,
        input_shapes=input_shapes,
        split=split,
    )
    source = model if isinstance(model, (str, os.PathLike)) else None
    return compile_placement(placement, arena=arena, source_path=source)


def partition_specs(
    model: Model | str | os.PathLike[str],
    profile: DeviceProfile | str | os.PathLike[str],
    method: str = "heuristic",
    options: SolveOptions | None = None,
    *,
    latency_tables: LatencyTables = (),
    table_for: Mapping[str, str] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    split: bool = False,
) -> list[PartitionSpec]:
    """The bundle partition specs of :func:`partition_model`'s plan (of the source model's ops:
    without tensor-parallel splits unless ``split``, whose specs index the split graph)."""
    mp = partition_model(
        model,
        profile,
        method,
        options,
        latency_tables=latency_tables,
        table_for=table_for,
        input_shapes=input_shapes,
        split=split,
    )
    return mp.specs()


def _tables(tables: LatencyTables) -> LatencyTable | None:
    """Merge the tables in order; None when there are none (the profile's own tables apply)."""
    if isinstance(tables, LatencyTable):
        return tables
    if not tables:
        return None
    out = LatencyTable()
    for t in tables:
        out = out.merge(t if isinstance(t, LatencyTable) else load_table(t))
    return out
