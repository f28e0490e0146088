"""Measure LiteRT's per-op, per-partition and per-subgraph bookkeeping, allocated and resident.

:mod:`edgepart.memory.runtime` models what an interpreter holds: tensors, weights and copies
of them, plus *bookkeeping*, the structures LiteRT and XNNPACK keep per op (TFLite nodes,
XNNPACK operators), per XNNPACK partition and per subgraph. This script measures those rows
the way their tables say:

* a chain of 101 ops of one kind against a chain of 1 (tiny tensors, so the per-op structures
  dominate); the difference, minus what :func:`~edgepart.memory.runtime.runtime_memory`
  models for the 100 extra ops' tensors and weights, divided by 100;
* per XNNPACK partition: a chain of 101 (ADD, an op XNNPACK leaves to TFLite) pairs, which
  XNNPACK cuts into 101 partitions, minus the two ops' rows;
* per subgraph: a model with 11 subgraphs against one with 1, divided by 10.

Each model is measured in ``--starts`` child processes (default 4) whose heaps start at
different offsets within a page, each holding ``--copies`` interpreters of it (default 8, all
invoked once); glibc's free pages are returned to the system (``malloc_trim``) before the
measurement starts, so pages an earlier interpreter touched are not counted as free resident
memory. Two figures per row:

``heap``
    the growth of glibc's allocated bytes (``mallinfo2``): what LiteRT asks for;
``resident``
    the growth of anonymous resident memory (``RssAnon``): what the process touches. The two
    differ: a subgraph reserves about 37 KB it never writes (only about a third becomes
    resident), and small allocations cost more than their size in pages.

Run::

    python tools/measure_bookkeeping.py              # every row
    python tools/measure_bookkeeping.py --rows add subgraph
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edgepart.ir.builder import ModelBuilder, SubgraphBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model
from edgepart.ir.values import Quantization
from edgepart.memory.runtime import runtime_memory
from edgepart.tflite.writer import save_model

PROBE = r"""
import ctypes, gc, json, sys
import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

class MI2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MI2

def heap():
    m = libc.mallinfo2()
    return m.uordblks + m.hblkhd

def anon():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024

blob = open(sys.argv[1], "rb").read()
shapes = json.loads(sys.argv[2])
rt = OpResolverType[sys.argv[3]]
copies = int(sys.argv[4])
warm = Interpreter(model_content=blob, experimental_op_resolver_type=rt)  # library set-up
del warm
gc.collect()
libc.malloc_trim(0)  # free pages go back: what an interpreter touches shows as new
h0, a0 = heap(), anon()
kept = []
for _ in range(copies):
    it = Interpreter(model_content=blob, experimental_op_resolver_type=rt)
    for d in it.get_input_details():
        if d["name"] in shapes:
            it.resize_tensor_input(d["index"], shapes[d["name"]])
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
    it.invoke()
    kept.append(it)
