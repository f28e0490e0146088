"""The results directory of adb commands (:class:`edgepart.android.runstore.RunStore`): whatever
instant a command is killed at, the directory it leaves is one ``--resume`` continues from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edgepart.android.runstore import RESULTS_FILE, RunStore
from edgepart.errors import UsageError

SETTINGS = {"model": "abc", "threads": 1}


def test_the_record_is_written_before_the_first_run_file(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "res", "bench", SETTINGS, resume=True)
    assert not (tmp_path / "res").exists()  # nothing run: nothing left behind
    store.write_file(store.run_file("s1", "cpu", ".log"), "log")
    # killed right here (a run file, no run recorded yet): --resume must accept the directory
    doc = json.loads((tmp_path / "res" / RESULTS_FILE).read_text())
    assert doc["runs"] == {} and doc["settings"] == SETTINGS
    again = RunStore(tmp_path / "res", "bench", SETTINGS, resume=True)
    assert again.runs == {} and again.completed("s1", "cpu") is None


def test_a_pull_destination_also_writes_the_record_first(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "res", "bench", SETTINGS, resume=True)
    out = store.abspath(store.run_file("s1", "cpu", ".csv"))
    assert out.parent.is_dir() and (tmp_path / "res" / RESULTS_FILE).is_file()


def test_resume_removes_the_temporary_of_a_killed_first_record(tmp_path: Path) -> None:
    res = tmp_path / "res"
    res.mkdir()
    # a process that is gone wrote it: the name atomic writes give their temporaries
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    tmp = res / f".{RESULTS_FILE}.edgepart-{int(dead.stdout)}-abc123.tmp"
    tmp.write_text('{"format": "edgepart-adb-r')
    store = RunStore(res, "bench", SETTINGS, resume=True)
    assert store.runs == {} and not tmp.exists()


def test_resume_still_refuses_a_directory_of_other_files(tmp_path: Path) -> None:
    res = tmp_path / "res"
    res.mkdir()
    (res / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match=r"holds no results\.json"):
        RunStore(res, "bench", SETTINGS, resume=True)
    assert (res / "notes.txt").read_text() == "mine"


def test_a_live_writers_temporary_is_left_alone(tmp_path: Path) -> None:
    res = tmp_path / "res"
    res.mkdir()
    tmp = res / f".{RESULTS_FILE}.edgepart-{os.getpid()}-abc123.tmp"
    tmp.write_text("{")
    with pytest.raises(UsageError, match=r"holds no results\.json"):
        RunStore(res, "bench", SETTINGS, resume=True)
    assert tmp.exists()


def test_a_fresh_run_replaces_an_earlier_record_on_its_first_file(tmp_path: Path) -> None:
    old = RunStore(tmp_path / "res", "bench", SETTINGS, resume=False)
    old.write_file(old.run_file("s1", "cpu", ".log"), "old log")
    old.record({"serial": "s1", "label": "cpu", "status": "ok"})
    new = RunStore(tmp_path / "res", "bench", SETTINGS, resume=False)
    assert (tmp_path / "res" / "runs" / "s1" / "cpu.log").exists()  # untouched until it writes
    new.write_file(new.run_file("s1", "xnnpack", ".log"), "new log")
    assert not (tmp_path / "res" / "runs" / "s1" / "cpu.log").exists()
    assert json.loads((tmp_path / "res" / RESULTS_FILE).read_text())["runs"] == {}
