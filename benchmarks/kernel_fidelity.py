#!/usr/bin/env python3
"""Kernel-level fidelity of a latency predictor: single kernels it never timed, group by group.

``fidelity.py --mode predictor`` judges whole models, where many kernels' errors add up and
partly cancel. This benchmark prices kernels one at a time, as nn-Meter reports its per-kernel
accuracy, in groups that each isolate one property of the kernels image networks run:

``conv1x1``
    1 x 1 convolutions at 3 to 48 pixels a side, 16 to 336 input and 8 to 336 output channels.
``stem``
    3 x 3 convolutions of few input channels (1 to 16: RGB inputs, masks), strides 1 and 2.
``dw_aligned`` and ``dw_unaligned``
    3 x 3 depthwise convolutions, strides 1 and 2, of channel counts networks use (multiples
    of 8) and of the same counts 1 to 5 channels off. XNNPACK's float kernels run a pixel's
    channels 8 at a time: on a Zen 3 guest (2026-12-07) a 28 x 28 one of 64, 72 ... 160
    channels costs 0.47-0.52 ns per pixel and channel, one of any count between them
    0.56-0.69 (65 channels take longer than 72).
``dw_window``
    depthwise convolutions of 5 x 5 and 7 x 7 windows (XNNPACK runs them in several passes).
``ops:MODEL``
    with ``--models``: every op of a corpus or real-model corpus model, cut out alone
    (:func:`edgepart.ir.extract.extract`).

Every piece is a one-op model, timed with :func:`edgepart.profiling.whole.measure_models`
(interleaved rounds, the 10th percentile of CPU time) on XNNPACK and on the builtin kernels,
one thread each. A piece's *kernel time* is its measured time less what the predictor gives its
fixed costs (the invocation and the delegate node), against the prediction's kernel part. Per
group and configuration: the median signed error, the median absolute error, the share within
+-10%, and the ratio of the summed predictions to the summed times. Pieces whose kernel time
is under a microsecond are left out (their fixed costs dominate). ``--baseline`` prices the same
timings with another predictor; ``--json OUT`` keeps them and ``--timings OUT`` judges on them
again without measuring. ``--probe host.measurements.npz`` times some of the calibration's own
chains again among the pieces: their median ratio now / then is how much slower (above 1) the
machine runs than when the predictor was calibrated, and each group's median error is printed
a second time with the predictions scaled by it (a diagnostic: it tells the predictor's error
from the machine's; this host's speed drifts by several percent within minutes).

Usage::

    python benchmarks/kernel_fidelity.py --predictor host.predictor.json
        [--baseline other.predictor.json] [--groups conv1x1,dw_aligned,...]
        [--models mobilenet_v2,...] [--rounds 9] [--probe host.measurements.npz]
        [--json OUT | --timings OUT]
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import statistics
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # fidelity: corpus and real models
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from edgepart.cost.kernels import Kernels, decompose
from edgepart.cost.predictor import Predictor, load_predictor
from edgepart.errors import EdgepartError
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.extract import extract
from edgepart.tflite.reader import read_model, read_model_bytes
from edgepart.tflite.writer import write_model

CONFIGS = (("xnnpack_1t", "xnnpack", 1), ("builtin_1t", "builtin", 1))
MIN_KERNEL_S = 1e-6  # below it, a piece is mostly its invocation
DRIFT = "_drift"  # the timings' key for the machine's speed against its calibration


def conv_model(
    h: int, cin: int, cout: int, k: int, stride: int, *, depthwise: bool = False
) -> bytes:
    """One float ``CONV_2D`` (or ``DEPTHWISE_CONV_2D``, ``cout == cin``) with a fused ``RELU6``,
    ``SAME`` padding, an ``h x h`` output; seeded He-scaled weights."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    rng = np.random.default_rng([h, cin, cout, k, stride])
    x = g.input("x", DType.FLOAT32, (1, h * stride, h * stride, cin))
    if depthwise:
        w = rng.standard_normal((1, k, k, cin)) * np.sqrt(2.0 / (k * k))
        op, extra = "DEPTHWISE_CONV_2D", {"depth_multiplier": 1}
        cout = cin
    else:
        w = rng.standard_normal((cout, k, k, cin)) * np.sqrt(2.0 / (k * k * cin))
        op, extra = "CONV_2D", {}
    wt = g.constant("w", w.astype(np.float32))
    b = g.constant("b", np.zeros(cout, np.float32))
    y = g.tensor("y", DType.FLOAT32, (1, h, h, cout))
    options = {"padding": "SAME", "stride_h": stride, "stride_w": stride,
               "fused_activation_function": "RELU6", **extra}  # fmt: skip
    g.op(op, [x, wt, b], [y], options=options)
    g.output(y)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", y)])
    return write_model(mb.build())


