"""The evaluation function on hand-computed cases, and its agreement with TFLite's epochs."""

from __future__ import annotations

import numpy as np
import pytest
from pgraphs import graph, random_graph

from edgepart.claim.epochs import partition_independent_subsets
from edgepart.placement.evaluate import evaluate, form_partitions, objective_key, score
from edgepart.placement.placement_check import check_evaluation

SHARED = [
    {"name": "cpu", "kind": "cpu", "memory_domain": "dram"},
    {"name": "gpu", "kind": "gpu", "memory_domain": "dram"},
]


def test_two_node_chain_every_placement():
    # Link: 1 s + bytes / (100 B/s); the 100-byte tensor costs 2 s; GPU dispatch 0.5 s.
    g = graph([{"cpu": 4, "gpu": 1}, {"cpu": 3, "gpu": 1}], [(0, 1, 100)])
    want = {(0, 0): 7.0, (0, 1): 4 + 2 + 0.5 + 1, (1, 1): 0.5 + 1 + 1, (1, 0): 1.5 + 2 + 3}
    for units, latency in want.items():
        ev = evaluate(g, np.array(units))
        assert ev.latency_s == pytest.approx(latency), units
        check_evaluation(g, ev)
    ev = evaluate(g, np.array([0, 1]))
    assert ev.num_partitions == 2
    assert ev.part_start.tolist() == pytest.approx([0, 6]) and ev.part_end.tolist() == [4, 7.5]
    assert len(ev.xfer_tensor) == 1 and ev.xfer_end[0] == pytest.approx(6.0)


def test_model_inputs_and_outputs_cross_to_the_host():
    g = graph(
        [{"cpu": 4, "gpu": 1}, {"cpu": 3, "gpu": 1}],
        [(0, 1, 100)],
        inputs=[{"name": "x", "bytes": 10, "consumers": [0]}],
        outputs=[{"src": 1, "bytes": 50}],
    )
    ev = evaluate(g, np.array([1, 1]))
    # Input 1 + 10/100 = 1.1 s in; one GPU call 0.5 + 2 s; output 1 + 50/100 = 1.5 s out.
    assert ev.part_start[0] == pytest.approx(1.1)
    assert ev.latency_s == pytest.approx(1.1 + 2.5 + 1.5)
    assert sorted(g.domain_names[d] for d in ev.xfer_dst_dom) == ["dram", "vram"]
    ev = evaluate(g, np.array([0, 0]))  # on the host: nothing moves
    assert ev.latency_s == 7.0 and len(ev.xfer_tensor) == 0


def test_independent_partitions_overlap_but_not_serially():
    # 0 (cpu, 4 s) and 1 (gpu, 3 s) are independent sources; 2 (cpu, 1 s) joins them.
    g = graph(
        [{"cpu": 4, "gpu": 9}, {"cpu": 9, "gpu": 3}, {"cpu": 1, "gpu": 9}],
        [(0, 2, 1), (1, 2, 1)],
        procs=SHARED,
        links=[],
    )
    ev = evaluate(g, np.array([0, 1, 0]))
    assert ev.num_partitions == 3
    assert ev.latency_s == 5.0  # max(4, 3) + 1
    assert ev.serial_latency_s == 8.0  # 4 + 3 + 1, one partition at a time
    assert ev.period_s == 5.0  # the CPU's load
    assert ev.unit_load.tolist() == [5.0, 3.0]


def test_partition_atomicity_delays_consumers_to_the_partition_end():
    # 0 -> 1 and 0 -> 2 -> 3 with 1, 3 on the CPU: {0, 1} is one CPU call, so 2 waits for 1.
    g = graph(
        [{"cpu": 1, "gpu": 1}, {"cpu": 4, "gpu": 4}, {"cpu": 4, "gpu": 4}, {"cpu": 1, "gpu": 1}],
        [(0, 1, 1), (0, 2, 1), (2, 3, 1)],
        procs=SHARED,
        links=[],
    )
    ev = evaluate(g, np.array([0, 0, 1, 0]))
    assert ev.part_of.tolist() == [0, 0, 1, 2]
    assert ev.part_start.tolist() == [0, 5, 9] and ev.latency_s == 10.0


def test_tensor_is_transferred_once_per_destination_domain():
    # 0 (cpu) feeds 1 and 3 on the GPU, which are separate GPU partitions (2 sits between).
    g = graph(
        [{"cpu": 1, "gpu": 1}] * 4,
        [(0, 1, 100), (0, 3, 100), (1, 2, 100), (2, 3, 100)],
    )
    ev = evaluate(g, np.array([0, 1, 0, 1]))
    assert ev.num_partitions == 4
    assert [g.tensor_name(t) for t in ev.xfer_tensor] == ["0:0", "1:0", "2:0"]
    # 0-1 cpu; 3-4.5 gpu; 6.5-7.5 cpu; gpu waits for 3's tensor: 9.5-11.
    assert ev.latency_s == pytest.approx(11.0)
    # dram->vram carries two tensors (4 s), vram->dram one (2 s); the GPU is busy 3 s.
    assert ev.period_s == pytest.approx(4.0)


def test_same_domain_is_free_unless_a_self_link_is_given():
    lat = [{"cpu": 1, "gpu": 1}, {"cpu": 1, "gpu": 1}]
    g = graph(lat, [(0, 1, 100)], procs=SHARED, links=[])
    ev = evaluate(g, np.array([0, 1]))
    assert ev.latency_s == 2.0 and len(ev.xfer_tensor) == 0
    g = graph(
        lat, [(0, 1, 100)], procs=SHARED, links=[{"src": "dram", "dst": "dram", "latency_s": 0.25}]
    )
    ev = evaluate(g, np.array([0, 1]))
    assert ev.latency_s == 2.25 and len(ev.xfer_tensor) == 1


