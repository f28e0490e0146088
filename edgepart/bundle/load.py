"""Loading a bundle directory: refuse anything corrupted, incomplete or of an unknown version.

A bundle is data from anywhere: files are opened relative to the bundle directory without
following symbolic links (a link inside a bundle could point anywhere), must be regular files
(never a FIFO or device), and are read only up to the size the manifest records.
"""

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
from edgepart.fileio import MiB, open_regular, read_regular

__all__ = ["MANIFEST_LIMIT", "load_bundle"]

MANIFEST_LIMIT = 16 * MiB
"""Largest ``manifest.json`` read (a manifest lists a few files: a few KiB)."""


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
    if not os.path.lexists(root / "manifest.json"):
        raise BundleError(
            f"{where}: missing; {root} is not an edgepart bundle (or was not completely written)"
        )
    raw = read_regular(
        root / "manifest.json",
        what="bundle manifest",
        limit=MANIFEST_LIMIT,
        error=BundleError,
        follow_symlinks=False,
    )
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
    try:
        root_fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as err:
        raise BundleError(f"{root}: cannot open the bundle directory ({err.strerror})") from None
    dirs: dict[str, int] = {"": root_fd}
    try:
        for entry in manifest["files"]:
            rel = entry["path"]
            if rel in out:
                raise BundleError(f"{root}/manifest.json: lists {rel} twice")
            out[rel] = _read_listed(root, dirs, rel, entry)
    finally:
        for fd in dirs.values():
            os.close(fd)
    return out


def _read_listed(root: Path, dirs: dict[str, int], rel: str, entry: Mapping[str, Any]) -> bytes:
    """One listed file, opened below the bundle directory without following any link."""
    head, _, name = rel.rpartition("/")
    parent = dirs.get(head)
    if parent is None:  # the schema allows one level: partitions/
        try:
            parent = os.open(
                head,
                os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0),
                dir_fd=dirs[""],
            )
        except FileNotFoundError:
            raise _missing(root, rel) from None
        except OSError as err:
            raise BundleError(
                f"{root}/{head}: not a directory inside the bundle ({err.strerror}); a bundle "
                "holds no symbolic links"
            ) from None
        dirs[head] = parent
    if not os.path.lexists(root / rel):
        raise _missing(root, rel)
    fd = open_regular(
        name,
        what="bundle file",
        error=BundleError,
        follow_symlinks=False,
        dir_fd=parent,
    )
    try:
        size = os.fstat(fd).st_size
        want = int(entry["bytes"])
        if size != want:
            what = "truncated" if size < want else "larger than recorded"
            raise BundleError(
                f"{root}/{rel}: {what}: {size} bytes, manifest.json records "
                f"{want}; re-create the bundle"
            )
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(want + 1)
    except OSError as err:
        raise BundleError(f"{root}/{rel}: cannot read ({err.strerror})") from None
    finally:
        os.close(fd)
    if len(data) != want:
        raise BundleError(
            f"{root}/{rel}: changed while it was read ({len(data)} bytes, manifest.json "
            f"records {want}); re-create the bundle"
        )
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["sha256"]:
        raise BundleError(
            f"{root}/{rel}: checksum mismatch: sha256 {digest[:16]}..., manifest.json "
            f"records {entry['sha256'][:16]}...; the file is corrupted, re-create the bundle"
        )
    return data


def _missing(root: Path, rel: str) -> BundleError:
    return BundleError(
        f"{root}/{rel}: missing (listed in manifest.json); the bundle is incomplete, re-create it"
    )
