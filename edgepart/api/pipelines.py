"""Pipeline parallelism: a model's stage plan under a device profile, and its bundle.

:func:`plan_pipeline` builds the model's cost graph under a device profile (the same claim
rules, cost model and fusion pre-pass as ``edgepart partition``) and calls the stage planner
(:func:`edgepart.placement.stages.plan_stages`: contiguous convex stages over the profile's
units, the slowest stage with its send/recv minimized, each stage within its unit's memory).
The planner is the exact dynamic program over the graph's ideals where they stay under its
caps, and beyond them the same program over block boundaries of the execution order, polished
by moving single nodes across stage boundaries (:func:`~edgepart.placement.stages.refine_stages`).
:meth:`PipelinePlan.bundle` turns the plan into a bundle with one partition per stage, the
input of the pipeline runtime (:mod:`edgepart.runtime.stage_threads`) and of the Ray cluster
runner (:mod:`edgepart.runtime.ray_stages`).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgepart.bundle import Bundle, PartitionSpec, build_bundle, write_bundle
from edgepart.bundle.load import load_bundle
from edgepart.cost.hardware import hardware_from_profile
from edgepart.cost.model import CostModel
from edgepart.cost.table import tables_from
from edgepart.devices.cluster import ClusterProfile, load_cluster
from edgepart.devices.profile import DeviceProfile, load_profile
from edgepart.errors import PlacementInfeasibleError, ProfileError, UsageError
from edgepart.ir import analysis
from edgepart.ir.graph import Model
from edgepart.lowering.from_model import ModelProblem, model_costgraph
from edgepart.placement.chain import ChainPlan, plan_chain
from edgepart.placement.gantt import gantt_png
from edgepart.placement.schedules import StageCosts, Timeline, simulate
from edgepart.placement.stages import StagePlan, plan_stages, refine_stages
from edgepart.runtime.ray_stages import ClusterRun, run_on_cluster
from edgepart.runtime.stage_threads import PipelineRun, run_stages
from edgepart.runtime.training import TrainingRun, run_training
from edgepart.tflite.reader import read_model

__all__ = [
    "ClusterPlan",
    "PipelinePlan",
    "load_cluster",
    "plan_cluster",
    "plan_pipeline",
    "random_inputs",
    "run_cluster",
    "run_pipeline",
    "simulate_pipeline",
    "stage_costs",
    "train_pipeline",
    "write_gantt",
]


@dataclass(frozen=True, eq=False)
class PipelinePlan:
    """A model's stage plan: the stages in pipeline order, with the ops each one runs.

    ``stages.stages[k]`` holds stage ``k``'s cost-graph nodes, unit and time components;
    :attr:`stage_ops` the source-model op indices of each stage.
    """

    problem: ModelProblem
    stages: StagePlan
    source_path: str | None
    cpu_threads: int | None = None

    @property
    def period_s(self) -> float:
        """The predicted period: the slowest stage with its send and receive (seconds)."""
        return self.stages.period_s

    @property
    def stage_times(self) -> list[float]:
        """Predicted time of every stage (seconds), in pipeline order."""
        return [s.time_s for s in self.stages.stages]

    @property
    def stage_ops(self) -> list[list[int]]:
        """Source-subgraph op indices of every stage (sorted), in pipeline order."""
        out = []
        for s in self.stages.stages:
            ops = np.concatenate([self.problem.node_ops(int(v)) for v in s.nodes])
            out.append(sorted(int(o) for o in ops))
        return out

    def stage_units(self) -> list[tuple[str, int]]:
        """(processor name, unit index within the processor) of every stage."""
        g = self.problem.graph
        return [
            (g.proc_names[int(g.unit_proc[s.unit])], int(g.unit_index[s.unit]))
            for s in self.stages.stages
        ]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (seconds and bytes; stable key order)."""
        units = self.stage_units()
        return {
            "model": self.problem.graph.name,
            "profile": self.problem.profile.name,
            "method": self.stages.method,
            "optimal": self.stages.optimal,
            "period_s": self.period_s,
            "stages": [
                {
                    "processor": units[k][0],
                    "unit": units[k][1],
                    "ops": len(ops),
                    "nodes": len(s.nodes),
                    "time_s": s.time_s,
                    "compute_s": s.compute_s,
                    "dispatch_s": s.dispatch_s,
                    "recv_s": s.recv_s,
                    "send_s": s.send_s,
                    "weight_bytes": s.weight_bytes,
                    "arena_bytes": s.arena_bytes,
                }
                for k, (s, ops) in enumerate(zip(self.stages.stages, self.stage_ops, strict=True))
            ],
        }

    def report(self) -> str:
        """The plan as text: one line per stage, then the period."""
        d = self.to_dict()
        lines = [
            f"pipeline of {d['model']} on {d['profile']}: {len(d['stages'])} stage(s), "
            f"planner {d['method']} ({'optimal' if d['optimal'] else 'best found'} over its "
            "splits)"
        ]
        for k, s in enumerate(d["stages"]):
            lines.append(
                f"  stage {k}: {s['processor']}#{s['unit']:<2d} {s['ops']:4d} ops  "
                f"{s['time_s'] * 1e3:9.4f} ms (compute {s['compute_s'] * 1e3:.4f}, recv "
                f"{s['recv_s'] * 1e3:.4f}, send {s['send_s'] * 1e3:.4f})  weights "
                f"{s['weight_bytes'] / 1024:.1f} KiB"
            )
        lines.append(f"  period {d['period_s'] * 1e3:.4f} ms (predicted, {d['profile']} profile)")
        return "\n".join(lines) + "\n"

    def bundle(self, out_dir: str | os.PathLike[str] | None = None) -> Bundle:
        """The bundle with one partition per stage (written to ``out_dir`` if given).

        Each partition carries its stage's predicted time (``predicted.duration_s``) and runs
        on its stage's processor and unit (CPU stages with the plan's ``cpu_threads``); the
        plan records the predicted period.
        """

        g = self.problem.graph

        specs = []
        t = 0.0
        for ops, (proc, unit), dur in zip(
            self.stage_ops, self.stage_units(), self.stage_times, strict=True
        ):
            specs.append(
                PartitionSpec(
                    ops,
                    processor=proc,
                    unit=unit,
                    predicted={"start_s": t, "end_s": t + dur, "duration_s": dur},
                    threads=self.cpu_threads
                    if g.proc_kinds[g.proc_names.index(proc)] == "cpu"
                    else None,
                )
            )
            t += dur
        plan_extra = {
            "predicted": {
                "latency_s": t,
                "period_s": self.period_s,
                "source": f"edgepart stage planner ({self.stages.method}), "
                f"{self.problem.profile.name} profile",
            }
        }
        kw: dict[str, Any] = {
            "subgraph": self.problem.subgraph,
            "profile": self.problem.profile,
            "plan_extra": plan_extra,
            "source_path": self.source_path,
        }
        if out_dir is None:
            return build_bundle(self.problem.model, specs, **kw)
        return write_bundle(out_dir, self.problem.model, specs, **kw)