def _conv1x1() -> Iterator[tuple[str, bytes]]:
    for h, cin, cout in itertools.product((3, 6, 12, 24, 48), (16, 48, 96, 192, 336),
                                          (8, 24, 56, 96, 144, 336)):  # fmt: skip
        if h * h * cin * cout <= 48 * 48 * 96 * 144:  # at most ~30 M MACs
            yield f"h{h}_{cin}_{cout}", conv_model(h, cin, cout, 1, 1)


def _stem() -> Iterator[tuple[str, bytes]]:
    for h, cin, cout, s in itertools.product((16, 32, 64, 112), (1, 3, 4, 8, 16), (16, 32, 48),
                                             (1, 2)):  # fmt: skip
        yield f"h{h}_{cin}_{cout}_s{s}", conv_model(h, cin, cout, 3, s)


_DW_CHANNELS = (16, 32, 48, 64, 96, 144, 192, 336, 576)


def _dw(offset: Callable[[int], int]) -> Iterator[tuple[str, bytes]]:
    for h, c, s in itertools.product((3, 6, 12, 24, 48), _DW_CHANNELS, (1, 2)):
        ch = c + offset(c)
        if h * h * c <= 48 * 48 * 144:  # the same configurations in both groups
            yield f"h{h}_c{ch}_s{s}", conv_model(h, ch, ch, 3, s, depthwise=True)


