"""Stages of a fixed execution order over a chain of devices joined by links.

The pipeline across machines: device ``k`` of ``K`` (in the cluster's order) runs the steps
``[b_k, b_{k+1})`` of one topological order, and the link from device ``k`` to ``k + 1``
carries every tensor live across the boundary ``b_{k+1}``. Stages and links all work at once
on successive items, so the period is the slowest of the stage times (compute plus dispatch)
and the link times (latency plus bytes over bandwidth). :func:`plan_chain` finds the
boundaries minimizing the period, exactly (a dynamic program over boundary positions,
``O(K n^2)``), with each stage's weights within its device's memory and every device given at
least one step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgepart.errors import PlacementInfeasibleError, UsageError

__all__ = ["ChainPlan", "plan_chain"]


@dataclass(frozen=True, eq=False)
class ChainPlan:
    """Boundaries ``bounds`` (``K + 1`` positions, 0 to ``n``), stage and link times."""

    bounds: tuple[int, ...]
    stage_s: tuple[float, ...]
    link_s: tuple[float, ...]
    link_bytes: tuple[int, ...]
    period_s: float


def plan_chain(
    step_s: np.ndarray,
    dispatch_s: np.ndarray,
    weight_bytes: np.ndarray,
    capacity_bytes: np.ndarray,
    cut_bytes: np.ndarray,
    link_latency_s: np.ndarray,
    link_bandwidth: np.ndarray,
    valid_cut: np.ndarray | None = None,
) -> ChainPlan:
    """The boundaries with the smallest period (module docstring).

    Parameters
    ----------
    step_s
        ``[n, K]`` time of step ``i`` on device ``k`` (seconds; inf where it cannot run).
    dispatch_s
        ``[K]`` fixed time per stage invocation.
    weight_bytes
        ``[n]`` bytes of constants each step reads.
    capacity_bytes
        ``[K]`` memory of each device.
    cut_bytes
        ``[n + 1]`` bytes live across boundary position ``c`` (tensors made before step ``c``
        and used at or after it).
    link_latency_s, link_bandwidth
        ``[K - 1]`` the link from device ``k`` to ``k + 1``.
    valid_cut
        ``[n + 1]`` positions allowed as boundaries (default all).

    Returns
    -------
    ChainPlan
        The optimal boundaries.

    Raises
    ------
    UsageError
        Shapes that do not agree.
    PlacementInfeasibleError
        Fewer steps than devices, or no split fits every device's memory.
    """
    n, k_n = step_s.shape
    if (
        len(dispatch_s) != k_n
        or len(capacity_bytes) != k_n
        or len(weight_bytes) != n
        or len(cut_bytes) != n + 1
        or len(link_latency_s) != k_n - 1
        or len(link_bandwidth) != k_n - 1
    ):
        raise UsageError("plan_chain: array shapes do not agree")
    if n < k_n:
        raise PlacementInfeasibleError(f"{n} steps cannot fill {k_n} pipeline stages")
    ok_cut = np.ones(n + 1, dtype=bool) if valid_cut is None else np.asarray(valid_cut, bool)
    cum = np.vstack([np.zeros((1, k_n)), np.cumsum(step_s, axis=0)])  # [n+1, K]
    wcum = np.concatenate([[0], np.cumsum(weight_bytes)])
    inf = np.inf
    # dp[k][c]: best period with devices 0..k-1 covering steps [0, c), stage k-1 ending at c
    dp = np.full((k_n + 1, n + 1), inf)
    back = np.full((k_n + 1, n + 1), -1, dtype=np.int64)
    dp[0, 0] = 0.0
    cs = np.arange(n + 1)
    for k in range(1, k_n + 1):
        dev = k - 1
        link = np.full(n + 1, 0.0)
        if dev >= 1:  # the boundary at the stage's start crosses link dev-1
            link = link_latency_s[dev - 1] + cut_bytes / link_bandwidth[dev - 1]
        for c in range(k, n + 1):
            if c < n and not ok_cut[c]:
                continue
            lo = cs[:c]
            comp = dispatch_s[dev] + cum[c, dev] - cum[lo, dev]
            mem_ok = (wcum[c] - wcum[lo]) <= capacity_bytes[dev]
            val = np.maximum(np.maximum(dp[k - 1, lo], comp), link[lo])
            val = np.where(mem_ok & (ok_cut[lo] | (lo == 0)), val, inf)
            j = int(np.argmin(val))
            if val[j] < dp[k, c]:
                dp[k, c] = val[j]
                back[k, c] = j
    if not np.isfinite(dp[k_n, n]):
        raise PlacementInfeasibleError(
            f"no split of {n} steps over {k_n} devices fits every device's memory "
            f"(weights {int(wcum[-1])} bytes; capacities {capacity_bytes.astype(int).tolist()})"
        )
    bounds = [n]
    c = n
    for k in range(k_n, 0, -1):
        c = int(back[k, c])
        bounds.append(c)
    bounds.reverse()
    stage = tuple(
        float(dispatch_s[k] + cum[bounds[k + 1], k] - cum[bounds[k], k]) for k in range(k_n)
    )
    lbytes = tuple(int(cut_bytes[bounds[k + 1]]) for k in range(k_n - 1))
    links = tuple(float(link_latency_s[k] + lbytes[k] / link_bandwidth[k]) for k in range(k_n - 1))
    return ChainPlan(tuple(bounds), stage, links, lbytes, max(stage + links))
