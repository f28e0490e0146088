"""Model -> cost graph: support from the exact claim rules, costs from the cost model, tensors."""

from __future__ import annotations

import numpy as np
import pytest

from edgepart.claim.delegation import claim
from edgepart.cost.hardware import hardware_from_profile
from edgepart.cost.model import CostModel
from edgepart.devices.delegate import load_delegate
from edgepart.devices.profile import load_profile, profile_names
from edgepart.errors import UsageError
from edgepart.lowering.from_model import execution_streams, model_costgraph
from edgepart.lowering.processor_support import dynamic_tensors
from edgepart.tflite.reader import read_model

PROFILES = profile_names()


@pytest.fixture(scope="module")
def models(corpus):
    return {name: read_model(path) for name, path in corpus.items()}


@pytest.mark.parametrize("profile", PROFILES)
def test_support_matches_the_claim_module(models, profile):
    prof = load_profile(profile)
    for name, m in models.items():
        sg = m.main
        pr = model_costgraph(m, prof)
        dyn_ops = np.zeros(sg.num_ops, dtype=bool)
        dyn = dynamic_tensors(sg)
        for csr in (sg.op_inputs, sg.op_outputs):
            t = csr.idx.astype(np.int64)
            hit = (t >= 0) & dyn[np.maximum(t, 0)]
            dyn_ops[np.unique(csr.row_ids()[hit])] = True
        for p, proc in enumerate(prof.processors):
            got = pr.support.supported[:, p]
            if proc.kind == "cpu":
                assert got.all(), (name, proc.name)
                continue
            step = claim(m, [proc.delegate], default_delegate=None, context=dict(prof.context))
            want = step.steps[0].support.supported
            helper_ops = pr.fusion.is_helper
            # helpers (fp16 DEQUANTIZE re-added with their consumers) and ops touching
            # dynamic tensors (the whole graph is refused by static-shape delegates) differ
            # from the per-op table by design; everything else must agree exactly
            static_only = not load_delegate(proc.delegate).policy.allow_dynamic_tensors
            mask = ~helper_ops & ~(dyn_ops & static_only)
            assert (got[mask] == want[mask]).all(), (name, proc.name)
            if (dyn_ops & static_only).any() and proc.kind != "cpu":
                assert not got[dyn_ops].any()
            # a node runs on p only if all its ops (helpers included) do
            g = pr.graph
            for v in range(g.num_nodes):
                ok = bool(got[pr.fusion.node_ops(v)].all())
                assert np.isfinite(g.latency[v, p]) == (ok and not pr.no_cost[v, p]), (name, v)
                if not ok:
                    assert pr.why_not(v, p)


def test_node_costs_are_the_cost_models_op_sums(models):
    prof = load_profile("pixel8")
    cm = CostModel(hardware_from_profile(prof))
    for name in ("mobilenet_v2_fp16", "transformer", "resource_vars"):
        m = models[name]
        pr = model_costgraph(m, prof, cm)
        gc = cm.costs(m.main, m)
        g, fz = pr.graph, pr.fusion
        for v in range(g.num_nodes):
            ops = fz.members.row(v)
            for p in range(g.num_procs):
                if np.isfinite(g.latency[v, p]):
                    want = gc.group_latency(ops, p).seconds
                    assert g.latency[v, p] == pytest.approx(want, rel=1e-12, abs=1e-15)
        assert g.proc_dispatch.tolist() == [gc.invoke_overhead(p).seconds for p in range(3)]


def test_tensors_weights_and_topology(models):
    m = models["mobilenet_v2_fp16"]
    sg = m.main
    pr = model_costgraph(m, "pixel8")
    g, fz = pr.graph, pr.fusion
    # nodes are in topological order and every edge carries a real tensor
    rows = np.repeat(np.arange(g.num_nodes), np.diff(g.succ.ptr))
    assert (rows < g.succ.idx).all()
    assert (g.tensor_bytes == sg.tensor_nbytes[pr.tensor_index]).all()
    # weights: the constants each node reads, the fp16 ones through its cloned DEQUANTIZE
    total = 0
    for v in range(g.num_nodes):
        ins = sg.op_inputs.take(fz.node_ops(v)).idx
        ins = np.unique(ins[ins >= 0])
        w = int(sg.tensor_nbytes[ins[sg.tensor_is_constant[ins]]].sum())
        assert g.weight_bytes[v] == w
        total += w
    consts = np.flatnonzero(sg.tensor_is_constant)
    assert total >= int(sg.tensor_nbytes[consts].sum()) * 0.99
    # model input and output are tensors of the graph, delivered from / to the host
    assert set(pr.tensor_index[g.tensor_src < 0].tolist()) == set(sg.inputs.tolist())
    assert pr.tensor_index[g.output_tensors].tolist() == sg.outputs.tolist()
    assert g.domain_names[g.host_domain] == "dram"
    # transfers: link latency + bytes / bandwidth (pixel8: dram <-> gpu_buffers 100 us, 20 GB/s)
    t = 0
    d, gd = g.domain_names.index("dram"), g.domain_names.index("gpu_buffers")
    assert g.transfer_cost[t, d, gd] == pytest.approx(1e-4 + g.tensor_bytes[t] / 2e10)
    # gpu_buffers -> npu_buffers has no direct link: routed through dram
    nd = g.domain_names.index("npu_buffers")
    assert g.transfer_cost[t, gd, nd] == pytest.approx(
        g.transfer_cost[t, gd, d] + g.transfer_cost[t, d, nd]
    )


def test_execution_streams_follow_threads(models):
    assert execution_streams("cpu", 9, 4) == 2
    assert execution_streams("cpu", 4, 4) == 1
    assert execution_streams("gpu", 7, 1) == 1
    g = model_costgraph(models["sparse_mlp"], "pixel8").graph
    assert g.proc_units.tolist() == [2, 1, 1]
    assert g.proc_memory[0] == 5e9


def test_empty_or_missing_subgraph(models):
    with pytest.raises(UsageError, match="subgraph 3 does not exist"):
        model_costgraph(models["cond"], "pixel8", subgraph=3)


def test_profile_model_options_reach_the_cost_graph(models, tmp_path):
    # transfers_on_unit and single_partition on a profile processor become the cost graph's
    # per-processor options (docs/costgraph.md); absent keys mean False
    import yaml

    src = load_profile("pixel8")
    with open(src.path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    doc["processors"][1]["transfers_on_unit"] = True
    doc["processors"][2]["single_partition"] = True
    path = tmp_path / "pixel8.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    m = next(iter(models.values()))
    g = model_costgraph(m, load_profile(str(path))).graph
    assert g.proc_copies.tolist() == [False, True, False]
    assert g.proc_single.tolist() == [False, False, True]
    assert not g.proc_unit_handoff.any()
    plain = model_costgraph(m, src).graph
    assert not plain.proc_copies.any() and not plain.proc_single.any()
