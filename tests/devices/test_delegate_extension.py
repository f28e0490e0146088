"""The extension promise: a new delegate is one YAML file in a directory on the search path.

A Qualcomm QNN HTP delegate and a phone profile that uses it are written into a temporary
directory, and edgepart is pointed at it with ``EDGEPART_PATH`` and with ``--search-path``.
``inspect --profile``, ``partition`` (a bundle), ``run`` (the qnn partitions on the host
fallback, reported as such) and bench's ``benchmark_model`` command line (built for a bundle on
the emulated phone) then work with no Python file changed: nothing is imported from the
directory, and the delegate's facts (ops, library, flags, provider, fallback) come only from
its file.
"""

from __future__ import annotations

import json
import signal
import sys
import warnings
from pathlib import Path

import pytest
import yaml

from edgepart.android.bm_flags import BenchmarkOptions, build_command
from edgepart.android.bundle_bench import partition_delegate
from edgepart.bundle import load_bundle
from edgepart.cli import main
from edgepart.devices.capability import has_family
from edgepart.devices.delegate import load_delegate
from edgepart.devices.profile import load_profile, profile_dir
from edgepart.devices.search_path import ENV_VAR
from edgepart.errors import ProfileError
from edgepart.runtime import PartitionedInterpreter

QNN = """\
# Qualcomm AI Engine Direct (QNN) TFLite delegate on the HTP (Hexagon tensor processor):
# 8-bit quantized convolutions and additions; everything else stays on the CPU.
schema: edgepart/delegate@1
name: qnn
title: Qualcomm QNN HTP delegate (test)
kernel_name: QnnTFLiteDelegate
target: npu
runtime: Qualcomm AI Engine Direct TFLite delegate, HTP backend
source: a test's own delegate file (a few ops of the QNN HTP delegate)
library:
  load: external
  files: [libQnnTFLiteDelegate.so]
  options: {backend_type: htp, htp_precision: quantized}
  fallback: builtin
benchmark_model:
  flags: ["--external_delegate_path={library}"]
  provider: EXTERNAL
claiming:
  method: epochs
  helper: graph_partition
  max_delegated_partitions: 0
  allow_dynamic_tensors: false
defaults:
  max_rank: 4
  dtypes:
    activations: [UINT8, INT8]
    weights: [UINT8, INT8, INT32]
    indices: [INT32]
  constraints: [quantized_activations, static_shapes]
ops:
  CONV_2D: {constraints: [{stride_le: 2}, constant_filter_and_bias]}
  DEPTHWISE_CONV_2D: {constraints: [depth_multiplier_is_1]}
  ADD: {constraints: [{fused_activation_in: [NONE, RELU, RELU6]}]}
"""

DEVICE_LIB = "/data/local/tmp/libQnnTFLiteDelegate.so"
MARKER = "imported-from-the-data-directory"