def _with_cpu_threads(prof: DeviceProfile, threads: int) -> DeviceProfile:
    """``prof`` with every CPU processor's interpreter threads set to ``threads``: more units
    of fewer threads each (the partitioner counts ``units // threads`` CPU streams)."""
    if threads < 1:
        raise UsageError(f"cpu_threads must be >= 1, got {threads}")
    procs = []
    for p in prof.processors:
        if p.kind == "cpu":
            q = dataclasses.replace(p.threads, value=float(threads), source="cpu_threads option")
            p = dataclasses.replace(p, threads=q)
        procs.append(p)
    return dataclasses.replace(prof, processors=tuple(procs))


def plan_pipeline(
    model: Model | str | os.PathLike[str],
    profile: DeviceProfile | str,
    *,
    latency_tables: Sequence[str | os.PathLike[str]] = (),
    table_for: dict[str, str] | None = None,
    cpu_threads: int | None = None,
    count_transfers: bool = True,
    method: str = "auto",
    max_ideals: int = 3000,
    max_pairs: int = 30_000,
    max_blocks: int = 160,
    refine: bool = True,
) -> PipelinePlan:
    """Plan a model as a pipeline of stages on a device's processor units.

    Parameters
    ----------
    model
        A ``.tflite`` path or a model read with :func:`edgepart.tflite.reader.read_model`.
    profile
        Device profile name, YAML path or loaded profile.
    latency_tables, table_for
        Measured latency tables for the cost model and the processor mapping (as
        ``edgepart partition --latency-table/--table-for``).
    cpu_threads
        Interpreter threads of each CPU stage; a CPU of ``u`` cores then offers ``u //
        cpu_threads`` stage units (default: the profile's threads).
    count_transfers
        Count each stage's send and receive in its time.
    method
        "auto" (exact over the ideals within the caps, else blocks), "ideals" or "blocks".
    max_ideals, max_pairs, max_blocks
        The stage planner's caps (:func:`edgepart.placement.stages.plan_stages`).
    refine
        Polish a block-DP plan by moving nodes across stage boundaries
        (:func:`edgepart.placement.stages.refine_stages`).

    Returns
    -------
    PipelinePlan
        The stages, their ops, units and predicted times.

    Raises
    ------
    ModelFormatError
        The model file cannot be read.
    ProfileError
        The profile cannot be loaded.
    PlacementInfeasibleError
        No stage plan fits the units' memory, or ``method="ideals"`` exceeds its caps.
    UsageError
        An option is out of range.

    Examples
    --------
    >>> import edgepart
    >>> plan = edgepart.plan_pipeline(
    ...     "examples/models/mobilenet_v2.tflite", "x86_host", cpu_threads=1
    ... )
    >>> len(plan.stages.stages), plan.report().splitlines()[0].endswith("(optimal over its splits)")
    (2, True)
    """

    if method not in ("auto", "ideals", "blocks"):
        raise UsageError(f"method must be auto, ideals or blocks, got {method!r}")
    source_path = None
    if not hasattr(model, "subgraphs"):
        source_path = os.fspath(model)
        model = read_model(source_path)
    prof = load_profile(profile) if isinstance(profile, str) else profile
    if cpu_threads is not None:
        prof = _with_cpu_threads(prof, cpu_threads)
    tables = tables_from([os.fspath(t) for t in latency_tables]) if latency_tables else None
    cm = CostModel(hardware_from_profile(prof), tables, table_for=table_for or {})
    problem = model_costgraph(model, prof, cm)  # type: ignore[arg-type]
    sp = plan_stages(
        problem.graph,
        count_transfers=count_transfers,
        method=method,
        max_ideals=max_ideals,
        max_pairs=max_pairs,
        max_blocks=max_blocks,
    )
    if sp is not None and sp.method == "blocks" and refine:
        sp = refine_stages(problem.graph, sp)
    if sp is None:
        why = (
            "the graph has more ideals or pairs than the caps (max_ideals, max_pairs)"
            if method == "ideals"
            else "no split into stages fits the units' memory"
        )
        raise PlacementInfeasibleError(f"{problem.graph.name}: no stage plan on {prof.name}: {why}")
    return PipelinePlan(problem, sp, source_path, cpu_threads)


