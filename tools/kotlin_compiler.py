#!/usr/bin/env python3
"""Fetch the Kotlin compiler the Android demo's compile check uses: npm's ``kotlin-compiler``
package (JetBrains' release, with ``bin/kotlinc``), pinned, cached in
``$EDGEPART_KOTLIN_DIR`` or ``~/.cache/edgepart/kotlin-compiler/<version>``.

A cached compiler is never fetched again. Needs ``npm`` to fetch and a JDK (``java``) to run.

As a script: ``python tools/kotlin_compiler.py`` prints the path of ``kotlinc``; as a module
(tests put ``tools/`` on ``sys.path``): ``kotlin_compiler.ensure()``.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

__all__ = ["VERSION", "KotlinCompilerError", "ensure"]

VERSION = "2.4.20"


class KotlinCompilerError(RuntimeError):
    """npm is missing or could not fetch the package."""


def _dir() -> Path:
    base = os.environ.get("EDGEPART_KOTLIN_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "edgepart" / "kotlin-compiler"
    return root / VERSION


def ensure() -> Path:
    """Path of a working ``kotlinc`` of :data:`VERSION`, fetched with npm if not cached."""
    where = _dir()
    kotlinc = where / "node_modules" / "kotlin-compiler" / "bin" / "kotlinc"
    if not kotlinc.is_file():
        npm = shutil.which("npm")
        if npm is None:
            raise KotlinCompilerError(
                "npm not found: install Node.js (apt-get install npm) or set KOTLINC to a kotlinc"
            )
        where.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(where),
                "--no-audit",
                "--no-fund",
                f"kotlin-compiler@{VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if proc.returncode != 0 or not kotlinc.is_file():
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise KotlinCompilerError(f"npm install kotlin-compiler@{VERSION} failed: {tail}")
    for f in kotlinc.parent.iterdir():  # npm does not keep the launchers' execute bits
        if f.suffix not in (".bat", ".js"):
            f.chmod(f.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return kotlinc


if __name__ == "__main__":
    try:
        print(ensure())
    except KotlinCompilerError as err:
        print(f"kotlin_compiler: error: {err}", file=sys.stderr)
        sys.exit(2)
