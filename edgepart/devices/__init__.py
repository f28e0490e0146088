"""Delegates and device profiles as data: loading, validation and capability predicates."""

from __future__ import annotations

__all__: list[str] = []
