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
from edgepart.bundle.write import PartitionSpec, build_bundle, save_bundle
from edgepart.cost.table import LatencyTable, load_table
from edgepart.deploy.apply import PlacedPartition, placed_partitions
from edgepart.deploy.apply import partition_specs as _specs
from edgepart.deploy.plan_keys import partitioner_keys
from edgepart.deploy.report_text import format_model_report
from edgepart.devices.profile import DeviceProfile, load_profile
from edgepart.ir.graph import Model
from edgepart.ir.shapes import apply_input_shapes
from edgepart.lowering.default_placement import DefaultPlacement, profile_default_baseline
from edgepart.lowering.from_model import ModelProblem, model_costgraph
from edgepart.placement.solve import Solution, SolveOptions, partition_costgraph
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
    lowering the model to a cost graph with its baseline; ``"solve"``: the solver), for
    reports; nothing else depends on it.
    """

    problem: ModelProblem
    default: DefaultPlacement
    solution: Solution
    partitions: list[PlacedPartition]
    seconds: Mapping[str, float] = field(default_factory=dict)

    def report(self) -> str:
        """The partition report (deterministic text: no wall-clock times, no arena)."""
        return format_model_report(self.problem, self.solution, self.partitions, self.default)

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
    problem = model_costgraph(model, prof, tables=tables, table_for=dict(table_for or {}))
    default = profile_default_baseline(problem)
    t1 = time.perf_counter()
    sol = partition_costgraph(problem.graph, method, options, reference=default.baseline)
    t2 = time.perf_counter()
    parts = placed_partitions(problem, sol.evaluation)
    return ModelPlan(problem, default, sol, parts, {"lowering": t1 - t0, "solve": t2 - t1})


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
    bundle = build_bundle(
        problem.model,
        placement.specs(),
        subgraph=problem.subgraph,
        profile=problem.profile,
        plan_extra=keys,
        arena="global" if arena else None,
        source_path=source_path,
    )
    report = format_model_report(
        problem,
        placement.solution,
        placement.partitions,
        placement.default,
        None if bundle.arena is None else bundle.arena.doc,
    )
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
) -> list[PartitionSpec]:
    """The bundle partition specs of :func:`partition_model`'s plan."""
    mp = partition_model(
        model,
        profile,
        method,
        options,
        latency_tables=latency_tables,
        table_for=table_for,
        input_shapes=input_shapes,
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
