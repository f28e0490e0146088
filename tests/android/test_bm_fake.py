"""The parsers on output of the host stand-in, which runs the model with the real LiteRT runtime.

Command lines come from ``bm_flags.build_command``; the stand-in measures everything it prints
(see its docstring), so these tests check structure and consistency, never timing values.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from edgepart.android.bm_flags import BenchmarkOptions, build_command, parse_delegate
from edgepart.android.bm_op_profile import parse_op_profile_text
from edgepart.android.bm_proto import node_timings, parse_op_profile_proto, parse_runtime_info
from edgepart.android.bm_run_log import BenchmarkRun, parse_benchmark_output
from edgepart.errors import BenchmarkOutputError

FAKE = Path(__file__).with_name("fake_benchmark_model.py")


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small conv net whose Flatten leaves SHAPE/STRIDED_SLICE/PACK ops XNNPACK rejects."""
    tf = pytest.importorskip("tensorflow")
    tf.keras.utils.set_random_seed(0)
    inp = tf.keras.Input((16, 16, 3))
    x = tf.keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inp)
    x = tf.keras.layers.DepthwiseConv2D(3, padding="same")(x)
    x = tf.keras.layers.MaxPool2D()(x)
    x = tf.keras.layers.Flatten()(x)
    x = tf.keras.layers.Dense(10)(x)
    out = tf.keras.layers.Softmax()(x)
    data = tf.lite.TFLiteConverter.from_keras_model(tf.keras.Model(inp, out)).convert()
    path = tmp_path_factory.mktemp("bm") / "tiny.tflite"
    path.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def ops(model: Path) -> list[str]:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(
        model_path=str(model),
        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    it.allocate_tensors()
    return [d["op_name"] for d in it._get_ops_details()]


def bench(
    model: Path, delegate: str = "xnnpack", extra: tuple[str, ...] = (), **kw: object
) -> tuple[int, BenchmarkRun]:
    opts = BenchmarkOptions(
        str(model),
        parse_delegate(delegate),
        num_runs=8,
        min_secs=0.0,
        warmup_runs=2,
        warmup_min_secs=0.0,
        extra_flags=extra,
        **kw,
    )  # type: ignore[arg-type]
    args = build_command(str(FAKE), opts)
    proc = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, check=False
    )
    return proc.returncode, parse_benchmark_output(proc.stdout + proc.stderr, source="fake")


def test_builtin_cpu_per_op_table(model: Path, ops: list[str]) -> None:
    rc, run = bench(model, "cpu", op_profiling=True)
    assert rc == 0 and run.ok and run.summary_format == "current"
    assert run.warmup and run.warmup.count == 2 and run.inference and run.inference.count == 8
    assert run.inference.median is not None and run.inference.p95 is not None
    assert run.first_inference_us == run.warmup.first
    assert run.inference_avg_us == pytest.approx(run.inference.avg, rel=1e-5)
    assert run.memory and run.memory.overall_delta_mb is not None
    assert run.profile is not None and run.profile.layout == "current"
    rows = run.profile.run_rows()
    assert [r.op_index for r in rows] == list(range(len(ops)))
    assert [r.node_type for r in rows] == ops
    assert sum(r.percent for r in rows) == pytest.approx(100.0, abs=0.01)
    block = next(b for b in run.profile.blocks if b.phase == "run")
    assert block.timings is not None and block.timings.count == 8
    assert block.nodes_observed == len(ops) == block.nodes_executed
    # Row averages (3 decimals each) add up to the per-run node total.
    assert sum(r.avg_ms for r in rows) * 1000 == pytest.approx(
        block.timings.avg, abs=0.5 * len(ops) + 1
    )
    init = next(b for b in run.profile.blocks if b.phase == "init")
    assert init.run_order[0].name == "AllocateTensors/0"


