"""Where the shipped data files (``delegates/``, ``device_profiles/``) are found.

In a source checkout (and an editable install) they are the repository's top-level folders. A
built wheel carries copies under ``edgepart/_data/`` (see ``setup.py``). An environment variable
can point elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["shipped_dir"]

_PACKAGE = Path(__file__).resolve().parent.parent  # the edgepart package


def shipped_dir(name: str, env: str) -> Path:
    """The directory holding shipped ``name`` files (``delegates`` or ``device_profiles``)."""
    override = os.environ.get(env)
    if override:
        return Path(override)
    checkout = _PACKAGE.parent / name
    if checkout.is_dir():
        return checkout
    return _PACKAGE / "_data" / name
