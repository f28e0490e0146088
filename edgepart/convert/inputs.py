"""Model inputs for conversion: fixed shapes, calibration samples and check samples.

A source model names its inputs and may leave dimensions unknown. :func:`resolve_inputs` fixes
every shape: ``--input-shape`` values first, then an unknown batch dimension becomes 1; any other
unknown dimension is an error that asks for ``--input-shape``. Fixed shapes are what delegates
need (the GPU, NNAPI and Edge TPU delegates refuse dynamic tensors).

Samples are dicts ``{input name: array}``. :func:`load_samples` reads a directory of ``.npy``
files (format in :func:`load_samples`); :func:`random_samples` makes seeded random ones.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgepart.errors import UsageError
from edgepart.fileio import read_npy

__all__ = [
    "InputSpec",
    "Sample",
    "load_samples",
    "parse_input_shapes",
    "random_samples",
    "resolve_inputs",
]

Sample = dict[str, np.ndarray]

_SHAPE = re.compile(r"^\d+(,\d+)*$")


@dataclass(frozen=True)
class InputSpec:
    """One model input with a fixed shape."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # NumPy dtype name


def parse_input_shapes(values: Sequence[str]) -> dict[str | None, tuple[int, ...]]:
    """``--input-shape`` values: ``1,224,224,3`` (the only input) or ``NAME=1,224,224,3``.

    Raises
    ------
    UsageError
        A value is not a comma-separated list of positive integers, or an input is given twice.
    """
    out: dict[str | None, tuple[int, ...]] = {}
    for v in values:
        name: str | None
        name, sep, dims = v.rpartition("=")
        if not sep:
            name = None
        dims = dims.replace(" ", "").replace("x", ",")
        if not _SHAPE.match(dims) or any(int(d) == 0 for d in dims.split(",")):
            raise UsageError(
                f"--input-shape {v!r}: expected DIMS or NAME=DIMS with DIMS like 1,224,224,3 "
                "(positive integers)"
            )
        if name in out:
            raise UsageError(f"--input-shape {v!r}: input {name or '(the only input)'} given twice")
        out[name] = tuple(int(d) for d in dims.split(","))
    return out


def resolve_inputs(
    declared: Sequence[tuple[str, tuple[int | None, ...] | None, str]],
    given: Mapping[str | None, tuple[int, ...]],
    where: str,
) -> list[InputSpec]:
    """Fixed-shape inputs from the source's declared ``(name, shape, dtype)`` and ``given``.

    Raises
    ------
    UsageError
        ``given`` names an input the model lacks, gives a rank or a known dimension that
        differs from the model's, or a dimension other than the batch is unknown.
    """
    names = [d[0] for d in declared]
    if None in given and len(declared) != 1:
        raise UsageError(
            f"{where}: the model has {len(declared)} inputs {names}; give --input-shape "
            "NAME=DIMS for each input whose shape is not fixed"
        )
    for key in given:
        if key is not None and key not in names:
            raise UsageError(
                f"--input-shape {key}=...: {where} has no input {key!r}; inputs {names}"
            )
    out = []
    for name, shape, dtype in declared:
        want = given.get(name, given.get(None) if len(declared) == 1 else None)
        if want is not None:
            if shape is not None and len(shape) != len(want):
                raise UsageError(
                    f"--input-shape {name}: rank {len(want)} {list(want)}, but {where} declares "
                    f"rank {len(shape)} {_fmt(shape)}"
                )
            if shape is not None:
                for k, (a, b) in enumerate(zip(shape, want, strict=True)):
                    if a is not None and a != b:
                        raise UsageError(
                            f"--input-shape {name}: dimension {k} is {b}, but {where} fixes it "
                            f"at {a} ({_fmt(shape)})"
                        )
            out.append(InputSpec(name, tuple(want), dtype))
            continue
        if shape is None:
            raise UsageError(
                f"{where}: input {name!r} has an unknown rank; give --input-shape {name}=DIMS"
            )
        fixed = list(shape)
        if fixed and fixed[0] is None:
            fixed[0] = 1  # unknown batch: one sample per invocation, as edge apps run
        if any(d is None for d in fixed):
            raise UsageError(
                f"{where}: input {name!r} has unknown dimensions {_fmt(shape)}; give "
                f"--input-shape {name}=DIMS (delegates need fixed shapes)"
            )
        out.append(InputSpec(name, tuple(int(d) for d in fixed), dtype))  # type: ignore[arg-type]
    return out


