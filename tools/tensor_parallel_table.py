"""Predicted latencies with and without tensor-parallel splits for real-size models on phones.

For each model and phone profile (cost-model predictions, no phone here): TFLite's default
placement, the best placement without splits, the partitioner's plan with splits (taken only at
a predicted gain of 10 % or more), and the best plan when any predicted gain is taken (the
same search with the threshold at 0), with the layers split. Prints a Markdown table (the one
in ``docs/tensor_parallel.md``) and optionally writes the figures as JSON::

    python tools/tensor_parallel_table.py                 # models from the corpus caches
    python tools/tensor_parallel_table.py --corpus DIR --json table.json

Models: ``mobilenet_v2_224``, ``resnet50``, ``efficientnet_b0``, ``vit_s16`` and their ``_int8``
variants (``tools/build_corpus.py NAME``; looked up in ``--corpus`` directories, then the
default corpus cache, and built there if missing).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import build_corpus

from edgepart.cost.hardware import hardware_from_profile
from edgepart.cost.model import CostModel
from edgepart.deploy.splits import place_with_splits
from edgepart.devices.profile import load_profile
from edgepart.tflite.reader import read_model

MODELS = (
    "mobilenet_v2_224",
    "mobilenet_v2_224_int8",
    "resnet50",
    "resnet50_int8",
    "efficientnet_b0",
    "efficientnet_b0_int8",
    "vit_s16",
    "vit_s16_int8",
)
PROFILES = ("pixel8", "galaxy_s24_ultra", "vivo_x100_pro")


def find_model(name: str, dirs: Sequence[Path]) -> Path:
    for d in dirs:
        p = d / f"{name}.tflite"
        if p.is_file():
            return p
    return build_corpus.ensure(name, build_corpus.default_out_dir())


def _layers(placed: Any) -> list[str]:
    out = []
    for st in placed.tensor_parallel.taken:
        r = st.record
        units = sorted(
            {
                placed.problem.graph.unit_name(
                    int(placed.solution.evaluation.units[placed.problem.fusion.node_of[sh[-1]]])
                )
                for sh in r.shards
            }
        )
        out.append(
            f"{'+'.join(dict.fromkeys(r.op_names))} op {r.spec.ops[0]} {r.spec.mode} "
            f"{list(r.spec.sizes)} on {'/'.join(units)}"
        )
    return out


def row(model_path: Path, profile: str) -> dict[str, Any]:
    model = read_model(model_path)
    prof = load_profile(profile)
    t0 = time.perf_counter()
    cm = CostModel(hardware_from_profile(prof))
    taken = place_with_splits(model, prof, cm, "heuristic", None)
    cm = CostModel(hardware_from_profile(prof))
    anygain = place_with_splits(model, prof, cm, "heuristic", None, min_gain=0.0)
    tp, ta = taken.tensor_parallel, anygain.tensor_parallel
    unsplit = tp.unsplit_latency_s
    return {
        "model": model_path.stem,
        "profile": profile,
        "ops": model.main.num_ops,
        "tflite_default_s": taken.solution.baseline.evaluation.latency_s
        if taken.solution.baseline is not None
        else None,
        "default_name": None if taken.solution.baseline is None else taken.solution.baseline.name,
        "unsplit_s": unsplit,
        "with_splits_s": taken.solution.evaluation.latency_s,
        "splits_taken": _layers(taken),
        "candidates": tp.considered,
        "note": tp.note,
        "any_gain_s": anygain.solution.evaluation.latency_s,
        "any_gain_splits": _layers(anygain),
        "any_gain_candidates": ta.considered,
        "seconds": time.perf_counter() - t0,
    }


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.3f}"


def summary(layers: Sequence[str], candidates: int | None = None) -> str:
    """``"73: 72 FULLY_CONNECTED by columns, 1 CONV_2D by output_channels (cpu:0/cpu:1)"``."""
    if not layers:
        return "none" if candidates is None else f"none ({candidates} candidates)"
    kinds: dict[tuple[str, str], int] = {}
    where: set[str] = set()
    for text in layers:
        parts = text.split()
        kinds[(parts[0], parts[3])] = kinds.get((parts[0], parts[3]), 0) + 1
        where.add(parts[-1])
    what = ", ".join(f"{n} {op} by {mode}" for (op, mode), n in sorted(kinds.items()))
    return f"{len(layers)}: {what} ({', '.join(sorted(where))})"


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| model | profile | TFLite default (ms) | best, no splits (ms) | with splits, 10 % rule "
        "(ms) | layers split | best with any gain (ms) | layers split at any gain |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        split = summary(r["splits_taken"], r["candidates"])
        anyg = summary(r["any_gain_splits"])
        lines.append(
            f"| {r['model']} | {r['profile']} | {_ms(r['tflite_default_s'])} | "
            f"{_ms(r['unsplit_s'])} | {_ms(r['with_splits_s'])} | {split} | "
            f"{_ms(r['any_gain_s'])} | {anyg} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("--profiles", nargs="*", default=list(PROFILES))
    ap.add_argument("--corpus", action="append", default=[], type=Path, help="model directory")
    ap.add_argument("--json", type=Path, help="write the rows here")
    ap.add_argument("--from-json", type=Path, help="print the table of rows written before")
    args = ap.parse_args(argv)
    if args.from_json:
        print(markdown(json.loads(args.from_json.read_text())), end="")
        return 0
    rows = []
    for name in args.models:
        path = find_model(name, args.corpus)
        for prof in args.profiles:
            r = row(path, prof)
            rows.append(r)
            print(
                f"{name} @ {prof}: default {_ms(r['tflite_default_s'])} ms, unsplit "
                f"{_ms(r['unsplit_s'])} ms, with splits {_ms(r['with_splits_s'])} ms "
                f"({len(r['splits_taken'])} split), any gain {_ms(r['any_gain_s'])} ms "
                f"({len(r['any_gain_splits'])} split) [{r['seconds']:.1f} s]",
                flush=True,
            )
    print()
    print(markdown(rows), end="")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
