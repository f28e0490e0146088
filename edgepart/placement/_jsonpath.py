"""Small helpers that check JSON values and raise :class:`CostGraphError` naming the JSON path."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from edgepart.errors import CostGraphError

NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
MAX_INT = 1 << 50
"""Largest integer (a byte count) in a cost graph: 1 PiB; sums over every node stay far from
the 64-bit limit (``_cgparse`` checks the totals)."""


class Ctx:
    """Where the document came from, prefixed to every message."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, what: str) -> NoReturn:
        """Raise a one-line :class:`CostGraphError` for ``path``."""
        raise CostGraphError(f"{self.source}: {path}: {what}")

    def obj(self, v: Any, path: str, required: Sequence[str], optional: Sequence[str]) -> None:
        """Check that ``v`` is an object with the required keys and no unknown ones."""
        if not isinstance(v, Mapping):
            self.fail(path, f"expected an object, got {_kind(v)}")
        for k in required:
            if k not in v:
                self.fail(path, f"missing required key {k!r}")
        allowed = set(required) | set(optional)
        for k in v:
            if k not in allowed:
                key = str(k) if NAME_RE.match(str(k)) else f"[{json.dumps(str(k))[:80]}]"
                self.fail(
                    f"{path}.{key}" if path and not key.startswith("[") else f"{path}{key}",
                    f"unknown key; allowed keys are {', '.join(sorted(allowed))}",
                )

    def array(self, v: Any, path: str, *, nonempty: bool = False) -> list[Any]:
        if not isinstance(v, list):
            self.fail(path, f"expected an array, got {_kind(v)}")
        if nonempty and not v:
            self.fail(path, "expected a non-empty array")
        return v

    def name(self, v: Any, path: str) -> str:
        if not isinstance(v, str) or not NAME_RE.match(v):
            self.fail(path, f"expected a name of letters, digits, '_', '.', '-', got {v!r}")
        return v

    def string(self, v: Any, path: str) -> str:
        if not isinstance(v, str):
            self.fail(path, f"expected a string, got {_kind(v)}")
        return v

    def integer(self, v: Any, path: str, *, minimum: int = 0, maximum: int = MAX_INT) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            # 1e6 written as a float is accepted only if integral.
            if isinstance(v, float) and math.isfinite(v) and v.is_integer():
                v = int(v)
            else:
                self.fail(path, f"expected an integer >= {minimum}, got {v!r}")
        if v < minimum:
            self.fail(path, f"expected an integer >= {minimum}, got {v}")
        if v > maximum:
            self.fail(path, f"{v} is out of range; allowed: <= {maximum}")
        return int(v)

    def number(self, v: Any, path: str, *, positive: bool = False) -> float:
        ok = not isinstance(v, bool) and isinstance(v, (int, float))
        if ok:
            f = float(v)
            ok = math.isfinite(f) and (f > 0 if positive else f >= 0)
        if not ok:
            bound = "> 0" if positive else ">= 0"
            self.fail(path, f"expected a finite number {bound}, got {v!r}")
        return f

    def boolean(self, v: Any, path: str) -> bool:
        if not isinstance(v, bool):
            self.fail(path, f"expected true or false, got {v!r}")
        return v

    def node_id(self, v: Any, path: str) -> int | str:
        if isinstance(v, bool) or not isinstance(v, (int, str)) or (isinstance(v, int) and v < 0):
            self.fail(path, f"expected a node id (integer >= 0 or string), got {v!r}")
        if isinstance(v, str) and not v:
            self.fail(path, "expected a non-empty node id")
        return v

    def label(self, v: Any, path: str) -> int | str:
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            self.fail(path, f"expected a tensor label (integer or string), got {v!r}")
        return v


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, Mapping):
        return "an object"
    return type(v).__name__
