"""Edge-cut mode: balanced blocks, few bytes cut, repaired into valid plans; METIS optional."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from pgraphs import doc, random_graph

from edgepart.errors import UsageError
from edgepart.placement.costgraph import costgraph_from_dict
from edgepart.placement.edgecut import edge_cut, transferred_bytes
from edgepart.placement.placement_check import check_evaluation
from edgepart.placement.solve import SolveOptions, partition_costgraph


def _homogeneous_chain(n: int, k_units: int):
    # n equal nodes on one processor with k identical units: the pipeline case (Coral-like).
    lat = [{"tpu": 1.0}] * n
    procs = [{"name": "tpu", "kind": "tpu", "units": k_units}]
    return costgraph_from_dict(
        doc(lat, [(i, i + 1, 10 + i) for i in range(n - 1)], procs=procs, links=[])
    )


def test_interval_split_of_a_chain_is_balanced_and_pipelined():
    g = _homogeneous_chain(12, 4)
    r = edge_cut(g, 4)
    assert np.bincount(r.blocks).tolist() == [3, 3, 3, 3]
    assert sorted(set(r.units.tolist())) == [0, 1, 2, 3]  # one block per unit
    assert r.evaluation.period_s == pytest.approx(3.0)  # versus 12 on one unit
    assert r.cut_bytes == 12 + 15 + 18  # the three tensors crossing block boundaries
    check_evaluation(g, r.evaluation)


def test_interval_prefers_cheap_cuts_within_the_balance_window():
    lat = [{"cpu": 1.0}] * 8
    sizes = [50, 50, 50, 1, 50, 50, 50]
    d = doc(
        lat,
        [(i, i + 1, b) for i, b in enumerate(sizes)],
        procs=[{"name": "cpu", "kind": "cpu", "units": 2}],
        links=[],
    )
    r = edge_cut(costgraph_from_dict(d), 2, imbalance=0.3)
    assert r.raw_cut_bytes == 1 and r.raw_blocks.tolist() == [0] * 4 + [1] * 4


@pytest.mark.parametrize("method", ["interval", "metis"])
@pytest.mark.parametrize("seed", range(5))
def test_repaired_plans_are_valid(method, seed):
    if method == "metis":
        pytest.importorskip("pymetis")
    g = random_graph(60, 4, seed)
    r = edge_cut(g, 3, method=method, seed=seed)
    assert r.evaluation.feasible
    check_evaluation(g, r.evaluation)
    # Blocks after the convexity repair never go backwards along an edge.
    src = np.repeat(np.arange(g.num_nodes), np.diff(g.succ.ptr))
    assert (r.blocks[src] <= r.blocks[g.succ.idx]).all()
    assert r.cut_bytes == transferred_bytes(g, r.units)


def test_metis_missing_gives_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pymetis", None)
    with pytest.raises(UsageError, match="needs the optional package pymetis"):
        edge_cut(random_graph(20, 2, 0), 2, method="metis")


def test_bad_arguments():
    g = random_graph(10, 2, 0)
    with pytest.raises(UsageError, match="k >= 1"):
        edge_cut(g, 0)
    with pytest.raises(UsageError, match="unknown edge-cut method 'kl'"):
        edge_cut(g, 2, method="kl")


def test_solve_api_edge_cut_mode_reports_the_baseline():
    g = _homogeneous_chain(12, 4)
    sol = partition_costgraph(g, "edge-cut", SolveOptions(objective="throughput", edge_cut_k=4))
    assert sol.chosen == "edge-cut" and sol.info["cut_bytes"] == 45
    assert sol.evaluation.period_s == pytest.approx(3.0)
