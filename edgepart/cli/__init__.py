"""The ``edgepart`` command line: a thin layer over the Python API.

Each subcommand lives in its own module ``edgepart/cli/<name>.py`` that defines
``register(subparsers)``; modules are discovered by file name, so adding a command never edits a
shared list. Handlers parse arguments, call the API, and format results. Any
:class:`~edgepart.errors.EdgepartError` becomes one line on stderr and exit status 2.

SIGTERM while a file or bundle is being written becomes an exception (as Ctrl-C does; see
:mod:`edgepart.fileio`), so the write's cleanup runs and no half-written temporary is left;
the command exits with status 143. Failures no input check anticipated (the OS refusing a file,
memory running out, nesting too deep for Python) still end in one line, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import warnings
from collections.abc import Sequence
from typing import Any, TextIO

import edgepart
from edgepart.devices.search_path import using_search_path
from edgepart.errors import EdgepartError
from edgepart.fileio import Terminated

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edgepart",
        description="Partition, plan, run and measure TFLite models on heterogeneous edge devices.",
    )
    parser.add_argument(
        "--search-path",
        action="append",
        default=[],
        metavar="DIR",
        help="also look for delegates/NAME.yaml and device_profiles/NAME.yaml in DIR, before "
        "$EDGEPART_PATH and the shipped files (repeatable; first match wins)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        module.register(sub)
    return parser


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Warnings as one line each: ``edgepart: note: ...`` for notes, else ``warning``."""
    label = "note" if issubclass(category, edgepart.InputShapeNote) else "warning"
    print(f"edgepart: {label}: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    shown: Any = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        with using_search_path(args.search_path):
            status = args.func(args)
    except EdgepartError as err:
        print(f"edgepart: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("edgepart: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("edgepart: terminated", file=sys.stderr)
        return 143
    except BrokenPipeError:
        return 0
    except MemoryError:
        print(
            "edgepart: error: out of memory; the input is larger than this machine can handle",
            file=sys.stderr,
        )
        return 2
    except RecursionError:
        print("edgepart: error: the input is nested too deeply to process", file=sys.stderr)
        return 2
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        print(f"edgepart: error: {where}{err.strerror or err}", file=sys.stderr)
        return 2
    finally:
        warnings.showwarning = shown
    return int(status or 0)