def _off(c: int) -> int:
    """A fixed offset of 1 to 5 channels, either way: the count is no longer a multiple of 8."""
    return (1, -3, 5, -1, 3)[(c // 8) % 5]


def _dw_window() -> Iterator[tuple[str, bytes]]:
    for h, c, k in itertools.product((6, 12, 24, 48), (32, 96, 192), (5, 7)):
        if h * h * c <= 48 * 48 * 96:
            yield f"h{h}_c{c}_k{k}", conv_model(h, c, c, k, 1, depthwise=True)


GROUPS: dict[str, Callable[[], Iterator[tuple[str, bytes]]]] = {
    "conv1x1": _conv1x1,
    "stem": _stem,
    "dw_aligned": lambda: _dw(lambda c: 0),
    "dw_unaligned": lambda: _dw(_off),
    "dw_window": _dw_window,
}


def model_ops(path: Path) -> Iterator[tuple[str, bytes]]:
    """Every op of a model that stands alone as a model of its own (others are skipped: a
    ``WHILE``'s body, ops whose inputs the model computes at run time)."""
    model = read_model(path)
    for i in range(model.main.num_ops):
        try:
            yield f"op{i:03d}", write_model(extract(model, [i]))
        except (EdgepartError, ValueError, KeyError, IndexError):
            continue


def pieces(groups: Sequence[str], models: Mapping[str, Path]) -> dict[str, dict[str, bytes]]:
    """``{group: {piece: model bytes}}`` for the named groups and ``ops:MODEL`` groups."""
    out = {g: dict(GROUPS[g]()) for g in groups}
    for name, path in models.items():
        out[f"ops:{name}"] = dict(model_ops(path))
    return out


def judge(
    predictor: Predictor,
    config: str,
    contents: Mapping[str, Mapping[str, bytes]],
    measured: Mapping[str, float | None],
) -> dict[str, dict[str, float]]:
    """Per group: the kernel-time errors of its pieces on ``config`` (module docstring).

    ``measured`` maps ``group/piece`` to the measured seconds (``None``: not timed). Returns
    ``{group: {"n", "median", "median_abs", "within_10", "sum_ratio"}}``; groups without a
    piece of a microsecond or more are left out."""
    cp = predictor.configs[config]
    out: dict[str, dict[str, float]] = {}
    for group, items in contents.items():
        pred_s, meas_s = [], []
        for piece, content in items.items():
            t = measured.get(f"{group}/{piece}")
            if t is None:
                continue
            est = cp.model_seconds(_kernels(content, cp.executor))
            kernel = t - est.invoke_s - est.delegate_s
            if kernel >= MIN_KERNEL_S:
                pred_s.append(est.kernels_s)
                meas_s.append(kernel)
        if not meas_s:
            continue
        p, m = np.array(pred_s), np.array(meas_s)
        err = p / m - 1.0
        out[group] = {
            "n": float(len(err)),
            "median": float(np.median(err)),
            "median_abs": float(np.median(np.abs(err))),
            "within_10": float(np.mean(np.abs(err) <= 0.10)),
            "sum_ratio": float(p.sum() / m.sum()),
        }
    return out


@functools.cache
def _kernels(content: bytes, executor: str) -> Kernels:
    """A piece's kernels on ``executor``: parsed and decomposed once, however many predictors
    and configurations judge it."""
    return decompose(read_model_bytes(content), executor)


def _print(
    label: str, config: str, res: Mapping[str, Mapping[str, float]], drift: float | None
) -> None:
    print(f"-- {config}, {label}")
    for group, r in res.items():
        scaled = f"  at the drift {(1 + r['median']) * drift - 1:+6.1%}" if drift else ""
        print(f"   {group:<28} n={int(r['n']):4d}  median {r['median']:+6.1%}  "
              f"|err| {r['median_abs']:5.1%}  within 10% {r['within_10']:6.1%}  "
              f"sum predicted / measured {r['sum_ratio']:.3f}{scaled}")  # fmt: skip


def _probes(path: str, count: int) -> dict[str, tuple[bytes, dict[str, float]]]:
    """Calibration chains rebuilt from their specs, with what each configuration measured then
    (:func:`edgepart.profiling.recheck.probe_chains`)."""
    from edgepart.profiling.calibrate import load_measurements
    from edgepart.profiling.recheck import probe_chains

    chosen = probe_chains(load_measurements(path), [c for c, _, _ in CONFIGS], count, seed=1)
    return {f"probe:{i}": probe for i, probe in enumerate(chosen)}


def main() -> int:
    try:
        return _main()
    except EdgepartError as err:  # a broken model or predictor file: one line, no traceback
        print(f"kernel_fidelity: {err}", file=sys.stderr)
        return 2


def _main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--predictor", required=True, help="a predictor file (edgepart calibrate)")
    ap.add_argument("--baseline", help="another predictor file judged on the same timings")
    ap.add_argument("--groups", default=",".join(GROUPS), help=f"of {', '.join(GROUPS)}")
    ap.add_argument("--models", default="", help="corpus or real-model corpus models, whose "
                    "every op is timed alone (comma-separated)")  # fmt: skip
    ap.add_argument("--rounds", type=int, default=9, help="samples per piece")
    ap.add_argument(
        "--probe",
        help="the calibration's measurements (host.measurements.npz): "
        "some of its chains timed again among the pieces tell the drift since",
    )
    ap.add_argument("--probe-chains", type=int, default=48, help="chains --probe times again")
    ap.add_argument("--json", help="write the timings here")
    ap.add_argument("--timings", help="judge on the timings an earlier --json holds")
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    groups = [g for g in args.groups.split(",") if g]
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        ap.error(f"--groups: unknown {', '.join(unknown)}; choose from {', '.join(GROUPS)}")
    if args.rounds < 3:
        ap.error(f"--rounds {args.rounds}: need at least 3 samples per piece")
    if args.timings and args.probe:
        ap.error("--timings judges stored timings: --probe times chains now")
    preds = {"predictor": load_predictor(args.predictor)}
    if args.baseline:
        preds["baseline"] = load_predictor(args.baseline)
    names = [n for n in args.models.split(",") if n]
    models: dict[str, Path] = {}
    if names:
        from fidelity import predictor_models

        found = predictor_models(names)
        missing = [n for n in names if n not in found]
        if missing:
            ap.error(f"--models: no corpus or real-model corpus model {', '.join(missing)}")
        models = {n: found[n][0] for n in names}
    contents = pieces(groups, models)
    if args.timings:
        try:
            timed: dict[str, dict[str, float | None]] = json.loads(Path(args.timings).read_text())
            if not isinstance(timed, dict) or not all(isinstance(v, dict) for v in timed.values()):
                raise ValueError("not a mapping of configurations to timings")
        except (OSError, ValueError) as err:
            print(f"kernel_fidelity: --timings {args.timings}: not the --json output of this "
                  f"benchmark ({err}); give such a file", file=sys.stderr)  # fmt: skip
            return 2
    else:
        from edgepart.profiling.whole import measure_models

        flat = {f"{g}/{p}": (c, None) for g, items in contents.items() for p, c in items.items()}
        probes = _probes(args.probe, args.probe_chains) if args.probe else {}
        flat.update({name: (content, None) for name, (content, _) in probes.items()})
        print(f"{len(flat) - len(probes)} one-op models and {len(probes)} calibration chains, "
              f"{len(CONFIGS)} configurations, {args.rounds} interleaved rounds (p10)",
              flush=True)  # fmt: skip
        timed = {c: {} for c, _, _ in CONFIGS}
        ratios: dict[str, list[float]] = {}
        for t in measure_models(flat, CONFIGS, rounds=args.rounds):
            now = t.value("p10", "auto")
            if t.name in probes:
                then = probes[t.name][1].get(t.config)
                if now is not None and then:
                    ratios.setdefault(t.config, []).append(now / then)
            else:
                timed[t.config][t.name] = now
        for config, r in ratios.items():
            timed[config][DRIFT] = float(np.median(r))
        if args.json:
            Path(args.json).write_text(json.dumps(timed, indent=0, sort_keys=True) + "\n")
    for config, _, _ in CONFIGS:
        if config not in timed:
            continue
        drift = timed[config].get(DRIFT)
        if drift:
            print(f"{config}: the machine runs at {drift:.3f} of its calibration (its chains "
                  "timed again among the pieces, now / then)")  # fmt: skip
        for label, pred in preds.items():
            if config in pred.configs:
                _print(label, config, judge(pred, config, contents, timed[config]), drift)
    counts = [len(v) for v in contents.values()]
    print(f"groups {len(contents)}, pieces per group median {statistics.median(counts):.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