def _write_data_dir(root: Path) -> Path:
    """``root/delegates/qnn.yaml`` and ``root/device_profiles/qnn_phone.yaml`` (the S24 profile
    with its NPU reached through qnn), plus Python files that must never be imported."""
    (root / "delegates").mkdir(parents=True)
    (root / "device_profiles").mkdir()
    (root / "delegates" / "qnn.yaml").write_text(QNN)
    doc = yaml.safe_load((profile_dir() / "galaxy_s24_ultra.yaml").read_text())
    doc["name"] = "qnn_phone"
    doc["title"] = "Snapdragon phone with the QNN HTP delegate (test)"
    # A 96x96 model is worth offloading only if reaching the NPU is cheap: say it is.
    cheap = {"value": 2e-6, "provenance": "estimated", "source": "test: a cheap NPU round trip"}
    for proc in doc["processors"]:
        if proc["name"] == "npu":
            proc["delegate"] = "qnn"
            proc["dispatch_overhead_s"] = cheap
    for link in doc["links"]:
        if "npu_buffers" in (link["from"], link["to"]):
            link["latency_s"] = cheap
    (root / "device_profiles" / "qnn_phone.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    # Data is data: code placed beside the YAML files (where a module "found by name" might be
    # looked for) is never run.
    trap = f"open({str(root / MARKER)!r}, 'w').write('ran')\n"
    for rel in ("qnn.py", "delegates/qnn.py", "predicates/qnn.py", "predicates/__init__.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(trap)
    return root


def _nothing_imported_from(root: Path) -> None:
    assert not (root / MARKER).exists()
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None) or ""
        assert not f.startswith(str(root)), mod
    assert not has_family("qnn")  # no predicate module by that name was ever needed


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return _write_data_dir(tmp_path / "data")


@pytest.fixture
def model(corpus: dict[str, Path]) -> Path:
    return corpus["mobilenet_v2_int8"]


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    status = main(list(args))
    out, err = capsys.readouterr()
    assert status == 0, err
    return out


def test_qnn_through_edgepart_path(
    data_dir: Path,
    model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(ENV_VAR, str(data_dir))
    monkeypatch.delenv("EDGEPART_DELEGATE_QNN", raising=False)

    spec = load_delegate("qnn")
    assert spec.path == str(data_dir / "delegates" / "qnn.yaml")
    assert spec.library.files == ("libQnnTFLiteDelegate.so",) and spec.library.fallback == "builtin"
    assert spec.benchmark_model is not None and spec.benchmark_model.provider == "EXTERNAL"
    assert [p.delegate for p in load_profile("qnn_phone").processors] == ["xnnpack", "gpu", "qnn"]

    # inspect --profile: qnn claims the convolutions and additions, by its own rules.
    out = _cli(capsys, "inspect", str(model), "--profile", "qnn_phone")
    assert "device qnn_phone" in out
    assert "qnn -> npu: takes 62/65 ops" in out
    assert "refused MEAN: Operation is not supported." in out

    # partition: a bundle whose NPU partitions name the qnn delegate.
    bundle = tmp_path / "bundle"
    out = _cli(capsys, "partition", str(model), "--profile", "qnn_phone", "-o", str(bundle))
    plan = json.loads((bundle / "plan.json").read_text())
    qnn_parts = [p["id"] for p in plan["partitions"] if p["delegate"] == "qnn"]
    assert qnn_parts, plan["partitions"]
    assert all(p["processor"] == "npu" for p in plan["partitions"] if p["delegate"] == "qnn")
    assert plan["device_profile"] == "qnn_phone"

    # run: no libQnnTFLiteDelegate.so here, so the qnn partitions run on the host, and say so.
    out = _cli(capsys, "run", str(bundle), "--random")
    qnn_lines = [line for line in out.splitlines() if " qnn " in line]
    assert len(qnn_lines) == len(qnn_parts)
    for line in qnn_lines:
        assert "(host fallback for qnn: no qnn delegate library on this machine)" in line
        assert line.endswith("[FALLBACK]")
    assert "output " in out
    # Through the API the delegate file's fallback executor (builtin) is the default.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        interp = PartitionedInterpreter(str(bundle))
    for c in interp.executors:
        if c.requested == "qnn":
            assert (c.kind, c.fallback) == ("builtin", True)
            assert c.executed_on.startswith("host CPU, builtin kernels (host fallback for qnn")

    # bench's command line for the qnn partitions: the file's flags, library and options.
    loaded = load_bundle(bundle)
    for entry in loaded.plan.partitions:
        if entry.delegate != "qnn":
            continue
        choice, why = partition_delegate(entry, {})
        assert choice is None and "--delegate-library qnn=DEVICE_PATH" in why
        choice, why = partition_delegate(entry, {"qnn": DEVICE_LIB})
        assert choice is not None and why == ""
        argv = build_command(
            "/data/local/tmp/benchmark_model",
            BenchmarkOptions(f"/data/local/tmp/{entry.id}.tflite", choice, num_threads=1),
        )
        assert argv == [
            "/data/local/tmp/benchmark_model",
            f"--graph=/data/local/tmp/{entry.id}.tflite",
            "--num_threads=1",
            f"--external_delegate_path={DEVICE_LIB}",
            "--external_delegate_options=backend_type:htp;htp_precision:quantized",
        ]
    _nothing_imported_from(data_dir)


def test_the_cli_option_finds_the_same_files_and_writes_the_same_bundle(
    data_dir: Path,
    model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    # Without the directory the names are unknown, and the error says where to add them.
    assert main(["inspect", str(model), "--profile", "qnn_phone"]) == 2
    err = capsys.readouterr().err
    assert "unknown device profile 'qnn_phone'" in err and "--search-path" in err
    assert err.count("\n") == 1

    a, b = tmp_path / "a", tmp_path / "b"
    opt = ("--search-path", str(data_dir))
    out = _cli(capsys, *opt, "inspect", str(model), "--profile", "qnn_phone")
    assert "qnn -> npu: takes 62/65 ops" in out
    _cli(capsys, *opt, "partition", str(model), "--profile", "qnn_phone", "-o", str(a))
    monkeypatch.setenv(ENV_VAR, str(data_dir))
    _cli(capsys, "partition", str(model), "--profile", "qnn_phone", "-o", str(b))
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for f in files:
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    out = _cli(capsys, *opt, "run", str(a), "--random")
    assert "host fallback for qnn" in out and "[FALLBACK]" in out
    _nothing_imported_from(data_dir)


def test_bench_on_the_emulated_phone_applies_qnn_as_its_file_says(
    data_dir: Path,
    model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``bench BUNDLE --adb`` on the emulated phone: the qnn partitions get the file's
    external-delegate flags; the library is not on that phone, so they fall back to XNNPACK and
    the report says why."""
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "android"))
    from adb_fixtures import emulated_device, private_adb_server
    from bench_helpers import RUNS, adb_args

    monkeypatch.setenv(ENV_VAR, str(data_dir))
    bundle = tmp_path / "bundle"
    _cli(capsys, "partition", str(model), "--profile", "qnn_phone", "-o", str(bundle))
    qnn_parts = [p.id for p in load_bundle(bundle).plan.partitions if p.delegate == "qnn"]
    # As tests/android/conftest.py does: the emulated shells must die of SIGHUP on hang-up,
    # also under nohup.
    hangup = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        with (
            private_adb_server(tmp_path / "adb") as server,
            emulated_device(server, tmp_path / "device") as emu,
        ):
            monkeypatch.setenv("ADB_SERVER_SOCKET", emu.server.spec)
            monkeypatch.setenv("EDGEPART_RUNS_DIR", str(tmp_path / "runs"))
            args = adb_args("bench", bundle, *RUNS, "--delegate-library", f"qnn={DEVICE_LIB}")
            status = main([*args, "--json"])
            out, err = capsys.readouterr()
            assert status == 0, err
            report = json.loads(out)
            runs = {r["label"]: r for r in report["devices"][0]["runs"]}
            rows = {r["id"]: r for r in report["partitions"][emu.serial]}
            for pid in qnn_parts:
                primary = runs[f"{pid}@external:{DEVICE_LIB}"]
                assert f"--external_delegate_path={DEVICE_LIB}" in primary["argv"]
                assert (
                    "--external_delegate_options=backend_type:htp;htp_precision:quantized"
                    in primary["argv"]
                )
                assert rows[pid]["status"] == "fallback" and rows[pid]["ran_with"] == "xnnpack"
                assert rows[pid]["fallback_reason"]
            assert emu.wait_no_processes() == []
    finally:
        signal.signal(signal.SIGHUP, hangup)
    _nothing_imported_from(data_dir)


def test_a_user_file_may_only_name_registered_predicates(tmp_path: Path) -> None:
    d = tmp_path / "delegates"
    d.mkdir()
    bad = QNN.replace("constraints: [depth_multiplier_is_1]", "constraints: [gpu_check]")
    (d / "qnn.yaml").write_text(bad)
    with pytest.raises(ProfileError) as err:
        load_delegate(str(d / "qnn.yaml"))
    msg = str(err.value)
    assert msg.startswith(f"{d / 'qnn.yaml'}: ops.DEPTHWISE_CONV_2D.constraints[0]:")
    assert "'gpu_check' is a gpu predicate: set `predicates: gpu`" in msg
    (d / "qnn.yaml").write_text("predicates: gpu\n" + bad)
    assert load_delegate(str(d / "qnn.yaml")).predicates == "gpu"
    (d / "qnn.yaml").write_text("predicates: ../../tmp/evil\n" + QNN)
    with pytest.raises(ProfileError, match=r"predicates: '\.\./\.\./tmp/evil' is not a predicate"):
        load_delegate(str(d / "qnn.yaml"))
