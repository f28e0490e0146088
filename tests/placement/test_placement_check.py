"""The plan checker accepts valid plans and catches every kind of deliberately broken one."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from pgraphs import doc, random_graph

from edgepart.errors import PlanError
from edgepart.placement.costgraph import costgraph_from_dict
from edgepart.placement.evaluate import evaluate
from edgepart.placement.placement_check import PlanView, check_evaluation, check_plan

LAT = {"cpu": 1.0, "gpu": 0.5}


def _graph(**kw):
    d = doc(
        [LAT, LAT, {"cpu": 1.0, "gpu": "unsupported"}, LAT],
        [(0, 1, 100), (1, 2, 100), (2, 3, 100), (0, 3, 100)],
        outputs=[{"src": 3, "bytes": 10}],
        **kw,
    )
    d["processors"][1]["memory_bytes"] = 1000
    d["nodes"][0]["colocation"] = d["nodes"][1]["colocation"] = "pair"
    return costgraph_from_dict(d)


def _view(g, units):
    ev = evaluate(g, np.asarray(units))
    assert ev.feasible, ev.violations
    parts = [np.flatnonzero(ev.part_of == q) for q in range(ev.num_partitions)]
    return PlanView(
        parts, ev.part_unit.copy(), ev.part_start.copy(), ev.part_end.copy(), ev.latency_s
    )


def test_valid_plan_passes():
    g = _graph()
    check_plan(g, _view(g, [1, 1, 0, 1]))


def _broken(view, **changes):
    return dataclasses.replace(view, **changes)


def test_catches_each_violation():
    g = _graph()
    v = _view(g, [1, 1, 0, 1])  # partitions {0,1} gpu, {2} cpu, {3} gpu
    p = list(v.part_nodes)
    cases = [
        (_broken(v, part_nodes=[p[0], p[1], np.array([], np.int64)]), "partition 2 is empty"),
        (
            _broken(v, part_nodes=[p[0], p[1]], part_unit=v.part_unit[:2]),
            "node 3 is in no partition",
        ),
        (_broken(v, part_nodes=[p[0], np.array([2, 1]), p[2]]), "node 1 is in partitions 0 and 1"),
        (_broken(v, part_unit=np.array([1, 1, 1])), "holds node 2, which gpu does not support"),
        (_broken(v, part_unit=np.array([1, 5, 1])), "partition 1 is on unit index 5"),
        (
            _broken(
                v,
                part_nodes=[np.array([0]), np.array([1]), np.array([2]), np.array([3])],
                part_unit=np.array([0, 1, 0, 1]),
            ),
            "colocation group 'pair' is split",
        ),
        (_broken(v, part_end=v.part_end + np.array([0.0, 0.5, 0.0])), "partition 1 lasts"),
        (
            _broken(
                v,
                part_start=v.part_start - 0.1 * (np.arange(3) == 1),
                part_end=v.part_end - 0.1 * (np.arange(3) == 1),
            ),
            "partition 1 starts at",
        ),
        (_broken(v, latency_s=v.latency_s + 1), "predicted latency"),
    ]
    for view, needle in cases:
        with pytest.raises(PlanError, match=needle):
            check_plan(g, view)


def test_catches_non_convex_partition():
    g = _graph()
    v = _view(g, [1, 1, 0, 1])
    # {0, 1, 3} on the GPU with 2 on the CPU: 1 -> 2 -> 3 leaves and re-enters the partition.
    bad = PlanView(
        [np.array([0, 1, 3]), np.array([2])],
        np.array([1, 0]),
        np.array([0.0, 5.0]),
        np.array([3.0, 6.0]),
        6.0,
    )
    with pytest.raises(
        PlanError,
        match=r"partitions 0 -> 1 -> 0 form a cycle, so partition 0 is "
        r"not convex",
    ):
        check_plan(g, bad)
    del v


def test_catches_unit_overlap_and_memory():
    procs = [
        {"name": "cpu", "kind": "cpu", "memory_domain": "dram"},
        {"name": "gpu", "kind": "gpu", "memory_domain": "dram", "memory_bytes": 220},
    ]
    d = doc([LAT, LAT, LAT], [(0, 2, 100), (1, 2, 100)], procs=procs, links=[])
    for nd in d["nodes"]:
        nd["weight_bytes"] = 70
    g = costgraph_from_dict(d)
    v = _view(g, [0, 1, 0])
    # Two independent partitions squeezed onto the CPU at the same time.
    overlap = PlanView(
        [np.array([0]), np.array([1]), np.array([2])],
        np.array([0, 0, 0]),
        np.array([0.0, 0.0, 1.0]),
        np.array([1.0, 1.0, 2.0]),
        2.0,
    )
    with pytest.raises(PlanError, match="partitions 0 and 1 overlap on unit cpu:0"):
        check_plan(g, overlap)
    two_on_gpu = PlanView(
        [np.array([0, 1]), np.array([2])],
        np.array([1, 0]),
        np.array([0.0, 1.0]),
        np.array([1.0, 2.0]),
        2.0,
    )
    with pytest.raises(
        PlanError,
        match=r"unit gpu:0 holds 140 bytes of weights plus a 100-byte arena, more than its 220",
    ):
        check_plan(g, two_on_gpu)
    check_plan(g, v)


@pytest.mark.parametrize("seed", range(8))
def test_random_feasible_evaluations_pass(seed):
    g = random_graph(40, 4, seed)
    rng = np.random.default_rng(seed)
    sup = g.supported()
    for _ in range(40):
        procs = [int(rng.choice(np.flatnonzero(sup[v]))) for v in range(g.num_nodes)]
        ev = evaluate(g, g.proc_first_unit[procs])
        assert ev.feasible
        check_evaluation(g, ev)
