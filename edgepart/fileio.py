"""File input and output that hostile paths and interruptions cannot turn into harm.

Input: every file edgepart reads from a user goes through :func:`open_regular` or
:func:`read_regular`: regular files only (a FIFO, device or socket is refused without blocking:
the open is non-blocking and the type is checked before a byte is read), optionally no
symbolic link as the last component, and a size limit checked before reading.

Output: every file goes through :func:`atomic_write` (a temporary file in the same directory,
fsync'd, then renamed over the target) and every output directory through :func:`atomic_dir`
(built in a temporary sibling, swapped into place only when complete). The guarantees, against
SIGKILL at any instant (not power loss; ``docs/security.md``):

* a file or directory target holds either its old complete content or the new complete one;
  on Linux a directory is swapped in with one ``renameat2(RENAME_EXCHANGE)``, so there is no
  instant without a complete directory at the target (elsewhere, or on a file system without
  the call, two renames; the next write restores the old directory if it was killed between
  them);
* temporaries are named ``.NAME.edgepart-PID-XXXX.tmp`` next to the target, removed on any
  exception with SIGTERM and SIGINT blocked during the removal, and removed by the next write
  to the same target when left by a process that no longer runs (SIGKILL). While a write is
  under way in the main thread, SIGTERM (if nobody else handles it) raises :class:`Terminated`
  instead of ending the process at once, so the cleanup runs; outside writes it keeps its
  default action (there is nothing to clean up then, and a process stuck in native code still
  ends);
* a target that is a FIFO or character device (``--json /dev/stdout``) is written directly;
  one that is a directory, socket or block device is refused; write errors (a full disk)
  become one-line :class:`~edgepart.errors.OutputError` and leave the old target in place.

Modes: temporaries are private while being built (``mkstemp`` 0600, ``mkdtemp`` 0700); what
is renamed into place gets the mode an ordinary ``open``/``mkdir`` would give under the
process umask (0644/0755 with the usual 022).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import io
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib import format as npy

from edgepart.errors import EdgepartError, OutputError, UsageError

__all__ = [
    "Terminated",
    "atomic_dir",
    "atomic_write",
    "atomic_write_chunks",
    "atomic_write_text",
    "clean_stale",
    "file_kind",
    "open_regular",
    "read_npy",
    "read_regular",
    "sha256_regular",
    "umask",
]

MiB = 1 << 20


class Terminated(BaseException):
    """SIGTERM arrived while a file was being written (the write was cleaned up)."""


# ---------------------------------------------------------------------- input


def file_kind(mode: int) -> str:
    """What a non-regular file is, for messages (``a FIFO``, ``a directory``, ...)."""
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(
    path: str | os.PathLike[str],
    *,
    what: str = "file",
    error: type[EdgepartError] = UsageError,
    follow_symlinks: bool = True,
    dir_fd: int | None = None,
) -> int:
    """Open a regular file for reading and return its descriptor; anything else is an error.

    The open never blocks (``O_NONBLOCK``: a FIFO without a writer would otherwise wait
    forever) and the file type is checked on the open descriptor, so there is no window in
    which the path could be swapped for a FIFO or device.

    Parameters
    ----------
    path
        The file (relative to ``dir_fd`` when given).
    what
        What the file should be, for messages (``"TFLite model"``, ``"cost graph"``).
    error
        The :class:`~edgepart.errors.EdgepartError` subclass raised.
    follow_symlinks
        False refuses a symbolic link as the last component (``O_NOFOLLOW``).
    dir_fd
        Open ``path`` relative to this directory descriptor.

    Raises
    ------
    EdgepartError
        (``error``) A missing file, a directory, FIFO, device or socket, a refused symbolic
        link, or a file that cannot be opened (the OS's reason).
    """
    p = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(p, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        raise error(f"{p}: cannot read: no such file") from None
    except OSError as err:
        if err.errno == errno.ELOOP and not follow_symlinks:
            raise error(
                f"{p}: is a symbolic link; edgepart does not follow links here (give the file "
                "itself)"
            ) from None
        raise error(f"{p}: cannot open the file ({err.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{p}: is {file_kind(st.st_mode)}, not a regular file; expected a {what}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(
    path: str | os.PathLike[str],
    *,
    what: str = "file",
    limit: int,
    error: type[EdgepartError] = UsageError,
    follow_symlinks: bool = True,
    dir_fd: int | None = None,
) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (see :func:`open_regular`).

    At most ``limit + 1`` bytes are ever read, so a file that grows while it is read (or a
    ``/proc`` file that lies about its size) cannot make the read unbounded.

    Raises
    ------
    EdgepartError
        (``error``) Everything :func:`open_regular` raises, a file larger than ``limit``, or a
        read error.
    """
    p = os.fspath(path)
    fd = open_regular(p, what=what, error=error, follow_symlinks=follow_symlinks, dir_fd=dir_fd)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise error(_too_large(p, size, limit, what))
        chunks = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(limit + 1 - total, 8 * MiB))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise error(_too_large(p, total, limit, what))
        return b"".join(chunks)
    except OSError as err:
        raise error(f"{p}: cannot read the file ({err.strerror})") from None
    finally:
        os.close(fd)


