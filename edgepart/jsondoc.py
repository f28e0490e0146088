"""Canonical JSON for bundle files and JSON Schema validation with one-line errors."""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any

import numpy as np

from edgepart.errors import BundleError, EdgepartError
from edgepart.fileio import read_regular

__all__ = [
    "MAX_DEPTH",
    "canonical",
    "dumps",
    "json_path",
    "load_file",
    "nesting_depth",
    "parse",
    "schema_doc",
    "schema_error",
    "text",
    "validate",
]


def canonical(
    value: Any,
    default: Callable[[Any], Any] | None = None,
    *,
    floats: Callable[[float], float] | None = None,
) -> Any:
    """Plain JSON values: NumPy scalars/arrays to Python, tuples to lists, non-finite to None.

    Other types raise ``TypeError``, or become ``default(value)`` when given. ``floats``, when
    given, maps every finite float (to round it: the last bits of a computed figure follow the
    CPU's summation order, and a file written from it should not).
    """
    if isinstance(value, Mapping):
        return {str(k): canonical(v, default, floats=floats) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [canonical(v, default, floats=floats) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if not math.isfinite(f):
            return None
        return floats(f) if floats is not None else f
    if value is None or isinstance(value, str):
        return value
    if default is not None:
        return default(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serializable: {value!r}")


def text(doc: Any, *, indent: int = 1, default: Callable[[Any], Any] | None = None) -> str:
    """JSON text with sorted keys and no trailing newline that is always valid JSON: NaN and
    infinities (which ``json.dumps`` writes as the non-JSON ``NaN``/``Infinity``) become null."""
    return json.dumps(canonical(doc, default), sort_keys=True, indent=indent, allow_nan=False)


def dumps(doc: Any) -> bytes:
    """Deterministic UTF-8 JSON: sorted keys, one-space indent, trailing newline."""
    text = json.dumps(canonical(doc), sort_keys=True, indent=1, allow_nan=False)
    return (text + "\n").encode("utf-8")


MAX_DEPTH = 64
"""Deepest nesting of arrays and objects any edgepart JSON document may have (the formats
need about 8); deeper documents are refused before anything recurses over them."""

MAX_INT_DIGITS = 19
"""Integers must fit in 64 bits: longer digit strings are refused before Python converts
them (which it refuses itself beyond 4,300 digits, with an unhelpful ``ValueError``)."""

_INT64 = (-(1 << 63), (1 << 63) - 1)


class _Refused(Exception):
    """Raised from the parser's hooks; turned into the caller's one-line error."""


def _parse_int(text: str) -> int:
    digits = len(text) - (text[0] == "-")
    if digits > MAX_INT_DIGITS:
        raise _Refused(f"integer {text[:24]}... has {digits} digits; numbers must fit in 64 bits")
    value = int(text)
    if not _INT64[0] <= value <= _INT64[1]:
        raise _Refused(f"integer {text} does not fit in 64 bits")
    return value


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"number {text[:24]} is too large for a 64-bit float")
    return value


def _parse_constant(text: str) -> Any:
    raise _Refused(f"{text} is not JSON (write a number, or null)")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _Refused(f"key {dup[:60]!r} appears twice in one object (which one counts?)")
    return out


def parse(
    data: bytes,
    where: str,
    *,
    error: type[EdgepartError] = BundleError,
    max_depth: int = MAX_DEPTH,
    constants: bool = False,
) -> Any:
    """Parse JSON bytes strictly, with bounded work; every defect is one ``error`` line.

    Refused: invalid UTF-8 or JSON (line and column named), ``NaN``/``Infinity`` (unless
    ``constants``: then they become floats, for a caller whose validator names the JSON path of
    every non-finite value), integers beyond 64 bits, floats that overflow, a key twice in one
    object, nesting deeper than ``max_depth``.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise error(f"{where}: not UTF-8 text (byte {err.start}); the file is corrupted") from None
    try:
        doc = json.loads(
            text,
            parse_int=_parse_int,
            parse_float=float if constants else _parse_float,
            parse_constant=float if constants else _parse_constant,
            object_pairs_hook=_object,
        )
    except json.JSONDecodeError as err:
        raise error(
            f"{where}: invalid JSON at line {err.lineno} column {err.colno} ({err.msg}); "
            "the file is corrupted or truncated"
        ) from None
    except _Refused as err:
        raise error(f"{where}: {err}") from None
    except RecursionError:
        raise error(
            f"{where}: nested deeper than {max_depth} levels; not an edgepart file"
        ) from None
    depth = nesting_depth(doc, max_depth)
    if depth > max_depth:
        raise error(f"{where}: nested deeper than {max_depth} levels; not an edgepart file")
    return doc


def nesting_depth(doc: Any, limit: int = MAX_DEPTH) -> int:
    """Depth of nested lists and dicts in ``doc`` (a scalar is 0), counted without recursion
    and only up to ``limit + 1``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            items: Any = v.values()
        elif isinstance(v, list):
            items = v
        else:
            continue
        deepest = max(deepest, d)
        if d > limit:
            return d
        stack.extend((x, d + 1) for x in items if isinstance(x, (dict, list)))
    return deepest


def load_file(
    path: str | os.PathLike[str],
    *,
    what: str,
    limit: int,
    error: type[EdgepartError],
    follow_symlinks: bool = True,
    dir_fd: int | None = None,
    constants: bool = False,
) -> Any:
    """Read a regular JSON file of at most ``limit`` bytes and :func:`parse` it."""
    p = os.fspath(path)
    data = read_regular(
        p, what=what, limit=limit, error=error, follow_symlinks=follow_symlinks, dir_fd=dir_fd
    )
    return parse(data, p, error=error, constants=constants)


def schema_doc(name: str) -> Any:
    """The parsed schema ``edgepart/schemas/<name>``."""
    text = resources.files("edgepart").joinpath("schemas").joinpath(name).read_text("utf-8")
    return json.loads(text)


@functools.cache
def _validator(name: str) -> Any:
    """A validator for ``name`` that resolves ``$ref`` to any other edgepart schema by its
    ``$id`` (``plan.schema.json`` extends ``bundle_plan.schema.json`` this way)."""
    # jsonschema and referencing take ~80 ms to import (attrs, rpds): loaded only when a
    # document is validated, not by every module that reads or writes JSON
    import jsonschema
    from referencing import Registry, Resource

    registry: Registry[Any] = Registry()
    folder = resources.files("edgepart").joinpath("schemas")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".schema.json"):
            doc = schema_doc(entry.name)
            registry = registry.with_resource(doc["$id"], Resource.from_contents(doc))
    return jsonschema.Draft202012Validator(schema_doc(name), registry=registry)


def json_path(path: Sequence[Any]) -> str:
    """``$.partitions[2].ops[0]`` style location."""
    out = "$"
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def schema_error(validator: Any, doc: Any, schema: str, where: str) -> str | None:
    """The one-line message for the most relevant error of ``doc`` under ``validator`` (a
    ``jsonschema`` validator for ``schema``), or None if ``doc`` is valid."""
    import jsonschema  # heavy (see _validator)

    errors = list(validator.iter_errors(doc))
    if not errors:
        return None
    err = jsonschema.exceptions.best_match(errors)
    # best_match may pick a oneOf parent; its deepest context names the field that is wrong
    while err.context:
        err = jsonschema.exceptions.best_match(err.context)
    msg = err.message
    if len(msg) > 160:
        msg = msg[:157] + "..."
    return f"{where}: {json_path(err.absolute_path)}: {msg} (schema {schema})"


def validate(
    doc: Any, schema: str, where: str, *, error: type[EdgepartError] = BundleError
) -> None:
    """Validate ``doc`` against ``edgepart/schemas/<schema>``; raise the most relevant error
    as ``error`` (one line with the JSON path)."""
    msg = schema_error(_validator(schema), doc, schema, where)
    if msg is not None:
        raise error(msg)
