"""Strict YAML reading for delegate and device-profile files: every error names file and key path.

Validation walks the parsed document with a :class:`Loc` (file plus key path). Each helper checks
one value and raises :class:`~edgepart.errors.ProfileError` on one line, saying what is wrong,
where (``file: key.path``), the bad value and what is allowed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from edgepart.devices import search_path
from edgepart.errors import ProfileError

__all__ = ["Loc", "check_header", "load_yaml", "resolve_yaml", "yaml_names"]


def load_yaml(path: str | os.PathLike[str]) -> Any:
    """Parse a YAML file; syntax errors become a one-line ProfileError with line and column."""
    p = os.fspath(path)
    try:
        with open(p, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ProfileError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise ProfileError(f"{p}: is a directory, expected a YAML file") from None
    except UnicodeDecodeError as err:
        raise ProfileError(f"{p}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        raise ProfileError(f"{p}: YAML syntax error at {where}: {err.problem}") from None
    except yaml.YAMLError as err:
        raise ProfileError(f"{p}: YAML error: {str(err).splitlines()[0]}") from None


def yaml_names(directory: Path) -> list[str]:
    """Stems of the ``*.yaml`` files in ``directory``, sorted (none if it does not exist)."""
    return sorted(p.stem for p in directory.glob("*.yaml")) if directory.is_dir() else []


def resolve_yaml(name_or_path: str | os.PathLike[str], kind: str, what: str) -> tuple[str, float]:
    """The absolute path and modification time of a file by name (search path) or by path.

    A value with a path separator or a ``.yaml``/``.yml`` suffix is a path; anything else is a
    name looked up on the search path (:mod:`edgepart.devices.search_path`) in the ``kind``
    folders (``delegates`` or ``device_profiles``). The time lets callers cache parses yet
    re-read an edited file.

    Raises
    ------
    ProfileError
        Unknown name (``unknown {what} ...; shipped ...``) or no such file.
    """
    s = os.fspath(name_or_path)
    if os.sep in s or "/" in s or s.endswith((".yaml", ".yml")):
        path = str(Path(s).resolve())
    else:
        found = search_path.find(kind, s)
        if found is None:
            raise ProfileError(_unknown(s, kind, what))
        path = str(found)
    try:
        mtime = os.stat(path).st_mtime
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such file") from None
    return path, mtime


def _unknown(name: str, kind: str, what: str) -> str:
    noun = what.split()[-1]
    shipped = yaml_names(search_path.search_dirs(kind)[-1].path)
    user = [n for n in search_path.names(kind) if n not in shipped]
    msg = f"unknown {what} {name!r}; shipped {noun}s: {', '.join(shipped)}"
    if user:
        msg += f"; on the search path: {', '.join(user)}"
    return (
        f"{msg} (or give a path to a {noun} .yaml file, or a directory holding {kind}/ with "
        f"--search-path or {search_path.ENV_VAR})"
    )


def _show(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


@dataclass(frozen=True, slots=True)
class Loc:
    """A position in a YAML document: the file and the key path below its root."""

    file: str
    path: tuple[str | int, ...] = ()

    def __truediv__(self, key: str | int) -> Loc:
        return Loc(self.file, (*self.path, key))

    @property
    def where(self) -> str:
        out = ""
        for k in self.path:
            out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
        return out or "<root>"

    def error(self, msg: str) -> ProfileError:
        return ProfileError(f"{self.file}: {self.where}: {msg}")

    # ------------------------------------------------------------------ value checks
    def mapping(self, v: Any) -> Mapping[str, Any]:
        if not isinstance(v, Mapping):
            raise self.error(f"expected a mapping, got {_show(v)}")
        for k in v:
            if not isinstance(k, str):
                raise self.error(f"keys must be strings, got {_show(k)}")
        return v

    def keys(self, d: Mapping[str, Any], required: Iterable[str], optional: Iterable[str]) -> None:
        req, opt = list(required), list(optional)
        for k in req:
            if k not in d:
                raise (self / k).error(f"missing required key; required keys: {', '.join(req)}")
        allowed = set(req) | set(opt)
        for k in d:
            if k not in allowed:
                raise (self / k).error(f"unknown key; allowed keys: {', '.join(sorted(allowed))}")

    def string(self, v: Any, *, nonempty: bool = True) -> str:
        if not isinstance(v, str) or (nonempty and not v.strip()):
            raise self.error(f"expected a non-empty string, got {_show(v)}")
        return v

    def boolean(self, v: Any) -> bool:
        if not isinstance(v, bool):
            raise self.error(f"expected true or false, got {_show(v)}")
        return v

    def integer(self, v: Any, *, lo: int | None = None, hi: int | None = None) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.error(f"expected an integer, got {_show(v)}")
        if lo is not None and v < lo:
            raise self.error(f"{v} is out of range; allowed: >= {lo}")
        if hi is not None and v > hi:
            raise self.error(f"{v} is out of range; allowed: <= {hi}")
        return v

    def number(self, v: Any, *, lo: float | None = None, positive: bool = False) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            hint = ""
            if isinstance(v, str):
                try:
                    float(v)
                    hint = " (YAML reads 1e-5 as text: write 1.0e-5 or 0.00001)"
                except ValueError:
                    pass
            raise self.error(f"expected a number, got {_show(v)}{hint}")
        x = float(v)
        if not math.isfinite(x):
            raise self.error(f"{v} is not finite; allowed: a finite number")
        if positive and x <= 0:
            raise self.error(f"{v} is out of range; allowed: > 0")
        if lo is not None and x < lo:
            raise self.error(f"{v} is out of range; allowed: >= {lo}")
        return x

    def choice(self, v: Any, allowed: Iterable[str]) -> str:
        opts = list(allowed)
        if v not in opts:
            raise self.error(f"{_show(v)} is not allowed; allowed: {', '.join(opts)}")
        return str(v)

    def sequence(self, v: Any, *, nonempty: bool = False) -> list[Any]:
        if not isinstance(v, list):
            raise self.error(f"expected a list, got {_show(v)}")
        if nonempty and not v:
            raise self.error("expected a non-empty list")
        return v

    def string_list(self, v: Any, allowed: Iterable[str] | None = None) -> tuple[str, ...]:
        items = self.sequence(v)
        opts = list(allowed) if allowed is not None else None
        out = []
        for i, x in enumerate(items):
            s = (self / i).string(x)
            if opts is not None and s not in opts:
                raise (self / i).error(f"{_show(s)} is not allowed; allowed: {', '.join(opts)}")
            out.append(s)
        if len(set(out)) != len(out):
            dup = next(x for x in out if out.count(x) > 1)
            raise self.error(f"{_show(dup)} is listed twice")
        return tuple(out)


def check_header(d: Mapping[str, Any], loc: Loc, schema: str) -> str:
    """Check the document's ``schema`` tag and that its ``name`` is the file's; return the name."""
    if d["schema"] != schema:
        raise (loc / "schema").error(f"{d['schema']!r} is not allowed; allowed: {schema}")
    name = (loc / "name").string(d["name"])
    stem = Path(loc.file).stem
    if name != stem:
        raise (loc / "name").error(f"{name!r} must match the file name {stem!r}")
    return name
