"""Host profiler: measure every op (or fused group) of a model on this machine with LiteRT.

Steps (the timing loop itself is documented in :mod:`edgepart.profiling.timing`):

1. Split the main subgraph into timing units (:mod:`edgepart.cost.units`): single ops, ops
   sharing state, and ops with the once-only ``DEQUANTIZE``/``DENSIFY`` of their weights.
2. For each distinct unit signature, extract the unit into a standalone model
   (:func:`edgepart.ir.extract.extract`), write it and prepare a LiteRT interpreter; also the
   per-invocation overhead model and the whole model.
   Extracted units get the values their input tensors have in a real run of the whole model
   (:func:`~edgepart.profiling.timing.reference_values`), so shapes, indices and trip counts are
   real.
3. Time the op models round-robin (interleaved), so machine noise hits them alike; the whole
   model is timed in six blocks of its own spread over the op rounds. So are units whose
   models outgrow a core's second-level cache when the whole model fits the last level
   (sizes from Linux's sysfs): between round-robin samples the other units' models evict
   their weights, which stay cached from one invocation of the whole model to the next.
4. Fusion (executors that fuse, see :mod:`edgepart.cost.fusion`): candidate pairs are timed in
   the same rounds as their members; keep the pairs nn-Meter's test calls fused, and try to
   grow them into chains.
5. Return a :class:`~edgepart.cost.table.LatencyTable` for one processor.

An entry's ``value_s`` is the chosen statistic minus the same statistic of the per-invocation
overhead (a model without ops) and, for units the executor ran in a delegate, minus one
delegate node per delegate kernel of the unit's model (chains of 1, 2, 4 and 8 delegated
one-element ``ADD`` ops, extrapolated to length 0, minus the empty model): what the op adds
inside a larger invocation. A model's predicted latency is the overhead once, one delegate
node per delegate partition, plus the sum of its units' values. The default statistic is the
10th percentile of the samples: interference from other processes only ever adds time, so on
a shared machine a low percentile estimates the undisturbed latency far more stably than the
median (which is still stored, with p90 and min, in every entry).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version

from edgepart.cost import context as context_mod
from edgepart.cost import fusion as fusion_mod
from edgepart.cost.hardware import Hardware, ProcessorSpec
from edgepart.cost.model import CostModel
from edgepart.cost.table import LatencyTable, ProcessorTable, Stats
from edgepart.cost.units import Unit, UnitResult, timing_units
from edgepart.errors import EdgepartError, UsageError
from edgepart.ir.graph import Model
from edgepart.profiling._session import (
    Session,
    activation_names,
    cache_bytes,
    host_description,
    stat_value,
)
from edgepart.profiling.segments import MIN_UNITS, Segment, plan_segments
from edgepart.profiling.shape_resolution import needs_resolution, resolved_subgraph
from edgepart.profiling.timing import (
    TimingConfig,
    delegate_node_stats,
    node_timers,
    overhead_timer,
    prepare,
    reference_values,
    run_rounds,
    uses_cpu_clock,
)
from edgepart.tflite.writer import write_model

__all__ = ["ProfileConfig", "ProfileResult", "UnitResult", "host_description", "profile_model"]

Progress = Callable[[int, int, str], None]
log = logging.getLogger(__name__)
STATISTICS = ("median", "p10", "min")
_WHOLE_MIN_SAMPLES = 30
_WHOLE_BLOCKS = 6


@dataclass(frozen=True)
class ProfileConfig:
    """What to measure and how (see :mod:`edgepart.profiling.timing` for the loop's knobs)."""

    executor: str = "xnnpack"
    threads: int = 1
    timing: TimingConfig = field(default_factory=TimingConfig)
    processor: str | None = None
    statistic: str = "p10"
    fusion: bool = True
    # time each op after its predecessor (edgepart.cost.context); None: whenever ``fusion`` is
    # on, so that ``fusion=False`` (the CLI's --no-fusion) still gives single units only
    context: bool | None = None
    whole_model: bool = True
    # time contiguous segments of the model too (edgepart.profiling.segments): in-context sums
    # that the ops' standalone values are scaled to; None: when the model has enough units
    segments: bool | None = None

    @property
    def with_context(self) -> bool:
        return self.fusion if self.context is None else self.context

    @property
    def processor_name(self) -> str:
        return self.processor or f"host_{self.executor}_{self.threads}t"


@dataclass
class ProfileResult:
    """Everything one profiling run measured."""

    model_name: str
    processor: str
    table: LatencyTable
    units: list[UnitResult]
    overhead: Stats
    model_stats: Stats | None
    elapsed_s: float
    timed: int
    statistic: str = "p10"
    fused: list[tuple[int, ...]] = field(default_factory=list)
    delegate_nodes: int = 0  # delegate partitions of the whole model (XNNPACK)
    predicted: float = 0.0
    model: Model | None = None  # the model profiled (its shapes resolved where they depend
    # on the inputs): what the table's signatures describe

    def value(self, stats: Stats) -> float:
        return stat_value(stats, self.statistic)

    @property
    def predicted_s(self) -> float:
        """What the table predicts for the whole model (:class:`~edgepart.cost.model.CostModel`
        over it): the invocation overhead once, one delegate node per delegate partition, plus
        the ops' and groups' values, each op's in the context of its predecessor where the
        pair was measured."""
        return self.predicted


def profile_model(
    model: Model,
    config: ProfileConfig | None = None,
    *,
    model_bytes: bytes | None = None,
    name: str | None = None,
    progress: Progress | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ProfileResult:
    """Profile ``model``'s main subgraph on this host (see the module docstring).

    Parameters
    ----------
    model
        The model to measure.
    config
        Executor, threads, timing knobs, statistic, fusion detection.
    model_bytes
        The model's file contents for the whole-model timing (written from ``model`` if None).
    name
        How the model is named in the table's ``models`` list.
    progress
        Called as ``progress(done, total, label)`` as work proceeds (the CLI draws a bar).
    input_shapes
        Shapes of inputs with dynamic dimensions. A model whose shapes depend on its inputs
        is profiled with the shapes one LiteRT run resolves
        (:mod:`edgepart.profiling.shape_resolution`), so every extracted op has its real shapes.
    """
    cfg = config or ProfileConfig()
    if cfg.statistic not in STATISTICS:
        raise UsageError(f"unknown statistic {cfg.statistic!r}; choose one of {STATISTICS}")
    t_start = time.perf_counter()
    pt = ProcessorTable(
        name=cfg.processor_name,
        device=host_description(),
        executor=cfg.executor,
        threads=cfg.threads,
        source=_source(cfg),
        statistic=cfg.statistic,
    )
    content = model_bytes if model_bytes is not None else write_model(model)
    if input_shapes or needs_resolution(model.main):
        try:
            resolved = resolved_subgraph(model, content, input_shapes, seed=cfg.timing.seed)
            model = dataclasses.replace(model, subgraphs=(resolved, *model.subgraphs[1:]))
        except EdgepartError as err:
            log.warning("shapes not resolved (%s); profiling with the stored shapes", err)
    s = Session(model, cfg, pt)
    sg = s.sg
    units = timing_units(sg)
    total = 2 * len(units) + 1  # preparing each unit, then timing (scaled to units), done
    s.values = reference_values(content, activation_names(sg), cfg.timing.seed, input_shapes)
    ovh_timer = overhead_timer(cfg.executor, cfg.threads, cfg.timing)
    # empty if the executor does not delegate: nothing to measure
    chain_timers = node_timers(cfg.executor, cfg.threads, cfg.timing)
    whole = None
    if cfg.whole_model:
        whole = prepare(content, cfg.executor, cfg.threads, cfg.timing, input_shapes=input_shapes)
    for k, u in enumerate(units):
        s.prepare(u)
        if progress:
            progress(k + 1, total, sg.op_name(u.ops[0]))
    if cfg.fusion:  # candidate pairs join the main rounds: compared under the same conditions
        for pair in fusion_mod.candidate_units(sg, units, cfg.executor):
            s.prepare(pair)
    pairs: list[tuple[Unit, Unit, Unit]] = []
    if cfg.with_context:  # each op after its predecessor (edgepart.cost.context), same rounds
        pairs = context_mod.context_units(units, context_mod.predecessors(sg, s.work.folded))
        for _, _, pair in pairs:
            s.prepare(pair)
    segs: list[Segment] = []
    if cfg.segments or (cfg.segments is None and len(units) >= MIN_UNITS):
        segs = plan_segments(model, units, s.work)
        for seg in segs:
            seg.timer = s.prepare_ops(seg.ops, seg.helpers)
        segs = [seg for seg in segs if seg.timer is not None]
    # units too large for a core's cache are timed warm, in blocks like the whole model, when
    # the whole model fits the last-level cache: there its weights stay cached from one
    # invocation to the next, while between round-robin samples the other units' models
    # evict them (birdnet_v24_mdata_fp16's 27 MB fully connected layer, builtin kernels:
    # 1.6 ms in the rounds, 1.0 ms in blocks, the whole model 1.0 ms)
    caches = cache_bytes()
    warm = {
        id(s.timers[k]) for k in s.warm_keys(lambda size: _times_warm(size, len(content), caches))
    }
    op_timers = [ovh_timer, *chain_timers, *s.timers.values()]
    big = [t for t in op_timers if id(t) in warm]
    op_timers = [
        t for t in op_timers if all(t is not seg.timer for seg in segs) and id(t) not in warm
    ]
    all_rounds = max((t.repeats for t in op_timers), default=1)
    done_rounds = 0

    def on_round(_r: int, _n: int) -> None:
        nonlocal done_rounds
        done_rounds += 1
        if progress:
            frac = min(done_rounds / max(all_rounds, 1), 1.0)
            progress(len(units) + int(frac * len(units)), total, "timing")

    blocks = [b for b in ([whole] if whole is not None else []) + [g.timer for g in segs] if b]
    blocks += big
    if not blocks:
        run_rounds(op_timers, on_round)
    else:
        # the whole model runs in blocks of its own between stretches of op rounds, each block
        # after one untimed invocation: interleaved sample by sample with the op models, their
        # copies of the weights would evict the whole model's from cache, which a model running
        # on its own does not suffer; blocks spread it over the run like the ops
        # (segments likewise: each is a model of its own, timed in blocks between op rounds)
        per_block = {id(b): -(-max(b.repeats, _WHOLE_MIN_SAMPLES) // _WHOLE_BLOCKS) for b in blocks}
        rounds = max((t.repeats for t in op_timers), default=0)
        stretch = -(-rounds // (_WHOLE_BLOCKS - 1))
        for b in blocks:
            b.block(per_block[id(b)])
        for _ in range(_WHOLE_BLOCKS - 1):
            run_rounds(op_timers, on_round, max_rounds=stretch)
            for b in blocks:
                b.block(per_block[id(b)])
        run_rounds(op_timers, on_round)
    if progress:
        progress(2 * len(units), total, "fusion" if cfg.fusion else "timed")
    pt.invoke_overhead = ovh_timer.stats()
    s.overhead_s = stat_value(pt.invoke_overhead, cfg.statistic)
    if chain_timers:
        pt.delegate_overhead = delegate_node_stats(chain_timers)
        s.node_s = pt.delegate_node_s
    results = []
    for u in units:
        key = s.key(u)[0]
        results.append(s.record(u, s.timers[key].stats() if key in s.timers else None, "unit"))
    fused: list[tuple[int, ...]] = []
    if cfg.fusion:
        results, fused = fusion_mod.detect(
            sg, results, s.measure_many, s.record, executor=cfg.executor
        )
    in_group = {op for r in results if len(r.unit.ops) > 1 for op in r.unit.ops}
    for _, _, pair in pairs:
        key = s.key(pair)[0]
        old = pt.entries.get(key)
        if key not in s.timers or in_group & set(pair.ops):
            continue
        if old is not None and old.extra.get("role") == "fused":
            continue
        s.record(pair, s.timers[key].stats(), context_mod.ROLE)
    for seg in segs:
        assert seg.timer is not None
        s.record_segment(seg.ops, seg.timer)
    predicted = _predict(model, pt)
    model_stats = whole.stats() if whole else None
    if model_stats is not None:
        pt.models.append(
            {
                "name": name or model.source or "model",
                "ops": sg.num_ops,
                "stats": model_stats.to_json(),
                "delegate_nodes": whole.delegate_nodes if whole else 0,
                # a table missing ops (units that could not be timed) predicts nothing
                "predicted_s": predicted if math.isfinite(predicted) else None,
                "segments": len(segs),
            }
        )
    if progress:
        progress(total, total, "done")
    return ProfileResult(
        model_name=name or model.source or "model",
        processor=pt.name,
        table=LatencyTable({pt.name: pt}),
        units=results,
        overhead=pt.invoke_overhead,
        model_stats=model_stats,
        elapsed_s=time.perf_counter() - t_start,
        timed=len(s.timers),
        statistic=cfg.statistic,
        fused=fused,
        delegate_nodes=whole.delegate_nodes if whole else 0,
        predicted=predicted,
        model=model,
    )


def _times_warm(unit_bytes: int, model_bytes: int, caches: Mapping[int, int]) -> bool:
    """Whether a unit whose model has ``unit_bytes`` is timed in warm blocks rather than in the
    rounds: it is larger than a core's second-level cache and the whole model
    (``model_bytes``) fits the last level (``caches``: :func:`cache_bytes`; no blocks where
    the sizes are unknown)."""
    if 2 not in caches or max(caches) <= 2:
        return False
    return unit_bytes > caches[2] and model_bytes <= caches[max(caches)]


def _predict(model: Model, pt: ProcessorTable) -> float:
    """The table's prediction for the whole main subgraph, as the cost model makes it."""
    hw = Hardware("host", (ProcessorSpec("cpu", threads=pt.threads),))
    cm = CostModel(hw, LatencyTable({pt.name: pt}), table_for={"cpu": pt.name})
    return cm.costs(model.main, model).partition_latency(range(model.main.num_ops), "cpu").seconds


def _source(cfg: ProfileConfig) -> str:
    try:
        litert = version("ai-edge-litert")
    except Exception:
        litert = "unknown"
    t = cfg.timing
    clock = "thread CPU time" if uses_cpu_clock(t, cfg.threads) else "wall time"
    return (
        f"edgepart profile (ai-edge-litert {litert}; warmup {t.warmup}, repeats "
        f"{t.min_repeats}..{t.max_repeats} within {t.budget_s}s, batch ~{t.batch_s}s, "
        f"interleaved, {clock}; value = {cfg.statistic} minus invoke overhead)"
    )
