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


def test_a_harness_launched_by_a_large_process_keeps_its_memory_limit(tmp_path, corpus_dir):
    """Linux keeps a process's peak RSS across ``execve``, and libFuzzer's ``-rss_limit_mb``
    reads that peak: launched by a 4.5 GB process (a pytest worker with TensorFlow loaded
    reaches 6 GB), a harness used to fail as out-of-memory at its first input. It relaunches
    itself from a small process and runs."""
    big = (
        "import subprocess, sys\n"
        "x = bytearray(4608 << 20)\n"
        "for i in range(0, len(x), 4096):\n"
        "    x[i] = 1\n"
        "sys.exit(subprocess.call(sys.argv[1:]))\n"
    )
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "EDGEPART_CORPUS": str(corpus_dir)}
    env.pop("EDGEPART_FUZZ_RELAUNCHED", None)
    proc = subprocess.run(
        [sys.executable, "-c", big, sys.executable, "-m", "fuzz.run", "yaml", "-runs=5",
         "-seed=1", f"-artifact_prefix={tmp_path}/", "--corpus", str(tmp_path / "corpus")],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "out-of-memory" not in proc.stderr
    rss = [int(v) for v in re.findall(r"rss: (\d+)Mb", proc.stderr)]
    assert rss and max(rss) < 4096, rss
