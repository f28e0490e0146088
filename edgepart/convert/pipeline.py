"""``convert_model``: a Keras file, a SavedModel or a PyTorch program to a checked ``.tflite``.

Steps: load the source (TensorFlow or PyTorch, imported here only), fix input shapes, convert
with the real converter (TensorFlow's ``TFLiteConverter``; ``litert-torch`` for PyTorch),
calibrate for int8 on the given samples or on random data, then check the result before it is
written: edgepart's reader parses it, LiteRT runs it on check samples, and its outputs are
compared with the source model's (:mod:`edgepart.convert.checks`). Ops that forced
``SELECT_TF_OPS`` are reported (no delegate takes a Flex op), and with a device profile the
claim report says which delegate would take what (:func:`edgepart.claim.explain.claim_report`).

The output is written atomically once the model has been converted and parsed, so an error
never leaves a partial file and never replaces an existing one; a numerical check that fails
is reported in the result (``passed`` is False), the file is still written.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgepart.claim.explain import claim_report
from edgepart.convert.checks import (
    LIMITS,
    OutputCheck,
    compare_outputs,
    flex_ops,
    judge,
    run_litert,
)
from edgepart.convert.inputs import (
    InputSpec,
    Sample,
    load_samples,
    parse_input_shapes,
    random_samples,
)
from edgepart.convert.tf_backend import convert_tf, load_tf_source
from edgepart.convert.torch_backend import convert_torch, load_torch_source
from edgepart.devices.profile import load_profile
from edgepart.errors import ConversionError, EdgepartError, UsageError
from edgepart.fileio import atomic_write
from edgepart.progress import ProgressCallback
from edgepart.tflite.reader import read_model_bytes

__all__ = ["QUANTIZE_MODES", "ConversionResult", "convert_model", "source_kind"]

QUANTIZE_MODES = ("none", "fp16", "dynamic", "int8")
RANDOM_CALIBRATION_SAMPLES = 64


@dataclass(frozen=True)
class ConversionResult:
    """What :func:`convert_model` did and found (``to_dict`` for JSON)."""

    source: str
    kind: str
    output: str
    quantize: str
    size_bytes: int
    num_ops: int
    op_counts: dict[str, int]
    inputs: tuple[InputSpec, ...]
    outputs: tuple[str, ...]
    calibration: dict[str, Any] | None
    select_tf_ops: tuple[str, ...]
    ran_in_litert: bool
    not_run_reason: str | None
    checks: tuple[OutputCheck, ...]
    claims: dict[str, Any] | None
    warnings: tuple[str, ...] = field(default=())
    seconds: float = 0.0

    @property
    def passed(self) -> bool | None:
        """True if every output is within :data:`~edgepart.convert.checks.LIMITS`; None if the
        model could not be run here."""
        if not self.ran_in_litert:
            return None
        return not any(c.failures for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kind": self.kind,
            "output": self.output,
            "quantize": self.quantize,
            "size_bytes": self.size_bytes,
            "num_ops": self.num_ops,
            "op_counts": dict(sorted(self.op_counts.items())),
            "inputs": [
                {"name": s.name, "shape": list(s.shape), "dtype": s.dtype} for s in self.inputs
            ],
            "outputs": list(self.outputs),
            "calibration": self.calibration,
            "select_tf_ops": list(self.select_tf_ops),
            "ran_in_litert": self.ran_in_litert,
            "not_run_reason": self.not_run_reason,
            "checks": [c.to_dict() for c in self.checks],
            "limits": LIMITS[self.quantize],
            "passed": self.passed,
            "claims": self.claims,
            "warnings": list(self.warnings),
        }


def source_kind(path: str | os.PathLike[str]) -> str:
    """``keras``, ``savedmodel`` or ``torch`` for a source path.

    Raises
    ------
    UsageError
        The path does not exist or is none of the supported kinds (the message lists them).
    """
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{p}: no such file or directory")
    if p.is_dir():
        if (p / "saved_model.pb").is_file() or (p / "saved_model.pbtxt").is_file():
            return "savedmodel"
        raise UsageError(
            f"{p}: a directory without saved_model.pb; give a SavedModel directory, a .keras or "
            ".h5 file, or a PyTorch .pt2 program"
        )
    suffix = p.suffix.lower()
    if suffix in (".keras", ".h5", ".hdf5"):
        return "keras"
    if suffix == ".pt2":
        return "torch"
    if suffix == ".tflite":
        raise UsageError(f"{p}: already a .tflite model; nothing to convert")
    if suffix in (".pt", ".pth"):
        raise UsageError(
            f"{p}: a PyTorch state dict or pickle holds code or no graph; save the model with "
            "torch.export.save(torch.export.export(model, example_args), 'model.pt2')"
        )
    raise UsageError(
        f"{p}: unknown source format {suffix or '(no suffix)'}; give a .keras or .h5 file, a "
        "SavedModel directory or a PyTorch .pt2 program"
    )


def convert_model(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    quantize: str = "none",
    input_shapes: Sequence[str] | dict[str | None, tuple[int, ...]] = (),
    calibration_data: str | os.PathLike[str] | None = None,
    calibration_samples: int | None = None,
    int8_io: bool = False,
    select_tf_ops: bool = True,
    signature: str | None = None,
    profile: str | None = None,
    check_samples: int = 16,
    seed: int = 0,
    progress: ProgressCallback | None = None,
) -> ConversionResult:
    """Convert ``source`` to a ``.tflite`` file at ``output`` and check it (module docstring).

    Parameters
    ----------
    source
        A ``.keras``/``.h5`` file, a SavedModel directory, or a ``torch.export`` ``.pt2``
        program (needs ``edgepart[torch]``).
    output
        The ``.tflite`` file to write (atomically; an existing file is replaced only on
        success).
    quantize
        ``none``, ``fp16``, ``dynamic`` or ``int8`` (see :mod:`edgepart.convert.tf_backend`).
    input_shapes
        ``--input-shape`` values (``"1,224,224,3"`` or ``"NAME=1,224,224,3"``) or a parsed dict.
    calibration_data
        A directory of ``.npy`` samples (:func:`edgepart.convert.inputs.load_samples`) for int8
        calibration and for the checks; without it, int8 calibrates on random data (a warning
        says what that costs) and checks use random data.
    calibration_samples
        Use at most this many samples to calibrate (default: all files, or 64 random ones).
    int8_io
        With ``int8``: int8 model inputs and outputs instead of float32.
    select_tf_ops
        Allow ops without a TFLite builtin as Flex ops (reported); False makes them an error.
    signature
        The SavedModel signature to convert (default ``serving_default`` or the only one).
    profile
        A device profile: the result's ``claims`` says which delegates take which ops.
    check_samples
        How many samples the checks compare on.
    seed
        Seed of the random calibration and check data.
    progress
        ``progress(done, total, label)`` while calibrating and checking.

    Returns
    -------
    ConversionResult
        The written file, its inputs and ops, the Flex ops it needs, the checks against the
        source model (``passed``), and with ``profile`` the delegates' claims.

    Raises
    ------
    UsageError
        A bad source path or format, bad options, bad calibration files.
    ConversionError
        The source cannot be loaded or converted, or the result does not parse.

    Examples
    --------
    A Keras model to an int8 ``.tflite`` calibrated on 100 samples, checked on 16, and what the
    Pixel 8's delegates take of it (TensorFlow is imported by the call; the test suite runs
    conversions in child processes only, ``tests/convert``, so this one is not run here)::

        res = edgepart.convert_model("mlp.keras", "mlp_int8.tflite", quantize="int8",
                                     calibration_data="samples/", profile="pixel8")
        res.passed, res.checks[0].snr_db

    A source that needs no conversion is refused before TensorFlow loads:

    >>> import tempfile, edgepart
    >>> out = tempfile.mkdtemp() + "/m.tflite"
    >>> edgepart.convert_model("examples/models/mobilenet_v2.tflite", out)
    Traceback (most recent call last):
    ...
    edgepart.errors.UsageError: examples/models/mobilenet_v2.tflite: already a .tflite model; ...
    """
    t0 = time.perf_counter()
    if quantize not in QUANTIZE_MODES:
        raise UsageError(f"--quantize {quantize}: choose one of {', '.join(QUANTIZE_MODES)}")
    if int8_io and quantize != "int8":
        raise UsageError("--int8-io goes with --quantize int8")
    if check_samples < 1:
        raise UsageError(f"--check-samples {check_samples}: need at least 1")
    if calibration_samples is not None and calibration_samples < 1:
        raise UsageError(f"--calibration-samples {calibration_samples}: need at least 1")
    out = Path(output)
    if out.is_dir():
        raise UsageError(f"-o {out}: is a directory; give the .tflite file to write")
    kind = source_kind(source)
    shapes = (
        dict(input_shapes) if isinstance(input_shapes, dict) else parse_input_shapes(input_shapes)
    )
    if profile is not None:
        prof: Any = load_profile(profile)  # fail on a bad profile before the slow part
    if signature is not None and kind != "savedmodel":
        raise UsageError("--signature applies to SavedModel sources")
    warnings: list[str] = []
    if kind == "torch":
        src: Any = load_torch_source(source, shapes)
    else:
        src = load_tf_source(source, kind, shapes, signature)
    specs: list[InputSpec] = list(src.inputs)
    given = None
    if calibration_data is not None:
        given = load_samples(calibration_data, specs)
    calib: list[Sample] | None = None
    calibration = None
    if quantize == "int8":
        if given is not None:
            calib = given[:calibration_samples] if calibration_samples else given
            calibration = {"samples": len(calib), "random": False, "data": str(calibration_data)}
        else:
            n = calibration_samples or RANDOM_CALIBRATION_SAMPLES
            calib = random_samples(specs, n, seed)
            calibration = {"samples": n, "random": True, "data": None}
            warnings.append(
                f"no --calibration-data: int8 ranges are calibrated on {n} random inputs "
                "(uniform in [-1, 1]), so every activation range fits random data, not yours; "
                "on real inputs that usually costs accuracy (clipped or wasted int8 range: lower "
                "SNR and top-1 agreement than with representative samples), and the check "
                "figures below, measured on random inputs too, cannot show it"
            )
    checks_in = (given or [])[:check_samples]
    if len(checks_in) < check_samples:
        checks_in = checks_in + random_samples(specs, check_samples - len(checks_in), seed + 1)

    def representative() -> Iterator[Sample]:
        assert calib is not None
        for k, s in enumerate(calib):
            if progress:
                progress(k, len(calib), "calibrating")
            yield s
        if progress:
            progress(len(calib), len(calib), "calibrating")

    if kind == "torch":
        content, flex = convert_torch(src, quantize, calib, int8_io=int8_io)
    else:
        content, flex = convert_tf(
            src,
            quantize,
            representative if calib is not None else None,
            select_tf_ops=select_tf_ops,
            int8_io=int8_io,
        )
    try:
        model = read_model_bytes(content, str(out))
    except EdgepartError as err:
        raise ConversionError(
            f"{source}: the converter's output does not parse: {err}; nothing was written"
        ) from None
    flex = sorted(set(flex) | set(flex_ops(model)))
    if flex:
        warnings.append(
            f"{len(flex)} op type(s) need SELECT_TF_OPS ({', '.join(flex)}): they run only with "
            "the Flex delegate (TensorFlow kernels on the CPU, several MB added to the app), "
            "no delegate (GPU, NNAPI, Hexagon, Edge TPU, XNNPACK) takes them, and each one "
            "splits the delegated graph"
        )
    reference = _references(src, checks_in, progress)
    ran, reason, checks = True, None, []
    try:
        got = run_litert(content, checks_in)
    except (RuntimeError, ValueError) as err:
        ran = False
        text = " ".join(str(err).split())
        if "Flex delegate" in text or "Select TensorFlow op" in text:
            reason = (
                "LiteRT's Python interpreter here has no Flex delegate, so a model with Flex ops "
                "cannot run; it needs the select-TF-ops runtime (Android: "
                "org.tensorflow:tensorflow-lite-select-tf-ops)"
            )
        else:
            reason = f"LiteRT could not run the model: {text[:300]}"
        warnings.append(f"outputs not checked: {reason}")
    if ran:
        checks = judge(compare_outputs(reference, got), quantize)
    claims = None
    if profile is not None:
        claims = claim_report(model, profile=prof)
    atomic_write(out, content)
    counts: dict[str, int] = {}
    sg = model.main
    for i in range(sg.num_ops):
        name = sg.op_name(i)
        counts[name] = counts.get(name, 0) + 1
    return ConversionResult(
        source=str(source),
        kind=kind,
        output=str(out),
        quantize=quantize,
        size_bytes=len(content),
        num_ops=sum(s.num_ops for s in model.subgraphs),
        op_counts=counts,
        inputs=tuple(specs),
        outputs=tuple(src.outputs),
        calibration=calibration,
        select_tf_ops=tuple(flex),
        ran_in_litert=ran,
        not_run_reason=reason,
        checks=tuple(checks),
        claims=claims,
        warnings=tuple(warnings),
        seconds=time.perf_counter() - t0,
    )


def _references(
    src: Any, samples: Sequence[Sample], progress: Callable[[int, int, str], None] | None
) -> list[dict[str, Any]]:
    out = []
    for k, s in enumerate(samples):
        if progress:
            progress(k, len(samples), "reference outputs")
        out.append(src.reference(s))
    if progress:
        progress(len(samples), len(samples), "reference outputs")
    return out
