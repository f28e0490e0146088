"""Predictors against held-out column chains: dozens of tiny one-row kernels in a row.

Keyword spotters and wake-word models run dozens of kernels of a few hundred bytes one after
another (streaming layers over one column of a few frames, pointwise convolutions, per-frame
fully connected layers, elementwise ops). This builds such models from the sampler's column
chains (:func:`edgepart.profiling.kernel_gen.build_chain` with ``ChainSpec.column``) at seeds
the calibration does not draw, times them with ai-edge-litert (XNNPACK on one and two
threads, builtin kernels; interleaved rounds, p10 on the configuration's clock, as
``benchmarks/fidelity.py`` times models), and prints per group and predictor the median
signed error and the share within 10%, every predictor on the same timings.

Groups: streaming layers alone (6 per model, int8 and float), long chains of one step kind
(40 pointwise convolutions, fully connected layers, elementwise ops or activations, each of
its own width), and stacks (``ChainSpec.stack``: one streaming layer, pointwise convolution
or fully connected layer repeated 12 or 20 times, configuration and width identical, as the
wake-word models repeat theirs). Stacks are what sampler version 18 adds to calibrations, at
seeds it does not draw: a predictor fitted with them has seen others like them.

Usage::

    python benchmarks/column_stacks.py P1.json [P2.json ...] [--seeds 12] [--rounds 15]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from edgepart.cost.predictor import load_predictor
from edgepart.errors import EdgepartError
from edgepart.profiling.kernel_gen import ChainSpec, build_chain
from edgepart.profiling.model_estimate import estimate_model
from edgepart.profiling.whole import measure_models
from edgepart.tflite.reader import read_model_bytes
from edgepart.tflite.writer import write_model

CONFIGS = (("xnnpack_1t", "xnnpack", 1), ("xnnpack_2t", "xnnpack", 2), ("builtin_1t", "builtin", 1))
# (group, step kind, layers per model, a stack); every group in int8 and float
GROUPS = (("stream x6", "stream", 6, False), ("conv x40", "conv", 40, False),
          ("fc x40", "fc", 40, False), ("binary x40", "binary", 40, False),
          ("unary x40", "unary", 40, False), ("stack stream x12", "stream", 12, True),
          ("stack conv x20", "conv", 20, True), ("stack fc x20", "fc", 20, True))  # fmt: skip
SEED0 = 2_000_000_000  # above what calibration draws most of the time (0 .. 2**31 - 1)


def models(seeds: int) -> dict[str, tuple[str, bytes]]:
    out: dict[str, tuple[str, bytes]] = {}
    for fam in ("q8", "f32"):
        for g, (name, kind, length, stack) in enumerate(GROUPS):
            n = seeds if kind == "stream" else max(seeds // 3, 2)
            for i in range(n):
                spec = ChainSpec(seed=SEED0 + 1000 * g + i, family=fam, length=length,
                                 small=True, column=kind, stack=stack)  # fmt: skip
                out[f"{g}_{fam}_{i}"] = (f"{name} {fam}", write_model(build_chain(spec)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("predictors", nargs="+", help="predictor files (host.predictor.json)")
    ap.add_argument("--seeds", type=int, default=12, help="models per streaming group")
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args()
    try:
        preds = [load_predictor(p) for p in a.predictors]
    except EdgepartError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    built = models(a.seeds)
    print(f"{len(built)} held-out column models; timing {a.rounds} interleaved rounds ...")
    timings = measure_models({k: (c, None) for k, (_, c) in built.items()}, CONFIGS,
                             rounds=a.rounds, seed=0)  # fmt: skip
    meas = {(t.name, t.config): v for t in timings if (v := t.value("p10", "auto")) is not None}
    est = []
    for p in preds:
        e: dict[tuple[str, str], float] = {}
        for name, (_, content) in built.items():
            for x in estimate_model(read_model_bytes(content), p):
                e[(name, x.config)] = x.seconds
        est.append(e)
    print("median signed error (share within 10%) per predictor: " + ", ".join(a.predictors))
    for cfg, _, _ in CONFIGS:
        print(cfg)
        for group in dict.fromkeys(g for g, _ in built.values()):
            names = [n for n, (g, _) in built.items() if g == group and (n, cfg) in meas]
            if not names:
                continue
            cells = []
            for e in est:
                err = np.array([e[(n, cfg)] / meas[(n, cfg)] - 1 for n in names if (n, cfg) in e])
                within = 100 * np.mean(np.abs(err) < 0.1)
                cells.append(f"{100 * np.median(err):+6.1f}% ({within:3.0f}%)")
            t = np.median([meas[(n, cfg)] for n in names]) * 1e6
            print(f"  {group:16} n={len(names):2}  measured {t:7.2f} us   " + "   ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
