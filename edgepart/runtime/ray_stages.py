"""Run a stage plan across machines: each stage a Ray actor holding its LiteRT interpreter.

Ray is an optional extra (``pip install edgepart[cluster]``); it is imported only here, when a
pipeline is started. Stage ``k`` of the bundle becomes an actor pinned to cluster node ``k``
by the node's custom resource (:class:`~edgepart.devices.cluster.ClusterNode.resource`: the
Ray node must be started with ``--resources '{"edgepart_node_n0": 1}'`` or the like). Each
actor holds a :class:`~edgepart.runtime.stage_threads.StageWorker`. For every input the driver
chains one call per stage, passing each call's result (the item's tensor map, in Ray's object
store, moved between nodes by Ray) to the next stage's actor without fetching it; an actor
runs its calls in submission order, so stages overlap on successive items. At most ``window``
items are in flight (back-pressure: the driver waits for the oldest before submitting more).

Failure: an actor or node that dies fails its pending calls, and every call chained after
them. The driver then collects what did complete (each wait bounded by ``timeout_s``, so
nothing hangs), stops the actors, and raises
:class:`~edgepart.runtime.details.StageFailedError` with the inputs that did not complete.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from edgepart.errors import UsageError
from edgepart.runtime.details import StageFailedError
from edgepart.runtime.stage_threads import StageSpec, StageWorker, stage_specs

if TYPE_CHECKING:
    from edgepart.bundle.format import Bundle
    from edgepart.devices.cluster import ClusterProfile

__all__ = ["ClusterRun", "run_on_cluster"]


@dataclass(frozen=True, eq=False)
class ClusterRun:
    """Outputs in input order and the measured figures of a run across nodes.

    ``latency_s[i]``: from the driver submitting input ``i`` to its result in the driver.
    ``period_s``: mean interval between results once the pipeline filled.
    ``stage_s``: each stage's median invoke time on its node. ``nodes``: the Ray node id of
    each stage's actor.
    """

    outputs: list[list[np.ndarray]]
    latency_s: tuple[float, ...]
    period_s: float
    wall_s: float
    stage_s: tuple[float, ...]
    nodes: tuple[str, ...]

    @property
    def throughput(self) -> float:
        """Items per second in steady state."""
        return 1.0 / self.period_s if self.period_s > 0 else float("inf")


class _Stage:
    """The actor body: one stage's worker; records its invoke times."""

    def __init__(self, spec: StageSpec, keep: frozenset[int]) -> None:
        import ray  # the optional `cluster` extra: loaded only when a stage actor starts

        self.worker = StageWorker(spec)
        self.keep = keep
        self.node = ray.get_runtime_context().get_node_id()

    def node_id(self) -> str:
        return str(self.node)

    def run(
        self, msg: tuple[dict[int, np.ndarray], list[float]]
    ) -> tuple[dict[int, np.ndarray], list[float]]:
        tensors, spans = msg
        t0 = time.perf_counter()
        out = self.worker(tensors)
        spans = [*spans, time.perf_counter() - t0]
        tensors = {t: v for t, v in (*tensors.items(), *out.items()) if t in self.keep}
        return tensors, spans


def _ray() -> Any:
    try:
        import ray  # the optional `cluster` extra: loaded only when a cluster run starts
    except ImportError:  # the optional extra
        raise UsageError(
            "running stages across nodes needs Ray: pip install 'edgepart[cluster]'"
        ) from None
    return ray


