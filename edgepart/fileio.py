"""Atomic file output: nothing half-written is ever left behind.

Every file edgepart writes goes through :func:`atomic_write` (a temporary file in the same
directory, fsync'd, then renamed over the target) and every output directory through
:func:`atomic_dir` (built in a temporary sibling, renamed into place only when complete).

The temporary files and directories are private while being built (``mkstemp`` makes them 0600,
``mkdtemp`` 0700); what is renamed into place gets the mode an ordinary ``open``/``mkdir``
would give under the process umask (0644/0755 with the usual 022). An output path that cannot
be created (its parent is a file, no permission) is a one-line :class:`UsageError`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from edgepart.errors import UsageError

__all__ = ["atomic_dir", "atomic_write", "atomic_write_chunks", "atomic_write_text", "umask"]


def umask() -> int:
    """The process umask (read without changing it where ``/proc`` tells it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)  # no way to read it without setting it: put it straight back
    os.umask(old)
    return old


def _parent_dir(path: Path) -> None:
    """Create ``path``'s parent directories (umask modes); a one-line error if impossible."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        blocker = next((p for p in [path.parent, *path.parent.parents] if p.is_file()), None)
        why = f"{blocker} is a file, not a directory" if blocker else (err.strerror or str(err))
        raise UsageError(f"cannot write {path}: {why}; choose another output path") from None


def atomic_write(path: str | os.PathLike[str], data: bytes | bytearray | memoryview) -> None:
    """Write ``data`` to ``path`` so that readers see either the old file or the whole new one."""
    atomic_write_chunks(path, (data,))


def atomic_write_chunks(path: str | os.PathLike[str], chunks: Iterable[Any]) -> None:
    """Write the concatenated ``chunks`` to ``path`` atomically: a temporary file in the same
    directory, fsync'd, then renamed over the target (removed again on any failure)."""
    path = Path(path)
    _parent_dir(path)
    if path.is_dir():
        raise UsageError(f"cannot write {path}: it is a directory; give a file path")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise UsageError(f"cannot write {path}: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), 0o666 & ~umask())
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
    _parent_dir(path)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    except OSError as err:
        raise UsageError(f"cannot create {path}: {err.strerror or err}") from None
    try:
        os.chmod(tmp, 0o777 & ~umask())
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
