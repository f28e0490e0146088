"""Canonical JSON for bundle files and JSON Schema validation with one-line errors."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

import numpy as np

from edgepart.errors import BundleError, EdgepartError

__all__ = ["canonical", "dumps", "json_path", "parse", "schema_doc", "schema_error", "validate"]


def canonical(value: Any) -> Any:
    """Plain JSON values: NumPy scalars/arrays to Python, tuples to lists, non-finite to None."""
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [canonical(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else None
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{type(value).__name__} is not JSON-serializable: {value!r}")


def dumps(doc: Any) -> bytes:
    """Deterministic UTF-8 JSON: sorted keys, one-space indent, trailing newline."""
    text = json.dumps(canonical(doc), sort_keys=True, indent=1, allow_nan=False)
    return (text + "\n").encode("utf-8")


def parse(data: bytes, where: str) -> Any:
    """Parse JSON bytes; a syntax error becomes a :class:`BundleError` naming line and column."""
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise BundleError(
            f"{where}: not UTF-8 text (byte {err.start}); the file is corrupted"
        ) from None
    except json.JSONDecodeError as err:
        raise BundleError(
            f"{where}: invalid JSON at line {err.lineno} column {err.colno} ({err.msg}); "
            "the file is corrupted or truncated"
        ) from None


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
