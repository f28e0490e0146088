"""Costs: per-op work, roofline latency and the cost model's estimate on a device's processors."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from edgepart.cost.hardware import hardware_from_profile
from edgepart.cost.model import CostModel
from edgepart.cost.roofline_table import RooflineTable, roofline_table
from edgepart.cost.table import LatencyTable, load_table
from edgepart.cost.table_use import check_tables_used
from edgepart.devices.profile import DeviceProfile, load_profile
from edgepart.ir.graph import Model
from edgepart.ir.shapes import apply_input_shapes
from edgepart.lowering.processor_support import processor_support
from edgepart.tflite.reader import read_model

__all__ = ["RooflineTable", "roofline"]


def roofline(
    model: Model | str | os.PathLike[str],
    device: DeviceProfile | str | os.PathLike[str],
    *,
    latency_tables: Sequence[str | os.PathLike[str] | LatencyTable] = (),
    table_for: Mapping[str, str] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> RooflineTable:
    """Cost every op of the model's main subgraph on each processor of ``device``.

    Time per op is ``max(FLOPs / peak for the op's dtype, bytes / bandwidth)`` plus the
    processor's dispatch overhead when the op runs alone; measured latency tables replace the
    roofline where they cover an op. A processor is costed only on the ops its delegate can
    run (a CPU on every op its builtin kernels run); compiled accelerator programs without a
    measured entry are ``unknown``.

    Parameters
    ----------
    model
        A read model or a ``.tflite`` path.
    device
        A device profile (loaded, a shipped name or a YAML path).
    latency_tables
        Measured latency tables (paths or loaded), merged in order.
    table_for
        Back profile processor ``PROC`` with latency-table processor ``TABLEPROC``.
    input_shapes
        Input name -> the shape it runs at (see :func:`edgepart.claims`); ops are costed at
        the resolved shapes.

    Returns
    -------
    RooflineTable
        Per-op rows and per-processor totals (``to_dict()``, ``format_text()``, ``plot()``).

    Raises
    ------
    ProfileError, LatencyTableError, ModelFormatError
        An invalid profile, table or model.

    Examples
    --------
    >>> import edgepart
    >>> r = edgepart.roofline("examples/models/mobilenet_v2.tflite", "pixel8")
    >>> r.processors, len(r.rows)
    (('cpu', 'gpu', 'tpu'), 65)
    >>> r.rows[0]["name"], r.rows[0]["procs"]["gpu"]["bound"]
    ('CONV_2D', 'memory')
    """
    m = apply_input_shapes(model if isinstance(model, Model) else read_model(model), input_shapes)
    prof = device if isinstance(device, DeviceProfile) else load_profile(device)
    tables = None
    if latency_tables:
        tables = LatencyTable()
        for t in latency_tables:
            tables = tables.merge(t if isinstance(t, LatencyTable) else load_table(t))
    check_tables_used(
        tables, [(p.name, p.kind) for p in prof.processors], dict(table_for or {}), prof.name
    )
    cm = CostModel(hardware_from_profile(prof), tables, table_for=dict(table_for or {}))
    # each processor is costed on the ops its delegate can run (builtin CPU kernels take the
    # rest on CPU processors), as the partitioner sees it
    support = processor_support(m.main, prof).supported
    return roofline_table(cm.costs(m.main, m), prof.name, support)
