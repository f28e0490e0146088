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

What the fit takes from each rebuilt model is a handful of numbers per point: its four work
terms, the time of the ops its delegate leaves to the CPU, and the specs-only prediction. They
are written to ``edgepart/data/latency/pixel_model_terms.json``, so that the fit can be re-run
and checked without TensorFlow (``--from-terms``), and a few models rebuilt and checked against
them (``--models``) where building all sixteen (about eight minutes on 2 cores) is too long.

Usage::

    python tools/fit_phone_profiles.py [--check]   # build all 16 models; --check: fail if a
                                                   # written file (predictors, terms) changes
    python tools/fit_phone_profiles.py --from-terms --check        # no model built
    python tools/fit_phone_profiles.py --models squeezenet --check  # rebuild these, the rest
                                                                    # from the terms file
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
TERMS_FILE = DATA / "pixel_model_terms.json"
CONFIGS = (("cpu_4t", "xnnpack", "xnnpack"), ("gpu", "gpu", "gpu"), ("nnapi", "nnapi", "nnapi"))


def main(argv: list[str] | None = None) -> int:
    import build_phone_models

    from edgepart.cost.hardware import load_hardware
    from edgepart.cost.predictor import Predictor
    from edgepart.devices.profile import load_profile
    from edgepart.profiling.model_estimate import spec_predictor
    from edgepart.profiling.phone_fit import (
        fit_terms,
        hardware_processor,
        leave_one_out,
        predict_terms,
        summarize,
        to_config,
    )
    from edgepart.tflite.reader import read_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="fail if a written file would change")
    how = ap.add_mutually_exclusive_group()
    how.add_argument(
        "--from-terms", action="store_true", help=f"build no model: read {TERMS_FILE.name}"
    )
    how.add_argument(
        "--models", help="comma-separated models to rebuild; the others' terms are read"
    )
    args = ap.parse_args(argv)
    docs = {f: json.loads((DATA / f).read_text()) for f in SOURCES}
    data = {"points": [{**p, "source": f} for f, d in docs.items() for p in d["points"]]}
    if args.from_terms:
        names: tuple[str, ...] = ()
    elif args.models:
        names = tuple(n.strip() for n in args.models.split(",") if n.strip())
        unknown = sorted(set(names) - set(build_phone_models.MODELS))
        if unknown:
            print(f"unknown model(s) {', '.join(unknown)}; known: "
                  f"{', '.join(build_phone_models.MODELS)}")  # fmt: skip
            return 2
    else:
        names = build_phone_models.MODELS
    full = names == build_phone_models.MODELS
    stored = {} if full else json.loads(TERMS_FILE.read_text())["terms"]
    models = {n: read_model(p) for n, p in build_phone_models.ensure_many(names).items()}
    terms: dict[str, dict[str, dict[str, dict[str, float | list[float]]]]] = {}
    changed = []
    for device in ("pixel3", "pixel4"):
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
            name = "xnnpack_4t" if executor == "xnnpack" else executor
            cpu = configs.get("xnnpack_4t")
            sc = spec.configs.get(name)
            mine = terms.setdefault(device, {}).setdefault(cname, {})
            for p in pts:
                model = p["model"]
                if model in models:
                    mine[model] = _point_terms(
                        models[model], executor, _context(ctx, model), proc, prefix, cpu, sc
                    )
                else:
                    try:
                        mine[model] = stored[device][cname][model]
                    except KeyError:
                        print(f"{TERMS_FILE.name} has no terms for {device} {cname} {model}: "
                              "run without --from-terms / --models to compute them")  # fmt: skip
                        return 2
            rows_a = np.array([mine[p["model"]]["terms"] for p in pts], dtype=np.float64)
            offs_a = np.array([mine[p["model"]]["cpu_s"] for p in pts], dtype=np.float64)
            secs_a = np.array([p["ms"] * 1e-3 for p in pts])
            spec_s = [mine[p["model"]].get("spec_s") for p in pts]
            spec_err = [float(s) / t - 1 for s, t in zip(spec_s, secs_a, strict=True)
                        if s is not None]  # fmt: skip
            names_p = [p["model"] for p in pts]
            accel = executor != "xnnpack"
            invoke = proc.invoke_overhead_s
            err = leave_one_out(rows_a, secs_a, offs_a, invoke, accel=accel)
            coef = fit_terms(rows_a, secs_a, offs_a, invoke, accel=accel)
            fitted = predict_terms(rows_a, coef, offs_a, invoke) / secs_a - 1
            s = summarize(err)
            page = [e for e, p in zip(err, pts, strict=True) if p["source"] == BENCHMARK_PAGE]
            s_page = summarize(page)
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
                        n: round(float(e), 4) for n, e in zip(names_p, err, strict=True)
                    },
                    "leave_one_out_benchmark_page": {
                        "median_abs": round(s_page["median_abs"], 4),
                        "points": len(page),
                    },
                    "fitted": {n: round(float(e), 4) for n, e in zip(names_p, fitted, strict=True)},
                    "spec_only": {
                        n: round(float(e), 4) for n, e in zip(names_p, spec_err, strict=True)
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
                names_p, err, fitted, spec_err or [np.nan] * len(names_p), strict=True
            ):
                print(f"   {n:<28} loo {e:+7.1%}  fitted {f:+7.1%}  specs {se:+7.1%}")
        mine_pts = [p for p in data["points"] if p["device"] == device]
        pred = Predictor(
            device=prof.title,
            obtained="calibrated",
            source=(
                f"calibrated from {len(mine_pts)} published TFLite latencies of "
                f"{len({p['model'] for p in mine_pts})} architectures rebuilt with random "
                f"weights ({'; '.join(sorted({_cite(docs[p['source']]) for p in mine_pts}))}); "
                "per-delegate roofline-term fit (tools/fit_phone_profiles.py)"
            ),
            configs=configs,
            calibration={
                "points": len(mine_pts),
                "data": [
                    f"edgepart/data/latency/{f}"
                    for f in SOURCES
                    if any(p["source"] == f for p in mine_pts)
                ],
                "leave_one_model_out": report,
            },
        )
        changed += _write(ROOT / "device_profiles" / f"{device}.predictor.json", pred.dumps(),
                          args.check)  # fmt: skip
    if full:
        changed += _write(TERMS_FILE, _terms_text(terms), args.check)
    else:  # the rebuilt models' terms against the stored ones
        for device, by_cfg in terms.items():
            for cname, by_model in by_cfg.items():
                for model in sorted(set(by_model) & set(models)):
                    if by_model[model] != stored[device][cname][model]:
                        print(f"{model} ({device} {cname}): terms {by_model[model]} differ from "
                              f"{TERMS_FILE.name}'s {stored[device][cname][model]}")  # fmt: skip
                        if TERMS_FILE not in changed:
                            changed.append(TERMS_FILE)
        if models and TERMS_FILE not in changed:
            print(f"rebuilt {', '.join(sorted(models))}: terms as in {TERMS_FILE.name}")
    if args.check and changed:
        print("would change: " + ", ".join(map(str, changed)))
        return 1
    return 0


