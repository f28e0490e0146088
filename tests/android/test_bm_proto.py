"""Protobuf outputs, generated with the classes that ship in ai-edge-litert."""

from __future__ import annotations

import pytest

from edgepart.android.bm_proto import (
    node_timings,
    parse_op_profile_proto,
    parse_runtime_info,
    proto_message_class,
)
from edgepart.errors import BenchmarkOutputError

# The ai-edge-litert classes (or, once TensorFlow is imported, its registered twins).
BenchmarkProfilingData = proto_message_class("BenchmarkProfilingData")
ModelRuntimeDetails = proto_message_class("ModelRuntimeDetails")
RuntimeSubgraph = proto_message_class("RuntimeSubgraph")


def _op(prof, node_type: str, name: str, order: int, values: list[int]) -> None:  # type: ignore[no-untyped-def]
    op = prof.per_op_profiles.add()
    op.node_type, op.name, op.run_order, op.times_called = node_type, name, order, 1
    st = op.inference_microseconds
    st.first, st.last, st.min, st.max = values[0], values[-1], min(values), max(values)
    st.sum, st.count, st.avg = sum(values), len(values), sum(values) // len(values)
    st.stddev = 1.5


def profiling_data() -> bytes:
    msg = BenchmarkProfilingData(model_name="m.tflite")
    init = msg.init_profile.subgraph_profiles.add(subgraph_index=0, subgraph_name="main")
    _op(init, "AllocateTensors", "AllocateTensors/0", 0, [300])
    run = msg.runtime_profile.subgraph_profiles.add(subgraph_index=0, subgraph_name="main")
    # Stored out of run order on purpose: the parser orders by run_order.
    _op(run, "SOFTMAX", "[out]:3", 2, [10, 10])
    _op(run, "TfLiteXNNPackDelegate", "[a, b]:4", 0, [600, 400])
    _op(run, "RESHAPE", "[r]:2", 1, [50, 30])
    delegate = msg.runtime_profile.delegate_profiles.add(delegate_name="XNNPACK")
    _op(
        delegate,
        "Convolution (NHWC, F32) IGEMM",
        "Delegate/Convolution (NHWC, F32) IGEMM:0",
        0,
        [500, 300],
    )
    return msg.SerializeToString()


def runtime_details() -> bytes:
    msg = ModelRuntimeDetails(model_name="m.tflite")
    sg = msg.subgraphs.add(subgraph_id=0, name="main")
    sg.subgraph_type = RuntimeSubgraph.TFLITE_SUBGRAPH
    for i, (name, code) in enumerate(
        [("CONV_2D", "3"), ("ADD", "0"), ("RESHAPE", "22"), ("SOFTMAX", "25")]
    ):
        node = sg.nodes.add(id=i, name=name, type=code, inputs=[i], outputs=[i + 1])
        if i in (0, 1):
            node.delegated_to_node_id = 4
    d = sg.nodes.add(
        id=4, name="TfLiteXNNPackDelegate", type="TfLiteXNNPackDelegate", inputs=[0], outputs=[2]
    )
    d.delegate_node_details.delegate_name = "TfLiteXNNPackDelegate"
    d.delegate_node_details.tflite_node_ids_replaced.extend([0, 1])
    sg.execution_plan.extend([4, 2, 3])
    for t in range(5):
        sg.edges.add(id=t, name=f"t{t}", shape=[1, 4])
    return msg.SerializeToString()


def test_op_profile_proto_rows() -> None:
    prof = parse_op_profile_proto(profiling_data(), source="prof.pb")
    assert prof.layout == "proto"
    init, _, internal = prof.blocks
    assert (init.phase, init.run_order[0].kind, init.run_order[0].first_ms) == (
        "init",
        "event",
        0.3,
    )
    rows = prof.run_rows()
    assert [(r.node_type, r.node_index, r.kind) for r in rows] == [
        ("TfLiteXNNPackDelegate", 4, "delegate_kernel"),
        ("RESHAPE", 2, "op"),
        ("SOFTMAX", 3, "op"),
    ]
    total = 1000 + 80 + 20
    assert rows[0].percent == pytest.approx(100 * 1000 / total)
    assert rows[2].cdf_percent == pytest.approx(100.0)
    assert (rows[1].first_ms, rows[1].avg_ms, rows[1].min_us, rows[1].max_us, rows[1].count) == (
        0.05,
        0.04,
        30.0,
        50.0,
        2,
    )
    assert rows[1].op_index == 2 and rows[0].op_index is None
    assert internal.delegate_internal and internal.subgraph_name == "XNNPACK"
    (conv,) = internal.run_order
    assert (conv.kind, conv.delegate_op_index, conv.node_index) == ("delegate_op", 0, None)


def test_runtime_info_and_join() -> None:
    info = parse_runtime_info(runtime_details(), source="ri.pb")
    (sg,) = info.subgraphs
    assert (info.model_name, sg.name, sg.execution_plan, sg.num_tensors) == (
        "m.tflite",
        "main",
        (4, 2, 3),
        5,
    )
    assert sg.placement() == {
        0: "TfLiteXNNPackDelegate",
        1: "TfLiteXNNPackDelegate",
        2: "cpu",
        3: "cpu",
    }
    joined = node_timings(parse_op_profile_proto(profiling_data()), info)
    assert [(t.node_index, t.executed_by, t.ops, t.avg_ms) for t in joined] == [
        (4, "TfLiteXNNPackDelegate", (0, 1), 0.5),
        (2, "cpu", (2,), 0.04),
        (3, "cpu", (3,), 0.01),
    ]


def test_bad_protos_are_clear_errors() -> None:
    with pytest.raises(BenchmarkOutputError, match=r"x\.pb: not a BenchmarkProfilingData proto"):
        parse_op_profile_proto(b"\xff\xff\xff\xff", source="x.pb")
    with pytest.raises(BenchmarkOutputError, match="holds no per-op profiles"):
        parse_op_profile_proto(b"", source="empty.pb")
    with pytest.raises(BenchmarkOutputError, match=r"ri\.pb: the runtime-info proto has no sub"):
        parse_runtime_info(b"", source="ri.pb")
    msg = ModelRuntimeDetails()
    sg = msg.subgraphs.add(subgraph_id=0)
    sg.nodes.add(id=0, name="ADD", delegated_to_node_id=7)
    with pytest.raises(BenchmarkOutputError, match="node 0 refers to missing node"):
        parse_runtime_info(msg.SerializeToString(), source="ri.pb")
    other = parse_runtime_info(runtime_details())
    prof = parse_op_profile_proto(profiling_data())
    with pytest.raises(BenchmarkOutputError, match="subgraph 1"):
        node_timings(prof, other, subgraph_index=1)


def test_proto_classes_coexist_with_tensorflow_copies() -> None:
    # TensorFlow registers tflite.profiling.* in protobuf's default pool from its own files;
    # the parsers use a private pool, so neither import order breaks the other.
    tf_copy = pytest.importorskip("tensorflow.lite.profiling.proto.model_runtime_info_pb2")
    assert tf_copy.ModelRuntimeDetails is not proto_message_class("ModelRuntimeDetails")
    assert (
        proto_message_class("ModelRuntimeDetails").DESCRIPTOR.full_name
        == "tflite.profiling.ModelRuntimeDetails"
    )
    assert parse_op_profile_proto(profiling_data()).run_rows()[0].node_index == 4
    assert parse_runtime_info(runtime_details()).subgraphs[0].execution_plan == (4, 2, 3)
    with pytest.raises(BenchmarkOutputError, match="unknown benchmark proto message 'Nope'"):
        proto_message_class("Nope")
