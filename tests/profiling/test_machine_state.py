"""Chain times brought to the calibration's typical machine state (profiling.machine_state)."""

from __future__ import annotations

import numpy as np
import pytest

from edgepart.cost.kernels import FEATURES, Kernels
from edgepart.errors import UnsteadyMachineError
from edgepart.profiling.calibrate import Measurements
from edgepart.profiling.machine_state import (
    STEADY_LIMIT,
    UNSTEADY_SPREAD,
    at_calm_pool,
    at_typical_state,
    batch_speeds,
    batches_spread,
    slow_pool_batches,
    steady_check,
)

MACS = FEATURES.index("macs")
INVOKE = 5e-7


def _kernels(macs: list[float], rows: float = 0.0) -> Kernels:
    f = np.zeros((len(macs), len(FEATURES)))
    f[:, MACS] = macs
    f[:, FEATURES.index("rows")] = f[:, FEATURES.index("cout")] = rows
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


@pytest.mark.parametrize(
    ("canary", "unsteady"),
    [([0.97, 1.0, 1.0, 1.02, 1.08, 1.15, 1.2], False), ([0.9, 1.0, 1.0, 1.05, 1.15, 1.3], True)],
)
def test_a_calibration_on_a_machine_that_swung_too_much_says_so(canary, unsteady):
    """The correction still applies, and the state says whether the batches' speeds spread
    past UNSTEADY_SPREAD between their 10th and 90th percentiles (a fit it does not save)."""
    meas, batches, items, truth = _world(0.7, canary)
    out, state = at_typical_state(meas, batches, items, 1)
    assert state is not None
    assert (state.spread > UNSTEADY_SPREAD) is unsteady
    assert state.unsteady is unsteady and state.to_json()["unsteady"] is unsteady
    got = np.array([t for _, t, _, _ in out])
    assert np.abs(got / truth - 1).max() < 0.01


def test_measurements_without_canary_records_are_left_as_they_are():
    meas, batches, items, _ = _world(1.0, [1.0, 1.2, 1.4])
    meas.batches = [{"batch": b, "error": "build 1: bad"} for b in range(3)]
    out, state = at_typical_state(meas, batches, items, 1)
    assert state is None and out == items


def _pool_world(slow: set[int], wake: float, batches: int = 40, per: int = 16, seed: int = 1):
    """Chains on one thread and on two, 16 per batch: on two threads every kernel pays
    ``wake`` seconds to wake the pool, three times that in the ``slow`` batches; both clocks
    carry 3% noise."""
    rng = np.random.default_rng(seed)
    two, one, where = [], [], []
    for b in range(batches):
        for _ in range(per):
            # 64 rows by 64 outputs: split into tasks (xnn_tasks), the pool woken
            k = _kernels(list(rng.integers(1_000, 60_000, size=int(rng.integers(1, 6)))), 64.0)
            t1 = _truth(k) * float(rng.normal(1.0, 0.03))
            w = wake * (3.0 if b in slow else 1.0) * len(k.types)
            t2 = (0.6 * _truth(k) + w) * float(rng.normal(1.0, 0.03))
            one.append((k, t1, INVOKE, None))
            two.append((k, t2, INVOKE, None))
            where.append(b)
    return where, two, one


def test_batches_measured_while_the_pool_was_slow_to_wake_are_found():
    slow = {3, 4, 5, 21, 33}
    where, two, one = _pool_world(slow, wake=4e-6)
    assert slow_pool_batches(where, two, one) == slow


def test_a_steady_pool_leaves_every_batch_in():
    where, two, one = _pool_world(set(), wake=4e-6)
    assert slow_pool_batches(where, two, one) == set()


def test_chains_not_measured_on_one_thread_are_not_judged():
    """Without the one-thread times there is nothing to tell the pool from the chain."""
    where, two, one = _pool_world({3, 4}, wake=4e-6)
    assert slow_pool_batches(where, two, [None] * len(one)) == set()
    # batches whose chains have no one-thread time are never flagged
    cut = [None if b in (3, 4) else o for b, o in zip(where, one, strict=True)]
    assert slow_pool_batches(where, two, cut) == set()