def stage_costs(
    plan: PipelinePlan, *, backward_ratio: float | None = None, comm_s: Sequence[float] = ()
) -> StageCosts:
    """The simulator's stage costs of a plan.

    Forward time: each stage's predicted time (compute, dispatch, send and receive).
    Activation bytes per micro-batch: the bytes of the tensors each stage produces. An
    inference model has no backward graph: ``backward_ratio`` estimates each stage's backward
    as that multiple of its forward (say so wherever the figures are shown).

    Parameters
    ----------
    plan
        The stage plan.
    backward_ratio
        Backward time over forward time per stage (None: inference, forwards only).
    comm_s
        Extra delay between consecutive stages (links not counted in the stage times).

    Returns
    -------
    StageCosts
        One entry per stage.

    Raises
    ------
    UsageError
        ``backward_ratio`` is not positive.

    Examples
    --------
    >>> import edgepart
    >>> plan = edgepart.plan_pipeline(
    ...     "examples/models/mobilenet_v2.tflite", "x86_host", cpu_threads=1
    ... )
    >>> costs = edgepart.stage_costs(plan, backward_ratio=2.0)
    >>> len(costs.forward_s), costs.backward_s[0] == 2.0 * costs.forward_s[0]
    (2, True)
    """
    g = plan.problem.graph
    fwd = tuple(plan.stage_times)
    bwd = None
    if backward_ratio is not None:
        if not backward_ratio > 0:
            raise UsageError(f"backward_ratio must be positive, got {backward_ratio}")
        bwd = tuple(backward_ratio * f for f in fwd)
    act = tuple(int(g.output_bytes[s.nodes].sum()) for s in plan.stages.stages)
    return StageCosts(fwd, bwd, tuple(comm_s) or None, act)


