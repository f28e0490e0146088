"""edgepart: partition TFLite (LiteRT) models across the processors of edge devices."""

from __future__ import annotations

from edgepart.errors import EdgepartError, ModelFormatError

__version__ = "0.1.0"

__all__ = ["EdgepartError", "ModelFormatError", "__version__"]