def test_units_of_one_processor_run_concurrently():
    procs = [SHARED[0], {**SHARED[1], "units": 2}]
    g = graph(
        [{"cpu": 9, "gpu": 3}, {"cpu": 9, "gpu": 3}, {"cpu": 1, "gpu": 9}],
        [(0, 2, 1), (1, 2, 1)],
        procs=procs,
        links=[],
    )
    one = evaluate(g, np.array([1, 1, 0]))  # both on gpu:0, one call
    two = evaluate(g, np.array([1, 2, 0]))  # gpu:0 and gpu:1
    assert one.latency_s == 7.0 and two.latency_s == 4.0
    assert two.unit_load.tolist() == [1.0, 3.0, 3.0] and two.period_s == 3.0


def test_memory_arena_and_violations():
    procs = [SHARED[0], {**SHARED[1], "memory_bytes": 1000}]
    g = graph([{"cpu": 1, "gpu": 1}] * 3, [(0, 1, 100), (1, 2, 300)], procs=procs, links=[])
    # activation: node 1 reads 100 and writes 300 bytes.
    assert g.activation_bytes.tolist() == [100, 400, 300]
    ev = evaluate(g, np.array([1, 1, 1]))
    assert ev.unit_arena_bytes.tolist() == [0, 400] and ev.feasible
    d = graph([{"cpu": 1, "gpu": 1}] * 3, [(0, 1, 100), (1, 2, 300)], procs=procs, links=[])
    object.__setattr__(d, "weight_bytes", np.array([0, 700, 0]))
    ev = evaluate(d, np.array([1, 1, 1]))
    assert not ev.feasible
    assert ev.violations == ("unit gpu:0 needs 1100 bytes (700 weights + 400 arena) but has 1000",)
    assert objective_key(ev, "latency") == (np.inf, np.inf)
    assert score(d, np.array([1, 1, 1]), "latency") == (np.inf, np.inf)


def test_support_and_colocation_violations():
    lat = [{"cpu": 1, "gpu": "unsupported"}, {"cpu": 1, "gpu": 1}]
    g = graph(lat, [(0, 1, 1)], procs=SHARED, links=[])
    assert "does not support it" in evaluate(g, np.array([1, 1])).violations[0]
    d_lat = [{"cpu": 1, "gpu": 1}, {"cpu": 1, "gpu": 1}]
    from pgraphs import doc

    from edgepart.placement.costgraph import costgraph_from_dict

    d = doc(d_lat, [(0, 1, 1)], procs=SHARED, links=[])
    d["nodes"][0]["colocation"] = d["nodes"][1]["colocation"] = "pair"
    g = costgraph_from_dict(d)
    ev = evaluate(g, np.array([0, 1]))
    assert ev.violations == (
        "colocation group 'pair' is split: node 1 is on gpu:0, the group's first node on cpu:0",
    )


def test_epochs_match_tflite_header_example():
    # 0->1->2*->3*, 1->4, 4->5, 3->5 (starred on the delegate): {0,1,4} {2,3} {5}.
    lat = [{"cpu": 1, "gpu": 1}] * 6
    g = graph(lat, [(0, 1, 1), (1, 2, 1), (2, 3, 1), (1, 4, 1), (4, 5, 1), (3, 5, 1)])
    part_of, part_unit = form_partitions(g, np.array([0, 0, 1, 1, 0, 0]))
    assert part_of.tolist() == [0, 0, 1, 1, 0, 2] and part_unit.tolist() == [0, 1, 0]


@pytest.mark.parametrize("seed", range(12))
def test_two_type_epochs_equal_tflite_partitioner(seed):
    g = random_graph(60, 2, seed)
    rng = np.random.default_rng(seed)
    sup = rng.random(g.num_nodes) < 0.6
    part_of, part_unit = form_partitions(g, sup.astype(np.int64))
    subsets = partition_independent_subsets(
        g.node_inputs,
        g.node_outputs,
        sup,
        num_tensors=len(g.tensor_src),
        graph_outputs=g.output_tensors.tolist(),
    )
    ours = [tuple(sorted(np.flatnonzero(part_of == q).tolist())) for q in range(len(part_unit))]
    theirs = [tuple(sorted(s.nodes)) for s in subsets]
    assert ours == theirs
    assert [bool(u) for u in part_unit] == [s.kind == "delegated" for s in subsets]


@pytest.mark.parametrize("seed", range(6))
def test_score_is_the_evaluation_key(seed):
    g = random_graph(30, 4, seed, memory_pressure=True, colocation=True)
    rng = np.random.default_rng(seed)
    for _ in range(50):
        units = rng.integers(0, g.num_units, g.num_nodes)
        ev = evaluate(g, units)
        for obj in ("latency", "throughput"):
            assert score(g, units, obj) == objective_key(ev, obj)
        if ev.feasible:
            check_evaluation(g, ev)


def test_a_graph_without_edges_evaluates():
    # independent nodes and no tensors at all (the transfer table has no rows)
    g = graph([{"cpu": 1.0, "gpu": 2.0}, {"cpu": 3.0, "gpu": 0.5}], [])
    ev = evaluate(g, np.asarray([0, 1]))
    assert ev.feasible and ev.latency_s == pytest.approx(1.0)
