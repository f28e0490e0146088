"""Predicted XNNPACK partitions equal LiteRT's DELEGATE nodes on every LiteRT-runnable model of
the real-model corpus, at the input sizes the manifest runs them at and at other sizes, in both
clustering modes (ops and boundary tensors, not only the count).

The oracle (``litert_oracle``) resizes the inputs before ``allocate_tensors``, as an application
does; the prediction claims on the model with those sizes propagated
(:func:`edgepart.ir.shapes.apply_input_shapes`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from litert_oracle import litert_delegates_isolated

from edgepart.claim.delegation import claim
from edgepart.ir.shapes import apply_input_shapes
from edgepart.tflite.reader import read_model

# Other sizes for the models with dynamic inputs (LiteRT input name -> shape).
OTHER_SIZES: dict[str, dict[str, list[int]]] = {
    "oww_melspectrogram": {"serving_default_input:0": [2, 3200]},
    "star_trek_activation_phrase": {"audio_preproc_input": [2, 44032]},
    "basic_pitch_nmp": {"serving_default_input_2:0": [2, 43844, 1]},
    "oww_embedding": {"serving_default_input_1:0": [4, 76, 32, 1]},
}


def _predicted(path: Path, shapes: dict[str, list[int]], greedy: bool) -> list[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = apply_input_shapes(read_model(path), shapes)
    return [
        (tuple(sorted(p.ops)), p.inputs, p.outputs)
        for p in claim(m, greedy=greedy).partitions("xnnpack")
    ]


@pytest.mark.slow
def test_real_models_match_litert(
    real_models: dict[str, Path], real_models_manifest: dict[str, Any]
) -> None:
    checked, failures = [], []
    for name, path in real_models.items():
        entry = real_models_manifest[name]
        if not entry["runnable"]:
            continue
        sizes = [dict(entry.get("input_shapes") or {})]
        if name in OTHER_SIZES:
            sizes.append(OTHER_SIZES[name])
        for shapes in sizes:
            want = litert_delegates_isolated(path, shapes=shapes)
            assert not isinstance(want, str), want
            for greedy in (True, False):
                got = _predicted(path, shapes, greedy)
                oracle = [(d.ops, d.inputs, d.outputs) for d in want[greedy]]
                if got != oracle:
                    failures.append(
                        f"{name} {shapes} greedy={greedy}: LiteRT {len(oracle)} DELEGATE nodes "
                        f"{[o[0][:4] for o in oracle]}, predicted {len(got)} "
                        f"{[g[0][:4] for g in got]}"
                    )
            checked.append(name)
    assert len(set(checked)) >= 30, checked
    assert not failures, "\n".join(failures)
