"""The YAML loaders: device profiles and delegates, read from a file as the CLI reads them.

The first byte picks the loader (even: device profile, odd: delegate), the rest is the file.
A top-level ``name`` is set to the file's stem (a mismatch is refused before anything else).
"""

from __future__ import annotations

import atexit
import os
import tempfile

from edgepart.devices import delegate, profile
from edgepart.devices.yaml_files import Loc, load_yaml

from . import seeds

_DIR = tempfile.mkdtemp(prefix="edgepart-fuzz-yaml-")
_PATH = os.path.join(_DIR, "input.yaml")
atexit.register(lambda: (os.path.exists(_PATH) and os.unlink(_PATH), os.rmdir(_DIR)))


def one_input(data: bytes) -> None:
    if not data:
        return
    with open(_PATH, "wb") as f:
        f.write(data[1:])
    # _parse, not load_profile/load_delegate: those cache by path and mtime.
    parse = profile._parse if data[0] % 2 == 0 else delegate._parse
    doc = load_yaml(_PATH)
    if isinstance(doc, dict) and isinstance(doc.get("name"), str):
        doc["name"] = "input"  # must match the file name, or nothing past it is reached
    parse(doc, Loc(_PATH))


def seed_inputs() -> list[bytes]:
    out = []
    for y in seeds.yaml_files():
        out += [b"\x00" + y, b"\x01" + y]
    return out


MAX_LEN = 16_384
