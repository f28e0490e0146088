"""Helpers for the ``edgepart bench``/``profile --adb`` tests: a model, stand-in binaries, the CLI.

The model is built with edgepart's own builder and writer (no TensorFlow) and run by the real
LiteRT inside the stand-in ``benchmark_model``: CONV_2D -> DEPTHWISE_CONV_2D -> MAX_POOL_2D ->
CUMSUM -> RESHAPE -> FULLY_CONNECTED -> SOFTMAX. XNNPACK takes every op but CUMSUM, so an
XNNPACK run has two delegate partitions, ops {0, 1, 2} and {4, 5, 6}, and op 3 on the CPU.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgepart.cli import main
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.tflite.writer import write_model

FAKE = Path(__file__).with_name("fake_benchmark_model.py").resolve()
XNNPACK_GROUPS = [[0, 1, 2], [4, 5, 6]]
NUM_OPS = 7
RUNS = ("--runs", "5", "--warmup", "1")
"""Short runs: five timed after one warm-up."""


def build_model(path: Path) -> Path:
    """Write the test model (see the module docstring) to ``path``."""
    rng = np.random.default_rng(0)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 16, 16, 3))
    w = g.constant("w", (rng.standard_normal((8, 3, 3, 3)) * 0.2).astype(np.float32))
    b = g.constant("b", np.zeros(8, np.float32))
    c = g.tensor("conv", DType.FLOAT32, (1, 16, 16, 8))
    same = {"padding": "SAME", "stride_h": 1, "stride_w": 1}
    g.op("CONV_2D", [x, w, b], [c], options={**same, "fused_activation_function": "RELU"})
    dw = g.constant("dw", (rng.standard_normal((1, 3, 3, 8)) * 0.2).astype(np.float32))
    db = g.constant("db", np.zeros(8, np.float32))
    d = g.tensor("dwconv", DType.FLOAT32, (1, 16, 16, 8))
    g.op("DEPTHWISE_CONV_2D", [c, dw, db], [d], options={**same, "depth_multiplier": 1})
    p = g.tensor("pool", DType.FLOAT32, (1, 8, 8, 8))
    pool = {"padding": "VALID", "stride_h": 2, "stride_w": 2}
    g.op("MAX_POOL_2D", [d], [p], options={**pool, "filter_height": 2, "filter_width": 2})
    r = g.tensor("cumsum", DType.FLOAT32, (1, 8, 8, 8))
    g.op("CUMSUM", [p, g.constant("axis", np.array(3, np.int32))], [r])
    f = g.tensor("flat", DType.FLOAT32, (1, 512))
    g.op("RESHAPE", [r, g.constant("shape", np.array([1, 512], np.int32))], [f])
    fw = g.constant("fw", (rng.standard_normal((10, 512)) * 0.05).astype(np.float32))
    fc = g.tensor("fc", DType.FLOAT32, (1, 10))
    g.op("FULLY_CONNECTED", [f, fw, g.constant("fb", np.zeros(10, np.float32))], [fc])
    y = g.tensor("probs", DType.FLOAT32, (1, 10))
    g.op("SOFTMAX", [fc], [y], options={"beta": 1.0})
    g.output(y)
    path.write_bytes(write_model(mb.build()))
    return path


def wrapper(path: Path, body: str) -> Path:
    """An executable shell script for the device; ``$PY`` and ``$FAKE`` are set in it."""
    path.write_text(f"#!/bin/sh\nPY='{sys.executable}'\nFAKE='{FAKE}'\n{body}\n")
    path.chmod(0o755)
    return path


def old_binary(path: Path) -> Path:
    """A stand-in for a benchmark_model from before 2024: no proto per-op output, no runtime
    info, and the older text layout (no INFO: prefixes, no percentiles, a [start] column)."""
    return wrapper(
        path,
        'if [ "$1" = --help ]; then\n'
        '  "$PY" "$FAKE" --help 2>&1 | grep -v -e op_profiling_output -e model_runtime_info\n'
        "  exit 1\n"
        "fi\n"
        'exec "$PY" "$FAKE" "$@" --fake_output_style=legacy',
    )


def alien_binary(path: Path) -> Path:
    """A binary whose --help is benchmark_model's but whose runs print a format nobody knows."""
    return wrapper(
        path,
        'if [ "$1" = --help ]; then exec "$PY" "$FAKE" --help; fi\n'
        'echo \'benchmark v9: {"latency": {"p50_ms": 1.25}}\'',
    )


def adb_args(command: str, target: Path, *extra: str, binary: Path = FAKE) -> list[str]:
    """The arguments of ``edgepart COMMAND TARGET --adb --benchmark-binary BINARY EXTRA...``."""
    return [command, str(target), "--adb", "--benchmark-binary", str(binary), *extra]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``edgepart ARGS`` in-process; returns (status, stdout, stderr)."""
    capsys.readouterr()
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    status, out, err = cli(capsys, *args, "--json")
    return status, json.loads(out) if out.strip() else {}, err


def one_error_line(err: str) -> str:
    """The single ``edgepart: error: ...`` line of a failed command's stderr."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("edgepart: error: "), err
    return lines[0]


def workdirs(sandbox: Path) -> list[str]:
    """What edgepart left in the emulated device's /data/local/tmp."""
    tmp = sandbox / "data/local/tmp"
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("edgepart-"))


def runs_of(commands: list[str], needle: str) -> int:
    """How many benchmark runs (not --help) the device saw whose command line has ``needle``."""
    return sum(1 for c in commands if needle in c and "--graph=" in c)