def test_xnnpack_runtime_info_and_proto_cover_every_op(
    model: Path, ops: list[str], tmp_path: Path
) -> None:
    prof_pb, ri_pb = tmp_path / "prof.pb", tmp_path / "ri.pb"
    rc, run = bench(
        model,
        "xnnpack",
        op_profiling=True,
        op_profiling_mode="proto",
        op_profiling_output_file=str(prof_pb),
        runtime_info_output_file=str(ri_pb),
    )
    assert rc == 0 and run.ok and run.profile is None
    (app,) = run.applications
    assert app.provider == "XNNPACK" and app.outcome == "partial"
    (rep,) = run.replacements
    info = parse_runtime_info(ri_pb.read_bytes(), source=str(ri_pb))
    sg = info.subgraphs[0]
    delegate_nodes = [n for n in sg.nodes if n.delegate is not None]
    assert rep.total_nodes == len(ops) and rep.delegate == "TfLiteXNNPackDelegate"
    assert rep.replaced == sum(len(n.replaced) for n in delegate_nodes)
    assert app.kernels == len(delegate_nodes)
    # "yielding K partitions" counts node subsets: each delegate node, and each CPU run in the plan.
    is_delegate = [n in {d.id for d in delegate_nodes} for n in sg.execution_plan]
    assert rep.partitions == sum(1 for _ in itertools.groupby(is_delegate))
    assert all(n.id >= len(ops) for n in delegate_nodes)
    prof = parse_op_profile_proto(prof_pb.read_bytes(), source=str(prof_pb))
    rows = prof.run_rows()
    assert all(r.count == 8 for r in rows)
    assert [r.node_index for r in rows] == list(sg.execution_plan)
    timings = node_timings(prof, info)
    covered = sorted(op for t in timings for op in t.ops)
    assert covered == list(range(len(ops)))
    placement = sg.placement()
    for t in timings:
        assert all(placement[op] == t.executed_by for op in t.ops)


def test_csv_file_and_legacy_layout(model: Path, ops: list[str], tmp_path: Path) -> None:
    csv_path = tmp_path / "prof.csv"
    rc, _ = bench(
        model,
        "cpu",
        op_profiling=True,
        op_profiling_mode="csv",
        op_profiling_output_file=str(csv_path),
    )
    assert rc == 0
    prof = parse_op_profile_text(csv_path.read_text(), source=str(csv_path))
    assert prof.layout == "csv"
    assert [(r.op_index, r.node_type) for r in prof.run_rows()] == list(enumerate(ops))
    rc, run = bench(model, "cpu", op_profiling=True, extra=("--fake_output_style=legacy",))
    assert rc == 0 and run.profile is not None and run.profile.layout == "start"
    assert run.inference is not None and run.inference.p5 is None
    rows = run.profile.run_rows()
    assert [r.op_index for r in rows] == list(range(len(ops)))
    starts = [r.start_ms for r in rows]
    assert starts == sorted(starts) and starts[0] == 0.0


def test_gpu_unavailable_fails_like_the_tool(model: Path) -> None:
    rc, run = bench(model, "gpu")
    assert rc == 1 and run.failure is not None
    assert run.failure.kind == "delegate_apply"
    assert run.failure.message == "Failed to apply GPU delegate."
    assert any("failed to prepare" in d for d in run.failure.detail)
    with pytest.raises(
        BenchmarkOutputError,
        match=r"fake:\d+: benchmark_model failed "
        r"\(delegate_apply\): Failed to apply GPU delegate\.",
    ):
        run.raise_for_failure()


def test_nnapi_hexagon_external_fall_back_to_cpu(model: Path) -> None:
    rc, run = bench(model, "nnapi")
    assert rc == 0 and run.ok and run.delegate_outcome("NNAPI") == "none"
    rc, run = bench(model, "hexagon")
    assert rc == 0 and run.ok and run.delegate_outcome("Hexagon") == "absent"
    assert run.unavailable and "Could not create Hexagon delegate" in run.unavailable[0]
    rc, run = bench(model, "external:/nonexistent/libdelegate.so")
    assert rc == 0 and run.delegate_outcome("EXTERNAL") == "absent"
    assert (
        "Unable to load external delegate from : /nonexistent/libdelegate.so" in run.unavailable[0]
    )


def test_missing_model_and_full_delegation_failures(model: Path) -> None:
    rc, run = bench(model.with_name("absent.tflite"), "cpu")
    assert rc == 1 and run.failure is not None and run.failure.kind == "model_load"
    assert "absent.tflite" in run.failure.message
    rc, run = bench(model, "xnnpack", require_full_delegation=True)
    assert rc == 1 and run.failure is not None and run.failure.kind == "cpu_fallback"


def test_unknown_flag_is_reported_not_fatal(model: Path) -> None:
    rc, run = bench(model, "cpu", extra=("--use_magic=true",))
    assert rc == 0 and run.ok and run.unconsumed_flags == ("--use_magic=true",)
