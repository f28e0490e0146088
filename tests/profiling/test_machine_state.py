"""Chain times brought to the calibration's typical machine state (profiling.machine_state)."""

from __future__ import annotations

import numpy as np
import pytest

from edgepart.cost.kernels import FEATURES, Kernels
from edgepart.profiling.calibrate import Measurements
from edgepart.profiling.machine_state import at_typical_state, batch_speeds

MACS = FEATURES.index("macs")
INVOKE = 5e-7


def _kernels(macs: list[float]) -> Kernels:
    f = np.zeros((len(macs), len(FEATURES)))
    f[:, MACS] = macs
    n = len(macs)
    return Kernels(["xnn.fc"] * n, f, [(i,) for i in range(n)], np.arange(n), np.ones(n))


def _truth(k: Kernels) -> float:
    """A machine where a kernel costs 100 ns plus 1 ns per MAC, at its typical state."""
    return INVOKE + float((1e-7 + k.features[:, MACS] * 1e-9).sum())


def _world(alpha: float, canary: list[float], chains: int = 240, seed: int = 0):
    rng = np.random.default_rng(seed)
    meas = Measurements(host={}, configs=[("xnnpack", 1)], fixed={})
    meas.batches = [
        {"batch": b, "canary_cpu_s": [c * 1e-4] * 5, "cpu_rounds": 5} for b, c in enumerate(canary)
    ]
    typical = float(np.median(canary))
    items, batches, truth = [], [], []
    for i in range(chains):
        b = i % len(canary)
        k = _kernels(list(rng.integers(1_000, 200_000, size=int(rng.integers(1, 4)))))
        t = _truth(k)
        items.append((k, t * (canary[b] / typical) ** alpha, INVOKE, None))
        batches.append(b)
        truth.append(t)
    return meas, batches, items, np.array(truth)


def test_batch_speeds_are_the_canary_against_the_typical_batch():
    meas, *_ = _world(1.0, [1.0, 1.1, 1.3])
    assert batch_speeds(meas, 1) == pytest.approx({0: 1 / 1.1, 1: 1.0, 2: 1.3 / 1.1})


def test_one_thread_reads_only_the_rounds_its_chains_were_sampled_in():
    """One-thread (CPU-clock) chains are sampled in the first ``cpu_rounds`` rounds only;
    their batch's speed is the canary's over those rounds, the others' over every round."""
    meas = Measurements(host={}, configs=[("xnnpack", 1)], fixed={})
    meas.batches = [
        {"batch": 0, "canary_cpu_s": [2.0] * 5 + [1.0] * 4, "cpu_rounds": 5},
        {"batch": 1, "canary_cpu_s": [1.0] * 9, "cpu_rounds": 5},
        {"batch": 2, "canary_cpu_s": [1.0] * 9, "cpu_rounds": 5},
    ]
    assert batch_speeds(meas, 1)[0] == pytest.approx(2.0)
    assert batch_speeds(meas, 2)[0] == pytest.approx(1.0)


@pytest.mark.parametrize("alpha", [0.0, 0.7, 1.5])
def test_the_sensitivity_is_recovered_and_the_chains_brought_to_the_typical_state(alpha):
    canary = [0.97, 1.0, 1.0, 1.02, 1.08, 1.15, 1.3]
    meas, batches, items, truth = _world(alpha, canary)
    out, state = at_typical_state(meas, batches, items, 1)
    assert state is not None and state.batches == len(canary)
    assert state.alpha == pytest.approx(alpha, abs=0.03)
    got = np.array([t for _, t, _, _ in out])
    measured = np.array([t for _, t, _, _ in items])
    assert np.abs(got / truth - 1).max() < 0.01
    if alpha > 0:  # the measured times were off by their batch's state; the corrected are not
        assert np.abs(measured / truth - 1).max() > 0.1


def test_measurements_without_canary_records_are_left_as_they_are():
    meas, batches, items, _ = _world(1.0, [1.0, 1.2, 1.4])
    meas.batches = [{"batch": b, "error": "build 1: bad"} for b in range(3)]
    out, state = at_typical_state(meas, batches, items, 1)
    assert state is None and out == items
