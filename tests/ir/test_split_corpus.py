"""Acceptance of the split rewrites on the corpus (``tools/split_sweep.py`` does the work).

Every default-corpus model with conv, fully-connected or matmul layers, split 2, 3 and 4 ways
with uneven ratios: exact modes (output channels, columns, batch) on every eligible layer at
once give bit-identical outputs with XNNPACK and bit-identical values of every source tensor
with the builtin kernels; float row splits and Megatron blocks stay within the documented
tolerance (``split_sweep.ROW_TOLERANCE``); layers that cannot be split say why.
"""

from __future__ import annotations

import os

import pytest
import split_sweep

SPLITTABLE = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "BATCH_MATMUL")
DEFAULT = (
    "mobilenet_v2",
    "mobilenet_v2_int8",
    "mobilenet_v2_dynamic",
    "mobilenet_v2_fp16",
    "sparse_mlp",
    "custom_op",
    "cond",
    "while_loop",
    "resource_vars",
    "lstm",
    "transformer",
    "dynamic_batch",
    "multi_signature",
    "densenet_tiny",
)
# exact splits expected per model at k = 2, 3, 4 (every conv/FC/matmul wide enough)
EXPECTED_EXACT = {
    "mobilenet_v2": (50, 45, 41),
    "mobilenet_v2_int8": (53, 52, 52),  # a 16-channel int8 depthwise: 2 blocks of 8 at most
    "mobilenet_v2_fp16": (50, 45, 41),
    "transformer": (14, 16, 12),
    "densenet_tiny": (16, 14, 13),
}


def test_the_default_corpus_is_covered(corpus):
    from edgepart.tflite.reader import read_model

    with_layers = []
    for name, path in corpus.items():
        sg = read_model(path).main
        if any(sg.op_name(i) in SPLITTABLE for i in range(sg.num_ops)):
            with_layers.append(name)
    assert sorted(with_layers) == sorted(DEFAULT)


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("name", DEFAULT)
def test_forced_splits_are_exact_or_within_tolerance(corpus, name, k):
    r = split_sweep.sweep(name, corpus[name], k)
    _check_common(r, name, k)
    if r.exact_specs:
        assert r.tensors_compared > len(r.exact_specs)
    if name in EXPECTED_EXACT:
        assert len(r.exact_specs) == EXPECTED_EXACT[name][k - 2]
    if name == "mobilenet_v2_int8":
        assert any("int32 accumulator" in why for why in r.refused.values())
    if name == "sparse_mlp":
        assert any("sparse" in why for why in r.refused.values())
    if name == "transformer":
        modes = {s.mode for s in r.exact_specs}
        assert modes == ({"columns"} if k != 3 else {"columns", "batch"})
        blocks = [label for label in r.row_errors if label.startswith(("mlp", "heads"))]
        assert len(blocks) == 4


def _check_common(r: split_sweep.SweepResult, name: str, k: int) -> None:
    assert r.xnnpack_identical, f"{name} k={k}: XNNPACK outputs differ"
    assert r.builtin_identical, f"{name} k={k}: builtin tensors differ: {r.mismatches[:5]}"
    assert all(len(s.sizes) == k for s in r.exact_specs)
    for label, err in r.row_errors.items():
        assert err <= split_sweep.ROW_TOLERANCE, f"{name} k={k} {label}: relative error {err:.3g}"
    # nothing is refused without a reason
    assert all(r.refused.values())


# The on-demand corpus (real-size models, built the first time a test asks for them, minutes
# each): exact splits per model at k = 2, 3, 4 (every conv/FC/matmul wide enough for k shards of
# its granule), row splits and blocks checked per k (each alone: one whole-model run each; an
# op index in the last field would keep only those before it, a sample: none is sampled).
ON_DEMAND: dict[str, tuple[tuple[int, int, int], int, int | None]] = {
    "mobilenet_v2_224": ((53, 52, 50), 1, None),
    "mobilenet_v2_224_int8": ((53, 53, 53), 0, None),
    "resnet50": ((54, 54, 54), 1, None),
    "resnet50_int8": ((54, 54, 54), 0, None),
    "efficientnet_b0": ((78, 75, 70), 1, None),
    "efficientnet_b0_int8": ((82, 82, 82), 0, None),
    "ops_300": ((121, 63, 62), 1, None),
    "big_weights_400mb": ((4, 3, 3), 7, None),
    "big_graph_4k": ((0, 0, 0), 0, None),  # 1000 convolutions of 8 channels: one float granule
    "vit_s16": ((98, 98, 98), 121, None),
    "vit_s16_int8": ((98, 98, 98), 0, None),
}


# CI runs two of them (int8 depthwise granules, and a transformer's column and row splits);
# EDGEPART_SPLIT_SWEEP=all runs every on-demand model (6 min here at load ~1, models built:
# the figures in docs/tensor_parallel.md come from that run)
_SWEPT = (
    list(ON_DEMAND)
    if os.environ.get("EDGEPART_SPLIT_SWEEP") == "all"
    else ["efficientnet_b0_int8", "big_weights_400mb"]
)


@pytest.mark.slow
@pytest.mark.parametrize("name", _SWEPT)
def test_forced_splits_on_the_on_demand_corpus(get_corpus_model, name):
    path = get_corpus_model(name)
    exact, rows, rows_before = ON_DEMAND[name]
    ref = split_sweep.reference(path)  # the unsplit runs, shared by the three shard counts
    for k in (2, 3, 4):
        r = split_sweep.sweep(name, path, k, rows_before=rows_before, ref=ref)
        _check_common(r, name, k)
        assert len(r.exact_specs) == exact[k - 2], f"{name} k={k}"
        assert r.tensors_compared >= len(r.exact_specs)  # a 4-layer chain has 4 tensors
        assert len(r.row_errors) == rows, f"{name} k={k}"
        if name.endswith("_int8"):  # int8 row splits are not offered, and say why
            assert any("int32 accumulator" in why for why in r.refused.values())
        if not r.exact_specs:  # too narrow, and said so
            assert r.too_small and all("too small" in why for why in r.too_small)
