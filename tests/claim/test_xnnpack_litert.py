"""Predicted XNNPACK partitions equal the DELEGATE nodes LiteRT creates (count, ops, boundaries).

The oracle is LiteRT itself (``litert_oracle``); nothing here is hard-coded per model.
"""

from __future__ import annotations

import pytest
from litert_oracle import litert_delegates, litert_delegates_isolated
from probes import xnnpack_probes

from edgepart.claim.delegation import claim
from edgepart.tflite.reader import read_model
from edgepart.tflite.writer import save_model


def _predicted(path, greedy):
    res = claim(read_model(path), greedy=greedy)
    return [(tuple(sorted(p.ops)), p.inputs, p.outputs) for p in res.partitions("xnnpack")]


def _oracle(delegates):
    return [(d.ops, d.inputs, d.outputs) for d in delegates]


PROBES = xnnpack_probes()


@pytest.fixture(scope="module")
def probe_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("xnnpack_probes")
    for name, model in PROBES.items():
        save_model(model, d / f"{name}.tflite")
    return d


@pytest.mark.parametrize("greedy", [True, False], ids=["greedy", "non_greedy"])
@pytest.mark.parametrize("name", sorted(PROBES))
def test_probe_matches_litert(probe_dir, name, greedy):
    path = probe_dir / f"{name}.tflite"
    want = _oracle(litert_delegates(path, greedy=greedy))
    assert _predicted(path, greedy) == want


def test_six_op_probe_documented_counts(probe_dir):
    path = probe_dir / "six_op.tflite"
    assert len(litert_delegates(path, greedy=True)) == 2
    assert len(litert_delegates(path, greedy=False)) == 3
    assert [p[0] for p in _predicted(path, True)] == [(0, 2), (4, 5)]
    assert [p[0] for p in _predicted(path, False)] == [(0,), (2,), (4, 5)]


def test_control_edge_metadata_changes_the_partitions(probe_dir):
    with_edges = _predicted(probe_dir / "control_edges.tflite", True)
    without = _predicted(probe_dir / "control_edges_none.tflite", True)
    assert [p[0] for p in without] == [(0, 3), (2,)]
    assert [p[0] for p in with_edges] == [(0,), (2, 3)]


def test_corpus_matches_litert(request):
    try:
        corpus = request.getfixturevalue("corpus")
    except pytest.FixtureLookupError:
        pytest.skip("the shared `corpus` fixture (tests/conftest.py) is not available")
    checked, failures, unrunnable = 0, [], []
    for name, path in sorted(corpus.items()):
        want = litert_delegates_isolated(path)
        if isinstance(want, str):
            unrunnable.append(want)
            continue
        for greedy in (True, False):
            got = _predicted(path, greedy)
            if got != _oracle(want[greedy]):
                failures.append(
                    f"{name} greedy={greedy}: LiteRT {_oracle(want[greedy])}, predicted {got}"
                )
        checked += 1
    assert checked > 0, f"no corpus model could be run by LiteRT: {unrunnable}"
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_tf_zoo_matches_litert(tmp_path):
    pytest.importorskip("tensorflow")
    from zoo import build_zoo

    failures = []
    for name, path in sorted(build_zoo(tmp_path).items()):
        want = litert_delegates_isolated(path)
        assert not isinstance(want, str), want
        for greedy in (True, False):
            got = _predicted(path, greedy)
            if got != _oracle(want[greedy]):
                failures.append(f"{name} greedy={greedy}: {_oracle(want[greedy])} vs {got}")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["big_graph_4k"])
def test_on_demand_corpus_model_matches_litert(get_corpus_model, name):
    path = get_corpus_model(name)
    want = litert_delegates_isolated(path)
    assert not isinstance(want, str), want
    for greedy in (True, False):
        assert _predicted(path, greedy) == _oracle(want[greedy])
