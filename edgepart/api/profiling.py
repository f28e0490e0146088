"""Profiling: measure every op of a model on this host with LiteRT into a latency table."""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Callable, Mapping, Sequence

from edgepart.bundle.parts import MODEL_LIMIT
from edgepart.devices.host_executors import MAX_THREADS
from edgepart.errors import ModelFormatError, UsageError
from edgepart.fileio import read_regular
from edgepart.ir.shapes import apply_input_shapes
from edgepart.isolate import run_isolated
from edgepart.profiling.host import STATISTICS, ProfileConfig, ProfileResult, profile_model
from edgepart.profiling.timing import TimingConfig
from edgepart.tflite.litert_safety import check_model
from edgepart.tflite.reader import read_model

__all__ = ["EXECUTORS", "ProfileResult", "profile_host"]

EXECUTORS = ("xnnpack", "builtin", "reference")
"""Host kernel sets: LiteRT's default (the XNNPACK delegate), builtin kernels without default
delegates, reference kernels."""


def profile_host(
    model: str | os.PathLike[str],
    *,
    executor: str = "xnnpack",
    threads: int = 1,
    budget: float = 0.04,
    processor: str | None = None,
    statistic: str = "p10",
    fusion: bool = True,
    output: str | os.PathLike[str] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ProfileResult:
    """Time every op (and group of ops the executor fuses into one kernel) of a model on this
    host with the LiteRT interpreter, and the whole model, into a latency table.

    Each op or group is extracted into a standalone model and timed (warm-up, adaptive
    repeats, median and spread), as are the whole model and the per-invocation overhead.
    These are host timings: they describe this machine, not a phone.

    Parameters
    ----------
    model
        A ``.tflite`` path.
    executor
        ``"xnnpack"`` (LiteRT's default), ``"builtin"`` or ``"reference"``.
    threads
        Interpreter threads.
    budget
        Measuring time per op in seconds (repeats adapt to it).
    processor
        The processor name in the table (default ``host_<executor>_<threads>t``).
    statistic
        The statistic an entry's value is taken from: ``"p10"`` (interference from other
        processes only adds time), ``"median"`` or ``"min"``.
    fusion
        Also time fused op pairs and ops after their predecessor; false: single ops only.
    output
        Write the latency table here (``docs/latency_tables.md``).
    progress
        Called as ``progress(done, total, label)`` as work proceeds.
    input_shapes
        Input name -> the shape it runs at (see :func:`edgepart.claims`): every op is timed
        at the propagated shapes, shapes computed in the model included, as is the whole
        model (written with those shapes).

    Returns
    -------
    ProfileResult
        The table (``table``), every unit measured, the invoke overhead, the whole model's
        timing and what the table predicts for it.

    The model is checked for what crashes LiteRT (:mod:`edgepart.tflite.litert_safety`) and
    then measured in a child process (:func:`edgepart.isolate.run_isolated`), so a crash
    inside LiteRT is reported on one line instead of ending the caller.

    Raises
    ------
    UsageError
        A bad argument.
    ModelFormatError
        The model does not load.
    UnsupportedOpError
        The model would crash LiteRT.
    RuntimeBackendError
        LiteRT crashed while measuring (the signal and the unit being timed are named).

    Examples
    --------
    >>> import edgepart
    >>> res = edgepart.profile_host("examples/models/mobilenet_v2.tflite", budget=0.002,
    ...                             fusion=False)
    >>> res.processor, len(res.table.processors[res.processor].entries) > 0
    ('host_xnnpack_1t', True)
    """
    if executor not in EXECUTORS:
        raise UsageError(f"executor {executor!r} is not known; use one of {', '.join(EXECUTORS)}")
    if not 1 <= threads <= MAX_THREADS:
        raise UsageError(f"threads {threads}: need 1 to {MAX_THREADS}")
    if budget <= 0:
        raise UsageError(f"budget {budget}: need a positive number of seconds")
    if statistic not in STATISTICS:
        raise UsageError(f"statistic {statistic!r}: use one of {', '.join(STATISTICS)}")
    path = os.fspath(model)
    raw = read_model(path)
    check_model(raw, path)
    # the sizes it runs at (a note says so for a dynamic input not given); the child repeats
    # this quietly
    sized = apply_input_shapes(raw, input_shapes)
    cfg = ProfileConfig(
        executor=executor,
        threads=threads,
        timing=TimingConfig(budget_s=budget),
        processor=processor,
        statistic=statistic,
        fusion=fusion,
    )
    res: ProfileResult = run_isolated(
        _profile_file,
        (path, cfg, None if input_shapes is None else dict(input_shapes)),
        what=f"profile {path}",
        progress=progress,
    )
    if res.model is None:  # the child's model does not cross processes: the sized one does
        res = dataclasses.replace(res, model=sized)
    if output is not None:
        res.table.save(output)
    return res


def _profile_file(
    path: str,
    cfg: ProfileConfig,
    input_shapes: Mapping[str, Sequence[int]] | None,
    progress: Callable[[int, int, str], None] | None = None,
) -> ProfileResult:
    """:func:`profile_model` of a file (what :func:`profile_host` runs in its child process)."""
    raw = read_model(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the parent gave the input-size note already
        m = apply_input_shapes(raw, input_shapes)
    content = None  # a model whose sizes changed is timed as written with them
    if all(
        a.tensor_shape is b.tensor_shape for a, b in zip(m.subgraphs, raw.subgraphs, strict=True)
    ):
        # the whole-model timing loads the file's own bytes
        content = read_regular(
            path, what=".tflite model", limit=MODEL_LIMIT, error=ModelFormatError
        )
    res = profile_model(m, cfg, model_bytes=content, name=path, progress=progress)
    # the result crosses back to the parent by pickle, and a model read from a file decodes
    # its op options lazily (closures over the flatbuffer), which do not pickle: the parent
    # has the file
    return dataclasses.replace(res, model=None)
