"""What ``edgepart roofline`` reports: per op and processor, the roofline and the cost model's
latency, with the whole model's latency per processor, as JSON-able rows and as text."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgepart.cost.model import GraphCosts
from edgepart.cost.plot import roofline_png
from edgepart.cost.work import dtype_name
from edgepart.timefmt import format_seconds

__all__ = ["RooflineTable", "roofline_table"]


@dataclass(frozen=True, eq=False)
class RooflineTable:
    """Per-op rows (``op``, ``name``, ``dtype``, ``flops``, ``bytes``, ``intensity``,
    ``known``, and per processor ``supported``, ``time_s``, ``alone_s``, ``roofline_s``,
    ``bound``, ``source``; the times are None where the processor cannot run the op) and
    per-processor totals (``ops`` it can run, ``latency_s`` of those ops as one invocation or
    None when it runs none, ``sources``, ``invoke_overhead_s``)."""

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
            shown = sorted(self.rows, key=lambda r: -(r["procs"][first]["time_s"] or 0.0))[:top]
        lines = _table(shown, self.processors)
        lines.append("")
        n = len(self.rows)
        for p, t in self.totals.items():
            src = ", ".join(f"{v} {k}" for k, v in t["sources"].items() if v)
            if t["latency_s"] is None:
                lines.append(f"{p}: runs none of the {n} ops (its delegate refuses them all)")
                continue
            what = "whole model" if t["ops"] == n else f"the {t['ops']} of {n} ops it can run"
            text = (
                f"{p}: {what} {format_seconds(t['latency_s'])} as one invocation "
                f"(overhead {format_seconds(t['invoke_overhead_s'])}; {src})"
            )
            if t["sources"].get("unknown"):
                text += "; ops of unknown cost count as 0"
            lines.append(text)
        return "\n".join(lines)

    def plot(self, path: str | os.PathLike[str], title: str = "") -> None:
        """Write the roofline plot (PNG) of every op on every processor."""
        roofline_png(self.costs, path, title, self.supported)

    @property
    def supported(self) -> np.ndarray:
        """``[ops, processors]``: the processor can run the op."""
        return np.array(
            [[r["procs"][p]["supported"] for p in self.processors] for r in self.rows],
            dtype=bool,
        ).reshape(len(self.rows), len(self.processors))


def roofline_table(
    gc: GraphCosts, device: str, supported: np.ndarray | None = None
) -> RooflineTable:
    """The rows and totals of ``gc`` (costs of a subgraph on ``device``); ``supported``
    (``[ops, processors]``) leaves the ops a processor cannot run out of its column."""
    w = gc.work
    rf = gc.roofline
    bound = rf.compute_bound
    n = gc.sg.num_ops
    sup = np.ones((n, len(gc.processors)), dtype=bool) if supported is None else supported
    rows = []
    for i in range(n):
        procs = {}
        for p, name in enumerate(gc.processors):
            ovh = gc.invoke_overhead(p).seconds
            ok = bool(sup[i, p])
            procs[name] = {
                "supported": ok,
                "time_s": float(gc.latency[i, p]) if ok else None,
                "alone_s": float(gc.latency[i, p]) + ovh if ok else None,
                "roofline_s": float(rf.time_s[i, p]) if ok else None,
                "bound": ("compute" if bound[i, p] else "memory") if ok else None,
                "source": gc.op_latency(i, p).source if ok else None,
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
    totals: dict[str, dict[str, Any]] = {}
    for p, name in enumerate(gc.processors):
        ops = [int(i) for i in np.flatnonzero(sup[:, p])]
        counts = {k: 0 for k in gc.source_counts(p)}
        for i in ops:
            src = gc.op_latency(i, p).source
            counts[src] = counts.get(src, 0) + 1
        totals[name] = {
            "ops": len(ops),
            "latency_s": gc.partition_latency(ops, p).seconds if ops else None,
            "sources": counts,
            "invoke_overhead_s": gc.invoke_overhead(p).seconds,
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
            if not c["supported"]:
                line += f" | {'':>10} {'-':>9} {'-':>9} {'refused':<7} {'':<5}"
                continue
            line += (
                f" | {'':>10} {c['time_s'] * 1e6:>9.2f} {c['alone_s'] * 1e6:>9.2f} "
                f"{c['bound']:<7} {c['source'][:5]:<5}"
            )
        lines.append(line)
    if any(not r["known"] for r in rows):
        lines.append("? = no exact work rule for this op: conservative byte-based estimate")
    if any(not c["supported"] for r in rows for c in r["procs"].values()):
        lines.append("refused = the processor's delegate cannot run the op (not costed there)")
    if any(c["source"] == "unknown" for r in rows for c in r["procs"].values()):
        lines.append("unkno = no estimate (a compiled program without a measured table entry)")
    return lines