def test_chains_of_batches_whose_pool_ran_slower_are_brought_to_the_calm_pool():
    """Two threads' speed drifts from batch to batch (a continuum, not only the outliers
    slow_pool_batches leaves out): every batch is brought to the level of the calm quarter
    of the batches, so the chains agree with one another and with the calm pool."""
    rng = np.random.default_rng(3)
    where, two, one = _pool_world(set(), wake=0.0, batches=40)
    slowdown = {b: float(np.exp(abs(rng.normal(0.0, 0.08)))) for b in range(40)}
    drifted = [(k, t * slowdown[b], f, h) for (k, t, f, h), b in zip(two, where, strict=True)]
    out, calm = at_calm_pool(where, drifted, one)
    calm_level = np.quantile(list(slowdown.values()), 0.25)
    assert calm is not None and calm["quantile"] == 0.25
    typical = np.median([slowdown[b] for b in where]) / calm_level
    assert calm["median_factor"] == pytest.approx(typical, rel=0.02)
    before = np.array([t for _, t, _, _ in drifted]) / np.array([t for _, t, _, _ in two])
    after = np.array([t for _, t, _, _ in out]) / np.array([t for _, t, _, _ in two])
    # each batch's own factor is taken out, to within the 3% noise of its 16 chains
    assert np.std(np.log(after)) < 0.5 * np.std(np.log(before))
    assert np.median(after) == pytest.approx(calm_level, rel=0.03)
    # a chain is divided by its batch's factor, never multiplied
    assert (after <= before + 1e-12).all()


def test_a_steady_pool_is_left_nearly_as_it_is_and_nothing_moves_without_one_thread_times():
    where, two, one = _pool_world(set(), wake=4e-6)
    out, calm = at_calm_pool(where, two, one)
    assert calm is not None and calm["median_factor"] < 1.03
    ratio = np.array([a[1] / b[1] for a, b in zip(out, two, strict=True)])
    assert ((ratio > 0.95) & (ratio <= 1.0)).all()
    assert at_calm_pool(where, two, [None] * len(one)) == (two, None)


def test_the_multi_thread_fit_leaves_the_slow_pool_batches_out():
    """fit_host_predictor, on chains measured on one thread and two: the two-thread fit drops
    the planted slow batches (its report says how many), and the one-thread fit keeps all."""
    pytest.importorskip("sklearn")
    from edgepart.cost.stats import Stats
    from edgepart.profiling.calibrate import ChainRecord
    from edgepart.profiling.host_predictor import fit_host_predictor
    from edgepart.profiling.kernel_gen import ChainSpec

    slow = {2, 7}
    where, two, one = _pool_world(slow, wake=4e-6, batches=12)
    meas = Measurements(host={}, configs=[("xnnpack", 1), ("xnnpack", 2)], fixed={})

    def st(t: float) -> Stats:
        return Stats(t, t, t, t, 9)

    for i, (b, (k, t2, _, _), (_, t1, _, _)) in enumerate(zip(where, two, one, strict=True)):
        stats = {"xnnpack_1t": st(t1), "xnnpack_2t": st(t2)}
        meas.chains.append(
            ChainRecord(ChainSpec(seed=i), stats, {"xnnpack": 1}, {"xnnpack": k}, b, 0.0)
        )
    _, reports = fit_host_predictor(meas, family="linear", bags=1)
    by = {r.config: r for r in reports}
    assert by["xnnpack_2t"].chains == 16 * (12 - len(slow))
    assert by["xnnpack_1t"].chains == 16 * 12
    # the kept two-thread chains were brought to the calm pool, and the report says by how much
    state = by["xnnpack_2t"].machine_state
    assert state is not None and state["calm_pool_quantile"] == 0.25
    assert 1.0 <= state["calm_pool_median_factor"] < 1.05
    assert by["xnnpack_1t"].machine_state is None


