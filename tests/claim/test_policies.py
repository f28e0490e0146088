"""Documented TFLite claiming behaviour of the accelerator delegates, on hand-built models.

No GPU, DSP or TPU is available here, so these check edgepart's model of TFLite's code paths
(GraphPartitionHelper, FP16GraphPartitionHelper, the Edge TPU compiler's cut) on graphs whose
expected result follows from the documented rules.
"""

from __future__ import annotations

import numpy as np
import pytest
from probes import F32, branches_model, fp16_dense, quantized

from edgepart.claim.delegation import claim
from edgepart.devices.delegate import load_delegate
from edgepart.errors import UsageError
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType


def _ops(res, delegate):
    return [p.ops for p in res.partitions(delegate)]


def test_gpu_cap_keeps_the_largest_partition_only():
    # Three branches of 3, 1 and 2 ADDs, each cut by REVERSE_V2 (not in the GPU V2 op list).
    m = branches_model(3, [3, 1, 2], refused="REVERSE_V2")
    res = claim(m, ["gpu"], default_delegate=None)
    step = res.steps[0]
    assert sorted(len(p) for p in step.preview) == [1, 2, 3]
    assert _ops(res, "gpu") == [(0, 1, 2)]
    # the dropped partitions' ops are then taken by XNNPACK when it runs last
    res2 = claim(m, ["gpu"])
    assert _ops(res2, "gpu") == [(0, 1, 2)]
    assert _ops(res2, "xnnpack") == [(4,), (6, 7)]


def test_nnapi_cap_three_and_unlimited_npu():
    m = branches_model(5, [1, 2, 3, 4, 5], refused="CUMSUM")
    nnapi = claim(m, ["nnapi"], default_delegate=None)
    assert sorted(len(p) for p in _ops(nnapi, "nnapi")) == [3, 4, 5]
    npu_spec = load_delegate("npu")
    assert npu_spec.policy.max_delegated_partitions == 0


def _q8_chain(kinds, *, cut=None):
    """An int8 chain of ADD/MUL with an optional refused op (CUMSUM) at position ``cut``."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    s = (1, 8)
    q = quantized()
    x = g.input("x", DType.INT8, s, quantization=q)
    c = g.constant("c", np.ones(s, np.int8), quantization=q)
    cur = x
    for i, k in enumerate(kinds):
        y = g.tensor(f"t{i}", DType.INT8, s, quantization=q)
        if k == "CUMSUM":
            g.op("CUMSUM", [cur, g.constant(f"a{i}", np.array(1, np.int32))], [y])
        else:
            g.op(k, [cur, c], [y])
        cur = y
    g.output(cur)
    return mb.build()


def test_hexagon_minimum_two_nodes_and_cap_four():
    # partitions of sizes 1, 2, 1, 3 between CUMSUMs: the single-node ones stay on the CPU
    kinds = ["ADD", "CUMSUM", "ADD", "ADD", "CUMSUM", "ADD", "CUMSUM", "ADD", "ADD", "ADD"]
    res = claim(_q8_chain(kinds), ["hexagon"], default_delegate=None)
    assert _ops(res, "hexagon") == [(2, 3), (7, 8, 9)]
    spec = load_delegate("hexagon")
    assert (spec.policy.max_delegated_partitions, spec.policy.min_nodes_per_partition) == (4, 2)


def test_hexagon_refuses_float():
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", F32, (1, 4))
    y = g.tensor("y", F32, (1, 4))
    g.op("ADD", [x, x], [y])
    g.output(y)
    res = claim(mb.build(), ["hexagon"], default_delegate=None)
    assert not res.partitions()
    assert res.steps[0].support.reasons[0].startswith("ADD: ")


def test_edgetpu_cuts_once_at_first_unsupported_op():
    kinds = ["ADD", "ADD", "CUMSUM", "ADD", "MUL"]
    res = claim(_q8_chain(kinds), ["edgetpu"], default_delegate=None)
    assert _ops(res, "edgetpu") == [(0, 1)]
    # ops 3 and 4 are supported by the TPU but run on the CPU after the cut
    assert res.steps[0].support.supported[3] and res.owner[3] is None
    # the custom op's inputs exclude baked-in constants
    part = res.partitions("edgetpu")[0]
    assert part.inputs == (0,)


def test_edgetpu_leading_quantize_stays_on_cpu():
    mb = ModelBuilder()
    g = mb.subgraph("main")
    s = (1, 8)
    q = quantized()
    x = g.input("x", F32, s)
    xq = g.tensor("xq", DType.INT8, s, quantization=q)
    g.op("QUANTIZE", [x], [xq])
    y = g.tensor("y", DType.INT8, s, quantization=q)
    g.op("ADD", [xq, xq], [y])
    z = g.tensor("z", F32, s)
    g.op("DEQUANTIZE", [y], [z])
    g.output(z)
    res = claim(mb.build(), ["edgetpu"], default_delegate=None)
    assert _ops(res, "edgetpu") == [(1,)]


def _rank5_model():
    mb = ModelBuilder()
    g = mb.subgraph("main")
    s5 = (1, 2, 2, 2, 2)
    x = g.input("x", F32, (1, 16))
    r = g.tensor("r", F32, s5)
    g.op("RESHAPE", [x, g.constant("s", np.array(s5, np.int32))], [r])
    y = g.tensor("y", F32, s5)
    g.op("ADD", [r, r], [y])
    z = g.tensor("z", F32, (1, 16))
    g.op("RESHAPE", [y, g.constant("s2", np.array([1, 16], np.int32))], [z])
    g.output(z)
    return mb.build()


def test_gpu_refuses_rank5_with_tflite_reason():
    res = claim(_rank5_model(), ["gpu"], default_delegate=None)
    reasons = res.steps[0].support.reasons
    assert reasons[1] == "ADD: OP is supported, but tensor type/shape isn't compatible."
    assert "RESHAPE: OP is supported, but tensor type/shape isn't compatible." in (
        res.steps[0].unsupported
    )


def _fp16_model(*, extra_refused: bool):
    """fp16 weights: DEQUANTIZE(fp16 const) -> FULLY_CONNECTED, optionally a refused op after."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    w16, y = fp16_dense(g, np.random.default_rng(0))
    out = y
    if extra_refused:
        z = g.tensor("z", F32, (1, 8))
        g.op("REVERSE_V2", [y, g.constant("ax", np.array([1], np.int32))], [z])
        out = z
    g.output(out)
    return mb.build(), w16


