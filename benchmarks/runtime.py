#!/usr/bin/env python3
"""Benchmark of the partitioned runtime against LiteRT's own interpreter, in one run.

(a) MobileNetV2 (the corpus ``mobilenet_v2``, 96x96 alpha 0.35, and ``mobilenet_v2_224``) cut
    into 4 contiguous partitions, all on XNNPACK with 1 thread, against the monolithic
    interpreter with 1 thread: median latency ratio (target <= 1.05).
(b) ``resnet50`` (about 0.1 s per 1-thread invoke, so each stage is ~50 ms and the per-input
    hand-off cost, ~0.1 ms, is negligible) and ``mobilenet_v2_224`` (~10 ms, stages ~5 ms)
    cut into 2 stages balanced by measured time (:func:`balanced_cut`: bisection on the cut
    point, both pieces timed interleaved so load changes hit both alike), each stage one
    1-thread interpreter on its own unit, inputs streamed with ``run_stream``: throughput
    against one 1-thread interpreter (target >= 1.8x) and one 2-thread interpreter. Measured
    in the same rounds, to show what the host gave at that moment: the two stage
    interpreters invoked in two threads with no hand-off (the most this split can give; the
    stream's throughput over it is the pipeline's own efficiency), and two whole-model
    interpreters in two threads (2.00 = two free cores). Each round also records how many
    CPUs other processes used (``/proc/stat`` minus this process), printed per round.
(c) predicted against measured latency for each case. The partitioner does not write model
    plans yet, so the predictions come from edgepart's cost model (``edgepart.cost``, roofline
    on the ``x86_host`` profile, which models the CPU with its 2 threads) and are written into
    the bundles exactly as the partitioner will write its own (``PartitionSpec.predicted``,
    ``plan_extra["predicted"]``); they are labelled as such.

Timing loop (``edgepart.runtime.latency.time_calls``): per round, ``warmup`` untimed calls then
``repeat`` timed calls, median per round; rounds alternate which contender goes first and
the figures are the median over rounds of the per-round medians (and of the per-round
ratios). Throughput: per round, stream ``items`` inputs (after a short warm-up stream); the
single interpreters run the same number of sequential invokes. The stream is reported in
steady state (results 2..n over the time from the first result to the last: filling a
2-stage pipeline costs one extra stage time per stream, 1/items of the figure) and end to end
(n over the whole stream). The host has 2 cores and is shared: read ratios, not absolute
times, and read them beside the other processes' CPU use.

Usage: ``python benchmarks/runtime.py [--rounds 15] [--quick] [--json out.json]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import build_corpus  # noqa: E402
from ai_edge_litert.interpreter import Interpreter  # noqa: E402

from edgepart.bundle import PartitionSpec, build_bundle  # noqa: E402
from edgepart.errors import UsageError  # noqa: E402
from edgepart.ir import analysis  # noqa: E402
from edgepart.ir.extract import extract  # noqa: E402
from edgepart.runtime import PartitionedInterpreter  # noqa: E402
from edgepart.runtime.latency import StreamStats, time_calls, time_stream  # noqa: E402
from edgepart.tflite.reader import read_model  # noqa: E402


def cuts_for(model: Any, k: int) -> list[list[int]]:
    """k contiguous pieces of a topological order, as even in op count as extract allows."""
    order = analysis.topological_order(model.main).tolist()
    n = len(order)
    bounds = [0]
    for i in range(1, k):
        target = round(n * i / k)
        for c in sorted(range(bounds[-1] + 1, n), key=lambda c: abs(c - target)):
            try:
                extract(model, order[bounds[-1] : c])
                extract(model, order[c:])
            except UsageError:
                continue
            bounds.append(c)
            break
    bounds.append(n)
    return [order[a:b] for a, b in itertools.pairwise(bounds)]


def predictions(path: Path, pieces: list[list[int]]) -> tuple[list[float], float]:
    """Cost-model estimate per piece (seconds) and for the whole model on the x86_host CPU."""
    from edgepart.cost.hardware import load_hardware
    from edgepart.cost.model import CostModel

    model = read_model(path)
    gc = CostModel(load_hardware("x86_host")).costs(model.main, model)
    per = [gc.partition_latency(p, "cpu").seconds for p in pieces]
    whole = gc.partition_latency(range(model.main.num_ops), "cpu").seconds
    return per, whole


def bundle_with_predictions(path: Path, pieces: list[list[int]], units: list[int]) -> Any:
    per, _ = predictions(path, pieces)
    specs, t = [], 0.0
    for p, u, d in zip(pieces, units, per, strict=True):
        specs.append(
            PartitionSpec(p, unit=u, predicted={"start_s": t, "end_s": t + d, "duration_s": d})
        )
        t += d
    extra = {
        "predicted": {
            "latency_s": t,
            "period_s": max(per),
            "source": "edgepart.cost roofline, x86_host (stand-in for the partitioner's plan)",
        }
    }
    return build_bundle(path, specs, plan_extra=extra)


def feed(it: Any, x: np.ndarray) -> None:
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()


def single(path: Path, threads: int) -> Any:
    it = Interpreter(model_path=str(path), num_threads=threads)
    return it


def case_a(name: str, rounds: int, repeat: int) -> dict[str, Any]:
    path = build_corpus.ensure(name)
    model = read_model(path)
    pieces = cuts_for(model, 4)
    bundle = bundle_with_predictions(path, pieces, [0, 0, 0, 0])
    mono = single(path, 1)
    part = PartitionedInterpreter(bundle=bundle, num_threads=1)
    x = (
        np.random.default_rng(0)
        .standard_normal([int(d) for d in part.get_input_details()[0]["shape"]])
        .astype(np.float32)
    )
    feed(mono, x)
    feed(part, x)
    assert np.array_equal(
        part.get_tensor(part.get_output_details()[0]["index"]),
        mono.get_tensor(mono.get_output_details()[0]["index"]),
    )
    meds: dict[str, list[float]] = {"mono": [], "part": []}
    ratios = []
    for r in range(rounds):
        order = [("mono", mono), ("part", part)][:: 1 if r % 2 == 0 else -1]
        got = {}
        for key, it in order:
            got[key] = time_calls(it.invoke, warmup=5, repeat=repeat).median_s
            meds[key].append(got[key])
        ratios.append(got["part"] / got["mono"])
    part_alone = [time_calls(p.invoke, warmup=5, repeat=repeat).median_s for p in part._parts]
    pred = part.plan.predicted or {}
    part.close()
    return {
        "model": name,
        "partitions": [len(p) for p in pieces],
        "mono_median_s": float(np.median(meds["mono"])),
        "partitioned_median_s": float(np.median(meds["part"])),
        "ratio_median": float(np.median(ratios)),
        "ratio_of_medians": float(np.median(meds["part"]) / np.median(meds["mono"])),
        "partition_alone_median_s": part_alone,
        "predicted_latency_s": pred.get("latency_s"),
        "predicted_partition_s": [p.predicted["duration_s"] for p in part.plan.partitions],
    }


class HostCpu:
    """CPU time used by *other* processes while a case runs (``/proc/stat`` minus our own).

    The 1-minute load average lags and counts our own threads; this is the number of CPUs
    other work took from us during the measured interval (Linux only, else ``None``).
    """

    def __init__(self) -> None:
        self.start = self._sample()

    @staticmethod
    def _sample() -> tuple[float, float, float] | None:
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except OSError:
            return None
        hz = os.sysconf("SC_CLK_TCK")
        busy = (sum(fields[:8]) - fields[3] - fields[4]) / hz  # all but idle and iowait
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return time.perf_counter(), busy, ru.ru_utime + ru.ru_stime

    def others(self) -> float | None:
        """Average number of CPUs busy with other processes since construction."""
        end = self._sample()
        if self.start is None or end is None or end[0] <= self.start[0]:
            return None
        wall = end[0] - self.start[0]
        return max(0.0, (end[1] - self.start[1]) - (end[2] - self.start[2])) / wall


def stage_times(path: Path, pieces: list[list[int]], x: np.ndarray, repeat: int) -> list[float]:
    """Fastest 1-thread time of each piece, measured interleaved (s0, s1, s0, s1, ...).

    Interleaving makes a change in host load hit both pieces alike; the minimum, not the
    median, because on a shared host other work only ever adds time, so the fastest run is
    the best estimate of a piece's own cost (medians under load misled the bisection)."""
    pi = PartitionedInterpreter(
        bundle=build_bundle(path, [PartitionSpec(p) for p in pieces]), num_threads=1
    )
    feed(pi, x)
    parts = pi._parts
    clock = time.perf_counter
    for _ in range(2):
        for it in parts:
            it.invoke()
    samples: list[list[float]] = [[] for _ in parts]
    for _ in range(repeat):
        for it, got in zip(parts, samples, strict=True):
            t0 = clock()
            it.invoke()
            got.append(clock() - t0)
    pi.close()
    return [float(np.min(v)) for v in samples]


