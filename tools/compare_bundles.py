#!/usr/bin/env python3
"""Compare the bundles two commits write, byte for byte, for every corpus model and profile.

A refactoring must not change what edgepart writes. This script checks out a base commit in a
temporary git worktree (its C accelerators built in place), then runs
``edgepart partition MODEL --profile PROFILE -o OUT`` with the base tree and with the working
tree for every corpus model (``tools/build_corpus.py``, the default set plus any ``--model``)
under every shipped device profile (``device_profiles/*.yaml``), and compares every file of the
two bundles. A pair where both trees refuse the model with the same one-line error counts as
equal too (the error text is compared).

    python tools/compare_bundles.py                    # against HEAD~1
    python tools/compare_bundles.py --base 2ceb7a3     # against a given commit
    python tools/compare_bundles.py --model resnet50   # add on-demand corpus models

Exit status 0 when every pair is identical, 1 otherwise. Like ``build_corpus.py`` it imports
nothing from ``edgepart``: each side runs in its own process with its own tree on
``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import build_corpus

REPO = Path(__file__).resolve().parent.parent


def _tree_files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _partition(tree: Path, model: Path, profile: str, out: Path) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, "-m", "edgepart", "partition", str(model), "--profile", profile]
    proc = subprocess.run(
        [*cmd, "-o", str(out)], cwd=tree, env=env, capture_output=True, text=True, timeout=900
    )
    err = proc.stderr.strip().splitlines()
    return proc.returncode, err[-1] if err else ""


def _compare(base: Path, head: Path, model: Path, profile: str, work: Path) -> tuple[str, str]:
    name = f"{model.stem}@{profile}"
    a, b = work / "base" / name, work / "head" / name
    ra, ea = _partition(base, model, profile, a)
    rb, eb = _partition(head, model, profile, b)
    if ra != rb:
        return name, f"DIFFERENT exit status: base {ra} ({ea}), head {rb} ({eb})"
    if ra != 0:
        same = ea == eb
        return name, ("same error: " if same else "DIFFERENT errors: ") + f"{ea} | {eb}"
    fa, fb = _tree_files(a), _tree_files(b)
    if fa.keys() != fb.keys():
        return name, f"DIFFERENT file sets: {sorted(fa.keys() ^ fb.keys())}"
    diff = [f for f in fa if fa[f] != fb[f]]
    if diff:
        return name, f"DIFFERENT bytes in {diff}"
    return name, f"identical ({len(fa)} files)"


@contextlib.contextmanager
def base_worktree(base: str, where: Path) -> Iterator[Path]:
    """A git worktree of commit ``base`` under ``where``, C accelerators built in place; removed
    on exit."""
    tree = where / "base-tree"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), base],
        check=True,
        capture_output=True,
    )
    try:
        subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
            cwd=tree,
            check=True,
            capture_output=True,
        )
        yield tree
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
            capture_output=True,
        )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="HEAD~1", help="commit to compare with (default HEAD~1)")
    ap.add_argument("--model", action="append", default=[], help="add an on-demand corpus model")
    ap.add_argument("--jobs", type=int, default=2, help="pairs compared at once (default 2)")
    args = ap.parse_args(argv)
    models = [*build_corpus.default_names(), *args.model]
    paths = [build_corpus.ensure(m) for m in models]
    profiles = sorted(p.stem for p in (REPO / "device_profiles").glob("*.yaml"))
    with tempfile.TemporaryDirectory(prefix="edgepart-compare-") as tmp:
        work = Path(tmp)
        with base_worktree(args.base, work) as base:
            jobs = [(m, p) for m in paths for p in profiles]
            with ThreadPoolExecutor(args.jobs) as pool:
                results = list(pool.map(lambda j: _compare(base, REPO, *j, work), jobs))
    bad = 0
    for name, verdict in results:
        print(f"{name:45s} {verdict}")
        bad += verdict.startswith("DIFFERENT")
    same = len(results) - bad
    print(f"{same} of {len(results)} model x profile pairs identical to {args.base}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
