"""`edgepart estimate`, the host profile, and the cost model on predictors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from edgepart.cli import main
from edgepart.cost.estimate import estimate_model
from edgepart.cost.kernels import KERNEL_CLASSES
from edgepart.cost.model import CostModel
from edgepart.cost.predictor import BASIS, ConfigPredictor, KernelModel, Predictor
from edgepart.devices.profile import load_profile
from edgepart.errors import ProfileError
from edgepart.tflite.reader import read_model


def toy_predictor() -> Predictor:
    """Every kernel: 1 us plus 10 us per million MACs plus 1 us per MB moved."""
    configs = {}
    for name, ex, th, prefixes in (
        ("xnnpack_1t", "xnnpack", 1, ("xnn", "tfl")),
        ("builtin_1t", "builtin", 1, ("tfl",)),
    ):
        kernels = {}
        for p in prefixes:
            for cls in KERNEL_CLASSES:
                c = np.zeros(len(BASIS))
                c[0], c[1], c[4], c[5], c[6] = 1e-6, 1e-5, 1e-6, 1e-6, 1e-6
                kernels[f"{p}.{cls}"] = KernelModel(f"{p}.{cls}", c, cv={"q10": -0.1, "q90": 0.2})
        configs[name] = ConfigPredictor(name, ex, th, 3e-7, {"xnnpack": 1e-7}, kernels,
                                        cv={"q10": -0.1, "q90": 0.1})  # fmt: skip
    return Predictor("toy host", "measured", "unit test", configs, {"chains": 10})


def host_files(tmp_path, pred: Predictor):
    pred.save(tmp_path / "host.predictor.json")
    text = (
        "schema: edgepart/device@1\nname: host\ntitle: toy\nsoc: toy\nsource: test\n"
        "latency_predictor: host.predictor.json\n"
        "memory_domains:\n  dram:\n"
        "    capacity_bytes: {value: 1000000000, provenance: measured, source: t}\n"
        "    bandwidth_bytes_per_s: {value: 10000000000, provenance: measured, source: t}\n"
        "processors:\n  - name: cpu\n    kind: cpu\n    delegate: xnnpack\n"
        "    units: {value: 1, provenance: measured, source: t}\n"
        "    threads: {value: 1, provenance: measured, source: t}\n"
        "    peak_ops_per_s:\n      fp32: {value: 10000000000, provenance: measured, source: t}\n"
        "    memory_bandwidth_bytes_per_s: {value: 10000000000, provenance: measured, source: t}\n"
        "    memory_capacity_bytes: {value: 1000000000, provenance: measured, source: t}\n"
        "    memory_domain: dram\n"
        "    dispatch_overhead_s: {value: 0.0000003, provenance: measured, source: t}\n"
    )
    (tmp_path / "host.yaml").write_text(text)
    return tmp_path / "host.yaml"


def test_host_profile_name_resolves_to_the_calibrated_file(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPART_HOST_PROFILE", str(tmp_path / "host.yaml"))
    with pytest.raises(ProfileError, match="run `edgepart calibrate --host`"):
        load_profile("host")
    host_files(tmp_path, toy_predictor())
    prof = load_profile("host")
    assert prof.name == "host"
    assert prof.latency_predictor == str(tmp_path / "host.predictor.json")


def test_a_missing_predictor_file_is_a_one_line_profile_error(tmp_path):
    y = host_files(tmp_path, toy_predictor())
    (tmp_path / "host.predictor.json").unlink()
    with pytest.raises(ProfileError, match=r"latency_predictor: no such predictor file"):
        load_profile(str(y))


def test_cost_model_uses_the_predictor_and_agrees_with_estimate(corpus, tmp_path):
    y = host_files(tmp_path, toy_predictor())
    from edgepart.cost.hardware import load_hardware

    m = read_model(corpus["mobilenet_v2"])
    hw = load_hardware(str(y))
    gc = CostModel(hw).costs(m.main, m)
    n = m.main.num_ops
    assert gc.source_counts("cpu")["predicted"] == n
    whole = gc.partition_latency(range(n), "cpu")
    est = estimate_model(m, toy_predictor(), configs=["xnnpack_1t"])[0]
    assert whole.seconds == pytest.approx(est.seconds, rel=1e-9)
    assert whole.low_s is not None and whole.high_s is not None
    assert whole.low_s < whole.seconds < whole.high_s
    # without the predictor: the roofline, as before
    assert CostModel(hw, predictor=False).costs(m.main, m).source_counts("cpu")["roofline"] == n


def test_the_cost_model_follows_a_rechecked_latency_scale(corpus, tmp_path):
    """``calibrate --host --recheck`` scales a configuration: the partitioner's costs (ops,
    invocation, delegate node) scale with it, as ``estimate`` does."""
    from edgepart.cost.hardware import load_hardware

    m = read_model(corpus["mobilenet_v2"])
    n = m.main.num_ops
    plain = CostModel(load_hardware(str(host_files(tmp_path, toy_predictor()))))
    before = plain.costs(m.main, m).partition_latency(range(n), "cpu").seconds
    pred = toy_predictor()
    pred.configs["xnnpack_1t"].latency_scale = 0.75
    d = tmp_path / "scaled"
    d.mkdir()
    hw = load_hardware(str(host_files(d, pred)))
    after = CostModel(hw).costs(m.main, m).partition_latency(range(n), "cpu").seconds
    assert after == pytest.approx(0.75 * before, rel=1e-9)
    est = estimate_model(m, pred, configs=["xnnpack_1t"])[0]
    assert after == pytest.approx(est.seconds, rel=1e-9)
    assert any("re-checked" in note for note in est.notes)


def test_estimate_cli(corpus, tmp_path, monkeypatch, capsys):
    y = host_files(tmp_path, toy_predictor())
    monkeypatch.setenv("EDGEPART_HOST_PROFILE", str(y))
    assert main(["estimate", str(corpus["mobilenet_v2"]), "--profile", "host"]) == 0
    out = capsys.readouterr().out
    assert "CPU 1 thread (XNNPACK)" in out and "CPU 1 thread (builtin)" in out
    assert "measured on this host" in out
    assert main(["estimate", str(corpus["mobilenet_v2"]), "--profile", "host", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {e["config"] for e in doc["estimates"]} == {"xnnpack_1t", "builtin_1t"}
    for e in doc["estimates"]:
        assert e["low_s"] <= e["seconds"] <= e["high_s"]
    assert main(["estimate", str(corpus["mobilenet_v2"]), "--profile", "host", "--config",
                 "gpu"]) == 2  # fmt: skip
    assert "--config 'gpu': the predictor has builtin_1t, xnnpack_1t" in capsys.readouterr().err


def test_estimate_from_specs_says_so(corpus, capsys):
    assert main(["estimate", str(corpus["mobilenet_v2"]), "--profile", "pixel8"]) == 0
    out = capsys.readouterr().out
    assert "estimated from specs" in out
    assert "GPU" in out and "NNAPI" in out


def test_estimate_resolves_shapes_computed_in_the_model(corpus, tmp_path, monkeypatch, capsys):
    y = host_files(tmp_path, toy_predictor())
    monkeypatch.setenv("EDGEPART_HOST_PROFILE", str(y))
    rc = main(["estimate", str(corpus["dynamic_batch"]), "--profile", "host", "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["shapes_resolved"] is True
    assert all(np.isfinite(e["seconds"]) for e in doc["estimates"])
    assert main(["estimate", str(corpus["dynamic_batch"]), "--profile", "host",
                 "--input-shape", "bad"]) == 2  # fmt: skip
    assert "expected NAME=D0,D1" in capsys.readouterr().err


def test_partition_on_the_host_profile_uses_its_predictor(corpus, tmp_path, monkeypatch, capsys):
    """`partition --profile host` costs the model with the calibrated host's predictor."""
    y = host_files(tmp_path, toy_predictor())
    monkeypatch.setenv("EDGEPART_HOST_PROFILE", str(y))
    m = read_model(corpus["mobilenet_v2"])
    est = estimate_model(m, toy_predictor(), configs=["xnnpack_1t"])[0]
    assert main(["partition", str(corpus["mobilenet_v2"]), "--profile", "host"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("predicted latency"))
    # printed to three significant figures in a unit that fits (edgepart.timefmt)
    value, unit = line.split()[2:4]
    scale = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}[unit.rstrip(",")]
    assert float(value) * scale == pytest.approx(est.seconds, rel=5e-3)
    # the shipped x86_host profile is a record of another machine, not this one
    from edgepart.devices.profile import profile_dir

    head = (profile_dir() / "x86_host.yaml").read_text().split("schema:")[0]
    assert "--profile host" in head and "record of one" in head


