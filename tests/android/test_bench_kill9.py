"""kill -9 at random instants of ``edgepart bench --adb --resume DIR`` (the emulated phone of
``adb_emulator.py``, the real adb server): afterwards ``results.json`` is absent (killed before
the first run finished) or a complete document whose finished runs have their files, and the
next ``--resume`` succeeds, runs only what is missing and leaves no temporary.

The CLI is forked (imports done), killed after a delay drawn uniformly from [0, 1.2 x a complete
run's duration]; ``EDGEPART_KILL_TRIALS`` trials (default 12 in CI, 100 for the acceptance
figures; slow).
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from _kill import fork_cli, wait_or_kill
from adb_fixtures import EmulatedDevice
from bench_helpers import RUNS, adb_args

pytestmark = pytest.mark.slow
TRIALS = int(os.environ.get("EDGEPART_KILL_TRIALS", "12"))  # 100 for the acceptance run


def _temporaries(d: Path) -> list[str]:
    return [str(p) for p in d.rglob("*") if ".edgepart-" in p.name]


def _check_results(res: Path) -> str:
    results = res / "results.json"
    if not results.exists():
        return "no results yet"
    doc = json.loads(results.read_text())  # complete JSON, never a torn write
    ok = [r for r in doc["runs"].values() if r.get("status") == "ok"]
    for r in ok:
        for v in r.values():
            if isinstance(v, str) and v.startswith("runs/"):
                assert (res / v).is_file(), v
    return f"{len(ok)} run(s) kept"


def test_kill9_during_bench_resume(env: EmulatedDevice, model: Path, tmp_path: Path) -> None:
    def args(res: Path) -> list[str]:
        delegates = ("--delegate", "cpu", "--delegate", "xnnpack")
        return adb_args("bench", model, *RUNS, *delegates, "--resume", str(res))

    t = time.monotonic()
    assert wait_or_kill(fork_cli(args(tmp_path / "full")), None) == 0
    span = 1.2 * (time.monotonic() - t)
    rng = random.Random(19)
    counts: Counter[str] = Counter()
    for k in range(TRIALS):
        res = tmp_path / f"res{k}"
        code = wait_or_kill(fork_cli(args(res)), rng.uniform(0, span))
        counts["killed" if code == -signal.SIGKILL else f"finished {code}"] += 1
        counts[_check_results(res)] += 1
        assert wait_or_kill(fork_cli(args(res)), None) == 0  # the next --resume succeeds
        doc = json.loads((res / "results.json").read_text())
        assert sorted(r["status"] for r in doc["runs"].values()) == ["ok", "ok"]
        assert _temporaries(res) == []
        print(f"trial {k + 1}: {dict(counts)}", flush=True)
    print(f"\nbench --resume: {TRIALS} trials over [0, {span:.2f} s]: {dict(counts)}")
    # most instants fall inside the command; the machine's load moves durations, hence 1/4
    assert counts["killed"] >= TRIALS // 4
