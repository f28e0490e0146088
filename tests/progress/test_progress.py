"""``edgepart.progress``: bars draw on a terminal (a real pty here), never on pipes or files, and
``EDGEPART_PROGRESS`` overrides the detection."""

from __future__ import annotations

import io
import os
import threading

import pytest

from edgepart.progress import Progress, progress_enabled, track


def _pty_pair() -> tuple[io.TextIOWrapper, int]:
    master, slave = os.openpty()
    return os.fdopen(slave, "w", buffering=1), master


def _drain(master: int) -> str:
    chunks = []
    os.set_blocking(master, False)
    while True:
        try:
            data = os.read(master, 65536)
        except (BlockingIOError, OSError):
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode()


def test_draws_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EDGEPART_PROGRESS", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    tty, master = _pty_pair()
    try:
        with Progress("calibrating", unit="sample", stream=tty, min_interval=0) as bar:
            assert bar.enabled
            for k in range(1, 11):
                bar(k, 10, f"s{k}")
        text = _drain(master)
    finally:
        tty.close()
        os.close(master)
    assert "\r" in text and text.endswith("\n")
    assert "calibrating [" in text and "10/10 sample 100%" in text and "s10" in text
    assert "5/10 sample" in text


@pytest.mark.parametrize("stream", [io.StringIO(), None])
def test_silent_when_not_a_terminal(
    stream: io.StringIO | None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EDGEPART_PROGRESS", raising=False)
    with Progress("profiling", 3, stream=stream, min_interval=0) as bar:
        assert not bar.enabled
        for k in range(3):
            bar.advance(label=f"op {k}")
    assert (stream.getvalue() if stream else "") == ""
    assert capsys.readouterr().err == ""
    assert bar.done == 3  # the state is kept anyway


def test_environment_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.StringIO()
    monkeypatch.setenv("EDGEPART_PROGRESS", "1")
    assert progress_enabled(buf)
    with Progress("bench", 2, stream=buf, min_interval=0) as bar:
        bar(1, 2)
        bar(2, 2)
    assert "2/2" in buf.getvalue() and buf.getvalue().endswith("\n")
    tty, master = _pty_pair()
    try:
        monkeypatch.setenv("EDGEPART_PROGRESS", "0")
        assert not progress_enabled(tty)
        monkeypatch.delenv("EDGEPART_PROGRESS")
        monkeypatch.setenv("TERM", "dumb")
        assert not progress_enabled(tty)
    finally:
        tty.close()
        os.close(master)


def test_throttled_and_thread_safe() -> None:
    buf = io.StringIO()
    bar = Progress("phones", 400, stream=buf, enabled=True, min_interval=3600)
    threads = [
        threading.Thread(target=lambda: [bar.advance() for _ in range(100)]) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bar.close()
    assert bar.done == 400
    # one early draw, the final one (done == total) and the close: not 400 redraws
    assert 1 <= buf.getvalue().count("\r") <= 3
    assert "400/400" in buf.getvalue()


def test_unknown_total_and_track() -> None:
    buf = io.StringIO()
    with Progress("solving", stream=buf, enabled=True, min_interval=0) as bar:
        bar(17, None, "best 1.2 ms")
    assert "solving 17" in buf.getvalue() and "best 1.2 ms" in buf.getvalue()
    out = io.StringIO()
    assert list(track(range(5), "items", stream=out, enabled=True)) == [0, 1, 2, 3, 4]
    assert "5/5" in out.getvalue()
