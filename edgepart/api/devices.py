"""Devices and delegates as data: load, list and validate device profiles and delegate files."""

from __future__ import annotations

import os

# private: devices has no public "which kind of file is this" call yet; validate_yaml reads the
# schema key with the devices package's own YAML reader (its one-line errors) until it does
from edgepart.devices import _yaml
from edgepart.devices import delegate as _delegate
from edgepart.devices import profile as _profile
from edgepart.devices.delegate import DelegateSpec
from edgepart.devices.profile import DeviceProfile
from edgepart.errors import ProfileError

__all__ = ["delegate_names", "device_names", "load_delegate", "load_device", "validate_yaml"]

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
    doc = _yaml.load_yaml(p)
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
