"""Placement: put a model's ops on a device's processors, apply the placement as a bundle, or
place a generic cost graph."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from edgepart.cost.table import LatencyTable
from edgepart.deploy.compile import CompiledModel, ModelPlan, compile_model, partition_model
from edgepart.devices.profile import DeviceProfile
from edgepart.errors import UsageError
from edgepart.ir.graph import Model
from edgepart.placement.costgraph import CostGraph
from edgepart.placement.costgraph_plan import CostGraphPlan, place_costgraph
from edgepart.placement.evaluate import OBJECTIVES
from edgepart.placement.solve import SolveOptions
from edgepart.progress import ProgressCallback

__all__ = [
    "METHODS",
    "CompiledModel",
    "CostGraphPlan",
    "ModelPlan",
    "compile",
    "place",
    "place_graph",
]

METHODS = ("heuristic", "exact", "edge-cut")
"""The placement methods: a fast heuristic, a branch and bound to a proven optimum (within a
time limit), and a balanced K-way split with few transferred bytes."""

EDGE_CUT_METHODS = ("interval", "metis")


def place(
    model: Model | str | os.PathLike[str],
    device: DeviceProfile | str | os.PathLike[str],
    *,
    latency_tables: Sequence[str | os.PathLike[str] | LatencyTable] = (),
    table_for: Mapping[str, str] | None = None,
    objective: str = "latency",
    method: str = "heuristic",
    seed: int = 0,
    effort: float = 1.0,
    time_limit: float | None = None,
    edge_cut_k: int = 2,
    edge_cut_method: str = "interval",
    progress: ProgressCallback | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    split: bool = True,
) -> ModelPlan:
    """Decide where each op of the model's main subgraph runs on ``device`` (nothing written).

    The model becomes a cost graph (TFLite's claim rules per processor, the cost model with
    any measured latency tables, a fusion pre-pass), TFLite's default placement on the device
    is the baseline, and a solver places the nodes; the plan is never worse than the best
    feasible TFLite-style baseline under the cost model.

    Parameters
    ----------
    model
        A read model or a ``.tflite`` path.
    device
        A device profile (loaded, a shipped name or a YAML path).
    latency_tables
        Measured latency tables (paths or loaded), merged in order.
    table_for
        Back profile processor ``PROC`` with latency-table processor ``TABLEPROC``.
    objective
        ``"latency"`` (one input's latency) or ``"throughput"`` (the busiest unit or link).
    method
        ``"heuristic"``, ``"exact"`` or ``"edge-cut"`` (see :data:`METHODS`).
    seed, effort
        Seed for randomized steps; heuristic budget multiplier.
    time_limit
        Seconds for ``method="exact"`` (default 60); the plan says whether optimality was
        proven.
    edge_cut_k, edge_cut_method
        ``method="edge-cut"``: the number of blocks and the partitioner (``"interval"``, or
        ``"metis"`` with the optional ``pymetis`` package).
    progress
        ``progress(done, total, label)`` while ``method="exact"`` searches (milliseconds of
        the time limit; the label gives the nodes searched and the best so far), e.g. an
        :class:`edgepart.Progress` bar.
    input_shapes
        Input name -> the shape it runs at (LiteRT's ``resize_tensor_input``: only ``-1``
        dimensions can change). Claims, costs and memory use the propagated shapes; dynamic
        inputs not given run at their stored size and an ``InputShapeNote`` warning says so.
    split
        Tensor parallelism: split a layer across units (output channels or columns, shards
        balanced so they finish together, transfers included) when the whole model is
        predicted at least 10 % faster, or when its weights fit no unit
        (``docs/tensor_parallel.md``); ``False`` never splits.

    Returns
    -------
    ModelPlan
        The cost graph, TFLite's default, the checked solution, the partitions and the
        report (``report()``); ``seconds`` holds the time per stage; ``tensor_parallel``
        the splits taken (``splits``) and what the plan predicted without them.

    Raises
    ------
    UsageError
        A bad argument.
    ProfileError, LatencyTableError, ModelFormatError
        An invalid profile, table or model.
    PlacementInfeasibleError
        Some op can run on no processor, or no placement fits the memory (names op or unit).

    Examples
    --------
    >>> import edgepart
    >>> plan = edgepart.place("examples/models/mobilenet_v2.tflite", "pixel8")
    >>> len(plan.partitions), plan.solution.evaluation.feasible
    (1, True)
    >>> print(plan.report().splitlines()[0])  # doctest: +ELLIPSIS
    model mobilenet_v2.tflite: 65 ops -> 65 nodes after fusion (x1.00: nothing merged); ...
    """
    opts = _options(
        method, objective, seed, effort, time_limit, edge_cut_k, edge_cut_method, progress
    )
    return partition_model(
        model,
        device,
        method,
        opts,
        latency_tables=latency_tables,
        table_for=table_for,
        input_shapes=input_shapes,
        split=_split(split),
    )


def compile(
    model: Model | str | os.PathLike[str],
    device: DeviceProfile | str | os.PathLike[str],
    *,
    latency_tables: Sequence[str | os.PathLike[str] | LatencyTable] = (),
    table_for: Mapping[str, str] | None = None,
    objective: str = "latency",
    method: str = "heuristic",
    seed: int = 0,
    effort: float = 1.0,
    time_limit: float | None = None,
    edge_cut_k: int = 2,
    edge_cut_method: str = "interval",
    arena: bool = True,
    progress: ProgressCallback | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    split: bool = True,
) -> CompiledModel:
    """Place the model on ``device`` (see :func:`place`) and apply the placement: a bundle in
    memory, inspected before :meth:`~edgepart.deploy.compile.CompiledModel.save` writes it.

    The bundle holds one standalone ``.tflite`` per partition, ``plan.json`` (partitions in
    dependency order with the predicted schedule, transfers, memory per unit, the TFLite
    default's prediction and the ops forced onto the CPU with TFLite's reasons), the global
    memory plan ``arena.json`` (one arena per memory domain, every partition's tensors and
    the boundary buffers), ``report.txt`` and a manifest with checksums. The same inputs give
    byte-identical bundles.

    Parameters
    ----------
    model, device, latency_tables, table_for, objective, method, seed, effort, time_limit, \
edge_cut_k, edge_cut_method, progress, input_shapes, split
        As for :func:`place`; the bundle records the input shapes (``plan.json``) and its
        partition files carry the resolved shapes. A plan with splits is written as
        ``plan.json`` version 2: its partitions place the split model (each shard its own
        ops), and ``splits`` and ``collectives`` say which layers were split and how data moves
        between the shards.
    arena
        Plan the memory across partitions (``arena.json``); false leaves it out.

    Returns
    -------
    CompiledModel
        ``placement`` (the decision), ``plan``, ``arena``, ``bundle``, ``report()`` and
        ``save(out_dir)``.

    Raises
    ------
    UsageError, ProfileError, LatencyTableError, ModelFormatError, PlacementInfeasibleError
        As for :func:`place`; also a partition that cannot be a standalone file.

    Examples
    --------
    >>> import tempfile, edgepart
    >>> compiled = edgepart.compile("examples/models/mobilenet_v2.tflite", "pixel8")
    >>> [(p.id, p.processor, p.delegate) for p in compiled.plan.partitions]
    [('p0', 'cpu', 'xnnpack')]
    >>> sorted(compiled.arena.memories)
    ['dram']
    >>> out = tempfile.mkdtemp()
    >>> bundle = compiled.save(out + "/mnv2_pixel8")
    >>> sorted(f["path"] for f in bundle.manifest["files"])
    ['arena.json', 'partition_report.txt', 'partitions/p0.tflite', 'plan.json', 'report.txt']
    """
    opts = _options(
        method, objective, seed, effort, time_limit, edge_cut_k, edge_cut_method, progress
    )
    return compile_model(
        model,
        device,
        method,
        opts,
        latency_tables=latency_tables,
        table_for=table_for,
        arena=arena,
        input_shapes=input_shapes,
        split=_split(split),
    )


def place_graph(
    graph: CostGraph | str | os.PathLike[str],
    *,
    objective: str = "latency",
    method: str = "heuristic",
    seed: int = 0,
    effort: float = 1.0,
    time_limit: float | None = None,
    edge_cut_k: int = 2,
    edge_cut_method: str = "interval",
    progress: ProgressCallback | None = None,
) -> CostGraphPlan:
    """Place the nodes of a generic cost graph (``docs/costgraph.md``; no ``.tflite`` needed).

    Parameters
    ----------
    graph
        A cost graph or the path of its JSON document.
    objective, method, seed, effort, time_limit, edge_cut_k, edge_cut_method, progress
        As for :func:`place`.

    Returns
    -------
    CostGraphPlan
        The solution, ``report()``, the plan document (``to_json()``) and ``save(path)``.

    Raises
    ------
    CostGraphError
        An invalid cost-graph document (names the JSON path).
    UsageError, PlacementInfeasibleError
        A bad argument; no feasible placement.

    Examples
    --------
    >>> import json, tempfile, edgepart
    >>> doc = {"format": "edgepart-costgraph", "version": 1,
    ...        "processors": [{"name": "cpu", "kind": "cpu"}, {"name": "npu", "kind": "npu"}],
    ...        "links": [{"src": "cpu", "dst": "npu", "latency_s": 1e-5,
    ...                   "bandwidth_bytes_per_s": 1e9}],
    ...        "nodes": [{"id": i, "latency_s": {"cpu": 0.002, "npu": 0.0005}} for i in range(3)],
    ...        "edges": [{"src": 0, "dst": 1, "bytes": 1000}, {"src": 1, "dst": 2, "bytes": 1000}]}
    >>> path = tempfile.mkdtemp() + "/g.json"
    >>> with open(path, "w") as f:
    ...     json.dump(doc, f)
    >>> placed = edgepart.place_graph(path)
    >>> [(p["processor"], p["nodes"]) for p in json.loads(placed.to_json())["partitions"]]
    [('npu', [0, 1, 2])]
    """
    opts = _options(
        method, objective, seed, effort, time_limit, edge_cut_k, edge_cut_method, progress
    )
    return place_costgraph(graph, method, opts)


def _split(split: object) -> bool:
    if not isinstance(split, bool):
        raise UsageError(f"split must be True or False, got {split!r}")
    return split


def _options(
    method: str,
    objective: str,
    seed: int,
    effort: float,
    time_limit: float | None,
    edge_cut_k: int,
    edge_cut_method: str,
    progress: ProgressCallback | None,
) -> SolveOptions:
    """Checked solver options (messages name the parameters)."""
    if method not in METHODS:
        raise UsageError(f"method {method!r} is not known; use one of {', '.join(METHODS)}")
    if objective not in OBJECTIVES:
        raise UsageError(
            f"objective {objective!r} is not known; use one of {', '.join(OBJECTIVES)}"
        )
    if time_limit is not None and method != "exact":
        raise UsageError("time_limit applies to method='exact' only")
    if time_limit is not None and time_limit <= 0:
        raise UsageError(f"time_limit must be positive, got {time_limit}")
    if edge_cut_k < 1:
        raise UsageError(f"edge_cut_k must be >= 1, got {edge_cut_k}")
    if edge_cut_method not in EDGE_CUT_METHODS:
        raise UsageError(
            f"edge_cut_method {edge_cut_method!r} is not known; use one of "
            f"{', '.join(EDGE_CUT_METHODS)}"
        )
    if effort <= 0:
        raise UsageError(f"effort must be positive, got {effort}")
    return SolveOptions(
        objective=objective,
        seed=seed,
        effort=effort,
        time_limit=60.0 if time_limit is None else time_limit,
        edge_cut_k=edge_cut_k,
        edge_cut_method=edge_cut_method,
        progress=progress,
    )
