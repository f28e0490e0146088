"""``calibrate --host``: measure generated kernel chains on this machine and fit predictors.

Measuring and fitting are separate steps, so a predictor can be refitted from the same
measurements (and is then byte-identical for the same seed):

1. :func:`measure` draws chain specs (:mod:`edgepart.profiling.kernel_gen`), builds each chain
   model once and times it under every configuration (executor and thread count) with the
   real LiteRT interpreter, until the time budget (less what the fit will need) is used up.
   Chains are measured in batches: every chain of a batch is prepared under every
   configuration, then the batch is sampled round-robin in a random order per round, so
   interference from other processes is spread over all of them, and a *canary* chain timed
   at the start of every round measures that interference: samples of rounds where the canary
   ran more than 25% over its best are dropped (wall-clock samples; with one thread the CPU
   clock already leaves preemption out). Every batch records the canary's samples of each
   round on both clocks (``canary_wall_s``, ``canary_cpu_s``): how fast the machine ran
   while the batch was measured. A sample is one untimed invocation (caches
   and the delegate's state warm again after the other chains ran) followed by ``b``
   back-to-back timed invocations (``b`` so a sample lasts about a millisecond). Each chain's
   kernels are found with :func:`edgepart.cost.kernels.decompose`, using the ops XNNPACK
   really took (read from the interpreter's DELEGATE nodes). The load average is recorded
   with every batch. Between batches, a quick fit ranks the kernel classes by their
   cross-validated error and the next batch draws the worst ones more often (adaptive
   sampling). The fixed costs (:class:`FixedSamplers`: the empty invocation, a delegate
   node, control flow) are timed before the first chain and again in every
   ``FIXED_EVERY``-th batch, round-robin beside its chains; each statistic is the median
   over those moments (each moment is kept: ``Measurements.fixed_moments``).
2. :func:`edgepart.cost.predictor_fit.fit_predictor` fits one predictor per configuration.

:class:`Measurements` are saved as ``.npz`` (arrays plus a JSON header; no pickle).
"""

from __future__ import annotations

import io
import json
import math
import os
import platform
import time
import warnings
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

import numpy as np

from edgepart.cost.kernels import FEATURES, Kernels, decompose
from edgepart.cost.predictor import is_row_tile
from edgepart.cost.stats import (
    Stats,
    fit_intercept,
    fit_slope,
    median_stats,
    stats_from_samples,
)
from edgepart.devices.xnnpack_packing import cpu_flags
from edgepart.errors import EdgepartError, PredictorError, RuntimeBackendError, UsageError
from edgepart.fileio import atomic_write, read_regular
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.profiling._session import cache_bytes, host_description
from edgepart.profiling.gemm_tiles import measure_row_tiles, measure_task_widths
from edgepart.profiling.kernel_gen import ChainSpec, build_chain, draw_specs
from edgepart.profiling.timing import (
    LOOP_TRIPS,
    NODE_CHAIN,
    WIDE_BODY_OPS,
    WIDE_TRIPS,
    branch_model,
    delegate_nodes,
    fill_inputs,
    int_op_chain,
    loop_model,
    make_interpreter,
    overhead_model,
)
from edgepart.tflite.writer import write_model

__all__ = [
    "ChainRecord",
    "MeasureConfig",
    "Measurements",
    "Sampler",
    "canary_reference",
    "config_name",
    "load_measurements",
    "measure",
    "prepare_sampler",
]

MEASUREMENTS_FORMAT = "edgepart-calibration-measurements"
MEASUREMENTS_VERSION = 1
Progress = Callable[[float, str], None]


FIXED_START_ROUNDS = 40  # rounds of the fixed-cost models before the first chain
FIXED_EVERY = 4  # ... and a moment of them in every FIXED_EVERY-th batch
# canary rounds the wall-clock filter's reference is taken over (about 20 batches, a minute)
CANARY_WINDOW = 180


def canary_reference(wall: Sequence[float]) -> float:
    """What the canary takes when nothing disturbs it: the 10th percentile of its last
    :data:`CANARY_WINDOW` wall-clock samples. Not its fastest sample ever: on a 2-core cloud
    guest (2026-12-06) one round of 309 us among rounds of 400 set a bar (1.25 times it) that
    373 of 461 batches then missed in every round, so two threads kept 543 of 7,376 chains;
    and the machine's speed moves over minutes by more than preemption's filter allows."""
    recent = list(wall[-CANARY_WINDOW:])
    return float(np.percentile(recent, 10)) if recent else 1.0


def config_name(executor: str, threads: int) -> str:
    """``xnnpack_2t``: how a configuration is named in measurements and predictors."""
    return f"{executor}_{threads}t"


