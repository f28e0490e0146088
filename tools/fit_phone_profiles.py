#!/usr/bin/env python3
"""Calibrate the Pixel 3 and Pixel 4 latency predictors from TFLite's published benchmarks.

Inputs: the published figures with their sources (``edgepart/data/latency/
tflite_published_pixel.json``, TFLite's benchmark page: six models on both phones;
``efficientnet_lite_pixel4.json``, the EfficientNet-Lite README: ten more on the Pixel 4's CPU
and five on its GPU), the architectures rebuilt with random weights
(``tools/build_phone_models.py``) and the device profiles' specs (``device_profiles/
pixel3.yaml``, ``pixel4.yaml``). Per device and configuration (CPU 4 threads, GPU, NNAPI) the
models' kernels are reduced to roofline work terms and fitted with
:mod:`edgepart.profiling.phone_fit` (CPU first: its predictions cover the ops the GPU and NNAPI
delegates leave to the CPU). Every configuration's leave-one-model-out errors are printed and
stored in the predictor (``cv``: median, 10th/90th percentiles over all its points, which
become the band of every prediction), with the median over the benchmark page's six models
alone (``extra.leave_one_out_benchmark_page``, each still predicted by a fit of all the other
points), the figure issue 13 names. Writes ``device_profiles/<device>.predictor.json``
(deterministic bytes).

It also prints, for comparison, the error of predictions from the profiles' specs alone (the
roofline of :func:`edgepart.profiling.model_estimate.spec_predictor`) on the same points.

Usage::

    python tools/fit_phone_profiles.py [--check]   # --check: fail if a written file changes
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

DATA = ROOT / "edgepart" / "data" / "latency"
SOURCES = ("tflite_published_pixel.json", "efficientnet_lite_pixel4.json")
BENCHMARK_PAGE = SOURCES[0]
CONFIGS = (("cpu_4t", "xnnpack", "xnnpack"), ("gpu", "gpu", "gpu"), ("nnapi", "nnapi", "nnapi"))


def main(argv: list[str] | None = None) -> int:
    import build_phone_models

    from edgepart.cost.hardware import load_hardware
    from edgepart.cost.kernels import decompose
    from edgepart.cost.predictor import Predictor
    from edgepart.profiling.model_estimate import spec_predictor
    from edgepart.profiling.phone_fit import (
        fit_terms,
        hardware_processor,
        leave_one_out,
        predict_terms,
        summarize,
        term_matrix,
        to_config,
    )
    from edgepart.tflite.reader import read_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="fail if a predictor file would change")
    args = ap.parse_args(argv)
    docs = {f: json.loads((DATA / f).read_text()) for f in SOURCES}
    data = {"points": [{**p, "source": f} for f, d in docs.items() for p in d["points"]]}
    paths = build_phone_models.ensure_all()
    models = {n: read_model(p) for n, p in paths.items()}
    changed = []
    for device in ("pixel3", "pixel4"):
        from edgepart.devices.profile import load_profile

        hw = load_hardware(str(ROOT / "device_profiles" / f"{device}.yaml"))
        prof = load_profile(str(ROOT / "device_profiles" / f"{device}.yaml"))
        ctx = dict(prof.context)
        configs = {}
        report = {}
        spec = spec_predictor(prof)
        print(f"\n== {device}")
        for cname, executor, delegate in CONFIGS:
            pts = [p for p in data["points"] if p["device"] == device and p["config"] == cname]
            if not pts:
                continue
            proc = hardware_processor(hw, delegate)
            prefix = {"xnnpack": "xnn"}.get(executor, executor)
            rows, secs, offs, names = [], [], [], []
            cpu = configs.get("xnnpack_4t")
            for p in pts:
                m = models[p["model"]]
                k = decompose(m, executor, context=_context(ctx, p["model"]))
                rows.append(term_matrix(k, proc, prefix))
                off = 0.0
                if executor != "xnnpack" and cpu is not None:
                    own = np.array([not t.startswith(prefix + ".") for t in k.types])
                    if own.any():
                        sub = _subset(k, own)
                        off = float(cpu.kernel_seconds(sub)[0].sum())
                offs.append(off)
                secs.append(p["ms"] * 1e-3)
                names.append(p["model"])
            rows_a, secs_a, offs_a = np.array(rows), np.array(secs), np.array(offs)
            accel = executor != "xnnpack"
            invoke = proc.invoke_overhead_s
            err = leave_one_out(rows_a, secs_a, offs_a, invoke, accel=accel)
            coef = fit_terms(rows_a, secs_a, offs_a, invoke, accel=accel)
            fitted = predict_terms(rows_a, coef, offs_a, invoke) / secs_a - 1
            s = summarize(err)
            page = [e for e, p in zip(err, pts, strict=True) if p["source"] == BENCHMARK_PAGE]
            s_page = summarize(page)
            # the specs alone (no calibration) on the same points
            sc = spec.configs.get("xnnpack_4t" if executor == "xnnpack" else executor)
            spec_err = []
            if sc is not None:
                for p in pts:
                    k = decompose(models[p["model"]], executor, context=_context(ctx, p["model"]))
                    spec_err.append(sc.model_seconds(k).seconds / (p["ms"] * 1e-3) - 1)
            name = "xnnpack_4t" if executor == "xnnpack" else executor
            cv = {"median_abs": s["median_abs"], "q10": min(s["q10"], 0.0),
                  "q90": max(s["q90"], 0.0), "points": float(len(pts))}  # fmt: skip
            configs[name] = to_config(
                name,
                executor,
                4 if executor == "xnnpack" else 1,
                proc,
                coef,
                invoke,
                prefix=prefix,
                cv=cv,
                delegate=None if executor == "xnnpack" else delegate,
                fallback="xnnpack_4t" if executor != "xnnpack" else None,
                extra={
                    "leave_one_out": {
                        n: round(float(e), 4) for n, e in zip(names, err, strict=True)
                    },
                    "leave_one_out_benchmark_page": {
                        "median_abs": round(s_page["median_abs"], 4),
                        "points": len(page),
                    },
                    "fitted": {n: round(float(e), 4) for n, e in zip(names, fitted, strict=True)},
                    "spec_only": {
                        n: round(float(e), 4) for n, e in zip(names, spec_err, strict=True)
                    },
                },
            )
            report[name] = {**s, "benchmark_page_median_abs": s_page["median_abs"]}
            print(
                f"{name:<11} points {len(pts)}  leave-one-model-out median |err| "
                f"{s['median_abs']:.1%} (max {s['max_abs']:.1%}); the benchmark page's "
                f"{len(page)} models {s_page['median_abs']:.1%}; specs only median "
                f"{np.median(np.abs(spec_err)) if spec_err else float('nan'):.1%}"
            )
            for n, e, f, se in zip(
                names, err, fitted, spec_err or [np.nan] * len(names), strict=True
            ):
                print(f"   {n:<28} loo {e:+7.1%}  fitted {f:+7.1%}  specs {se:+7.1%}")
        mine = [p for p in data["points"] if p["device"] == device]
        pred = Predictor(
            device=prof.title,
            obtained="calibrated",
            source=(
                f"calibrated from {len(mine)} published TFLite latencies of "
                f"{len({p['model'] for p in mine})} architectures rebuilt with random weights "
                f"({'; '.join(sorted({_cite(docs[p['source']]) for p in mine}))}); per-delegate "
                "roofline-term fit (tools/fit_phone_profiles.py)"
            ),
            configs=configs,
            calibration={
                "points": len(mine),
                "data": [
                    f"edgepart/data/latency/{f}"
                    for f in SOURCES
                    if any(p["source"] == f for p in mine)
                ],
                "leave_one_model_out": report,
            },
        )
        out = ROOT / "device_profiles" / f"{device}.predictor.json"
        text = pred.dumps()
        if out.is_file() and out.read_text() == text:
            print(f"unchanged {out}")
        else:
            changed.append(out)
            if not args.check:
                out.write_text(text)
                print(f"wrote {out}")
    if args.check and changed:
        print("would change: " + ", ".join(map(str, changed)))
        return 1
    return 0


def _cite(doc: dict) -> str:  # type: ignore[type-arg]
    """A published source as the predictor names it: its address."""
    return str(doc["source"]["url"]).removeprefix("https://")


def _context(ctx: dict, model: str) -> dict:  # type: ignore[type-arg]
    """The zoo's quantized MobileNet is uint8 (asymmetric), which NNAPI 1.2 (Android 10)
    accepts; the rebuild is int8 (today's converter), which NNAPI takes from API 30 on. Claim
    the rebuild as NNAPI would take the original: with signed int8 allowed."""
    if model.endswith("_quant"):
        return {**ctx, "android_api_level": max(int(ctx.get("android_api_level", 29)), 30)}
    return ctx


def _subset(k, mask):  # type: ignore[no-untyped-def]
    from edgepart.cost.kernels import Kernels

    idx = np.flatnonzero(mask)
    return Kernels(
        types=[k.types[i] for i in idx],
        features=k.features[idx],
        ops=[k.ops[i] for i in idx],
        op_kernel=np.zeros(0, np.int64),
        repeat=k.repeat[idx],
        partitions={},
    )


if __name__ == "__main__":
    sys.exit(main())
