"""Whole-model latencies of many models, measured interleaved (what predictions are checked on).

:func:`measure_models` prepares a LiteRT interpreter for every (model, configuration) pair
(inputs resized where a model needs it) and samples them round-robin in a fresh random order
each round, as the calibration samples its chains: a sample is one untimed invocation
followed by enough timed ones to last a few milliseconds. Each pair's statistics are kept on
wall time and, with one thread, on the calling thread's CPU time, which excludes the time
the process was preempted (the better estimate of the undisturbed latency on a busy machine).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from ai_edge_litert.interpreter import Interpreter

from edgepart.cost.stats import Stats
from edgepart.errors import RuntimeBackendError
from edgepart.profiling.calibrate import Sampler
from edgepart.profiling.timing import _resolver, fill_inputs

__all__ = ["ModelTiming", "measure_models", "prepare_model"]


@dataclass(frozen=True)
class ModelTiming:
    """One model on one configuration: statistics on wall time and on CPU time (1 thread)."""

    name: str
    config: str
    wall: Stats | None
    cpu: Stats | None
    error: str = ""

    def value(self, statistic: str = "p10", clock: str = "auto") -> float | None:
        """The statistic on the chosen clock (``auto``: CPU time when measured)."""
        st = self.cpu if (clock == "cpu" or (clock == "auto" and self.cpu)) else self.wall
        if st is None:
            return None
        return float({"p10": st.p10_s, "median": st.median_s, "min": st.min_s}[statistic])


def prepare_model(
    content: bytes,
    executor: str,
    threads: int,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    sample_s: float = 2e-3,
) -> Any:
    """A ready sampler (:class:`edgepart.profiling.calibrate.Sampler`) for one model."""
    try:
        it = Interpreter(
            model_content=content,
            num_threads=threads,
            experimental_op_resolver_type=_resolver(executor),
        )
        for d in it.get_input_details():
            want = (input_shapes or {}).get(str(d["name"]))
            if want is not None:
                it.resize_tensor_input(d["index"], [int(v) for v in want], strict=False)
        it.allocate_tensors()
    except (RuntimeError, ValueError) as err:
        msg = str(err).strip().splitlines()
        raise RuntimeBackendError(
            f"LiteRT cannot prepare the model with {executor}: {msg[0] if msg else err}"
        ) from None
    fill_inputs(it, 0)
    return Sampler(it, sample_s, cpu_clock=threads == 1)


def measure_models(
    models: Mapping[str, tuple[bytes, Mapping[str, Sequence[int]] | None]],
    configs: Sequence[tuple[str, str, int]],
    *,
    rounds: int = 9,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> list[ModelTiming]:
    """Time every model under every ``(name, executor, threads)`` configuration, interleaved."""
    samplers: list[tuple[str, str, Any]] = []
    out: list[ModelTiming] = []
    for name, (content, shapes) in models.items():
        for cname, ex, th in configs:
            try:
                samplers.append((name, cname, prepare_model(content, ex, th, shapes)))
            except RuntimeBackendError as err:
                out.append(ModelTiming(name, cname, None, None, str(err)))
    rng = np.random.default_rng([seed, 5])
    for r in range(rounds):
        for j in rng.permutation(len(samplers)).tolist():
            samplers[j][2].sample(r)
        if progress:
            progress(r + 1, rounds)
    for name, cname, s in samplers:
        out.append(
            ModelTiming(
                name, cname, s.stats(wall=True), s.stats(wall=False) if s.cpu_clock else None
            )
        )
    return sorted(out, key=lambda t: (t.name, t.config))


def load_now() -> float:
    try:
        return float(os.getloadavg()[0])
    except OSError:
        return 0.0
