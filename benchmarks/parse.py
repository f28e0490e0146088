"""How fast edgepart reads .tflite files, against the two Python baselines, in one run.

Baselines:
  (a) a full traversal with the ``tflite`` PyPI package (flatc-generated accessors): op code,
      inputs and outputs of every op; shape, dtype and quantization (scale, zero point) of
      every tensor. The file is read into memory first, as that package requires bytes.
  (b) TensorFlow's ``tensorflow.lite.tools.flatbuffer_utils.read_model`` (flatc object API).

edgepart: ``edgepart.tflite.reader.read_model`` (mmap, verify, build the columnar IR with op
codes, inputs, outputs, shapes, dtypes and quantization decoded). The reader verifies and reads
the Buffer tables (which sit next to the weights) on first use, not at parse time; the
``+buffers`` column times a parse followed by that first use, for comparison.

Timing: one warm-up call per tool, then ``repeat`` rounds with the garbage collector paused (as
:mod:`timeit` does). Each round calls every tool twice in a row, in turn: the first call is
timed as "cold" (another tool just ran and took the caches), the second as "warm". Rounds
interleave the tools, so a slow spell of this shared machine hits all of them alike. Each call
is timed with ``time.perf_counter``, freeing its result included. Ratios are baseline warm
median divided by edgepart warm median; edgepart's cold median is printed too.
Resident memory growth is read from /proc/self/status around a read of the largest model,
holding the result.

    python benchmarks/parse.py [--repeat N] [--json out.json] [--skip-large]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import build_corpus

from edgepart.tflite.reader import read_model


def traverse_tflite_package(path: Path) -> int:
    import tflite

    buf = path.read_bytes()
    m = tflite.Model.GetRootAsModel(buf, 0)
    seen = 0
    for s in range(m.SubgraphsLength()):
        sg = m.Subgraphs(s)
        for i in range(sg.OperatorsLength()):
            op = sg.Operators(i)
            oc = m.OperatorCodes(op.OpcodeIndex())
            max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
            op.InputsAsNumpy()
            op.OutputsAsNumpy()
            seen += 1
        for i in range(sg.TensorsLength()):
            t = sg.Tensors(i)
            t.ShapeAsNumpy()
            t.Type()
            q = t.Quantization()
            if q is not None:
                q.ScaleAsNumpy()
                q.ZeroPointAsNumpy()
    return seen


def read_flatbuffer_utils(path: Path) -> object:
    from tensorflow.lite.tools import flatbuffer_utils

    return flatbuffer_utils.read_model(str(path))


def read_edgepart(path: Path) -> object:
    return read_model(path)


def read_edgepart_buffers(path: Path) -> object:
    model = read_model(path)
    model.buffers.length  # noqa: B018 - the first use verifies and reads the Buffer tables
    return model


def time_rounds(
    fns: dict[str, Callable[[Path], object]], path: Path, rounds: int
) -> dict[str, tuple[float, float]]:
    """Per tool, the median seconds of its warm and of its cold calls over ``rounds`` rounds.

    A round calls each tool twice in a row: the first call (cold: the previous tool just ran)
    and the second (warm) are timed separately. Rounds interleave the tools, so a slow spell
    of the machine hits them all alike.
    """
    for fn in fns.values():
        fn(path)
    cold: dict[str, list[float]] = {name: [] for name in fns}
    warm: dict[str, list[float]] = {name: [] for name in fns}
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            for name, fn in fns.items():
                for times in (cold[name], warm[name]):
                    t0 = time.perf_counter()
                    fn(path)
                    times.append(time.perf_counter() - t0)
    finally:
        gc.enable()
        gc.collect()
    return {name: (statistics.median(warm[name]), statistics.median(cold[name])) for name in fns}


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", help="write results here")
    ap.add_argument("--skip-large", action="store_true", help="skip the generated big models")
    args = ap.parse_args()

    names = build_corpus.default_names()
    if not args.skip_large:
        names += ["big_graph_4k", "big_weights_400mb"]
    out = build_corpus.default_out_dir()
    paths = {n: build_corpus.ensure(n, out) for n in names}

    rows = []
    header = (
        f"{'model':<22}{'ops':>6}{'MB':>8}{'edgepart ms':>13}{'cold':>8}{'+buffers':>10}"
        f"{'tflite ms':>11}"
        f"{'ratio':>8}{'read_model ms':>15}{'ratio':>8}"
    )
    print(header)
    print("-" * len(header))
    for name, path in paths.items():
        model = read_model(path)
        ops = sum(sg.num_ops for sg in model.subgraphs)
        del model
        big = path.stat().st_size > 100e6
        med = time_rounds(
            {
                "edgepart": read_edgepart,
                "edgepart_buffers": read_edgepart_buffers,
                "tflite_pkg": traverse_tflite_package,
                "flatbuffer_utils": read_flatbuffer_utils,
            },
            path,
            max(3, args.repeat // 4) if big else args.repeat,
        )
        (ep, ep_cold), (ep_buf, _) = med["edgepart"], med["edgepart_buffers"]
        tf_pkg, fbu = med["tflite_pkg"][0], med["flatbuffer_utils"][0]
        row = {
            "model": name,
            "ops": ops,
            "bytes": path.stat().st_size,
            "edgepart_ms": ep * 1e3,
            "edgepart_cold_ms": ep_cold * 1e3,
            "edgepart_with_buffers_ms": ep_buf * 1e3,
            "tflite_pkg_cold_ms": med["tflite_pkg"][1] * 1e3,
            "flatbuffer_utils_cold_ms": med["flatbuffer_utils"][1] * 1e3,
            "tflite_pkg_ms": tf_pkg * 1e3,
            "flatbuffer_utils_ms": fbu * 1e3,
            "ratio_tflite_pkg": tf_pkg / ep,
            "ratio_flatbuffer_utils": fbu / ep,
        }
        rows.append(row)
        print(
            f"{name:<22}{ops:>6}{path.stat().st_size / 1e6:>8.1f}{ep * 1e3:>13.3f}"
            f"{ep_cold * 1e3:>8.3f}{ep_buf * 1e3:>10.3f}{tf_pkg * 1e3:>11.2f}{tf_pkg / ep:>7.1f}x"
            f"{fbu * 1e3:>15.1f}{fbu / ep:>7.1f}x"
        )

    largest = max(paths.values(), key=lambda p: p.stat().st_size)
    gc.collect()
    before = rss_bytes()
    t0 = time.perf_counter()
    held = read_model(largest)
    elapsed = time.perf_counter() - t0
    growth = rss_bytes() - before
    held.buffers.length  # noqa: B018 - the first use of the buffer tables
    growth_buffers = rss_bytes() - before
    size = largest.stat().st_size
    print(
        f"\n{largest.name}: {size / 1e6:.0f} MB file parsed cold-in-process in "
        f"{elapsed * 1e3:.2f} ms; resident memory grew {growth / 1e6:.2f} MB "
        f"({100 * growth / size:.3f}% of the file), {growth_buffers / 1e6:.2f} MB "
        f"({100 * growth_buffers / size:.3f}%) after the buffer tables' first use"
    )
    del held

    many = [r for r in rows if r["ops"] > 50]
    if many:
        print(
            f"\nmodels with > 50 ops: min ratio vs tflite package "
            f"{min(r['ratio_tflite_pkg'] for r in many):.1f}x (target 10x), "
            f"vs flatbuffer_utils {min(r['ratio_flatbuffer_utils'] for r in many):.1f}x "
            "(target 30x)"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "rows": rows,
                    "rss_growth_bytes": growth,
                    "rss_growth_with_buffers_bytes": growth_buffers,
                    "largest_bytes": size,
                    "largest_parse_ms": elapsed * 1e3,
                },
                indent=2,
                sort_keys=True,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
