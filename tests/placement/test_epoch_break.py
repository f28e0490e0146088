"""``CostGraph.epoch_break``: marked nodes open their own partition instead of joining the one
that made them ready (tensor-parallel shards), and unmarked graphs are unchanged."""

from __future__ import annotations

import dataclasses

import numpy as np

from edgepart.placement.costgraph import costgraph_from_dict
from edgepart.placement.evaluate import evaluate, form_partitions
from edgepart.placement.placement_check import check_evaluation


def _graph():
    # P -> (S0, S1) -> G: a producer, two shards, their gather; 1 ms each on one 2-unit CPU
    doc = {
        "format": "edgepart-costgraph",
        "version": 1,
        "processors": [{"name": "cpu", "kind": "cpu", "units": 2}],
        "nodes": [{"id": i, "latency_s": {"cpu": 1e-3}} for i in range(4)],
        "edges": [
            {"src": 0, "dst": 1, "bytes": 64},
            {"src": 0, "dst": 2, "bytes": 64},
            {"src": 1, "dst": 3, "bytes": 64},
            {"src": 2, "dst": 3, "bytes": 64},
        ],
    }
    return costgraph_from_dict(doc)


def test_without_breaks_the_shard_joins_its_producer_and_the_split_serializes():
    g = _graph()
    units = np.array([0, 0, 1, 0])
    part_of, _ = form_partitions(g, units)
    assert part_of[0] == part_of[1]  # P and shard 0 in one partition
    ev = evaluate(g, units)
    assert abs(ev.latency_s - 4e-3) < 1e-9  # S1 waits for the partition [P, S0] to end


def test_breaks_let_the_shards_overlap():
    g = _graph()
    brk = np.array([False, True, True, True])
    gb = dataclasses.replace(g, epoch_break=brk)
    units = np.array([0, 0, 1, 0])
    part_of, _ = form_partitions(gb, units)
    assert len(set(part_of.tolist())) == 4
    ev = evaluate(gb, units)
    assert abs(ev.latency_s - 3e-3) < 1e-9  # P, then S0 and S1 together, then G
    s0, s1 = part_of[1], part_of[2]
    assert ev.part_start[s0] == ev.part_start[s1]
    check_evaluation(gb, ev)
    # no marks: the same partitions as a graph without the field
    none = dataclasses.replace(g, epoch_break=np.zeros(4, dtype=bool))
    assert form_partitions(none, units)[0].tolist() == form_partitions(g, units)[0].tolist()
