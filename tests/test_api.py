"""The public API (``import edgepart``): every call works, its docstring examples run, and the
CLI, a thin layer over it, gives the same results (the same bundle bytes, the same JSON)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import edgepart
from edgepart.cli import main

REPO = Path(__file__).resolve().parent.parent
MNV2 = REPO / "examples" / "models" / "mobilenet_v2.tflite"


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out


# ------------------------------------------------------------------------------- the surface


def test_every_public_name_resolves_and_is_listed() -> None:
    assert len(set(edgepart.__all__)) == len(edgepart.__all__)
    for name in edgepart.__all__:
        value = getattr(edgepart, name)
        assert value is not None, name
        assert name in dir(edgepart)
        if callable(value) and not isinstance(value, type):
            doc = value.__doc__ or ""
            # NumPy-style docstrings: what it takes, returns and raises (name-only helpers
            # such as device_names take nothing)
            assert "Examples" in doc, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = edgepart.nope  # type: ignore[attr-defined]
    assert issubclass(edgepart.ModelFormatError, edgepart.EdgepartError)


def test_import_edgepart_is_light() -> None:
    """The API loads on first use: ``import edgepart`` loads neither NumPy nor LiteRT."""
    heavy = "('numpy', 'ai_edge_litert', 'jsonschema')"
    code = f"import sys, edgepart; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


# --------------------------------------------------------------------------- models, devices


def test_read_inspect_and_claims_match_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    model = edgepart.read_model(MNV2)
    assert model.main.num_ops == 65
    cli = json.loads(_cli(capsys, "inspect", str(MNV2), "--json", "--ops", "--profile", "pixel8"))
    api = edgepart.inspect_model(MNV2, ops=True, device="pixel8")
    assert json.loads(json.dumps(api.to_dict(), default=str)) == cli
    assert _cli(capsys, "inspect", str(MNV2), "--ops", "--profile", "pixel8") == api.report() + "\n"
    claims = edgepart.claims(model, edgepart.load_device("pixel8"))
    assert api.claims is not None and claims.to_dict() == api.claims.to_dict()
    assert set(claims.delegates) == {"xnnpack", "gpu", "nnapi"}
    one = edgepart.claims(model, delegates=["gpu"])
    assert set(one.delegates) == {"gpu"} and "gpu" in one.report()


def test_devices_match_the_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    listed = json.loads(_cli(capsys, "profiles", "--json"))
    assert listed == {"profiles": edgepart.device_names(), "delegates": edgepart.delegate_names()}
    device = edgepart.load_device(REPO / "device_profiles" / "pixel8.yaml")
    assert device.name == "pixel8" and edgepart.load_delegate("gpu").name == "gpu"
    assert edgepart.validate_yaml(REPO / "delegates" / "gpu.yaml") == "delegate"
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: edgepart/other@1\n")
    with pytest.raises(edgepart.ProfileError, match="schema: 'edgepart/other@1' is not allowed"):
        edgepart.validate_yaml(bad)
    with pytest.raises(edgepart.ProfileError, match="unknown device profile 'nosuch'"):
        edgepart.load_device("nosuch")


def test_roofline_matches_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    cli = json.loads(_cli(capsys, "roofline", str(MNV2), "--profile", "pixel8", "--json"))
    api = edgepart.roofline(MNV2, "pixel8")
    assert json.loads(json.dumps(api.to_dict())) == cli
    text = _cli(capsys, "roofline", str(MNV2), "--profile", "pixel8", "--top", "5")
    assert text == api.format_text(5) + "\n"


# --------------------------------------------------------------------------------- placement


def test_compile_writes_the_bundle_the_cli_writes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cli_out = _cli(capsys, "partition", str(MNV2), "--profile", "pixel8", "-o", str(tmp_path / "c"))
    compiled = edgepart.compile(MNV2, "pixel8")
    assert compiled.report() in cli_out
    assert [p.id for p in compiled.plan.partitions] == [p.id for p in compiled.partitions]
    assert compiled.arena is not None and "partitioner" in compiled.plan.extra
    saved = compiled.save(tmp_path / "a")
    assert saved.path == tmp_path / "a"
    assert _files(tmp_path / "a") == _files(tmp_path / "c")
    assert edgepart.load_bundle(tmp_path / "a").plan == compiled.plan


@pytest.mark.parametrize(
    ("flags", "kwargs"),
    [
        (["--objective", "throughput", "--no-arena"], {"objective": "throughput", "arena": False}),
        (["--edge-cut", "3", "--seed", "2"], {"method": "edge-cut", "edge_cut_k": 3, "seed": 2}),
        (["--exact", "--time-limit", "60"], {"method": "exact", "time_limit": 60.0}),
    ],
)
def test_compile_options_match_the_cli(
    corpus: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    kwargs: dict[str, object],
) -> None:
    model = corpus["mobilenet_v2_int8"]
    _cli(capsys, "partition", str(model), "--profile", "coral_devboard", *flags, "-o", "x")
    compiled = edgepart.compile(model, "coral_devboard", **kwargs)  # type: ignore[arg-type]
    compiled.save(tmp_path / "api")
    cli = _files(Path("x"))
    if kwargs.get("method") == "exact":  # proven within the limit, so no counter hit a clock
        assert json.loads(cli["plan.json"])["partitioner"]["solver"]["optimal"] is True
    assert _files(tmp_path / "api") == cli
    assert ("arena.json" in cli) == kwargs.get("arena", True)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CLI outputs given as relative paths land in the test's directory."""
    monkeypatch.chdir(tmp_path)


