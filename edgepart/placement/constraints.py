"""Per-node admissibility (support and memory) and the infeasibility errors solvers raise.

A processor is *admissible* for a node when it supports the node and one of its units could hold
the node alone (weights plus the node's activation bytes). A colocation group's nodes share one
unit, so the group is admissible only on processors admissible for every member whose unit holds
all the members' weights plus the largest member activation. Inadmissible choices can never be
part of a feasible placement, so restricting every solver to admissible ones loses nothing. When
all weights together exceed the memory of all units together, no placement can fit and the error
says so with the numbers.
"""

from __future__ import annotations

import numpy as np

from edgepart.errors import PlacementInfeasibleError
from edgepart.placement.costgraph import CostGraph

__all__ = ["admissible", "group_members"]


def group_members(g: CostGraph) -> list[np.ndarray]:
    """Node indices of each colocation group (ascending)."""
    order = np.argsort(g.coloc, kind="stable")
    cut = np.searchsorted(g.coloc[order], np.arange(len(g.coloc_names) + 1))
    return [order[cut[i] : cut[i + 1]] for i in range(len(g.coloc_names))]


def admissible(g: CostGraph) -> np.ndarray:
    """``[N, P]`` bool of admissible processors; raises if a node or group has none.

    Raises
    ------
    PlacementInfeasibleError
        Naming the node (or colocation group) and the numbers that rule out every processor.
    """
    sup = g.supported()
    need = g.weight_bytes + g.activation_bytes
    fits = need[:, None] <= g.proc_memory[None, :]
    ok: np.ndarray = sup & fits
    bad = np.flatnonzero(~ok.any(axis=1))
    if len(bad):
        v = int(bad[0])
        if not sup[v].any():
            raise PlacementInfeasibleError(
                f"{g.node_label(v)} is unsupported by every processor "
                f"({', '.join(g.proc_names)}); give it a latency on at least one"
            )
        caps = ", ".join(f"{g.proc_names[p]} {_cap(g, p)}" for p in np.flatnonzero(sup[v]).tolist())
        raise PlacementInfeasibleError(
            f"{g.node_label(v)} fits no unit: it needs {int(need[v])} bytes "
            f"({int(g.weight_bytes[v])} weights + {int(g.activation_bytes[v])} activations); "
            f"memory per unit of the processors that support it: {caps}"
        )
    total = int(g.weight_bytes.sum())
    room = g.proc_memory[g.unit_proc]
    if total > room.sum():
        per = ", ".join(
            f"{g.unit_name(u)} {_cap(g, int(g.unit_proc[u]))}" for u in range(g.num_units)
        )
        raise PlacementInfeasibleError(
            f"the weights need {total} bytes but all units together hold "
            f"{int(room.sum())} bytes ({per}); use a device with more memory or a smaller model"
        )
    for gi, members in enumerate(group_members(g)):
        if len(members) < 2:
            continue
        row = ok[members].all(axis=0)
        gneed = int(g.weight_bytes[members].sum() + g.activation_bytes[members].max())
        row &= gneed <= g.proc_memory
        if not row.any():
            raise PlacementInfeasibleError(
                f"colocation group {g.coloc_names[gi]!r} ({len(members)} nodes, e.g. "
                f"{g.node_label(int(members[0]))}) has no processor that supports all its nodes "
                f"and holds their {gneed} bytes on one unit"
            )
        ok[members] = row
    return ok


def _cap(g: CostGraph, p: int) -> str:
    m = g.proc_memory[p]
    return "unlimited" if not np.isfinite(m) else f"{int(m)} bytes"
