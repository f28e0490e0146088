"""Text reports of the phone commands (``bench`` of a model or a bundle, ``profile --adb``)."""

from __future__ import annotations

from typing import Any

from edgepart import jsondoc as _json

__all__ = ["emit", "finish", "print_bench", "print_bundle", "print_profile"]

_HEAD = ["init ms", "first ms", "warm-up ms", "median ms", "p5-p95 ms", "std ms", "runs", "mem MB"]


def emit(report: Any, as_json: bool, printer: Any) -> None:
    """Print ``report`` as JSON or with ``printer``, then where its results are kept."""
    if as_json:
        print(_json.text(report.to_json(), default=str))
    else:
        printer(report)
        print(f"results: {report.results_dir}")


def finish(report: Any) -> int:
    """Exit status 0, or raise what left the report incomplete (lost device, no usable run)."""
    err = report.failure()
    if err is not None:
        raise err
    return 0


def _f(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _device_line(d: Any) -> str:
    i = d.info or {}
    bits = [i.get("model"), i.get("soc") and f"SoC {i['soc']}"]
    bits += [i.get("android_version") and f"Android {i['android_version']}", i.get("abi")]
    return f"device {d.serial}: " + ", ".join(b for b in bits if b)


def _row(rec: dict[str, Any], first: str) -> list[str]:
    s = rec.get("summary") or {}
    st = s.get("steady") or {}
    mem = s.get("memory") or {}
    spread = "-"
    if st.get("p5_ms") is not None:
        spread = f"{st['p5_ms']:.3f}-{st['p95_ms']:.3f}"
    elif st.get("min_ms") is not None:
        spread = f"{st['min_ms']:.3f}-{st['max_ms']:.3f} (min-max)"
    median = st.get("median_ms")
    if median is not None:
        central = _f(median)
    elif st.get("avg_ms") is not None:
        central = _f(st["avg_ms"]) + " (avg)"  # builds without percentiles print no median
    else:
        central = "-"
    verdict = (rec.get("delegate_verdict") or {}).get("executed_on", "")
    return [
        first,
        rec["status"] + ("*" if rec.get("resumed") else ""),
        _f(s.get("init_ms")),
        _f(s.get("first_ms")),
        _f(s.get("warmup_avg_ms")),
        central,
        spread,
        _f(st.get("std_ms")),
        str(st.get("count") or "-"),
        _f(mem.get("peak_mb") or mem.get("overall_delta_mb"), 1),
        verdict,
    ]


def _table(rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        cells = [
            c.ljust(w) if i in (0, 1, len(r) - 1) else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        print("  ".join(cells).rstrip())


def _notes(records: list[dict[str, Any]]) -> None:
    for rec in records:
        if rec["status"] != "ok" or not (rec.get("delegate_verdict") or {}).get("applied", True):
            print(f"  {rec['status']}: {rec['message']}")
    if any(r.get("resumed") for r in records):
        print("  * taken from the results directory (--resume), not re-run")


def print_bench(report: Any) -> None:
    """One table per device: a row per delegate."""
    for d in report.devices:
        print(_device_line(d))
        if d.records:
            rows = [["delegate", "status", *_HEAD, "executed on"]]
            rows += [_row(r, r["label"]) for r in d.records]
            _table(rows)
            _notes(d.records)
        if d.error:
            print(f"  stopped: {d.error}")
        print()


def print_bundle(report: Any) -> None:
    """One table per device: a row per partition, beside the plan's prediction."""
    for d in report.devices:
        print(_device_line(d))
        head = [
            "partition",
            "status",
            "processor",
            "delegate",
            "ran with",
            "median ms",
            "p5-p95 ms",
            "predicted ms",
            "ratio",
            "executed on",
        ]
        rows = [head]
        for p in report.extra["partitions"].get(d.serial, []):
            rows.append(
                [
                    p["id"],
                    p["status"],
                    p["processor"],
                    p["delegate"],
                    p["ran_with"],
                    "<0.001" if p.get("below_resolution") else _f(p["median_ms"]),
                    p["spread"],
                    _f(p["predicted_ms"]),
                    _f(p["ratio"], 2),
                    p["executed_on"],
                ]
            )
        if len(rows) > 1:
            _table(rows)
        t = report.extra["totals"].get(d.serial)
        if t:
            print(
                f"  sum of partition medians {_f(t['measured_ms'])} ms (each partition on its "
                f"own, no boundary copies); sum of predicted partition times "
                f"{_f(t['predicted_ms'])} ms; plan latency {_f(t['plan_latency_ms'])} ms"
            )
        for note in report.extra["fallbacks"].get(d.serial, []):
            print(f"  fallback: {note}")
        fell_back = {
            p["id"] for p in report.extra["partitions"].get(d.serial, []) if p["fallback_reason"]
        }
        _notes(
            [
                r
                for r in d.records
                if (r.get("tags") or {}).get("role") == "fallback"
                or (r.get("tags") or {}).get("partition") not in fell_back
            ]
        )
        if d.error:
            print(f"  stopped: {d.error}")
        print()


def print_profile(report: Any, table: Any) -> None:
    """The runs per device, then per processor what the latency table holds."""
    for d in report.devices:
        print(_device_line(d))
        rows = [["delegate", "status", *_HEAD, "executed on"]]
        rows += [_row(r, r["label"]) for r in d.records]
        if len(rows) > 1:
            _table(rows)
        _notes(d.records)
        if d.error:
            print(f"  stopped: {d.error}")
        print()
    for p in report.extra.get("processors", []):
        print(
            f"processor {p['processor']}: {p['op_entries']} op entries, {p['group_entries']} "
            f"delegate-partition groups ({p['ops_in_groups']} ops), layout {p['layout']}, "
            f"runtime info {'yes' if p['runtime_info'] else 'no'}; table sum "
            f"{p['sum_ms']:.3f} ms vs measured median {_f(p['measured_ms'])} ms"
        )
    for s in report.extra.get("skipped", []):
        print(f"not in the table: {s}")
    out = report.extra.get("table")
    if out:
        print(f"wrote {out} ({len(table.processors)} processor(s))")
