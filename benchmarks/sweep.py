"""The sweep: every corpus and real-model corpus model through every command under every shipped
device profile, as a user runs them, with a timeout each.

Per model: ``inspect``; per profile ``inspect --profile``, ``roofline``, ``partition`` (latency
and throughput objectives, each writing a bundle), ``plan-memory`` of the latency bundle and
``run --random --verify`` of both bundles; once, ``plan-memory`` of the model and a host
``profile -o``. Models with a dynamic input get the sizes the real-model manifest runs them at
(``--input-shape``, "shapes given where needed"); the seeded corpus runs at its stored sizes.
Commands that need a bundle whose ``partition`` ended with an expected error are skipped.
Each command is ``edgepart.cli.main`` in a child forked from a helper that has the CLI and
the modules its commands load imported (``cli_forks.py``): a third of a ``python -m
edgepart`` command's time here is imports, and the sweep runs hundreds of them.

Each result is one of:

* ``ok``: exit status 0 (and, for ``run --verify``, outputs bit-identical to the source model);
* ``expected``: exit status 2 (or 1 from a failed verification is *not* expected) with exactly
  one ``edgepart: error:`` line and no traceback; the line is the reason, summarized per command;
* ``failure``: a traceback, any other exit status, more than one error line, a timeout, or a
  ``run --verify`` whose outputs are not bit-identical.

Acceptance (issue 19): zero failures. The script prints the table (counts per command and the
expected errors with their reasons) and writes every result as JSON lines. Usage::

    python benchmarks/sweep.py [--jobs 2] [--timeout 600] [--out sweep.jsonl] [--models a,b]
        [--subset]   # every model once under one profile, every profile and command once

``tests/realworld/test_sweep.py`` runs the subset in CI; the full product is this script's.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

import build_corpus  # noqa: E402  (tools/ on sys.path)
import real_models  # noqa: E402
from cli_forks import CliForks  # noqa: E402  (this directory)

PROFILES = (
    "pixel8",
    "coral_devboard",
    "galaxy_s24_ultra",
    "x86_host",
    "raspberry_pi5",
    "vivo_x100_pro",
)
COMMANDS = (
    "inspect",
    "inspect --profile",
    "roofline",
    "partition",
    "partition --objective throughput",
    "plan-memory (model)",
    "plan-memory (bundle)",
    "run --verify",
    "profile",
)


@dataclass
class Step:
    """One CLI command of the sweep."""

    model: str
    command: str
    profile: str | None
    argv: list[str]
    needs: str | None = None  # the bundle directory it reads
    makes: str | None = None  # the bundle directory it writes


@dataclass
class Result:
    model: str
    command: str
    profile: str | None
    argv: list[str]
    status: str
    rc: int | None
    seconds: float
    reason: str = ""
    stderr_tail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def models(names: Sequence[str] | None = None) -> dict[str, tuple[Path, dict[str, list[int]]]]:
    """name -> (path, input shapes to give): the default seeded corpus and every real model."""
    out: dict[str, tuple[Path, dict[str, list[int]]]] = {}
    for name, path in build_corpus.ensure_all(None, build_corpus.default_out_dir()).items():
        out[name] = (Path(path), {})
    paths = real_models.ensure_all(None, real_models.default_out_dir())
    manifest = real_models.load_manifest(real_models.default_out_dir())["models"]
    for name, path in paths.items():
        entry = manifest[name]
        dynamic = "dynamic_input" in entry.get("features", [])
        shapes = dict(entry.get("input_shapes") or {}) if dynamic else {}
        out[name] = (Path(path), shapes)
    if names:
        missing = [n for n in names if n not in out]
        if missing:
            known = ", ".join(sorted(out))
            print(f"sweep: unknown model(s) {', '.join(missing)}; known: {known}", file=sys.stderr)
            raise SystemExit(2)
        out = {n: out[n] for n in names}
    return out


def _shape_args(shapes: dict[str, list[int]]) -> list[str]:
    args: list[str] = []
    for name, dims in sorted(shapes.items()):
        args += ["--input-shape", f"{name}={','.join(str(d) for d in dims)}"]
    return args


def steps(
    name: str,
    path: Path,
    shapes: dict[str, list[int]],
    work: Path,
    profiles: Sequence[str] = PROFILES,
    *,
    subset: int | None = None,
) -> list[Step]:
    """The commands of one model: the full product, or with ``subset`` (the model's position
    in the list) the CI subset: ``partition`` under one profile (rotating through the profiles)
    with one objective (alternating) and ``run --verify`` of that bundle, plus two of the other
    six commands (rotating), so that every model, profile and command appears."""
    m, sh = str(path), _shape_args(shapes)

    def profile_profile(p: str) -> list[Step]:
        return [
            Step(name, "inspect --profile", p, ["inspect", m, "--profile", p, *sh]),
            Step(name, "roofline", p, ["roofline", m, "--profile", p, *sh]),
        ]

    def bundle(p: str, obj: str, memory: bool) -> list[Step]:
        b = str(work / name / f"{p}-{obj}")
        label = "partition" if obj == "latency" else "partition --objective throughput"
        argv = ["partition", m, "--profile", p, "--objective", obj, "-o", b, *sh]
        out = [Step(name, label, p, argv, makes=b)]
        if memory:
            out.append(
                Step(
                    name,
                    "plan-memory (bundle)",
                    p,
                    ["plan-memory", b, "--strategy", "tflite"],
                    needs=b,
                )
            )
        out.append(Step(name, "run --verify", p, ["run", b, "--random", "--verify"], needs=b))
        return out

    model_memory = Step(
        name, "plan-memory (model)", None, ["plan-memory", m, "--strategy", "tflite", *sh]
    )
    table = str(work / name / "table.json")
    profile = Step(
        name,
        "profile",
        None,
        ["profile", m, "--no-progress", "--budget", "0.002", "--no-fusion", "-o", table, *sh],
    )
    inspect = Step(name, "inspect", None, ["inspect", m, *sh])
    if subset is None:
        out = [inspect]
        for p in profiles:
            out += profile_profile(p)
            out += bundle(p, "latency", True)
            out += bundle(p, "throughput", False)
        return [*out, model_memory, profile]
    p = profiles[subset % len(profiles)]
    obj = ("latency", "throughput")[subset % 2]
    picks = {
        (
            "inspect",
            "inspect --profile",
            "roofline",
            "plan-memory (model)",
            "plan-memory (bundle)",
            "profile",
        )[(2 * subset + j) % 6]
        for j in (0, 1)
    }
    out = [inspect] if "inspect" in picks else []
    out += [s for s in profile_profile(p) if s.command in picks]
    out += bundle(p, obj, "plan-memory (bundle)" in picks)
    if "plan-memory (model)" in picks:
        out.append(model_memory)
    if "profile" in picks:
        out.append(profile)
    return out


_ERROR = "edgepart: error:"


def classify(
    step: Step, rc: int | None, stdout: str, stderr: str, timed_out: bool
) -> tuple[str, str]:
    """(status, reason) of one finished command (see the module docstring)."""
    if timed_out:
        return "failure", "timeout"
    if "Traceback (most recent call last)" in stderr:
        last = [ln for ln in stderr.strip().splitlines() if ln.strip()][-1:] or ["?"]
        return "failure", f"traceback: {last[0][:200]}"
    errors = [ln for ln in stderr.splitlines() if ln.startswith(_ERROR)]
    if rc == 0:
        if step.command == "run --verify" and "bit-identical" not in stdout:
            return "failure", "outputs not bit-identical to the source model"
        return "ok", ""
    if rc == 2 and len(errors) == 1:
        return "expected", errors[0][len(_ERROR) :].strip()
    if rc == 1 and step.command == "run --verify":
        return "failure", "verification failed: " + " ".join(stderr.split())[-200:]
    return "failure", f"exit {rc}, {len(errors)} error line(s): {' '.join(stderr.split())[-200:]}"


def run_step(step: Step, timeout: float, forks: CliForks, scratch: Path) -> Result:
    """One command, forked from ``forks`` (see ``cli_forks``), its output read back."""
    start = time.monotonic()
    out_path, err_path = scratch / "stdout", scratch / "stderr"
    rc, timed_out = forks.run(step.argv, out_path, err_path, timeout)
    out = out_path.read_text(errors="replace")
    err = err_path.read_text(errors="replace")
    status, reason = classify(step, rc, out, err, timed_out)
    return Result(
        step.model,
        step.command,
        step.profile,
        step.argv,
        status,
        None if timed_out else rc,
        round(time.monotonic() - start, 2),
        reason,
        err[-1500:],
    )


def sweep(
    chosen: dict[str, tuple[Path, dict[str, list[int]]]],
    work: Path,
    *,
    jobs: int = 2,
    timeout: float = 600.0,
    subset: bool = False,
    sink: Any = None,
    progress: bool = False,
) -> list[Result]:
    """Run every model's steps (models in parallel, a model's steps in order), each command
    in a child forked from one of ``jobs`` helpers that have the CLI imported."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    helpers: queue.Queue[tuple[CliForks, Path]] = queue.Queue()
    scratch = Path(tempfile.mkdtemp(prefix="edgepart-sweep-out-"))
    for j in range(jobs):
        (scratch / str(j)).mkdir()
        helpers.put((CliForks(env), scratch / str(j)))

    def one(item: tuple[int, str]) -> list[Result]:
        forks, out_dir = helpers.get()
        try:
            return steps_of(item, forks, out_dir)
        finally:
            helpers.put((forks, out_dir))

    def steps_of(item: tuple[int, str], forks: CliForks, out_dir: Path) -> list[Result]:
        k, name = item
        path, shapes = chosen[name]
        done: dict[str, Result] = {}
        results = []
        for st in steps(name, path, shapes, work, subset=k if subset else None):
            made = done.get(st.needs) if st.needs else None
            if st.needs and (made is None or made.status != "ok"):
                why = made.reason if made is not None else "no bundle"
                res = Result(
                    st.model,
                    st.command,
                    st.profile,
                    st.argv,
                    "skipped",
                    None,
                    0.0,
                    f"no bundle: {why}",
                )
            else:
                res = run_step(st, timeout, forks, out_dir)
            if st.makes:
                done[st.makes] = res
            results.append(res)
            if sink is not None:
                sink(res)
        if progress:
            print(f"  {name}: {Counter(r.status for r in results)}", file=sys.stderr, flush=True)
        return results

    try:
        with ThreadPoolExecutor(jobs) as pool:
            batches = list(pool.map(one, enumerate(chosen)))
    finally:
        while not helpers.empty():
            helpers.get()[0].close()
        shutil.rmtree(scratch, ignore_errors=True)
    return [r for b in batches for r in b]


