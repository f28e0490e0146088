"""Checks of a converted model: it parses, runs in LiteRT, and matches its source.

Figures per output, over every check sample (``a`` the source model's output, ``b`` the converted
model's, as float64; int8 outputs dequantized with their own scale and zero point):

* ``max_abs = max |a - b|``;
* ``max_rel = max_abs / max |a|``, a scale-free figure that does not blow up at zeros (the one
  ``edgepart run --verify`` prints);
* ``snr_db = 10 log10(sum a^2 / sum (a - b)^2)``, the signal-to-quantization-noise ratio
  (``None`` when the outputs are identical);
* ``top1``: the share of rows (every sample, every position but the last axis) whose arg-max
  over the last axis agrees, for outputs whose last axis has at least 2 entries.

Float conversions (``none``, ``fp16``, ``dynamic``) are judged on ``max_rel``, full-integer
``int8`` on ``snr_db``, against :data:`LIMITS`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ai_edge_litert.interpreter import Interpreter

from edgepart.convert.quiet import quiet_fds
from edgepart.ir.graph import Model

__all__ = [
    "LIMITS",
    "OutputCheck",
    "compare_outputs",
    "flex_ops",
    "judge",
    "run_litert",
]

LIMITS: dict[str, dict[str, float]] = {
    "none": {"max_rel": 1e-3},
    "fp16": {"max_rel": 5e-2},
    "dynamic": {"max_rel": 0.25},
    "int8": {"min_snr_db": 10.0},
}
"""Per quantization mode, the figures a correct conversion stays within (module docstring).

They are set to catch a broken conversion (a lost op, a transposed layout, saturated int8 ranges:
relative errors near 1, SNR near 0 dB), not to grade a good one: how far a correct fp16, dynamic
or int8 model drifts depends on the model's depth and conditioning (on the test models, deep
random-weight MobileNetV2 drifts most: 1.8% max rel for fp16, 10% for dynamic, 11.4 dB for
int8; shallow CNNs and MLPs stay near 1e-2 and 35-40 dB). Top-1 agreement is reported for int8,
not judged: it depends on how decisive the model's outputs are as much as on the conversion."""


@dataclass(frozen=True)
class OutputCheck:
    """How one output of the converted model compares with the source model's."""

    name: str
    samples: int
    max_abs: float
    max_rel: float
    snr_db: float | None
    top1: float | None
    failures: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "samples": self.samples,
            "max_abs": self.max_abs,
            "max_rel": self.max_rel,
            "snr_db": self.snr_db,
            "top1": self.top1,
            "failures": list(self.failures),
        }


def flex_ops(model: Model) -> list[str]:
    """Names of the Flex (``SELECT_TF_OPS``) ops the model uses, sorted, without repeats."""
    names = {
        c.custom_code
        for c in model.opcodes
        if c.is_custom and c.custom_code is not None and c.custom_code.startswith("Flex")
    }
    return sorted(names)


def run_litert(
    content: bytes, samples: Sequence[Mapping[str, np.ndarray]], num_threads: int = 1
) -> list[dict[str, np.ndarray]]:
    """Run ``content`` with LiteRT's interpreter through its signature runner on ``samples``.

    Float samples are quantized for int8/uint8 inputs, and int8/uint8 outputs dequantized,
    with each tensor's own parameters, so results compare with the source model's directly.

    Raises
    ------
    RuntimeError, ValueError
        LiteRT cannot prepare or run the model (e.g. Flex ops without the Flex delegate).
    """
    with quiet_fds():  # "Created TensorFlow Lite XNNPACK delegate for CPU." on first invoke
        return _run(Interpreter(model_content=content, num_threads=num_threads), samples)


