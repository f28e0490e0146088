"""Seeded operator-level cost graphs shaped like real networks (placement-at-scale benchmark).

:mod:`edgepart.placement.synth` makes small fused DAGs; this module makes *unfused* operator
graphs of 200-10,000+ nodes with the structure of real models:

* ``transformer``: encoder layers of many cheap ops (layer norms written out as MEAN, SUB, MUL,
  RSQRT..., softmax as MAX, SUB, EXP, SUM, DIV, GELU as its polynomial) around a few heavy
  matmuls (Q, K, V, output and two feed-forward projections, two attention batch-matmuls);
* ``resnet``: bottleneck blocks (1x1, 3x3, 1x1 convolutions, batch norm as MUL and ADD, ReLU,
  projection shortcuts when the shape changes) in four stages of falling resolution;
* ``encdec``: an encoder stack and a decoder stack whose cross-attention reads the encoder's
  output in every decoder layer (long edges);
* ``branchy``: inception-style blocks of 2-4 parallel branches joined by a concatenation;
* any of these ``+train``: a backward node paired with every forward node (colocated with it, as
  it updates the same weights), gradients flowing in reverse, saved activations from the forward
  node to its backward node.

Costs come from a roofline per processor (``max(flops / peak, bytes / bandwidth)`` plus a
per-op overhead, with seeded per-(op, processor) jitter); accelerators refuse some op kinds
outright and a few nodes at random. Platforms (:data:`PLATFORMS`) give 2 to 16 units: a phone
(CPU cores, GPU, NPU, DSP), ``accel``: CPU cores plus ``k`` identical accelerators with their own
memories (the setting of Tarnawski et al., NeurIPS'20), and ``hetero``: groups of CPU, GPU and
NPU units. Accelerator memory per unit is a fraction of the model's weights, so memory limits
bind and a plan must spread the weights. None of these numbers describe a real device; they
are shaped like the profile defaults of ``partitioning.md`` 7.2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["FAMILIES", "PLATFORMS", "network_costgraph_doc"]

FAMILIES = ("transformer", "resnet", "encdec", "branchy")
PLATFORMS = ("phone", "accel", "hetero")

F32 = 4


@dataclass
class _Net:
    """Operator list under construction: kind, flops, bytes moved, output bytes, weights."""

    ops: list[str] = field(default_factory=list)
    flops: list[float] = field(default_factory=list)
    mem: list[float] = field(default_factory=list)
    out: list[int] = field(default_factory=list)
    wts: list[int] = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)

    def add(self, op: str, preds: list[int], flops: float, out: int, wts: int = 0) -> int:
        v = len(self.ops)
        ins = sum(self.out[p] for p in preds)
        self.ops.append(op)
        self.flops.append(float(flops))
        self.mem.append(float(ins + out + wts))
        self.out.append(int(out))
        self.wts.append(int(wts))
        self.edges.extend((p, v) for p in sorted(set(preds)))
        return v

    def ew(self, op: str, preds: list[int], elems: int, cost: float = 1.0) -> int:
        """An element-wise op over ``elems`` values."""
        return self.add(op, preds, cost * elems, elems * F32)

    def matmul(self, x: int, rows: int, k: int, n: int, op: str = "FULLY_CONNECTED") -> int:
        return self.add(op, [x], 2.0 * rows * k * n, rows * n * F32, k * n * F32)

    def layer_norm(self, x: int, elems: int) -> int:
        m = self.ew("MEAN", [x], elems)
        d = self.ew("SUB", [x, m], elems)
        sq = self.ew("MUL", [d, d], elems)
        var = self.ew("MEAN", [sq], elems)
        eps = self.ew("ADD", [var], elems // 64 + 1)
        r = self.ew("RSQRT", [eps], elems // 64 + 1, 4.0)
        y = self.ew("MUL", [d, r], elems)
        g = self.ew("MUL", [y], elems)
        return self.ew("ADD", [g], elems)

    def softmax(self, x: int, elems: int) -> int:
        mx = self.ew("REDUCE_MAX", [x], elems)
        d = self.ew("SUB", [x, mx], elems)
        e = self.ew("EXP", [d], elems, 8.0)
        s = self.ew("SUM", [e], elems)
        return self.ew("DIV", [e, s], elems, 4.0)

    def gelu(self, x: int, elems: int) -> int:
        c = self.ew("MUL", [x, x], elems)
        c = self.ew("MUL", [c, x], elems)
        c = self.ew("MUL", [c], elems)
        c = self.ew("ADD", [x, c], elems)
        c = self.ew("MUL", [c], elems)
        t = self.ew("TANH", [c], elems, 8.0)
        t = self.ew("ADD", [t], elems)
        h = self.ew("MUL", [x], elems)
        return self.ew("MUL", [h, t], elems)


def _attention(
    net: _Net, x: int, seq: int, d: int, heads: int, kv: int | None = None, kv_seq: int = 0
) -> int:
    """Multi-head attention at operator level; ``kv`` is the cross-attention source."""
    src, sk = (x, seq) if kv is None else (kv, kv_seq)
    q = net.matmul(x, seq, d, d)
    q = net.ew("ADD", [q], seq * d)
    k = net.matmul(src, sk, d, d)
    k = net.ew("ADD", [k], sk * d)
    v = net.matmul(src, sk, d, d)
    v = net.ew("ADD", [v], sk * d)
    q = net.ew("RESHAPE", [q], seq * d, 0.1)
    q = net.ew("TRANSPOSE", [q], seq * d, 0.5)
    k = net.ew("RESHAPE", [k], sk * d, 0.1)
    k = net.ew("TRANSPOSE", [k], sk * d, 0.5)
    v = net.ew("RESHAPE", [v], sk * d, 0.1)
    v = net.ew("TRANSPOSE", [v], sk * d, 0.5)
    s = net.add("BATCH_MATMUL", [q, k], 2.0 * seq * sk * d, heads * seq * sk * F32)
    s = net.ew("MUL", [s], heads * seq * sk)
    s = net.ew("ADD", [s], heads * seq * sk)
    p = net.softmax(s, heads * seq * sk)
    o = net.add("BATCH_MATMUL", [p, v], 2.0 * seq * sk * d, seq * d * F32)
    o = net.ew("TRANSPOSE", [o], seq * d, 0.5)
    o = net.ew("RESHAPE", [o], seq * d, 0.1)
    o = net.matmul(o, seq, d, d)
    return net.ew("ADD", [o], seq * d)


def _encoder_layer(net: _Net, x: int, seq: int, d: int, heads: int) -> int:
    a = _attention(net, x, seq, d, heads)
    h = net.ew("ADD", [x, a], seq * d)
    h = net.layer_norm(h, seq * d)
    f = net.matmul(h, seq, d, 4 * d)
    f = net.ew("ADD", [f], 4 * seq * d)
    f = net.gelu(f, 4 * seq * d)
    f = net.matmul(f, seq, 4 * d, d)
    f = net.ew("ADD", [f], seq * d)
    y = net.ew("ADD", [h, f], seq * d)
    return net.layer_norm(y, seq * d)


def _decoder_layer(net: _Net, x: int, enc: int, seq: int, d: int, heads: int, src: int) -> int:
    a = _attention(net, x, seq, d, heads)
    h = net.layer_norm(net.ew("ADD", [x, a], seq * d), seq * d)
    c = _attention(net, h, seq, d, heads, kv=enc, kv_seq=src)
    h = net.layer_norm(net.ew("ADD", [h, c], seq * d), seq * d)
    f = net.matmul(h, seq, d, 4 * d)
    f = net.ew("RELU", [f], 4 * seq * d)
    f = net.matmul(f, seq, 4 * d, d)
    return net.layer_norm(net.ew("ADD", [h, f], seq * d), seq * d)


def _transformer(net: _Net, target: int, rng: np.random.Generator, dec: bool) -> None:
    d = int(rng.choice([256, 384, 512, 768]))
    heads = d // 64
    seq = int(rng.choice([64, 128, 256]))
    x = net.add("GATHER", [], seq * d, seq * d * F32, 30000 * d * F32 // 8)
    x = net.layer_norm(x, seq * d)
    # ops per encoder layer: 58; per encoder plus decoder layer: 140
    layers = max(1, round((target - 12) / (140 if dec else 58)))
    for _ in range(layers):
        x = _encoder_layer(net, x, seq, d, heads)
    if dec:
        enc = x
        y = net.add("GATHER", [], seq * d, seq * d * F32, 30000 * d * F32 // 8)
        for _ in range(layers):
            y = _decoder_layer(net, y, enc, seq, d, heads, seq)
        x = y
    x = net.matmul(x, seq, d, 1000)
    net.softmax(x, seq * 1000)


def _conv(net: _Net, x: int, hw: int, cin: int, cout: int, k: int, stride: int = 1) -> int:
    ho = hw // stride
    return net.add(
        "CONV_2D",
        [x],
        2.0 * ho * ho * cout * k * k * cin,
        ho * ho * cout * F32,
        k * k * cin * cout * F32,
    )


def _bn_relu(net: _Net, x: int, elems: int, relu: bool = True) -> int:
    y = net.ew("MUL", [x], elems)
    y = net.ew("ADD", [y], elems)
    return net.ew("RELU", [y], elems) if relu else y


def _resnet(net: _Net, target: int, rng: np.random.Generator) -> None:
    width = int(rng.choice([32, 48, 64]))
    hw = int(rng.choice([112, 160, 224])) // 2
    x = net.add(
        "CONV_2D", [], 2.0 * hw * hw * width * 49 * 3, hw * hw * width * F32, 49 * 3 * width * F32
    )
    x = _bn_relu(net, x, hw * hw * width)
    x = net.add("MAX_POOL_2D", [x], hw * hw * width * 9 / 4, (hw // 2) ** 2 * width * F32)
    hw //= 2
    blocks = max(4, round((target - 12) / 13.3))  # a bottleneck is 13 ops, 16 with projection
    stages = [max(1, round(blocks * f)) for f in (3 / 16, 4 / 16, 6 / 16, 3 / 16)]
    cin = width
    for s, nb in enumerate(stages):
        mid = width * 2**s
        cout = 4 * mid
        for b in range(nb):
            stride = 2 if (b == 0 and s > 0) else 1
            ho = hw // stride
            y = _conv(net, x, hw, cin, mid, 1)
            y = _bn_relu(net, y, hw * hw * mid)
            y = _conv(net, y, hw, mid, mid, 3, stride)
            y = _bn_relu(net, y, ho * ho * mid)
            y = _conv(net, y, ho, mid, cout, 1)
            y = _bn_relu(net, y, ho * ho * cout, relu=False)
            skip = x
            if b == 0:
                skip = _conv(net, x, hw, cin, cout, 1, stride)
                skip = _bn_relu(net, skip, ho * ho * cout, relu=False)
            x = net.ew("ADD", [y, skip], ho * ho * cout)
            x = net.ew("RELU", [x], ho * ho * cout)
            hw, cin = ho, cout
    x = net.ew("MEAN", [x], hw * hw * cin)
    x = net.matmul(x, 1, cin, 1000)
    net.softmax(x, 1000)


def _branchy(net: _Net, target: int, rng: np.random.Generator) -> None:
    hw, c = 56, int(rng.choice([64, 96, 128]))
    x = net.add("CONV_2D", [], 2.0 * hw * hw * c * 27, hw * hw * c * F32, 27 * c * F32)
    while len(net.ops) < target - 6:
        ends = []
        for _ in range(int(rng.integers(2, 5))):
            y = x
            for _ in range(int(rng.integers(1, 4))):
                k = int(rng.choice([1, 3, 5]))
                y = _conv(net, y, hw, c, c // 2, k)
                y = _bn_relu(net, y, hw * hw * c // 2)
            ends.append(y)
        x = net.add(
            "CONCATENATION", ends, hw * hw * c * len(ends) / 2, hw * hw * c * len(ends) // 2 * F32
        )
        x = _conv(net, x, hw, c * len(ends) // 2, c, 1)
        if rng.random() < 0.15 and hw > 7:
            x = net.add("MAX_POOL_2D", [x], hw * hw * c, (hw // 2) ** 2 * c * F32)
            hw //= 2
    x = net.ew("MEAN", [x], hw * hw * c)
    x = net.matmul(x, 1, c, 1000)
    net.softmax(x, 1000)


def _with_backward(net: _Net) -> tuple[_Net, list[int | None]]:
    """Forward graph plus one backward node per forward node (``coloc`` pairs them)."""
    nf = len(net.ops)
    out = _Net(
        list(net.ops), list(net.flops), list(net.mem), list(net.out), list(net.wts), list(net.edges)
    )
    succs: list[list[int]] = [[] for _ in range(nf)]
    for a, b in net.edges:
        succs[a].append(b)
    loss = out.add("LOSS", [nf - 1], 4.0 * net.out[nf - 1] / F32, 64)
    back: list[int] = [0] * nf
    for f in range(nf - 1, -1, -1):
        preds = [back[s] for s in succs[f]] or [loss]
        # the gradient kernel reads the saved activation (edge f -> b) and the incoming
        # gradients; weight-bearing ops also compute a weight gradient (twice the flops)
        fl = net.flops[f] * (2.0 if net.wts[f] else 1.0)
        back[f] = out.add("GRAD_" + net.ops[f], [f, *preds], fl, net.out[f], 0)
    coloc: list[int | None] = [None] * len(out.ops)
    for f in range(nf):
        if net.wts[f]:
            coloc[f] = coloc[back[f]] = f
    return out, coloc


# processor templates: (kind, peak flop/s, bandwidth B/s, per-op overhead s, dispatch s)
_PROC = {
    "cpu": ("cpu", 6e10, 1.5e10, 2e-6, 1e-5),
    "gpu": ("gpu", 6e11, 4e10, 6e-6, 1e-4),
    "npu": ("npu", 4e12, 3e10, 1e-6, 3e-4),
    "dsp": ("dsp", 4e11, 1.5e10, 3e-6, 5e-4),
    "accel": ("npu", 2e12, 5e10, 2e-6, 2e-4),
}
# op kinds each accelerator kind refuses (like a delegate missing the op)
_REFUSE = {
    "gpu": {"GATHER", "LOSS", "GRAD_GATHER"},
    "npu": {"GATHER", "TANH", "EXP", "DIV", "REDUCE_MAX", "LOSS", "GRAD_EXP", "GRAD_DIV"},
    "dsp": {"GATHER", "BATCH_MATMUL", "RSQRT", "LOSS", "GRAD_BATCH_MATMUL"},
    "accel": {"GATHER", "LOSS"},
}


def _platform(platform: str, k: int, rng: np.random.Generator) -> list[tuple[str, str, int]]:
    """``(name, template, units)`` of the processors."""
    if platform == "phone":
        procs = [("cpu", "cpu", max(1, k - 3)), ("gpu", "gpu", 1), ("npu", "npu", 1)]
        if k >= 5:
            procs.append(("dsp", "dsp", 1))
            procs[0] = ("cpu", "cpu", max(1, k - 4))
        return procs
    if platform == "accel":
        cpu = 2 if k >= 6 else 1
        return [("cpu", "cpu", cpu), ("accel", "accel", max(1, k - cpu))]
    if platform == "hetero":
        cpu = max(1, k // 4)
        gpu = max(1, k // 4)
        return [("cpu", "cpu", cpu), ("gpu", "gpu", gpu), ("npu", "npu", max(1, k - cpu - gpu))]
    raise ValueError(f"unknown platform {platform!r}; valid: {', '.join(PLATFORMS)}")


def network_costgraph_doc(
    family: str,
    nodes: int,
    units: int,
    seed: int,
    *,
    platform: str = "accel",
    training: bool = False,
    memory_slack: float = 1.3,
    transfers_on_unit: bool = False,
    single_partition: bool = False,
) -> dict[str, Any]:
    """An operator-level cost-graph document shaped like a real network.

    Parameters
    ----------
    family : str
        One of :data:`FAMILIES`.
    nodes : int
        Target node count (the forward graph is built to about this size, or half of it with
        ``training``; the result is within a block of it).
    units : int
        Total processor units, 2 to 16.
    seed : int
        Everything random derives from it.
    platform : str
        One of :data:`PLATFORMS`.
    training : bool
        Add a colocated backward node per forward node.
    memory_slack : float
        Accelerator memory per unit is ``memory_slack`` times the model's weights divided by the
        number of accelerator units (at least the largest node's need), so the weights must be
        spread over about ``1 / memory_slack`` of the accelerators.
    transfers_on_unit, single_partition : bool
        Set these model options on every accelerator (docs/costgraph.md).

    Returns
    -------
    dict
        A document :func:`~edgepart.placement.costgraph.costgraph_from_dict` accepts.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; valid: {', '.join(FAMILIES)}")
    if not 2 <= units <= 64:
        raise ValueError(f"units must be 2..64, got {units}")
    rng = np.random.default_rng([seed, nodes, units])
    net = _Net()
    target = nodes // 2 if training else nodes
    if family in ("transformer", "encdec"):
        _transformer(net, target, rng, family == "encdec")
    elif family == "resnet":
        _resnet(net, target, rng)
    else:
        _branchy(net, target, rng)
    coloc: list[int | None] = [None] * len(net.ops)
    if training:
        net, coloc = _with_backward(net)
    n = len(net.ops)
    procs = _platform(platform, units, rng)
    flops = np.asarray(net.flops)
    mem = np.asarray(net.mem)
    base_ops = [o.removeprefix("GRAD_") for o in net.ops]
    lat: dict[str, np.ndarray] = {}
    doms: dict[str, str] = {}
    proc_docs: list[dict[str, Any]] = []
    wsum = float(sum(net.wts))
    act = np.asarray(net.out, dtype=np.float64)
    for name, tmpl, cnt in procs:
        kind, peak, bw, over, disp = _PROC[tmpl]
        jitter = rng.lognormal(0.0, 0.15, size=n)
        x = (np.maximum(flops / peak, mem / bw) + over) * jitter
        if kind != "cpu":
            refuse = _REFUSE[tmpl]
            bad = np.asarray(
                [o in refuse or b in refuse for o, b in zip(net.ops, base_ops, strict=True)]
            )
            bad |= rng.random(n) < 0.02
            x[bad] = np.inf
        lat[name] = x
        dom = "dram" if kind == "cpu" else f"{name}_mem"
        doms[name] = dom
        pd: dict[str, Any] = {
            "name": name,
            "kind": kind,
            "units": cnt,
            "memory_domain": dom,
            "dispatch_s": float(disp * rng.uniform(0.7, 1.3)),
        }
        if kind != "cpu":
            need = float(np.max(np.asarray(net.wts) + 3 * act))
            pd["memory_bytes"] = int(max(memory_slack * wsum / cnt, 1.05 * need))
            if transfers_on_unit:
                pd["transfers_on_unit"] = True
            if single_partition:
                pd["single_partition"] = True
        proc_docs.append(pd)
    links: list[dict[str, Any]] = []
    dl = sorted(set(doms.values()))
    for i, a in enumerate(dl):
        for b in dl[i + 1 :]:
            far = a != "dram" and b != "dram"
            links.append(
                {
                    "src": a,
                    "dst": b,
                    "latency_s": float(rng.uniform(50e-6, 150e-6) * (2 if far else 1)),
                    "bandwidth_bytes_per_s": float(rng.uniform(8e9, 20e9) / (2 if far else 1)),
                }
            )
    for name, tmpl, cnt in procs:
        if cnt > 1 and tmpl != "cpu":
            # separate memories per accelerator unit: a hand-off between two of them is a copy
            links.append(
                {
                    "src": doms[name],
                    "dst": doms[name],
                    "latency_s": float(rng.uniform(50e-6, 150e-6)),
                    "bandwidth_bytes_per_s": float(rng.uniform(8e9, 20e9)),
                }
            )
    nodes_doc: list[dict[str, Any]] = []
    for v in range(n):
        nd: dict[str, Any] = {
            "id": v,
            "op": net.ops[v],
            "weight_bytes": net.wts[v],
            "output_bytes": net.out[v],
            "latency_s": {
                p: ("unsupported" if not math.isfinite(float(lat[p][v])) else float(lat[p][v]))
                for p, _, _ in procs
            },
        }
        if coloc[v] is not None:
            nd["colocation"] = f"w{coloc[v]}"
        nodes_doc.append(nd)
    sources = sorted({v for v in range(n)} - {b for _, b in net.edges})
    sinks = sorted({v for v in range(n)} - {a for a, _ in net.edges})
    tag = f"{family}{'+train' if training else ''}"
    return {
        "format": "edgepart-costgraph",
        "version": 1,
        "name": f"{tag}-n{n}-{platform}{units}-s{seed}",
        "processors": proc_docs,
        "links": links,
        "nodes": nodes_doc,
        "edges": [{"src": a, "dst": b} for a, b in net.edges],
        "inputs": [
            {"name": f"in{i}", "bytes": int(net.out[s]), "consumers": [s]}
            for i, s in enumerate(sources)
        ],
        "outputs": [{"src": s} for s in sinks],
    }