def _reason_key(reason: str) -> str:
    """Group reasons across models: numbers and paths replaced."""
    r = re.sub(r"/[^\s:;,]+", "<path>", reason)
    r = re.sub(r"'[^']*'", "'..'", r)
    r = re.sub(r"\d[\d,.]*", "N", r)
    return r[:150]


def table(results: Iterable[Result]) -> str:
    """Counts per command, then the expected errors and failures with their reasons."""
    results = list(results)
    cols = ("ok", "expected", "failure", "skipped")
    lines = [f"{'command':<34} " + " ".join(f"{c:>9}" for c in cols) + f" {'total':>7}"]
    by = defaultdict(Counter)
    for r in results:
        by[r.command][r.status] += 1
    for cmd in COMMANDS:
        if cmd in by:
            c = by[cmd]
            lines.append(
                f"{cmd:<34} " + " ".join(f"{c[s]:>9}" for s in cols) + f" {sum(c.values()):>7}"
            )
    tot = Counter(r.status for r in results)
    lines.append(f"{'all':<34} " + " ".join(f"{tot[s]:>9}" for s in cols) + f" {len(results):>7}")
    codes = Counter(r.rc for r in results if r.rc is not None)
    lines.append(
        "exit codes: "
        + ", ".join(f"{k}: {v}" for k, v in sorted(codes.items()))
        + f"; timeouts: {sum(r.reason == 'timeout' for r in results)}"
        + f"; tracebacks: {sum(r.reason.startswith('traceback') for r in results)}"
    )
    for status in ("expected", "failure", "skipped"):
        groups: dict[tuple[str, str], list[str]] = defaultdict(list)
        for r in results:
            if r.status == status:
                groups[(r.command, _reason_key(r.reason))].append(
                    r.model + (f"@{r.profile}" if r.profile else "")
                )
        if groups:
            lines.append("")
            lines.append(f"{status}:")
            for (cmd, reason), who in sorted(groups.items(), key=lambda kv: -len(kv[1])):
                shown = ", ".join(sorted(set(who))[:6]) + (" ..." if len(set(who)) > 6 else "")
                lines.append(f"  {len(who):>4} x {cmd}: {reason}  [{shown}]")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=2, help="models run at once (default 2)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per command")
    ap.add_argument("--out", type=Path, default=Path("sweep.jsonl"), help="results (JSON lines)")
    ap.add_argument("--models", help="comma-separated model names (default: all)")
    ap.add_argument("--subset", action="store_true", help="the CI subset (see the docstring)")
    ap.add_argument("--keep", type=Path, help="keep the bundles in this directory")
    args = ap.parse_args(argv)
    chosen = models(args.models.split(",") if args.models else None)
    work = args.keep or Path(tempfile.mkdtemp(prefix="edgepart-sweep-"))
    t0 = time.monotonic()
    with args.out.open("w") as f:

        def sink(res: Result) -> None:
            f.write(json.dumps(asdict(res)) + "\n")
            f.flush()

        results = sweep(
            chosen,
            work,
            jobs=args.jobs,
            timeout=args.timeout,
            subset=args.subset,
            sink=sink,
            progress=True,
        )
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"sweep of {len(chosen)} models x {len(PROFILES)} profiles: {len(results)} commands in "
        f"{time.monotonic() - t0:.0f} s ({args.jobs} at a time, timeout {args.timeout:g} s)"
    )
    print(table(results))
    return 1 if any(r.status == "failure" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
