"""Never delete what edgepart did not write; replace a bundle atomically; clean up after kills.

An existing output directory is replaced only if it holds nothing but a bundle edgepart wrote
(every file listed in its manifest, unchanged); otherwise one line names one unknown file.
Temporaries left by a killed writer are removed by the next write to the same target.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sec_helpers import ROOT, cli, one_line_error

import edgepart
from edgepart import fileio
from edgepart.bundle import PartitionSpec, load_bundle, write_bundle
from edgepart.errors import OutputError


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize(
    ("add", "named"),
    [
        (lambda b: (b / "notes.txt").write_text("mine"), "notes.txt"),
        (lambda b: (b / "partitions" / "extra.bin").write_bytes(b"x"), "partitions/extra.bin"),
        (lambda b: (b / "sub").mkdir(), "sub"),
        (lambda b: os.symlink("/etc/passwd", b / "link"), "link"),
        (lambda b: (b / "plan.json").write_text((b / "plan.json").read_text() + " "), "plan.json"),
    ],
    ids=["file", "file-in-partitions", "directory", "symlink", "edited-bundle-file"],
)
def test_a_bundle_with_a_foreign_file_is_not_replaced(bundle, small_model, add, named):
    add(bundle)
    before = _snapshot(bundle)
    with pytest.raises(OutputError, match=rf"{bundle}/{named} (was not written|changed after)"):
        write_bundle(bundle, small_model, [PartitionSpec(range(65))])
    assert _snapshot(bundle) == before
    assert not [p for p in bundle.parent.iterdir() if p.name.startswith(".")]


def test_cli_names_the_foreign_file_on_one_line(bundle, small_model):
    (bundle / "results.csv").write_text("precious")
    proc = cli("partition", str(small_model), "--profile", "pixel8", "-o", str(bundle))
    one_line_error(proc, f"{bundle}/results.csv was not written by edgepart", "refusing to replace")
    assert (bundle / "results.csv").read_text() == "precious"


def test_a_directory_without_a_manifest_or_with_a_foreign_manifest(tmp_path, small_model):
    d = tmp_path / "d"
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(OutputError, match=r"manifest\.json is not a manifest edgepart wrote"):
        write_bundle(d, small_model, [PartitionSpec(range(65))])
    assert (d / "manifest.json").exists()


def test_empty_directory_and_own_bundle_are_replaced(tmp_path, small_model, bundle):
    empty = tmp_path / "empty"
    empty.mkdir()
    write_bundle(empty, small_model, [PartitionSpec(range(65))])
    assert len(load_bundle(empty).plan.partitions) == 1
    write_bundle(bundle, small_model, [PartitionSpec(range(65))])
    assert len(load_bundle(bundle).plan.partitions) == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_file_at_the_output_is_refused(tmp_path, small_model):
    f = tmp_path / "out"
    f.write_text("not a directory")
    with pytest.raises(OutputError, match=r"exists and is a regular file, not a directory"):
        write_bundle(f, small_model, [PartitionSpec(range(65))])
    assert f.read_text() == "not a directory"


def test_partition_report_is_in_the_manifest(tmp_path, small_model):
    out = tmp_path / "b"
    edgepart.compile(small_model, "pixel8").save(out)
    man = json.loads((out / "manifest.json").read_text())
    listed = {e["path"]: e["role"] for e in man["files"]}
    assert listed["partition_report.txt"] == "report"
    load_bundle(out)
    (out / "partition_report.txt").write_text("edited")
    with pytest.raises(edgepart.BundleError, match=r"partition_report\.txt: (truncated|larger)"):
        load_bundle(out)


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path, small_model, bundle):
    dead = _dead_pid()
    stale_dir = bundle.parent / f".{bundle.name}.edgepart-{dead}-abc123.tmp"
    stale_dir.mkdir()
    (stale_dir / "half.tflite").write_bytes(b"x" * 1000)
    stale_file = tmp_path / f".t.json.edgepart-{dead}-q1w2.tmp"
    stale_file.write_text("{")
    live = bundle.parent / f".{bundle.name}.edgepart-{os.getppid()}-keep.tmp"
    live.mkdir()
    other = bundle.parent / f".{bundle.name}.mine.tmp"  # not edgepart's pattern
    other.mkdir()
    write_bundle(bundle, small_model, [PartitionSpec(range(65))])
    fileio.atomic_write_text(tmp_path / "t.json", "{}")
    assert not stale_dir.exists() and not stale_file.exists()
    assert live.exists() and other.exists()


def test_the_two_rename_fallback_restores_a_killed_swap(tmp_path, small_model, bundle, monkeypatch):
    """Without RENAME_EXCHANGE the swap is two renames; a kill between them leaves the old
    bundle in a .old sibling, which the next write puts back before anything else."""
    before = _snapshot(bundle)
    dead = _dead_pid()
    old = bundle.parent / f".{bundle.name}.edgepart-{dead}-zz.old"
    os.rename(bundle, old)  # the state right after the first rename
    fileio.clean_stale(bundle)
    assert _snapshot(bundle) == before and not old.exists()
    monkeypatch.setattr(fileio, "_exchange", lambda a, b: False)
    write_bundle(bundle, small_model, [PartitionSpec(range(65))])
    assert len(load_bundle(bundle).plan.partitions) == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_exchange_is_atomic_on_this_system(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x").write_text("a")
    (b / "x").write_text("b")
    if not fileio._exchange(a, b):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here")
    assert (a / "x").read_text() == "b" and (b / "x").read_text() == "a"


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))


def test_a_failing_disk_leaves_the_old_bundle_and_no_temporaries(bundle, small_model):
    before = _snapshot(bundle)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "edgepart",
            "partition",
            str(small_model),
            "--profile",
            "pixel8",
            "-o",
            str(bundle),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        preexec_fn=_limit_file_size,
    )
    one_line_error(proc, str(bundle), "cannot write (File too large)", "previous content")
    assert _snapshot(bundle) == before
    assert not [p for p in bundle.parent.iterdir() if p.name.startswith(".")]


def test_a_full_device_is_one_line(small_model, tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    out = tmp_path / "b"
    write_bundle(out, small_model, [PartitionSpec(range(65))])
    proc = cli("run", str(out), "--random", "--json", "/dev/full")
    one_line_error(proc, "/dev/full: cannot write (No space left on device)")


def test_a_fifo_without_reader_as_output_is_an_error_not_a_hang(tmp_path, small_model):
    out = tmp_path / "b"
    write_bundle(out, small_model, [PartitionSpec(range(65))])
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = cli("run", str(out), "--random", "--json", str(fifo), timeout=60)
    one_line_error(proc, f"{fifo}: is a FIFO with no reader")
    fifo_out = tmp_path / "fifo_out"
    os.mkfifo(fifo_out)
    proc = cli("partition", str(small_model), "--profile", "pixel8", "-o", str(fifo_out))
    one_line_error(proc, "not a directory")
    assert fifo_out.is_fifo()