def simulate_pipeline(
    plan: PipelinePlan,
    schedule: str,
    micro_batches: int,
    *,
    queue_depth: int | None = 2,
    backward_ratio: float | None = None,
) -> Timeline:
    """Simulate ``schedule`` for ``micro_batches`` over a plan's stages.

    Parameters
    ----------
    plan
        The stage plan (:func:`plan_pipeline`).
    schedule
        "stream" (inference), "gpipe" or "1f1b" (training: needs ``backward_ratio``).
    micro_batches
        Micro-batches (items).
    queue_depth
        ``stream``: each stage's output queue (None: unbounded).
    backward_ratio
        The training schedules' backward time as a multiple of the forward
        (:func:`stage_costs`).

    Returns
    -------
    Timeline
        Per-item latency, period, bubble fraction, peak in-flight activations per stage.

    Raises
    ------
    UsageError
        A training schedule without ``backward_ratio``, or bad counts.

    Examples
    --------
    >>> import edgepart
    >>> plan = edgepart.plan_pipeline(
    ...     "examples/models/mobilenet_v2.tflite", "x86_host", cpu_threads=1
    ... )
    >>> [edgepart.simulate_pipeline(plan, s, 8, backward_ratio=2.0).peak_in_flight
    ...  for s in ("gpipe", "1f1b")]  # GPipe stashes all 8 micro-batches, 1F1B p - s
    [(8, 8), (2, 1)]
    """
    if schedule != "stream" and backward_ratio is None:
        raise UsageError(
            f"schedule {schedule} simulates forward and backward passes; this model has no "
            "backward graph: give backward_ratio (e.g. 2.0) to estimate it"
        )
    costs = stage_costs(plan, backward_ratio=backward_ratio if schedule != "stream" else None)
    return simulate(costs, schedule, micro_batches, queue_depth=queue_depth)


def run_pipeline(
    plan: PipelinePlan | Bundle | str | os.PathLike[str],
    inputs: Iterable[Sequence[Any]],
    *,
    queue_depth: int = 2,
    num_threads: int = 1,
) -> PipelineRun:
    """Run a stage plan on this host: a thread per stage, bounded queues (back-pressure).

    Parameters
    ----------
    plan
        A :class:`PipelinePlan`, its bundle, or a bundle directory.
    inputs
        Items, each a sequence of arrays in the model's input order.
    queue_depth
        Items each queue between two stages holds.
    num_threads
        Interpreter threads of stages whose plan entry names none.

    Returns
    -------
    PipelineRun
        Outputs in input order, the measured timeline (period, per-item latency) and the
        stream simulated on the measured stage times.

    Raises
    ------
    BundleError
        The bundle directory is missing or corrupt.
    StageFailedError
        A stage failed; lists the inputs that did not complete.

    Examples
    --------
    >>> import edgepart
    >>> plan = edgepart.plan_pipeline(
    ...     "examples/models/mobilenet_v2.tflite", "x86_host", cpu_threads=1
    ... )
    >>> run = edgepart.run_pipeline(plan, edgepart.random_inputs(plan.bundle(), 4))
    >>> len(run.outputs), run.measured.period_s > 0
    (4, True)
    """

    if isinstance(plan, PipelinePlan):
        bundle = plan.bundle()
    elif isinstance(plan, (str, os.PathLike)):
        bundle = load_bundle(plan)
    else:
        bundle = plan
    return run_stages(bundle, inputs, queue_depth=queue_depth, num_threads=num_threads)


