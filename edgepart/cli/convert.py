"""``edgepart convert SOURCE -o out.tflite``: Keras, SavedModel or PyTorch to a checked .tflite."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import edgepart
from edgepart import jsondoc as _json
from edgepart.fileio import atomic_write_text

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "convert",
        help="convert a Keras/SavedModel/PyTorch model to .tflite and check it against the source",
        description=(
            "Convert with TensorFlow's TFLiteConverter (Keras .keras/.h5, SavedModel directories) "
            "or litert-torch (torch.export .pt2 programs, edgepart[torch]), then check the "
            "result: it parses, runs in LiteRT and matches the source model's outputs (float: "
            "max abs/rel difference; int8: SNR and top-1 agreement). Ops that need "
            "SELECT_TF_OPS are reported; --profile says which delegates would take what. "
            "Exit status 1 if an output is outside the mode's limits (the file is written)."
        ),
    )
    p.add_argument("source", metavar="SOURCE", help=".keras/.h5 file, SavedModel dir or .pt2")
    p.add_argument("-o", "--output", required=True, metavar="OUT.tflite", help="file to write")
    p.add_argument(
        "--quantize",
        choices=("none", "fp16", "dynamic", "int8"),
        default="none",
        help="post-training quantization (default none)",
    )
    p.add_argument(
        "--calibration-data",
        metavar="DIR",
        help="directory of .npy samples for int8 calibration and the checks (default: random "
        "data, with a warning)",
    )
    p.add_argument(
        "--calibration-samples", type=int, metavar="N", help="calibrate on at most N samples"
    )
    p.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="[NAME=]DIMS",
        help="fix an input's shape, e.g. 1,224,224,3 (repeatable; an unknown batch becomes 1)",
    )
    p.add_argument("--int8-io", action="store_true", help="with int8: int8 inputs and outputs")
    p.add_argument(
        "--no-select-tf-ops",
        action="store_true",
        help="fail instead of converting ops without a TFLite builtin as Flex ops",
    )
    p.add_argument("--signature", metavar="KEY", help="SavedModel signature to convert")
    p.add_argument(
        "--profile", metavar="DEVICE", help="say which delegates of this device take which ops"
    )
    p.add_argument(
        "--check-samples", type=int, default=16, metavar="N", help="samples to check (default 16)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of random data (default 0)")
    p.add_argument("--json", metavar="FILE", help="also write the result as JSON")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    with edgepart.Progress("convert") as bar:
        res = edgepart.convert_model(
            args.source,
            args.output,
            quantize=args.quantize,
            input_shapes=args.input_shape,
            calibration_data=args.calibration_data,
            calibration_samples=args.calibration_samples,
            int8_io=args.int8_io,
            select_tf_ops=not args.no_select_tf_ops,
            signature=args.signature,
            profile=args.profile,
            check_samples=args.check_samples,
            seed=args.seed,
            progress=bar,
        )
    for w in res.warnings:
        print(f"edgepart: warning: {w}", file=sys.stderr)
    print(format_result(res.to_dict()), end="")
    if args.json:
        atomic_write_text(args.json, _json.text(res.to_dict(), default=str) + "\n")
    return 1 if res.passed is False else 0


def _bytes(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def format_result(d: dict[str, Any]) -> str:
    """The text ``edgepart convert`` prints for a :meth:`ConversionResult.to_dict`."""
    lines = []
    how = d["quantize"]
    cal = d["calibration"]
    if cal:
        how += f", calibrated on {cal['samples']} " + (
            "random inputs" if cal["random"] else f"samples from {cal['data']}"
        )
    lines.append(
        f"converted {d['source']} ({d['kind']}) -> {d['output']}: {d['num_ops']} ops, "
        f"{_bytes(d['size_bytes'])}, quantize {how}"
    )
    ins = ", ".join(f"{i['name']} {i['dtype']}{i['shape']}" for i in d["inputs"])
    lines.append(f"inputs: {ins}")
    if d["select_tf_ops"]:
        lines.append(f"SELECT_TF_OPS: {', '.join(d['select_tf_ops'])}")
    if not d["ran_in_litert"]:
        lines.append(f"check: not run ({d['not_run_reason']})")
    else:
        n = d["checks"][0]["samples"] if d["checks"] else 0
        int8 = d["quantize"] == "int8"
        lim = ", ".join(f"{k} {v:g}" for k, v in sorted(d["limits"].items()))
        lines.append(f"check in LiteRT against the source model on {n} samples (limits: {lim}):")
        for c in d["checks"]:
            figs = [f"max abs diff {c['max_abs']:.3g}", f"max rel diff {c['max_rel']:.3g}"]
            snr = "exact" if c["snr_db"] is None else f"{c['snr_db']:.1f} dB"
            if int8:
                figs = (
                    [f"SNR {snr}"]
                    + ([f"top-1 agreement {c['top1']:.1%}"] if c["top1"] is not None else [])
                    + figs
                )
            verdict = "FAILED: " + "; ".join(c["failures"]) if c["failures"] else "ok"
            lines.append(f"  {c['name']}: {', '.join(figs)}  {verdict}")
    if d["claims"] is not None:
        lines.extend(format_claims(d["claims"]))
    return "\n".join(lines) + "\n"


def format_claims(rep: dict[str, Any], max_reasons: int = 3) -> list[str]:
    """A few lines per delegate of a claim report: what it takes and its main refusals."""
    n = rep["num_ops"]
    lines = [f"delegates of {rep['profile']} on this model:"]
    for name, d in rep["delegates"].items():
        where = f" ({d['processor']})" if d["processor"] else ""
        lines.append(
            f"  {name}{where}: takes {d['num_taken']}/{n} ops in {len(d['partitions'])} "
            "partition(s)"
        )
        reasons = sorted(d["refused"].items(), key=lambda kv: (-len(kv[1]), kv[0]))
        for why, ops in reasons[:max_reasons]:
            lines.append(f"    refuses {len(ops)} op(s): {why}")
        if len(reasons) > max_reasons:
            lines.append(
                f"    ... {len(reasons) - max_reasons} more reasons "
                "(edgepart inspect MODEL --profile DEVICE)"
            )
    for scen in rep["scenarios"].values():
        per = ", ".join(f"{k} {v}" for k, v in sorted(scen["ops_per_processor"].items()))
        lines.append(f"  by default ({' then '.join(scen['delegates'])}): {per}")
    return lines
