"""Reports a person can look at: one self-contained HTML page and Model Explorer overlays.

:func:`build_report` collects a bundle (or a model planned now) into a report document, adds
measured schedules if given, and :func:`write_report` writes it as one HTML file with no network
access (:mod:`edgepart.report.page`) and, on request, Model Explorer node-data overlays
(:mod:`edgepart.report.explorer`). The pieces: :mod:`.plan_view` (what a placement is),
:mod:`.measured` (``run``/``bench`` records), :mod:`.collect` (the document).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgepart.errors import UsageError
from edgepart.fileio import atomic_write_text
from edgepart.report.collect import report_document
from edgepart.report.explorer import OVERLAYS, graph_id, overlay_documents, write_overlays
from edgepart.report.measured import MeasuredSchedule, load_measured
from edgepart.report.page import render_html
from edgepart.report.plan_view import PlanView, view_of_bundle, view_of_model

__all__ = [
    "OVERLAYS",
    "MeasuredSchedule",
    "PlanView",
    "ReportResult",
    "build_report",
    "load_measured",
    "overlay_documents",
    "render_html",
    "report_document",
    "write_report",
]


@dataclass(frozen=True)
class ReportResult:
    """What :func:`write_report` wrote."""

    html: Path
    document: dict[str, Any]
    overlays: tuple[Path, ...] = field(default=())
    graph_id: str = "main"
    model_path: str = ""


def build_report(
    target: str | os.PathLike[str],
    *,
    profile: str | None = None,
    model: str | os.PathLike[str] | None = None,
    measured: Sequence[str | os.PathLike[str]] = (),
    latency_tables: Sequence[str] = (),
    table_for: Mapping[str, str] | None = None,
    objective: str = "latency",
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> tuple[PlanView, dict[str, Any]]:
    """The plan view and report document of a bundle directory or a ``.tflite`` model.

    A bundle is read as written (its source model from ``model`` or the manifest; its profile
    from the plan unless ``profile`` is given). A model is partitioned now for ``profile``
    (required) with the heuristic solver and ``objective``, its dynamic inputs at
    ``input_shapes``; nothing is written. A bundle runs at the sizes it records.

    Parameters
    ----------
    target
        A bundle directory or a ``.tflite`` model.
    profile
        The device profile (a model needs one; a bundle's own by default).
    model
        A bundle's source model, if it moved since the bundle was written.
    measured
        Records of ``edgepart run BUNDLE --benchmark --json`` or ``edgepart bench BUNDLE --adb
        --json``: their measured schedules are drawn beside the predicted ones.
    latency_tables, table_for, objective
        The cost model's measured tables and their processor mapping (as for
        :func:`edgepart.place`); a model's plan minimizes ``objective``.

    Returns
    -------
    tuple of PlanView and dict
        What the placement is, and the report document the page renders.

    Raises
    ------
    UsageError
        A missing target or profile, a source model that is not the bundle's, measured records
        of another bundle, measured records for a model (measure a bundle).
    BundleError, ModelFormatError, ProfileError
        Invalid inputs, as their loaders report them.

    Examples
    --------
    >>> import edgepart
    >>> view, doc = edgepart.build_report("examples/models/mobilenet_v2.tflite", profile="pixel8")
    >>> doc["meta"]["num_ops"], doc["meta"]["num_partitions"]
    (65, 1)
    >>> [s["label"] for s in doc["schedules"]]
    ["edgepart's plan, predicted for pixel8", "TFLite's default (gpu then xnnpack), predicted"]
    """
    t = Path(target)
    if t.is_dir():
        if input_shapes:
            raise UsageError(
                f"{t}: --input-shape goes with a model; a bundle runs at the sizes it records"
            )
        view = view_of_bundle(
            t, profile=profile, model=model, latency_tables=latency_tables, table_for=table_for
        )
    elif t.is_file():
        if not profile:
            raise UsageError(f"{t}: give the device with --profile DEVICE (see edgepart profiles)")
        if model is not None:
            raise UsageError("--model goes with a bundle; the target is already a model")
        if measured:
            raise UsageError(
                f"{t}: measured records belong to a bundle: partition the model with -o BUNDLE, "
                "run or bench the bundle, and report on the bundle"
            )
        view = view_of_model(
            t,
            profile=profile,
            objective=objective,
            latency_tables=latency_tables,
            table_for=table_for,
            input_shapes=input_shapes,
        )
    else:
        raise UsageError(f"{t}: no such bundle directory or .tflite model")
    runs: list[MeasuredSchedule] = []
    for m in measured:
        runs.extend(load_measured(m, view.partitions))
    return view, report_document(view, runs)


def write_report(
    target: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    model_explorer: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> ReportResult:
    """Write the HTML report of ``target`` to ``output`` (and overlays into ``model_explorer``).

    The page is one self-contained file (no network access when opened), written atomically.

    Parameters
    ----------
    target
        A bundle directory or a ``.tflite`` model.
    output
        The ``.html`` file to write.
    model_explorer
        Also write Model Explorer node-data overlays into this directory.
    **kwargs
        As for :func:`build_report` (``profile``, ``model``, ``measured``, ...).

    Returns
    -------
    ReportResult
        The file written, the report document and the overlay files.

    Raises
    ------
    UsageError, BundleError, ModelFormatError, ProfileError
        As for :func:`build_report`; ``output`` is a directory.

    Examples
    --------
    >>> import tempfile, edgepart
    >>> out = tempfile.mkdtemp() + "/report.html"
    >>> res = edgepart.write_report("examples/models/mobilenet_v2.tflite", out, profile="pixel8")
    >>> res.html.name, res.document["meta"]["profile"], res.overlays
    ('report.html', 'pixel8', ())
    """
    out = Path(output)
    if out.is_dir():
        raise UsageError(f"-o {out}: is a directory; give the .html file to write")
    view, doc = build_report(target, **kwargs)
    page = render_html(doc)
    gid = graph_id(view.model, view.problem.subgraph)
    overlays: list[Path] = []
    if model_explorer is not None:
        stem = Path(view.model.source or "model").stem
        overlays = write_overlays(model_explorer, doc, gid, stem)
    atomic_write_text(out, page)
    return ReportResult(
        html=out,
        document=doc,
        overlays=tuple(overlays),
        graph_id=gid,
        model_path=str(view.model.source or ""),
    )
