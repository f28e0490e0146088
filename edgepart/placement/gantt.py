"""Gantt charts of pipeline timelines (PNG, matplotlib's Agg backend).

One row per device; forwards and backwards as bars coloured by micro-batch (backwards
hatched), idle time left blank, so the fill and drain bubbles of a schedule show as the empty
triangles at the start and end. The title carries the figures the timeline gives.
"""

from __future__ import annotations

import io
import os

from edgepart.fileio import atomic_write
from edgepart.placement.schedules import Timeline

__all__ = ["gantt_png"]


def _ms(s: float) -> str:
    return f"{s * 1e3:.4g} ms"


def gantt_png(
    timeline: Timeline, path: str | os.PathLike[str], title: str = "", *, max_events: int = 4000
) -> None:
    """Write ``timeline`` as a Gantt chart to ``path`` (atomically; no timestamp in the PNG).

    Parameters
    ----------
    timeline
        A simulated or measured timeline.
    path
        The PNG file to write.
    title
        First title line (default: the schedule and its size).
    max_events
        Draw at most this many events (the earliest; long streams stay readable).
    """
    # matplotlib loads only when a chart is drawn: the CLI and the API start without it
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): no display needed

    t = timeline
    evs = sorted(t.events, key=lambda e: (e.start_s, e.device))[:max_events]
    t0 = min(e.start_s for e in evs)
    cmap = plt.get_cmap("tab20")
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.6 * t.devices))
    for e in evs:
        ax.barh(
            e.device,
            (e.end_s - e.start_s) * 1e3,
            left=(e.start_s - t0) * 1e3,
            height=0.7,
            color=cmap(e.micro % 20),
            edgecolor="black",
            linewidth=0.3,
            hatch="//" if e.kind == "B" else None,
        )
        if t.micro_batches <= 32 and len(evs) <= 400:
            ax.text(
                (e.start_s - t0 + (e.end_s - e.start_s) / 2) * 1e3,
                e.device,
                f"{e.kind}{e.micro}",
                ha="center",
                va="center",
                fontsize=6,
            )
    ax.set_yticks(range(t.devices))
    ax.set_yticklabels([f"device {d}" for d in range(t.devices)])
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    lat = sorted(t.latency_s)
    head = title or f"{t.schedule}: {t.stages} stage(s) on {t.devices} device(s)"
    ax.set_title(
        f"{head}\n{t.micro_batches} micro-batches, makespan {_ms(t.makespan_s)}, period "
        f"{_ms(t.period_s)}, median latency {_ms(lat[len(lat) // 2])}, bubble "
        f"{100 * t.bubble_fraction:.1f} %, peak in flight {list(t.peak_in_flight)}",
        fontsize=9,
    )
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    atomic_write(path, buf.getvalue())
