"""Convert one source in every quantization mode in this (child) process; print JSON results.

``python run_matrix.py SOURCE OUT_DIR [--calibration-data DIR] [MODE ...]`` converts ``SOURCE``
with :func:`edgepart.convert.convert_model` once per mode (default: all four) into
``OUT_DIR/<mode>.tflite`` and writes one JSON list of ``ConversionResult.to_dict()`` to
``OUT_DIR/results.json``. The tests
run it in a child process so TensorFlow never loads into the pytest process; conversions in one
process share nothing but TensorFlow itself (each builds its own function and converter).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from edgepart.convert import QUANTIZE_MODES, convert_model


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("source")
    p.add_argument("out")
    p.add_argument("modes", nargs="*", default=list(QUANTIZE_MODES))
    p.add_argument("--calibration-data")
    args = p.parse_args()
    out = Path(args.out)
    results = []
    for mode in args.modes:
        res = convert_model(
            args.source,
            out / f"{mode}.tflite",
            quantize=mode,
            calibration_data=args.calibration_data,
        )
        results.append(res.to_dict())
    (out / "results.json").write_text(json.dumps(results, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
