"""``edgepart estimate MODEL --profile DEVICE``: predicted latency per configuration, untimed."""

from __future__ import annotations

import argparse
import json
from typing import Any

import edgepart
from edgepart.cli._args import add_input_shape_argument, input_shapes

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "estimate",
        help="predict what benchmark_model reports for a model on a device, without timing it",
        description="Predict a model's average inference latency on every configuration of a "
        "device's latency predictor (CPU with N threads on XNNPACK or builtin kernels, GPU, "
        "NNAPI ...): its kernels, found with each executor's fusion rules, plus invocation "
        "and delegate-node costs. Each figure comes with the band (10th to 90th percentile) "
        "the predictor's cross-validation gives and says how the predictor was obtained. "
        "A WHILE loop whose trip count is an input is counted in one untimed run on seeded "
        "inputs (a note says how many). "
        "`--profile host` uses this machine's calibration (`edgepart calibrate --host`).",
    )
    p.add_argument("model", help="path to a .tflite file")
    p.add_argument("--profile", required=True, help="device profile name or YAML path")
    p.add_argument(
        "--predictor", metavar="JSON", help="use this predictor file instead of the profile's"
    )
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="NAME",
        help="only this configuration (repeatable; e.g. xnnpack_2t)",
    )
    add_input_shape_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    rep = edgepart.estimate(
        args.model,
        args.profile,
        predictor=args.predictor,
        configs=args.config or None,
        input_shapes=input_shapes(args),
    )
    if args.json:
        print(json.dumps(rep.to_json(), indent=1, sort_keys=True))
        return 0
    print(f"model      {rep.model}")
    print(f"device     {rep.device}")
    print(f"predictor  {rep.predictor_source}")
    print(f"obtained   {rep.obtained}")
    if rep.shapes_resolved:
        print("shapes     propagated from the input sizes (dynamic dimensions resolved)")
    print()
    print(f"{'configuration':<22} {'avg (us)':>12} {'band (us)':>23}  kernels  partitions")
    for e in rep.estimates:
        band = f"{e.low_s * 1e6:,.1f} .. {e.high_s * 1e6:,.1f}"
        parts = ",".join(f"{k}:{v}" for k, v in sorted(e.partitions.items())) or "-"
        print(
            f"{rep.labels.get(e.config, e.config):<22} {e.seconds * 1e6:>12,.1f} {band:>23}  "
            f"{e.kernels:>7}  {parts}"
        )
    for e in rep.estimates:
        for n in e.notes:
            print(f"note ({e.config}): {n}")
        if e.fallbacks:
            fb = ", ".join(f"{k}->{v}" for k, v in sorted(e.fallbacks.items()))
            print(f"note ({e.config}): kernel types predicted by a related model: {fb}")
    if rep.caveat:
        print(f"note: {rep.caveat}")
    return 0
