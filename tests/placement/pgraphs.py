"""Small cost-graph builders shared by the partition tests."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import numpy as np

from edgepart.placement.costgraph import CostGraph, costgraph_from_dict
from edgepart.placement.evaluate import evaluate, objective_key
from edgepart.placement.synth import random_costgraph_doc

CPU_GPU = [
    {"name": "cpu", "kind": "cpu", "memory_domain": "dram"},
    {"name": "gpu", "kind": "gpu", "memory_domain": "vram", "dispatch_s": 0.5},
]
LINK = [{"src": "dram", "dst": "vram", "latency_s": 1.0, "bandwidth_bytes_per_s": 100.0}]


def doc(
    lat: list[dict[str, Any]],
    edges: list[tuple[Any, ...]],
    procs: list[dict[str, Any]] | None = None,
    links: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A document with nodes 0..n-1 (latency dicts) and edges (src, dst, bytes[, tensor])."""
    d: dict[str, Any] = {
        "format": "edgepart-costgraph",
        "version": 1,
        "processors": copy.deepcopy(procs if procs is not None else CPU_GPU),
        "links": copy.deepcopy(links if links is not None else LINK),
        "nodes": [{"id": i, "latency_s": dict(x)} for i, x in enumerate(lat)],
        "edges": [
            {"src": e[0], "dst": e[1], "bytes": e[2], **({"tensor": e[3]} if len(e) > 3 else {})}
            for e in edges
        ],
    }
    d.update(extra)
    return d


def graph(*args: Any, **kw: Any) -> CostGraph:
    return costgraph_from_dict(doc(*args, **kw))


def random_graph(n: int, procs: int, seed: int, **kw: Any) -> CostGraph:
    return costgraph_from_dict(random_costgraph_doc(n, procs, seed, **kw))


def brute_force(g: CostGraph, objective: str) -> tuple[float, float]:
    """The best objective key over every placement (every node on every unit)."""
    best = (np.inf, np.inf)
    for combo in itertools.product(range(g.num_units), repeat=g.num_nodes):
        key = objective_key(evaluate(g, np.asarray(combo)), objective)
        best = min(best, key)
    return best
