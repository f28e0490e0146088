"""Plans across partitions: per-partition and global arenas, concurrency, bundles and the CLI.

Every global plan goes through the checker and through an independent oracle that draws random
executions of the partitions (``_partition_oracle``). Models: corpus models partitioned by the
partitioner under device profiles (its own plan, the throughput objective, ``--edge-cut`` and
TFLite's default placement force several partitions where the latency plan keeps one), and a
branchy model built with edgepart's builder whose branches run concurrently on CPU units.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from _partition_oracle import executions, violations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgepart.bundle import (
    BundleArena,
    PartitionSpec,
    build_bundle,
    load_bundle,
    plan_bundle_arena,
    write_bundle,
)
from edgepart.cli import main
from edgepart.errors import ArenaOverflowError
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model
from edgepart.memory import check_plan, lower_bound
from edgepart.memory.csvio import read_buffers_csv
from edgepart.memory.global_plan import PartitionedPlan, plan_partitioned
from edgepart.memory.partitioned import (
    PartitionedBuffers,
    PartitionTensors,
    partitioned_buffers,
)
from edgepart.tflite.writer import write_model


def branchy(widths: tuple[int, ...] = (256, 512, 128), depth: int = 3) -> Model:
    """``x -> one chain of FULLY_CONNECTED+RELU per width -> ADD chain -> y`` (float32); each
    branch ends in a FULLY_CONNECTED back to 64 wide. Ops are laid out branch by branch."""
    rng = np.random.default_rng(0)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 64))
    ends = []
    for b, w in enumerate(widths):
        h, width = x, 64
        for d in range(depth + 1):
            out_w = 64 if d == depth else w
            wt = rng.standard_normal((out_w, width)).astype(np.float32) / np.sqrt(width)
            out = g.tensor(f"h{b}_{d}", DType.FLOAT32, (1, out_w))
            g.op(
                "FULLY_CONNECTED",
                [h, g.constant(f"w{b}_{d}", wt), g.constant(f"b{b}_{d}", np.zeros(out_w, "f4"))],
                [out],
                options={"fused_activation_function": "RELU"},
            )
            h, width = out, out_w
        ends.append(h)
    acc = ends[0]
    for k, e in enumerate(ends[1:]):
        out = g.tensor(f"sum{k}", DType.FLOAT32, (1, 64))
        g.op("ADD", [acc, e], [out])
        acc = out
    g.output(acc)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", acc)])
    return mb.build()


def _branch_parts(
    model: Model, units: list[str], memories: list[str], depth: int = 3
) -> list[PartitionTensors]:
    """One partition per branch (on ``units[b]``, memory ``memories[b]``), then the ADDs."""
    sg = model.main
    n_br = len(units)
    per = depth + 1
    parts = []
    for b in range(n_br):
        ops = tuple(range(b * per, (b + 1) * per))
        out = int(sg.op_outputs.row(ops[-1])[0])
        parts.append(PartitionTensors(f"p{b}", units[b], memories[b], sg, ops, (0,), (out,)))
    adds = tuple(range(n_br * per, sg.num_ops))
    ins = tuple(int(p.outputs[0]) for p in parts)
    parts.append(PartitionTensors("p_add", "cpu:0", "dram", sg, adds, ins, (int(sg.outputs[0]),)))
    return parts


def _check(pb: PartitionedBuffers, plan: PartitionedPlan, outputs: set[int]) -> None:
    """Checker on every plan; the oracle on the global one; sizes against bounds."""
    for p, prob in zip(pb.partitions, pb.partition_problems, strict=True):
        pp = plan.partition_plans[p.id]
        peaks = check_plan(prob, pp.offsets, {m: a.size for m, a in pp.arenas.items()})
        for m, a in pp.arenas.items():
            assert a.lower_bound <= a.size == peaks[m]
    g = plan.global_plan
    peaks = check_plan(pb.problem, g.offsets, {m: a.size for m, a in g.arenas.items()})
    for m, a in g.arenas.items():
        assert a.lower_bound <= a.size == peaks[m]
    assert violations(pb, g.offsets, executions(pb, 30, seed=1), outputs) == []


# ----------------------------------------------------------------------------- corpus models


def _partitioned(path: Path, profile: str, mode: str) -> PartitionedBuffers:
    from edgepart.deploy.apply import partition_specs, placed_partitions
    from edgepart.lowering.default_placement import profile_default_baseline
    from edgepart.lowering.from_model import model_costgraph
    from edgepart.placement.solve import SolveOptions, partition_costgraph
    from edgepart.tflite.reader import read_model

    problem = model_costgraph(read_model(path), profile)
    default = profile_default_baseline(problem)
    if mode == "tflite-default":
        ev = default.baseline.evaluation
    else:
        method, opts = {
            "throughput": ("heuristic", SolveOptions(objective="throughput")),
            "edge-cut-3": ("edge-cut", SolveOptions(edge_cut_k=3)),
        }[mode]
        ev = partition_costgraph(problem.graph, method, opts, reference=default.baseline).evaluation
    specs = partition_specs(problem, ev, placed_partitions(problem, ev))
    sg = problem.model.subgraphs[problem.subgraph]
    bundle = build_bundle(problem.model, specs, subgraph=problem.subgraph, profile=problem.profile)
    arena = plan_bundle_arena(bundle, source=sg, profile=problem.profile)
    assert arena.buffers is not None
    return arena.buffers


def _bundle_buffers(path: Path) -> BundleArena:
    """The bundle's partitions as their files run (what ``plan-memory BUNDLE/`` plans)."""
    arena = plan_bundle_arena(load_bundle(path))
    assert arena.buffers is not None
    return arena