def train_pipeline(
    stages: Sequence[str | os.PathLike[str] | bytes],
    inputs: Sequence[np.ndarray],
    targets: Sequence[np.ndarray],
    *,
    schedule: str = "1f1b",
    learning_rate: float = 0.01,
) -> TrainingRun:
    """One pipeline-parallel training step of stage training models with GPipe or 1F1B.

    Each stage is a ``.tflite`` file with its weights as resource variables and the
    signatures ``forward(x) -> y``, ``backward(x, dy) -> dx`` (accumulating its weight
    gradients; the last stage takes ``target`` and returns ``loss`` too) and ``apply(lr)``
    (the SGD step; returns the weights): TFLite's on-device training layout, one model per
    stage (``tools/build_training_stages.py`` makes them from a Keras MLP). A thread per
    stage runs the schedule's operations in order; each forward keeps its input until the
    micro-batch's backward on that stage (:mod:`edgepart.runtime.training`).

    Parameters
    ----------
    stages
        Stage training models, pipeline order.
    inputs, targets
        Per micro-batch: the first stage's input and the last stage's target.
    schedule
        "gpipe" (all forwards, then all backwards) or "1f1b" (one forward, one backward).
    learning_rate
        The SGD step's learning rate.

    Returns
    -------
    TrainingRun
        The measured timeline (order of work per stage, bubble fraction), the micro-batches
        each stage held at once and their bytes, the losses, the weights after the step.

    Raises
    ------
    UsageError
        A model without the three signatures, an inference schedule, or inputs and targets
        of different counts.
    StageFailedError
        An operation failed; lists the micro-batches that did not complete.

    Examples
    --------
    >>> import edgepart
    >>> run = edgepart.train_pipeline(stage_files, xs, ts, schedule="1f1b")  # doctest: +SKIP
    >>> run.peak_stashed  # 3 stages, 6 micro-batches: min(p - s, m)  # doctest: +SKIP
    (3, 2, 1)
    >>> edgepart.train_pipeline(["a.tflite"], [], [], schedule="stream")
    Traceback (most recent call last):
    ...
    edgepart.errors.UsageError: training runs 'gpipe' or '1f1b', not 'stream'
    """
    return run_training(stages, inputs, targets, schedule=schedule, learning_rate=learning_rate)


@dataclass(frozen=True, eq=False)
class ClusterPlan:
    """A model's stages over a cluster's nodes (stage ``k`` on node ``k``) and its links."""

    cluster: ClusterProfile
    model: Model
    source_path: str | None
    chain: ChainPlan
    stage_ops: list[list[int]]
    processors: list[str]

    @property
    def period_s(self) -> float:
        """Predicted period: the slowest stage or link."""
        return self.chain.period_s

    def costs(self) -> StageCosts:
        """The simulator's view: stages and links alternate as pipeline resources, each link
        busy for its latency plus the boundary tensors over its bandwidth per item."""
        fwd: list[float] = []
        for k, s in enumerate(self.chain.stage_s):
            fwd.append(s)
            if k < len(self.chain.link_s):
                fwd.append(self.chain.link_s[k])
        return StageCosts(tuple(fwd))

    def report(self) -> str:
        """One line per stage and link, then the period."""
        c = self.chain
        lines = [f"pipeline over cluster {self.cluster.name}: {len(c.stage_s)} stage(s)"]
        for k, node in enumerate(self.cluster.nodes):
            lines.append(
                f"  stage {k}: node {node.name} ({node.profile.name}, {self.processors[k]}) "
                f"{len(self.stage_ops[k])} ops, {c.stage_s[k] * 1e3:.4f} ms predicted"
            )
            if k < len(c.link_s):
                lines.append(
                    f"    link {node.name} -> {self.cluster.nodes[k + 1].name}: "
                    f"{c.link_bytes[k]} bytes, {c.link_s[k] * 1e3:.4f} ms"
                )
        lines.append(f"  period {c.period_s * 1e3:.4f} ms (predicted from the node profiles)")
        return "\n".join(lines) + "\n"

    def bundle(self) -> Bundle:
        """The bundle with one partition per stage, in node order (host CPU executors)."""

        specs = [PartitionSpec(ops, id=f"s{k}") for k, ops in enumerate(self.stage_ops)]
        return build_bundle(self.model, specs, source_path=self.source_path)