def sha256_regular(
    path: str | os.PathLike[str],
    *,
    what: str = "file",
    error: type[EdgepartError] = UsageError,
    limit: int | None = None,
) -> tuple[str, int]:
    """SHA-256 (hex) and size of a regular file, read in blocks (memory stays small).

    Raises
    ------
    EdgepartError
        (``error``) Everything :func:`open_regular` raises, a file over ``limit`` bytes, or a
        read error.
    """
    p = os.fspath(path)
    fd = open_regular(p, what=what, error=error)
    h = hashlib.sha256()
    total = 0
    try:
        size = os.fstat(fd).st_size
        if limit is not None and size > limit:
            raise error(_too_large(p, size, limit, what))
        while True:
            block = os.read(fd, 8 * MiB)
            if not block:
                break
            h.update(block)
            total += len(block)
            if limit is not None and total > limit:
                raise error(_too_large(p, total, limit, what))
    except OSError as err:
        raise error(f"{p}: cannot read the file ({err.strerror})") from None
    finally:
        os.close(fd)
    return h.hexdigest(), total


NPY_LIMIT = 1 << 32
"""Largest ``.npy`` file read (4 GiB)."""


def read_npy(
    path: str | os.PathLike[str],
    *,
    what: str = ".npy array",
    error: type[EdgepartError] = UsageError,
    limit: int = NPY_LIMIT,
) -> Any:
    """One array from a ``.npy`` file, checked before any memory is allocated for it.

    The header's shape and type must describe exactly the bytes the file holds (a header
    claiming 10^11 floats in a 100-byte file is refused, not allocated); object arrays (pickles)
    are refused. The array is a read-only view of the file's bytes.

    Raises
    ------
    EdgepartError
        (``error``) Everything :func:`read_regular` raises, a malformed header, an object array,
        or a size that does not match the header.
    """
    p = os.fspath(path)
    data = read_regular(p, what=what, limit=limit, error=error)
    f = io.BytesIO(data)
    try:
        version = npy.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = npy.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = npy.read_array_header_2_0(f)
        else:
            raise ValueError(f"format version {version[0]}.{version[1]} is not supported")
    except (ValueError, OSError, SyntaxError, TypeError) as err:
        msg = " ".join(str(err).split())[:160]
        raise error(f"{p}: not a .npy file ({msg}); save it with numpy.save") from None
    if dtype.hasobject:
        raise error(f"{p}: holds Python objects (dtype {dtype}); save a numeric array")
    count = 1
    for d in shape:
        count *= int(d)
    need = count * dtype.itemsize
    have = len(data) - f.tell()
    if need != have:
        raise error(
            f"{p}: the header says shape {list(shape)} of {dtype} ({need:,} bytes) but the file "
            f"holds {have:,} bytes of data; the file is truncated or corrupted"
        )
    arr = np.frombuffer(data, dtype=dtype, count=count, offset=f.tell())
    return arr.reshape(shape, order="F" if fortran else "C")


def _too_large(path: str, size: int, limit: int, what: str) -> str:
    return (
        f"{path}: {size:,} bytes, more than a {what} may have ({limit:,} bytes); is this the "
        "right file?"
    )


# ---------------------------------------------------------------------- output: files


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