def test_fp16_full_delegation_includes_dequantize():
    m, w16 = _fp16_model(extra_refused=False)
    res = claim(m, ["gpu"], default_delegate=None)
    (part,) = res.partitions("gpu")
    assert part.ops == (0, 1)
    assert w16 in part.inputs
    assert "DEQUANTIZE: " in res.steps[0].unsupported  # rejected without details, as TFLite logs


def test_fp16_partial_delegation_keeps_dequantize_on_cpu():
    m, w16 = _fp16_model(extra_refused=True)
    res = claim(m, ["gpu"], default_delegate=None)
    (part,) = res.partitions("gpu")
    assert part.ops == (1,)  # the FC only: DEQUANTIZE stays on the CPU
    assert w16 in part.inputs  # the FC reads the fp16 constant directly (RemapFp16InputTensors)
    assert res.owner[0] is None


def test_xnnpack_runs_last_on_leftovers_and_is_skipped_when_fully_delegated():
    m = branches_model(2, [2, 1], refused="REVERSE_V2")
    res = claim(m, ["gpu"])
    assert [s.delegate for s in res.steps] == ["gpu", "xnnpack"]
    full, _ = _fp16_model(extra_refused=False)
    res = claim(full, ["gpu"])
    assert [s.delegate for s in res.steps] == ["gpu"]


def test_cpu_builtin_is_not_a_delegate():
    m = branches_model(1, [1])
    with pytest.raises(UsageError, match="fallback"):
        claim(m, ["cpu_builtin"])


def test_nnapi_api_level_gate():
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", F32, (1, 4))
    y = g.tensor("y", F32, (1, 4))
    g.op("ABS", [x], [y])  # NNAPI needs API 29 for ABS
    g.output(y)
    m = mb.build()
    old = claim(m, ["nnapi"], default_delegate=None, context={"android_api_level": 28})
    assert not old.partitions()
    assert "API level 29" in old.steps[0].support.reasons[0]
    new = claim(m, ["nnapi"], default_delegate=None, context={"android_api_level": 30})
    assert _ops(new, "nnapi") == [(0,)]


def test_preserve_all_tensors_splits_partitions():
    m = branches_model(1, [3])
    res = claim(m, preserve_all_tensors=True)
    assert _ops(res, "xnnpack") == [(0,), (1,), (2,)]
