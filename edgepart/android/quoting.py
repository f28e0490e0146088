"""POSIX quoting of argument lists for the device shell (mksh on Android, ``sh -c`` under adbd).

adbd runs every ``adb shell`` command line as ``/system/bin/sh -c LINE``, and the adb client joins
its arguments with plain spaces, so whatever reaches the device is parsed by a shell once. edgepart
therefore never pastes user strings into a line: each argument is quoted on its own so that the
shell hands it to the program byte for byte. Single quotes suppress every expansion in POSIX
shells and mksh (``$``, backquotes, ``\\``, globbing, ``;``, ``|``, newlines); a single quote
inside an argument is written as ``'\\''`` (close, escaped quote, reopen).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from edgepart.errors import UsageError

__all__ = ["join_argv", "quote_arg"]

# Characters no POSIX shell treats specially anywhere in a word; anything else gets quoted.
# fullmatch, not ``^...$``: ``$`` also matches before a trailing newline, which would leave "x\n"
# bare and let the next argument run as a command.
_SAFE = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")


def quote_arg(arg: str) -> str:
    """Quote one argument so the device shell passes it through unchanged.

    Parameters
    ----------
    arg
        Any string without NUL characters (they cannot travel in a C argument).

    Returns
    -------
    str
        ``arg`` itself when it is made only of shell-neutral characters, else ``arg`` in single
        quotes with embedded single quotes written as ``'\\''``.

    Raises
    ------
    UsageError
        If ``arg`` contains a NUL character.
    """
    if "\0" in arg:
        raise UsageError(f"argument {arg!r} contains a NUL character, which no program can receive")
    if _SAFE.fullmatch(arg):
        return arg
    return "'" + arg.replace("'", "'\\''") + "'"


def join_argv(argv: Sequence[str]) -> str:
    """Build one shell command line from an argument list, quoting every argument.

    Raises
    ------
    UsageError
        If ``argv`` is empty, is a bare string, or an argument contains NUL.
    """
    if isinstance(argv, str):
        raise UsageError(f"expected an argument list, got the string {argv!r}: split it yourself")
    if not argv:
        raise UsageError("cannot run an empty argument list on the device")
    return " ".join(quote_arg(a) for a in argv)
