"""Atomic file output: nothing half-written is ever left behind.

Every file edgepart writes goes through :func:`atomic_write` (a temporary file in the same
directory, fsync'd, then renamed over the target) and every output directory through
:func:`atomic_dir` (built in a temporary sibling, renamed into place only when complete).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["atomic_dir", "atomic_write", "atomic_write_chunks", "atomic_write_text"]


def atomic_write(path: str | os.PathLike[str], data: bytes | bytearray | memoryview) -> None:
    """Write ``data`` to ``path`` so that readers see either the old file or the whole new one."""
    atomic_write_chunks(path, (data,))


def atomic_write_chunks(path: str | os.PathLike[str], chunks: Iterable[Any]) -> None:
    """Write the concatenated ``chunks`` to ``path`` atomically: a temporary file in the same
    directory, fsync'd, then renamed over the target (removed again on any failure)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    atomic_write(path, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str], *, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary directory that replaces ``path`` only if the block completes.

    On any exception the temporary directory is removed and ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        if path.exists():
            if not overwrite:
                raise FileExistsError(path)
            old = path.with_name(f".{path.name}.old")
            if old.exists():
                shutil.rmtree(old)
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
