"""The timing loop: how edgepart measures one model with the real LiteRT interpreter.

:func:`time_model` does, in order:

1. Build ``ai_edge_litert.interpreter.Interpreter(model_content=..., num_threads=N,
   experimental_op_resolver_type=R)`` with ``R`` from the executor: ``xnnpack`` = ``AUTO`` (the
   default XNNPACK delegate applies), ``builtin`` = ``BUILTIN_WITHOUT_DEFAULT_DELEGATES``,
   ``reference`` = ``BUILTIN_REF``; then ``allocate_tensors()``.
2. Set every input once to seeded random data of its dtype and shape (inputs are not re-set
   between invocations, so the loop times ``invoke()`` alone).
3. Warm up: ``invoke()`` ``warmup`` times (XNNPACK packs weights on the first call, caches
   and branch predictors fill); the last warm-up times one invocation, ``t1``.
4. Batch size ``b = ceil(batch_s / t1)`` so one sample spans about ``batch_s`` (default 1 ms):
   a ``perf_counter_ns`` pair then costs well under 1% of a sample, even for 1 µs ops.
5. Repeats: as many samples as fit in ``budget_s`` (default 0.04 s), clamped to
   ``[min_repeats, max_repeats]`` (default 5..200); each sample is the mean of ``b``
   back-to-back ``invoke()`` calls.
6. Statistics over samples: median, p10, p90, min (:class:`~edgepart.cost.table.Stats`).

When many items are measured (the profiler's ops, fused groups, the whole model and the
overhead model), steps 1 to 4 run for all of them first and step 5 then runs *round-robin*
(:func:`run_rounds`): one sample of each item per round, so interference from other processes
on a shared machine spreads evenly instead of inflating whichever item it happened to hit.

Every figure includes the Python-to-C++ call and the interpreter's per-invocation work. That
fixed part is measured the same way on a minimal model (:func:`overhead_model`) so a cost model
can pay it once per invocation rather than once per op; so is the fixed part of one delegate node,
from chains of delegated ops of several lengths (:func:`delegate_node_stats`).
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from edgepart.cost.stats import fit_intercept
from edgepart.cost.table import Stats, stats_from_samples
from edgepart.devices.host_executors import EXECUTOR_NAMES, HOST_EXECUTORS
from edgepart.errors import RuntimeBackendError, UsageError
from edgepart.ir.builder import ModelBuilder, SubgraphBuilder
from edgepart.ir.dtypes import DType
from edgepart.tflite.writer import write_model

__all__ = [
    "LOOP_TRIPS",
    "NODE_CHAIN",
    "WIDE_BODY_OPS",
    "WIDE_TRIPS",
    "Timer",
    "TimingConfig",
    "branch_model",
    "delegate_node_stats",
    "fit_intercept",
    "int_op_chain",
    "invoke_overhead",
    "loop_model",
    "make_interpreter",
    "node_timers",
    "overhead_timer",
    "prepare",
    "run_rounds",
    "time_model",
]


@dataclass(frozen=True)
class TimingConfig:
    """Knobs of the timing loop (see the module docstring).

    ``clock``: ``auto`` times single-threaded interpreters on the calling thread's CPU time
    (their latency minus the time the process was preempted: on a shared machine this
    estimates the undisturbed latency far better) and others on wall time; ``wall`` and
    ``cpu`` force one.
    """

    warmup: int = 3
    min_repeats: int = 5
    max_repeats: int = 200
    budget_s: float = 0.04
    batch_s: float = 1e-3
    seed: int = 0
    clock: str = "auto"


def _resolver(executor: str) -> Any:
    if executor not in HOST_EXECUTORS:
        raise UsageError(f"unknown executor {executor!r}; choose one of {list(EXECUTOR_NAMES)}")
    return OpResolverType[HOST_EXECUTORS[executor].resolver]


def make_interpreter(
    content: bytes,
    executor: str,
    threads: int,
    *,
    preserve_all_tensors: bool = False,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> Any:
    """A ready LiteRT interpreter (tensors allocated) for a model's bytes; inputs named in
    ``input_shapes`` are resized first (inputs with dynamic dimensions)."""
    try:
        it = Interpreter(
            model_content=content,
            num_threads=threads,
            experimental_op_resolver_type=_resolver(executor),
            experimental_preserve_all_tensors=preserve_all_tensors,
        )
        if input_shapes:
            for d in it.get_input_details():
                want = input_shapes.get(str(d["name"]))
                if want is not None:
                    it.resize_tensor_input(d["index"], [int(v) for v in want], strict=False)
        it.allocate_tensors()
    except (RuntimeError, ValueError) as err:
        msg = str(err).strip().splitlines()
        raise RuntimeBackendError(
            f"LiteRT cannot prepare the model with the {executor} executor: "
            f"{msg[0] if msg else type(err).__name__}"
        ) from None
    return it


def fill_inputs(it: Any, seed: int, values: Mapping[str, np.ndarray] | None = None) -> None:
    """Set every input to seeded random data of its dtype (values in a benign range).

    Each input's generator is seeded from ``seed`` and the tensor's *name*, so a tensor gets
    the same values in the whole model and in any extracted piece that takes it as an input
    (a loop's trip count, say, stays the same). ``values`` maps input names to the exact data
    to use (the profiler passes the values a tensor has in a real run of the whole model, so
    shape tensors, indices and loop counts of extracted pieces are the real ones).
    """
    for d in it.get_input_details():
        rng = np.random.default_rng([seed, zlib.crc32(str(d["name"]).encode())])
        shape = tuple(int(s) for s in d["shape"])
        dt = np.dtype(d["dtype"])
        given = None if values is None else values.get(str(d["name"]))
        if given is not None and given.shape == shape and given.dtype == dt:
            x = given
        elif dt.kind == "f":
            x = rng.uniform(-1.0, 1.0, size=shape).astype(dt)
        elif dt.kind == "b":
            x = rng.integers(0, 2, size=shape).astype(dt)
        elif dt.kind in "iu":
            hi = 8 if dt.itemsize > 1 else 100
            lo = 0 if dt.kind == "u" or dt.itemsize > 1 else -100
            x = rng.integers(lo, hi, size=shape).astype(dt)
        else:
            x = np.zeros(shape, dtype=dt)
        it.set_tensor(d["index"], x)


class Timer:
    """One prepared interpreter being timed: warm-up, batch size and samples so far.

    ``cpu``: samples are the calling thread's CPU time (see :class:`TimingConfig`).
    """

    def __init__(self, it: Any, cfg: TimingConfig, cpu: bool = False) -> None:
        self.invoke = it.invoke
        self.cfg = cfg
        self.cpu = cpu
        self.samples: list[float] = []
        self.delegate_nodes = delegate_nodes(it)
        clock = time.perf_counter_ns
        t1 = 0
        try:
            for _ in range(max(cfg.warmup, 1)):
                t0 = clock()
                self.invoke()
                t1 = clock() - t0
        except (RuntimeError, ValueError) as err:
            msg = str(err).strip().splitlines()
            raise RuntimeBackendError(f"LiteRT invoke failed: {msg[0] if msg else err}") from None
        per = max(t1, 50) * 1e-9
        self.batch = max(1, math.ceil(cfg.batch_s / per))
        self.repeats = int(
            min(max(cfg.budget_s / (per * self.batch), cfg.min_repeats), cfg.max_repeats)
        )

    @property
    def done(self) -> bool:
        return len(self.samples) >= self.repeats

    def block(self, samples: int) -> None:
        """One untimed invocation (re-warms caches others evicted), then ``samples`` samples."""
        self.invoke()
        for _ in range(samples):
            self.sample()
        self.repeats = max(self.repeats, len(self.samples))

    def sample(self) -> None:
        """Take one sample: the mean time of ``batch`` back-to-back invocations."""
        invoke, n = self.invoke, self.batch
        clock = time.thread_time_ns if self.cpu else time.perf_counter_ns
        t0 = clock()
        for _ in range(n):
            invoke()
        self.samples.append((clock() - t0) * 1e-9 / n)

    def stats(self, since: int = 0) -> Stats:
        """Statistics of the samples taken so far (from sample ``since`` on)."""
        return stats_from_samples(self.samples[since:], self.cfg.warmup, self.batch)

    def more(self, repeats: int) -> int:
        """Ask for ``repeats`` further samples; returns where they will start."""
        start = len(self.samples)
        self.repeats = start + repeats
        return start


def prepare(
    content: bytes,
    executor: str,
    threads: int,
    cfg: TimingConfig,
    values: Mapping[str, np.ndarray] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> Timer:
    """Steps 1 to 4 of the loop: interpreter, inputs, warm-up, batch size and repeat count."""
    it = make_interpreter(content, executor, threads, input_shapes=input_shapes)
    fill_inputs(it, cfg.seed, values)
    return Timer(it, cfg, cpu=uses_cpu_clock(cfg, threads))


def uses_cpu_clock(cfg: TimingConfig, threads: int) -> bool:
    """Whether :class:`Timer` samples of ``threads`` threads are CPU time (``cfg.clock``)."""
    if cfg.clock not in ("auto", "wall", "cpu"):
        raise UsageError(f"unknown clock {cfg.clock!r}; choose auto, wall or cpu")
    return cfg.clock == "cpu" or (cfg.clock == "auto" and threads == 1)


def delegate_nodes(it: Any) -> int:
    """How many delegate kernels (e.g. XNNPACK partitions) the interpreter's graph has."""
    try:
        ops = it._get_ops_details()  # the interpreter's node list, delegate nodes included
    except (AttributeError, RuntimeError, ValueError):
        return 0
    return sum(1 for d in ops if d.get("op_name") == "DELEGATE")


def run_rounds(
    timers: Sequence[Timer],
    on_round: Callable[[int, int], None] | None = None,
    max_rounds: int | None = None,
) -> None:
    """Sample the timers round-robin until each has its repeats (or ``max_rounds`` rounds).

    Interleaving spreads any interference from other processes evenly over all items, instead
    of penalizing whichever item happened to be measured while the machine was busy.
    """
    active = [t for t in timers if not t.done]
    rounds = max((t.repeats - len(t.samples) for t in active), default=0)
    r = 0
    while active and (max_rounds is None or r < max_rounds):
        for t in active:
            t.sample()
        active = [t for t in active if not t.done]
        r += 1
        if on_round is not None:
            on_round(r, rounds)


def time_interpreter(it: Any, cfg: TimingConfig) -> Stats:
    """Run the timing loop (steps 3 to 6 of the module docstring) on a prepared interpreter."""
    t = Timer(it, cfg)
    run_rounds([t])
    return t.stats()


def time_model(
    content: bytes, executor: str, threads: int, cfg: TimingConfig | None = None
) -> Stats:
    """Time one model's ``invoke()`` with the documented loop (module docstring)."""
    cfg = cfg or TimingConfig()
    t = prepare(content, executor, threads, cfg)
    run_rounds([t])
    return t.stats()


def reference_values(
    content: bytes,
    names: Sequence[str],
    seed: int,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> dict[str, np.ndarray]:
    """The values tensors take in one run of a whole model on the seeded inputs.

    Runs the builtin kernels with every intermediate tensor preserved and returns copies of the
    named tensors (those the run produced); an empty dict if the model cannot run that way.
    """
    try:
        it = make_interpreter(
            content, "builtin", 1, preserve_all_tensors=True, input_shapes=input_shapes
        )
        fill_inputs(it, seed)
        it.invoke()
    except (RuntimeBackendError, RuntimeError, ValueError):
        return {}
    wanted = set(names)
    out: dict[str, np.ndarray] = {}
    for d in it.get_tensor_details():
        name = str(d["name"])
        if np.dtype(d["dtype"]).kind not in "fiub":  # resources, strings: not safe to read
            continue
        if name in wanted and name not in out:
            try:
                out[name] = np.array(it.get_tensor(d["index"]))
            except ValueError:  # tensors without data (resources, freed buffers)
                continue
    return out


def overhead_model(delegate_node: bool = False, ops: int = 1) -> bytes:
    """A minimal model whose invocation measures fixed costs.

    Without ``delegate_node``: a model without ops (its input is its output), the cost of an
    invocation itself. With it: a chain of ``ops`` one-element ``ADD`` ops, which XNNPACK takes
    as one delegate partition. Chains of several lengths let :func:`delegate_node_stats`
    separate what the delegate node costs (entering the delegate kernel and running its
    runtime, paid once per partition) from what each ``ADD`` adds inside it.
    """
    mb = ModelBuilder()
    g = mb.subgraph("main")
    a = g.input("a", DType.FLOAT32, (1,))
    if delegate_node:
        x = a
        for k in range(max(ops, 1)):
            y = g.tensor(f"y{k}", DType.FLOAT32, (1,))
            g.op("ADD", [x, x], [y])
            x = y
        g.output(x)
        mb.add_signature("serving_default", 0, [("a", a)], [("y", x)])
    else:
        g.output(a)
        mb.add_signature("serving_default", 0, [("a", a)], [("a", a)])
    return write_model(mb.build())


LOOP_TRIPS = (1, 2, 4, 8)
# A loop whose body holds more ops, at a few trip counts: LiteRT's WHILE allocates its
# condition's and body's tensors at every invocation and releases them after it (``Eval`` in
# ``kernels/while.cc``: ``AllocateTensors`` before the loop, ``ReleaseMemory`` after, unless
# the interpreter preserves all tensors), and the released subgraphs are prepared again, op by
# op. Its intercept above the one-op loop's is that cost for the extra ops.
WIDE_BODY_OPS = 9
WIDE_TRIPS = (1, 2, 4)


def loop_model(trips: int, body_ops: int = 1) -> bytes:
    """A ``WHILE`` loop of ``trips`` iterations whose condition is one ``LESS`` of an int32
    counter and a constant and whose body is one ``ADD`` to it (and ``body_ops - 1`` more
    ``ADD``s of zero): each iteration invokes two subgraphs. Loops of several lengths give a
    loop's entry cost and an iteration's; bodies of several sizes what the entry costs per op
    of the subgraphs it calls."""
    mb, g, a, x = _counter_model()
    y = g.tensor("y", DType.INT32, (1,))
    g.op("WHILE", [x], [y], options={"cond_subgraph_index": 1, "body_subgraph_index": 2})
    cond = mb.subgraph("cond")
    ci = cond.input("i", DType.INT32, (1,))
    bound = cond.constant("bound", np.array([trips], np.int32))
    ok = cond.tensor("ok", DType.BOOL, (1,))
    cond.op("LESS", [ci, bound], [ok])
    cond.output(ok)
    _increment_subgraph(mb, "body", extra=body_ops - 1)
    return _counter_output(mb, g, a, y)


def branch_model() -> bytes:
    """An ``IF`` on a constant whose branches are one int32 ``ADD`` each: one branch
    invocation."""
    mb, g, a, x = _counter_model()
    y = g.tensor("y", DType.INT32, (1,))
    flag = g.constant("flag", np.array([True], np.bool_))
    g.op("IF", [flag, x], [y], options={"then_subgraph_index": 1, "else_subgraph_index": 2})
    _increment_subgraph(mb, "then")
    _increment_subgraph(mb, "else")
    return _counter_output(mb, g, a, y)


def int_op_chain(ops: int) -> bytes:
    """A chain of ``ops`` int32 ``ADD`` ops, the op the loop and branch subgraphs run (builtin
    kernels in every configuration: XNNPACK takes no int32 arithmetic). Chains of several
    lengths give what one such op costs, to subtract from the control-flow models."""
    mb, g, a, x = _counter_model()
    one = g.constant("one", np.array([1], np.int32))
    for k in range(ops):
        y = g.tensor(f"y{k}", DType.INT32, (1,))
        g.op("ADD", [x, one], [y])
        x = y
    return _counter_output(mb, g, a, x)


def _counter_model() -> tuple[ModelBuilder, SubgraphBuilder, int, int]:
    """A main graph with an unread float input (as in :func:`overhead_model`) and an int32
    counter starting at 0 whatever the input."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    a = g.input("a", DType.FLOAT32, (1,))
    return mb, g, a, g.constant("zero", np.array([0], np.int32))


def _increment_subgraph(mb: ModelBuilder, name: str, extra: int = 0) -> None:
    """A subgraph adding 1 to its int32 input (then 0, ``extra`` times)."""
    sg = mb.subgraph(name)
    i = sg.input("i", DType.INT32, (1,))
    one = sg.constant("one", np.array([1], np.int32))
    out = sg.tensor("next", DType.INT32, (1,))
    sg.op("ADD", [i, one], [out])
    if extra > 0:
        zero = sg.constant("zero", np.array([0], np.int32))
        for k in range(extra):
            nxt = sg.tensor(f"next{k}", DType.INT32, (1,))
            sg.op("ADD", [out, zero], [nxt])
            out = nxt
    sg.output(out)


def _counter_output(mb: ModelBuilder, g: SubgraphBuilder, a: int, y: int) -> bytes:
    g.output(a, y)
    mb.add_signature("serving_default", 0, [("a", a)], [("a", a), ("y", y)])
    return write_model(mb.build())


def overhead_timer(
    executor: str,
    threads: int,
    cfg: TimingConfig | None = None,
    *,
    delegate_node: bool = False,
    ops: int = 1,
) -> Timer:
    """A prepared :class:`Timer` of :func:`overhead_model` (at least 20 samples)."""
    cfg = cfg or TimingConfig()
    heavier = TimingConfig(
        cfg.warmup,
        max(cfg.min_repeats, 20),
        cfg.max_repeats,
        max(cfg.budget_s, 0.1),
        cfg.batch_s,
        cfg.seed,
        cfg.clock,
    )
    return prepare(overhead_model(delegate_node, ops), executor, threads, heavier)


NODE_CHAIN = (1, 2, 4, 8)  # chain lengths whose timings give the delegate node's fixed cost


def node_timers(executor: str, threads: int, cfg: TimingConfig | None = None) -> list[Timer]:
    """Timers of delegated ``ADD`` chains of :data:`NODE_CHAIN` lengths, [] if not delegated.

    The executor must take every chain as exactly one delegate node, else nothing is returned
    (builtin and reference kernels do not delegate).
    """
    out = []
    for k in NODE_CHAIN:
        t = overhead_timer(executor, threads, cfg, delegate_node=True, ops=k)
        if t.delegate_nodes != 1:
            return []
        out.append(t)
    return out


def delegate_node_stats(timers: Sequence[Timer]) -> Stats:
    """What an invocation of a delegate node holding no ops costs: each statistic of the chain
    timers' samples fitted linearly against chain length, at length 0 (see :func:`fit_intercept`).

    A one-op model would count the op's own time as part of the node, and every op measured
    inside a delegate would then be charged one ``ADD`` too little.
    """
    return fit_intercept(NODE_CHAIN[: len(timers)], [t.stats() for t in timers])


def invoke_overhead(executor: str, threads: int, cfg: TimingConfig | None = None) -> Stats:
    """Per-invocation overhead of an executor: the timing of :func:`overhead_model`."""
    t = overhead_timer(executor, threads, cfg)
    run_rounds([t])
    return t.stats()
