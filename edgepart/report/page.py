"""The report as one self-contained HTML file.

Styles, the renderer (``assets/report.js``, plain JavaScript and SVG written for edgepart, no
library) and the document (:mod:`edgepart.report.collect`) are inlined; a Content-Security-Policy
meta tag forbids every network request, so the page opens from disk with the network off and
cannot leak anything. The same document gives the same bytes.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

__all__ = ["render_html"]

_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'"
)

_SECTIONS = (
    (
        "graph",
        "Op graph",
        "Every op colored by the processor it runs on; partitions are bands in "
        "plan order, and edges crossing a partition boundary carry the bytes they move.",
    ),
    (
        "schedule",
        "Schedules",
        "Predicted Gantt charts of edgepart's plan and of TFLite's default "
        "placement (units and links as rows), and measured runs when given.",
    ),
    ("stages", "Stage timeline", ""),
    ("default", "TFLite's default beside edgepart", ""),
    (
        "ops",
        "Per-op table",
        "Latency of each op on each processor (microseconds, from the cost "
        "model), the chosen processor, and why the others refuse it (TFLite's reason).",
    ),
    ("roofline", "Roofline", ""),
    ("arena", "Arena", ""),
)


def _asset(name: str) -> str:
    return resources.files("edgepart.report").joinpath("assets").joinpath(name).read_text("utf-8")


def _code() -> str:
    js = _asset("report.js")
    if "</script" in js.lower() or "<!--" in js:  # would end the element early
        raise AssertionError("report.js must not contain '</script' or '<!--'")
    return js


def _script_json(doc: Any) -> str:
    """JSON safe inside ``<script>``: no ``</``, no ``<!--``, no U+2028/U+2029."""
    text = json.dumps(
        doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _ms(v: Any) -> str:
    return "-" if v is None else f"{float(v) * 1e3:.3f} ms"


def _tensor_parallel_section(tp: dict[str, Any]) -> str:
    """The tensor-parallel section (static HTML: splits, their shards, collectives)."""
    e = html.escape
    rows = []
    for s in tp["splits"]:
        shards = ", ".join(f"{sh['partition']} ({sh['unit']})" for sh in s["shards"])
        gain = "-" if s["gain"] is None else f"{float(s['gain']) * 100:.1f} %"
        rows.append(
            "<tr>"
            + "".join(
                f"<td>{e(str(v))}</td>"
                for v in (
                    s["id"],
                    f"{s['layer']} op {','.join(map(str, s['ops']))}",
                    s["mode"],
                    s["sizes"],
                    shards,
                    s["collective"],
                    s["reason"],
                    _ms(s["unsplit_s"]),
                    _ms(s["split_s"]),
                    gain,
                    "yes" if s["exact"] else "float tolerance",
                )
            )
            + "</tr>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "split",
            "layer",
            "mode",
            "shard sizes",
            "shards (partition, unit)",
            "collective",
            "why",
            "layer unsplit",
            "layer split",
            "gain",
            "bit-identical",
        )
    )
    crow = []
    for c in tp["collectives"]:
        frm = ", ".join("input" if x is None else x for x in c["from"])
        crow.append(
            "<tr>"
            + "".join(
                f"<td>{e(str(v))}</td>"
                for v in (
                    c["id"],
                    c["kind"].replace("_", "-"),
                    c["split"],
                    c["tensor"],
                    frm,
                    ", ".join(c["to"]),
                    c["bytes"],
                    ", ".join(c["links"]) or "(one memory domain)",
                    _ms(c["cost_s"]),
                )
            )
            + "</tr>"
        )
    chead = "".join(
        f"<th>{h}</th>"
        for h in ("id", "kind", "split", "tensor", "from", "to", "bytes", "links", "cost")
    )
    summary = tp.get("summary") or {}
    line = ""
    if summary:
        line = (
            f"<p>Predicted latency without splits {e(_ms(summary.get('unsplit_latency_s')))}, "
            f"with them {e(_ms(summary.get('latency_s')))}; taken because the gain passes "
            f"{float(summary.get('threshold', 0)) * 100:.0f} % (or no unit holds a layer "
            "whole).</p>"
        )
    return (
        '<section id="tensor_parallel"><h2>Tensor parallelism</h2>'
        '<p class="muted">Layers split across units: each shard a partition, joined by an '
        "all-gather (CONCATENATION) or all-reduce (ADD); the collectives move the data.</p>"
        f"{line}<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"<table><thead><tr>{chead}</tr></thead><tbody>{''.join(crow)}</tbody></table>"
        "</section>"
    )


def render_html(doc: dict[str, Any]) -> str:
    """The report page for a :func:`~edgepart.report.collect.report_document`."""
    meta = doc["meta"]
    title = f"edgepart report: {meta['model']} on {meta['profile']}"
    nav = "".join(f'<a href="#{sid}">{html.escape(name)}</a>' for sid, name, _ in _SECTIONS)
    sections = "".join(
        f'<section id="{sid}"><h2>{html.escape(name)}</h2>'
        + (f'<p class="muted">{html.escape(blurb)}</p>' if blurb else "")
        + "</section>"
        for sid, name, blurb in _SECTIONS
    )
    if "tensor_parallel" in doc:  # plans with splits only: other pages are unchanged
        nav += '<a href="#tensor_parallel">Tensor parallelism</a>'
        sections += _tensor_parallel_section(doc["tensor_parallel"])
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="edgepart">'
        f"<title>{html.escape(title)}</title>"
        f"<style>{_asset('report.css')}</style></head>\n"
        f'<body><header id="top"></header><nav>{nav}</nav>\n{sections}\n'
        f'<script type="application/json" id="edgepart-data">{_script_json(doc)}</script>\n'
        f"<script>{_code()}</script>\n"
        "</body></html>\n"
    )