def test_a_compiled_edge_tpu_program_is_not_estimated_as_cpu_work(real_models, capsys):
    """A compiled ``edgetpu-custom-op`` has no CPU, GPU or NNAPI kernel: estimating it as a
    generic CPU op gave 48 us for a 224-px MobileNetV2 (issue 19's problem 1, again)."""
    rc = main(["estimate", str(real_models["coral_mobilenet_v2_edgetpu"]), "--profile", "pixel3"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "compiled Edge TPU program" in err[0] and "op 0" in err[0]


def test_a_loop_whose_count_is_an_input_is_counted_in_a_run(corpus, tmp_path, monkeypatch, capsys):
    from ai_edge_litert.interpreter import Interpreter

    from edgepart.cost.kernels import uncounted_loops
    from edgepart.profiling.shape_resolution import needs_run, resolve
    from edgepart.profiling.timing import fill_inputs

    path = corpus["while_loop"]  # while i < steps (an int32 input), i from 0 by 1
    model, content = read_model(path), path.read_bytes()
    assert uncounted_loops(model) == [1] and needs_run(model)
    for seed in range(4):
        it = Interpreter(model_path=str(path))
        it.allocate_tensors()
        fill_inputs(it, seed)
        steps = next(int(it.get_tensor(d["index"])) for d in it.get_input_details()
                     if "steps" in d["name"])  # fmt: skip
        assert resolve(model, content, seed=seed).trips == {1: float(max(steps, 0))}
    # each counted iteration runs the condition and the body once more (the toy predictor has
    # no control-flow costs: their kernels alone)
    pred = toy_predictor()
    cp = pred.configs["builtin_1t"]
    est = {n: estimate_model(model, pred, configs=["builtin_1t"], trips={1: n})[0]
           for n in (0.0, 5.0)}  # fmt: skip
    cond, body = (cp.kernel_seconds(called(model, j))[0].sum() for j in (0, 1))
    assert est[5.0].seconds - est[0.0].seconds == pytest.approx(5 * (cond + body), rel=1e-9)
    assert "op 1 (WHILE): 5 iterations, as counted in a run" in est[5.0].notes[0]
    unknown = estimate_model(model, pred, configs=["builtin_1t"])[0]
    assert "trip count unknown, one iteration assumed" in unknown.notes[0]
    # the CLI counts them on the seeded inputs edgepart times models with (steps = 0 there)
    monkeypatch.setenv("EDGEPART_HOST_PROFILE", str(host_files(tmp_path, pred)))
    assert main(["estimate", str(path), "--profile", "host"]) == 0
    assert "op 1 (WHILE): 0 iterations, as counted in a run on seeded inputs" in (
        capsys.readouterr().out
    )


def called(model, j):
    """The builtin kernels of the subgraph the main subgraph's op 1 calls ``j``-th."""
    from edgepart.cost.kernels import decompose

    return decompose(model, "builtin", subgraph=model.main.op(1).subgraph_refs[j])
