"""Cost graphs: loaded from a file as ``partition --costgraph`` loads them, then placed and
evaluated on the CPU (the arrays a document produces must be usable, not just built)."""

from __future__ import annotations

import atexit
import os
import tempfile

import numpy as np

from edgepart.placement.costgraph import load_costgraph
from edgepart.placement.evaluate import evaluate

from . import seeds

_DIR = tempfile.mkdtemp(prefix="edgepart-fuzz-cg-")
_PATH = os.path.join(_DIR, "input.json")
atexit.register(lambda: (os.path.exists(_PATH) and os.unlink(_PATH), os.rmdir(_DIR)))


def one_input(data: bytes) -> None:
    with open(_PATH, "wb") as f:
        f.write(data)
    g = load_costgraph(_PATH)
    evaluate(g, np.zeros(g.num_nodes, dtype=np.int64))


def seed_inputs() -> list[bytes]:
    return seeds.costgraphs()


MAX_LEN = 16_384
