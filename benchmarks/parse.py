"""How fast edgepart reads .tflite files, against the two Python baselines, in one run.

Baselines:
  (a) a full traversal with the ``tflite`` PyPI package (flatc-generated accessors): op code,
      inputs and outputs of every op; shape, dtype and quantization (scale, zero point) of
      every tensor. The file is read into memory first, as that package requires bytes.
  (b) TensorFlow's ``tensorflow.lite.tools.flatbuffer_utils.read_model`` (flatc object API).

edgepart: ``edgepart.tflite.reader.read_model`` (mmap, verify, build the columnar IR with op
codes, inputs, outputs, shapes, dtypes and quantization decoded).

Timing loop, per model and tool: one warm-up call, then ``repeat`` calls timed with
``time.perf_counter`` with the garbage collector paused (as :mod:`timeit` does); the median is
reported (the minimum too). Ratios are baseline median
divided by edgepart median. Resident memory growth is read from /proc/self/status around a
read of the largest model, holding the result.

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


def timeit(fn: Callable[[Path], object], path: Path, repeat: int) -> tuple[float, float]:
    """Median and minimum of ``repeat`` timed calls after one warm-up, with the garbage
    collector paused during the loop (as :mod:`timeit` does), for every tool alike."""
    fn(path)
    times = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn(path)
            times.append(time.perf_counter() - t0)
    finally:
        gc.enable()
        gc.collect()
    return statistics.median(times), min(times)


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
        f"{'model':<22}{'ops':>6}{'MB':>8}{'edgepart ms':>13}{'tflite ms':>11}"
        f"{'ratio':>8}{'read_model ms':>15}{'ratio':>8}"
    )
    print(header)
    print("-" * len(header))
    for name, path in paths.items():
        model = read_model(path)
        ops = sum(sg.num_ops for sg in model.subgraphs)
        del model
        big = path.stat().st_size > 100e6
        rep = max(3, args.repeat // 4) if big else args.repeat
        ep, ep_min = timeit(read_edgepart, path, rep)
        tf_pkg, _ = timeit(traverse_tflite_package, path, max(3, rep // 2))
        fbu, _ = timeit(read_flatbuffer_utils, path, 3 if big else max(3, rep // 4))
        row = {
            "model": name,
            "ops": ops,
            "bytes": path.stat().st_size,
            "edgepart_ms": ep * 1e3,
            "edgepart_min_ms": ep_min * 1e3,
            "tflite_pkg_ms": tf_pkg * 1e3,
            "flatbuffer_utils_ms": fbu * 1e3,
            "ratio_tflite_pkg": tf_pkg / ep,
            "ratio_flatbuffer_utils": fbu / ep,
        }
        rows.append(row)
        print(
            f"{name:<22}{ops:>6}{path.stat().st_size / 1e6:>8.1f}{ep * 1e3:>13.3f}"
            f"{tf_pkg * 1e3:>11.2f}{tf_pkg / ep:>7.1f}x{fbu * 1e3:>15.1f}{fbu / ep:>7.1f}x"
        )

    largest = max(paths.values(), key=lambda p: p.stat().st_size)
    gc.collect()
    before = rss_bytes()
    t0 = time.perf_counter()
    held = read_model(largest)
    elapsed = time.perf_counter() - t0
    growth = rss_bytes() - before
    size = largest.stat().st_size
    print(
        f"\n{largest.name}: {size / 1e6:.0f} MB file parsed cold-in-process in "
        f"{elapsed * 1e3:.2f} ms; resident memory grew {growth / 1e6:.2f} MB "
        f"({100 * growth / size:.3f}% of the file)"
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
