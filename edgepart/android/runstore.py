"""Results of adb runs kept on the host as they complete: what ``--resume DIR`` continues from.

A results directory holds ``results.json`` (every run's status, summary and file names, rewritten
atomically after each run) and the raw material of each run under ``runs/<serial>/``: the tool's
log and the files pulled from the device (per-op proto or CSV, runtime-info proto). Nothing is
half-written: each file goes through :func:`edgepart.fileio.atomic_write`, pulls are all or nothing.

A run is identified by ``(serial, label)``; the label is the delegate (``xnnpack``), or
``partition@delegate`` for bundles. Status ``ok`` and ``failed`` (the tool's own verdict, e.g. GPU
unavailable) are final and never repeated on resume; ``error`` (device unplugged, timeout) is
retried. The ``settings`` (model digest, threads, run counts, binary...) must match on resume:
measurements taken under other settings are not mixed into one result.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from edgepart import jsondoc as _json
from edgepart.errors import UsageError
from edgepart.fileio import (
    MiB,
    atomic_write,
    atomic_write_text,
    clean_stale,
    read_regular,
    sha256_regular,
)

__all__ = [
    "FINAL_STATUSES",
    "RESULTS_FORMAT",
    "RESULTS_VERSION",
    "RunStore",
    "default_results_dir",
    "file_digest",
    "slug",
]

RESULTS_FORMAT = "edgepart-adb-runs"
RESULTS_VERSION = 1
RESULTS_FILE = "results.json"
RESULTS_LIMIT = 256 * MiB
FINAL_STATUSES = ("ok", "failed")
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")


def slug(text: str) -> str:
    """``text`` reduced to a file-name-safe token (``127.0.0.1:5555`` -> ``127.0.0.1_5555``)."""
    return _SLUG.sub("_", text).strip("_.") or "_"


def file_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a local regular file, hex (a FIFO or device is refused, never read)."""
    return sha256_regular(path)[0]


def settings_digest(settings: Mapping[str, Any]) -> str:
    """A short stable digest of run settings (used in default directory names)."""
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def default_results_dir(
    kind: str, target: str | os.PathLike[str], settings: Mapping[str, Any]
) -> Path:
    """``$EDGEPART_RUNS_DIR`` (default ``./edgepart-runs``) ``/<kind>-<name>-<settings digest>``.

    The same command with the same settings maps to the same directory, so a failed run's
    message can name it for ``--resume``.
    """
    base = Path(os.environ.get("EDGEPART_RUNS_DIR") or "edgepart-runs")
    name = Path(target).name.removesuffix(".tflite")
    return base / f"{kind}-{slug(name)}-{settings_digest(settings)}"