print(json.dumps({"heap": heap() - h0, "resident": anon() - a0}))
"""
"""A child process's script: argv = model path, ``{input name: shape}`` JSON, op resolver
name, copies. Prints the heap and anonymous resident growth of ``copies`` interpreters."""

RESOLVERS = {"xnnpack": "AUTO", "builtin": "BUILTIN_WITHOUT_DEFAULT_DELEGATES"}


def measure(
    path: Path,
    *,
    executor: str = "xnnpack",
    copies: int = 8,
    starts: int = 4,
    shapes: dict[str, list[int]] | None = None,
) -> dict[str, float]:
    """Heap and resident growth of one interpreter of ``path``: the mean over ``copies``
    interpreters in each of ``starts`` child processes whose heaps start at different offsets
    within a page (their environments differ in size by a fraction of a page).

    Which pages a small allocation touches depends on where the heap starts: a subgraph's
    structures touch three 4 KiB pages or four, so one process measures 12.3 KB or 15.4 KB per
    subgraph; the mean over starts is what LiteRT touches on average.
    """
    args = [str(path), json.dumps(shapes or {}), RESOLVERS[executor], str(copies)]
    total = {"heap": 0.0, "resident": 0.0}
    for k in range(starts):
        env = {**os.environ, "EDGEPART_HEAP_OFFSET": "x" * (k * 4096 // starts)}
        out = subprocess.run(
            [sys.executable, "-c", PROBE, *args],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
        if out.returncode:
            raise RuntimeError(f"{path}: {out.stderr.strip().splitlines()[-1]}")
        got = json.loads(out.stdout.strip().splitlines()[-1])
        for key in total:
            total[key] += got[key] / (copies * starts)
    return total


# ---------------------------------------------------------------- chain models
C = 32
"""Channels of the chains' activations: a multiple of most XNNPACK kernels' output tiles (16 or
32 on x86 and Arm), so the rows hold little padding; where a host's tiles are wider (AMX's
8-bit tiles of 64), :func:`~edgepart.memory.runtime.runtime_memory` models the padding and
:func:`_growth` takes it out with the rest of the modelled data."""
_Q8 = Quantization(np.array([0.05], np.float32), np.array([0], np.int64))


def _act(g: SubgraphBuilder, name: str, dt: DType, shape: tuple[int, ...]) -> int:
    return g.tensor(name, dt, shape, quantization=_Q8 if dt == DType.INT8 else None)


def _weights(
    g: SubgraphBuilder, name: str, dt: DType, shape: tuple[int, ...], seed: int, axis: int = 0
) -> int:
    rng = np.random.default_rng(seed)
    if dt == DType.INT8:  # per-channel along the output channels
        n = shape[axis]
        q = Quantization(np.full(n, 0.01, np.float32), np.zeros(n, np.int64), axis)
        return g.constant(name, rng.integers(-5, 6, shape).astype(np.int8), quantization=q)
    return g.constant(name, rng.standard_normal(shape).astype(np.float32) * 0.1)


def _bias(g: SubgraphBuilder, name: str, dt: DType, n: int) -> int:
    if dt == DType.INT8:
        q = Quantization(np.full(n, 0.0005, np.float32), np.zeros(n, np.int64))
        return g.constant(name, np.zeros(n, np.int32), quantization=q)
    return g.constant(name, np.zeros(n, np.float32))


def _add_layer(
    g: SubgraphBuilder, kind: str, x: int, i: int, dt: DType, c: int, ch: int = C
) -> int:
    """Add one ``kind`` op (the ``i``-th) reading tensor ``x`` (and ``c``, the ADDs' constant);
    returns its output. Activations are [1, 4, 4, ch] (FULLY_CONNECTED: [1, ch]);
    ``CONV_2D_1X1`` is a pointwise ``CONV_2D``."""
    shape = (1, ch) if kind == "FULLY_CONNECTED" else (1, 4, 4, ch)
    y = _act(g, f"y{i}", dt, shape)
    if kind == "ADD":
        g.op("ADD", [x, c], [y])
    elif kind in ("CONV_2D", "CONV_2D_1X1"):
        k = 1 if kind == "CONV_2D_1X1" else 3
        w = _weights(g, f"w{i}", dt, (ch, k, k, ch), i)
        opts = {"padding": "SAME", "stride_w": 1, "stride_h": 1}
        g.op("CONV_2D", [x, w, _bias(g, f"b{i}", dt, ch)], [y], options=opts)
    elif kind == "DEPTHWISE_CONV_2D":
        w = _weights(g, f"w{i}", dt, (1, 3, 3, ch), i, axis=3)
        g.op(
            "DEPTHWISE_CONV_2D",
            [x, w, _bias(g, f"b{i}", dt, ch)],
            [y],
            options={"padding": "SAME", "stride_w": 1, "stride_h": 1, "depth_multiplier": 1},
        )
    elif kind == "FULLY_CONNECTED":
        w = _weights(g, f"w{i}", dt, (ch, ch), i)
        g.op("FULLY_CONNECTED", [x, w, _bias(g, f"b{i}", dt, ch)], [y])
    elif kind == "TILE":  # XNNPACK leaves TILE to TFLite: it cuts a partition
        mult = g.constant(f"m{i}", np.ones(4, np.int32))
        g.op("TILE", [x, mult], [y])
    else:
        raise ValueError(kind)
    return y


def chain(
    kinds: Sequence[str], repeats: int, dt: DType = DType.FLOAT32, channels: int = C
) -> Model:
    """``repeats`` copies of the op sequence ``kinds``, one after another, on activations of
    ``channels`` channels."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    shape = (1, channels) if kinds[0] == "FULLY_CONNECTED" else (1, 4, 4, channels)
    x = g.input("x", dt, shape, quantization=_Q8 if dt == DType.INT8 else None)
    c = (
        g.constant("c", np.ones(shape, np.int8), quantization=_Q8)
        if dt == DType.INT8
        else g.constant("c", np.ones(shape, np.float32))
    )
    cur, i = x, 0
    for _ in range(repeats):
        for kind in kinds:
            cur = _add_layer(g, kind, cur, i, dt, c, channels)
            i += 1
    g.output(cur)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", cur)])
    return mb.build()


def subgraphs(n: int) -> Model:
    """``n`` subgraphs of one ADD each (LiteRT builds every subgraph of a file)."""
    mb = ModelBuilder()
    first = (0, 0)
    for s in range(n):
        g = mb.subgraph("main" if s == 0 else f"body{s}")
        x = g.input("x", DType.FLOAT32, (1, 4))
        c = g.constant("c", np.ones((1, 4), np.float32))
        y = g.tensor("y", DType.FLOAT32, (1, 4))
        g.op("ADD", [x, c], [y])
        g.output(y)
        if s == 0:
            first = (x, y)
    mb.add_signature("serving_default", 0, [("x", first[0])], [("y", first[1])])
    return mb.build()


# ---------------------------------------------------------------- rows
def _growth(small: Model, big: Model, executor: str, copies: int, tmp: Path) -> dict[str, float]:
    """Measured growth from ``small`` to ``big`` minus what runtime_memory models for it
    beyond bookkeeping (tensors, weights and their copies)."""
    got = {}
    for name, m in (("small", small), ("big", big)):
        save_model(m, tmp / f"{name}.tflite")
        got[name] = measure(tmp / f"{name}.tflite", executor=executor, copies=copies)
    modelled = [runtime_memory(m, executor=executor) for m in (small, big)]
    data = (modelled[1].total - modelled[1].bookkeeping) - (
        modelled[0].total - modelled[0].bookkeeping
    )
    return {k: got["big"][k] - got["small"][k] - data for k in ("heap", "resident")}


def op_row(
    kind: str, executor: str, dt: DType = DType.FLOAT32, copies: int = 8, channels: int = C
) -> dict[str, float]:
    """Bytes per ``kind`` op beyond its tensors and weights, packed weights with their padding
    included (chains of 101 and 1 on ``channels`` channels)."""
    small, big = chain([kind], 1, dt, channels), chain([kind], 101, dt, channels)
    with tempfile.TemporaryDirectory() as d:
        g = _growth(small, big, executor, copies, Path(d))
    return {k: v / 100 for k, v in g.items()}


def partition_row(copies: int = 8) -> dict[str, float]:
    """Bytes per XNNPACK partition beyond its ops' rows: (ADD, TILE) x 101 against x 1,
    minus 100 XNNPACK ADDs and 100 builtin TILEs (their rows measured here too)."""
    add = op_row("ADD", "xnnpack", copies=copies)
    tile = op_row("TILE", "builtin", copies=copies)
    with tempfile.TemporaryDirectory() as d:
        g = _growth(
            chain(["ADD", "TILE"], 1), chain(["ADD", "TILE"], 101), "xnnpack", copies, Path(d)
        )
    return {k: v / 100 - add[k] - tile[k] for k, v in g.items()}


def subgraph_row(executor: str, copies: int = 8) -> dict[str, float]:
    """Bytes per subgraph beyond the first (11 subgraphs against 1)."""
    with tempfile.TemporaryDirectory() as d:
        g = _growth(subgraphs(1), subgraphs(11), executor, copies, Path(d))
    return {k: v / 10 for k, v in g.items()}


ROWS: dict[str, Callable[[int], dict[str, float]]] = {
    "add": lambda n: op_row("ADD", "xnnpack", copies=n),
    "conv": lambda n: op_row("CONV_2D", "xnnpack", copies=n),
    "dw": lambda n: op_row("DEPTHWISE_CONV_2D", "xnnpack", copies=n),
    "fc": lambda n: op_row("FULLY_CONNECTED", "xnnpack", copies=n),
    "add_8bit": lambda n: op_row("ADD", "xnnpack", DType.INT8, copies=n),
    "conv_8bit": lambda n: op_row("CONV_2D", "xnnpack", DType.INT8, copies=n),
    "dw_8bit": lambda n: op_row("DEPTHWISE_CONV_2D", "xnnpack", DType.INT8, copies=n),
    "fc_8bit": lambda n: op_row("FULLY_CONNECTED", "xnnpack", DType.INT8, copies=n),
    "builtin_add": lambda n: op_row("ADD", "builtin", copies=n),
    "builtin_conv": lambda n: op_row("CONV_2D", "builtin", copies=n),
    "builtin_dw": lambda n: op_row("DEPTHWISE_CONV_2D", "builtin", copies=n),
    "builtin_add_8bit": lambda n: op_row("ADD", "builtin", DType.INT8, copies=n),
    "builtin_conv_8bit": lambda n: op_row("CONV_2D", "builtin", DType.INT8, copies=n),
    "builtin_dw_8bit": lambda n: op_row("DEPTHWISE_CONV_2D", "builtin", DType.INT8, copies=n),
    "partition": partition_row,
    "subgraph": lambda n: subgraph_row("xnnpack", copies=n),
}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", nargs="*", choices=sorted(ROWS), help="rows to measure (all)")
    ap.add_argument("--copies", type=int, default=8, help="interpreters per measurement (8)")
    args = ap.parse_args(argv)
    print(f"{'row':20s} {'heap B':>10s} {'resident B':>11s}")
    for name in args.rows or ROWS:
        r = ROWS[name](args.copies)
        print(f"{name:20s} {r['heap']:10.0f} {r['resident']:11.0f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
