"""The command line run many times without paying Python's start-up each time.

A :class:`CliForks` is one helper process that imports edgepart's command line and the modules
its commands load (NumPy, LiteRT, the API) once, then forks a child per command: the child
starts a session of its own, points its standard output and error at files, runs
``edgepart.cli.main(argv)`` as ``python -m edgepart`` would (an uncaught exception prints its
traceback and exits 1; ``atexit`` handlers run) and exits with its status. The helper waits for
it and kills its whole session when it overruns its timeout. One command at a time per helper;
the sweep keeps one helper per job.

Imports take 0.3-0.4 s of a command's 0.5-1.5 s on the corpus models (``python -X importtime
-m edgepart run BUNDLE --verify``: 356 ms), so the sweep's few hundred commands spend a third
of their time importing. The commands themselves are exactly the CLI's; what a forked child
does not exercise is the interpreter's start and ``edgepart/__main__.py`` (three lines), which
every CLI test that spawns ``python -m edgepart`` covers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["CliForks"]

# what a command imports on first use; loaded once in the helper, before any fork
PRELOAD = (
    "numpy",
    "edgepart.cli",
    "edgepart.api",
    "edgepart.runtime",
    "edgepart.runtime.verification",
    "ai_edge_litert.interpreter",
)


class CliForks:
    """A helper process that forks ``edgepart.cli.main`` per command (see the module doc)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def run(self, argv: list[str], stdout: Path, stderr: Path, timeout: float) -> tuple[int, bool]:
        """(exit status, timed out) of ``edgepart argv``; its output in ``stdout``/``stderr``.
        A killed command's status is ``-SIGKILL``."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        req = {"argv": argv, "stdout": str(stdout), "stderr": str(stderr), "timeout": timeout}
        self._proc.stdin.write(json.dumps(req) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the CLI fork helper exited ({self._proc.wait()})")
        rep = json.loads(line)
        return int(rep["rc"]), bool(rep["timed_out"])

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait()


def _child(req: dict[str, Any]) -> None:
    """In the forked child: the command, as ``python -m edgepart`` runs it; never returns."""
    import atexit
    import traceback

    os.setsid()
    sys.stdin.close()
    for fd, key in ((1, "stdout"), (2, "stderr")):
        f = os.open(str(req[key]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(f, fd)
        os.close(f)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    code = 1
    try:
        from edgepart.cli import main

        code = main([str(a) for a in req["argv"]])
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:  # what the interpreter would print for an uncaught exception
        traceback.print_exc()
        code = 1
    finally:
        try:
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _wait(pid: int, timeout: float) -> tuple[int, bool]:
    end = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), False
        if time.monotonic() >= end:
            os.killpg(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(status), True
        time.sleep(0.01)


def serve() -> None:
    """The helper's loop: one JSON request per line on stdin, one reply per line on stdout."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    reply = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # a stray print in the helper cannot garble the replies
    os.close(null)
    for line in sys.stdin:
        req = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(req)
        rc, timed_out = _wait(pid, float(req["timeout"]))
        reply.write(json.dumps({"rc": rc, "timed_out": timed_out}) + "\n")
        reply.flush()


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    serve()