@pytest.mark.parametrize(
    ("name", "profile", "mode"),
    [
        ("mobilenet_v2", "pixel8", "edge-cut-3"),
        ("densenet_tiny", "pixel8", "throughput"),
        ("densenet_tiny", "vivo_x100_pro", "edge-cut-3"),
        ("custom_op", "pixel8", "tflite-default"),
        ("transformer", "vivo_x100_pro", "edge-cut-3"),
        ("lstm", "pixel8", "edge-cut-3"),
        ("mobilenet_v2_int8", "coral_devboard", "throughput"),
    ],
)
def test_corpus_global_plans_pass_checker_and_oracle(
    corpus: dict[str, Path], name: str, profile: str, mode: str
) -> None:
    pb = _partitioned(corpus[name], profile, mode)
    assert len(pb.partitions) >= 2
    outs = {int(t) for t in pb.partitions[0].subgraph.outputs.tolist()}
    plans = {
        s: plan_partitioned(pb, strategy=s, time_limit=None, node_limit=2000)
        for s in ("tflite", "portfolio", "search")
    }
    for plan in plans.values():
        _check(pb, plan, outs)
    for m in pb.problem.memories:
        sizes = [plans[s].global_plan.arenas[m].size for s in ("tflite", "portfolio", "search")]
        assert sizes == sorted(sizes, reverse=True), (m, sizes)  # never worse than the baseline
    for cmp in plans["search"].memories():
        if cmp.shared:
            assert cmp.global_size <= cmp.per_partition_size, cmp


def test_boundary_tensors_one_buffer_per_memory() -> None:
    model = branchy((128, 128), depth=1)
    sg = model.main
    shared = partitioned_buffers(
        _branch_parts(model, ["cpu:0", "cpu:0"], ["dram", "dram"], depth=1), host_memory="dram"
    )
    split = partitioned_buffers(
        _branch_parts(model, ["cpu:0", "gpu:0"], ["dram", "gpu"], depth=1), host_memory="dram"
    )
    t = int(sg.op_outputs.row(3)[0])  # branch 1's output, read by the ADD partition (dram)
    assert [b for b in shared.problem.ids if b.startswith("b:") and b.endswith(f":t{t}")] == [
        f"b:dram:t{t}"
    ]
    ids = [b for b in split.problem.ids if b.startswith("b:") and b.endswith(f":t{t}")]
    assert ids == [f"b:gpu:t{t}", f"b:dram:t{t}"]  # source side first, then the copy
    # the model input: in the host memory, plus a copy for the branch on the GPU
    assert {b for b in split.problem.ids if b.endswith(":t0")} == {"b:dram:t0", "b:gpu:t0"}


