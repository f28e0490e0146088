"""Unit tests for device command-line quoting, checked against real POSIX shells."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from edgepart.android.quoting import join_argv, quote_arg
from edgepart.android.shell import PID_MARKER, build_command_line
from edgepart.errors import UsageError

NASTY = [
    "plain",
    "0\n",  # a bare trailing newline would end the command line (found by Hypothesis)
    "touch pwned",
    "with space",
    "it's",
    "'",
    "''",
    '"double"',
    "$HOME",
    "${PATH}",
    "$(touch pwned)",
    "`touch pwned`",
    "; touch pwned",
    "a && b || c",
    "x | y > z < w",
    "*",
    "?",
    "[ab]",
    "~",
    "back\\slash",
    "line1\nline2",
    "tab\there",
    "",
    "-n",
    "--graph=/data/local/tmp/m y.tflite",
    "#comment",
    "!bang",
    "ünïcödé ✓",
]

SHELLS = [s for s in ("/bin/sh", shutil.which("bash"), shutil.which("mksh")) if s]


def shell_argv(shell: str, args: list[str]) -> list[str]:
    """What ``shell -c`` hands to printf for the quoted line: the parsed argument list."""
    line = "printf '%s\\0' " + join_argv(args)
    out = subprocess.run([shell, "-c", line], capture_output=True, check=True).stdout
    return out.decode("utf-8").split("\0")[:-1]


def test_safe_words_stay_bare() -> None:
    for word in ("abc", "a-b_c.d", "/data/local/tmp/x", "--flag=1,2:3", "user@host", "50%", "+x"):
        assert quote_arg(word) == word


def test_everything_else_is_single_quoted() -> None:
    assert quote_arg("a b") == "'a b'"
    assert quote_arg("") == "''"
    assert quote_arg("$x") == "'$x'"
    assert quote_arg("it's") == "'it'\\''s'"
    assert quote_arg("x\n") == "'x\n'"


@pytest.mark.parametrize("shell", SHELLS)
def test_nasty_arguments_survive_a_real_shell(shell: str) -> None:
    assert shell_argv(shell, NASTY) == NASTY


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0")),
        min_size=1,
    )
)
@example(["0\n", "echo injected"])
def test_any_argument_list_round_trips_through_sh(args: list[str]) -> None:
    assert shell_argv("/bin/sh", args) == args


def test_nul_bare_string_and_empty_list_are_refused() -> None:
    with pytest.raises(UsageError, match="NUL"):
        quote_arg("a\0b")
    with pytest.raises(UsageError, match="argument list"):
        join_argv("ls -l")
    with pytest.raises(UsageError, match="empty"):
        join_argv([])


def test_command_line_reports_pid_then_execs_the_quoted_argv() -> None:
    line = build_command_line(["ls", "a b"], cwd="/data/local/tmp/w d")
    assert line == f"cd '/data/local/tmp/w d' && echo {PID_MARKER}$$ >&2 && exec ls 'a b'"
