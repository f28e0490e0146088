"""Acceptance: every corpus model, cut at random, runs to the monolithic model's answers.

* Same kernels in every partition (XNNPACK, builtin, reference): outputs are bit-identical to
  the monolithic model run with those kernels, over several invokes (stateful models keep
  their state across invokes in both).
* Mixed kernels across partitions: measured against the kernels' own disagreement on the
  monolithic model. With ``M_k`` the monolithic output on kernels ``k`` and ``P`` the mixed
  partitioned output on the same inputs, the kernels' spread is
  ``T = max_{a,b} |M_a - M_b|`` (max abs over all outputs and inputs tried), and the test
  requires ``min_a max|P - M_a| <= T``: the mixed result is as close to some monolithic
  kernel set's result as those kernel sets are to each other (so within ``2T`` of all).
  A direct ``max_a |P - M_a| <= T`` is not a property of floating point: rounding differences
  from different partitions add up (measured up to 1.9 T, on while_loop).

Two random convex partitionings: ranges of a topological order, and level bands split into
connected components (which puts parallel branches in concurrent partitions on different
units, so the concurrent scheduler is exercised too).
"""

from __future__ import annotations

import itertools

import build_corpus
import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from rt_cuts import banded, contiguous

from edgepart.bundle import PartitionSpec, build_bundle
from edgepart.deploy.compile import partition_specs
from edgepart.runtime import PartitionedInterpreter
from edgepart.runtime.verification import random_inputs
from edgepart.tflite.reader import read_model

KERNELS = ("xnnpack", "builtin", "reference")
RESOLVER = {
    "xnnpack": OpResolverType.AUTO,
    "builtin": OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    "reference": OpResolverType.BUILTIN_REF,
}
NAMES = build_corpus.default_names()
INVOKES = 3

_bundles: dict[tuple[str, str], object] = {}


def _bundle(path, family):
    key = (str(path), family)
    if key not in _bundles:
        model = read_model(path)
        specs = None
        if family == "banded":
            specs = banded(model, max(2, int(2 * model.main.num_ops**0.5)), seed=11)
        if specs is None:  # contiguous, or bands refused (state that cannot be split)
            specs = [PartitionSpec(p, unit=i % 2) for i, p in enumerate(contiguous(model, 4, 3))]
        _bundles[key] = build_bundle(path, specs)
    return _bundles[key]


def _runnable(corpus_manifest, name):
    if not corpus_manifest[name]["runnable"]:
        pytest.skip(f"{name} does not run in LiteRT on this host")


def _outputs(it, feeds):
    """Outputs of successive invokes, one list per feed (copies)."""
    out = []
    for feed in feeds:
        for d, x in zip(it.get_input_details(), feed, strict=True):
            it.set_tensor(d["index"], x)
        it.invoke()
        out.append([it.get_tensor(d["index"]) for d in it.get_output_details()])
    return out


def _monolithic(path, kind):
    it = Interpreter(model_path=str(path), experimental_op_resolver_type=RESOLVER[kind])
    it.allocate_tensors()
    return it


@pytest.mark.parametrize("family", ["contiguous", "banded"])
@pytest.mark.parametrize("kind", KERNELS)
@pytest.mark.parametrize("name", NAMES)
def test_same_kernels_are_bit_identical(corpus, corpus_manifest, name, kind, family):
    _runnable(corpus_manifest, name)
    path = corpus[name]
    bundle = _bundle(path, family)
    pi = PartitionedInterpreter(bundle=bundle, executor=kind)
    pi.allocate_tensors()
    ref = _monolithic(path, kind)
    assert [d["index"] for d in pi.get_input_details()] == [
        d["index"] for d in ref.get_input_details()
    ]
    feeds = [random_inputs(ref.get_input_details(), seed) for seed in range(INVOKES)]
    want, got = _outputs(ref, feeds), _outputs(pi, feeds)
    for k, (w, g) in enumerate(zip(want, got, strict=True)):
        for a, b, d in zip(g, w, ref.get_output_details(), strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert np.array_equal(a, b, equal_nan=True), (
                f"{name} ({len(bundle.plan.partitions)} partitions, {kind}): output "
                f"{d['name']} differs at invoke {k} by {np.abs(a - b).max()}"
            )
    pi.close()


def test_banded_cuts_exercise_concurrent_partitions(corpus):
    bundle = _bundle(corpus["transformer"], "banded")
    pi = PartitionedInterpreter(bundle=bundle)
    assert pi.parallel, "the banded transformer should have concurrent partitions"
    pi.close()


@pytest.mark.parametrize("name", NAMES)
def test_mixed_kernels_stay_within_the_kernels_own_spread(corpus, corpus_manifest, name):
    _runnable(corpus_manifest, name)
    path = corpus[name]
    model = read_model(path)
    parts = contiguous(model, 4, seed=5)
    refs = {k: _monolithic(path, k) for k in KERNELS}
    feeds = [random_inputs(refs["xnnpack"].get_input_details(), s) for s in range(4)]
    mono = {k: _outputs(r, feeds) for k, r in refs.items()}
    spread = max(
        _maxdiff(x, y)
        for a, b in itertools.combinations(KERNELS, 2)
        for fa, fb in zip(mono[a], mono[b], strict=True)
        for x, y in zip(fa, fb, strict=True)
    )
    lines = []
    for order in (KERNELS, KERNELS[::-1]):
        specs = [PartitionSpec(p, executor=order[i % 3]) for i, p in enumerate(parts)]
        pi = PartitionedInterpreter(bundle=build_bundle(path, specs))
        pi.allocate_tensors()
        got = _outputs(pi, feeds)
        nearest = max(
            min(max(_maxdiff(x, y) for x, y in zip(g, mono[k][i], strict=True)) for k in KERNELS)
            for i, g in enumerate(got)
        )
        farthest = max(
            max(_maxdiff(x, y) for x, y in zip(g, mono[k][i], strict=True))
            for i, g in enumerate(got)
            for k in KERNELS
        )
        mix = [p.executor.kind for p in pi.plan.partitions]
        lines.append(
            f"{name}: mix {mix}: kernel spread T={spread:.3g}, nearest monolithic "
            f"{nearest:.3g}, farthest {farthest:.3g}"
        )
        assert nearest <= spread, lines[-1]
        assert farthest <= 2 * spread, lines[-1]
    print("\n".join(lines))


def _maxdiff(a, b):
    if a.size == 0:
        return 0.0
    return float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max())


def _profile_specs(path, profile):
    """The partition specs the partitioner makes for a model and a device profile."""
    return partition_specs(path, profile)


@pytest.mark.parametrize("profile", ["pixel8", "galaxy_s24_ultra", "coral_devboard"])
def test_device_profile_partitionings_are_bit_identical(corpus, corpus_manifest, profile):
    for name in NAMES:
        if not corpus_manifest[name]["runnable"]:
            continue
        path = corpus[name]
        bundle = build_bundle(path, _profile_specs(path, profile), profile=profile)
        for kind in ("xnnpack", "builtin"):
            pi = PartitionedInterpreter(bundle=bundle, executor=kind)
            pi.allocate_tensors()
            ref = _monolithic(path, kind)
            feeds = [random_inputs(ref.get_input_details(), s) for s in range(2)]
            for g, w in zip(_outputs(pi, feeds), _outputs(ref, feeds), strict=True):
                assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(g, w, strict=False))
