"""Models: read a ``.tflite``, summarize it, and see which ops a device's delegates would take."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from edgepart.claim.explain import claim_report, format_claim_report
from edgepart.devices.delegate import DelegateSpec
from edgepart.devices.profile import DeviceProfile
from edgepart.ir.graph import Model
from edgepart.ir.shapes import apply_input_shapes
from edgepart.ir.summary import describe_ops, format_ops, format_summary, summarize
from edgepart.tflite import reader
from edgepart.tflite.edgetpu import EDGETPU_OP, decode_edgetpu_program

__all__ = ["Claims", "ModelInspection", "claims", "inspect_model", "read_model"]


def read_model(path: str | os.PathLike[str]) -> Model:
    """Read and verify a ``.tflite`` file.

    The file is memory-mapped and verified as a TFLite flatbuffer; weights stay zero-copy
    views of the mapping.

    Parameters
    ----------
    path
        A ``.tflite`` file.

    Returns
    -------
    Model
        The model: ``model.subgraphs`` (``model.main`` is subgraph 0) as columnar subgraphs,
        with ``op(i)`` / ``tensor(i)`` views.

    Raises
    ------
    ModelFormatError
        The file is not a well-formed TFLite flatbuffer (names the byte offset).
    UsageError
        The file cannot be read.

    Examples
    --------
    >>> import edgepart
    >>> model = edgepart.read_model("examples/models/mobilenet_v2.tflite")
    >>> model.main.num_ops, model.main.op(0).name, model.main.op(0).options["padding"]
    (65, 'CONV_2D', 'SAME')
    """
    return reader.read_model(path)


@dataclass(frozen=True)
class Claims:
    """Per delegate: the ops it takes, the partitions TFLite would create and why ops are
    refused (TFLite's ``OPNAME: reason`` lines); and where each op lands by default.

    ``data`` is the JSON-able report (``delegates``, ``scenarios``, ...); :meth:`report` is
    the text ``edgepart inspect --profile`` prints.
    """

    data: dict[str, Any]

    @property
    def delegates(self) -> dict[str, Any]:
        """Delegate name -> what it takes (``takes``, ``num_taken``, ``partitions``,
        ``refused``, ...)."""
        return self.data["delegates"]  # type: ignore[no-any-return]

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able report."""
        return self.data

    def report(self) -> str:
        """The text report."""
        return format_claim_report(self.data)


def claims(
    model: Model | str | os.PathLike[str],
    device: DeviceProfile | str | os.PathLike[str] | None = None,
    *,
    delegates: Sequence[DelegateSpec | str | os.PathLike[str]] = (),
    subgraph: int = 0,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> Claims:
    """Which ops each delegate takes, the partitions TFLite creates and why ops are refused.

    An exact re-implementation of TFLite's delegate claiming (epochs, greedy clustering,
    partition caps), with TFLite's own reason text on every refusal.

    Parameters
    ----------
    model
        A read model or a ``.tflite`` path.
    device
        A device profile (loaded, a shipped name or a YAML path): its processors' delegates
        are analysed one by one, and its default delegates give the default placement.
    delegates
        Delegates (loaded, names or YAML paths) to apply in this order instead, as
        ``experimental_delegates``; XNNPACK follows. Without ``device`` and ``delegates``,
        every shipped delegate is analysed alone.
    subgraph
        The subgraph to analyse.
    input_shapes
        Input name -> the shape it runs at (LiteRT's ``resize_tensor_input``; only ``-1``
        dimensions of the shape signature may change). Shapes propagate through the graph and
        delegates claim at the resolved shapes. Dynamic inputs not given run at their stored
        size, and an :class:`~edgepart.ir.shapes.InputShapeNote` warning says so.

    Returns
    -------
    Claims
        The report, as data and as text.

    Raises
    ------
    ProfileError
        An unknown or invalid profile or delegate.
    UsageError
        The subgraph does not exist, a delegate is the CPU fallback, or an input shape does
        not fit the model.

    Examples
    --------
    >>> import edgepart
    >>> c = edgepart.claims("examples/models/mobilenet_v2.tflite", "pixel8")
    >>> sorted(c.delegates)
    ['gpu', 'nnapi', 'xnnpack']
    >>> c.delegates["gpu"]["num_taken"]
    65
    """
    m = _model(model, input_shapes)
    prof = device if isinstance(device, DeviceProfile) or device is None else os.fspath(device)
    specs = [d if isinstance(d, DelegateSpec) else os.fspath(d) for d in delegates]
    return Claims(claim_report(m, profile=prof, delegates=specs, subgraph=subgraph))


@dataclass(frozen=True)
class ModelInspection:
    """What ``edgepart inspect`` reports: the model summary, optionally every op, optionally
    the delegates' claims."""

    summary: dict[str, Any]
    ops: list[dict[str, Any]] | None = None
    claims: Claims | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"model": summary, "ops": [...], "claims": {...}}`` (what ``--json`` prints)."""
        out: dict[str, Any] = {"model": self.summary}
        if self.ops is not None:
            out["ops"] = self.ops
        if self.claims is not None:
            out["claims"] = self.claims.to_dict()
        return out

    def report(self) -> str:
        """The text ``edgepart inspect`` prints."""
        parts = [format_summary(self.summary)]
        if self.ops is not None:
            parts.append(format_ops(self.ops))
        if self.claims is not None:
            parts.append(self.claims.report())
        return "\n\n".join(parts)


def inspect_model(
    model: Model | str | os.PathLike[str],
    *,
    ops: bool = False,
    device: DeviceProfile | str | os.PathLike[str] | None = None,
    delegates: Sequence[DelegateSpec | str | os.PathLike[str]] = (),
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ModelInspection:
    """Summarize a model (subgraphs, op histogram, dtypes, parameter and activation bytes,
    custom ops, control flow, signatures); with ``device`` or ``delegates``, add the
    delegates' claims (see :func:`claims`).

    Parameters
    ----------
    model
        A read model or a ``.tflite`` path.
    ops
        Also list every op with its inputs and outputs.
    device, delegates, input_shapes
        As for :func:`claims`; the summary's shapes and activation bytes are those at the
        resolved shapes.

    Returns
    -------
    ModelInspection
        The summary (and ops, claims), as data and as text.

    Raises
    ------
    ModelFormatError
        The file is not a TFLite flatbuffer.
    ProfileError
        An unknown or invalid profile or delegate.

    Examples
    --------
    >>> import edgepart
    >>> info = edgepart.inspect_model("examples/models/mobilenet_v2.tflite")
    >>> info.summary["subgraphs"][0]["op_histogram"]["DEPTHWISE_CONV_2D"]
    17
    >>> print(info.report().splitlines()[2])
    subgraphs    1 (65 ops in all)
    """
    m = model if isinstance(model, Model) else reader.read_model(model)
    # a summary shows the file even when its default sizes do not run (the note says why)
    m = apply_input_shapes(m, input_shapes, lenient=not input_shapes)
    found = None
    if device is not None or delegates:
        found = claims(m, device, delegates=delegates)
    summary = summarize(m)
    _add_programs(m, summary)
    return ModelInspection(summary, describe_ops(m) if ops else None, found)


def _add_programs(m: Model, summary: dict[str, Any]) -> None:
    """What the compiled Edge TPU programs of the model say about themselves."""
    for g, sg in zip(summary["subgraphs"], m.subgraphs, strict=True):
        progs = []
        for i in range(sg.num_ops):
            if sg.op_name(i) != EDGETPU_OP:
                continue
            p = decode_edgetpu_program(sg.op_custom_options[i] or b"")
            progs.append(
                {
                    "op": i,
                    "bytes": p.total_bytes,
                    "parameter_bytes": p.parameter_bytes,
                    "estimated_cycles": p.estimated_cycles,
                    "compiler_version": p.compiler_version,
                    "description": p.describe(),
                }
            )
        if progs:
            g["programs"] = progs


def _model(
    model: Model | str | os.PathLike[str],
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> Model:
    """The model read and its shapes resolved (at ``input_shapes``)."""
    m = model if isinstance(model, Model) else reader.read_model(model)
    return apply_input_shapes(m, input_shapes)