def test_latency_tables_reach_the_plan(
    corpus: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``place``/``compile`` (and ``partition_model``) take measured latency tables."""
    from edgepart.deploy.compile import partition_model

    model = corpus["custom_op"]
    table = tmp_path / "t.json"
    res = edgepart.profile_host(model, budget=0.002, fusion=False, output=table)
    assert table.is_file() and res.processor == "host_xnnpack_1t"
    mapping = {"cpu": "host_xnnpack_1t"}
    compiled = edgepart.compile(model, "pixel8", latency_tables=[table], table_for=mapping)
    sources = compiled.plan.extra["partitioner"]["cost_sources"]
    assert sources["cpu"]["measured"] == 6 and sources["gpu"]["roofline"] == 6
    plan = partition_model(model, "pixel8", latency_tables=[table], table_for=mapping)
    assert plan.problem.costs.source_counts(0)["measured"] == 6
    flags = ["--latency-table", str(table), "--table-for", "cpu=host_xnnpack_1t"]
    _cli(capsys, "partition", str(model), "--profile", "pixel8", *flags, "-o", "c")
    compiled.save(tmp_path / "a")
    assert _files(tmp_path / "a") == _files(tmp_path / "c")


def test_place_reports_what_the_cli_prints(
    corpus: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    model = corpus["custom_op"]
    out = _cli(capsys, "partition", str(model), "--profile", "pixel8")
    plan = edgepart.place(model, "pixel8")
    assert out.startswith(plan.report()) and "time: model to cost graph" in out
    assert set(plan.seconds) == {"lowering", "solve"}
    assert len(plan.specs()) == len(plan.partitions)


def test_place_graph_matches_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from edgepart.placement.synth import random_costgraph_doc

    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(random_costgraph_doc(20, 3, 5)))
    out = _cli(capsys, "partition", "--graph", str(graph), "--effort", "0.3", "-o", "cli.json")
    placed = edgepart.place_graph(graph, effort=0.3)
    placed.save(tmp_path / "api.json")
    assert (tmp_path / "api.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    assert out.startswith(placed.report())


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"method": "nope"}, "method 'nope' is not known"),
        ({"time_limit": 5.0}, "time_limit applies to method='exact' only"),
        ({"objective": "speed"}, "objective 'speed' is not known"),
        ({"effort": 0.0}, "effort must be positive"),
        ({"method": "edge-cut", "edge_cut_k": 0}, "edge_cut_k must be >= 1"),
    ],
)
def test_bad_placement_arguments_are_usage_errors(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(edgepart.UsageError, match=needle):
        edgepart.place(MNV2, "pixel8", **kwargs)  # type: ignore[arg-type]


def test_one_plan_validator_checks_the_partitioner_keys() -> None:
    from edgepart.bundle import plan_from_doc

    doc = edgepart.compile(MNV2, "pixel8").plan.to_doc()
    plan_from_doc(doc)
    doc["partitioner"]["objective"] = "fastest"
    with pytest.raises(edgepart.BundleError, match=r"\$\.partitioner\.objective"):
        plan_from_doc(doc, "plan.json")


# ------------------------------------------------------------------------------------ memory


def test_plan_memory_matches_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = tmp_path / "b"
    edgepart.compile(MNV2, "pixel8").save(bundle)
    for source in (MNV2, bundle):
        for out in ("o.json", "o.csv"):
            args = ["--strategy", "portfolio", "--node-limit", "200"]
            text = _cli(capsys, "plan-memory", str(source), *args, "-o", f"cli.{out}")
            plans = edgepart.plan_memory(source, strategies=["portfolio"], node_limit=200)
            plans.save(tmp_path / f"api.{out}")
            assert (tmp_path / f"api.{out}").read_bytes() == (tmp_path / f"cli.{out}").read_bytes()
            assert text.startswith(plans.report().split("\n")[0])
    plans = edgepart.plan_memory(bundle, strategies=["tflite", "portfolio"], node_limit=200)
    assert plans.kind == "bundle" and plans.arenas is not None
    assert list(plans.arenas) == ["tflite", "portfolio"] and "global" in plans.report()
    tflm = tmp_path / "tflm.tflite"
    plan = edgepart.write_tflm_plan(MNV2, tflm, strategy="portfolio")
    assert tflm.is_file() and plan.arenas["sg0"].size >= plan.arenas["sg0"].lower_bound
    with pytest.raises(edgepart.UsageError, match="strategies"):
        edgepart.plan_memory(MNV2, strategies=["best"])
    from edgepart.api.memory import STRATEGIES
    from edgepart.cli.plan_memory import STRATEGIES as CLI_STRATEGIES

    assert CLI_STRATEGIES == STRATEGIES


# ----------------------------------------------------------------------------------- running


def test_run_bundle_matches_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = tmp_path / "b"
    edgepart.compile(MNV2, "pixel8").save(bundle)
    args = ["--random", "--seed", "4", "--verify", "--serial"]
    _cli(capsys, "run", str(bundle), *args, "-o", "cli", "--json", "cli.json")
    run = edgepart.run_bundle(bundle, random=True, seed=4, verify=True, parallel=False)
    run.save_outputs(tmp_path / "api")
    assert _files(tmp_path / "api") == _files(tmp_path / "cli")
    assert json.loads(json.dumps(run.to_dict())) == json.loads((tmp_path / "cli.json").read_text())
    assert run.diffs is not None and all(d.identical for d in run.diffs)
    # given inputs: the same outputs, and nothing random is saved
    x = np.load(tmp_path / "api" / "input.input.npy")
    again = edgepart.run_bundle(bundle, {"input": x})
    assert np.array_equal(again.outputs[0], run.outputs[0])
    assert [p.name for p in again.save_outputs(tmp_path / "given")] == ["probs.npy"]
    with pytest.raises(edgepart.UsageError, match=r"inputs\['nope'\]: not an input"):
        edgepart.run_bundle(bundle, {"nope": x})
    interp = edgepart.PartitionedInterpreter(bundle)
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    assert np.array_equal(
        interp.get_tensor(interp.get_output_details()[0]["index"]), run.outputs[0]
    )


def test_run_and_bench_spell_the_delegate_library_flag_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from edgepart.cli import build_parser

    parser = build_parser()
    for command in (["run", "b"], ["bench", "b"]):
        args = parser.parse_args([*command, "--delegate-library", "gpu=/x.so"])
        assert args.delegate_library == ["gpu=/x.so"]
    capsys.readouterr()
    bundle = tmp_path / "b"
    edgepart.compile(MNV2, "pixel8").save(bundle)
    assert main(["run", str(bundle), "--random", "--delegate-library", "gpu"]) == 2
    assert "--delegate-library 'gpu': expected NAME=PATH" in capsys.readouterr().err


def test_api_errors_are_edgepart_errors(tmp_path: Path) -> None:
    with pytest.raises(edgepart.ModelFormatError, match="no such file"):
        edgepart.read_model(tmp_path / "missing.tflite")
    with pytest.raises(edgepart.BundleError, match="no such bundle directory"):
        edgepart.run_bundle(tmp_path / "nope", random=True)
    with pytest.raises(edgepart.UsageError, match="stream needs benchmark=True"):
        edgepart.run_bundle(tmp_path / "nope", stream=3)
    assert not os.listdir(tmp_path)