class RunStore:
    """The results directory of one command (see the module docstring).

    Parameters
    ----------
    path
        The directory; created on the first record, so a command that fails before running
        anything leaves nothing behind.
    kind
        ``bench``, ``profile`` or ``bundle``.
    settings
        JSON-able settings the runs were taken with.
    resume
        Keep the runs already recorded in ``path`` (settings must match); otherwise a fresh
        record replaces any earlier one.

    Raises
    ------
    UsageError
        On resume, if ``results.json`` is unreadable, of another kind, or from other settings.
    """

    def __init__(
        self, path: str | os.PathLike[str], kind: str, settings: Mapping[str, Any], *, resume: bool
    ) -> None:
        self.path = Path(path)
        self.kind = kind
        self.settings = json.loads(json.dumps(dict(settings), sort_keys=True))
        self._lock = threading.Lock()
        self.runs: dict[str, dict[str, Any]] = {}
        self.devices: dict[str, dict[str, Any]] = {}
        self.resumed = 0
        results = self.path / RESULTS_FILE
        # a fresh (non-resumed) run replaces an earlier one's record and files on first write
        self._stale = not resume and results.exists()
        # results.json is written before any run file (see _begin): a killed command leaves
        # either nothing of its own, or a results.json. The one exception, the temporary of
        # that first write, is removed here.
        self._begun = False
        if resume:
            clean_stale(results)
        if resume and results.exists():
            self._load(results)
        elif resume and self.path.exists() and any(self.path.iterdir()):
            raise UsageError(
                f"--resume {self.path}: the directory exists but holds no {RESULTS_FILE}; give "
                "an edgepart results directory, or a new or empty one to start fresh"
            )

    def _load(self, results: Path) -> None:
        try:
            raw = read_regular(results, what="results file", limit=RESULTS_LIMIT)
            doc = _json.parse(raw, str(results), error=UsageError)
        except UsageError as err:
            raise UsageError(
                f"unreadable ({err}); remove {results} or give another --resume directory"
            ) from None
        if not isinstance(doc, dict) or doc.get("format") != RESULTS_FORMAT:
            raise UsageError(f"{results}: $.format is not {RESULTS_FORMAT!r}; not a results file")
        if doc.get("version") != RESULTS_VERSION:
            raise UsageError(
                f"{results}: $.version {doc.get('version')!r} is not supported (this edgepart "
                f"writes version {RESULTS_VERSION}); use a new results directory"
            )
        if doc.get("kind") != self.kind:
            raise UsageError(
                f"{results}: holds `edgepart {doc.get('kind')}` results, not {self.kind}; use a "
                "separate directory per command"
            )
        old = doc.get("settings") or {}
        for key in sorted(set(old) | set(self.settings)):
            if old.get(key) != self.settings.get(key):
                raise UsageError(
                    f"{results}: $.settings.{key} is {old.get(key)!r} but this run has "
                    f"{self.settings.get(key)!r}; resume with the original settings or use "
                    "another directory"
                )
        self.runs = {k: v for k, v in (doc.get("runs") or {}).items() if isinstance(v, dict)}
        self.devices = {k: v for k, v in (doc.get("devices") or {}).items() if isinstance(v, dict)}
        self.resumed = sum(1 for r in self.runs.values() if r.get("status") in FINAL_STATUSES)
        self._begun = True

    @staticmethod
    def run_id(serial: str, label: str) -> str:
        return f"{serial} {label}"

    def completed(self, serial: str, label: str) -> dict[str, Any] | None:
        """The final record of ``(serial, label)``, or ``None`` if it must (still) run."""
        with self._lock:
            rec = self.runs.get(self.run_id(serial, label))
        return rec if rec is not None and rec.get("status") in FINAL_STATUSES else None

    def record(self, rec: Mapping[str, Any]) -> None:
        """Store one run's record (needs ``serial``, ``label``, ``status``) and save."""
        with self._lock:
            self.runs[self.run_id(str(rec["serial"]), str(rec["label"]))] = dict(rec)
            self._save()

    def note_device(self, serial: str, info: Mapping[str, Any]) -> None:
        """Remember what a device is (or why it failed) and save."""
        with self._lock:
            self.devices[serial] = dict(info)
            self._save()

    def run_file(self, serial: str, label: str, suffix: str) -> str:
        """Relative path for one of a run's files (``runs/<serial>/<label><suffix>``)."""
        return f"runs/{slug(serial)}/{slug(label)}{suffix}"

    def write_file(self, rel: str, data: bytes | str) -> str:
        """Write ``rel`` atomically inside the directory; returns ``rel``."""
        blob = data.encode("utf-8") if isinstance(data, str) else data
        with self._lock:
            self._begin()
        atomic_write(self.path / rel, blob)
        return rel

    def abspath(self, rel: str) -> Path:
        """Where ``rel`` lives (for pulls, which are atomic themselves); parents are created."""
        with self._lock:
            self._begin()
        out = self.path / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        return out

    def write_json(self, rel: str, doc: Any) -> Path:
        """Write a JSON document (sorted keys) atomically inside the directory."""
        out = self.path / rel
        atomic_write_text(out, json.dumps(doc, indent=1, sort_keys=True) + "\n")
        return out

    def _clear_stale(self) -> None:
        if self._stale:
            shutil.rmtree(self.path / "runs", ignore_errors=True)
            (self.path / RESULTS_FILE).unlink(missing_ok=True)
            self._stale = False

    def _begin(self) -> None:
        """Before the first run file: clear a replaced record and write ``results.json``, so
        that a directory holding run files always holds the record ``--resume`` reads (a
        command killed between its first file and its first record would otherwise leave a
        directory ``--resume`` refuses)."""
        if not self._begun:
            self._save()

    def _save(self) -> None:
        self._clear_stale()
        self._begun = True
        doc = {
            "format": RESULTS_FORMAT,
            "version": RESULTS_VERSION,
            "kind": self.kind,
            "settings": self.settings,
            "devices": self.devices,
            "runs": self.runs,
        }
        atomic_write_text(
            self.path / RESULTS_FILE, json.dumps(doc, indent=1, sort_keys=True) + "\n"
        )
