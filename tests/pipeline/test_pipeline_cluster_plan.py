"""Cluster profiles (YAML) and the chain planner across nodes and links."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from edgepart.api.pipelines import plan_cluster
from edgepart.devices.cluster import load_cluster
from edgepart.errors import PlacementInfeasibleError, ProfileError
from edgepart.placement.chain import plan_chain

GOOD = """schema: edgepart/cluster@1
name: {name}
nodes:
  - {{name: n0, profile: x86_host}}
  - {{name: n1, profile: raspberry_pi5, resource: pi}}
  - {{name: n2, profile: x86_host}}
links:
  - {{src: n0, dst: n1, bandwidth_bytes_per_s: 1.25e+8, latency_s: 0.0002}}
  - {{src: n2, dst: n1, bandwidth_bytes_per_s: 1.0e+9, latency_s: 0.0001}}
"""


def _write(tmp_path, text, name="c3"):
    p = tmp_path / f"{name}.yaml"
    p.write_text(text.format(name=name))
    return p


def test_load_cluster(tmp_path):
    cl = load_cluster(_write(tmp_path, GOOD))
    assert [n.name for n in cl.nodes] == ["n0", "n1", "n2"]
    assert [n.resource for n in cl.nodes] == ["edgepart_node_n0", "pi", "edgepart_node_n2"]
    assert cl.nodes[1].profile.name == "raspberry_pi5"
    ln = cl.link("n1", "n2")  # written the other way round
    assert ln is not None and ln.bandwidth_bytes_per_s == 1e9
    assert ln.seconds(1000) == pytest.approx(1e-4 + 1e-6)


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (("profile: raspberry_pi5", "profile: nosuch"), "nodes[1].profile"),
        (("latency_s: 0.0002", "latency_s: -1"), "links[0].latency_s"),
        (
            ("dst: n1, bandwidth_bytes_per_s: 1.25e+8", "dst: n9, bandwidth_bytes_per_s: 1"),
            "links[0].dst",
        ),
        (("  - {{src: n2, dst: n1", "  - {{src: n2, dst: n0"), "links: nodes 'n1' and 'n2'"),
        (("links:", "linkz:"), "links: missing required key"),
        (("{{name: n2,", "{{name: n0,"), "nodes[2].name"),
    ],
)
def test_bad_cluster_files_name_the_key(tmp_path, edit, where):
    text = GOOD.replace(*edit)
    with pytest.raises(ProfileError) as info:
        load_cluster(_write(tmp_path, text))
    assert where in str(info.value) and "c3.yaml" in str(info.value)


def _brute(step, disp, w, cap, cut, lat, bw):
    n, k_n = step.shape
    best = np.inf
    for cuts in itertools.combinations(range(1, n), k_n - 1):
        b = [0, *cuts, n]
        if any(w[b[k] : b[k + 1]].sum() > cap[k] for k in range(k_n)):
            continue
        st = [disp[k] + step[b[k] : b[k + 1], k].sum() for k in range(k_n)]
        ln = [lat[k] + cut[b[k + 1]] / bw[k] for k in range(k_n - 1)]
        best = min(best, max(st + ln))
    return best


@pytest.mark.parametrize("seed", range(25))
def test_chain_dp_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, k_n = int(rng.integers(3, 10)), int(rng.integers(1, 4))
    if n < k_n:
        n = k_n
    step = rng.uniform(0.1, 2.0, (n, k_n)) * rng.uniform(0.5, 2.0, k_n)
    disp = rng.uniform(0, 0.2, k_n)
    w = rng.integers(0, 100, n)
    cap = np.full(k_n, 1e9) if seed % 3 else np.full(k_n, float(w.sum()) / k_n * 1.5)
    cut = rng.integers(0, 1000, n + 1)
    lat = rng.uniform(0, 0.3, k_n - 1)
    bw = rng.uniform(500, 5000, k_n - 1)
    want = _brute(step, disp, w, cap, cut, lat, bw)
    if not np.isfinite(want):
        with pytest.raises(PlacementInfeasibleError):
            plan_chain(step, disp, w, cap, cut, lat, bw)
        return
    got = plan_chain(step, disp, w, cap, cut, lat, bw)
    assert got.period_s == pytest.approx(want, rel=1e-12)
    assert got.bounds[0] == 0 and got.bounds[-1] == n
    assert all(a < b for a, b in itertools.pairwise(got.bounds))


def test_plan_cluster_of_a_corpus_model(corpus, tmp_path):
    plan = plan_cluster(corpus["mobilenet_v2"], _write(tmp_path, GOOD))
    ops = sorted(o for s in plan.stage_ops for o in s)
    assert ops == list(range(plan.model.main.num_ops))
    assert len(plan.stage_ops) == 3 and all(plan.stage_ops)
    costs = plan.costs()
    assert costs.num_stages == 5  # stage, link, stage, link, stage
    assert plan.period_s == pytest.approx(max(costs.forward_s))
    b = plan.bundle()
    assert [e.id for e in b.plan.partitions] == ["s0", "s1", "s2"]
    assert "link n0 -> n1" in plan.report()
