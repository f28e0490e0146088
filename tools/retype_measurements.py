#!/usr/bin/env python3
"""Re-derive the kernel types of saved calibration measurements with the current kernel rules.

``edgepart calibrate --host`` stores each chain's kernels (types, features) beside its timings.
When the kernel rules change (a kernel type is split by context, as ``@qd8`` split the builtin
kernels that run after XNNPACK's dynamically quantized ones), the timings stay valid but the
stored types do not: this rebuilds every chain from its spec (:func:`edgepart.profiling.
kernel_gen.build_chain`, deterministic), decomposes it again and writes the measurements with
the new types. The features must come out identical (the script stops otherwise: then the
chains have to be measured again). Refit the output with ``calibrate --host --fit-only``.

``--geometry``: the rules that derive a kernel's geometric features (rows, reduction length,
kernel size ...) changed too, as when a slice's rows became its contiguous runs: those features
are re-derived as well, and the work units that follow from them (an XNNPACK pad's MACs are its
rows). The kernels and their bytes, data type and footprint must still come out identical,
since the timings are of the same chains.

Usage::

    python tools/retype_measurements.py [--geometry] IN.measurements.npz OUT.measurements.npz
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from edgepart.cost.kernels import FEATURES, WORK_FEATURES, decompose
from edgepart.errors import EdgepartError
from edgepart.profiling.calibrate import load_measurements
from edgepart.profiling.kernel_gen import build_chain


def retype(src: str, dst: str, *, geometry: bool = False) -> int:
    """Write ``src``'s measurements to ``dst`` with re-derived kernel types (and geometric
    features, with ``geometry``); chain decompositions changed."""
    meas = load_measurements(src)
    # with geometry, only the features a kernel's work sets must come out the same; its work
    # units (``macs``) may follow its geometry (an XNNPACK pad's are its rows)
    cols = (
        [k for k, n in enumerate(FEATURES) if n in WORK_FEATURES - {"macs"}]
        if geometry
        else slice(None)
    )
    changed = 0
    for c in meas.chains:
        if not c.kernels:
            continue
        model = build_chain(c.spec)
        for ex, k in sorted(c.kernels.items()):
            new = decompose(model, ex)
            same = len(new.types) == len(k.types) and np.array_equal(
                new.features[:, cols], k.features[:, cols], equal_nan=True
            )
            if not same:
                what = "kernels or their work" if geometry else "kernels' features"
                raise SystemExit(
                    f"chain seed {c.spec.seed} ({ex}): the {what} changed, not only "
                    "their types; measure again (edgepart calibrate --host)"
                )
            moved = not np.array_equal(new.features, k.features, equal_nan=True)
            if new.types != k.types or moved:
                changed += 1
                k.types = list(new.types)
                k.features = new.features
    meas.save(dst)
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", help="measurements (.npz) written by edgepart calibrate --host")
    ap.add_argument("dst", help="where to write the retyped measurements (.npz)")
    ap.add_argument(
        "--geometry", action="store_true", help="re-derive the geometric features as well"
    )
    args = ap.parse_args(argv)
    try:
        n = retype(args.src, args.dst, geometry=args.geometry)
    except EdgepartError as err:  # a missing or foreign file: one line, as the CLI says it
        print(f"retype_measurements: error: {err}", file=sys.stderr)
        return 2
    print(f"{n} chain decompositions retyped; wrote {args.dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