def test_boundary_lifetimes_on_a_chain() -> None:
    """Two partitions in a chain: the handed tensor lives from its producer's block to its
    reader's block on the producer's side; the copy only in the reader's block; internal
    buffers keep their TFLite lifetimes inside their blocks."""
    model = branchy((128,), depth=2)  # 3 FULLY_CONNECTED in a chain, no ADD
    sg = model.main
    t0, t1, t2 = (int(sg.op_outputs.row(k)[0]) for k in range(3))
    for mem1, expect in (("dram", [f"b:dram:t{t1}"]), ("gpu", [f"b:dram:t{t1}", f"b:gpu:t{t1}"])):
        parts = [
            PartitionTensors("a", "cpu:0", "dram", sg, (0, 1), (0,), (t1,)),
            PartitionTensors(
                "b", "gpu:0" if mem1 == "gpu" else "cpu:0", mem1, sg, (2,), (t1,), (t2,)
            ),
        ]
        pb = partitioned_buffers(parts, host_memory="dram", model_outputs=[t2])
        p = pb.problem
        assert [b for b in p.ids if b.endswith(f":t{t1}")] == expect
        inner = p.index[f"a:t{t0}"]
        assert (p.lower[inner], p.upper[inner]) == (0, 2)  # made by op 0, read by op 1
        src = p.index[f"b:dram:t{t1}"]
        end = p.upper[p.index[f"b:{mem1}:t{t2}"]]  # the model output lives to the end
        assert p.lower[src] == 0 and p.upper[src] == end
        if mem1 == "gpu":
            dst = p.index[f"b:gpu:t{t1}"]
            assert p.lower[dst] > p.upper[inner] and p.upper[dst] == end
            assert p.upper[p.index[f"b:dram:t{t2}"]] >= end  # the host copy
        per_a = pb.partition_problems[0]
        assert sorted(per_a.ids) == sorted(["a:t0", f"a:t{t0}", f"a:t{t1}"])


def test_concurrent_partitions_conflict_and_a_corrupted_plan_is_caught() -> None:
    model = branchy()
    parts = _branch_parts(model, ["cpu:0", "cpu:1", "cpu:2"], ["dram"] * 3)
    pb = partitioned_buffers(parts, host_memory="dram")
    assert pb.concurrent == ((0, 1), (0, 2), (1, 2))
    assert len(pb.problem.conflicts) > 0
    # the concurrency bound stacks the branches' peaks above the live-bytes sweep
    serial = plan_partitioned(
        partitioned_buffers(_branch_parts(model, ["cpu:0"] * 3, ["dram"] * 3), host_memory="dram"),
        strategy="portfolio",
        time_limit=None,
    )
    plan = plan_partitioned(pb, strategy="search", time_limit=None, node_limit=5000)
    conc = plan.global_plan.arenas["dram"]
    assert lower_bound(pb.problem, "dram").lower_bound < pb.floors["dram"] == conc.lower_bound
    _check(pb, plan, {int(model.main.outputs[0])})
    # serial branches (one unit) need less than concurrent ones
    assert serial.global_plan.arenas["dram"].size < conc.size
    assert conc.size == conc.lower_bound  # provably optimal
    # corrupt: put an internal buffer of branch 1 on top of one of branch 0 (their lifetimes
    # on the timeline are apart, only the explicit concurrency conflict forbids it)
    prob = pb.problem
    a = next(i for i, x in enumerate(pb.info) if x.partition == "p0" and prob.size[i])
    b = next(i for i, x in enumerate(pb.info) if x.partition == "p1" and prob.size[i])
    assert prob.upper[a] <= prob.lower[b]
    bad = dict(plan.global_plan.offsets)
    bad[prob.ids[b]] = bad[prob.ids[a]]
    with pytest.raises(ArenaOverflowError, match="explicit conflict"):
        check_plan(prob, bad)
    assert violations(pb, bad, executions(pb, 30, seed=2), {int(model.main.outputs[0])})


