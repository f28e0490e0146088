"""Loading a bundle directory: refuse anything corrupted, incomplete or of an unknown version."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from edgepart import jsondoc as _json
from edgepart.bundle.format import (
    BUNDLE_FORMAT,
    Bundle,
    arena_from_doc,
    check_format,
    plan_from_doc,
)
from edgepart.errors import BundleError

__all__ = ["load_bundle"]


def load_bundle(path: str | os.PathLike[str]) -> Bundle:
    """Load and verify a bundle directory (or its ``manifest.json``).

    Every file the manifest lists is read once, its size and SHA-256 checked, and the bytes
    checked are the bytes used (no second read). The plan and arena are validated against
    their schemas and cross-checked.

    Parameters
    ----------
    path
        The bundle directory (or its ``manifest.json``).

    Returns
    -------
    Bundle
        The verified manifest, plan, partition bytes, arena (if any) and report.

    Raises
    ------
    BundleError
        One line naming the file and the problem: missing directory or manifest, unknown
        format or version, schema violation (with its JSON path), missing, truncated or
        corrupted file, or an inconsistent plan or arena.

    Examples
    --------
    >>> import tempfile, edgepart
    >>> out = tempfile.mkdtemp() + "/mnv2"
    >>> _ = edgepart.compile("examples/models/mobilenet_v2.tflite", "pixel8").save(out)
    >>> bundle = edgepart.load_bundle(out)
    >>> bundle.plan.device_profile, [p.file for p in bundle.plan.partitions]
    ('pixel8', ['partitions/p0.tflite'])
    """
    root = Path(path)
    if root.name == "manifest.json" and root.is_file():
        root = root.parent
    if not root.exists():
        raise BundleError(f"{root}: no such bundle directory")
    if not root.is_dir():
        hint = " (a model, not a bundle: partition it first)" if root.suffix == ".tflite" else ""
        raise BundleError(f"{root}: not a bundle directory{hint}")
    where = f"{root}/manifest.json"
    try:
        raw = (root / "manifest.json").read_bytes()
    except FileNotFoundError:
        raise BundleError(
            f"{where}: missing; {root} is not an edgepart bundle (or was not completely written)"
        ) from None
    manifest = _json.parse(raw, where)
    check_format(manifest, BUNDLE_FORMAT, where)
    _json.validate(manifest, "bundle_manifest.schema.json", where)
    files = _read_listed_files(root, manifest)
    roles = {e["path"]: e["role"] for e in manifest["files"]}
    plan_files = [p for p, r in roles.items() if r == "plan"]
    if plan_files != ["plan.json"]:
        raise BundleError(f"{where}: must list plan.json with role 'plan' (lists {plan_files})")
    plan = plan_from_doc(_json.parse(files["plan.json"], f"{root}/plan.json"), f"{root}/plan.json")
    if plan.device_profile != manifest["device_profile"]:
        raise BundleError(
            f"{root}/plan.json: device_profile {plan.device_profile!r} differs from the "
            f"manifest's {manifest['device_profile']!r}; the bundle was assembled inconsistently"
        )
    listed = {p for p, r in roles.items() if r == "partition"}
    used = {p.file for p in plan.partitions}
    if used - listed:
        missing = sorted(used - listed)[0]
        raise BundleError(f"{where}: plan.json uses {missing}, which the manifest does not list")
    if listed - used:
        extra = sorted(listed - used)[0]
        raise BundleError(f"{where}: lists {extra}, which no partition of plan.json uses")
    arena = None
    if "arena.json" in files:
        arena = arena_from_doc(
            _json.parse(files["arena.json"], f"{root}/arena.json"), plan, f"{root}/arena.json"
        )
    report = files["report.txt"].decode("utf-8", "replace") if "report.txt" in files else ""
    return Bundle(
        path=root,
        manifest=manifest,
        plan=plan,
        partition_bytes={p.id: files[p.file] for p in plan.partitions},
        arena=arena,
        report=report,
    )


def _read_listed_files(root: Path, manifest: Mapping[str, Any]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for entry in manifest["files"]:
        rel = entry["path"]
        if rel in out:
            raise BundleError(f"{root}/manifest.json: lists {rel} twice")
        try:
            data = (root / rel).read_bytes()
        except FileNotFoundError:
            raise BundleError(
                f"{root}/{rel}: missing (listed in manifest.json); the bundle is incomplete, "
                "re-create it"
            ) from None
        except IsADirectoryError:
            raise BundleError(f"{root}/{rel}: is a directory, expected a file") from None
        if len(data) != entry["bytes"]:
            what = "truncated" if len(data) < entry["bytes"] else "larger than recorded"
            raise BundleError(
                f"{root}/{rel}: {what}: {len(data)} bytes, manifest.json records "
                f"{entry['bytes']}; re-create the bundle"
            )
        digest = hashlib.sha256(data).hexdigest()
        if digest != entry["sha256"]:
            raise BundleError(
                f"{root}/{rel}: checksum mismatch: sha256 {digest[:16]}..., manifest.json "
                f"records {entry['sha256'][:16]}...; the file is corrupted, re-create the bundle"
            )
        out[rel] = data
    return out
