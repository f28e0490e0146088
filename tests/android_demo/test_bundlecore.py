"""The Android demo's bundle core (plain Java) against real edgepart bundles, on the JVM.

``android_demo/bundlecore/run_tests.sh`` compiles the dependency-free Java bundle core with
``javac --release 8``, writes real bundles with edgepart plus the Python side's reference data
(routing from ``edgepart.runtime.routing``, a real LiteRT run, the loader's error messages for
damaged bundles) and runs the Java test runner against them. The APK itself cannot be built
here (no Android SDK, no Google Maven): see ``android_demo/README.md``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "android_demo"
SCRIPT = DEMO / "bundlecore" / "run_tests.sh"

pytestmark = pytest.mark.skipif(
    shutil.which("javac") is None or shutil.which("java") is None,
    reason="javac/java not found: the Android demo's bundle core is Java (install a JDK >= 11)",
)


def test_bundlecore_jvm_suite() -> None:
    # the fixtures are made by this tree's edgepart, not whichever one is installed
    repo = str(DEMO.parent)
    path = os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": path}
    proc = subprocess.run(
        ["bash", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=600
    )
    out = proc.stdout + proc.stderr
    summary = re.findall(r"^(\d+) passed, (\d+) failed$", proc.stdout, re.MULTILINE)
    assert summary, f"the Java test runner printed no summary:\n{out[-3000:]}"
    passed, failed = (int(x) for x in summary[-1])
    failures = "\n".join(line for line in proc.stdout.splitlines() if line.startswith("FAIL"))
    assert failed == 0, f"{failed} Java bundle-core tests failed:\n{failures}"
    assert proc.returncode == 0, out[-3000:]
    # every fixture bundle, every damaged case and the unit tests ran (not a truncated run)
    assert passed >= 60, f"only {passed} Java tests ran:\n{out[-3000:]}"
    # the fixtures include partitioner-made bundles of real-model corpus models
    tested = re.findall(r"^fixtures tested: (.*)$", proc.stdout, re.MULTILINE)
    assert tested, out[-3000:]
    want = {f"real_{name}" for name, _, _ in _real_fixtures()}
    assert len(want) >= 4 and want <= set(tested[-1].split()), (want, tested[-1])


def _real_fixtures() -> list[tuple[str, str, dict[str, list[int]]]]:
    """``make_fixtures.REAL``: (real-model corpus name, profile, input sizes)."""
    spec = importlib.util.spec_from_file_location(
        "make_fixtures", DEMO / "bundlecore" / "make_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return list(mod.REAL)


def test_no_build_output_in_the_tree() -> None:
    """Class files and jars are built in a temporary directory, never next to the sources."""
    built = [p for p in DEMO.rglob("*") if p.suffix in {".class", ".jar", ".apk", ".aar"}]
    assert built == []