def _make_parent(path: Path) -> None:
    """Create ``path``'s parent directories (umask modes); a one-line error if impossible."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        blocker = next((p for p in [path.parent, *path.parent.parents] if p.is_file()), None)
        if blocker is None:
            raise _output_error(path, err) from None
        raise OutputError(
            f"cannot write {path}: {blocker} is a file, not a directory; choose another output path"
        ) from None


def atomic_write(path: str | os.PathLike[str], data: bytes | bytearray | memoryview) -> None:
    """Write ``data`` to ``path`` so that readers see either the old file or the whole new one."""
    atomic_write_chunks(path, (data,))


def atomic_write_chunks(path: str | os.PathLike[str], chunks: Iterable[Any]) -> None:
    """Write the concatenated ``chunks`` to ``path`` atomically: a temporary file in the same
    directory, fsync'd, then renamed over the target (removed again on any failure).

    A target that is a FIFO or a character device is written directly (there is nothing to
    replace); a directory, socket or block device is refused.

    Raises
    ------
    OutputError
        The target cannot be written (a full disk, permissions, a refused file type); the old
        target is unchanged.
    """
    path = Path(path)
    try:
        st: os.stat_result | None = os.stat(path)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        if stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode):
            _write_stream(path, chunks)
            return
        raise OutputError(
            f"{path}: is {file_kind(st.st_mode)}; give a file path to write (or a FIFO or "
            "character device such as /dev/stdout)"
        )
    _make_parent(path)
    try:
        clean_stale(path)
    except OSError as err:
        raise _output_error(path, err) from None
    with _sigterm_raises():
        _write_file(path, chunks)


def _write_file(path: Path, chunks: Iterable[Any]) -> None:
    try:
        fd, tmp = tempfile.mkstemp(prefix=_tmp_prefix(path.name), suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise _output_error(path, err) from None
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), 0o666 & ~umask())
        os.replace(tmp, path)
    except BaseException as exc:
        with _signals_blocked(), contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _output_error(path, exc) from None
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """:func:`atomic_write` of ``text`` as UTF-8."""
    atomic_write(path, text.encode("utf-8"))


def _write_stream(path: Path, chunks: Iterable[Any]) -> None:
    """Write to a FIFO or character device; a FIFO without a reader is an error, not a hang."""
    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if err.errno == errno.ENXIO:
            raise OutputError(
                f"{path}: is a FIFO with no reader; start the reader first or give a file path"
            ) from None
        raise _output_error(path, err) from None
    try:
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb", closefd=False) as f:
            for chunk in chunks:
                f.write(chunk)
    except OSError as err:
        raise _output_error(path, err) from None
    finally:
        os.close(fd)


def _output_error(path: Path, err: OSError) -> OutputError:
    what = err.strerror or str(err)
    hint = "; free some space and run again" if err.errno == errno.ENOSPC else ""
    return OutputError(f"{path}: cannot write ({what}); the previous content is unchanged{hint}")


# ---------------------------------------------------------------------- output: directories


@contextlib.contextmanager
def atomic_dir(
    path: str | os.PathLike[str],
    *,
    overwrite: bool = True,
    check: Callable[[Path], None] | None = None,
) -> Iterator[Path]:
    """Yield a temporary directory that replaces ``path`` only if the block completes.

    Parameters
    ----------
    path
        The target directory. A symbolic link to a directory is followed (the directory it
        names is replaced).
    overwrite
        False refuses an existing target.
    check
        Called with the existing target before work starts and again just before the swap;
        raises to refuse replacing it (the bundle writer checks that it holds nothing but a
        bundle edgepart wrote).

    On any exception the temporary directory is removed and ``path`` is left as it was.

    Raises
    ------
    OutputError
        The target exists and is not a directory (or ``overwrite`` is false), or the directory
        cannot be written (full disk, permissions).
    """
    path = Path(path)
    if path.is_symlink() and path.is_dir():
        path = path.resolve()
    _make_parent(path)
    try:
        clean_stale(path)
    except OSError as err:
        raise _output_error(path, err) from None
    _check_target(path, overwrite, check)
    with _sigterm_raises():
        yield from _replace_dir(path, overwrite, check)


def _replace_dir(
    path: Path, overwrite: bool, check: Callable[[Path], None] | None
) -> Iterator[Path]:
    try:
        tmp = Path(tempfile.mkdtemp(prefix=_tmp_prefix(path.name), suffix=".tmp", dir=path.parent))
    except OSError as err:
        raise _output_error(path, err) from None
    try:
        os.chmod(tmp, 0o777 & ~umask())
        yield tmp
        existed = _check_target(path, overwrite, check)
        if existed:
            _swap_in(tmp, path)
        else:
            _rename(tmp, path, noreplace=True)
    except BaseException as exc:
        with _signals_blocked():
            shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise _output_error(path, exc) from None
        raise
    # After the swap ``tmp`` holds the old directory: removing it is housekeeping (a kill
    # here leaves it for the next write to clean).
    with _signals_blocked():
        shutil.rmtree(tmp, ignore_errors=True)


def _check_target(path: Path, overwrite: bool, check: Callable[[Path], None] | None) -> bool:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        raise OutputError(
            f"{path}: exists and is {file_kind(st.st_mode)}, not a directory (not an edgepart "
            "bundle); refusing to replace it (choose a new output directory)"
        )
    if not overwrite:
        raise OutputError(f"{path}: exists; refusing to replace it")
    if check is not None:
        check(path)
    return True


def _swap_in(new: Path, target: Path) -> None:
    """Put ``new`` at ``target``; afterwards ``new`` holds the old directory."""
    if _exchange(new, target):
        return
    # No atomic exchange here: two renames. The old directory waits in a ``.old`` sibling
    # named after this process, which clean_stale moves back if we die before the second.
    old = Path(tempfile.mkdtemp(prefix=_tmp_prefix(target.name), suffix=".old", dir=target.parent))
    os.rmdir(old)
    os.rename(target, old)
    try:
        os.rename(new, target)
    except BaseException:
        os.rename(old, target)
        raise
    os.rename(old, new)


_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_renameat2: Any = None
_renameat2_known = False
_renameat2_lock = threading.Lock()


def _libc_renameat2() -> Any:
    """libc's ``renameat2`` (glibc >= 2.28), or None."""
    global _renameat2, _renameat2_known
    with _renameat2_lock:
        if not _renameat2_known:
            _renameat2_known = True
            try:
                fn = ctypes.CDLL(None, use_errno=True).renameat2
            except (OSError, AttributeError):
                fn = None
            if fn is not None:
                fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
                fn.argtypes += [ctypes.c_uint]
                fn.restype = ctypes.c_int
            _renameat2 = fn
    return _renameat2


