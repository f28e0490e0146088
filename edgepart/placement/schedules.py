"""Micro-batch schedules of a stage pipeline and their timeline simulator.

A pipeline of ``S`` (virtual) stages runs on ``p`` devices; stage ``j`` runs on device ``j %
p`` (``S = p`` except for the interleaved schedule, where each device holds ``v = S / p``
chunks). Every schedule is, per device, a fixed order of operations ``F(j, i)`` (forward of
micro-batch ``i`` on stage ``j``) and ``B(j, i)`` (its backward):

* ``gpipe`` (fill-drain, Huang et al. 2019): every forward, then every backward.
* ``1f1b`` (PipeDream-flush, Narayanan et al. 2021): device ``d`` runs ``p - d - 1`` warm-up
  forwards, then alternates one forward and one backward, then drains the backwards; at most
  ``p - d`` micro-batches hold activations on device ``d`` (GPipe: all ``m``).
* ``interleaved`` (interleaved 1F1B, Megatron-LM): the 1F1B order over ``v`` chunks per device
  (``m`` a multiple of ``p``); the bubble shrinks to ``(p - 1) / (v m + p - 1)``.
* ``stream`` (inference): forwards only, items in order, each stage's output queue holding at
  most ``queue_depth`` items (a stage blocks on a full queue: back-pressure).

:func:`simulate` runs the order as a list schedule: an operation starts when its device is
free and its inputs have arrived (the previous stage's forward plus the link delay between the
stages; a backward also needs the next stage's backward and its own forward). It returns the
:class:`Timeline`: every operation's start and end, per-item latency, the steady-state period,
the bubble fraction and the peak in-flight activation memory per device. Times are whatever
the stage costs are (seconds from the stage planner; the simulator adds nothing of its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from edgepart.errors import UsageError

__all__ = [
    "SCHEDULES",
    "Event",
    "Op",
    "StageCosts",
    "Timeline",
    "schedule_ops",
    "simulate",
]

SCHEDULES = ("gpipe", "1f1b", "interleaved", "stream")


@dataclass(frozen=True)
class Op:
    """One operation: ``kind`` "F" or "B" of micro-batch ``micro`` on (virtual) ``stage``."""

    kind: str
    stage: int
    micro: int


@dataclass(frozen=True)
class Event:
    """One simulated (or measured) operation on its device, with start and end (seconds)."""

    device: int
    kind: str
    stage: int
    micro: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class StageCosts:
    """Per-stage costs of one micro-batch.

    Parameters
    ----------
    forward_s
        Forward time of every (virtual) stage, pipeline order.
    backward_s
        Backward time of every stage (None: an inference pipeline, forwards only).
    comm_s
        Delay between stage ``j`` and ``j + 1`` (``len(forward_s) - 1`` values; default none):
        the link's latency plus the tensor bytes over its bandwidth, when the sending and
        receiving are not already part of the stage times.
    activation_bytes
        Bytes a micro-batch keeps on stage ``j`` from its forward until its backward ends
        (inference: until the next stage takes it); default zeros.
    devices
        Devices ``p``; stage ``j`` runs on device ``j % p`` (default: one per stage).
    """

    forward_s: tuple[float, ...]
    backward_s: tuple[float, ...] | None = None
    comm_s: tuple[float, ...] | None = None
    activation_bytes: tuple[int, ...] | None = None
    devices: int | None = None

    def __post_init__(self) -> None:
        s = len(self.forward_s)
        if s < 1:
            raise UsageError("a pipeline needs at least one stage")
        for name, v in (
            ("backward_s", self.backward_s),
            ("activation_bytes", self.activation_bytes),
        ):
            if v is not None and len(v) != s:
                raise UsageError(f"{name} has {len(v)} values; the pipeline has {s} stages")
        if self.comm_s is not None and len(self.comm_s) != s - 1:
            raise UsageError(f"comm_s has {len(self.comm_s)} values; {s} stages need {s - 1}")
        vals = [*self.forward_s, *(self.backward_s or ()), *(self.comm_s or ())]
        if any(not v >= 0 for v in vals):
            raise UsageError("stage and link times must be non-negative numbers")
        p = self.num_devices
        if p < 1 or s % p:
            raise UsageError(f"{s} stages do not spread evenly over {p} devices")

    @property
    def num_stages(self) -> int:
        return len(self.forward_s)

    @property
    def num_devices(self) -> int:
        return self.devices if self.devices is not None else len(self.forward_s)


@dataclass(frozen=True, eq=False)
class Timeline:
    """A schedule's simulated (or measured) run: events and the figures derived from them.

    ``latency_s[i]``: item ``i``'s time from its first forward's start to its last operation's
    end (the backward on stage 0, or inference: the last stage's forward). ``period_s``:
    inference, the steady-state interval between completions (the mean interval from the
    completion of item ``S - 1``, when the pipeline has filled, to the last); training, the
    step's makespan over the micro-batches.
    ``bubble_fraction``: the devices' idle share of ``p x makespan``. ``peak_in_flight[d]``:
    the most micro-batches holding activations on device ``d`` at once (summed over its
    chunks), ``peak_activation_bytes[d]`` the same in bytes.
    """

    schedule: str
    devices: int
    stages: int
    micro_batches: int
    events: tuple[Event, ...]
    makespan_s: float
    period_s: float
    latency_s: tuple[float, ...]
    bubble_fraction: float
    peak_in_flight: tuple[int, ...]
    peak_activation_bytes: tuple[int, ...]

    def order(self, device: int) -> list[tuple[str, int, int]]:
        """The operations of ``device`` as ``(kind, stage, micro)`` in start order."""
        evs = sorted((e for e in self.events if e.device == device), key=lambda e: e.start_s)
        return [(e.kind, e.stage, e.micro) for e in evs]

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready summary (no events)."""
        lat = sorted(self.latency_s)
        return {
            "schedule": self.schedule,
            "devices": self.devices,
            "stages": self.stages,
            "micro_batches": self.micro_batches,
            "makespan_s": self.makespan_s,
            "period_s": self.period_s,
            "latency_s": {"min": lat[0], "median": lat[len(lat) // 2], "max": lat[-1]},
            "bubble_fraction": self.bubble_fraction,
            "peak_in_flight": list(self.peak_in_flight),
            "peak_activation_bytes": list(self.peak_activation_bytes),
        }


def schedule_ops(
    schedule: str, devices: int, micro_batches: int, chunks: int = 1
) -> list[list[Op]]:
    """The per-device operation order of ``schedule`` (see the module docstring).

    Parameters
    ----------
    schedule
        "gpipe", "1f1b", "interleaved" or "stream".
    devices
        Devices ``p``.
    micro_batches
        Micro-batches (inference: items) ``m``.
    chunks
        Stages per device ``v`` (``interleaved`` only; the others take 1).

    Returns
    -------
    list of list of Op
        ``ops[d]``: device ``d``'s operations in the order it runs them.

    Raises
    ------
    UsageError
        An unknown schedule, counts below 1, chunks with a schedule other than
        ``interleaved``, or ``interleaved`` with ``m`` not a multiple of ``p``.
    """
    p, m, v = devices, micro_batches, chunks
    if schedule not in SCHEDULES:
        raise UsageError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
    if p < 1 or m < 1 or v < 1:
        raise UsageError(f"devices, micro-batches and chunks must be >= 1 (got {p}, {m}, {v})")
    if v != 1 and schedule != "interleaved":
        raise UsageError(f"{schedule} runs one stage per device; chunks apply to interleaved")
    out: list[list[Op]] = []
    for d in range(p):
        if schedule == "stream":
            out.append([Op("F", d, i) for i in range(m)])
        elif schedule == "gpipe":
            out.append([Op("F", d, i) for i in range(m)] + [Op("B", d, i) for i in range(m)])
        elif schedule == "1f1b":
            warm = min(p - d - 1, m)
            ops = [Op("F", d, i) for i in range(warm)]
            for i in range(m - warm):
                ops += [Op("F", d, warm + i), Op("B", d, i)]
            ops += [Op("B", d, i) for i in range(m - warm, m)]
            out.append(ops)
        else:
            out.append(_interleaved(p, m, v, d))
    return out


def _interleaved(p: int, m: int, v: int, d: int) -> list[Op]:
    """Megatron-LM's interleaved 1F1B order on device ``d`` (chunk ``c`` is stage ``c p + d``)."""
    if m % p:
        raise UsageError(f"interleaved 1F1B needs micro-batches ({m}) a multiple of devices ({p})")
    total = m * v

    def fwd(k: int) -> Op:
        c = (k // p) % v
        return Op("F", c * p + d, (k // (p * v)) * p + k % p)

    def bwd(k: int) -> Op:
        c = v - 1 - (k // p) % v
        return Op("B", c * p + d, (k // (p * v)) * p + k % p)

    warm = total if m == p else min(total, (p - d - 1) * 2 + (v - 1) * p)
    ops = [fwd(k) for k in range(warm)]
    for k in range(total - warm):
        ops += [fwd(warm + k), bwd(k)]
    ops += [bwd(k) for k in range(total - warm, total)]
    return ops


def simulate(
    costs: StageCosts,
    schedule: str,
    micro_batches: int,
    *,
    queue_depth: int | None = None,
    ops: Sequence[Sequence[Op]] | None = None,
) -> Timeline:
    """Simulate ``schedule`` over ``micro_batches`` on ``costs`` (module docstring).

    Parameters
    ----------
    costs
        Stage costs (``backward_s`` required by the training schedules, ignored by
        ``stream``).
    schedule
        "gpipe", "1f1b", "interleaved" or "stream".
    micro_batches
        Micro-batches (inference: items).
    queue_depth
        ``stream``: items each stage's output queue holds (default: unbounded).
    ops
        A per-device order to simulate instead of the schedule's own (e.g. a measured one).

    Returns
    -------
    Timeline
        The simulated run.

    Raises
    ------
    UsageError
        A training schedule without backward times, bad counts, or an order that deadlocks
        (an operation waits on one that its device runs later).
    """
    p, s_n, m = costs.num_devices, costs.num_stages, micro_batches
    train = schedule != "stream"
    if train and costs.backward_s is None:
        raise UsageError(f"schedule {schedule} needs backward times (a training pipeline)")
    if queue_depth is not None and queue_depth < 1:
        raise UsageError(f"queue_depth must be >= 1, got {queue_depth}")
    if ops is None:
        ops = schedule_ops(schedule, p, m, s_n // p)
    elif len(ops) != p:
        raise UsageError(f"the order has {len(ops)} devices; the pipeline has {p}")
    fwd, bwd = costs.forward_s, costs.backward_s or (0.0,) * s_n
    comm = costs.comm_s or (0.0,) * (s_n - 1)
    start: dict[tuple[str, int, int], float] = {}
    end: dict[tuple[str, int, int], float] = {}

    def ready(op: Op) -> float | None:
        j, i = op.stage, op.micro
        t = 0.0
        deps: list[tuple[tuple[str, int, int], float]] = []
        if op.kind == "F":
            if j > 0:
                deps.append((("F", j - 1, i), comm[j - 1]))
            if queue_depth is not None and j + 1 < s_n and i - queue_depth - 1 >= 0:
                # back-pressure: the output queue has room once stage j+1 took item i-K-1
                key = ("F", j + 1, i - queue_depth - 1)
                if key not in start:
                    return None
                t = max(t, start[key])
        else:
            deps.append((("F", j, i), 0.0))
            if j + 1 < s_n:
                deps.append((("B", j + 1, i), comm[j]))
        for key, delay in deps:
            e = end.get(key)
            if e is None:
                return None
            t = max(t, e + delay)
        return t

    pos = [0] * p
    free = [0.0] * p
    events: list[Event] = []
    left = sum(len(o) for o in ops)
    while left:
        moved = False
        for d in range(p):
            seq = ops[d]
            while pos[d] < len(seq):
                op = seq[pos[d]]
                r = ready(op)
                if r is None:
                    break
                st = max(free[d], r)
                en = st + (fwd[op.stage] if op.kind == "F" else bwd[op.stage])
                key = (op.kind, op.stage, op.micro)
                start[key], end[key] = st, en
                events.append(Event(d, op.kind, op.stage, op.micro, st, en))
                free[d] = en
                pos[d] += 1
                left -= 1
                moved = True
        if not moved:
            stuck = [str(ops[d][pos[d]]) for d in range(p) if pos[d] < len(ops[d])]
            raise UsageError(f"the schedule deadlocks: waiting at {', '.join(stuck)}")
    return timeline_of(costs, schedule, m, events)


def timeline_of(
    costs: StageCosts, schedule: str, micro_batches: int, events: Sequence[Event]
) -> Timeline:
    """The :class:`Timeline` figures of a list of events (simulated or measured).

    Parameters
    ----------
    costs
        The pipeline's stage costs (stage count, devices and activation bytes are used).
    schedule
        The schedule's name ("stream" for inference).
    micro_batches
        Micro-batches (items).
    events
        Every operation with its device, start and end.

    Returns
    -------
    Timeline
        The run's figures.
    """
    p, s_n, m = costs.num_devices, costs.num_stages, micro_batches
    train = schedule != "stream"
    act = costs.activation_bytes or (0,) * s_n
    start = {(e.kind, e.stage, e.micro): e.start_s for e in events}
    end = {(e.kind, e.stage, e.micro): e.end_s for e in events}
    t0 = min(e.start_s for e in events)
    makespan = max(e.end_s for e in events) - t0
    busy = [0.0] * p
    for e in events:
        busy[e.device] += e.end_s - e.start_s
    bubble = 1.0 - sum(busy) / (p * makespan) if makespan > 0 else 0.0
    last = ("B", 0) if train else ("F", s_n - 1)
    lat = tuple(end[(last[0], last[1], i)] - start[("F", 0, i)] for i in range(m))
    if train:
        period = makespan / m
    else:
        done = sorted(end[("F", s_n - 1, i)] for i in range(m))
        k0 = min(s_n - 1, m - 1)  # completions once the pipeline filled
        period = (done[-1] - done[k0]) / (m - 1 - k0) if m - 1 > k0 else makespan
    # in flight on stage j: from F(j, i) start until B(j, i) ends (training) or until stage
    # j+1 starts item i (inference: the item's output waits in the queue)
    peak_n = [0] * p
    peak_b = [0] * p
    marks: list[tuple[float, int, int, int]] = []  # (time, +1 or -1, stage, micro)
    for (kind, j, i), st in start.items():
        if kind != "F":
            continue
        if train:
            release = end[("B", j, i)]
        elif j + 1 < s_n:
            release = start[("F", j + 1, i)]
        else:
            release = end[("F", j, i)]
        marks.append((st, 1, j, i))
        marks.append((release, -1, j, i))
    marks.sort(key=lambda x: (x[0], x[1]))  # releases before acquisitions at equal times
    cur_n = [0] * p
    cur_b = [0] * p
    for _, sign, j, _i in marks:
        d = j % p
        cur_n[d] += sign
        cur_b[d] += sign * act[j]
        peak_n[d] = max(peak_n[d], cur_n[d])
        peak_b[d] = max(peak_b[d], cur_b[d])
    return Timeline(
        schedule,
        p,
        s_n,
        m,
        tuple(sorted(events, key=lambda e: (e.start_s, e.device))),
        makespan,
        period,
        lat,
        bubble,
        tuple(peak_n),
        tuple(peak_b),
    )
