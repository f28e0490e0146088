"""Which ops each delegate takes and how TFLite partitions them (an exact model of LiteRT)."""

from __future__ import annotations

__all__: list[str] = []
