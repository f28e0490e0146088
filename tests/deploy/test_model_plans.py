"""Plans of real models: checker, never worse than TFLite's default, memory spill/infeasible."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pmodels import int8_mlp

from edgepart.deploy.apply import placed_partitions
from edgepart.devices.profile import load_profile, profile_names
from edgepart.errors import PlacementInfeasibleError
from edgepart.ir import analysis
from edgepart.lowering.default_placement import profile_default_baseline
from edgepart.lowering.from_model import model_costgraph
from edgepart.placement.evaluate import objective_key
from edgepart.placement.placement_check import check_evaluation
from edgepart.placement.solve import SolveOptions, partition_costgraph
from edgepart.tflite.reader import read_model

PROFILES = profile_names()


def _solve(model, profile, method="heuristic", **kw):
    pr = model_costgraph(model, profile)
    d = profile_default_baseline(pr)
    opts = SolveOptions(effort=kw.pop("effort", 0.3), **kw)
    return pr, d, partition_costgraph(pr.graph, method, opts, reference=d.baseline)


@pytest.mark.parametrize("profile", PROFILES)
def test_every_corpus_plan_is_checked_and_never_worse_than_the_default(corpus, profile):
    for name, path in corpus.items():
        m = read_model(path)
        sg = m.main
        for objective in ("latency", "throughput"):
            pr, d, sol = _solve(m, profile, objective=objective)
            g, ev = pr.graph, sol.evaluation
            check_evaluation(g, ev)
            key = objective_key(ev, objective)
            for b in sol.baselines:
                if b.feasible:
                    assert key <= objective_key(b.evaluation, objective), (name, b.name)
            assert d.baseline.feasible, (name, d.baseline.evaluation.violations)
            # op-level: every op in exactly one partition, on a processor that supports it,
            # every partition convex in the op graph
            parts = placed_partitions(pr, ev)
            owned = sorted(op for p in parts for op in p.ops)
            assert owned == list(range(sg.num_ops)), name
            for p in parts:
                assert analysis.is_convex(sg, p.ops), (name, p.id)
                assert pr.support.supported[list(p.file_ops), p.proc].all(), (name, p.id)


def test_default_baseline_is_tflites_claim(corpus):
    m = read_model(corpus["custom_op"])
    pr = model_costgraph(m, "pixel8")
    d = profile_default_baseline(pr)
    assert d.baseline.name == "tflite-default:gpu" and d.delegates == ("gpu",)
    procs = [pr.graph.proc_names[p] for p in d.op_processor.tolist()]
    # the GPU cannot run the audio front end; it takes the FULLY_CONNECTED/SOFTMAX tail
    assert procs[:2] == ["cpu", "cpu"] and set(procs[2:]) == {"gpu"}
    assert d.split_nodes == 0
    assert d.baseline.evaluation.num_partitions == 2


def test_accelerator_memory_too_small_spills_to_the_cpu(tmp_path):
    m = int8_mlp()  # 12 x 1 MiB int8 weights; the Edge TPU holds 8 MiB
    pr, d, sol = _solve(m, "coral_devboard", effort=1.0)
    g, ev = pr.graph, sol.evaluation
    tpu = g.proc_names.index("edgetpu")
    on_tpu = g.unit_proc[ev.units] == tpu
    assert pr.support.supported[:, tpu].all()  # the TPU could run every layer...
    assert 0 < on_tpu.sum() < g.num_nodes  # ...but only part of them fits
    u = int(g.proc_first_unit[tpu])
    assert ev.unit_weight_bytes[u] + ev.unit_arena_bytes[u] <= 8388608
    assert ev.unit_weight_bytes[u] > 6 * 2**20  # it holds as much as fits
    check_evaluation(g, ev)
    # TFLite's default (the compiler maps every layer) does not fit
    assert not d.baseline.feasible
    assert "edgetpu:0 needs" in d.baseline.evaluation.violations[0]
    assert sol.baseline is not None and sol.baseline.name == "cpu-only"
    assert ev.latency_s < sol.baseline.evaluation.latency_s


def _small_profile(tmp_path: Path, cpu_bytes: int, tpu_bytes: int) -> Path:
    text = load_profile("coral_devboard").path
    src = Path(text).read_text()
    src = src.replace("value: 700000000,", f"value: {cpu_bytes},")
    src = src.replace(
        "memory_capacity_bytes: {value: 8388608,", f"memory_capacity_bytes: {{value: {tpu_bytes},"
    )
    src = src.replace("name: coral_devboard", "name: tiny_board")
    out = tmp_path / "tiny_board.yaml"
    out.write_text(src)
    return out


def test_nothing_fits_anywhere_fails_naming_units_and_numbers(tmp_path):
    m = int8_mlp()
    prof = _small_profile(tmp_path, cpu_bytes=2_000_000, tpu_bytes=3_000_000)
    with pytest.raises(PlacementInfeasibleError) as err:
        _solve(m, str(prof))
    msg = str(err.value)
    assert "the weights need 12632064 bytes" in msg and "5000000 bytes" in msg
    assert "cpu:0 2000000 bytes" in msg and "edgetpu:0 3000000 bytes" in msg
    # one layer alone fits nowhere: the error names the op group and every unit's memory
    prof = _small_profile(tmp_path, cpu_bytes=900_000, tpu_bytes=900_000)
    with pytest.raises(PlacementInfeasibleError, match=r"fits no unit: it needs 10\d{5} bytes"):
        _solve(int8_mlp(depth=1), str(prof))


def test_exact_and_edge_cut_on_a_model(corpus):
    m = read_model(corpus["densenet_tiny"])
    _, _, sol = _solve(m, "pixel8", method="exact", time_limit=20.0)
    h = _solve(m, "pixel8")[2]
    assert sol.optimal is not None
    if sol.optimal:
        assert sol.evaluation.latency_s <= h.evaluation.latency_s * (1 + 1e-12)
    pr, _, sol = _solve(m, "pixel8", method="edge-cut", edge_cut_k=3)
    assert sol.evaluation.num_partitions >= 3
    check_evaluation(pr.graph, sol.evaluation)
    assert np.isfinite(sol.evaluation.latency_s)


def test_an_op_no_processor_runs_is_named_with_every_reason(corpus, tmp_path):
    src = Path(load_profile("pixel8").path).read_text()
    src = src.replace("name: pixel8", "name: no_cpu")
    src = src.replace("    kind: cpu\n    delegate: xnnpack", "    kind: gpu\n    delegate: gpu")
    prof = tmp_path / "no_cpu.yaml"
    prof.write_text(src)
    with pytest.raises(PlacementInfeasibleError) as err:
        model_costgraph(read_model(corpus["custom_op"]), str(prof))
    msg = str(err.value)
    assert msg.startswith("op 0 AudioSpectrogram (node of 1 op(s)) can run on no processor")
    assert "gpu: AudioSpectrogram: Operation is not supported." in msg and "\n" not in msg


def test_one_call_api_gives_bundle_specs(corpus):
    from edgepart.bundle import build_bundle
    from edgepart.deploy.compile import partition_model, partition_specs

    path = corpus["transformer"]
    mp = partition_model(path, "pixel8", "edge-cut", SolveOptions(edge_cut_k=2))
    specs = partition_specs(path, "pixel8", "edge-cut", SolveOptions(edge_cut_k=2))
    assert [s.id for s in specs] == [p.id for p in mp.partitions]
    assert sorted(o for s in specs for o in s.ops) == list(range(mp.problem.fusion.num_ops))
    b = build_bundle(path, specs, profile="pixel8")
    assert [p.id for p in b.plan.partitions] == [s.id for s in specs]