@dataclass(frozen=True)
class MeasureConfig:
    """What :func:`measure` does.

    Attributes
    ----------
    configs
        ``(executor, threads)`` pairs; every chain is timed under each.
    budget_s
        Wall-clock seconds for measuring (the caller subtracts what fitting needs).
    seed
        Seeds the chain draws and the sampling order.
    batch
        Chains prepared and sampled together.
    rounds
        Samples per chain and configuration on wall time (several threads).
    cpu_rounds
        Samples per chain on CPU time (one thread): preemption does not touch them, so fewer
        suffice.
    sample_s
        Target duration of one sample.
    adaptive
        Re-weight kernel classes by their quick-fit error between batches.
    max_chains
        Stop after this many chains (0: only the budget stops).
    canary_limit
        Wall-clock samples of a round are dropped when the canary ran more than this factor
        over its undisturbed time (:func:`canary_reference`; ``inf`` keeps every round; a
        chain needs three kept samples).
    """

    configs: tuple[tuple[str, int], ...] = (("xnnpack", 1), ("builtin", 1))
    budget_s: float = 600.0
    seed: int = 0
    batch: int = 16
    rounds: int = 9
    cpu_rounds: int = 5
    sample_s: float = 1e-3
    adaptive: bool = True
    max_chains: int = 0
    canary_limit: float = 1.25


@dataclass
class ChainRecord:
    """One measured chain: its spec, kernels per executor and statistics per configuration."""

    spec: ChainSpec
    stats: dict[str, Stats | None]  # on the configuration's clock (CPU time with 1 thread)
    partitions: dict[str, int]
    kernels: dict[str, Kernels]
    batch: int
    load: float
    note: str = ""
    wall: dict[str, Stats | None] = field(default_factory=dict)