def balanced_cut(
    path: Path, x: np.ndarray, repeat: int
) -> tuple[list[list[int]], list[float], list[tuple[int, list[float]]]]:
    """Two pieces of a topological order whose measured 1-thread times are closest.

    Bisection on the cut point by the sign of ``t0 - t1`` (the first piece only grows with
    the cut), then the cuts up to 2 ops either side of the best are measured too; the cut
    with the smallest slower stage wins. Returns the pieces, their times and every cut
    measured.
    """
    model = read_model(path)
    order = analysis.topological_order(model.main).tolist()
    n = len(order)
    seen: dict[int, list[float] | None] = {}

    def measure(c: int) -> list[float] | None:
        if c not in seen:
            try:
                seen[c] = stage_times(path, [order[:c], order[c:]], x, repeat)
            except UsageError:  # not a cut extract accepts
                seen[c] = None
        return seen[c]

    lo, hi = 1, n - 1
    while lo <= hi:
        c = (lo + hi) // 2
        t = measure(c)
        if t is None or t[0] < t[1]:
            lo = c + 1
        else:
            hi = c - 1
    valid = {c: t for c, t in seen.items() if t is not None}
    best = min(valid, key=lambda c: max(valid[c]))
    for c in (best - 2, best - 1, best + 1, best + 2):
        if 0 < c < n:
            measure(c)
    valid = {c: t for c, t in seen.items() if t is not None}
    best = min(valid, key=lambda c: max(valid[c]))
    return [order[:best], order[best:]], valid[best], sorted(valid.items())