def plan_cluster(
    model: Model | str | os.PathLike[str], cluster: ClusterProfile | str | os.PathLike[str]
) -> ClusterPlan:
    r"""Plan a model as a pipeline over a cluster's nodes, one stage per node.

    Each node's stage time comes from its own device profile's cost model (the node's first
    CPU processor, which runs whole stages); the links' times from the cluster profile; the
    boundaries of one topological order minimize the slowest stage or link
    (:func:`edgepart.placement.chain.plan_chain`), each stage's weights within its node's
    memory.

    Parameters
    ----------
    model
        A ``.tflite`` path or a read model.
    cluster
        A cluster profile (:func:`edgepart.devices.cluster.load_cluster`) or its YAML path.

    Returns
    -------
    ClusterPlan
        The stages, their ops and predicted times.

    Raises
    ------
    ProfileError
        The cluster profile is invalid, or a node's profile has no CPU processor.
    PlacementInfeasibleError
        Fewer ops than nodes, or no split fits the nodes' memory.

    Examples
    --------
    >>> import os, tempfile, edgepart
    >>> path = os.path.join(tempfile.mkdtemp(), "two.yaml")
    >>> with open(path, "w") as f:
    ...     _ = f.write(
    ...         "schema: edgepart/cluster@1\nname: two\nnodes:\n"
    ...         "  - {name: a, profile: x86_host}\n  - {name: b, profile: raspberry_pi5}\n"
    ...         "links:\n  - {src: a, dst: b, bandwidth_bytes_per_s: 1.25e+8, latency_s: 0.0002}\n"
    ...     )
    >>> plan = edgepart.plan_cluster("examples/models/mobilenet_v2.tflite", path)
    >>> len(plan.stage_ops), plan.period_s > 0
    (2, True)
    """

    source_path = None
    if isinstance(model, (str, os.PathLike)):
        source_path = os.fspath(model)
        model = read_model(source_path)
    cl = cluster if isinstance(cluster, ClusterProfile) else load_cluster(cluster)
    sg = model.main
    order = analysis.topological_order(sg)
    n, k_n = len(order), len(cl.nodes)
    step = np.zeros((n, k_n))
    disp = np.zeros(k_n)
    cap = np.zeros(k_n)
    procs = []
    for k, node in enumerate(cl.nodes):
        cpu = [i for i, p in enumerate(node.profile.processors) if p.kind == "cpu"]
        if not cpu:
            raise ProfileError(f"{cl.path}: nodes[{k}]: profile {node.profile.name} has no CPU")
        p = cpu[0]
        proc = node.profile.processors[p]
        gc = CostModel(hardware_from_profile(node.profile)).costs(sg, model)
        step[:, k] = np.asarray(gc.latency, dtype=np.float64)[order, p]
        disp[k] = proc.dispatch_overhead_s.value
        cap[k] = proc.memory_capacity_bytes.value
        procs.append(proc.name)
    nbytes = sg.tensor_nbytes.astype(np.int64)
    const = sg.tensor_is_constant
    ins = sg.op_inputs
    t_in = ins.idx.astype(np.int64)
    keep = t_in >= 0
    op_w = np.zeros(sg.num_ops, dtype=np.int64)
    np.add.at(op_w, ins.row_ids()[keep], np.where(const[t_in[keep]], nbytes[t_in[keep]], 0))
    life = analysis.tensor_lifetimes(sg, order)
    diff = np.zeros(n + 2, dtype=np.int64)
    live = (life[:, 0] >= 0) & (life[:, 1] > life[:, 0])
    np.add.at(diff, life[live, 0] + 1, nbytes[live])
    np.add.at(diff, life[live, 1] + 1, -nbytes[live])
    cut = np.cumsum(diff)[: n + 1]
    links = [cl.link(a.name, b.name) for a, b in itertools.pairwise(cl.nodes)]
    lat = np.asarray([ln.latency_s for ln in links if ln is not None])
    bw = np.asarray([ln.bandwidth_bytes_per_s for ln in links if ln is not None])
    ch = plan_chain(step, disp, op_w[order], cap, cut, lat, bw)
    ops = [sorted(int(o) for o in order[a:b]) for a, b in itertools.pairwise(ch.bounds)]
    return ClusterPlan(cl, model, source_path, ch, ops, procs)