def _point_terms(model, executor, ctx, proc, prefix, cpu, spec_config):  # type: ignore[no-untyped-def]
    """What the fit takes from one model on one configuration: its work terms, the time of
    the kernels its delegate leaves to the CPU (predicted by the fitted CPU configuration
    ``cpu``), and the specs-only prediction."""
    from edgepart.cost.kernels import decompose
    from edgepart.profiling.phone_fit import term_matrix

    k = decompose(model, executor, context=ctx)
    cpu_s = 0.0
    if executor != "xnnpack" and cpu is not None:
        own = np.array([not t.startswith(prefix + ".") for t in k.types])
        if own.any():
            cpu_s = float(cpu.kernel_seconds(_subset(k, own))[0].sum())
    out: dict[str, float | list[float]] = {
        "terms": [float(x) for x in term_matrix(k, proc, prefix)],
        "cpu_s": cpu_s,
    }
    if spec_config is not None:
        out["spec_s"] = float(spec_config.model_seconds(k).seconds)
    return out


def _terms_text(terms: dict) -> str:  # type: ignore[type-arg]
    import build_phone_models

    from edgepart.profiling.phone_fit import TERMS

    doc = {
        "about": (
            "What tools/fit_phone_profiles.py takes from each architecture rebuilt by "
            "tools/build_phone_models.py, per device and configuration: the work terms of "
            "edgepart.profiling.phone_fit (" + ", ".join(TERMS) + "; seconds of the device "
            "profile's roofline, counts), cpu_s, the time of the ops the delegate leaves to the "
            "CPU as the fitted CPU configuration predicts it, and spec_s, the profile's specs-only "
            "prediction. Computed, not measured: rebuild the models and re-run the tool to check."
        ),
        "models": {
            "recipe_version": build_phone_models.RECIPE_VERSION,
            "seed": build_phone_models.SEED,
        },
        "terms": terms,
    }
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def _write(out: Path, text: str, check: bool) -> list[Path]:
    if out.is_file() and out.read_text() == text:
        print(f"unchanged {out.relative_to(ROOT)}")
        return []
    if not check:
        from edgepart.fileio import atomic_write_text

        atomic_write_text(out, text)
        print(f"wrote {out.relative_to(ROOT)}")
    return [out]


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
