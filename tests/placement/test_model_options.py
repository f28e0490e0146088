"""Model options of the evaluation (transfers on units, one partition per unit, same-unit
hand-offs) and the C score kernel, which must equal the Python reference bit for bit."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from pgraphs import doc, graph

from edgepart.errors import CostGraphError
from edgepart.placement._fastscore import HAVE_C, Scorer
from edgepart.placement.costgraph import costgraph_from_dict
from edgepart.placement.evaluate import evaluate
from edgepart.placement.placement_check import check_evaluation
from edgepart.placement.synth import random_costgraph_doc

# node 0 (1 s on both) -> node 1 (cpu 10 s, gpu 1 s), 100 bytes: 1 s + 100 B / 100 B/s = 2 s
TWO = ([{"cpu": 1, "gpu": 1}, {"cpu": 10, "gpu": 1}], [(0, 1, 100)])


def _two(cpu_copies: bool, gpu_copies: bool):
    d = doc(*TWO)
    d["processors"][0]["transfers_on_unit"] = cpu_copies
    d["processors"][1]["transfers_on_unit"] = gpu_copies
    return costgraph_from_dict(d)


@pytest.mark.parametrize(
    ("cpu", "gpu", "latency", "period", "dur"),
    [
        (False, False, 4.5, 2.0, [1.0, 1.5]),  # DMA: the link carries 2 s, no unit pays
        (False, True, 4.5, 3.5, [1.0, 3.5]),  # the GPU receives: its partition copies first
        (True, False, 4.5, 3.0, [3.0, 1.5]),  # the CPU sends: its partition copies last
        (True, True, 6.5, 3.5, [3.0, 3.5]),  # both pay, the path carries the copy twice
    ],
)
def test_transfers_on_unit(cpu, gpu, latency, period, dur):
    g = _two(cpu, gpu)
    ev = evaluate(g, np.array([0, 1]))
    assert ev.latency_s == pytest.approx(latency)
    assert ev.period_s == pytest.approx(period)
    assert ev.part_duration.tolist() == pytest.approx(dur)
    check_evaluation(g, ev)


# s1 (0) and s2 (2) on the GPU, t (1) on the CPU, t -> s2: the GPU set is convex, but the plain
# epochs open the GPU first (s1 is the lowest ready node) and split it in two.
SPLIT = ([{"cpu": 1, "gpu": 1}] * 3, [(1, 2, 100)])


def test_single_partition_runs_a_convex_unit_set_as_one_partition():
    g = graph(*SPLIT)
    assert evaluate(g, np.array([1, 0, 1])).num_partitions == 3
    d = doc(*SPLIT)
    d["processors"][1]["single_partition"] = True
    g1 = costgraph_from_dict(d)
    ev = evaluate(g1, np.array([1, 0, 1]))
    assert ev.feasible and ev.num_partitions == 2
    assert ev.part_unit.tolist() == [0, 1] and ev.part_of.tolist() == [1, 0, 1]
    check_evaluation(g1, ev)


def test_single_partition_rejects_a_set_that_is_not_convex():
    d = doc([{"cpu": 1, "gpu": 1}] * 3, [(0, 1, 100), (1, 2, 100)])
    d["processors"][1]["single_partition"] = True
    g = costgraph_from_dict(d)
    ev = evaluate(g, np.array([1, 0, 1]))
    assert not ev.feasible and ev.latency_s == np.inf
    assert "unit gpu:0 must run its nodes as one partition" in ev.violations[0]
    assert Scorer(g, "latency").score(np.array([1, 0, 1]))[0] == np.inf


def _handoff(flag: bool, gpu_units: int = 1):
    # gpu{0} -> cpu{1} -> gpu{2} and 0 -> 2: the tensor 0 -> 2 is handed over inside vram
    d = doc([{"cpu": 1, "gpu": 1}] * 3, [(0, 1, 100, "a"), (0, 2, 100, "a"), (1, 2, 100)])
    d["links"].append({"src": "vram", "dst": "vram", "latency_s": 7.0})
    d["processors"][1]["charge_unit_handoffs"] = flag
    d["processors"][1]["units"] = gpu_units
    return costgraph_from_dict(d)


def test_hand_offs_inside_a_unit_are_free_unless_charged():
    free = evaluate(_handoff(False), np.array([1, 0, 1]))
    paid = evaluate(_handoff(True), np.array([1, 0, 1]))
    # vram -> dram -> vram costs 2 + 2 s; the 7 s self-link applies only when charged
    assert free.latency_s == pytest.approx(1.5 + 2 + 1 + 2 + 1.5)
    assert paid.latency_s == pytest.approx(1.5 + 7 + 1.5)
    assert len(free.xfer_tensor) == 2 and len(paid.xfer_tensor) == 3
    # two GPU units: a hand-off between units of one domain always pays the self-link
    other = evaluate(_handoff(False, 2), np.array([1, 0, 2]))
    assert other.latency_s == pytest.approx(1.5 + 7 + 1.5)
    for g, u in ((_handoff(False), [1, 0, 1]), (_handoff(True), [1, 0, 1])):
        check_evaluation(g, evaluate(g, np.array(u)))


@pytest.mark.parametrize(
    ("key", "value", "msg"),
    [
        ("transfers_on_unit", "yes", "got 'yes'"),
        ("single_partition", 1, "got 1"),
        ("charge_unit_handoffs", None, "got None"),
    ],
)
def test_options_are_validated_with_json_paths(key, value, msg):
    d = doc(*TWO)
    d["processors"][1][key] = value
    want = rf"processors\[1\]\.{key}: expected true or false, {msg}"
    with pytest.raises(CostGraphError, match=want):
        costgraph_from_dict(d)


def _random_options_doc(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 40))
    d = random_costgraph_doc(
        n, int(rng.integers(1, 5)), seed, memory_pressure=seed % 3 == 0, colocation=seed % 4 == 0
    )
    for p in d["processors"]:
        p["units"] = int(rng.integers(1, 4))
        p["transfers_on_unit"] = bool(rng.random() < 0.4)
        p["single_partition"] = bool(rng.random() < 0.3)
        p["charge_unit_handoffs"] = bool(rng.random() < 0.4)
    for dm in sorted({p.get("memory_domain", p["name"]) for p in d["processors"]}):
        if rng.random() < 0.5:
            d["links"].append({"src": dm, "dst": dm, "latency_s": float(rng.uniform(0, 1e-4))})
    return d


@pytest.mark.parametrize("seed", range(40))
def test_c_kernel_equals_python_kernel_and_checker_accepts(seed):
    rng = np.random.default_rng(1000 + seed)
    g = costgraph_from_dict(_random_options_doc(seed))
    adm = np.isfinite(g.latency)[:, g.unit_proc]
    for objective in ("latency", "throughput"):
        fast, ref = Scorer(g, objective), Scorer(g, objective, use_c=False)
        for _ in range(15):
            u = np.array([rng.choice(np.flatnonzero(adm[v])) for v in range(g.num_nodes)])
            assert fast.score(u) == ref.score(u)  # bit-identical, not approximately
            ev = evaluate(g, u)
            if ev.feasible:
                check_evaluation(g, ev)
                key = ref.score(u, spread=False)
                if objective == "latency":
                    assert key[:2] == (ev.latency_s, ev.period_s)
                else:  # (period, balance, latency)
                    assert (key[0], key[2]) == (ev.period_s, ev.latency_s)
        base = np.array([rng.choice(np.flatnonzero(adm[v])) for v in range(g.num_nodes)])
        ptr, nodes, units = [0], [], []
        for _ in range(25):
            for v in rng.choice(g.num_nodes, size=min(3, g.num_nodes), replace=False):
                nodes.append(v)
                units.append(rng.choice(np.flatnonzero(adm[v])))
            ptr.append(len(nodes))
        cur = ref.score(base)
        a = fast.scan(base, np.array(ptr), np.array(nodes), np.array(units), cur, first=False)
        b = ref.scan(base, np.array(ptr), np.array(nodes), np.array(units), cur, first=False)
        assert a[0] == b[0] and np.array_equal(a[1], b[1])


def test_c_kernel_is_built():
    # setup.py builds it in place (python setup.py build_ext --inplace); a missing compiler
    # would make every search run the Python kernel, slower by about 30x.
    assert HAVE_C


def test_with_options_copies_the_graph():
    g = graph(*TWO)
    g2 = g.with_options(transfers_on_unit=True, single_partition=[False, True])
    assert g2.proc_copies.tolist() == [True, True] and g2.proc_single.tolist() == [False, True]
    assert not g.proc_copies.any()
    assert evaluate(g2, np.array([0, 1])).period_s != evaluate(g, np.array([0, 1])).period_s
    copy.deepcopy(g2)
