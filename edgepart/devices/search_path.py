"""Where delegate files and device profiles are found: the search path.

Data files are looked up by name in an ordered list of directories, first match wins:

1. directories given with ``edgepart --search-path DIR`` (or :func:`using_search_path`), in the
   order given;
2. the directories of the environment variable ``EDGEPART_PATH`` (separated by ``os.pathsep``,
   ``:`` on Linux), in order;
3. the shipped files: the repository's top-level ``delegates/`` and ``device_profiles/`` in a
   source checkout (and an editable install), ``edgepart/_data/`` in a built wheel (see
   ``setup.py``). The legacy variables ``EDGEPART_DELEGATES_DIR`` and ``EDGEPART_PROFILES_DIR``
   still replace the shipped directory of their kind.

Each search-path directory may hold a ``delegates/`` and/or a ``device_profiles/`` folder of
``NAME.yaml`` files. A user file whose name is also shipped (or appears in a later directory)
*shadows* it; :func:`catalog` lists every name with the file that wins and the files it hides.
Only YAML is read from these directories: no Python code is ever imported from them.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from edgepart.errors import UsageError

__all__ = [
    "ENV_VAR",
    "KINDS",
    "CatalogEntry",
    "SearchDir",
    "catalog",
    "find",
    "names",
    "search_dirs",
    "search_key",
    "shipped_dir",
    "using_search_path",
]

ENV_VAR = "EDGEPART_PATH"
KINDS = {"delegates": "EDGEPART_DELEGATES_DIR", "device_profiles": "EDGEPART_PROFILES_DIR"}
"""Data kinds (the folder names) and the legacy variable that replaces each shipped folder."""

_PACKAGE = Path(__file__).resolve().parent.parent  # the edgepart package
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_option_dirs: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True)
class SearchDir:
    """One directory searched for a kind of data file, and where it came from."""

    path: Path
    origin: str  # "--search-path", "EDGEPART_PATH", "shipped" or a legacy variable's name


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """A name on the search path: the file used, where it came from, and the files it hides."""

    name: str
    path: Path
    origin: str
    shadows: tuple[Path, ...] = ()

    @property
    def shipped(self) -> bool:
        return self.origin == "shipped"


def shipped_dir(name: str, env: str | None = None) -> Path:
    """The directory of the shipped ``name`` files (``delegates`` or ``device_profiles``).

    ``env`` (default: the kind's legacy variable) replaces it when set.
    """
    override = os.environ.get(env if env is not None else KINDS.get(name, ""), "")
    if override:
        return Path(override)
    checkout = _PACKAGE.parent / name
    if checkout.is_dir():
        return checkout
    return _PACKAGE / "_data" / name


def _check_root(path: Path, origin: str) -> Path:
    if not path.is_dir():
        raise UsageError(
            f"{origin} directory {str(path)!r} does not exist; give directories that hold "
            f"delegates/ and/or device_profiles/"
        )
    if not any((path / kind).is_dir() for kind in KINDS):
        raise UsageError(
            f"{origin} directory {str(path)!r} holds neither delegates/ nor device_profiles/; "
            "put NAME.yaml files in those folders"
        )
    return path.resolve()


def _roots() -> list[tuple[Path, str]]:
    roots = [(p, "--search-path") for p in _option_dirs]
    for item in os.environ.get(ENV_VAR, "").split(os.pathsep):
        if item:
            roots.append((_check_root(Path(item), ENV_VAR), ENV_VAR))
    return roots


def search_dirs(kind: str) -> list[SearchDir]:
    """The directories searched for ``kind`` files, first to last (only those that exist).

    Raises
    ------
    UsageError
        An ``EDGEPART_PATH`` entry that is not a directory holding ``delegates/`` or
        ``device_profiles/``.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown data kind {kind!r}; kinds: {', '.join(KINDS)}")
    out = [SearchDir(root / kind, origin) for root, origin in _roots() if (root / kind).is_dir()]
    legacy = os.environ.get(KINDS[kind], "")
    out.append(SearchDir(shipped_dir(kind), KINDS[kind] if legacy else "shipped"))
    return out


def search_key() -> tuple[str, ...]:
    """What the search path is now (for caches of files that refer to other files by name)."""
    key = [str(p) for p in _option_dirs]
    key.append(os.environ.get(ENV_VAR, ""))
    key += [os.environ.get(v, "") for v in KINDS.values()]
    return tuple(key)


def _yaml_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.yaml")) if directory.is_dir() else []


def catalog(kind: str) -> list[CatalogEntry]:
    """Every ``kind`` name on the search path, sorted, with the file that wins and those hidden."""
    found: dict[str, list[tuple[Path, str]]] = {}
    for d in search_dirs(kind):
        for f in _yaml_files(d.path):
            found.setdefault(f.stem, []).append((f, d.origin))
    return [
        CatalogEntry(n, hits[0][0], hits[0][1], tuple(p for p, _ in hits[1:]))
        for n, hits in sorted(found.items())
    ]


def names(kind: str) -> list[str]:
    """The ``kind`` names on the search path, sorted."""
    seen: set[str] = set()
    for d in search_dirs(kind):
        seen.update(f.stem for f in _yaml_files(d.path))
    return sorted(seen)


def find(kind: str, name: str) -> Path | None:
    """The file that ``name`` resolves to (first directory on the search path), or None.

    Only plain names are looked up (``gpu``, ``my-npu``): a name with a path separator or a
    leading dot (from a bundle, say) finds nothing rather than a file outside the directories.
    """
    if not _PLAIN_NAME.match(name):
        return None
    for d in search_dirs(kind):
        f = d.path / f"{name}.yaml"
        if f.is_file():
            return f
    return None


@contextlib.contextmanager
def using_search_path(dirs: Sequence[str | os.PathLike[str]]) -> Iterator[None]:
    """Search ``dirs`` (in order) before ``EDGEPART_PATH`` and the shipped files, in a block.

    This is what ``edgepart --search-path DIR`` does for one command.

    Raises
    ------
    UsageError
        A directory that does not exist or holds neither ``delegates/`` nor ``device_profiles/``.
    """
    global _option_dirs
    added = tuple(_check_root(Path(d), "--search-path") for d in dirs)
    saved = _option_dirs
    _option_dirs = added + saved
    try:
        yield
    finally:
        _option_dirs = saved