def _pairs(cl: ClusterProfile) -> list[tuple[Any, Any]]:
    return list(zip(cl.nodes, cl.nodes[1:], strict=False))


def run_cluster(
    plan: ClusterPlan,
    inputs: Sequence[Sequence[Any]],
    *,
    window: int = 8,
    timeout_s: float = 60.0,
) -> ClusterRun:
    """Run a cluster plan on a connected Ray cluster, stage ``k`` as an actor on node ``k``.

    Parameters
    ----------
    plan
        From :func:`plan_cluster`.
    inputs
        Items, each a sequence of arrays in the model's input order.
    window
        Items in flight at most (back-pressure).
    timeout_s
        Longest wait for one result before giving up.

    Returns
    -------
    ClusterRun
        Outputs in input order, measured period, per-item latency and stage times.

    Raises
    ------
    UsageError
        Ray missing or not connected, or no node offers a stage's resource.
    StageFailedError
        A stage's actor or node died, or a result timed out; lists the inputs that did not
        complete.

    Examples
    --------
    With a Ray cluster running (``ray start``; tests start a local multi-node one)::

        plan = edgepart.plan_cluster("m.tflite", "lab.yaml")
        run = edgepart.run_cluster(plan, edgepart.random_inputs(plan.bundle(), 100))
        print(run.throughput, len(run.outputs))
    """
    return run_on_cluster(plan.bundle(), plan.cluster, inputs, window=window, timeout_s=timeout_s)


def write_gantt(timeline: Timeline, path: str | os.PathLike[str], title: str = "") -> None:
    r"""Write a timeline's Gantt chart as a PNG (atomically; byte-identical for equal input).

    Parameters
    ----------
    timeline
        A simulated or measured :class:`~edgepart.placement.schedules.Timeline`.
    path
        The PNG file.
    title
        The chart's first title line.

    Raises
    ------
    UsageError
        ``path`` does not end in ``.png``.

    Examples
    --------
    >>> import os, tempfile, edgepart
    >>> plan = edgepart.plan_pipeline(
    ...     "examples/models/mobilenet_v2.tflite", "x86_host", cpu_threads=1
    ... )
    >>> path = os.path.join(tempfile.mkdtemp(), "gantt.png")
    >>> edgepart.write_gantt(edgepart.simulate_pipeline(plan, "stream", 6), path)
    >>> open(path, "rb").read(4) == b"\x89PNG"
    True
    """
    if not os.fspath(path).lower().endswith(".png"):
        raise UsageError(f"{os.fspath(path)}: the Gantt chart is a PNG; name it *.png")
    gantt_png(timeline, path, title)


def random_inputs(bundle: Bundle, n: int, seed: int = 0) -> list[list[np.ndarray]]:
    """``n`` items of seeded random values for a bundle's inputs (standard normal for floats,
    uniform over the type's range for integers), for timing runs.

    Parameters
    ----------
    bundle
        The bundle whose model inputs to fill.
    n
        Items.
    seed
        Seed of the generator (equal seeds give equal items).

    Returns
    -------
    list of list of numpy.ndarray
        One list of arrays per item, in the model's input order.

    Examples
    --------
    >>> import edgepart
    >>> plan = edgepart.plan_pipeline(
    ...     "examples/models/mobilenet_v2.tflite", "x86_host", cpu_threads=1
    ... )
    >>> items = edgepart.random_inputs(plan.bundle(), 2, seed=0)
    >>> len(items), items[0][0].shape
    (2, (1, 96, 96, 3))
    """
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        item = []
        for t in bundle.plan.inputs:
            dt = np.dtype(t.dtype)
            if dt.kind == "f":
                item.append(rng.standard_normal(t.shape).astype(dt))
            elif dt.kind in "iu":
                info = np.iinfo(dt)
                item.append(rng.integers(info.min, info.max, t.shape, dtype=dt, endpoint=True))
            else:
                item.append(rng.integers(0, 2, t.shape).astype(dt))
        out.append(item)
    return out