def _fmt(shape: Sequence[int | None]) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def random_samples(specs: Sequence[InputSpec], count: int, seed: int = 0) -> list[Sample]:
    """``count`` seeded samples: floats uniform in [-1, 1], integers in [0, 10), booleans."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        s: Sample = {}
        for spec in specs:
            dt = np.dtype(spec.dtype)
            if dt.kind == "f":
                s[spec.name] = rng.uniform(-1.0, 1.0, spec.shape).astype(dt)
            elif dt.kind == "b":
                s[spec.name] = rng.integers(0, 2, spec.shape).astype(dt)
            else:
                s[spec.name] = rng.integers(0, 10, spec.shape).astype(dt)
        out.append(s)
    return out


def load_samples(directory: str | os.PathLike[str], specs: Sequence[InputSpec]) -> list[Sample]:
    """Samples from a directory of ``.npy`` files, in file-name order.

    A model with one input: every file holds one sample (the input's shape, or its shape
    without the batch dimension) or a stack of samples (one more leading dimension, or a batch
    dimension of any size where the model's is 1). A model with several inputs: files are
    matched to inputs by name prefix (``<input name>*.npy``, names made file-safe with ``_``),
    each input gets the same number of samples, paired in order. Values are cast to the
    input's dtype only when that is lossless for floats (float64 to float32 is allowed).

    Raises
    ------
    UsageError
        The directory is missing or holds no ``.npy`` file, a file cannot be read as ``.npy``
        (pickles are refused), a shape does not fit, or sample counts differ between inputs.
    """
    root = Path(directory)
    if not root.is_dir():
        raise UsageError(f"--calibration-data {root}: not a directory of .npy files")
    files = sorted(p for p in root.iterdir() if p.suffix == ".npy" and p.is_file())
    if not files:
        raise UsageError(f"--calibration-data {root}: no .npy files in the directory")
    if len(specs) == 1:
        groups = {specs[0].name: files}
    else:
        groups = {}
        for spec in sorted(specs, key=lambda s: -len(_safe(s.name))):  # longest prefix wins
            mine = [f for f in files if f.name.startswith(_safe(spec.name))]
            files = [f for f in files if f not in mine]
            groups[spec.name] = sorted(mine)
        for spec in specs:
            if not groups[spec.name]:
                raise UsageError(
                    f"--calibration-data {root}: no file for input {spec.name!r}; with several "
                    f"inputs name files <input>*.npy ({[_safe(s.name) for s in specs]})"
                )
    per_input: dict[str, list[np.ndarray]] = {}
    for spec in specs:
        rows: list[np.ndarray] = []
        for f in groups[spec.name]:
            rows.extend(_split(_load(f), spec, f))
        per_input[spec.name] = rows
    counts = {k: len(v) for k, v in per_input.items()}
    if len(set(counts.values())) != 1:
        raise UsageError(f"--calibration-data {root}: inputs have different sample counts {counts}")
    n = next(iter(counts.values()))
    return [{k: v[i] for k, v in per_input.items()} for i in range(n)]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _load(path: Path) -> np.ndarray:
    a: np.ndarray = read_npy(path, what=".npy calibration array")
    if a.size == 0:
        raise UsageError(f"{path}: holds an empty array (shape {list(a.shape)}); give samples")
    return a


def _split(a: np.ndarray, spec: InputSpec, path: Path) -> list[np.ndarray]:
    shape = spec.shape
    want = np.dtype(spec.dtype)
    if a.dtype != want:
        lossless = np.can_cast(a.dtype, want, "same_kind") and (
            a.dtype.kind == want.kind == "f" or np.can_cast(a.dtype, want, "safe")
        )
        if not lossless:
            raise UsageError(
                f"{path}: dtype {a.dtype}, but input {spec.name!r} is {want}; save the samples "
                f"as {want}"
            )
        a = a.astype(want)
    if a.shape == shape:
        return [a]
    if len(shape) >= 1 and a.shape == shape[1:]:
        return [a[None, ...]]
    if a.ndim == len(shape) + 1 and a.shape[1:] == shape:
        return [a[i] for i in range(a.shape[0])]
    if len(shape) >= 1 and shape[0] == 1 and a.ndim == len(shape) and a.shape[1:] == shape[1:]:
        return [a[i : i + 1] for i in range(a.shape[0])]
    raise UsageError(
        f"{path}: shape {list(a.shape)} fits neither one sample nor a stack of samples of input "
        f"{spec.name!r} {list(shape)}"
    )
