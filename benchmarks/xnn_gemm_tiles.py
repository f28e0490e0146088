"""The tiles XNNPACK's matrix products run in on this host: output channels per task, rows per tile.

A fully connected layer is XNNPACK's GEMM: it computes whole tiles of ``mr`` rows by ``nr``
output channels (``xnn_gemm_best_tile_size``; both set per instruction set by its GEMM
configs), and with several threads it hands pthreadpool one task per tile. Two things follow
that a latency model must know, both measured here with ai-edge-litert:

1. **Output channels per task (``nr``).** One row of at most ``nr`` outputs is one task: on
   two threads it costs what it costs on one (the pool is never woken). Beyond ``nr`` it is
   several tasks and pays for waking the pool. Timed: a model of 21 one-row layers of 64
   inputs against one of a single layer, one and two threads (the difference over 20 is the
   time per layer; layers this small take less than waking the pool, so a split shows).
   Without a measurement :func:`edgepart.cost.xnn_tasks.one_task` claims one task only up to
   the width every instruction set has (8 float / 4 8-bit outputs); ``calibrate --host``
   measures the real width the same way
   (:func:`edgepart.profiling.gemm_tiles.measure_task_widths`) and the table shows it.
2. **Rows per tile (``mr``).** A layer of ``m`` rows takes about ``ceil(m / mr)`` times what
   one tile takes: 2 rows cost what ``mr`` rows do (a single row runs a kernel of its own).
   Timed: one layer, ``K`` inputs to ``N`` outputs, for ``m`` of 1 to 40 rows, one thread
   (float steps every 7 rows on AVX-512; 8-bit every 16 with AMX).

Each family (float, 8-bit, dynamically quantized) prints its table and the widths it
implies. The timings interleave all models of a table in the same rounds
(:func:`edgepart.profiling.whole.measure_models`, p10; one thread on the CPU clock).

Usage::

    python benchmarks/xnn_gemm_tiles.py [--k 512] [--n 256] [--rounds 7] [--predictor P]
"""

from __future__ import annotations

import argparse
import sys

from edgepart.cost.kernels import decompose
from edgepart.cost.predictor import ConfigPredictor, load_predictor
from edgepart.cost.xnn_tasks import gemm_one_task_outputs
from edgepart.errors import EdgepartError
from edgepart.profiling import gemm_tiles
from edgepart.profiling.gemm_tiles import row_tile_from_times, task_width_from_times
from edgepart.profiling.whole import measure_models
from edgepart.tflite.reader import read_model_bytes

FAMILIES = {"float": "f32", "8-bit": "q8", "dynamic": "hy"}
SUFFIX = {"float": "", "8-bit": "_q8", "dynamic": "_hy"}  # kernel type suffix


def fc_model(family: str, rows: int, k: int, n: int, layers: int) -> bytes:
    """``layers`` fully connected layers of ``rows`` x ``k`` -> ``n`` (the calibration's own
    probe model: :func:`edgepart.profiling.gemm_tiles.fc_model`)."""
    return gemm_tiles.fc_model(FAMILIES[family], rows, k, n, layers)


def p10(timings: list, name: str) -> float:
    t = next(t for t in timings if t.name == name)
    v = t.value("p10", "auto")
    if v is None:
        raise SystemExit(f"xnn_gemm_tiles: {name}: {t.error or 'no samples'}")
    return float(v)


def task_width(family: str, k: int, rounds: int) -> None:
    widths = list(gemm_tiles.TASK_PROBE_OUTPUTS)
    models = {}
    for c in widths:
        for layers in (1, 21):
            models[f"{c}x{layers}"] = (fc_model(family, 1, k, c, layers), None)
    cfgs = [("1t", "xnnpack", 1), ("2t", "xnnpack", 2)]
    got = measure_models(models, cfgs, rounds=rounds)
    print(f"\n{family}: one row, {k} inputs; time per layer (21 layers against 1)")
    print(f"   {'outputs':>7} {'1 thread':>10} {'2 threads':>10} {'2t / 1t':>8}")
    per: dict[str, dict[int, float]] = {"1t": {}, "2t": {}}
    for c in widths:
        for cfg in ("1t", "2t"):
            sub = [t for t in got if t.config == cfg]
            per[cfg][c] = (p10(sub, f"{c}x21") - p10(sub, f"{c}x1")) / 20
        a, b = per["1t"][c], per["2t"][c]
        print(f"   {c:>7} {a * 1e9:>7.0f} ns {b * 1e9:>7.0f} ns {b / a:>8.2f}")
    one = task_width_from_times(per["1t"], per["2t"])
    safe = gemm_one_task_outputs(SUFFIX[family], None)
    print(
        f"   one task up to {one} outputs (as calibrate --host finds it: 2t / 1t below 1.3); "
        f"without that measurement the rule claims {safe:.0f}"
    )


def row_tile(family: str, k: int, n: int, rounds: int, cp: ConfigPredictor | None = None) -> None:
    rows = list(gemm_tiles.PROBE_ROWS)
    models = {f"{m:02d}": (fc_model(family, m, k, n, 1), None) for m in rows}
    got = measure_models(models, [("1t", "xnnpack", 1)], rounds=rounds)
    t = {m: p10(got, f"{m:02d}") for m in rows}
    print(f"\n{family}: {k} inputs -> {n} outputs, one thread, by rows")
    print("   measured   " + "  ".join(f"{m}: {t[m] * 1e6:.1f}" for m in rows) + "  (us)")
    if cp is not None:
        pred = {m: cp.model_seconds(decompose(read_model_bytes(c), "xnnpack")).seconds
                for m, (c, _) in zip(rows, models.values(), strict=True)}  # fmt: skip
        print("   predicted  " + "  ".join(f"{m}: {pred[m] * 1e6:.1f}" for m in rows) + "  (us)")
    # the tile as calibrate --host finds it (edgepart.profiling.gemm_tiles)
    tile = row_tile_from_times(t)
    print(f"   rows per tile: {tile}" if tile > 1 else f"   no clean step in 1..{rows[-1]} rows")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=512, help="inputs of each layer")
    ap.add_argument("--n", type=int, default=256, help="outputs (rows-per-tile table)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--predictor", help="also print what this predictor file says (1 thread)")
    args = ap.parse_args()
    cp = None
    if args.predictor is not None:
        try:
            cp = load_predictor(args.predictor).configs.get("xnnpack_1t")
        except EdgepartError as err:  # one line, no traceback
            cp, problem = None, str(err)
        else:
            problem = "" if cp is not None else f"{args.predictor}: no xnnpack_1t configuration"
        if problem:
            print(f"xnn_gemm_tiles: {problem}", file=sys.stderr)
            raise SystemExit(2)
    print("XNNPACK (ai-edge-litert) on this host; p10 of interleaved rounds")
    for family in FAMILIES:
        task_width(family, 64, args.rounds)
        row_tile(family, args.k, args.n, args.rounds, cp)


if __name__ == "__main__":
    main()
