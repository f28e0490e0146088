"""Strict YAML reading for delegate and device-profile files: every error names file and key path.

Validation walks the parsed document with a :class:`Loc` (file plus key path). Each helper checks
one value and raises :class:`~edgepart.errors.ProfileError` on one line, saying what is wrong,
where (``file: key.path``), the bad value and what is allowed.
"""

from __future__ import annotations

import math
import os
import reprlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from edgepart.devices import search_path
from edgepart.errors import ProfileError
from edgepart.fileio import read_regular

__all__ = ["Loc", "check_header", "load_yaml", "resolve_yaml", "yaml_names"]


YAML_LIMIT = 4 << 20
"""Largest YAML file read (the shipped delegate and device files are 2-20 KB)."""
MAX_DEPTH = 64
"""Deepest nesting of mappings and sequences (the files need about 8)."""
MAX_VALUES = 200_000
"""Most values a document may hold once its aliases are expanded: aliases share a node
(``xnnpack.yaml`` uses them for op rules), but a billion-laughs file expands a few KB into
billions of values that every later walk would visit."""


class _Refused(yaml.MarkedYAMLError):
    """Well-formed YAML that edgepart refuses (too deep, a bomb, a duplicate key)."""


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader with bounded work: nesting depth, the expanded size of aliased
    nodes (counted, never expanded), and no key twice in a mapping."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._weight: dict[int, int] = {}

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise _Refused(problem=f"nested deeper than {MAX_DEPTH} levels", problem_mark=mark)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if node is None or isinstance(node, yaml.ScalarNode):
            return node
        weight = self._weight.get(id(node))
        if weight is None:
            items = node.value
            weight = 1
            for item in items:
                for child in item if isinstance(item, tuple) else (item,):
                    weight += self._weight.get(id(child), 1)
            if weight > MAX_VALUES:
                raise _Refused(
                    problem=(
                        f"aliases expand to more than {MAX_VALUES:,} values (a YAML bomb?); "
                        "write the values out"
                    ),
                    problem_mark=node.start_mark,
                )
            self._weight[id(node)] = weight
        return node

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    dup = key in seen
                except TypeError:  # unhashable; the base class reports it
                    continue
                if dup:
                    raise _Refused(
                        problem=f"key {str(key)[:60]!r} appears twice in this mapping (which "
                        "one counts?); keep one",
                        problem_mark=key_node.start_mark,
                    )
                seen.add(key)
        return super().construct_mapping(node, deep)


def _strict_load(text: str) -> Any:
    loader = _StrictLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_yaml(path: str | os.PathLike[str]) -> Any:
    """Parse a YAML file strictly; every problem becomes a one-line ProfileError.

    The file must be a regular file of at most :data:`YAML_LIMIT` bytes; nesting beyond
    :data:`MAX_DEPTH`, aliases expanding beyond :data:`MAX_VALUES` values and a key given twice
    in one mapping are refused with their line and column.
    """
    p = os.fspath(path)
    data = read_regular(p, what="YAML file", limit=YAML_LIMIT, error=ProfileError)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ProfileError(f"{p}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    try:
        return _strict_load(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        kind = "YAML error" if isinstance(err, _Refused) else "YAML syntax error"
        raise ProfileError(f"{p}: {kind} at {where}: {err.problem}") from None
    except yaml.YAMLError as err:
        raise ProfileError(f"{p}: YAML error: {str(err).splitlines()[0]}") from None
    except RecursionError:
        raise ProfileError(f"{p}: nested too deeply to read") from None


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


_SHORT = reprlib.Repr()
_SHORT.maxstring = 60
_SHORT.maxother = 60
_SHORT.maxlevel = 3


def _show(v: Any) -> str:
    """A short repr: never builds the whole repr of a large value."""
    s = _SHORT.repr(v)
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
