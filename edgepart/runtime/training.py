"""Pipeline-parallel training on LiteRT: stage training models run by a micro-batch schedule.

A *stage training model* is a ``.tflite`` file holding one pipeline stage's weights as resource
variables and three signatures (the multi-signature layout of TFLite on-device training):

``forward(x) -> y``
    the stage's forward pass;
``backward(x, dy) -> dx``
    the gradient with respect to the stage's input, given its input ``x`` and the gradient
    ``dy`` of its output; the weight gradients are *added* to gradient variables the model
    holds (accumulation over micro-batches). The last stage takes ``target`` in place of
    ``dy`` (its loss is inside it) and also returns ``loss``;
``apply(lr) -> weights``
    one SGD step with the accumulated gradients, which it then zeroes; returns the weights.

:func:`run_training` runs a schedule (:func:`~edgepart.placement.schedules.schedule_ops`:
GPipe, 1F1B) over ``p`` such stages, one thread per stage
(:func:`~edgepart.runtime.stage_threads.run_schedule`): the forward of micro-batch ``i`` on
stage ``s`` keeps (stashes) its input until the backward of ``i`` on ``s`` takes it, which is
the activation memory a schedule trades against its bubble. It measures every operation, the
number of micro-batches stashed on each stage at once, and ends the step with every stage's
``apply``. Gradient accumulation makes the step the full batch's: GPipe and 1F1B give the
same weights, up to the order of the float sums.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from ai_edge_litert.interpreter import Interpreter

from edgepart.errors import ModelFormatError, RuntimeBackendError, UsageError
from edgepart.fileio import read_regular
from edgepart.placement.schedules import Op, StageCosts, Timeline, schedule_ops, timeline_of
from edgepart.runtime.executors import check_for_litert
from edgepart.runtime.stage_threads import run_schedule

__all__ = ["SIGNATURES", "TrainingRun", "run_training"]

MODEL_LIMIT = 4 << 30
"""Largest stage model read (a flatbuffer's offsets are 32-bit)."""

SIGNATURES = ("forward", "backward", "apply")
"""The signatures every stage training model has."""


@dataclass(frozen=True, eq=False)
class TrainingRun:
    """One training step run by a schedule.

    ``measured``: the timeline of the operations as they ran (order per device, bubble
    fraction, makespan). ``peak_stashed[s]``: the most micro-batch inputs stage ``s`` held at
    once, counted by the runtime (GPipe: ``m``; 1F1B: ``min(p - s, m)``), and
    ``stashed_bytes[s]`` the same in bytes. ``losses[i]``: micro-batch ``i``'s loss.
    ``weights[s]``: stage ``s``'s weights after the step, by output name of ``apply``.
    """

    schedule: str
    measured: Timeline
    peak_stashed: tuple[int, ...]
    stashed_bytes: tuple[int, ...]
    losses: tuple[float, ...]
    weights: tuple[dict[str, np.ndarray], ...]


def run_training(
    stages: Sequence[str | os.PathLike[str] | bytes],
    inputs: Sequence[np.ndarray],
    targets: Sequence[np.ndarray],
    *,
    schedule: str = "1f1b",
    learning_rate: float = 0.01,
    timeout_s: float = 600.0,
) -> TrainingRun:
    """Run one training step of stage training models with a micro-batch schedule.

    Parameters
    ----------
    stages
        Stage training models (paths or bytes), pipeline order (see the module docstring).
    inputs, targets
        Micro-batch ``i``'s input to the first stage and target of the last.
    schedule
        "gpipe" or "1f1b".
    learning_rate
        The SGD step's learning rate.
    timeout_s
        Longest wait for a dependency (see :func:`run_schedule`).

    Raises
    ------
    UsageError
        No stages, a model without the three signatures (or their tensors), a schedule that
        is not a training schedule, or inputs and targets of different counts.
    StageFailedError
        An operation failed; lists the micro-batches that did not complete.
    """
    if schedule not in ("gpipe", "1f1b"):
        raise UsageError(f"training runs 'gpipe' or '1f1b', not {schedule!r}")
    if not stages:
        raise UsageError("a training pipeline needs at least one stage model")
    if len(inputs) != len(targets) or not inputs:
        raise UsageError(
            f"{len(inputs)} input(s) and {len(targets)} target(s): give one of each per "
            "micro-batch (at least one)"
        )
    p, m = len(stages), len(inputs)
    last = p - 1
    runners = [_open(_blob(s), _label(s, k), last=k == last) for k, s in enumerate(stages)]
    stash: list[dict[int, np.ndarray]] = [{} for _ in range(p)]
    peak = [0] * p
    peak_bytes = [0] * p
    acts: dict[tuple[int, int], np.ndarray] = {}  # (stage, micro) -> forward output
    grads: dict[tuple[int, int], np.ndarray] = {}  # (stage, micro) -> gradient of its input
    losses: dict[int, float] = {}
    lock = threading.Lock()

    def work(op: Op) -> None:
        s, i = op.stage, op.micro
        run = runners[s]
        if op.kind == "F":
            with lock:
                x = np.asarray(inputs[i]) if s == 0 else acts.pop((s - 1, i))
            y = run["forward"](x=x)["y"]
            with lock:
                stash[s][i] = x
                peak[s] = max(peak[s], len(stash[s]))
                peak_bytes[s] = max(peak_bytes[s], sum(a.nbytes for a in stash[s].values()))
                if s < last:
                    acts[(s, i)] = y
            return
        with lock:
            x = stash[s].pop(i)
            dy = np.asarray(targets[i]) if s == last else grads.pop((s + 1, i))
        out = run["backward"](x=x, **({"target": dy} if s == last else {"dy": dy}))
        with lock:
            if s == last:
                losses[i] = float(np.asarray(out["loss"]).sum())
            if s > 0:
                grads[(s, i)] = out["dx"]

    events = run_schedule(schedule_ops(schedule, p, m), work, timeout_s=timeout_s)
    lr = np.asarray(learning_rate, dtype=np.float32)
    weights = tuple(r["apply"](lr=lr) for r in runners)
    spans: dict[tuple[str, int], list[float]] = {}
    for e in events:
        spans.setdefault((e.kind, e.stage), []).append(e.end_s - e.start_s)
    costs = StageCosts(
        tuple(float(np.median(spans[("F", s)])) for s in range(p)),
        tuple(float(np.median(spans[("B", s)])) for s in range(p)),
    )
    return TrainingRun(
        schedule,
        timeline_of(costs, schedule, m, events),
        tuple(peak),
        tuple(peak_bytes),
        tuple(losses[i] for i in range(m)),
        weights,
    )


class _Signature:
    """One signature of a stage's interpreter: its input and output names, and a call."""

    def __init__(self, runner: Any, io: dict[str, list[str]]) -> None:
        self._run = runner
        self.inputs = set(io["inputs"])
        self.outputs = set(io["outputs"])

    def __call__(self, **tensors: np.ndarray) -> dict[str, np.ndarray]:
        return dict(self._run(**tensors))


def _open(blob: bytes, label: str, *, last: bool) -> dict[str, _Signature]:
    """One interpreter for the stage (its signatures share its variables), one thread; its
    signatures checked for the tensors the runtime passes and reads."""
    check_for_litert(blob, label)
    try:
        it = Interpreter(model_content=blob, num_threads=1)
    except (ValueError, RuntimeError) as err:
        msg = " ".join(str(err).split())
        raise RuntimeBackendError(f"{label}: LiteRT cannot load it: {msg}") from None
    sigs = it.get_signature_list()
    missing = [k for k in SIGNATURES if k not in sigs]
    if missing:
        raise UsageError(
            f"{label}: no signature {', '.join(map(repr, missing))} (it has "
            f"{sorted(sigs) or 'none'}); a stage training model has {', '.join(SIGNATURES)}"
        )
    run = {k: _Signature(it.get_signature_runner(k), sigs[k]) for k in SIGNATURES}
    _check_io(run, last, label)
    return run


def _blob(stage: str | os.PathLike[str] | bytes) -> bytes:
    if isinstance(stage, bytes):
        return stage
    return read_regular(
        Path(stage), what=".tflite model", limit=MODEL_LIMIT, error=ModelFormatError
    )


def _label(stage: str | os.PathLike[str] | bytes, k: int) -> str:
    return f"stage {k}" if isinstance(stage, bytes) else f"stage {k} ({stage})"


def _check_io(run: dict[str, _Signature], last: bool, label: str) -> None:
    """The signature tensors the runtime passes and reads, refused in one line if absent."""
    want = {
        "forward": ({"x"}, {"y"}),
        "backward": ({"x", "target"} if last else {"x", "dy"}, {"dx", "loss"} if last else {"dx"}),
        "apply": ({"lr"}, set()),
    }
    for sig, (ins, outs) in want.items():
        got_in, got_out = run[sig].inputs, run[sig].outputs
        if not ins <= got_in or not outs <= got_out:
            raise UsageError(
                f"{label}: signature {sig!r} has inputs {sorted(got_in)} and outputs "
                f"{sorted(got_out)}; a stage training model needs inputs {sorted(ins)} and "
                f"outputs {sorted(outs)} (edgepart.runtime.training)"
            )
