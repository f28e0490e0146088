"""Seeded random DNN-shaped cost graphs for tests and benchmarks.

The graphs mimic what a fused mobile CNN looks like to the partitioner: a stem, then a sequence of
blocks (plain chains, residual blocks with a skip edge, inception-style blocks with 2-4 parallel
branches joined by a concatenation), then a head. Each node gets an op kind; accelerators refuse
some op kinds outright (like a delegate missing an op) and some nodes at random (like a dtype or
rank predicate failing). Costs are synthetic but shaped like the profile defaults suggested in
``partitioning.md`` 7.2 (dispatch tens to hundreds of microseconds, links of tens to hundreds of
microseconds plus bytes over a few GB/s). None of these numbers describe a real device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["random_costgraph_doc"]

_OPS = (
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    "ADD",
    "MUL",
    "MEAN",
    "FULLY_CONNECTED",
    "SOFTMAX",
    "RESHAPE",
    "CONCATENATION",
    "CUSTOM_NMS",
    "RESIZE_BILINEAR",
    "HARD_SWISH",
)
# Relative CPU cost per op kind (convs dominate).
_WEIGHT = {
    "CONV_2D": 3.0,
    "DEPTHWISE_CONV_2D": 1.0,
    "FULLY_CONNECTED": 1.5,
    "ADD": 0.2,
    "MUL": 0.2,
    "MEAN": 0.3,
    "SOFTMAX": 0.2,
    "RESHAPE": 0.05,
    "CONCATENATION": 0.15,
    "CUSTOM_NMS": 1.0,
    "RESIZE_BILINEAR": 0.5,
    "HARD_SWISH": 0.15,
}
# (kind, speed factor range vs CPU, dispatch range s, op refusal prob, node refusal prob)
_ACCEL = {
    "gpu": ("gpu", (0.12, 0.6), (30e-6, 150e-6), 0.15, 0.05),
    "npu": ("npu", (0.04, 0.3), (100e-6, 500e-6), 0.35, 0.10),
    "dsp": ("dsp", (0.15, 0.7), (150e-6, 800e-6), 0.30, 0.10),
}


def _structure(n: int, rng: np.random.Generator) -> tuple[list[str], list[tuple[int, int]]]:
    """Node op kinds and edges of a DNN-shaped DAG with exactly ``n`` nodes (execution order)."""
    ops: list[str] = []
    edges: list[tuple[int, int]] = []

    def add(op: str, preds: list[int]) -> int:
        v = len(ops)
        ops.append(op)
        edges.extend((p, v) for p in preds)
        return v

    cur = add("CONV_2D", [])
    while len(ops) < n:
        left = n - len(ops)
        r = rng.random()
        if left >= 6 and r < 0.3:  # inception-style block
            ends = []
            for _ in range(int(rng.integers(2, 5))):
                x = cur
                for _ in range(int(rng.integers(1, 3))):
                    if len(ops) >= n - 1:
                        break
                    x = add(str(rng.choice(_OPS[:2] + _OPS[9:11])), [x])
                ends.append(x)
            cur = add("CONCATENATION", sorted(set(ends)))
        elif left >= 4 and r < 0.6:  # residual block
            x = cur
            for _ in range(int(rng.integers(1, min(4, left - 1) + 1))):
                x = add(str(rng.choice(_OPS[:2] + _OPS[11:])), [x])
            cur = add("ADD", [cur, x])
        else:
            cur = add(str(rng.choice(_OPS)), [cur])
    return ops, edges


def random_costgraph_doc(
    n: int,
    num_procs: int,
    seed: int,
    *,
    memory_pressure: bool = False,
    colocation: bool = False,
) -> dict[str, Any]:
    """A random DNN-shaped cost-graph document (version 1) with ``n`` nodes.

    Parameters
    ----------
    n : int
        Number of nodes (>= 2).
    num_procs : int
        1 to 4: a CPU plus the first ``num_procs - 1`` of a random order of GPU, NPU, DSP.
    seed : int
        Everything random derives from this.
    memory_pressure : bool
        Give the fastest accelerator a memory capacity of about half the model's weights.
    colocation : bool
        Put a few random pairs of adjacent nodes into colocation groups.

    Returns
    -------
    dict
        A document :func:`~edgepart.placement.costgraph.costgraph_from_dict` accepts.
    """
    rng = np.random.default_rng(seed)
    ops, edges = _structure(n, rng)
    accel = [str(a) for a in rng.permutation(sorted(_ACCEL))[: max(0, num_procs - 1)]]
    procs: list[dict[str, Any]] = [
        {
            "name": "cpu",
            "kind": "cpu",
            "memory_domain": "dram",
            "dispatch_s": float(rng.uniform(0, 5e-6)),
        }
    ]
    links: list[dict[str, Any]] = []
    base = rng.lognormal(np.log(2e-4), 0.6, size=n) * np.array([_WEIGHT[o] for o in ops])
    lat: dict[str, np.ndarray] = {"cpu": base}
    for a in accel:
        kind, (f0, f1), (d0, d1), p_op, p_node = _ACCEL[a]
        shared = a == "gpu" and rng.random() < 0.5
        dom = "dram" if shared else f"{a}_mem"
        procs.append(
            {
                "name": a,
                "kind": kind,
                "memory_domain": dom,
                "dispatch_s": float(rng.uniform(d0, d1)),
            }
        )
        if not shared:
            links.append(
                {
                    "src": "dram",
                    "dst": dom,
                    "latency_s": float(rng.uniform(20e-6, 300e-6)),
                    "bandwidth_bytes_per_s": float(rng.uniform(2e9, 25e9)),
                }
            )
        refused = {o for o in _OPS if rng.random() < p_op}
        speed = rng.uniform(f0, f1) * rng.lognormal(0.0, 0.35, size=n)
        x = base * speed
        x[(rng.random(n) < p_node) | np.array([o in refused for o in ops])] = np.inf
        lat[a] = x
    doms = sorted({p["memory_domain"] for p in procs} - {"dram"})
    for i, a in enumerate(doms):
        for b in doms[i + 1 :]:
            links.append(
                {
                    "src": a,
                    "dst": b,
                    "latency_s": float(rng.uniform(50e-6, 400e-6)),
                    "bandwidth_bytes_per_s": float(rng.uniform(2e9, 10e9)),
                }
            )
    out_bytes = (rng.lognormal(np.log(2e5), 1.0, size=n)).astype(np.int64) + 64
    wbytes = np.where(
        np.isin(ops, ["CONV_2D", "FULLY_CONNECTED", "DEPTHWISE_CONV_2D"]),
        rng.lognormal(np.log(1e5), 1.2, size=n),
        0,
    ).astype(np.int64)
    nodes: list[dict[str, Any]] = []
    for v in range(n):
        nd: dict[str, Any] = {
            "id": v,
            "op": ops[v],
            "weight_bytes": int(wbytes[v]),
            "output_bytes": int(out_bytes[v]),
            "latency_s": {},
        }
        for p in procs:
            x = float(lat[p["name"]][v])
            nd["latency_s"][p["name"]] = "unsupported" if not np.isfinite(x) else x
        nodes.append(nd)
    if colocation:
        for k, (s, d) in enumerate(edges[:: max(1, len(edges) // 3)][:3]):
            nodes[s]["colocation"] = nodes[d]["colocation"] = f"g{k}"
    if memory_pressure and accel:
        fast = min(
            accel, key=lambda a: float(np.nanmean(np.where(np.isfinite(lat[a]), lat[a], np.nan)))
        )
        p = next(q for q in procs if q["name"] == fast)
        p["memory_bytes"] = int(wbytes.sum() // 2 + out_bytes.max() * 3)
    return {
        "format": "edgepart-costgraph",
        "version": 1,
        "name": f"synthetic-n{n}-p{num_procs}-s{seed}",
        "processors": procs,
        "links": links,
        "nodes": nodes,
        "edges": [{"src": s, "dst": d} for s, d in edges],
        "inputs": [{"name": "input", "bytes": int(out_bytes[0]), "consumers": [0]}],
        "outputs": [{"src": n - 1}],
    }