def _threads(fns: list[Any]) -> float:
    """Run each function in its own thread; the wall time until all are done."""
    ths = [threading.Thread(target=f) for f in fns]
    t0 = time.perf_counter()
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    return time.perf_counter() - t0


def case_b(name: str, rounds: int, max_items: int) -> dict[str, Any]:
    path = build_corpus.ensure(name)
    one = single(path, 1)
    x = (
        np.random.default_rng(2)
        .standard_normal([int(d) for d in one.get_input_details()[0]["shape"]])
        .astype(np.float32)
    )
    feed(one, x)
    whole_s = time_calls(one.invoke, warmup=1, repeat=5).median_s
    # about 2.5 s of sequential work per contender and round, and per cut timed (a resnet50
    # op moves ~5 ms between the stages, so the timing must resolve a few percent)
    items = int(min(max_items, max(24, round(2.5 / whole_s))))
    cut_repeat = int(min(40, max(15, round(2.5 / whole_s))))
    pieces, stage_s, tried = balanced_cut(path, x, cut_repeat)
    bundle = bundle_with_predictions(path, pieces, [0, 1])
    part = PartitionedInterpreter(bundle=bundle, num_threads=1)
    two = single(path, 2)
    for it in (two, part):
        feed(it, x)
    want = one.get_tensor(one.get_output_details()[0]["index"])
    stream_items = [[x]] * items
    stats: list[StreamStats] = []

    def stream() -> float:
        for _ in part.run_stream(stream_items[:3]):
            pass
        last: list[Any] = []

        def keep_last() -> Any:
            for y in part.run_stream(stream_items):
                last[:] = [y]
                yield y

        st = time_stream(keep_last())
        assert st.n == items and np.array_equal(last[0][0], want)
        stats.append(st)
        return st.throughput_per_s

    def sequential(it: Any) -> float:
        for _ in range(2):
            it.invoke()
        t0 = time.perf_counter()
        for _ in range(items):
            it.invoke()
        return items / (time.perf_counter() - t0)

    stages = part._parts
    conc_s: list[list[float]] = [[], []]

    def stages_concurrent() -> float:
        """The two stage interpreters invoked in two threads with no hand-off between them:
        what this split can give on the cores the host gives right now."""

        def loop(k: int) -> None:
            clock, it = time.perf_counter, stages[k]
            for _ in range(items):
                t0 = clock()
                it.invoke()
                conc_s[k].append(clock() - t0)

        return items / _threads([lambda: loop(0), lambda: loop(1)])

    twins = [single(path, 1), single(path, 1)]
    for it in twins:
        feed(it, x)

    def ceiling() -> float:
        """Two whole-model interpreters in two threads: what 2 cores give right now."""
        half = items // 2
        return (
            2 * half / _threads([lambda it=it: [it.invoke() for _ in range(half)] for it in twins])
        )

    jobs = [
        ("stream", stream),
        ("one", lambda: sequential(one)),
        ("two", lambda: sequential(two)),
        ("stages", stages_concurrent),
        ("ceiling", ceiling),
    ]
    tp: dict[str, list[float]] = {k: [] for k, _ in jobs}
    others: list[float | None] = []
    for r in range(rounds):
        cpu = HostCpu()
        for key, fn in jobs[r % len(jobs) :] + jobs[: r % len(jobs)]:
            tp[key].append(fn())
        others.append(cpu.others())
    tp["steady"] = [st.steady_per_s or 0.0 for st in stats]
    pred = part.plan.predicted or {}
    part.close()
    one_a = np.array(tp["one"])

    def per_round(key: str) -> list[float]:
        return [float(v) for v in np.array(tp[key]) / one_a]

    med = {k: float(np.median(v)) for k, v in tp.items()}
    return {
        "model": name,
        "items_per_round": items,
        "stage_ops": [len(p) for p in pieces],
        "stage_alone_min_s": stage_s,
        "cuts_measured": [{"cut": c, "stage_s": t} for c, t in tried],
        "stage_concurrent_median_s": [float(np.median(v)) for v in conc_s],
        "whole_1thread_median_s": whole_s,
        "throughput_per_s": med,
        "ratio_vs_1thread_per_round": {k: per_round(k) for k in tp if k != "one"},
        "ratio_vs_1thread": {k: float(np.median(per_round(k))) for k in tp if k != "one"},
        "stream_vs_2thread": float(np.median(np.array(tp["steady"]) / np.array(tp["two"]))),
        "stream_vs_stages_concurrent": float(
            np.median(np.array(tp["steady"]) / np.array(tp["stages"]))
        ),
        "other_cpus_per_round": others,
        "predicted_period_s": pred.get("period_s"),
        "measured_period_s": 1.0 / med["steady"],
        "predicted_partition_s": [p.predicted["duration_s"] for p in part.plan.partitions],
    }


