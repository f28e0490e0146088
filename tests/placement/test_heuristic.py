"""The heuristic and the solve API: never worse than the baseline, deterministic, clear failures."""

from __future__ import annotations

import numpy as np
import pytest
from pgraphs import doc, random_graph

from edgepart.errors import PlacementInfeasibleError, UsageError
from edgepart.placement.baseline import best_baseline, tflite_baselines
from edgepart.placement.costgraph import costgraph_from_dict
from edgepart.placement.evaluate import objective_key
from edgepart.placement.exact import solve_exact
from edgepart.placement.heuristic import solve_heuristic
from edgepart.placement.placement_check import check_evaluation
from edgepart.placement.solve import SolveOptions, partition_costgraph
from edgepart.placement.starts import chain_dp_start
from edgepart.placement.synth import random_costgraph_doc


@pytest.mark.parametrize("objective", ["latency", "throughput"])
@pytest.mark.parametrize("seed", range(10))
def test_never_worse_than_the_tflite_baseline(seed, objective):
    rng = np.random.default_rng(seed)
    g = random_graph(
        int(rng.integers(10, 60)), int(rng.integers(2, 5)), seed, memory_pressure=seed % 2 == 1
    )
    sol = partition_costgraph(g, "heuristic", SolveOptions(objective=objective, effort=0.2))
    check_evaluation(g, sol.evaluation)
    base = best_baseline(list(sol.baselines), objective)
    assert base is not None
    assert objective_key(sol.evaluation, objective) <= objective_key(base.evaluation, objective)


def test_deterministic_and_seeded():
    g = random_graph(80, 4, 3)
    a = solve_heuristic(g, effort=0.3, seed=5)
    b = solve_heuristic(random_graph(80, 4, 3), effort=0.3, seed=5)
    assert a.units.tolist() == b.units.tolist()
    assert a.evaluation.latency_s == b.evaluation.latency_s


def test_chain_dp_is_optimal_on_a_chain():
    # On a pure chain with one unit per processor the DP's serial cost model is exact.
    d = random_costgraph_doc(9, 3, 4)
    d["edges"] = [{"src": i, "dst": i + 1} for i in range(8)]
    g = costgraph_from_dict(d)
    from edgepart.placement.constraints import admissible
    from edgepart.placement.evaluate import evaluate

    dp = evaluate(g, chain_dp_start(g, admissible(g)))
    ex = solve_exact(g)
    assert ex.optimal and dp.latency_s == pytest.approx(ex.evaluation.latency_s, rel=1e-9)


def test_memory_pressure_spills_to_the_cpu():
    # An accelerator that can hold about half the weights: the plan must stay feasible.
    g = random_graph(60, 2, 11, memory_pressure=True)
    sol = partition_costgraph(g, "heuristic", SolveOptions(effort=0.2))
    accel = [u for u in range(g.num_units) if g.proc_kinds[g.unit_proc[u]] != "cpu"]
    assert any(np.isfinite(g.proc_memory[g.unit_proc[u]]) for u in accel)
    used = sol.evaluation.unit_weight_bytes + sol.evaluation.unit_arena_bytes
    assert (used <= g.proc_memory[g.unit_proc]).all()
    assert sol.evaluation.feasible and (sol.units == 0).any()
    check_evaluation(g, sol.evaluation)


def test_node_nobody_supports_is_named():
    d = doc([{"cpu": 1, "gpu": 1}, {"cpu": "unsupported", "gpu": "unsupported"}], [(0, 1, 1)])
    d["nodes"][1]["name"] = "nms"
    d["nodes"][1]["op"] = "CUSTOM"
    with pytest.raises(
        PlacementInfeasibleError,
        match=r"node 'nms' \(id 1\) \[CUSTOM\] is "
        r"unsupported by every processor",
    ):
        solve_heuristic(costgraph_from_dict(d))


def test_node_too_big_for_every_unit_reports_numbers():
    d = doc([{"cpu": 1, "gpu": 1}, {"cpu": "unsupported", "gpu": 1}], [(0, 1, 10)])
    d["processors"][1]["memory_bytes"] = 1000
    d["nodes"][1]["weight_bytes"] = 5000
    with pytest.raises(
        PlacementInfeasibleError,
        match=r"node 1 fits no unit: it needs 5010 bytes \(5000 weights \+ 10 activations\); "
        r"memory per unit of the processors that support it: gpu 1000 bytes",
    ):
        partition_costgraph(costgraph_from_dict(d))


def test_colocation_group_without_a_common_processor():
    d = doc([{"cpu": 1, "gpu": "unsupported"}, {"cpu": "unsupported", "gpu": 1}], [(0, 1, 1)])
    d["nodes"][0]["colocation"] = d["nodes"][1]["colocation"] = "g"
    with pytest.raises(PlacementInfeasibleError, match=r"colocation group 'g' .* has no processor"):
        partition_costgraph(costgraph_from_dict(d))


