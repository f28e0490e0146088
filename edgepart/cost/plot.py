"""Roofline plots (PNG, matplotlib's Agg backend): one panel per processor.

Each panel draws the processor's roofs (one per dtype peak: ``min(peak, bandwidth x
intensity)``, log-log) and the ops as points at (operational intensity, attained FLOP/s),
coloured by op type and sized by their share of the model's time. Attained performance is the
op's FLOPs over its latency from the cost model: measured where a latency table covers the op,
else the roofline itself (points then sit on the roof).
"""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np

from edgepart.cost.model import GraphCosts
from edgepart.fileio import atomic_write

__all__ = ["roofline_png"]


def _rate(ops_per_s: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if ops_per_s >= scale:
            return f"{ops_per_s / scale:.3g} {unit}op/s"
    return f"{ops_per_s:.3g} op/s"


_MAX_TYPES = 12  # op types with their own colour; the rest share "other"


def plot_points(
    gc: GraphCosts, p: int, lo: float, supported: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ops, x, y)``: the ops drawn on processor ``p``'s panel, their intensity and attained
    FLOP/s. Every op the processor runs with a latency and bytes is drawn; ops without FLOPs
    sit at ``x = lo`` (the left edge), at the height their attained bandwidth reaches there."""
    work = gc.work
    lat = gc.latency[:, p]
    ok = (work.bytes > 0) & ~work.folded & (lat > 0) & np.isfinite(lat)
    if supported is not None:
        ok &= supported[:, p]
    moves = work.flops <= 0
    ops = np.flatnonzero(ok)
    x = np.where(moves[ops], lo, work.intensity[ops])
    y = np.where(moves[ops], work.bytes[ops] * lo, work.flops[ops]) / lat[ops]
    return ops, x, y


def roofline_png(
    gc: GraphCosts,
    path: str | os.PathLike[str],
    title: str = "",
    supported: np.ndarray | None = None,
) -> None:
    """Write the roofline plot of a costed subgraph to ``path`` (atomically).

    Each processor's panel shows the ops it can run (``supported``, ``[ops, processors]``).
    Ops without FLOPs (pads, concatenations: pure data movement) have no intensity on a log
    axis; they are drawn as triangles at the panel's left edge, at the height their attained
    bandwidth reaches there, so the slowest op is never missing.
    """
    import matplotlib  # heavy (~0.5 s to import): loaded only when a plot is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hw = gc.cm.hardware
    sg = gc.sg
    work = gc.work
    names = np.array([sg.op_name(i) for i in range(sg.num_ops)])
    has = (work.bytes > 0) & ~work.folded
    moves = has & (work.flops <= 0)  # data movement only: drawn at the left edge
    kinds, counts = np.unique(names[has], return_counts=True)
    top = [k for _, k in sorted(zip(-counts, kinds.tolist(), strict=True))][:_MAX_TYPES]
    cmap = plt.get_cmap("tab20")
    colour = {k: cmap(i % 20) for i, k in enumerate(top)}
    n = len(hw.processors)
    width = 6.2 * n + 2.4  # room on the right for the op-type legend
    fig, axes = plt.subplots(1, n, figsize=(width, 5.2), squeeze=False)
    oi = work.intensity
    flopping = has & ~moves
    lo = max(float(oi[flopping].min()) / 3 if flopping.any() else 0.01, 1e-3)
    ridges = [
        pk / p.bandwidth for p in hw.processors for pk in p.peak_ops.values() if p.bandwidth > 0
    ]
    hi = max(
        float(oi[flopping].max()) * 3 if flopping.any() else 100.0,
        max(ridges, default=1) * 3,
        100.0,
    )
    xs = np.logspace(np.log10(lo), np.log10(hi), 200)
    for p, proc in enumerate(hw.processors):
        ax = axes[0, p]
        roofs = []
        for k, (dt, peak) in enumerate(sorted(proc.peak_ops.items())):
            (line,) = ax.plot(
                xs,
                np.minimum(peak, proc.bandwidth * xs),
                lw=2,
                ls=["-", "--", ":", "-."][k % 4],
                color="black",
                label=f"{dt.lower()} peak {_rate(peak)}, ridge {peak / proc.bandwidth:.3g} FLOP/B",
            )
            roofs.append(line)
        lat = gc.latency[:, p]
        ops, xs_p, ys_p = plot_points(gc, p, lo, supported)
        share = lat[ops] / max(float(lat[ops].sum()), 1e-30)
        sizes = 12 + 400 * share
        kinds_p = names[ops]
        for kind in [*top, "other"]:
            sel = np.isin(kinds_p, top, invert=True) if kind == "other" else kinds_p == kind
            if not sel.any():
                continue
            for marker, part in (("o", ~moves[ops]), ("v", moves[ops])):
                pick = sel & part
                if not pick.any():
                    continue
                ax.scatter(
                    xs_p[pick],
                    ys_p[pick],
                    s=sizes[pick],
                    alpha=0.7,
                    marker=marker,
                    color=colour.get(kind, "lightgrey"),
                    edgecolors="none",
                    label=kind,
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        counts_src = gc.source_counts(p)
        src = ", ".join(f"{v} {k}" for k, v in counts_src.items() if v)
        if supported is not None and not supported[:, p].all():
            src += f"; runs {int(supported[:, p].sum())} of {sg.num_ops} ops"
        if moves.any():
            src += "; \u25bc no FLOPs, at the left edge"
        ax.set_title(
            f"{proc.name} ({proc.kind}, {proc.bandwidth / 1e9:.1f} GB/s)\n{src}", fontsize=10
        )
        ax.set_xlabel("operational intensity (FLOP/byte)")
        ax.set_ylabel("attained performance (FLOP/s)")
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(handles=roofs, loc="lower right", fontsize=7, framealpha=0.8)
    uniq: dict[str, Any] = {}
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if "peak" not in lab:
                uniq.setdefault(lab, h)
    fig.legend(
        handles=list(uniq.values()),
        labels=list(uniq.keys()),
        loc="center right",
        fontsize=8,
        frameon=False,
        title="op type (size: share of time)",
        title_fontsize=8,
    )
    fig.suptitle(title or f"roofline: {hw.name}", fontsize=12)
    fig.tight_layout(rect=(0, 0, 1 - 2.4 / width, 0.95))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write(path, buf.getvalue())
