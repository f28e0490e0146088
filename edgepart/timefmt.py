"""Durations for people: three significant figures in a unit that fits (``s``, ``ms``, ``µs``,
``ns``), so a 4-microsecond model never prints as ``0.000 ms``.

>>> format_seconds(0.0123), format_seconds(4.2e-6), format_seconds(1.5), format_seconds(0)
('12.3 ms', '4.20 µs', '1.50 s', '0 s')
"""

from __future__ import annotations

import math

__all__ = ["format_seconds"]

_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def format_seconds(seconds: float | None, *, digits: int = 3) -> str:
    """``seconds`` with ``digits`` significant figures in the largest unit it reaches.

    ``None`` gives ``"n/a"``, infinity ``"inf"`` and NaN ``"nan"``.
    """
    if seconds is None:
        return "n/a"
    if math.isnan(seconds):
        return "nan"
    if math.isinf(seconds):
        return "inf" if seconds > 0 else "-inf"
    if seconds == 0:
        return "0 s"
    rounded, unit = seconds, "ns"
    for scale, name in _UNITS:
        rounded = float(f"{seconds / scale:.{digits}g}")
        unit = name
        if abs(rounded) >= 1:
            break
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:.{decimals}f} {unit}"