def _run(it: Any, samples: Sequence[Mapping[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    sigs = it.get_signature_list()
    runner = it.get_signature_runner(next(iter(sigs)) if len(sigs) == 1 else None)
    in_details = runner.get_input_details()
    out_details = runner.get_output_details()
    results = []
    for s in samples:
        feed = {name: _to_input(s[name], d) for name, d in in_details.items()}
        out = runner(**feed)
        results.append({k: _from_output(v, out_details[k]) for k, v in out.items()})
    return results


def _to_input(x: np.ndarray, detail: Mapping[str, Any]) -> np.ndarray:
    dt = np.dtype(detail["dtype"])
    if dt.kind in "iu" and np.asarray(x).dtype.kind == "f":
        scale, zp = detail["quantization"]
        if scale:
            info = np.iinfo(dt)
            q = np.round(np.asarray(x, np.float64) / scale + zp)
            out: np.ndarray = np.clip(q, info.min, info.max).astype(dt)
            return out
    same: np.ndarray = np.asarray(x).astype(dt, copy=False)
    return same


def _from_output(y: np.ndarray, detail: Mapping[str, Any]) -> np.ndarray:
    dt = np.dtype(detail["dtype"])
    scale, zp = detail.get("quantization", (0.0, 0))
    if dt.kind in "iu" and scale:
        real: np.ndarray = (np.asarray(y, np.float64) - zp) * scale
        return real
    return np.asarray(y)


def compare_outputs(
    reference: Sequence[Mapping[str, np.ndarray]], got: Sequence[Mapping[str, np.ndarray]]
) -> list[OutputCheck]:
    """Per output name, the figures of the module docstring over all samples."""
    names = sorted(reference[0]) if reference else []
    out = []
    for name in names:
        a = np.concatenate([np.asarray(r[name], np.float64).ravel() for r in reference])
        missing = [k for k, g in enumerate(got) if name not in g]
        if missing:
            raise KeyError(f"the converted model has no output {name!r}; it has {sorted(got[0])}")
        b = np.concatenate([np.asarray(g[name], np.float64).ravel() for g in got])
        if a.shape != b.shape:
            raise ValueError(
                f"output {name!r}: {a.size} values from the source model, {b.size} converted"
            )
        err = a - b
        max_abs = float(np.abs(err).max()) if a.size else 0.0
        scale = float(np.abs(a).max()) if a.size else 0.0
        noise = float(np.sum(err * err))
        signal = float(np.sum(a * a))
        snr = None if noise == 0 else (math.inf if signal == 0 else 10 * math.log10(signal / noise))
        if snr is not None and not math.isfinite(snr):
            snr = None
        top1 = None
        shape = np.asarray(reference[0][name]).shape
        if len(shape) >= 1 and shape[-1] >= 2:
            ra = np.concatenate(
                [np.asarray(r[name]).reshape(-1, shape[-1]).argmax(-1) for r in reference]
            )
            ga = np.concatenate(
                [np.asarray(g[name]).reshape(-1, shape[-1]).argmax(-1) for g in got]
            )
            top1 = float((ra == ga).mean())
        out.append(
            OutputCheck(
                name=name,
                samples=len(reference),
                max_abs=max_abs,
                max_rel=max_abs / scale if scale else max_abs,
                snr_db=snr,
                top1=top1,
            )
        )
    return out


def judge(checks: Sequence[OutputCheck], mode: str) -> list[OutputCheck]:
    """``checks`` with ``failures`` filled in against :data:`LIMITS` for ``mode``."""
    lim = LIMITS[mode]
    out = []
    for c in checks:
        bad = []
        if "max_rel" in lim and c.max_rel > lim["max_rel"]:
            bad.append(f"max rel diff {c.max_rel:.3g} > {lim['max_rel']:g}")
        if "min_snr_db" in lim and c.snr_db is not None and c.snr_db < lim["min_snr_db"]:
            bad.append(f"SNR {c.snr_db:.1f} dB < {lim['min_snr_db']:g} dB")
        if "min_top1" in lim and c.top1 is not None and c.top1 < lim["min_top1"]:
            bad.append(f"top-1 agreement {c.top1:.1%} < {lim['min_top1']:.0%}")
        out.append(
            OutputCheck(c.name, c.samples, c.max_abs, c.max_rel, c.snr_db, c.top1, tuple(bad))
        )
    return out
