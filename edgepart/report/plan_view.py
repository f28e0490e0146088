"""What the report needs of a placement, from a bundle on disk or from a model solved now.

:class:`PlanView` is the common shape: the source model, the cost-graph problem of that model
under the device profile (per-op costs on every processor, TFLite's support verdicts and
reasons, the fusion groups), TFLite's default placement, and edgepart's partitions with their
predictions, transfers and arena plan. :func:`view_of_bundle` reads a bundle
(:func:`edgepart.bundle.load_bundle`) and re-derives the problem from its source model;
:func:`view_of_model` partitions a ``.tflite`` now, as ``edgepart partition`` would, without
writing anything.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgepart.bundle import load_bundle
from edgepart.bundle.parts import dependency_order
from edgepart.cost.hardware import hardware_from_profile
from edgepart.cost.model import CostModel
from edgepart.cost.table import tables_from
from edgepart.cost.table_use import check_tables_used
from edgepart.deploy.compile import compile_model
from edgepart.deploy.plan_keys import partitioner_keys
from edgepart.devices.profile import load_profile
from edgepart.errors import UsageError
from edgepart.fileio import sha256_regular
from edgepart.ir.graph import Model
from edgepart.ir.shapes import apply_input_shapes
from edgepart.ir.split import SplitSpec, split_model
from edgepart.lowering.default_placement import DefaultPlacement, profile_default_baseline
from edgepart.lowering.from_model import ModelProblem, model_costgraph
from edgepart.placement.solve import SolveOptions
from edgepart.tflite.reader import read_model

__all__ = ["PlanPartition", "PlanView", "view_of_bundle", "view_of_model"]


@dataclass(frozen=True)
class PlanPartition:
    """One partition of edgepart's plan (plan order = dependency order)."""

    id: str
    processor: str
    unit: int
    delegate: str
    ops: tuple[int, ...]
    inputs: tuple[int, ...]  # source tensor indices
    outputs: tuple[int, ...]
    depends_on: tuple[str, ...]
    predicted: Mapping[str, Any]

    @property
    def unit_name(self) -> str:
        return f"{self.processor}:{self.unit}"


@dataclass(frozen=True, eq=False)
class PlanView:
    """A placement with everything the report draws (see the module docstring)."""

    kind: str  # "bundle" | "model"
    path: str
    model: Model
    problem: ModelProblem
    default: DefaultPlacement
    partitions: tuple[PlanPartition, ...]
    extra: Mapping[str, Any]  # plan.json's partitioner keys (transfers, baseline, ...)
    predicted: Mapping[str, Any]
    arena: Mapping[str, Any] | None
    notes: list[str] = field(default_factory=list)
    splits: tuple[Mapping[str, Any], ...] = ()  # plan.json's splits (version 2), as documents
    collectives: tuple[Mapping[str, Any], ...] = ()


def _cost_model(profile: Any, tables: Sequence[str], table_for: Mapping[str, str]) -> Any:
    merged = tables_from(list(tables)) if tables else None
    check_tables_used(
        merged, [(p.name, p.kind) for p in profile.processors], dict(table_for), profile.name
    )
    return CostModel(hardware_from_profile(profile), merged, table_for=dict(table_for))