@dataclass
class Measurements:
    """Everything :func:`measure` recorded (saved as ``.npz``: see :meth:`save`)."""

    host: dict[str, Any]
    configs: list[tuple[str, int]]
    fixed: dict[str, dict[str, Any]]  # per configuration: invoke and delegate node Stats
    chains: list[ChainRecord] = field(default_factory=list)
    # per configuration, the fixed costs of every moment they were timed at, in time order
    # (``fixed`` is their median; older measurement files have none)
    fixed_moments: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    batches: list[dict[str, Any]] = field(default_factory=list)
    seed: int = 0
    elapsed_s: float = 0.0
    budget_s: float = 0.0

    # ------------------------------------------------------------------ file
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the measurements as ``.npz`` (atomically; no pickled objects)."""
        types: list[str] = []
        tindex: dict[str, int] = {}
        rows_chain, rows_exec, rows_type, rows_rep, feats = [], [], [], [], []
        execs = sorted({ex for ex, _ in self.configs})
        chains = []
        for ci, c in enumerate(self.chains):
            for ei, ex in enumerate(execs):
                k = c.kernels.get(ex)
                if k is None:
                    continue
                for t, f, r in zip(k.types, k.features, k.repeat, strict=True):
                    if t not in tindex:
                        tindex[t] = len(types)
                        types.append(t)
                    rows_chain.append(ci)
                    rows_exec.append(ei)
                    rows_type.append(tindex[t])
                    rows_rep.append(float(r))
                    feats.append(f)
            chains.append(
                {
                    "spec": c.spec.to_json(),
                    "stats": {k: (None if v is None else v.to_json()) for k, v in c.stats.items()},
                    "wall": {k: (None if v is None else v.to_json()) for k, v in c.wall.items()},
                    "partitions": c.partitions,
                    "batch": c.batch,
                    "load": c.load,
                    "note": c.note,
                    # executors decomposed, kernels or not: a chain XNNPACK runs as nothing
                    # but free ops has no rows, yet is a measurement of its fixed costs
                    "executors": sorted(c.kernels),
                }
            )
        header = {
            "format": MEASUREMENTS_FORMAT,
            "version": MEASUREMENTS_VERSION,
            "host": self.host,
            "configs": [[ex, th] for ex, th in self.configs],
            "executors": execs,
            "fixed": self.fixed,
            "fixed_moments": self.fixed_moments,
            "features": list(FEATURES),
            "types": types,
            "chains": chains,
            "batches": self.batches,
            "seed": self.seed,
            "elapsed_s": self.elapsed_s,
            "budget_s": self.budget_s,
        }
        buf = io.BytesIO()
        np.savez_compressed(
            buf,
            header=np.frombuffer(json.dumps(header, sort_keys=True).encode(), dtype=np.uint8),
            k_chain=np.asarray(rows_chain, np.int32),
            k_exec=np.asarray(rows_exec, np.int8),
            k_type=np.asarray(rows_type, np.int16),
            k_repeat=np.asarray(rows_rep, np.float64),
            k_feat=(np.vstack(feats) if feats else np.zeros((0, len(FEATURES)))),
        )
        atomic_write(path, buf.getvalue())


MEASUREMENTS_LIMIT = 1 << 32
"""Largest measurements file read (4 GiB)."""


def load_measurements(path: str | os.PathLike[str]) -> Measurements:
    """Read :meth:`Measurements.save` output.

    Raises
    ------
    UsageError
        If the file is missing, not such a file (a file of the wrong kind for the argument), or
        of another version or feature set.
    """
    p = os.fspath(path)
    # a regular file of bounded size (a FIFO or device is refused, not read), parsed in memory
    data = read_regular(p, what="calibration measurements file", limit=MEASUREMENTS_LIMIT)
    if not data.startswith(b"PK"):  # numpy would try the bytes as a pickle and suggest that
        raise PredictorError(
            f"{p}: not an edgepart calibration measurements file (not an .npz archive); pass "
            "the host.measurements.npz that `edgepart calibrate --host` wrote"
        )
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            header = json.loads(bytes(z["header"]).decode())
            k_chain, k_exec, k_type = z["k_chain"], z["k_exec"], z["k_type"]
            k_rep, k_feat = z["k_repeat"], z["k_feat"]
    except (OSError, ValueError, KeyError) as err:
        raise PredictorError(
            f"{p}: not an edgepart calibration measurements file ({err})"
        ) from None
    except (zipfile.BadZipFile, zlib.error, EOFError) as err:  # a cut or damaged archive
        raise PredictorError(
            f"{p}: the calibration measurements file is truncated or corrupted ({err}); pass "
            "the host.measurements.npz that `edgepart calibrate --host` wrote, or measure again"
        ) from None
    if header.get("format") != MEASUREMENTS_FORMAT:
        raise PredictorError(f"{p}: not an edgepart calibration measurements file")
    if header.get("version") != MEASUREMENTS_VERSION:
        raise PredictorError(
            f"{p}: measurements version {header.get('version')}; this edgepart reads "
            f"version {MEASUREMENTS_VERSION}"
        )
    if list(header["features"]) != list(FEATURES):
        raise PredictorError(
            f"{p}: measured with another kernel feature set; measure again with this edgepart"
        )
    _check_batches(p, header.get("batches"))
    tile = header.get("host", {}).get("gemm_row_tile", 1)
    if not is_row_tile(tile):
        raise PredictorError(
            f"{p}: host.gemm_row_tile is {tile!r}; need an integer from 1 to 64 (the rows of "
            "XNNPACK's GEMM tile that `calibrate --host` measured); measure again"
        )
    tiles = header.get("host", {}).get("gemm_row_tiles", {})
    if not isinstance(tiles, dict) or not all(is_row_tile(v) for v in tiles.values()):
        raise PredictorError(
            f"{p}: host.gemm_row_tiles is {tiles!r}; need an object of integers from 1 to 64 "
            "(the rows of XNNPACK's GEMM tile per data type that `calibrate --host` measured); "
            "measure again"
        )
    widths = header.get("host", {}).get("gemm_task_outputs", {})
    if not isinstance(widths, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 4096 for v in widths.values()
    ):
        raise PredictorError(
            f"{p}: host.gemm_task_outputs is {widths!r}; need an object of integers from 0 to "
            "4096 (the widest one-row GEMM that `calibrate --host` found runs as one task, per "
            "data type); measure again"
        )
    types = header["types"]
    execs = header["executors"]
    m = Measurements(
        host=header["host"],
        configs=[(str(a), int(b)) for a, b in header["configs"]],
        fixed=header["fixed"],
        fixed_moments=header.get("fixed_moments", {}),
        batches=header["batches"],
        seed=int(header["seed"]),
        elapsed_s=float(header["elapsed_s"]),
        budget_s=float(header["budget_s"]),
    )
    order = np.lexsort((k_exec, k_chain))
    bounds: dict[tuple[int, int], list[int]] = {}
    for r in order.tolist():
        bounds.setdefault((int(k_chain[r]), int(k_exec[r])), []).append(r)
    for ci, c in enumerate(header["chains"]):
        kernels = {}
        for ei, ex in enumerate(execs):
            rows = bounds.get((ci, ei))
            if rows is None:
                if ex in c.get("executors", ()):
                    rows = []
                else:
                    continue
            kernels[ex] = Kernels(
                types=[types[int(k_type[r])] for r in rows],
                features=k_feat[rows].reshape(len(rows), len(FEATURES)),
                ops=[() for _ in rows],
                op_kernel=np.zeros(0, np.int64),
                repeat=k_rep[rows],
                executor=ex,
            )
        stats = {k: (None if v is None else Stats(**v)) for k, v in c["stats"].items()}
        wall = {k: (None if v is None else Stats(**v)) for k, v in c.get("wall", {}).items()}
        m.chains.append(
            ChainRecord(
                spec=ChainSpec.from_json(c["spec"]),
                stats=stats,
                partitions={str(k): int(v) for k, v in c["partitions"].items()},
                kernels=kernels,
                batch=int(c["batch"]),
                load=float(c["load"]),
                note=str(c.get("note", "")),
                wall=wall,
            )
        )
    return m


def _check_batches(path: str, batches: Any) -> None:
    """The batch records the fit reads (:mod:`edgepart.profiling.machine_state`): a list of
    objects, each with an integer ``batch`` and, if any, canary samples as positive numbers."""
    if not isinstance(batches, list):
        raise PredictorError(f"{path}: header.batches: expected a list; measure again")
    for i, b in enumerate(batches):
        where = f"{path}: header.batches[{i}]"
        if not isinstance(b, dict) or not isinstance(b.get("batch"), int):
            raise PredictorError(f"{where}: expected an object with an integer batch")
        for key in ("canary_cpu_s", "canary_wall_s"):
            v = b.get(key, [])
            if not isinstance(v, list) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x < math.inf
                for x in v
            ):
                raise PredictorError(f"{where}.{key}: expected a list of positive seconds")


# ---------------------------------------------------------------------------- timing


class Sampler:
    """One prepared interpreter: warm-up, batch size, samples (see the module docstring).

    Every sample records wall time and the calling thread's CPU time. With one thread the
    interpreter computes on the calling thread, so CPU time is its latency minus any time
    the process was preempted: on a busy machine it estimates the undisturbed latency far
    better than wall time (``cpu_clock``). With more threads only wall time means anything.
    """

    def __init__(self, it: Any, sample_s: float, cpu_clock: bool = False) -> None:
        self.it = it
        self.invoke = it.invoke
        self.cpu_clock = cpu_clock
        clock = time.perf_counter_ns
        t1 = 0
        try:
            for _ in range(2):
                t0 = clock()
                self.invoke()
                t1 = clock() - t0
        except (RuntimeError, ValueError) as err:
            msg = str(err).strip().splitlines()
            raise RuntimeBackendError(f"LiteRT invoke failed: {msg[0] if msg else err}") from None
        self.first_s = max(t1, 50) * 1e-9
        self.batch = max(1, math.ceil(sample_s / self.first_s))
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.rounds: list[int] = []

    @property
    def samples(self) -> list[float]:
        return self.cpu if self.cpu_clock else self.wall

    def sample(self, rnd: int) -> None:
        invoke, wall, cpu, n = self.invoke, time.perf_counter_ns, time.thread_time_ns, self.batch
        invoke()
        w0, c0 = wall(), cpu()
        for _ in range(n):
            invoke()
        c1, w1 = cpu(), wall()
        self.wall.append((w1 - w0) * 1e-9 / n)
        self.cpu.append((c1 - c0) * 1e-9 / n)
        self.rounds.append(rnd)

    def stats(self, keep: set[int] | None = None, *, wall: bool | None = None) -> Stats | None:
        """Statistics of the samples (of rounds ``keep``), on this sampler's clock or the one
        asked for."""
        src = self.wall if (wall if wall is not None else not self.cpu_clock) else self.cpu
        xs = [s for s, r in zip(src, self.rounds, strict=True) if keep is None or r in keep]
        if len(xs) < 3:
            return None
        return stats_from_samples(xs, 2, self.batch)


def prepare_sampler(content: bytes, executor: str, threads: int, sample_s: float) -> Sampler:
    it = make_interpreter(content, executor, threads)
    fill_inputs(it, 0)
    return Sampler(it, sample_s, cpu_clock=threads == 1)


def canary_model() -> bytes:
    """A fixed model of about 100 us on one core (three convolutions and a depthwise one),
    timed at the start of every round to measure interference from other processes."""
    rng = np.random.default_rng(11)
    mb = ModelBuilder(description="edgepart calibration canary")
    g = mb.subgraph("main")
    x = x0 = g.input("x", DType.FLOAT32, (1, 28, 28, 32))
    opts = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": "RELU"}
    for k in range(4):
        if k == 2:
            w = g.constant(f"w{k}", rng.standard_normal((1, 3, 3, 32)).astype(np.float32) * 0.3)
            op, o = "DEPTHWISE_CONV_2D", {**opts, "depth_multiplier": 1}
        else:
            w = g.constant(f"w{k}", rng.standard_normal((32, 3, 3, 32)).astype(np.float32) * 0.08)
            op, o = "CONV_2D", opts
        b = g.constant(f"b{k}", np.zeros(32, np.float32))
        y = g.tensor(f"y{k}", DType.FLOAT32, (1, 28, 28, 32))
        g.op(op, [x, w, b], [y], options=o)
        x = y
    g.output(x)
    mb.add_signature("serving_default", 0, [("x", x0)], [("y", x)])
    return write_model(mb.build())


def real_owner(
    it: Any, num_ops: int, content: bytes | None = None, threads: int = 1
) -> tuple[list[str | None], int]:
    """Per op whether XNNPACK took it, read from the interpreter's DELEGATE nodes.

    A DELEGATE node lists its boundary tensors; the ops it replaced are those between them
    (walking producers back from its outputs, stopping at its inputs). An op with no outputs
    (``ASSIGN_VARIABLE``), and the ops feeding only it, are reached from no output: when the
    model has one and its bytes are given, a second interpreter that keeps every tensor (so
    that every delegated op becomes a DELEGATE node of its own) names the delegated ones.
    """
    details = it._get_ops_details()
    producer: dict[int, int] = {}
    for d in details[:num_ops]:
        for t in d["outputs"].tolist():
            producer[int(t)] = int(d["index"])
    owner: list[str | None] = [None] * num_ops
    nodes = 0
    for d in details[num_ops:]:
        if d.get("op_name") != "DELEGATE":
            continue
        nodes += 1
        stop = {int(t) for t in d["inputs"].tolist()}
        todo = [int(t) for t in d["outputs"].tolist()]
        seen: set[int] = set()
        while todo:
            t = todo.pop()
            if t in stop or t in seen or t not in producer:
                continue
            seen.add(t)
            op = producer[t]
            if owner[op] is None:
                owner[op] = "xnnpack"
                for u in details[op]["inputs"].tolist():
                    todo.append(int(u))
    if content is not None and any(len(d["outputs"]) == 0 for d in details[:num_ops]):
        for op in _delegated_one_by_one(content, threads, details[:num_ops]):
            owner[op] = "xnnpack"
    return owner, nodes


def _delegated_one_by_one(content: bytes, threads: int, ops: list[dict[str, Any]]) -> set[int]:
    """The ops XNNPACK takes, each matched to the DELEGATE node of its own that an interpreter
    keeping every tensor makes of it (by its input and output tensors)."""
    with warnings.catch_warnings():  # LiteRT warns that keeping every tensor is for debugging
        warnings.simplefilter("ignore")
        it = make_interpreter(content, "xnnpack", threads, preserve_all_tensors=True)
    sig: dict[tuple[frozenset[int], frozenset[int]], list[int]] = {}
    for d in ops:
        key = (frozenset(int(t) for t in d["inputs"].tolist() if t >= 0),
               frozenset(int(t) for t in d["outputs"].tolist() if t >= 0))  # fmt: skip
        sig.setdefault(key, []).append(int(d["index"]))
    found: set[int] = set()
    for d in it._get_ops_details()[len(ops) :]:
        if d.get("op_name") == "DELEGATE":
            key = (frozenset(int(t) for t in d["inputs"].tolist() if t >= 0),
                   frozenset(int(t) for t in d["outputs"].tolist() if t >= 0))  # fmt: skip
            if len(sig.get(key, ())) == 1:
                found.add(sig[key][0])
    return found


class FixedSamplers:
    """The empty invocation, (XNNPACK) one delegate node, and control flow, on a
    configuration's clock.

    The node is the intercept at length 0 of chains of 1, 2, 4 and 8 delegated one-element
    ``ADD`` ops (:func:`edgepart.profiling.timing.delegate_node_stats` explains why). Control
    flow (:mod:`edgepart.profiling.timing`): ``WHILE`` loops of 1, 2, 4 and 8 iterations
    (intercept and slope), an ``IF``, and chains of the int32 ``ADD`` their subgraphs hold
    (slope: one such op). Those chains' intercept (``op_chain``) is the invocation of a plan
    that runs builtin kernels: on ai-edge-litert 2.3.0 it lies 80 to 90 ns above the empty
    invocation, in every configuration, while a plan of DELEGATE nodes alone does not pay it.
    Loops whose body holds :data:`~edgepart.profiling.timing.WIDE_BODY_OPS` ops (intercept)
    give what a loop's entry costs per op of its subgraphs: LiteRT prepares them again at
    every invocation.

    The models are prepared once and sampled at several moments of a calibration (round-robin
    beside the chains): on a shared machine, a fixed cost timed at one moment is that moment's.
    """

    def __init__(self, executor: str, threads: int) -> None:
        self.empty = prepare_sampler(overhead_model(), executor, threads, 1e-3)
        self.chains: list[Sampler] = []
        if executor != "builtin":
            for k in NODE_CHAIN:
                s = prepare_sampler(overhead_model(True, k), executor, threads, 1e-3)
                if delegate_nodes(s.it) != 1:
                    self.chains = []
                    break
                self.chains.append(s)
        self.loops = [prepare_sampler(loop_model(n), executor, threads, 1e-3) for n in LOOP_TRIPS]
        self.adds = [prepare_sampler(int_op_chain(n), executor, threads, 1e-3) for n in LOOP_TRIPS]
        self.wide = [
            prepare_sampler(loop_model(n, WIDE_BODY_OPS), executor, threads, 1e-3)
            for n in WIDE_TRIPS
        ]
        self.branch = prepare_sampler(branch_model(), executor, threads, 1e-3)

    @property
    def samplers(self) -> tuple[Sampler, ...]:
        return (self.empty, *self.chains, *self.loops, *self.adds, *self.wide, self.branch)

    def costs(self, keep: set[int] | None = None) -> dict[str, Any] | None:
        """The fixed costs from the samples of rounds ``keep`` (None: too few samples)."""
        st = self.empty.stats(keep)
        if st is None:
            return None
        out: dict[str, Any] = {"invoke": st.to_json()}
        cs = [c.stats(keep) for c in self.chains]
        if cs and all(c is not None for c in cs):
            out["delegate_node"] = fit_intercept(NODE_CHAIN, cs).to_json()  # type: ignore[arg-type]
        ls = [x.stats(keep) for x in self.loops]
        as_ = [x.stats(keep) for x in self.adds]
        bs = self.branch.stats(keep)
        if all(x is not None for x in (*ls, *as_, bs)):
            out["loop"] = fit_intercept(LOOP_TRIPS, ls).to_json()  # type: ignore[arg-type]
            out["loop_iteration"] = fit_slope(LOOP_TRIPS, ls).to_json()  # type: ignore[arg-type]
            out["int_op"] = fit_slope(LOOP_TRIPS, as_).to_json()  # type: ignore[arg-type]
            out["op_chain"] = fit_intercept(LOOP_TRIPS, as_).to_json()  # type: ignore[arg-type]
            out["branch"] = bs.to_json()  # type: ignore[union-attr]
        ws = [x.stats(keep) for x in self.wide]
        if ws and all(x is not None for x in ws):
            out["loop_wide"] = fit_intercept(WIDE_TRIPS, ws).to_json()  # type: ignore[arg-type]
        return out


def median_costs(moments: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each fixed cost's statistics, the median over the moments that measured it."""
    kinds = sorted({k for m in moments for k in m})
    return {k: median_stats([Stats(**m[k]) for m in moments if k in m]).to_json() for k in kinds}


