"""Command lines for benchmark_model: exact argument lists, fallbacks and refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from edgepart.android.bm_flags import (
    BenchmarkOptions,
    DelegateChoice,
    build_command,
    flags_from_help,
    parse_delegate,
)
from edgepart.errors import BenchmarkOutputError, UsageError

BM = "/data/local/tmp/benchmark_model"
GRAPH = "/data/local/tmp/m.tflite"
FAKE = Path(__file__).with_name("fake_benchmark_model.py")


def cmd(delegate: str, **kw: object) -> list[str]:
    return build_command(BM, BenchmarkOptions(GRAPH, parse_delegate(delegate), **kw))  # type: ignore[arg-type]


def test_parse_delegate_kinds() -> None:
    assert parse_delegate("gpu") == DelegateChoice("gpu")
    assert parse_delegate(" nnapi ") == DelegateChoice("nnapi")
    assert parse_delegate("external:/x/libd.so") == DelegateChoice("external", "/x/libd.so")
    assert str(parse_delegate("external:/x/y:z.so")) == "external:/x/y:z.so"


@pytest.mark.parametrize("bad", ["tpu", "external", "external:", "GPU", ""])
def test_parse_delegate_rejects(bad: str) -> None:
    with pytest.raises(UsageError, match="delegate"):
        parse_delegate(bad)


@pytest.mark.parametrize(
    ("delegate", "flags"),
    [
        ("cpu", ["--use_xnnpack=false"]),
        ("xnnpack", ["--use_xnnpack=true"]),
        ("gpu", ["--use_gpu=true"]),
        ("nnapi", ["--use_nnapi=true"]),
        ("hexagon", ["--use_hexagon=true"]),
        ("external:/d/libvx.so", ["--external_delegate_path=/d/libvx.so"]),
    ],
)
def test_delegate_flags(delegate: str, flags: list[str]) -> None:
    assert cmd(delegate) == [BM, f"--graph={GRAPH}", *flags]


def test_full_profile_command_with_taskset() -> None:
    got = cmd(
        "gpu",
        num_threads=4,
        warmup_runs=1,
        num_runs=50,
        min_secs=0.0,
        max_secs=30.5,
        max_delegated_partitions=2,
        min_nodes_per_partition=3,
        cpu_mask="F0",
        cpu_fallback_xnnpack=False,
        gpu_backend="cl",
        op_profiling=True,
        op_profiling_mode="proto",
        op_profiling_output_file="/d/prof.pb",
        runtime_info_output_file="/d/ri.pb",
        report_peak_memory=True,
    )
    assert got == [
        "taskset",
        "f0",
        BM,
        f"--graph={GRAPH}",
        "--num_threads=4",
        "--warmup_runs=1",
        "--num_runs=50",
        "--min_secs=0.0",
        "--max_secs=30.5",
        "--max_delegated_partitions=2",
        "--min_nodes_per_partition=3",
        "--use_xnnpack=false",
        "--use_gpu=true",
        "--gpu_backend=cl",
        "--report_peak_memory_footprint=true",
        "--enable_op_profiling=true",
        "--op_profiling_output_mode=proto",
        "--op_profiling_output_file=/d/prof.pb",
        "--export_model_runtime_info=true",
        "--model_runtime_info_output_file=/d/ri.pb",
    ]


def test_options_are_separate_arguments_never_a_shell_string() -> None:
    got = cmd("nnapi", nnapi_accelerator_name="qti dsp; rm -rf /", disable_nnapi_cpu=False)
    assert got[-2:] == ["--nnapi_accelerator_name=qti dsp; rm -rf /", "--disable_nnapi_cpu=false"]
    assert all(isinstance(a, str) for a in got)


def test_external_options_sorted_and_checked() -> None:
    got = cmd("external:/l.so", external_delegate_options={"b": "2", "a": "x"})
    assert got[-1] == "--external_delegate_options=a:x;b:2"
    with pytest.raises(UsageError, match="may not contain"):
        cmd("external:/l.so", external_delegate_options={"a": "1;b:2"})


def test_csv_falls_back_to_deprecated_flag_on_old_binaries() -> None:
    old = frozenset({"graph", "enable_op_profiling", "profiling_output_csv_file"})
    opts = BenchmarkOptions(
        GRAPH,
        parse_delegate("cpu"),
        op_profiling=True,
        op_profiling_mode="csv",
        op_profiling_output_file="/d/p.csv",
    )
    assert build_command(BM, opts, supported_flags=old)[-2:] == [
        "--enable_op_profiling=true",
        "--profiling_output_csv_file=/d/p.csv",
    ]
    proto = BenchmarkOptions(
        GRAPH, op_profiling=True, op_profiling_mode="proto", op_profiling_output_file="/d/p.pb"
    )
    with pytest.raises(UsageError, match="no --op_profiling_output_mode"):
        build_command(BM, proto, supported_flags=old)
    with pytest.raises(UsageError, match="export_model_runtime_info"):
        build_command(
            BM, BenchmarkOptions(GRAPH, runtime_info_output_file="/d/r.pb"), supported_flags=old
        )


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"cpu_mask": "zz"}, "hexadecimal"),
        ({"cpu_mask": "0"}, "non-zero"),
        ({"num_threads": 0}, "num_threads"),
        ({"num_runs": -1}, "num_runs"),
        ({"op_profiling_mode": "json"}, "not one of"),
        ({"op_profiling": True, "op_profiling_mode": "proto"}, "needs an output file"),
        ({"extra_flags": ["--x"]}, "--name=value"),
    ],
)
def test_bad_options(kw: dict[str, object], match: str) -> None:
    with pytest.raises(UsageError, match=match):
        cmd("cpu", **kw)


def test_flags_from_help_reads_the_usage_text() -> None:
    # The stand-in prints the tool's usage layout: "\t--name=default\t...".
    proc = subprocess.run(
        [sys.executable, str(FAKE), "--help"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 1
    flags = flags_from_help(proc.stdout + proc.stderr)
    assert {
        "graph",
        "op_profiling_output_mode",
        "export_model_runtime_info",
        "use_gpu",
        "external_delegate_path",
    } <= flags
    with pytest.raises(BenchmarkOutputError, match="not benchmark_model's --help"):
        flags_from_help("usage: something else\n\t--verbose=false\n")


def test_delegates_come_from_their_files() -> None:
    """Names and labels resolve through delegates/*.yaml (``benchmark_model`` key)."""
    assert parse_delegate("cpu_builtin") == DelegateChoice("cpu")  # its file's label
    assert parse_delegate("gpu_mldrift") == DelegateChoice("gpu")  # the tool's GPU stands in
    assert parse_delegate("npu") == DelegateChoice("nnapi")
    with pytest.raises(UsageError, match=r"external:/data/local/tmp/libedgetpu\.so\.1"):
        parse_delegate("edgetpu")  # the tool loads it only as an external library
    # A delegate's tool options go only to the delegates whose file lists them.
    assert cmd("nnapi", gpu_backend="cl") == [BM, f"--graph={GRAPH}", "--use_nnapi=true"]
    assert cmd("hexagon", hexagon_lib_path="/d") == [
        BM,
        f"--graph={GRAPH}",
        "--use_hexagon=true",
        "--hexagon_lib_path=/d",
    ]
    # CPU kernel sets have no CPU fallback to switch.
    assert cmd("cpu", cpu_fallback_xnnpack=False) == [BM, f"--graph={GRAPH}", "--use_xnnpack=false"]
    assert cmd("xnnpack", cpu_fallback_xnnpack=False)[-1] == "--use_xnnpack=true"
