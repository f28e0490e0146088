"""Read LiteRT's real arena layout of a model (XNNPACK off), in a child process.

Run as a script (``python tflite_probe.py MODEL.tflite [OP_MODELS_DIR]``) it prints one JSON
document: the data pointer and byte size of every tensor of subgraph 0 after
``allocate_tensors`` (model tensors and the kernel temporaries the runtime appended), and, for
every single-op model in ``OP_MODELS_DIR`` (``op<k>.tflite``, op ``k`` extracted alone), the
sizes of the temporaries that op allocates and whether they sit in the read-write arena. Kernel
temporaries depend only on the op and its shapes, so these tell which op owns which temporary of
the full model. A child process keeps a crashing kernel or pointer read away from pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["probe"]


def probe(model: Path, op_models: Path | None = None, timeout: float = 300) -> dict[str, Any]:
    """Run this file on ``model`` in a child process and return its JSON report."""
    args = [sys.executable, __file__, str(model)] + ([str(op_models)] if op_models else [])
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"probe of {model} failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _tensors(path: Path) -> dict[str, Any]:
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(
        model_path=str(path),
        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    n_model = it._interpreter.NumTensors(0)
    it.allocate_tensors()
    n_all = it._interpreter.NumTensors(0)
    rows = []
    for i in range(n_all):
        try:
            d = it._get_tensor_details(i, 0)
        except ValueError:  # a temporary without a shape: no storage
            rows.append([i, 0, 0])
            continue
        nbytes = int(np.prod(d["shape"])) * np.dtype(d["dtype"]).itemsize
        ptr = 0
        if nbytes:
            try:
                view = it.tensor(i)()
            except ValueError:  # not allocated (dynamic, or string)
                view = None
            # 0-d tensors come back as NumPy scalars (copies): address unknown, reported as -1.
            ptr = int(view.ctypes.data) if isinstance(view, np.ndarray) else -1 * (view is not None)
        rows.append([i, ptr, nbytes])
    return {"n_model": n_model, "tensors": rows}


def _op_temporaries(path: Path) -> list[list[int]]:
    """``[[nbytes, in_arena], ...]`` for the temporaries of a single-op model."""
    rep = _tensors(path)
    rows, n = rep["tensors"], rep["n_model"]
    io = [r for r in rows[:n] if r[1] > 0]
    temps = rows[n:]
    if not io:
        return [[r[2], 0] for r in temps]
    # With one op everything in the read-write arena is live at once, so the arena is packed:
    # sorted by address, each item starts where the previous one ends (64-byte aligned). Such
    # a chain through the op's inputs and outputs is the arena; persistent temporaries live in
    # separate heap blocks (a malloc header and the arena's alignment slack keep them off it).
    sized = sorted((r[1], r[2], r[0]) for r in rows if r[1] > 0 and r[2] > 0)
    chain_of: dict[int, int] = {}
    chain, end = -1, -1
    for ptr, nbytes, i in sized:
        if ptr != end:
            chain += 1
        chain_of[i] = chain
        end = ptr + -(-nbytes // 64) * 64
    arena = {chain_of[r[0]] for r in io if r[2] > 0}
    return [[r[2], int(r[0] in chain_of and chain_of[r[0]] in arena)] for r in temps]


def main(argv: list[str]) -> None:
    report = _tensors(Path(argv[0]))
    if len(argv) > 1:
        ops = {}
        for p in sorted(Path(argv[1]).glob("op*.tflite")):
            ops[p.stem[2:]] = _op_temporaries(p)
        report["op_temporaries"] = ops
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1:])
