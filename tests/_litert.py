"""Shared helpers for tests that run models with the real LiteRT interpreter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

__all__ = ["interpreter", "random_inputs", "run", "run_signature"]


def interpreter(
    content: bytes | None = None, *, path: str | None = None, xnnpack: bool = True, threads: int = 1
) -> Interpreter:
    """An allocated LiteRT interpreter, with XNNPACK on (default delegates) or off."""
    resolver = OpResolverType.AUTO if xnnpack else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    it = Interpreter(
        model_content=content,
        model_path=path,
        num_threads=threads,
        experimental_op_resolver_type=resolver,
    )
    it.allocate_tensors()
    return it


def random_value(dtype: Any, shape: Sequence[int], rng: np.random.Generator) -> np.ndarray:
    dtype = np.dtype(dtype)
    shape = [max(int(d), 1) for d in shape]
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -100), min(info.max, 100)
        return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
    raise TypeError(f"no random inputs for {dtype}")


def random_inputs(it: Interpreter, seed: int = 0) -> list[np.ndarray]:
    """One random input per input detail, in order (seeded)."""
    rng = np.random.default_rng(seed)
    return [random_value(d["dtype"], d["shape"], rng) for d in it.get_input_details()]


def run(it: Interpreter, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Invoke with inputs in input-detail order; outputs in output-detail order (copies)."""
    for d, x in zip(it.get_input_details(), inputs, strict=True):
        if tuple(d["shape"]) != x.shape:
            it.resize_tensor_input(d["index"], x.shape)
            it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs, strict=True):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def run_signature(
    it: Interpreter, feed: Mapping[str, np.ndarray], key: str | None = None
) -> dict[str, np.ndarray]:
    runner = it.get_signature_runner(key)
    return {k: np.array(v) for k, v in runner(**feed).items()}