def _exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two directory entries; False if the system cannot."""
    fn = _libc_renameat2()
    if fn is None:
        return False
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), os.fspath(b))


def _rename(a: Path, b: Path, *, noreplace: bool) -> None:
    fn = _libc_renameat2() if noreplace else None
    if fn is not None:
        rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_NOREPLACE)
        if rc == 0:
            return
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            raise OutputError(f"{b}: was created by another program meanwhile; run again")
        if err not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise OSError(err, os.strerror(err), os.fspath(b))
    os.rename(a, b)


# ---------------------------------------------------------------------- temporaries


def _tmp_prefix(name: str) -> str:
    return f".{name}.edgepart-{os.getpid()}-"


_STALE = re.compile(r"^\.(?P<name>.+)\.edgepart-(?P<pid>\d+)-[A-Za-z0-9_]+\.(?P<kind>tmp|old)$")


def clean_stale(target: str | os.PathLike[str]) -> None:
    """Remove the temporaries that writes of ``target`` left behind when killed.

    Only ``.NAME.edgepart-PID-XXXX.tmp`` / ``.old`` siblings of ``target`` whose process no
    longer runs are touched; a ``.old`` directory (the old target, kept between the two renames
    of a swap without ``RENAME_EXCHANGE``) is moved back to ``target`` if ``target`` is missing.
    """
    target = Path(target)
    parent = target.parent
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for entry in entries:
        m = _STALE.match(entry.name)
        if m is None or m["name"] != target.name or _alive(int(m["pid"])):
            continue
        p = Path(entry.path)
        with _signals_blocked():
            if m["kind"] == "old" and not os.path.lexists(target):
                with contextlib.suppress(OSError):
                    os.rename(p, target)
                    continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(p, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(p)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` in this block (main thread, default handler only)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def _signals_blocked() -> Iterator[None]:
    """Hold SIGTERM and SIGINT while removing a temporary, so cleanup is never half done."""
    sigs = {signal.SIGTERM, signal.SIGINT}
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not on Linux
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
