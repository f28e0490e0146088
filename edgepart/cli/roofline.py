"""``edgepart roofline MODEL --profile DEVICE``: per-op roofline table and plot."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "roofline",
        help="per-op FLOPs, bytes, intensity and roofline latency on a device's processors",
        description="Cost every op of a model's main subgraph on each processor of a device "
        "profile: time = max(FLOPs / peak for the op's dtype, bytes / bandwidth), plus the "
        "processor's dispatch overhead when the op runs alone. With --table, measured "
        "latencies replace the roofline where the table covers an op. -o writes a roofline "
        "plot (PNG).",
    )
    p.add_argument("model", help="path to a .tflite file")
    p.add_argument("--profile", required=True, help="device profile name or YAML path")
    p.add_argument("-o", "--output", metavar="PNG", help="write the roofline plot here")
    p.add_argument(
        "--table",
        action="append",
        default=[],
        metavar="JSON",
        help="latency table to use (repeatable; merged in order)",
    )
    p.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="PROC=TABLEPROC",
        help="back profile processor PROC with table processor TABLEPROC",
    )
    p.add_argument(
        "--top",
        type=int,
        default=0,
        metavar="N",
        help="show only the N slowest ops (by the first processor)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from edgepart.cost.hardware import load_hardware
    from edgepart.cost.model import CostModel
    from edgepart.cost.table import tables_from
    from edgepart.errors import UsageError
    from edgepart.tflite.reader import read_model

    model = read_model(args.model)
    hw = load_hardware(args.profile)
    mapping = {}
    for m in args.map:
        proc, sep, tproc = m.partition("=")
        if not sep:
            raise UsageError(f"--map {m!r}: expected PROC=TABLEPROC")
        mapping[proc] = tproc
    cm = CostModel(hw, tables_from(args.table) if args.table else None, table_for=mapping)
    gc = cm.costs(model.main, model)
    rows = _rows(gc)
    totals: dict[str, dict[str, Any]] = {
        p: {
            "latency_s": gc.partition_latency(range(model.main.num_ops), p).seconds,
            "sources": gc.source_counts(p),
            "invoke_overhead_s": gc.invoke_overhead(p).seconds,
        }
        for p in gc.processors
    }
    if args.output:
        from edgepart.cost.plot import roofline_png

        title = f"{os.path.basename(args.model)} on {hw.name} (1 invocation per processor)"
        roofline_png(gc, args.output, title)
    if args.json:
        print(
            json.dumps({"device": hw.name, "ops": rows, "totals": totals}, indent=1, sort_keys=True)
        )
        return 0
    shown = rows
    if args.top:
        first = gc.processors[0]
        shown = sorted(rows, key=lambda r: -r["procs"][first]["time_s"])[: args.top]
    _print_table(shown, gc.processors)
    print()
    for p, t in totals.items():
        src = ", ".join(f"{v} {k}" for k, v in t["sources"].items() if v)
        print(
            f"{p}: whole model {t['latency_s'] * 1e3:.3f} ms as one invocation "
            f"(overhead {t['invoke_overhead_s'] * 1e6:.1f} us; {src})"
        )
    if args.output:
        print(f"wrote {args.output}")
    return 0


def _rows(gc: Any) -> list[dict[str, Any]]:
    from edgepart.cost.work import dtype_name

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
    return rows


def _print_table(rows: list[dict[str, Any]], procs: tuple[str, ...]) -> None:
    head = f"{'op':>5} {'name':<24} {'dtype':<8} {'MFLOP':>9} {'KB':>9} {'FLOP/B':>7}"
    for p in procs:
        head += f" | {p[:10]:>10} {'us':>9} {'alone':>9} {'bound':<7} {'src':<5}"
    print(head)
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
        print(line)
    if any(not r["known"] for r in rows):
        print("? = no exact work rule for this op: conservative byte-based estimate")
