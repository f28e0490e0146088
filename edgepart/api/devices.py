"""Devices and delegates as data: load, list and validate device profiles and delegate files."""

from __future__ import annotations

import os

from edgepart.devices import delegate as _delegate
from edgepart.devices import profile as _profile
from edgepart.devices import search_path, yaml_files
from edgepart.devices.delegate import DelegateSpec
from edgepart.devices.profile import DeviceProfile
from edgepart.errors import ProfileError, UsageError

__all__ = [
    "catalog",
    "delegate_names",
    "device_names",
    "load_delegate",
    "load_device",
    "validate_yaml",
]

_SCHEMAS = {"edgepart/device@1": "device", "edgepart/delegate@1": "delegate"}


def load_device(name_or_path: str | os.PathLike[str]) -> DeviceProfile:
    """Load a device profile: a shipped name (``"pixel8"``) or any profile YAML file by path.

    Parameters
    ----------
    name_or_path
        A name from :func:`device_names`, or a path (anything with a path separator or a
        ``.yaml``/``.yml`` suffix).

    Returns
    -------
    DeviceProfile
        Processors (kind, delegate, units, threads, peaks, memory domain), memory domains,
        links, default delegates; every number with its provenance.

    Raises
    ------
    ProfileError
        An unknown name (listing the shipped ones) or an invalid file (file and key path).

    Examples
    --------
    >>> import edgepart
    >>> device = edgepart.load_device("pixel8")
    >>> device.title, [p.name for p in device.processors]
    ('Google Pixel 8 (Tensor G3)', ['cpu', 'gpu', 'tpu'])
    """
    return _profile.load_profile(name_or_path)


def load_delegate(name_or_path: str | os.PathLike[str]) -> DelegateSpec:
    """Load a delegate's capability file: a shipped name (``"gpu"``) or a YAML file by path.

    Parameters
    ----------
    name_or_path
        A name from :func:`delegate_names`, or a path.

    Returns
    -------
    DelegateSpec
        The op rules (versions, ranks, constraints with TFLite's reason text) and the claiming
        policy (partition caps, minimum partition size).

    Raises
    ------
    ProfileError
        An unknown name (listing the shipped ones) or an invalid file (file and key path).

    Examples
    --------
    >>> import edgepart
    >>> gpu = edgepart.load_delegate("gpu")
    >>> "CONV_2D" in gpu.ops
    True
    """
    return _delegate.load_delegate(name_or_path)


def device_names() -> list[str]:
    """Names of the shipped device profiles, sorted.

    Examples
    --------
    >>> import edgepart
    >>> "pixel8" in edgepart.device_names()
    True
    """
    return _profile.profile_names()


def delegate_names() -> list[str]:
    """Names of the shipped delegate files, sorted.

    Examples
    --------
    >>> import edgepart
    >>> "xnnpack" in edgepart.delegate_names()
    True
    """
    return _delegate.delegate_names()


def validate_yaml(path: str | os.PathLike[str]) -> str:
    """Check a device-profile or delegate YAML file; return which it is.

    Parameters
    ----------
    path
        A YAML file whose ``schema`` key is ``edgepart/device@1`` or ``edgepart/delegate@1``.

    Returns
    -------
    str
        ``"device"`` or ``"delegate"``.

    Raises
    ------
    ProfileError
        Unreadable YAML, an unknown ``schema``, or any invalid field (file and key path).

    Examples
    --------
    >>> import edgepart
    >>> edgepart.validate_yaml("device_profiles/pixel8.yaml")
    'device'
    """
    p = os.fspath(path)
    doc = yaml_files.load_yaml(p)
    schema = doc.get("schema") if isinstance(doc, dict) else None
    kind = _SCHEMAS.get(str(schema)) if schema is not None else None
    if kind is None:
        raise ProfileError(
            f"{p}: schema: {schema!r} is not allowed; allowed: {', '.join(_SCHEMAS)}"
        )
    # a bare file name would be taken for a shipped name: make it a path
    as_path = p if p.endswith((".yaml", ".yml")) or "/" in p else f"./{p}"
    if kind == "device":
        _profile.load_profile(as_path)
    else:
        _delegate.load_delegate(as_path)
    return kind


def catalog(kind: str) -> list[search_path.CatalogEntry]:
    """Every device profile or delegate name on the search path, with where its file comes from.

    Parameters
    ----------
    kind
        ``"device_profiles"`` or ``"delegates"``.

    Returns
    -------
    list of CatalogEntry
        Sorted by name: the file that wins (``path``), where it was found (``origin``:
        ``"--search-path"``, ``"EDGEPART_PATH"``, ``"shipped"``, ...) and the files of the same
        name it hides (``shadows``). See ``docs/profiles.md`` for the search path.

    Raises
    ------
    UsageError
        A directory on the search path does not exist or holds neither folder.

    Examples
    --------
    >>> import edgepart
    >>> [(e.name, e.origin) for e in edgepart.catalog("delegates")][:2]
    [('cpu_builtin', 'shipped'), ('edgetpu', 'shipped')]
    """
    if kind not in ("device_profiles", "delegates"):
        raise UsageError(f"catalog kind {kind!r}: give 'device_profiles' or 'delegates'")
    return search_path.catalog(kind)
