"""Run one fuzz harness with atheris (libFuzzer): ``python -m fuzz.run NAME [libFuzzer flags]``.

NAME is one of ``reader``, ``writer``, ``yaml``, ``costgraph``, ``bundle``. The seeds are written
into a fresh corpus directory (or the one given with ``--corpus DIR``, which keeps what the run
finds); given input files instead, it runs just those (a ``crash-*`` replayed). Every input
must end in success or a one-line ``EdgepartError``; anything else, a
memory growth beyond 10x the input (``fuzz/_guard.py``) or an input taking over 5 s is a
failure, with the input saved as ``crash-*``/``timeout-*`` by libFuzzer. At exit the counts
are printed every 1,000 runs and when a failure ends the run: ``fuzz NAME: runs=... accepted=...
refused=... largest_input=... largest_growth=...``; libFuzzer's own ``Done N runs`` line ends a
clean run.

Examples::

    python -m fuzz.run reader -runs=20000
    python -m fuzz.run yaml -max_total_time=3600 --corpus /tmp/yaml-corpus
"""

from __future__ import annotations

import atexit
import importlib
import os
import resource
import subprocess
import sys
import tempfile

import atheris

HARNESSES = ("reader", "writer", "yaml", "costgraph", "bundle")

#: A fresh Python with atheris peaks at a few tens of MB; above this at start, the peak is the
#: launching process's (see :func:`_inherited_peak_mb`).
_INHERITED_MB = 512


def _inherited_peak_mb() -> int:
    """The peak RSS this process reports before it has done anything.

    libFuzzer's ``-rss_limit_mb`` watches ``getrusage`` peak RSS, and Linux keeps that figure
    across ``execve``: launched by a large process (a pytest worker that has loaded TensorFlow
    and LiteRT, 6 GB), a harness starts "over" a 4 GB limit and fails as out-of-memory at its
    first input. A child launched from here (a small process) starts from its own figure.
    """
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] not in HARNESSES:
        raise SystemExit(f"usage: python -m fuzz.run {{{','.join(HARNESSES)}}} [libFuzzer flags]")
    if _inherited_peak_mb() > _INHERITED_MB and not os.environ.get("EDGEPART_FUZZ_RELAUNCHED"):
        env = {**os.environ, "EDGEPART_FUZZ_RELAUNCHED": "1"}
        raise SystemExit(subprocess.call([sys.executable, "-m", "fuzz.run", *argv[1:]], env=env))
    name, rest = argv[1], argv[2:]
    corpus = None
    if "--corpus" in rest:
        k = rest.index("--corpus")
        corpus = rest[k + 1]
        del rest[k : k + 2]
    with atheris.instrument_imports(include=["edgepart"]):
        mod = importlib.import_module(f"fuzz.fuzz_{name}")
        import edgepart.tflite.reader  # noqa: F401  (instrumented for every harness)
    from fuzz import _guard

    replay = [a for a in rest if not a.startswith("-") and os.path.isfile(a)]
    dirs = []
    if not replay:  # fuzzing: seeds into the corpus directory; replaying: only the files given
        corpus = corpus or tempfile.mkdtemp(prefix=f"edgepart-fuzz-{name}-")
        os.makedirs(corpus, exist_ok=True)
        for k, seed in enumerate(mod.seed_inputs()):
            with open(os.path.join(corpus, f"seed-{k:03d}"), "wb") as f:
                f.write(seed)
        dirs = [corpus]

    _guard.Stats.name = name
    _guard.warm_up(mod.one_input, mod.seed_inputs())
    atexit.register(_guard.Stats.report)
    flags = [f"-max_len={mod.MAX_LEN}", "-timeout=5", "-rss_limit_mb=4096", *rest, *dirs]
    atheris.Setup([argv[0], *flags], _guard.guarded(mod.one_input))
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
