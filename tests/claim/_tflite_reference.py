"""A literal, quadratic port of TFLite's ``PartitionGraphIntoIndependentNodeSubsetsImpl``.

Written line by line after ``tflite/graph_info.cc`` (sweeps, ``UpdateNode``, ``BuildNodeSubset``)
so the fast implementation in :mod:`edgepart.claim.epochs` can be checked against it on random
graphs. Test-only: it is O(n^2) in the worst case, like the original.
"""

from __future__ import annotations

NOT_READY = -1
ALWAYS_READY = -2


def reference_partition(
    inputs,
    outputs,
    supported,
    num_tensors,
    graph_outputs=(),
    greedy=True,
    control_edges=(),
    disable_node_fusion=False,
):
    n = len(inputs)
    edges = sorted(set(map(tuple, control_edges)))
    tensor_epochs = [ALWAYS_READY] * num_tensors
    node_epochs = [NOT_READY] * n
    incoming = [0] * n
    for _, b in edges:
        incoming[b] += 1
    for node in range(n):
        for t in outputs[node]:
            if t != -1:
                tensor_epochs[t] = NOT_READY
    subsets = []  # [type, nodes, inputs, outputs]; type None = unexplored

    def update(node):
        cur = subsets[-1]
        if disable_node_fusion and cur[1]:
            return False
        epoch = len(subsets) - 1
        if node_epochs[node] != NOT_READY:
            return False
        for t in inputs[node]:
            if t != -1 and tensor_epochs[t] == NOT_READY:
                return False
        if incoming[node] != 0:
            return False
        if cur[0] is None:
            cur[0] = bool(supported[node])
        if cur[0] != bool(supported[node]):
            return False
        node_epochs[node] = epoch
        cur[1].append(node)
        for t in outputs[node]:
            if t != -1:
                tensor_epochs[t] = epoch
        for t in inputs[node]:
            if t == -1:
                continue
            te = tensor_epochs[t]
            if te != epoch:
                cur[2].append(t)
                if te >= 0:
                    subsets[te][3].append(t)
        for a, b in edges:
            if a == node:
                incoming[b] -= 1
        return True

    def build():
        subsets.append([None, [], [], []])
        while True:
            did = False
            for node in range(n):
                if update(node):
                    did = True
                elif did and not greedy:
                    return
            if not did:
                return

    while True:
        build()
        if not subsets[-1][1]:
            subsets.pop()
            break
    if any(e == NOT_READY for e in node_epochs):
        raise RuntimeError("unschedulable")
    for t in graph_outputs:
        te = tensor_epochs[t]
        if te == ALWAYS_READY:
            continue
        subsets[te][3].append(t)
    return [
        (
            "delegated" if typ else "cpu",
            tuple(nodes),
            tuple(sorted(set(ins))),
            tuple(sorted(set(outs))),
        )
        for typ, nodes, ins, outs in subsets
    ]
