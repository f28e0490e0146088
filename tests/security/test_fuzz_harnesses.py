"""A short smoke run of every fuzz harness in ``fuzz/`` (the long runs: docs/security.md).

Each harness runs under atheris for a few dozen mutated inputs after its seeds; it must end
cleanly (libFuzzer's ``Done N runs``), so a crash, a disagreement between the reader's paths,
a non-fixed-point write, a hang over 5 s or a memory blowup fails the test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from sec_helpers import ROOT

pytest.importorskip("atheris")

HARNESSES = ("reader", "writer", "yaml", "costgraph", "bundle")


@pytest.mark.parametrize("name", HARNESSES)
def test_harness_smoke_run(name, tmp_path, corpus_dir):
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "EDGEPART_CORPUS": str(corpus_dir)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fuzz.run",
            name,
            "-runs=40",
            "-seed=1",
            f"-artifact_prefix={tmp_path}/",
            "--corpus",
            str(tmp_path / "corpus"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    done = re.search(r"Done (\d+) runs", proc.stderr)
    assert done and int(done.group(1)) >= 40, proc.stderr[-2000:]  # seeds count too
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("timeout-*"))
    # the seeds were found and run (libFuzzer counts them before mutating)
    assert re.search(r"INFO:\s+\d+ files found", proc.stderr), proc.stderr[-2000:]
