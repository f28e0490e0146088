"""The exact solver equals brute-force enumeration and is never beaten by the heuristic."""

from __future__ import annotations

import numpy as np
import pytest
from pgraphs import brute_force, random_graph

from edgepart.placement.costgraph import costgraph_from_dict
from edgepart.placement.evaluate import objective_key
from edgepart.placement.exact import solve_exact
from edgepart.placement.heuristic import solve_heuristic
from edgepart.placement.placement_check import check_evaluation
from edgepart.placement.synth import random_costgraph_doc


def _tiny(seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 9))
    procs = int(rng.integers(2, 4))
    d = random_costgraph_doc(
        n, procs, seed, memory_pressure=seed % 3 == 0, colocation=seed % 4 == 0
    )
    if seed % 5 == 0 and procs == 2:
        d["processors"][-1]["units"] = 2  # two identical accelerator units
    g = costgraph_from_dict(d)
    if g.num_units**g.num_nodes > 7000:  # keep enumeration to <= 3 units x 8 nodes
        d["nodes"] = d["nodes"][:7]
        d["edges"] = [e for e in d["edges"] if e["src"] < 7 and e["dst"] < 7]
        d["outputs"] = [{"src": 6}]
        g = costgraph_from_dict(d)
    return g


@pytest.mark.parametrize("objective", ["latency", "throughput"])
@pytest.mark.parametrize("seed", range(14))
def test_exact_matches_brute_force(seed, objective):
    g = _tiny(seed)
    want = brute_force(g, objective)
    res = solve_exact(g, objective)
    got = objective_key(res.evaluation, objective)
    assert res.optimal
    assert got[0] == pytest.approx(want[0], rel=1e-9)
    check_evaluation(g, res.evaluation)


@pytest.mark.parametrize("seed", range(6))
def test_heuristic_never_beats_exact(seed):
    g = random_graph(14 + seed, 3, 100 + seed)
    ex = solve_exact(g, "latency", time_limit=60)  # no incumbents: an independent search
    assert ex.optimal
    h = solve_heuristic(g, "latency", effort=0.2)
    assert h.evaluation.latency_s >= ex.evaluation.latency_s * (1 - 1e-9)
    check_evaluation(g, ex.evaluation)


def test_time_limit_reports_unproven():
    g = random_graph(40, 4, 17)
    h = solve_heuristic(g, effort=0.05)
    res = solve_exact(g, "latency", time_limit=1e-6, incumbents=[h.units])
    assert not res.optimal
    assert res.evaluation.latency_s <= h.evaluation.latency_s  # never worse than the incumbent


def test_node_limit_stops_the_search_deterministically():
    g = random_graph(40, 4, 17)
    runs = [solve_exact(g, "latency", lp_bound=False, node_limit=300) for _ in range(2)]
    for r in runs:
        assert not r.optimal and r.nodes_explored == 301  # the one that found the limit
        check_evaluation(g, r.evaluation)
    assert runs[0].units.tolist() == runs[1].units.tolist()
    full = solve_exact(g, "latency", lp_bound=False, node_limit=10**9, time_limit=120)
    assert full.optimal and full.nodes_explored > 300