def _batches(canary: list[float]) -> Measurements:
    meas = Measurements(host={}, configs=[("xnnpack", 1)], fixed={})
    meas.batches = [
        {"batch": b, "canary_cpu_s": [c * 1e-4, 2 * c * 1e-4], "cpu_rounds": 5}
        for b, c in enumerate(canary)
    ]
    return meas


def test_the_spread_so_far_is_the_batches_canary_p90_over_p10():
    """Each batch's canary figure (its rounds' 10th percentile), then their 90th percentile over
    their 10th; nothing to judge before three batches with a canary record."""
    assert batches_spread(_batches([1.0, 1.5])) is None
    assert batches_spread(Measurements(host={}, configs=[("xnnpack", 1)], fixed={})) is None
    speeds = [1.0, 1.2, 1.1, 1.6, 1.0, 1.3]
    p10 = [np.percentile([c, 2 * c], 10) for c in speeds]
    want = np.percentile(p10, 90) / np.percentile(p10, 10)
    assert batches_spread(_batches(speeds)) == pytest.approx(want, rel=1e-12)
    assert batches_spread(_batches([1.0] * 5)) == pytest.approx(1.0)


def test_a_steady_check_judges_the_first_batches_then_the_run_so_far():
    """Before its batches are in the check passes; at that moment it raises on a machine that
    swung past the early limit, with the figure and what to do; after it, at every batch, on a
    run so far past the whole run's limit (UNSTEADY_SPREAD), which a steady start does not
    promise."""
    unsteady = [1.0, 1.0, 1.5, 1.0, 1.5, 1.0, 1.5, 1.5]
    check = steady_check(STEADY_LIMIT, batches=5)
    for n in (3, 4):
        check(_batches(unsteady[:n]))  # too early to judge
    with pytest.raises(UnsteadyMachineError) as exc:
        check(_batches(unsteady[:5]))
    msg = str(exc.value)
    assert "first 5 batches" in msg and "1.50x as long" in msg and f"past {STEADY_LIMIT:g}x" in msg
    assert "nothing was written" in msg and "when the machine is quiet" in msg
    steady = [1.0, 1.05, 1.2, 1.02, 1.08]  # 1.14x: past neither the early limit nor the run's
    check(_batches(steady))
    # past the early limit after the first batches (1.27x), not past the run's: it goes on
    later = [*steady, 1.27, 1.0, 1.27]
    assert STEADY_LIMIT < batches_spread(_batches(later)) < UNSTEADY_SPREAD
    check(_batches(later))
    # then the machine swings: the run so far is past the run's limit at the eighth batch
    swung = [*steady, 1.3, 1.0, 1.45]
    check(_batches(swung[:6]))
    check(_batches(swung[:7]))
    with pytest.raises(UnsteadyMachineError) as exc:
        check(_batches(swung))
    msg = str(exc.value)
    assert "over its 8 batches" in msg and "1.34x as long" in msg
    assert f"past {UNSTEADY_SPREAD:g}x" in msg and "nothing was written" in msg
    # one run's measurements, growing a batch at a time (as measure calls it): the check reads
    # each batch once and comes to the same verdict at the same batch
    grown, every = _batches([]), _batches(swung).batches
    run = steady_check(STEADY_LIMIT, batches=5)
    for n in range(1, len(every)):
        grown.batches.append(every[n - 1])
        run(grown)
    grown.batches.append(every[-1])
    with pytest.raises(UnsteadyMachineError, match="over its 8 batches"):
        run(grown)
    # the limits are the caller's: the same batches pass looser ones
    steady_check(1.6, batches=5)(_batches(unsteady[:5]))
    steady_check(STEADY_LIMIT, batches=5, run_limit=1.4)(_batches(swung))
