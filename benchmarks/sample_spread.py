"""How well a chain's 10th percentile repeats, by how its samples are spread in time.

The calibration (``edgepart calibrate --host``) times every generated chain a few times and
fits on each chain's 10th percentile. On a machine that other work slows in bursts of a
fraction of a second, samples taken close together share a burst, and the figure is off by as
much. This benchmark measures that on this machine, now, and what spreading the samples
would buy against taking more of them:

1. *Same moments, another interpreter*: each chain opened twice, both timed in the same
   rounds. Their figures differ only by where the chains' buffers landed.
2. *One interpreter, other moments*: its first half of the rounds against its second half.
3. *Spread against consecutive*: with ``--rounds`` rounds of every chain (a round samples each
   chain once, in a random order), the 10th percentile of ``k`` samples from consecutive rounds,
   from every ``s``-th round, and from rounds spread over the whole run, each against the 10th
   percentile of all the rounds (the best estimate there is); the median error and the share
   of chains off by more than 10%, with the ratio to consecutive rounds.

Chains are the calibration's own draws (:func:`edgepart.profiling.kernel_gen.draw_specs`),
timed on XNNPACK with one thread on the thread's CPU clock, as the calibration times them.

Usage::

    python benchmarks/sample_spread.py                    # 100 chains, 60 rounds (about a minute)
    python benchmarks/sample_spread.py --chains 50 --rounds 30 --json spread.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np

from edgepart.errors import EdgepartError
from edgepart.profiling.calibrate import Sampler, canary_model, prepare_sampler
from edgepart.profiling.kernel_gen import build_chain, draw_specs
from edgepart.tflite.writer import write_model


def _p10(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.percentile(x, 10, axis=-1)
    return out


def _summary(log_err: np.ndarray) -> dict[str, float]:
    e = np.abs(log_err) * 100
    return {
        "median_pct": round(float(np.median(e)), 2),
        "p90_pct": round(float(np.percentile(e, 90)), 2),
        "past_10pct": round(float(np.mean(e > 10) * 100), 1),
    }


def run(chains: int, rounds: int, k: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    pairs: list[tuple[Sampler, Sampler]] = []
    for spec in draw_specs(rng, chains):
        content = write_model(build_chain(spec))
        try:
            one = prepare_sampler(content, "xnnpack", 1, 1e-3)
            two = prepare_sampler(content, "xnnpack", 1, 1e-3)
        except (EdgepartError, RuntimeError, ValueError):  # a chain LiteRT cannot run
            continue
        pairs.append((one, two))
    canary = prepare_sampler(canary_model(), "xnnpack", 1, 1e-3)
    everyone = [s for p in pairs for s in p]
    t0 = time.monotonic()
    for r in range(rounds):
        canary.sample(r)
        for j in rng.permutation(len(everyone)).tolist():
            everyone[j].sample(r)
    took = time.monotonic() - t0
    a = np.array([p[0].cpu for p in pairs])
    b = np.array([p[1].cpu for p in pairs])
    h = rounds // 2
    out: dict[str, Any] = {
        "chains": len(pairs),
        "rounds": rounds,
        "seconds": round(took, 1),
        "round_s": round(took / rounds, 3),
        "canary_p90_over_p10": round(
            float(np.percentile(canary.cpu, 90) / np.percentile(canary.cpu, 10)), 3
        ),
        "same_moments_other_interpreter": _summary(np.log(_p10(a) / _p10(b))),
        "same_interpreter_other_moments": _summary(np.log(_p10(a[:, :h]) / _p10(a[:, h:]))),
    }
    truth = _p10(a)
    spreads: dict[str, Any] = {}
    steps = {
        "consecutive": 1,
        "every 3rd": 3,
        "every 6th": 6,
        f"over all {rounds}": max(rounds // k, 1),
    }
    for name, step in steps.items():
        errs = [
            np.log(_p10(a[:, np.arange(off, off + k * step, step)]) / truth)
            for off in range(0, rounds - (k - 1) * step)
        ]
        spreads[name] = _summary(np.concatenate(errs)) if errs else None
    out[f"p10_of_{k}_against_all"] = spreads
    twice = [np.log(_p10(a[:, off : off + 2 * k]) / truth) for off in range(0, rounds - 2 * k + 1)]
    out[f"p10_of_{2 * k}_consecutive_against_all"] = _summary(np.concatenate(twice))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chains", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("-k", type=int, default=5, help="samples per chain, as the calibration takes")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args(argv)
    if args.rounds < 2 * args.k:
        ap.error(f"--rounds {args.rounds}: need at least twice -k ({2 * args.k})")
    res = run(args.chains, args.rounds, args.k, args.seed)
    print(f"{res['chains']} chains x {res['rounds']} rounds in {res['seconds']} s "
          f"({res['round_s']} s a round); canary p90/p10 {res['canary_p90_over_p10']}")  # fmt: skip
    print(f"{'10th percentile against':44s} median    p90  past 10%")
    rows = [
        ("another interpreter, same rounds", res["same_moments_other_interpreter"]),
        ("same interpreter, other half of the rounds", res["same_interpreter_other_moments"]),
    ]
    spreads = res[f"p10_of_{args.k}_against_all"]
    base = spreads["consecutive"]
    for name, s in spreads.items():
        rows.append((f"all rounds, from {args.k} {name}", s))
    rows.append(
        (
            f"all rounds, from {2 * args.k} consecutive",
            res[f"p10_of_{2 * args.k}_consecutive_against_all"],
        )
    )
    for name, s in rows:
        if s is None:
            continue
        print(f"{name:44s} {s['median_pct']:5.2f}% {s['p90_pct']:5.2f}%  {s['past_10pct']:5.1f}%")
    for name, s in spreads.items():
        if s is not None and name != "consecutive" and s["past_10pct"] > 0:
            ratio = base["past_10pct"] / s["past_10pct"]
            print(f"chains past 10%, consecutive / {name}: {ratio:.2f}x")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