QUIET_CPUS = 0.25
"""Rounds in which other processes used fewer CPUs than this are summarised separately."""


def print_b(r: dict[str, Any]) -> None:
    ratio = r["ratio_vs_1thread"]
    tput = r["throughput_per_s"]
    print(
        f"  {r['model']}: stages {r['stage_ops']} ops (cut chosen by measured time among "
        f"{len(r['cuts_measured'])} cuts), fastest alone "
        f"{[round(t * 1e3, 2) for t in r['stage_alone_min_s']]} ms, invoked concurrently "
        f"{[round(t * 1e3, 2) for t in r['stage_concurrent_median_s']]} ms; "
        f"{r['items_per_round']} inputs per round"
    )
    print(
        f"    throughput/s: stream {tput['steady']:.2f} steady ({tput['stream']:.2f} end to end), "
        f"one 1-thread interpreter {tput['one']:.2f}, one 2-thread interpreter {tput['two']:.2f}"
    )
    print(
        f"    stream vs 1-thread: {ratio['steady']:.2f}x steady state, {ratio['stream']:.2f}x end "
        f"to end (target >= 1.8; median of per-round ratios); vs 2-thread "
        f"{r['stream_vs_2thread']:.2f}x"
    )
    print(
        f"    what the host gave: the 2 stage interpreters in 2 threads without hand-off "
        f"{ratio['stages']:.2f}x, two whole-model interpreters in 2 threads "
        f"{ratio['ceiling']:.2f}x (2.00 = two free cores); stream / stages-concurrent "
        f"{r['stream_vs_stages_concurrent']:.3f} (the pipeline's own efficiency)"
    )
    others = r["other_cpus_per_round"]
    quiet = [i for i, o in enumerate(others) if o is not None and o < QUIET_CPUS]
    per = r["ratio_vs_1thread_per_round"]
    if quiet:
        qs = {
            k: float(np.median([per[k][i] for i in quiet])) for k in ("steady", "stages", "ceiling")
        }
        print(
            f"    in the {len(quiet)} of {len(others)} rounds where other processes used < "
            f"{QUIET_CPUS} CPUs: stream {qs['steady']:.2f}x (steady), stages concurrently "
            f"{qs['stages']:.2f}x, two whole-model interpreters {qs['ceiling']:.2f}x (medians)"
        )
    else:
        print(f"    no round had other processes under {QUIET_CPUS} CPUs: all figures depressed")
    rows = zip(
        r["other_cpus_per_round"],
        r["ratio_vs_1thread_per_round"]["steady"],
        r["ratio_vs_1thread_per_round"]["stages"],
        r["ratio_vs_1thread_per_round"]["ceiling"],
        strict=True,
    )
    print(
        "    per round: other processes' CPUs | stream/1-thread | stages/1-thread | twins/1-thread"
    )
    for o, s, g, c in rows:
        busy = "?" if o is None else f"{o:.2f}"
        print(f"      {busy:>5} | {s:.2f} | {g:.2f} | {c:.2f}")
    print(
        f"    (c) predicted period {r['predicted_period_s'] * 1e3:.2f} ms (cost model) vs measured "
        f"{r['measured_period_s'] * 1e3:.2f} ms; per stage predicted "
        f"{[round(t * 1e3, 2) for t in r['predicted_partition_s']]} ms"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--repeat", type=int, default=60, help="timed invokes per round")
    ap.add_argument("--items", type=int, default=60, help="most streamed inputs per round")
    ap.add_argument("--quick", action="store_true", help="fewer rounds, small models only")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.repeat, args.items = 5, 30, 30
    print(f"host: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    results: dict[str, Any] = {"a": [], "b": []}
    names = ["mobilenet_v2"] if args.quick else ["mobilenet_v2", "mobilenet_v2_224"]
    print("(a) 4 partitions on XNNPACK (1 thread each) vs the monolithic interpreter (1 thread)")
    for name in names:
        cpu = HostCpu()
        r = case_a(name, args.rounds, args.repeat)
        r["other_cpus"] = cpu.others()
        results["a"].append(r)
        mono_ms, part_ms = r["mono_median_s"] * 1e3, r["partitioned_median_s"] * 1e3
        print(
            f"  {name:<18} partitions {r['partitions']} ops: monolithic "
            f"{mono_ms:.3f} ms, partitioned {part_ms:.3f} ms, ratio {r['ratio_median']:.3f} "
            f"(median of {args.rounds} per-round ratios; target <= 1.05); other processes "
            f"used {fmt_cpus(r['other_cpus'])} CPUs meanwhile"
        )
        alone = ", ".join(f"{t * 1e3:.3f}" for t in r["partition_alone_median_s"])
        pred = ", ".join(f"{t * 1e3:.3f}" for t in r["predicted_partition_s"])
        print(
            f"  {'':<18} (c) predicted {r['predicted_latency_s'] * 1e3:.3f} ms (cost model) vs "
            f"measured {r['partitioned_median_s'] * 1e3:.3f} ms; per partition predicted "
            f"[{pred}] vs measured alone [{alone}] ms"
        )
    b_names = ["mobilenet_v2_224"] if args.quick else ["resnet50", "mobilenet_v2_224"]
    print("(b) 2 balanced pipeline stages, 1 thread each, streamed")
    for name in b_names:
        r = case_b(name, args.rounds, args.items)
        results["b"].append(r)
        print_b(r)
    print(f"host load average {os.getloadavg()[0]:.2f} at the end")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


def fmt_cpus(v: float | None) -> str:
    return "?" if v is None else f"{v:.2f}"


if __name__ == "__main__":
    raise SystemExit(main())
