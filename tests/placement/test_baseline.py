"""TFLite's default placement: epochs, partition caps per delegate kind, minimum sizes."""

from __future__ import annotations

import pytest
from pgraphs import doc

from edgepart.placement.baseline import best_baseline, tflite_baselines, tflite_default_units
from edgepart.placement.costgraph import costgraph_from_dict

U = "unsupported"


def _chain(pattern: str, kind: str, **proc):
    # A chain of nodes; pattern char '1' = the accelerator supports the node.
    lat = [{"cpu": 1.0, "acc": 0.1 if c == "1" else U} for c in pattern]
    procs = [
        {"name": "cpu", "kind": "cpu", "memory_domain": "dram"},
        {"name": "acc", "kind": kind, "memory_domain": "dram", **proc},
    ]
    return costgraph_from_dict(
        doc(lat, [(i, i + 1, 8) for i in range(len(pattern) - 1)], procs=procs, links=[])
    )


def _placed(g, d=1):
    return "".join(str(int(u)) for u in tflite_default_units(g, d))


def test_gpu_keeps_only_the_largest_partition():
    assert _placed(_chain("1101110", "gpu")) == "0001110"


def test_nnapi_keeps_three():
    g = _chain("1010101011", "npu")
    assert _placed(g) == "1010000011"  # the two-node one, then the first two (ties: plan order)


def test_hexagon_needs_two_nodes_per_partition():
    assert _placed(_chain("1011011010", "dsp")) == "0011011000"


def test_explicit_limits_override_kind_defaults():
    g = _chain("1101110", "gpu", tflite={"max_delegated_partitions": 0})
    assert _placed(g) == "1101110"
    g = _chain("1101110", "other", tflite={"min_nodes_per_partition": 3})
    assert _placed(g) == "0001110"


def test_candidates_and_explicit_delegate():
    g = _chain("1101110", "gpu")
    names = [b.name for b in tflite_baselines(g)]
    assert names == ["cpu-only", "tflite:acc"]
    best = best_baseline(tflite_baselines(g), "latency")
    assert best is not None and best.name == "tflite:acc"
    d = doc(
        [{"cpu": 1.0, "acc": 0.1}] * 2,
        [(0, 1, 8)],
        procs=[
            {"name": "cpu", "kind": "cpu"},
            {"name": "acc", "kind": "gpu", "memory_domain": "cpu"},
        ],
        links=[],
        baseline={"delegate": "acc"},
    )
    assert [b.name for b in tflite_baselines(costgraph_from_dict(d))] == ["tflite:acc"]


def test_cpu_unsupported_node_makes_candidates_infeasible():
    d = doc(
        [{"cpu": U, "acc": 1.0}, {"cpu": 1.0, "acc": U}],
        [(0, 1, 8)],
        procs=[
            {"name": "cpu", "kind": "cpu"},
            {"name": "acc", "kind": "gpu", "memory_domain": "cpu"},
        ],
        links=[],
    )
    bl = tflite_baselines(costgraph_from_dict(d))
    assert [b.feasible for b in bl] == [False, True]
    assert "does not support it" in bl[0].evaluation.violations[0]


@pytest.mark.parametrize("kind,limit", [("gpu", 1), ("npu", 3), ("dsp", 4), ("other", 0)])
def test_kind_defaults(kind, limit):
    g = _chain("1", kind)
    assert g.proc_tflite[1][0] == limit
