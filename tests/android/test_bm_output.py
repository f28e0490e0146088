"""Run-log and per-op-table parsers on real benchmark_model output posted publicly.

Every fixture under ``data/bm_outputs/`` starts with a ``# source:`` line naming where it was
posted; the numbers asserted here are the numbers in those texts.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from edgepart.android.bm_lines import RunStats
from edgepart.android.bm_op_profile import (
    NodeTypeSummary,
    infer_node_indices,
    parse_op_profile_text,
)
from edgepart.android.bm_proto import node_timings
from edgepart.android.bm_run_log import (
    DelegateApplication,
    DelegateReplacement,
    GpuSupportReport,
    MemoryFootprint,
    parse_benchmark_output,
)
from edgepart.errors import BenchmarkOutputError

DATA = Path(__file__).parent / "data" / "bm_outputs"


def fixture(name: str) -> str:
    text = (DATA / name).read_text()
    assert text.startswith("# source: https://"), name
    return text


def run(name: str):  # type: ignore[no-untyped-def]
    return parse_benchmark_output(fixture(name), source=name)


def test_every_fixture_names_its_source_and_parses() -> None:
    names = sorted(p.name for p in DATA.glob("*.txt"))
    assert len(names) >= 6
    for name in names:
        run(name)


def test_current_summary_xnnpack_raspberry_pi() -> None:
    r = run("xnnpack_999_rpi_current_summary.txt")
    assert r.summary_format == "current"
    assert (r.init_us, r.first_inference_us, r.warmup_avg_us, r.inference_avg_us) == (
        18777.0,
        64791.0,
        57758.2,
        55043.2,
    )
    assert r.warmup == RunStats(9, 64791, 56295, 54873, 65831, 57758.2, 4065)
    assert r.inference == RunStats(50, 58154, 53809, 53077, 60727, 55043.2, 1562)
    assert r.model_size_mb == 3.67827
    assert r.memory == MemoryFootprint(init_delta_mb=8.97656, overall_delta_mb=18.7227)
    assert r.xnnpack_created and r.ok and r.failure is None


def test_old_peak_memory_wording_tf23() -> None:
    r = run("tf_42507_peak_memory_wording.txt")
    assert r.memory == MemoryFootprint(init_delta_mb=0.0, overall_delta_mb=12.8672)
    assert r.inference == RunStats(50, 32891, 33978, 32641, 34005, 33209.4, 450)
    assert (r.init_us, r.inference_avg_us) == (855.0, 33209.4)


def test_legacy_summary_readme_and_table_with_start_column() -> None:
    r = run("tf_readme_start_layout.txt")
    assert r.summary_format == "legacy"
    assert (r.warmup_avg_us, r.init_us, r.inference_avg_us) == (83235.0, 38467.0, 79760.9)
    assert r.first_inference_us is None  # the legacy line does not print it
    prof = r.profile
    assert prof is not None and prof.layout == "start"
    (block,) = prof.blocks
    assert block.phase == "run" and len(block.run_order) == 31 and len(block.top_by_time) == 10
    first = block.run_order[0]
    assert (
        first.node_type,
        first.start_ms,
        first.first_ms,
        first.avg_ms,
        first.percent,
        first.cdf_percent,
        first.mem_kb,
        first.times_called,
    ) == ("CONV_2D", 0.0, 4.269, 4.269, 0.107, 0.107, 0.0, 0)
    assert first.name == "[MobilenetV1/MobilenetV1/Conv2d_0/Relu6]"
    assert first.node_index is None and first.kind == "op"  # no ':N' in this era
    assert block.run_order[-1].node_type == "SOFTMAX" and block.run_order[-1].start_ms == 79.443
    assert block.top_by_time[0].avg_ms == 6.652
    assert block.by_node_type[0] == NodeTypeSummary("CONV_2D", 15, 1.406, 89.27, 89.27, 0.0, 0)
    assert block.nodes_executed == 31 and block.nodes_observed == 31
    assert block.timings == RunStats(50, 79449, 81350, 77385, 88213, 79732, 1929)
    indexed = infer_node_indices(prof)
    assert [row.node_index for row in indexed.blocks[0].run_order] == list(range(31))
    assert indexed.blocks[0].top_by_time[0].node_index == 6  # Conv2d_3_pointwise


def test_legacy_no_stats_wording_and_session_without_dot() -> None:
    r = run("yuenshome_77_tf1_no_stats.txt")
    assert r.summary_format == "legacy"
    assert (r.init_us, r.warmup_avg_us, r.inference_avg_us) == (9933.0, 76605.9, 66767.6)
    assert r.first_inference_us == 127425.0  # from the warm-up stat line's first=
    assert r.inference == RunStats(15, 66753, 66800, 66699, 66838, 66767.6, 39)


def test_tf112_space_aligned_table_and_no_summary_line() -> None:
    r = run("tf_25021_tf112_space_layout.txt")
    assert r.summary_format is None and r.init_us == pytest.approx(378.0)
    assert r.warmup == RunStats(302, 5983, 1592, 1586, 5983, 1652.99, 360)
    rows = r.profile.run_rows() if r.profile else ()
    assert [(x.node_type, x.start_ms, x.first_ms, x.avg_ms, x.percent, x.name) for x in rows] == [
        ("DEPTHWISE_CONV_2D", 0.0, 0.802, 0.719, 45.131, "[Relu6]"),
        ("FULLY_CONNECTED", 0.719, 0.848, 0.849, 53.325, "[BiasAdd_1]"),
    ]


def test_names_with_commas_and_colons_inside_brackets() -> None:
    r = run("deepspeech_2270_no_stats.txt")
    assert (r.warmup_avg_us, r.init_us, r.inference_avg_us) == (27917.4, 21528106.0, 23313.5)
    rows = r.profile.run_rows() if r.profile else ()
    assert rows[0].kind == "delegate_kernel" and rows[0].avg_ms == 21.287
    assert rows[1].node_type == "SPLIT" and rows[1].name.endswith("split:3]")
    assert rows[1].node_index is None  # ':3' inside the brackets is a tensor name, not an index
    with pytest.raises(BenchmarkOutputError, match="delegate_kernel row"):
        infer_node_indices(r.profile)  # type: ignore[arg-type]


def test_start_layout_with_node_index_gpu_delegate_node() -> None:
    prof = parse_op_profile_text(fixture("tf_44369_gpu_start_layout_with_index.txt"))
    assert prof.layout == "start"
    (row,) = prof.run_rows()
    assert (
        row.node_type,
        row.start_ms,
        row.first_ms,
        row.avg_ms,
        row.percent,
        row.times_called,
        row.node_index,
        row.kind,
        row.op_index,
    ) == ("TfLiteGpuDelegateV2", 0.008, 5.112, 5.061, 100.0, 1, 110, "delegate_kernel", None)
    assert prof.blocks[0].by_node_type == (
        NodeTypeSummary("TfLiteGpuDelegateV2", 1, 5.061, 100.0, 100.0, 0.0, 1),
    )
    (timing,) = node_timings(prof)
    assert (
        timing.node_index == 110
        and timing.ops == ()
        and timing.executed_by == "TfLiteGpuDelegateV2"
    )


def test_summary_by_node_type_with_type_wider_than_its_column() -> None:
    prof = parse_op_profile_text(fixture("tf_53138_summary_by_node_type.txt"))
    rows = prof.blocks[0].by_node_type
    assert [r.node_type for r in rows] == [
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "TFLite_Detection_PostProcess",
        "CONCATENATION",
        "LOGISTIC",
    ]
    assert rows[2] == NodeTypeSummary(
        "TFLite_Detection_PostProcess", 1, 3.579, 1.009, 99.733, 0.0, 1
    )
    assert prof.blocks[0].nodes_executed == 64


def test_logcat_current_layout_init_profile() -> None:
    r = run("tf_56301_logcat_init_profile.txt")
    assert r.memory == MemoryFootprint(init_delta_mb=2.03516, overall_delta_mb=2.03516)
    (block,) = r.profile.blocks if r.profile else ()
    assert block.phase == "init" and r.profile and r.profile.layout == "current"
    a, b = block.run_order
    assert (a.node_type, a.first_ms, a.avg_ms, a.percent, a.mem_kb, a.times_called, a.kind) == (
        "ModifyGraphWithDelegate",
        54.571,
        54.571,
        95.055,
        1132.0,
        1,
        "event",
    )
    assert (b.name, b.first_ms, b.avg_ms, b.times_called) == ("AllocateTensors/0", 2.833, 1.419, 2)


def test_logcat_nnapi_partial_and_none() -> None:
    r = run("tf_56301_logcat_nnapi_partial.txt")
    assert r.applications == (DelegateApplication("NNAPI", "partial", 44),)
    assert r.delegate_outcome("nnapi") == "partial"
    assert r.warmup == RunStats(40, 32942, 12594, 11340, 32942, 12581.9, 3331)
    assert (r.init_us, r.first_inference_us, r.inference_avg_us) == (126059.0, 32942.0, 12167.6)
    n = run("tf_56301_logcat_nnapi_not_applied.txt")
    assert n.applications == (DelegateApplication("NNAPI", "none", 0),)
    assert n.nnapi_accelerators == ("ipuadaptor", "nnapi-reference")
    assert n.delegates_created == ("NNAPI",) and not n.ok


def test_gpu_fully_delegated_and_external_delegate() -> None:
    g = run("tf_43541_gpu_full.txt")
    assert g.applications == (DelegateApplication("GPU", "full", None),)
    assert (g.init_us, g.first_inference_us, g.warmup_avg_us, g.inference_avg_us) == (
        870557.0,
        130565.0,
        122373.0,
        119375.0,
    )
    e = run("timvx_316_external_full.txt")
    assert e.delegate_outcome("EXTERNAL") == "full" and e.delegates_created == ("EXTERNAL",)
    assert e.init_us == pytest.approx(11237.0) and e.delegate_outcome("GPU") == "absent"


def test_replacing_lines_both_wordings() -> None:
    old = run("unity_214_replacing_legacy_logcat.txt")
    assert old.replacements == (DelegateReplacement(269, None, "TfLiteXNNPackDelegate", 13),)
    assert old.xnnpack_created
    new = run("tf_70664_replacing_current_logcat.txt")
    assert new.replacements == (DelegateReplacement(290, 290, "TfLiteGpuDelegateV2", 1),)
    assert new.delegates_created == ("GPU",)


def test_gpu_unsupported_blocks() -> None:
    y = run("yolov5_1127_gpu_block_logcat.txt")
    assert y.gpu_support == (GpuSupportReport((("DEQUANTIZE", ""),), 740, 1),)
    assert y.replacements == (DelegateReplacement(740, None, "TfLiteGpuDelegateV2", 2),)
    o = run("objdet_gpu_no_ops.txt")
    (report,) = o.gpu_support
    assert report.gpu_ops == 0 and report.cpu_ops == 64
    assert report.reasons[2] == (
        "CUSTOM TFLite_Detection_PostProcess",
        "TFLite_Detection_PostProcess",
    )
    assert report.reasons[0] == ("CONCATENATION", "OP is supported, but tensor type isn't matched!")
    assert len(report.reasons) == 6 and o.xnnpack_created


def test_single_run_all_same_stat_line() -> None:
    r = run("litert_134_count1_logcat.txt")
    assert r.warmup == RunStats(1, 1381510, 1381510, 1381510, 1381510, 1381510, 0.0)
    assert r.inference is None and r.first_inference_us == 1381510.0 and not r.ok
    assert (r.model_size_mb, r.init_us) == (137.514, pytest.approx(9340.0))


def test_many_runs_cpu_only() -> None:
    r = run("armnn_541_cpu.txt")
    assert r.warmup == RunStats(7028, 2071, 69, 68, 2071, 70.3736, 24)
    assert r.inference == RunStats(14192, 93, 70, 68, 249, 69.691, 5)
    assert r.applications == () and r.ok


# -- synthetic edge cases of the documented grammar (not posted outputs) ------------------------


def test_stat_line_variants_from_the_stats_calculator_grammar() -> None:
    text = (
        "Running benchmark for at least 1 iterations and at least 0.5 seconds\n"
        "count=0\n"
        "Running benchmark for at least 50 iterations and at least 1 seconds\n"
        "INFO: count=3 curr=7(all same) p5=7 median=7 p95=7\n"
    )
    r = parse_benchmark_output(text)
    assert r.warmup == RunStats(0)
    assert r.inference == RunStats(3, 7, 7, 7, 7, 7, 0.0, 7, 7, 7)
    big = parse_benchmark_output(
        "Inference timings in us: Init: 1007529, First inference: 4098, Warmup (avg): 1.68659e+06,"
        " Inference (avg): nan"
    )
    assert big.warmup_avg_us == 1686590.0 and math.isnan(big.inference_avg_us or 0.0)


def test_unrecognizable_output_is_a_clear_error() -> None:
    with pytest.raises(BenchmarkOutputError, match=r"run.log: no benchmark_model output"):
        parse_benchmark_output(
            "Segmentation fault\n/system/bin/sh: x: not found\n", source="run.log"
        )
    with pytest.raises(BenchmarkOutputError, match="no per-op profile table"):
        parse_op_profile_text(
            "INFO: Inference timings in us: Init: 1, First inference: 2, "
            "Warmup (avg): 3, Inference (avg): 4\n"
        )
