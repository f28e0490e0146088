"""Measuring on Android phones through adb.

Device access lives in :mod:`edgepart.android.adb` (``Device``, ``list_devices``) on top of
:mod:`edgepart.android.server` (where the adb server is, its protocol, the ``adb`` binary) and
:mod:`edgepart.android.shell` (commands with deadlines). Nothing is imported here so that
``import edgepart.android.<module>`` stays cheap.
"""

from __future__ import annotations

__all__: list[str] = []