# ---------------------------------------------------------------------------- measuring


def host_info() -> dict[str, Any]:
    """CPU model, cores, memory, runtime version: what a predictor is valid for."""
    try:
        litert = version("ai-edge-litert")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        litert = "unknown"
    simd = ("avx", "amx", "fma", "asimd")
    flags = " ".join(sorted(x for x in cpu_flags() or () if x.startswith(simd)))
    return {
        "description": host_description(),
        "machine": platform.machine(),
        "cores": os.cpu_count() or 1,
        # a core's second-level cache, by which the fit counts bytes beyond it (basis_matrix)
        "l2_bytes": cache_bytes().get(2, 0),
        "simd": flags,
        "litert": litert,
        "python": platform.python_version(),
    }


def load_now() -> float:
    """The 1-minute load average (0 where unavailable)."""
    try:
        return float(os.getloadavg()[0])
    except OSError:
        return 0.0


def measure(
    cfg: MeasureConfig,
    *,
    progress: Progress | None = None,
    weights_for: Callable[[Measurements], dict[str, float]] | None = None,
    deadline: float | None = None,
    check: Callable[[Measurements], None] | None = None,
) -> Measurements:
    """Measure chains until the budget is used (see the module docstring).

    Parameters
    ----------
    cfg
        Configurations, budget, seed and sampling knobs.
    progress
        Called as ``progress(fraction of the budget used, label)``.
    weights_for
        Class weights for the next batch from the measurements so far (adaptive sampling);
        None keeps the defaults.
    deadline
        ``time.monotonic()`` value at which to stop (overrides ``cfg.budget_s``).
    check
        Called with the measurements after every batch; whatever it raises stops the run
        (e.g. :func:`edgepart.profiling.machine_state.steady_check`).

    Raises
    ------
    UsageError
        On a bad configuration.
    """
    if not cfg.configs:
        raise UsageError("calibrate: no configuration to measure")
    for ex, th in cfg.configs:
        if ex not in ("xnnpack", "builtin"):
            raise UsageError(f"calibrate: executor {ex!r} cannot run here; use xnnpack or builtin")
        if th < 1:
            raise UsageError(f"calibrate: {th} threads; need at least 1")
    t_start = time.monotonic()
    end = deadline if deadline is not None else t_start + cfg.budget_s
    rng = np.random.default_rng([cfg.seed, 7])
    meas = Measurements(host=host_info(), configs=list(cfg.configs), fixed={}, seed=cfg.seed)
    if any(ex == "xnnpack" for ex, _ in cfg.configs):
        # the rows of XNNPACK's GEMM tile here, per data type: the fit counts GEMM kernels'
        # MACs in whole tiles of rows (edgepart.profiling.gemm_tiles); 3 s. The float tile
        # alone is also kept as `gemm_row_tile` (files before the per-type probe have only it)
        tiles, times = measure_row_tiles()
        meas.host["gemm_row_tile"] = tiles[""]
        meas.host["gemm_row_tiles"] = tiles
        meas.host["gemm_row_tile_s"] = {
            suffix: {str(r): float(v) for r, v in sorted(t.items())} for suffix, t in times.items()
        }
    if any(ex == "xnnpack" and th > 1 for ex, th in cfg.configs):
        # the widest one-row GEMM that runs as one task (never wakes the pool), per data type:
        # the multi-thread fit and predictions price such kernels as on one thread; 3 s
        widths, wtimes = measure_task_widths()
        meas.host["gemm_task_outputs"] = widths
        meas.host["gemm_task_s"] = wtimes
    meas.budget_s = cfg.budget_s
    # fixed costs: a first moment of FIXED_START_ROUNDS rounds, then one every FIXED_EVERY
    # batches, beside the chains; each kind's statistics are the median over the moments
    fixed = {config_name(ex, th): FixedSamplers(ex, th) for ex, th in cfg.configs}
    moments: dict[str, list[dict[str, Any]]] = {name: [] for name in fixed}
    for r in range(FIXED_START_ROUNDS):
        for fs in fixed.values():
            for fsmp in fs.samplers:
                fsmp.sample(r)
    for name, fs in fixed.items():
        first = fs.costs()
        if first is None:  # pragma: no cover - FIXED_START_ROUNDS >= 3 samples each
            raise PredictorError(f"{name}: the fixed-cost models gave no samples")
        moments[name].append(first)
    label = FIXED_START_ROUNDS  # round labels of the fixed-cost samplers, unique over the run
    canary_bytes = canary_model()
    ex0, th0 = cfg.configs[0]
    canary = prepare_sampler(canary_bytes, ex0, th0, cfg.sample_s)
    meas.host["clocks"] = {
        config_name(ex, th): ("thread cpu time" if th == 1 else "wall") for ex, th in cfg.configs
    }
    execs = sorted({ex for ex, _ in cfg.configs})
    weights: dict[str, float] | None = None
    b = 0
    last_t = time.monotonic()
    per_chain = 0.5  # seconds per chain, refined as batches complete
    while True:
        now = time.monotonic()
        if now + per_chain * cfg.batch * 0.5 > end:
            break
        if cfg.max_chains and len(meas.chains) >= cfg.max_chains:
            break
        if cfg.adaptive and weights_for is not None and b >= 2 and (b <= 8 or b % 8 == 0):
            weights = weights_for(meas)  # often early, then every 8 batches (it costs a fit)
        specs = draw_specs(rng, cfg.batch, weights=weights)
        batch_load = load_now()
        prepared: list[tuple[ChainSpec, Any, bytes, dict[str, Sampler], dict[str, Any]]] = []
        for spec in specs:
            try:
                model = build_chain(spec)
                content = write_model(model)
            except (EdgepartError, ValueError, KeyError) as err:  # pragma: no cover - sampler bug
                meas.batches.append({"batch": b, "error": f"build {spec.seed}: {err}"})
                continue
            samplers: dict[str, Sampler] = {}
            info: dict[str, Any] = {}
            for ex, th in cfg.configs:
                try:
                    samplers[config_name(ex, th)] = prepare_sampler(content, ex, th, cfg.sample_s)
                except (EdgepartError, RuntimeError, ValueError) as err:
                    info[config_name(ex, th)] = str(err)[:200]
            prepared.append((spec, model, content, samplers, info))
            if time.monotonic() > end:
                break
        # sample round-robin, in a fresh random order each round; the canary opens each round
        allt = [
            (ci, name, s) for ci, (_, _, _, ss, _) in enumerate(prepared) for name, s in ss.items()
        ]
        base = -1  # this batch's round r is round base + r of the fixed-cost samplers
        if b % FIXED_EVERY == 0:
            base, label = label, label + cfg.rounds
            allt += [(-1, name, s) for name, fs in fixed.items() for s in fs.samplers]
        canary_vals: list[float] = []
        canary_cpu: list[float] = []
        n_rounds = cfg.rounds if any(not t[2].cpu_clock for t in allt) else cfg.cpu_rounds
        for r in range(n_rounds):
            canary.sample(r)
            canary_vals.append(canary.wall[-1])
            canary_cpu.append(canary.cpu[-1])
            for j in rng.permutation(len(allt)).tolist():
                ci, _, smp = allt[j]
                if r < cfg.cpu_rounds or not smp.cpu_clock:
                    smp.sample(r if ci >= 0 else base + r)
            if time.monotonic() > end and r >= 2:
                break  # the budget is spent: keep the rounds sampled so far
        best = canary_reference(canary.wall)
        keep = {r for r, v in enumerate(canary_vals) if v <= cfg.canary_limit * best}
        if base >= 0:
            for name, fs in fixed.items():
                # the canary filter for wall time only, as for the chains
                rounds = range(len(canary_vals)) if fs.empty.cpu_clock else sorted(keep)
                got = fs.costs({base + r for r in rounds})
                if got is not None:
                    moments[name].append(got)
        for spec, model, content, samplers, info in prepared:
            stats, wall = {}, {}
            for ex, th in cfg.configs:
                name = config_name(ex, th)
                s = samplers.get(name)
                # the canary filter matters for wall time; CPU time ignores preemption already
                stats[name] = s.stats(None if s.cpu_clock else keep) if s is not None else None
                wall[name] = s.stats(keep, wall=True) if s is not None else None
            kernels: dict[str, Kernels] = {}
            parts: dict[str, int] = {}
            note = "; ".join(f"{k}: {v}" for k, v in info.items())
            for ex in execs:
                name, th = next((config_name(e, t), t) for e, t in cfg.configs if e == ex)
                s = samplers.get(name)
                try:
                    if ex == "xnnpack" and s is not None:
                        owner, nodes = real_owner(s.it, model.main.num_ops, content, th)
                        kernels[ex] = decompose(
                            model, ex, delegated=owner, partitions={"xnnpack": nodes}
                        )
                        parts[ex] = nodes
                    else:
                        kernels[ex] = decompose(model, ex)
                        parts[ex] = 0
                except (EdgepartError, ValueError, KeyError, IndexError) as err:
                    note += f"; decompose {ex}: {err}"
            meas.chains.append(
                ChainRecord(spec, stats, parts, kernels, b, batch_load, note.strip("; "), wall)
            )
        meas.batches.append(
            {
                "batch": b,
                "chains": len(prepared),
                "load_start": batch_load,
                "load_end": load_now(),
                "canary_best_s": best,
                "canary_rounds_kept": len(keep),
                # JSON has no infinity: None when every round is kept
                "canary_limit": cfg.canary_limit if math.isfinite(cfg.canary_limit) else None,
                "canary_wall_s": [float(v) for v in canary_vals],
                "canary_cpu_s": [float(v) for v in canary_cpu],
                "rounds": cfg.rounds,
                "cpu_rounds": cfg.cpu_rounds,
            }
        )
        del prepared, allt
        if check is not None:
            check(meas)
        b += 1
        now = time.monotonic()
        per_chain = max((now - last_t) / max(cfg.batch, 1), 0.05)
        last_t = now
        if progress:
            frac = min((now - t_start) / max(end - t_start, 1e-9), 1.0)
            progress(frac, f"{len(meas.chains)} chains, load {load_now():.1f}")
    meas.fixed = {name: median_costs(ms) for name, ms in moments.items()}
    meas.fixed_moments = moments
    meas.elapsed_s = time.monotonic() - t_start
    return meas


def measured_configs(meas: Measurements) -> list[str]:
    return [config_name(ex, th) for ex, th in meas.configs]


def statistic_of(stats: Stats, statistic: str) -> float:
    return float({"p10": stats.p10_s, "median": stats.median_s, "min": stats.min_s}[statistic])


def chains_for(
    meas: Measurements, config: str, statistic: str = "p10"
) -> list[tuple[ChainRecord, float]]:
    """Chains with a measurement under ``config`` and kernels for its executor."""
    ex = config.rsplit("_", 1)[0]
    out = []
    for c in meas.chains:
        st = c.stats.get(config)
        if st is None or ex not in c.kernels:
            continue
        out.append((c, statistic_of(st, statistic)))
    return out


def summarize_load(meas: Measurements) -> dict[str, float]:
    loads = [b.get("load_start", 0.0) for b in meas.batches if "load_start" in b]
    return {
        "min": float(min(loads)) if loads else 0.0,
        "median": float(np.median(loads)) if loads else 0.0,
        "max": float(max(loads)) if loads else 0.0,
    }
