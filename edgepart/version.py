"""The edgepart version (one place; the package and every bundle manifest record it)."""

__version__ = "0.1.0"