def view_of_bundle(
    path: str | os.PathLike[str],
    *,
    profile: str | None = None,
    model: str | os.PathLike[str] | None = None,
    latency_tables: Sequence[str] = (),
    table_for: Mapping[str, str] | None = None,
) -> PlanView:
    """The view of a bundle directory; the source model comes from ``model`` or the manifest.

    Raises
    ------
    BundleError
        The bundle is missing, incomplete or corrupted.
    UsageError
        The source model is missing or is not the one the bundle was cut from, or no device
        profile is known (the bundle names none and ``profile`` is not given).
    """
    b = load_bundle(path)
    plan = b.plan
    src = b.manifest["source_model"]
    mpath = model or src["path"]
    if mpath is None:
        raise UsageError(f"{path}: the bundle does not record its source model; pass --model PATH")
    mp = Path(mpath)
    if not mp.exists():
        raise UsageError(f"{path}: source model {mp} not found; pass --model PATH")
    digest, _ = sha256_regular(mp, what="source .tflite model")
    if digest != src["sha256"]:
        raise UsageError(
            f"{mp} is not the model bundle {path} was cut from (sha256 {digest[:12]}..., the "
            f"manifest records {src['sha256'][:12]}...); pass the right --model"
        )
    pname = profile or plan.device_profile
    if pname is None:
        raise UsageError(f"{path}: the bundle names no device profile; pass --profile DEVICE")
    prof = load_profile(pname)
    notes = []
    if profile is not None and plan.device_profile not in (None, prof.name):
        notes.append(
            f"the bundle was planned for {plan.device_profile}; costs and support below are "
            f"{prof.name}'s"
        )
    names = {p.name for p in prof.processors}
    alien = sorted({p.processor for p in plan.partitions} - names)
    if alien:
        raise UsageError(
            f"{path}: partitions run on {alien}, which profile {prof.name!r} does not have "
            f"(its processors: {sorted(names)}); give the bundle's own profile"
        )
    # the sizes the bundle was built for (a dynamic input's recorded shape)
    m = apply_input_shapes(read_model(mp), plan.input_shapes, subgraph=plan.subgraph, note=False)
    if plan.splits:
        m = _split_graph(m, plan, path)
        notes.append(
            f"tensor parallelism: {len(plan.splits)} layer(s) split; ops and tensors are those "
            "of the split graph (the source with the plan's splits applied)"
        )
    cm = _cost_model(prof, latency_tables, table_for or {})
    problem = model_costgraph(m, prof, cm, subgraph=plan.subgraph)
    default = profile_default_baseline(problem)
    parts = tuple(
        PlanPartition(
            id=p.id,
            processor=p.processor,
            unit=p.unit,
            delegate=p.delegate,
            ops=tuple(p.ops),
            inputs=tuple(t.tensor for t in p.inputs),
            outputs=tuple(t.tensor for t in p.outputs),
            depends_on=tuple(p.depends_on),
            predicted=dict(p.predicted or {}),
        )
        for p in plan.partitions
    )
    arena = dict(b.arena.doc) if b.arena is not None else None
    return PlanView(
        kind="bundle",
        path=str(path),
        model=m,
        problem=problem,
        default=default,
        partitions=parts,
        extra=dict(plan.extra),
        predicted=dict(plan.predicted or {}),
        arena=arena,
        notes=notes,
        splits=tuple(x.to_doc() for x in plan.splits),
        collectives=tuple(x.to_doc() for x in plan.collectives),
    )


def view_of_model(
    path: str | os.PathLike[str],
    *,
    profile: str,
    method: str = "heuristic",
    objective: str = "latency",
    latency_tables: Sequence[str] = (),
    table_for: Mapping[str, str] | None = None,
    arena: bool = True,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> PlanView:
    """Partition the ``.tflite`` at ``path`` for ``profile`` now (nothing is written), with
    dynamic inputs at ``input_shapes``.

    Raises
    ------
    ModelFormatError
        The file is not a valid ``.tflite`` model.
    PlacementInfeasibleError
        Some op can run on no processor of the profile.
    """
    compiled = compile_model(
        path,
        profile,
        method,
        SolveOptions(objective=objective),
        latency_tables=latency_tables,
        table_for=table_for,
        arena=arena,
        input_shapes=input_shapes,
    )
    plan = compiled.placement
    problem, default, sol, placed = plan.problem, plan.default, plan.solution, plan.partitions
    if plan.splits:
        # TFLite's default per op of the graph shown (the split graph), for the op table
        default = profile_default_baseline(problem)
    m = problem.model
    specs = plan.specs()
    extra = partitioner_keys(problem, sol, placed, default)
    predicted = extra.pop("predicted")
    pid = {p.index: p.id for p in placed}
    sg = m.subgraphs[problem.subgraph]
    order = dependency_order(sg, [list(p.ops) for p in placed])
    producer: dict[int, str] = {}
    for p in placed:
        for t in p.outputs:
            producer[t] = p.id
    parts = []
    for k in order:
        p, spec = placed[k], specs[k]
        deps = sorted({producer[t] for t in p.inputs if t in producer and producer[t] != p.id})
        parts.append(
            PlanPartition(
                id=pid[p.index],
                processor=spec.processor,
                unit=int(spec.unit or 0),
                delegate=spec.delegate or "",
                ops=tuple(p.ops),
                inputs=tuple(p.inputs),
                outputs=tuple(p.outputs),
                depends_on=tuple(deps),
                predicted=dict(spec.predicted or {}),
            )
        )
    return PlanView(
        kind="model",
        path=str(path),
        model=m,
        problem=problem,
        default=default,
        partitions=tuple(parts),
        extra=extra,
        predicted=predicted,
        arena=None if compiled.arena is None else compiled.arena.doc,
        notes=[f"planned now ({method}, {objective}); no bundle was written"],
        splits=tuple(x.to_doc() for x in compiled.plan.splits),
        collectives=tuple(x.to_doc() for x in compiled.plan.collectives),
    )


def _split_graph(model: Model, plan: Any, path: Any) -> Model:
    """The source model with the plan's splits applied: the graph its partitions place."""

    specs = [SplitSpec(tuple(s.ops), s.mode, tuple(s.sizes)) for s in plan.splits]
    res = split_model(model, specs, plan.subgraph)
    got = res.model.subgraphs[plan.subgraph].num_ops
    if got != plan.num_ops:
        raise UsageError(
            f"{path}: the plan's splits applied to the source model give {got} ops, the plan "
            f"places {plan.num_ops}; the bundle was made by another edgepart version"
        )
    return res.model
