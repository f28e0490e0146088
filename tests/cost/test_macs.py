"""MAC counts of standard Keras networks against their published figures (within 3%)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from edgepart.cost.work import op_work
from edgepart.tflite.reader import read_model

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "published"),
    [
        ("mobilenet_v2_224", 300e6),  # Sandler et al. 2018, Table 4: 300M multiply-adds
        ("resnet50", 3.9e9),  # Keras ResNet50 (v1): ~3.9 G multiply-adds
    ],
)
def test_published_mac_counts(name, published):
    import build_corpus

    m = read_model(build_corpus.ensure(name))
    w = op_work(m.main, m)
    macs = float(w.macs.sum())
    assert abs(macs / published - 1) < 0.03, f"{name}: {macs / 1e6:.1f} M MACs"
    assert w.known.all()
