#!/usr/bin/env python3
"""Re-derive the kernel types of saved calibration measurements with the current kernel rules.

``edgepart calibrate --host`` stores each chain's kernels (types, features) beside its timings.
When the kernel rules change (a kernel type is split by context, as ``@qd8`` split the builtin
kernels that run after XNNPACK's dynamically quantized ones), the timings stay valid but the
stored types do not: this rebuilds every chain from its spec (:func:`edgepart.profiling.
kernel_gen.build_chain`, deterministic), decomposes it again and writes the measurements with
the new types. The features must come out identical (the script stops otherwise: then the
chains have to be measured again). Refit the output with ``calibrate --host --fit-only``.

Usage::

    python tools/retype_measurements.py IN.measurements.npz OUT.measurements.npz
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from edgepart.cost.kernels import decompose
from edgepart.errors import EdgepartError
from edgepart.profiling.calibrate import load_measurements
from edgepart.profiling.kernel_gen import build_chain


def retype(src: str, dst: str) -> int:
    """Write ``src``'s measurements to ``dst`` with re-derived kernel types; chains changed."""
    meas = load_measurements(src)
    changed = 0
    for c in meas.chains:
        if not c.kernels:
            continue
        model = build_chain(c.spec)
        for ex, k in sorted(c.kernels.items()):
            new = decompose(model, ex)
            same = len(new.types) == len(k.types) and np.array_equal(
                new.features, k.features, equal_nan=True
            )
            if not same:
                raise SystemExit(
                    f"chain seed {c.spec.seed} ({ex}): the kernels' features changed, not only "
                    "their types; measure again (edgepart calibrate --host)"
                )
            if new.types != k.types:
                changed += 1
                k.types = list(new.types)
    meas.save(dst)
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", help="measurements (.npz) written by edgepart calibrate --host")
    ap.add_argument("dst", help="where to write the retyped measurements (.npz)")
    args = ap.parse_args(argv)
    try:
        n = retype(args.src, args.dst)
    except EdgepartError as err:  # a missing or foreign file: one line, as the CLI says it
        print(f"retype_measurements: error: {err}", file=sys.stderr)
        return 2
    print(f"{n} chain decompositions retyped; wrote {args.dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
