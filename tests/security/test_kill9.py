"""kill -9 at random instants of ``partition -o`` and ``profile -o``: afterwards the output is
the old complete one or the new complete one, and the next run succeeds and leaves no
temporaries.

Each trial forks the CLI (``edgepart.cli.main`` in a child process, imports already done, so
the instants fall in the command's own work rather than in interpreter start-up) and sends
SIGKILL after a delay drawn uniformly from [0, 1.2 x a complete run's duration]. The number of
trials per command is ``EDGEPART_KILL_TRIALS`` (default 12 in CI; 100 for the acceptance
figures in docs/security.md); the counts of outcomes are printed (``pytest -s``).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from _kill import fork_cli, preload, wait_or_kill
from sec_helpers import ROOT

from edgepart.bundle import load_bundle
from edgepart.cost.table import load_table

pytestmark = pytest.mark.slow
TRIALS = int(os.environ.get("EDGEPART_KILL_TRIALS", "12"))  # 100 for the acceptance run


def _run(args: list[str]) -> int:
    return wait_or_kill(fork_cli(args), None)


def _killed_at(args: list[str], delay: float) -> int:
    return wait_or_kill(fork_cli(args), delay)


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _duration(args: list[str]) -> float:
    times = []
    for _ in range(3):
        t = time.monotonic()
        assert _run(args) == 0
        times.append(time.monotonic() - t)
    return sorted(times)[1]


def test_kill9_during_partition(tmp_path, corpus):
    preload("edgepart.api.placement")
    parent = tmp_path / "work"
    parent.mkdir()
    out = parent / "out"
    models = {"old": corpus["cond"], "new": corpus["mobilenet_v2"]}
    refs = {}
    for label, model in models.items():
        assert _run(["partition", str(model), "--profile", "pixel8", "-o", str(out)]) == 0
        refs[label] = _snapshot(out)
    assert refs["old"] != refs["new"]
    args = {
        k: ["partition", str(m), "--profile", "pixel8", "-o", str(out)] for k, m in models.items()
    }
    span = 1.2 * _duration(args["new"])
    rng = random.Random(17)
    counts: Counter[str] = Counter()
    current = "new"
    for k in range(TRIALS):
        target = "old" if current == "new" else "new"
        code = _killed_at(args[target], rng.uniform(0, span))
        counts["killed" if code == -signal.SIGKILL else f"finished {code}"] += 1
        snap = _snapshot(out)  # OUT is there, complete, and one of the two bundles
        found = [k for k, ref in refs.items() if snap == ref]
        assert found, sorted(snap)
        load_bundle(out)
        counts[f"{'old' if found[0] != target else 'new'} at OUT"] += 1
        assert _run(args[target]) == 0  # the next run succeeds ...
        assert _snapshot(out) == refs[target]
        assert sorted(os.listdir(parent)) == ["out"]  # ... and no temporary survives it
        current = target
        print(f"trial {k + 1}: {dict(counts)}", flush=True)
    print(f"\npartition -o: {TRIALS} trials over [0, {span:.2f} s]: {dict(counts)}")
    # most instants fall inside the command; the machine's load moves durations, hence 1/4
    assert counts["killed"] >= TRIALS // 4


def _models_of(path: Path) -> str:
    doc = json.loads(path.read_text())
    return json.dumps([p["models"] for p in doc["processors"].values()])


def test_kill9_during_profile(tmp_path, corpus):
    preload("edgepart.api.profiling")
    parent = tmp_path / "work"
    parent.mkdir()
    out = parent / "table.json"
    models = {"old": corpus["cond"], "new": corpus["while_loop"]}
    # a 3-second budget: the kill instants scale with a complete run, so a short one crosses
    # the same phases (measuring, writing the table) in half the test's time
    args = {
        k: ["profile", str(m), "-o", str(out), "--budget", "0.05", "--no-progress"]
        for k, m in models.items()
    }
    span = 1.2 * _duration(args["new"])
    rng = random.Random(18)
    counts: Counter[str] = Counter()
    current = "new"
    for k in range(TRIALS):
        target = "old" if current == "new" else "new"
        before = out.read_bytes()
        code = _killed_at(args[target], rng.uniform(0, span))
        counts["killed" if code == -signal.SIGKILL else f"finished {code}"] += 1
        after = out.read_bytes()
        if after == before:
            counts["old at OUT"] += 1
        else:  # a complete new table: it loads, and names the new model
            load_table(out)
            assert models[target].name in _models_of(out)
            counts["new at OUT"] += 1
        load_table(out)
        assert _run(args[target]) == 0
        load_table(out)
        assert models[target].name in _models_of(out)
        assert sorted(os.listdir(parent)) == ["table.json"]
        current = target
        print(f"trial {k + 1}: {dict(counts)}", flush=True)
    print(f"\nprofile -o: {TRIALS} trials over [0, {span:.2f} s]: {dict(counts)}")
    # most instants fall inside the command; the machine's load moves durations, hence 1/4
    assert counts["killed"] >= TRIALS // 4


def _spawn_children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (d / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"spawn_main" in cmd:
            out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_killing_profile_ends_its_litert_child(tmp_path, corpus):
    """The child process running LiteRT for ``profile`` dies with it (it was left running)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "edgepart",
            "profile",
            str(corpus["cond"]),
            "--budget",
            "30",
            "-o",
            str(tmp_path / "t.json"),
            "--no-progress",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        children: list[int] = []
        while not children and time.monotonic() < deadline and proc.poll() is None:
            children = _spawn_children(proc.pid)
            time.sleep(0.05)
        assert children, "profile never started its LiteRT child"
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 30
    while any(_alive(c) for c in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(c) for c in children)
    assert not (tmp_path / "t.json").exists()