def test_oracle_catches_a_plan_that_ignores_concurrency() -> None:
    """Planning the same buffers without the explicit conflicts gives a plan the oracle
    rejects: the conflicts are what keeps concurrent partitions apart."""
    from edgepart.memory import MemoryProblem, plan_arena

    model = branchy()
    pb = partitioned_buffers(
        _branch_parts(model, ["cpu:0", "cpu:1", "cpu:2"], ["dram"] * 3), host_memory="dram"
    )
    p = pb.problem
    loose = MemoryProblem.from_arrays(
        ids=p.ids,
        lower=p.lower,
        upper=p.upper,
        size=p.size,
        memory=list(p.memories[int(m)] for m in p.memory),
    )
    plan = plan_arena(loose, strategy="portfolio", time_limit=None)
    assert violations(pb, plan.offsets, executions(pb, 30, seed=3), {int(model.main.outputs[0])})


# ----------------------------------------------------------------------------- bundles, CLI


@pytest.fixture(scope="module")
def concurrent_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The branchy model as a bundle: branches on CPU units 0-2 of pixel8, ADDs on cpu:0."""
    model = branchy()
    src = tmp_path_factory.mktemp("m") / "branchy.tflite"
    src.write_bytes(write_model(model))
    specs = [
        PartitionSpec(ops=list(range(b * 4, b * 4 + 4)), processor="cpu", unit=b) for b in range(3)
    ]
    specs.append(PartitionSpec(ops=list(range(12, model.main.num_ops)), processor="cpu", unit=0))
    out = tmp_path_factory.mktemp("b") / "bundle"
    write_bundle(out, src, specs, profile="pixel8", arena="boundary")
    return out


def test_bundle_buffers_from_partition_files(concurrent_bundle: Path) -> None:
    bb = _bundle_buffers(concurrent_bundle)
    pb = bb.buffers
    assert pb is not None
    assert bb.memories_from == "profile pixel8" and pb.host_memory == "dram"
    assert [p.unit for p in pb.partitions] == ["cpu:0", "cpu:1", "cpu:2", "cpu:0"]
    assert pb.concurrent == ((0, 1), (0, 2), (1, 2))  # the ADDs wait for every branch
    plan = plan_partitioned(pb, strategy="search", time_limit=None, node_limit=5000)
    _check(pb, plan, _bundle_outputs(concurrent_bundle))
    (cmp,) = plan.memories()
    assert cmp.memory == "dram" and cmp.partitions == 4 and cmp.shared
    assert cmp.global_size < cmp.per_partition_size


def _bundle_outputs(path: Path) -> set[int]:
    return {o["tensor"] for o in json.loads((path / "plan.json").read_text())["outputs"]}


def test_cli_plan_memory_bundle(
    corpus: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = tmp_path / "b"
    args = ["--profile", "pixel8", "--objective", "throughput", "-o", str(bundle)]
    assert main(["partition", str(corpus["densenet_tiny"]), *args]) == 0
    capsys.readouterr()
    out_json, out_csv = tmp_path / "plan.json", tmp_path / "plan.csv"
    assert main(["plan-memory", str(bundle), "-o", str(out_json)]) == 0
    text = capsys.readouterr().out
    rows = {tuple(ln.split()[:3]): ln.split() for ln in text.splitlines()}
    for plan in ("partition", "global"):
        for s in ("tflite", "portfolio", "search"):
            row = rows[("dram", plan, s)]
            peak, bound = int(row[3].replace(",", "")), int(row[4].replace(",", ""))
            assert float(row[5]) == pytest.approx(peak / bound, abs=1e-4)
    assert "dram: 3 partitions share it: global" in text
    assert f"wrote {out_json} (search plan)" in text
    doc = json.loads(out_json.read_text())
    assert doc["format"] == "edgepart-memory-bundle-plan" and doc["strategy"] == "search"
    pb = _bundle_buffers(bundle).buffers
    assert pb is not None
    # the written global offsets are a valid plan of the rebuilt problem
    offsets = {
        (
            f"{b['partition']}:t{b['tensor']}"
            if b["scope"] == "partition"
            else f"b:{b['memory']}:t{b['tensor']}"
        ): b["offset"]
        for b in doc["global"]["buffers"]
    }
    peaks = check_plan(pb.problem, offsets)
    assert peaks == {m: v["size"] for m, v in doc["global"]["memories"].items()}
    for p, prob in zip(pb.partitions, pb.partition_problems, strict=True):
        part = doc["partitions"][p.id]
        own = {f"{p.id}:t{b['tensor']}": b["offset"] for b in part["buffers"]}
        assert check_plan(prob, own)[p.memory] == part["size"] >= part["lower_bound"]
    cmp = doc["comparison"]["dram"]
    assert cmp["partitions"] == 3 and cmp["global_size"] < cmp["per_partition_size"]
    # CSV: the global buffer table with offsets, itself a valid input
    assert main(["plan-memory", str(bundle), "--strategy", "portfolio", "-o", str(out_csv)]) == 0
    with out_csv.open() as f:
        table = list(csv.DictReader(f))
    check_plan(pb.problem, {r["id"]: int(r["offset"]) for r in table})
    assert len(read_buffers_csv(out_csv)) == len(pb.problem)
    # reproducible with a deterministic strategy
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for f in (a, b):
        assert main(["plan-memory", str(bundle), "--strategy", "portfolio", "-o", str(f)]) == 0
    assert a.read_bytes() == b.read_bytes()
    capsys.readouterr()
    assert main(["plan-memory", str(bundle), "--tflm-plan", str(tmp_path / "x.tflite")]) == 2
    assert "needs a .tflite model" in capsys.readouterr().err


def test_cli_plan_memory_concurrent_bundle(
    concurrent_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan-memory", str(concurrent_bundle), "--strategy", "search"]) == 0
    text = capsys.readouterr().out
    assert "3 partition pairs may run concurrently" in text
    assert "dram: 4 partitions share it" in text


def test_concurrency_bound_is_a_clique_of_conflicting_buffers() -> None:
    """The concurrency bound is the size of a set of pairwise conflicting buffers: each
    concurrent branch's internal buffers live at its own peak, plus every buffer whose lifetime
    spans all branches. Rebuilt here from the problem alone."""
    model = branchy((512, 64, 256))
    pb = partitioned_buffers(
        _branch_parts(model, ["cpu:0", "cpu:1", "cpu:2"], ["dram"] * 3), host_memory="dram"
    )
    p = pb.problem
    explicit = {tuple(x) for x in p.conflicts.tolist()}

    def conflict(i: int, j: int) -> bool:
        overlap = p.lower[i] < p.upper[j] and p.lower[j] < p.upper[i]
        return bool(overlap) or (min(i, j), max(i, j)) in explicit

    clique: list[int] = []
    first = last = None
    for k in ("p0", "p1", "p2"):
        rows = [i for i, x in enumerate(pb.info) if x.partition == k]
        times = sorted({int(p.lower[i]) for i in rows})
        live = [[i for i in rows if p.lower[i] <= t < p.upper[i]] for t in times]
        clique += max(live, key=lambda r: int(p.size[r].sum()))
        lo, hi = int(p.lower[rows].min()), int(p.upper[rows].max())
        first, last = min(lo, first or lo), max(hi, last or hi)
    clique += [
        i
        for i, x in enumerate(pb.info)
        if x.scope == "boundary" and p.lower[i] <= first and p.upper[i] >= last
    ]
    assert all(conflict(i, j) for a, i in enumerate(clique) for j in clique[a + 1 :])
    assert int(p.size[clique].sum()) == pb.floors["dram"] > lower_bound(p, "dram").lower_bound


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    widths=st.lists(st.sampled_from([16, 40, 64, 128, 300]), min_size=2, max_size=4),
    depth=st.integers(1, 3),
    placement=st.lists(
        st.sampled_from(["cpu:0", "cpu:1", "gpu:0", "npu:0"]), min_size=4, max_size=4
    ),
    strategy=st.sampled_from(["tflite", "portfolio", "search"]),
)
def test_random_placements_pass_checker_and_oracle(
    widths: list[int], depth: int, placement: list[str], strategy: str
) -> None:
    memory = {"cpu:0": "dram", "cpu:1": "dram", "gpu:0": "gpu", "npu:0": "npu"}
    model = branchy(tuple(widths), depth=depth)
    units = placement[: len(widths)]
    pb = partitioned_buffers(
        _branch_parts(model, units, [memory[u] for u in units], depth=depth), host_memory="dram"
    )
    plan = plan_partitioned(pb, strategy=strategy, time_limit=None, node_limit=500)
    _check(pb, plan, {int(model.main.outputs[0])})
    for cmp in plan.memories():
        assert cmp.global_bound <= cmp.global_size
