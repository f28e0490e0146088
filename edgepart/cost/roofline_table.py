"""What ``edgepart roofline`` reports: per op and processor, the roofline and the cost model's
latency, with the whole model's latency per processor, as JSON-able rows and as text."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from edgepart.cost.model import GraphCosts
from edgepart.cost.plot import roofline_png
from edgepart.cost.work import dtype_name

__all__ = ["RooflineTable", "roofline_table"]


@dataclass(frozen=True, eq=False)
class RooflineTable:
    """Per-op rows (``op``, ``name``, ``dtype``, ``flops``, ``bytes``, ``intensity``,
    ``known``, and per processor ``time_s``, ``alone_s``, ``roofline_s``, ``bound``,
    ``source``) and per-processor totals (``latency_s`` of the whole model as one invocation,
    ``sources``, ``invoke_overhead_s``)."""

    device: str
    costs: GraphCosts
    rows: list[dict[str, Any]]
    totals: dict[str, dict[str, Any]]

    @property
    def processors(self) -> tuple[str, ...]:
        """The device's processors, in profile order."""
        return tuple(self.costs.processors)

    def to_dict(self) -> dict[str, Any]:
        """``{"device", "ops", "totals"}``: what ``edgepart roofline --json`` prints."""
        return {"device": self.device, "ops": self.rows, "totals": self.totals}

    def format_text(self, top: int = 0) -> str:
        """The table (only the ``top`` slowest ops on the first processor when ``top > 0``),
        then one line per processor with the whole model's latency."""
        shown = self.rows
        if top:
            first = self.processors[0]
            shown = sorted(self.rows, key=lambda r: -r["procs"][first]["time_s"])[:top]
        lines = _table(shown, self.processors)
        lines.append("")
        for p, t in self.totals.items():
            src = ", ".join(f"{v} {k}" for k, v in t["sources"].items() if v)
            lines.append(
                f"{p}: whole model {t['latency_s'] * 1e3:.3f} ms as one invocation "
                f"(overhead {t['invoke_overhead_s'] * 1e6:.1f} us; {src})"
            )
        return "\n".join(lines)

    def plot(self, path: str | os.PathLike[str], title: str = "") -> None:
        """Write the roofline plot (PNG) of every op on every processor."""
        roofline_png(self.costs, path, title)


def roofline_table(gc: GraphCosts, device: str) -> RooflineTable:
    """The rows and totals of ``gc`` (costs of a subgraph on ``device``)."""
    w = gc.work
    rf = gc.roofline
    bound = rf.compute_bound
    rows = []
    for i in range(gc.sg.num_ops):
        procs = {}
        for p, name in enumerate(gc.processors):
            ovh = gc.invoke_overhead(p).seconds
            procs[name] = {
                "time_s": float(gc.latency[i, p]),
                "alone_s": float(gc.latency[i, p]) + ovh,
                "roofline_s": float(rf.time_s[i, p]),
                "bound": "compute" if bound[i, p] else "memory",
                "source": gc.op_latency(i, p).source,
            }
        rows.append(
            {
                "op": i,
                "name": gc.sg.op_name(i),
                "dtype": dtype_name(int(w.dtype[i])),
                "flops": float(w.flops[i]),
                "bytes": int(w.bytes[i]),
                "intensity": float(w.intensity[i]),
                "known": bool(w.known[i]),
                "procs": procs,
            }
        )
    totals: dict[str, dict[str, Any]] = {
        p: {
            "latency_s": gc.partition_latency(range(gc.sg.num_ops), p).seconds,
            "sources": gc.source_counts(p),
            "invoke_overhead_s": gc.invoke_overhead(p).seconds,
        }
        for p in gc.processors
    }
    return RooflineTable(device, gc, rows, totals)


def _table(rows: list[dict[str, Any]], procs: tuple[str, ...]) -> list[str]:
    head = f"{'op':>5} {'name':<24} {'dtype':<8} {'MFLOP':>9} {'KB':>9} {'FLOP/B':>7}"
    for p in procs:
        head += f" | {p[:10]:>10} {'us':>9} {'alone':>9} {'bound':<7} {'src':<5}"
    lines = [head]
    for r in rows:
        flag = "" if r["known"] else "?"
        line = (
            f"{r['op']:>5} {(r['name'] + flag)[:24]:<24} {r['dtype'][:8]:<8} "
            f"{r['flops'] / 1e6:>9.3f} {r['bytes'] / 1024:>9.1f} {r['intensity']:>7.2f}"
        )
        for p in procs:
            c = r["procs"][p]
            line += (
                f" | {'':>10} {c['time_s'] * 1e6:>9.2f} {c['alone_s'] * 1e6:>9.2f} "
                f"{c['bound']:<7} {c['source'][:5]:<5}"
            )
        lines.append(line)
    if any(not r["known"] for r in rows):
        lines.append("? = no exact work rule for this op: conservative byte-based estimate")
    return lines
