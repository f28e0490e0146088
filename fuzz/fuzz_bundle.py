"""The bundle loaders: one of manifest.json, plan.json or arena.json of a real bundle replaced by
the input (the first byte picks which), the manifest's size and SHA-256 of a replaced plan or
arena rewritten (as an attacker editing a bundle would), then ``load_bundle``."""

from __future__ import annotations

import atexit
import hashlib
import json
import shutil
import tempfile
from pathlib import Path

from edgepart.bundle.load import load_bundle

from . import seeds

NAMES = ("manifest.json", "plan.json", "arena.json")
_DIR = Path(tempfile.mkdtemp(prefix="edgepart-fuzz-bundle-"))
atexit.register(shutil.rmtree, _DIR, True)
_BASE: dict[str, bytes] = {}


def _bundle() -> Path:
    b = _DIR / "b"
    if not _BASE:
        seeds.bundle(b)
        _BASE.update({n: (b / n).read_bytes() for n in NAMES})
    return b


def one_input(data: bytes) -> None:
    if not data:
        return
    b = _bundle()
    name = NAMES[data[0] % 3]
    body = data[1:]
    files = dict(_BASE)
    files[name] = body
    if name != "manifest.json":
        manifest = json.loads(_BASE["manifest.json"])
        for e in manifest["files"]:
            if e["path"] == name:
                e["bytes"] = len(body)
                e["sha256"] = hashlib.sha256(body).hexdigest()
        files["manifest.json"] = json.dumps(manifest).encode()
    for n, content in files.items():
        (b / n).write_bytes(content)
    load_bundle(b)


def seed_inputs() -> list[bytes]:
    return [bytes([NAMES.index(n)]) + content for n, content in seeds.bundle_files()]


MAX_LEN = 32_768