def test_units_that_cannot_hold_everything_fail_clearly():
    # Each node fits alone, but the only processor's single unit cannot hold both.
    d = doc(
        [{"cpu": 1}, {"cpu": 1}],
        [(0, 1, 10)],
        procs=[{"name": "cpu", "kind": "cpu", "memory_bytes": 120}],
        links=[],
    )
    d["nodes"][0]["weight_bytes"] = d["nodes"][1]["weight_bytes"] = 100
    with pytest.raises(
        PlacementInfeasibleError,
        match=r"the weights need 200 bytes but all units together hold 120 bytes \(cpu:0 120",
    ):
        partition_costgraph(costgraph_from_dict(d))


def test_units_that_cannot_pack_everything_fail_naming_a_unit():
    # Enough memory in total (2 x 160 >= 3 x 100), but each unit holds one node only.
    d = doc(
        [{"cpu": 1}, {"cpu": 1}, {"cpu": 1}],
        [(0, 1, 10), (1, 2, 10)],
        procs=[{"name": "cpu", "kind": "cpu", "units": 2, "memory_bytes": 160}],
        links=[],
    )
    for v in range(3):
        d["nodes"][v]["weight_bytes"] = 100
    with pytest.raises(PlacementInfeasibleError, match=r"unit cpu:\d needs 2\d\d bytes"):
        partition_costgraph(costgraph_from_dict(d))


def test_bad_method_and_objective():
    g = random_graph(10, 2, 0)
    with pytest.raises(
        UsageError, match="unknown partition method 'magic'; valid: edge-cut, exact, heuristic"
    ):
        partition_costgraph(g, "magic")
    with pytest.raises(UsageError, match="unknown objective 'energy'"):
        partition_costgraph(g, options=SolveOptions(objective="energy"))


def test_baselines_are_feasible_starts():
    g = random_graph(40, 4, 8)
    bl = tflite_baselines(g)
    assert next(b.name for b in bl) == "cpu-only" and len(bl) == 4
    for b in bl:
        if b.feasible:
            check_evaluation(g, b.evaluation)


def _multi_node_move_graph():
    # partition_quality's instance 96 (28 nodes, 4 processors): its optimum moves five nodes
    # from two units to the GPU at once, which the local search's moves and kicks miss
    rng = np.random.default_rng([0, 96])
    n, procs = int(rng.integers(10, 41)), int(rng.integers(2, 5))
    d = random_costgraph_doc(
        n,
        procs,
        96,
        memory_pressure=bool(rng.random() < 0.2),
        colocation=bool(rng.random() < 0.1),
    )
    return costgraph_from_dict(d)


def test_small_graphs_end_with_the_exact_search():
    from edgepart.placement import heuristic

    g = _multi_node_move_graph()
    assert g.num_nodes <= heuristic.EXACT_TAIL_MAX_NODES
    opt = solve_exact(g, "latency", time_limit=120)
    assert opt.optimal
    h = solve_heuristic(g, "latency")
    assert h.stats["exact_nodes"] <= heuristic.EXACT_TAIL_SEARCH_NODES + 1
    assert h.evaluation.latency_s == pytest.approx(opt.evaluation.latency_s, rel=1e-12)
    # proven within its node limit: the bound is the optimum
    assert h.bound == pytest.approx(opt.evaluation.latency_s, rel=1e-9)
    check_evaluation(g, h.evaluation)


def test_budget_grows_with_units_up_to_twice():
    from edgepart.placement.heuristic import evaluation_budget

    def budget(units: int) -> int:
        d = random_costgraph_doc(300, 2, 5)
        d["processors"][1]["units"] = units - 1
        return evaluation_budget(costgraph_from_dict(d))

    b2, b4, b9, b16, b32 = (budget(u) for u in (2, 4, 9, 16, 32))
    assert b2 == b4 and b9 == pytest.approx(1.5 * b4, rel=1e-3)
    assert b16 == pytest.approx(2 * b4, rel=1e-3) and b32 == b16


def test_memory_repair_moves_colocation_groups_whole():
    # a training graph (each backward node colocated with its forward node) whose accelerator
    # memory binds: every node on the first accelerator must be repaired group by group, or
    # no start that uses the accelerators is feasible
    from edgepart.placement.constraints import admissible
    from edgepart.placement.evaluate import evaluate
    from edgepart.placement.heuristic import repair_memory
    from edgepart.placement.starts import pack_units
    from edgepart.placement.synth_nets import network_costgraph_doc

    g = costgraph_from_dict(
        network_costgraph_doc("transformer", 300, 8, 1020, platform="accel", training=True)
    )
    assert len(g.coloc_names) > 0
    adm = admissible(g)
    accel = g.proc_names.index("accel")
    start = np.where(adm[:, accel], int(g.proc_first_unit[accel]), int(g.proc_first_unit[0]))
    for units in (start, pack_units(g, start)):
        fixed = repair_memory(g, adm, units)
        ev = evaluate(g, fixed)
        assert ev.feasible, ev.violations[:1]
        assert (fixed != int(g.proc_first_unit[0])).any()  # the accelerators are still used
