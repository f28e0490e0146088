"""What each kernel of a model costs *inside* the model, against what a predictor says.

A model's ops are cut into prefixes, one ending after each kernel the executor runs
(:func:`edgepart.cost.kernels.decompose`: XNNPACK's fused operators, builtin kernels one op
each), and every prefix is timed as a model of its own with ai-edge-litert, all prefixes
interleaved in the same rounds (:func:`edgepart.profiling.whole.measure_models`, p10 on the CPU
clock with one thread). The difference between a prefix and the one before it is what the
kernel between them adds to the model: its cost in context, after the kernels that really ran
before it, in the memory layout the runtime gives them. Printed beside it: what the predictor
gives the same kernel (from the whole model's kernels), and their ratio.

Where a whole-model prediction misses, this says which kernels the miss is in; whether they
are mispriced everywhere (the op timed alone is mispriced too: ``edgepart profile``'s table)
or only in this context (the same op costs far more after certain ops than alone) is the next
question. The first prefix includes the invocation and its delegate node; its prediction does
too. A prefix that cannot be cut (an op reading a variable another op writes later, say) is
merged into the next one. Increments of kernels far below a microsecond are within the
timing's noise.

Usage::

    python benchmarks/in_context.py MODEL --predictor host.predictor.json [--threads 1]
        [--executor xnnpack|builtin] [--rounds 9] [--top 10]

``MODEL`` is a ``.tflite`` file or the name of a corpus or real-model corpus model.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # fidelity: corpus and real models
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from edgepart.cost.kernels import Kernels, decompose
from edgepart.cost.predictor import load_predictor
from edgepart.errors import EdgepartError
from edgepart.ir.extract import extract
from edgepart.ir.graph import Model
from edgepart.profiling.shape_resolution import needs_resolution, resolved_subgraph
from edgepart.tflite.reader import read_model
from edgepart.tflite.writer import write_model


def kernel_cuts(k: Kernels) -> list[tuple[int, list[int]]]:
    """Prefix lengths (ops) and the kernels each adds: a cut after each kernel's last op, in
    op order; kernels whose ops end at the same op share a cut."""
    by_end: dict[int, list[int]] = {}
    for j, ops in enumerate(k.ops):
        if ops:
            by_end.setdefault(max(ops) + 1, []).append(j)
    return sorted(by_end.items())


def prefix_models(
    model: Model, cuts: list[tuple[int, list[int]]]
) -> list[tuple[int, list[int], bytes]]:
    """A model of the first ``n`` ops for each cut; a cut that cannot stand alone joins the next."""
    n_ops = model.main.num_ops
    out: list[tuple[int, list[int], bytes]] = []
    pending: list[int] = []
    for n, kernels in cuts:
        pending = pending + kernels
        try:
            content = write_model(extract(model, list(range(n)))) if n < n_ops else b""
        except (EdgepartError, ValueError, KeyError, IndexError):
            continue
        out.append((n, pending, content))
        pending = []
    if pending:  # the last kernels end where the model does
        out.append((n_ops, pending, b""))
    return out


def main() -> int:
    try:
        return _main()
    except EdgepartError as err:  # a broken model or predictor file: one line, no traceback
        print(f"in_context: {err}", file=sys.stderr)
        return 2


def _main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help=".tflite file, or a corpus / real-model corpus name")
    ap.add_argument("--predictor", required=True, help="a predictor file (edgepart calibrate)")
    ap.add_argument("--executor", choices=("xnnpack", "builtin"), default="xnnpack")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--top", type=int, default=10, help="largest differences to list")
    args = ap.parse_args()

    from edgepart.profiling.whole import measure_models

    path = Path(args.model)
    shapes: dict[str, list[int]] | None = None
    if not path.is_file():
        from fidelity import predictor_models

        found = predictor_models([args.model])
        if args.model not in found:
            print(f"in_context: {args.model}: no such file or corpus model", file=sys.stderr)
            return 2
        path, shapes = found[args.model]
    model = read_model(path)
    sg = None
    if needs_resolution(model.main) or shapes:
        # the manifest's input shapes; every prefix is resized to them by input name
        sg = resolved_subgraph(model, path.read_bytes(), shapes)
    config = f"{args.executor}_{args.threads}t"
    cp = load_predictor(args.predictor).configs.get(config)
    if cp is None:
        print(f"in_context: the predictor has no configuration {config}", file=sys.stderr)
        return 2
    k = decompose(model, cp.executor, sg=sg)
    secs, _, _, _ = cp.kernel_seconds_with_calls(k)  # control flow: its subgraphs' kernels
    est = cp.model_seconds(k)
    fixed = est.invoke_s + est.delegate_s
    pieces = prefix_models(model, kernel_cuts(k))
    full = path.read_bytes()
    timed = {f"{i:04d}": (content or full, shapes) for i, (_, _, content) in enumerate(pieces)}
    print(f"{path.name}: {len(k)} kernels, {len(pieces)} prefixes, {config}, "
          f"{args.rounds} interleaved rounds (p10)")  # fmt: skip
    timings = measure_models(timed, [(config, args.executor, args.threads)], rounds=args.rounds)
    value = {t.name: t.value("p10", "auto") for t in timings}
    errors = [f"{t.name}: {t.error}" for t in timings if t.error]
    if errors:
        print("could not time: " + "; ".join(errors))
    rows = []
    prev = 0.0
    cum = 0.0
    for i, (n, kernels, _) in enumerate(pieces):
        now = value.get(f"{i:04d}")
        if now is None:
            continue
        pred = float(sum(secs[j] for j in kernels)) + (fixed if not rows else 0.0)
        cum += pred
        types = ", ".join(sorted({k.types[j] for j in kernels}))
        rows.append((n, kernels, types, now - prev, pred, now, cum))
        prev = now
    print("\nper prefix (ops 0..n-1): measured and predicted; per kernel: what it adds")
    print(f"{'ops':>5} {'kernels':>9}  {'type':<18} {'prefix':>10} {'predicted':>10} {'error':>7}"
          f" {'adds':>10} {'predicted':>10}")  # fmt: skip
    for n, kernels, types, ctx, pred, now, acc in rows:
        ks = f"{kernels[0]}" + (f"-{kernels[-1]}" if len(kernels) > 1 else "")
        print(f"{n:>5} {ks:>9}  {types[:18]:<18} {now * 1e6:>7.1f} us {acc * 1e6:>7.1f} us "
              f"{acc / now - 1:>+7.1%} {ctx * 1e6:>7.1f} us {pred * 1e6:>7.1f} us")  # fmt: skip
    total_ctx = sum(r[3] for r in rows)
    total_pred = sum(r[4] for r in rows)
    print(f"\nwhole model: measured {total_ctx * 1e6:.1f} us, predicted {total_pred * 1e6:.1f} us "
          f"({total_pred / total_ctx - 1:+.1%}); the first row includes the invocation "
          f"({fixed * 1e6:.1f} us predicted)")  # fmt: skip
    diff = sorted(rows, key=lambda r: -abs(r[4] - r[3]))[: args.top]
    print(f"largest differences (predicted - in context), {len(diff)}:")
    for n, kernels, types, ctx, pred, _, _ in diff:
        share = (pred - ctx) / total_ctx if total_ctx else float("nan")
        print(f"   kernels {kernels} ({types}) ending at op {n}: {(pred - ctx) * 1e6:+.1f} us, "
              f"{share:+.1%} of the model")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
