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