def run_on_cluster(
    bundle: Bundle,
    cluster: ClusterProfile,
    inputs: Sequence[Sequence[Any]],
    *,
    window: int = 8,
    timeout_s: float = 60.0,
    num_threads: int = 1,
    on_result: Callable[[int], None] | None = None,
) -> ClusterRun:
    """Stream ``inputs`` through the bundle's stages, stage ``k`` on cluster node ``k``.

    Ray must already be connected (``ray.init(address=...)``) to a cluster whose nodes offer
    the cluster profile's resources.

    Parameters
    ----------
    bundle
        One partition per stage, as many as the cluster has nodes.
    cluster
        The cluster profile (node order = stage order).
    inputs
        Items, each a sequence of arrays in the model's input order.
    window
        Items in flight at most.
    timeout_s
        Longest wait for one result (or for the actors to start) before giving up.
    num_threads
        Interpreter threads of stages whose plan entry names none.
    on_result
        Called with each input's index as its result arrives (progress).

    Returns
    -------
    ClusterRun
        Outputs and measured figures.

    Raises
    ------
    UsageError
        Ray is not installed or not connected, counts that do not match, or bad options.
    StageFailedError
        An actor or its node died, or a result did not come within ``timeout_s``; lists the
        inputs that did not complete.
    """
    ray = _ray()
    if not ray.is_initialized():
        raise UsageError("Ray is not connected: call ray.init(address=...) first")
    specs = stage_specs(bundle, num_threads)
    if len(specs) != len(cluster.nodes):
        raise UsageError(
            f"the bundle has {len(specs)} stage(s); cluster {cluster.name} has "
            f"{len(cluster.nodes)} node(s)"
        )
    if window < 1 or timeout_s <= 0:
        raise UsageError(f"window must be >= 1 and timeout_s > 0 (got {window}, {timeout_s})")
    have = ray.cluster_resources()
    for node in cluster.nodes:
        if have.get(node.resource, 0) <= 0:
            raise UsageError(
                f"no Ray node offers resource {node.resource!r} (node {node.name} of cluster "
                f"{cluster.name}); start it with --resources '{{\"{node.resource}\": 1}}'"
            )
    in_t = [t.tensor for t in bundle.plan.inputs]
    out_t = [t.tensor for t in bundle.plan.outputs]
    # what leaves stage k: the tensors later stages read and the model's outputs (the rest,
    # the model's input included, is not sent over the next link)
    keep = [
        frozenset({t for later in specs[k + 1 :] for _, t in later.inputs} | set(out_t))
        for k in range(len(specs))
    ]
    actor_cls = ray.remote(_Stage)
    # a small share of the node's resource pins the actor there without waiting for the
    # actors of an earlier run to be torn down (they hold their share until then)
    actors = [
        actor_cls.options(
            num_cpus=0, resources={node.resource: 0.01}, max_restarts=0, max_task_retries=0
        ).remote(spec, keep[k])
        for k, (spec, node) in enumerate(zip(specs, cluster.nodes, strict=True))
    ]
    errors = (ray.exceptions.RayError, TimeoutError)
    try:
        nodes = tuple(ray.get([a.node_id.remote() for a in actors], timeout=timeout_s))
    except errors as err:
        for a in actors:
            ray.kill(a)
        raise StageFailedError(
            f"the stage actors did not start on cluster {cluster.name}: {_one_line(err)}",
            tuple(range(len(inputs))),
        ) from None
    results: dict[int, list[np.ndarray]] = {}
    spans: list[list[float]] = []
    done_at: list[float] = []
    submitted: list[float] = []
    pending: deque[tuple[int, Any]] = deque()
    clock = time.perf_counter
    t_start = clock()
    failure: BaseException | None = None

    def collect() -> None:
        i, ref = pending.popleft()
        tensors, sp = ray.get(ref, timeout=timeout_s)
        results[i] = [tensors[t] for t in out_t]
        spans.append(sp)
        done_at.append(clock())
        if on_result is not None:
            on_result(i)

    try:
        for i, item in enumerate(inputs):
            values = list(item)
            if len(values) != len(in_t):
                raise UsageError(
                    f"input {i} has {len(values)} values; the model has {len(in_t)} inputs"
                )
            while len(pending) >= window:
                collect()
            msg: Any = ({t: np.asarray(v) for t, v in zip(in_t, values, strict=True)}, [])
            submitted.append(clock())
            for a in actors:
                msg = a.run.remote(msg)
            pending.append((i, msg))
        while pending:
            collect()
    except errors as err:
        failure = err
    wall = clock() - t_start
    if failure is not None:
        # results that made it before the failure: one bounded wait for all of them
        refs = [ref for _, ref in pending]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=min(timeout_s, 10.0))
        ready_ids = {r.hex() for r in ready}
        for i, ref in pending:
            if ref.hex() not in ready_ids:
                continue
            try:
                tensors, _ = ray.get(ref, timeout=1.0)
                results[i] = [tensors[t] for t in out_t]
            except errors:
                continue
        for a in actors:
            ray.kill(a)
        bad = tuple(i for i in range(len(inputs)) if i not in results)
        raise StageFailedError(
            f"pipeline over cluster {cluster.name} failed: {_one_line(failure)}; "
            f"{len(bad)} of {len(inputs)} input(s) did not complete "
            f"(first {list(bad[:10])})",
            bad,
        )
    for a in actors:
        ray.kill(a)
    m = len(results)
    if m == 0:
        raise UsageError("no inputs to stream")
    k0 = min(len(actors) - 1, m - 1)
    period = (done_at[-1] - done_at[k0]) / (m - 1 - k0) if m - 1 > k0 else wall
    lat = tuple(done_at[i] - submitted[i] for i in range(m))
    stage_s = tuple(float(np.median([s[k] for s in spans])) for k in range(len(actors)))
    return ClusterRun([results[i] for i in range(m)], lat, period, wall, stage_s, nodes)


def _one_line(err: BaseException) -> str:
    text = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", str(err)).split())  # Ray colours its text
    return f"{type(err).__name__}: {text[:300]}"
