"""A latency table the user gave must back some processor: else say what to pass.

Table processors back profile processors of the same name, or those ``table_for`` maps to them.
A table measured on this host (processor ``host_xnnpack_1t``) names no processor of a phone
profile, so without a mapping it would be silently ignored; :func:`check_tables_used` makes
that one line naming the mapping to give.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from edgepart.cost.table import LatencyTable
from edgepart.errors import UsageError

__all__ = ["check_tables_used"]


def check_tables_used(
    tables: LatencyTable | None,
    processors: Sequence[tuple[str, str]],
    table_for: Mapping[str, str],
    device: str,
) -> None:
    """Raise when ``tables`` has processors but none backs one of ``processors``.

    Parameters
    ----------
    tables
        The merged tables the user gave (None: nothing to check).
    processors
        ``(name, kind)`` of the device profile's processors.
    table_for
        Profile processor -> table processor mappings.
    device
        The profile's name, for the message.

    Raises
    ------
    UsageError
        One line: the table's processors, the profile's, and the ``--table-for`` to pass.
    """
    if tables is None or not tables.processors:
        return
    used = {table_for.get(name, name) for name, _ in processors}
    if used & set(tables.processors):
        return
    have = ", ".join(sorted(tables.processors))
    names = ", ".join(name for name, _ in processors)
    target = next((name for name, kind in processors if kind == "cpu"), processors[0][0])
    first = sorted(tables.processors)[0]
    raise UsageError(
        f"--latency-table: the table's processor(s) {have} back no processor of {device} "
        f"({names}); tables match processors by name, so give the mapping, e.g. "
        f"--table-for {target}={first} (table_for={{'{target}': '{first}'}} in the API)"
    )
