"""edgepart's placement as Model Explorer overlays ("node data", the format of the
``ai-edge-model-explorer`` package's ``node_data_builder``).

Model Explorer's TFLite adapter names each op node of a subgraph by its op index (``"0"``,
``"1"``, ...) and each graph by the subgraph's name (else its signature key, else ``main`` /
``subgraph_<i>``). A node-data file maps graph id to ``{"results": {node id: {"value": ...,
"bgColor": ...}}, ...}``: string values are categories (the UI sums them per group node),
numeric values are colored by the ``gradient``. Overlays written by :func:`write_overlays`:

* ``processor``: edgepart's processor per op, in the report's processor colors;
* ``partition``: the partition (``p3 gpu:0``), in its processor's color;
* ``tflite_default``: the processor TFLite's default delegates would give the op;
* ``predicted_us``: the cost model's latency on the chosen processor, microseconds;
* ``measured_us``: latency-table measurements of ops on their chosen processor, where the
  table has one (written only if some op has one); its name says which table, so a host table
  standing in for a phone processor is not mistaken for the phone.

Open them with ``model-explorer MODEL.tflite --node_data_paths=a.json,b.json``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from edgepart.errors import UsageError
from edgepart.fileio import atomic_write_text
from edgepart.ir.graph import Model

__all__ = ["OVERLAYS", "graph_id", "overlay_documents", "write_overlays"]

OVERLAYS = ("processor", "partition", "tflite_default", "predicted_us", "measured_us")

_GRADIENT = [
    {"stop": 0, "bgColor": "#e8f5e9"},
    {"stop": 0.5, "bgColor": "#fdd835"},
    {"stop": 1, "bgColor": "#e53935"},
]


def graph_id(model: Model, subgraph: int) -> str:
    """The id Model Explorer's TFLite adapter gives ``model.subgraphs[subgraph]``."""
    name = model.subgraphs[subgraph].name
    if name:
        return name
    for sd in model.signature_defs:
        if sd.subgraph == subgraph:
            return sd.key
    return "main" if subgraph == 0 else f"subgraph_{subgraph}"


def _categorical(gid: str, name: str, values: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        gid: {
            "name": name,
            "results": {
                str(i): {"value": v, "bgColor": c, "textColor": _text(c)}
                for i, (v, c) in enumerate(values)
            },
            "showExpandedSummaryOnGroupNode": True,
            "showLabelCountColumnsInChildrenStatsTable": True,
        }
    }


def _numeric(gid: str, name: str, values: dict[int, float]) -> dict[str, Any]:
    return {
        gid: {
            "name": name,
            "results": {str(i): {"value": v} for i, v in sorted(values.items())},
            "gradient": _GRADIENT,
        }
    }


def _text(color: str) -> str:
    v = int(color.lstrip("#"), 16)
    r, g, b = (v >> 16) & 255, (v >> 8) & 255, v & 255
    return "#111111" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "#ffffff"


def overlay_documents(doc: dict[str, Any], gid: str) -> dict[str, dict[str, Any]]:
    """Node-data documents by overlay name, from a report document (see the module docstring)."""
    procs = doc["processors"]
    ops = doc["ops"]
    parts = doc["partitions"]
    n = len(ops["type"])
    color = [p["color"] for p in procs]
    pname = [p["name"] for p in procs]
    out: dict[str, dict[str, Any]] = {}
    out["processor"] = _categorical(
        gid,
        "edgepart: processor",
        [(pname[ops["proc"][i]], color[ops["proc"][i]]) for i in range(n)],
    )
    out["partition"] = _categorical(
        gid,
        "edgepart: partition",
        [
            (
                f"{parts[ops['part'][i]]['id']} {parts[ops['part'][i]]['unit']}",
                color[ops["proc"][i]],
            )
            for i in range(n)
        ],
    )
    out["tflite_default"] = _categorical(
        gid,
        "TFLite default: processor",
        [(pname[ops["dproc"][i]], color[ops["dproc"][i]]) for i in range(n)],
    )
    pred = {}
    meas = {}
    measured = doc["sources"].index("measured")
    for i in range(n):
        p = ops["proc"][i]
        v = ops["lat"][p][i]
        if v is None:
            continue
        pred[i] = v
        if ops["src"][p][i] == measured:
            meas[i] = v
    out["predicted_us"] = _numeric(gid, "edgepart: predicted latency (us)", pred)
    if meas:
        tables = sorted({procs[ops["proc"][i]]["table"] or "?" for i in meas})
        out["measured_us"] = _numeric(
            gid, f"measured latency (us, latency table {', '.join(tables)})", meas
        )
    return out


def write_overlays(
    directory: str | os.PathLike[str], doc: dict[str, Any], gid: str, stem: str
) -> list[Path]:
    """Write each overlay of :func:`overlay_documents` as ``directory/<stem>.<overlay>.json``
    (atomically, sorted keys); returns the paths written."""
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise UsageError(f"--model-explorer {root}: not a directory")
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", stem) or "model"
    paths = []
    for name, data in overlay_documents(doc, gid).items():
        path = root / f"{safe}.{name}.json"
        atomic_write_text(path, json.dumps(data, sort_keys=True, indent=1) + "\n")
        paths.append(path)
    return paths
