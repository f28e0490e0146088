"""Tensor parallelism end to end: the partitioner's split decisions, plan.json version 2, the
bundle running its shards concurrently and bit-identically, ``--no-split``, the report."""

from __future__ import annotations

import itertools
import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from _litert import interpreter, random_inputs, run

import edgepart
from edgepart.bundle import load_bundle, plan_from_doc
from edgepart.cli import main
from edgepart.errors import BundleError
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model
from edgepart.ir.values import Quantization
from edgepart.runtime import PartitionedInterpreter
from edgepart.tflite.writer import save_model

REPO = Path(__file__).resolve().parents[2]
HOST_2X1T = REPO / "examples" / "profiles" / "host_2x1t.yaml"
FOUR_128MB = REPO / "examples" / "profiles" / "four_units_128mb.yaml"


def conv_chain(cout: int = 96, int8: bool = False) -> Model:
    """``x[1,24,24,64] -> CONV_2D 3x3 (RELU) -> CONV_2D 3x3 -> y``: big enough that both
    layers are worth splitting over two CPU units."""
    rng = np.random.default_rng(5)
    mb = ModelBuilder()
    g = mb.subgraph("main")

    def q(scale, n=1):
        return Quantization(np.full(n, scale, np.float32), np.zeros(n, np.int64))

    dt = DType.INT8 if int8 else DType.FLOAT32
    x = g.input("x", dt, (1, 24, 24, 64), quantization=q(0.05) if int8 else None)
    h, cin = x, 64
    for k, act in enumerate(("RELU", "NONE")):
        if int8:
            ws = rng.uniform(0.002, 0.01, cout).astype(np.float32)
            w = g.constant(
                f"w{k}",
                rng.integers(-127, 128, (cout, 3, 3, cin)).astype(np.int8),
                quantization=Quantization(ws, np.zeros(cout, np.int64), 0),
            )
            b = g.constant(
                f"b{k}",
                rng.integers(-300, 300, cout).astype(np.int32),
                quantization=Quantization(ws * 0.05, np.zeros(cout, np.int64), 0),
            )
            y = g.tensor(f"y{k}", dt, (1, 24, 24, cout), quantization=q(0.05))
        else:
            w = g.constant(
                f"w{k}", (rng.standard_normal((cout, 3, 3, cin)) * 0.05).astype(np.float32)
            )
            b = g.constant(f"b{k}", (rng.standard_normal(cout) * 0.1).astype(np.float32))
            y = g.tensor(f"y{k}", dt, (1, 24, 24, cout))
        g.op(
            "CONV_2D",
            [h, w, b],
            [y],
            options={"padding": "SAME", "stride_w": 1, "stride_h": 1,
                     "fused_activation_function": act},
            version=3 if int8 else 1,
        )  # fmt: skip
        h, cin = y, cout
    g.output(h)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", h)])
    return mb.build()


@pytest.fixture(scope="module")
def conv_file(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("tp") / "conv_chain.tflite"
    save_model(conv_chain(), p)
    return p


@pytest.fixture(scope="module")
def split_bundle(conv_file, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tp") / "bundle"
    edgepart.compile(conv_file, str(HOST_2X1T)).save(out)
    return out


def _same_outputs(bundle_dir: Path, model: Path, executor: str | None = None) -> None:
    ref = interpreter(path=str(model), xnnpack=executor != "builtin")
    xs = random_inputs(ref, seed=4)
    want = run(ref, xs)
    with PartitionedInterpreter(str(bundle_dir), executor=executor) as pi:
        pi.allocate_tensors()
        got = run(pi, xs)
    for a, b in zip(want, got, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_partitioner_splits_big_layers_across_two_units(conv_file):
    plan = edgepart.place(conv_file, str(HOST_2X1T))
    tp = plan.tensor_parallel
    assert tp is not None and tp.enabled
    assert len(plan.splits) == 2  # both convolutions
    assert tp.gain is not None and tp.gain >= 0.10
    assert tp.split_latency_s < 0.9 * tp.unsplit_latency_s
    g = plan.problem.graph
    for st in plan.splits:
        assert st.choice.reason == "latency" and st.record.exact
        assert st.record.spec.mode == "output_channels"
        assert sum(st.record.spec.sizes) == 96 and len(st.record.spec.sizes) == 2
        assert st.predicted["gain"] >= 0.10
        units = {int(plan.solution.evaluation.units[plan.problem.fusion.node_of[sh[-1]]])
                 for sh in st.record.shards}  # fmt: skip
        assert {g.unit_name(u) for u in units} == {"cpu:0", "cpu:1"}
    text = plan.report()
    assert "tensor parallelism: 2 split layer(s)" in text
    assert "by output_channels, latency" in text and "(gain " in text


def test_split_bundle_is_version_2_and_bit_identical(split_bundle, conv_file):
    b = load_bundle(split_bundle)
    doc = json.loads((split_bundle / "plan.json").read_text())
    assert doc["version"] == 2 and b.plan.version == 2
    assert doc["source"]["num_ops"] == 2 and b.plan.num_ops > 2
    assert [s["reason"] for s in doc["splits"]] == ["latency", "latency"]
    kinds = sorted({c["kind"] for c in doc["collectives"]})
    assert kinds == ["all_gather", "broadcast", "send_recv"]
    for c in doc["collectives"]:
        assert c["bytes"] > 0 and c["links"] == [] and c["cost_s"] is not None
    assert doc["tensor_parallel"]["splits"] == 2 and doc["tensor_parallel"]["gain"] >= 0.1
    # the chained layer reads its own copy of the first layer's all-gather on each unit
    second = max(b.plan.splits, key=lambda s: s.ops[0])
    first = min(b.plan.splits, key=lambda s: s.ops[0])
    gather = next(c for c in b.plan.collectives if c.id == first.collective)
    assert len(gather.ops) == 2 and len(gather.destination) == 2
    assert second.ops == (1,)
    report = (split_bundle / "report.txt").read_text()
    assert "tensor parallelism: 2 split layer(s)" in report
    assert "partition_report.txt" in {p.name for p in split_bundle.iterdir()}
    for executor in (None, "builtin"):
        _same_outputs(split_bundle, conv_file, executor)


def test_shards_of_one_layer_run_at_the_same_time(split_bundle):
    """Both shards of a layer wait at a barrier inside their partition's run: a serial
    dispatch could never get both there and the barrier would time out."""
    pi = PartitionedInterpreter(str(split_bundle))
    groups = pi.splits
    assert groups and all(g.concurrent and len(set(g.units)) == 2 for g in groups)
    pos = {p.id: k for k, p in enumerate(pi.plan.partitions)}
    by_group = {}
    for g in groups:
        bar = threading.Barrier(2, timeout=30)
        for p in g.partitions:
            by_group[pos[p]] = bar
    met: list[int] = []
    real = pi._run_part

    def run_part(k: int) -> None:
        bar = by_group.get(k)
        if bar is not None:
            bar.wait()  # raises BrokenBarrierError if the other shard never comes
            met.append(k)
        real(k)

    pi._run_part = run_part  # type: ignore[method-assign]
    pi.allocate_tensors()
    for d in pi.get_input_details():
        pi.set_tensor(d["index"], np.ones(d["shape"], d["dtype"]))
    pi.invoke()
    pi.close()
    assert sorted(met) == sorted(by_group)


def test_no_split_gives_todays_plan(conv_file, tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["partition", str(conv_file), "--profile", str(HOST_2X1T), "--no-split",
                 "-o", str(a)]) == 0  # fmt: skip
    doc = json.loads((a / "plan.json").read_text())
    assert doc["version"] == 1 and "splits" not in doc and "tensor_parallel" not in doc
    assert "tensor parallelism" not in (a / "partition_report.txt").read_text()
    compiled = edgepart.compile(conv_file, str(HOST_2X1T), split=False)
    compiled.save(b)
    assert {p.name: p.read_bytes() for p in a.rglob("*") if p.is_file()} == {
        p.name: p.read_bytes() for p in b.rglob("*") if p.is_file()
    }
    capsys.readouterr()
    assert main(["partition", str(conv_file), "--profile", str(HOST_2X1T)]) == 0
    assert "tensor parallelism: 2 split layer(s)" in capsys.readouterr().out
    assert main(["partition", "--graph", str(conv_file), "--no-split"]) == 2
    with pytest.raises(edgepart.UsageError, match="split must be True or False"):
        edgepart.place(conv_file, str(HOST_2X1T), split="yes")  # type: ignore[arg-type]


def test_when_no_split_pays_the_bundle_is_unchanged(tmp_path, capsys):
    """On a phone the model is one GPU/NPU partition; no split pays its transfers, so the
    bundle is byte for byte what the partitioner wrote without tensor parallelism."""
    model = REPO / "examples" / "models" / "mobilenet_v2.tflite"
    plan = edgepart.place(model, "pixel8")
    assert plan.splits == () and plan.tensor_parallel.note
    on, off = tmp_path / "on", tmp_path / "off"
    edgepart.compile(model, "pixel8").save(on)
    edgepart.compile(model, "pixel8", split=False).save(off)
    files = sorted(p.relative_to(on) for p in on.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(off) for p in off.rglob("*") if p.is_file())
    for f in files:
        assert (on / f).read_bytes() == (off / f).read_bytes(), f
    assert main(["partition", str(model), "--profile", "pixel8"]) == 0
    assert "tensor parallelism: no split taken" in capsys.readouterr().out


def test_int8_layers_split_exactly(tmp_path):
    model = tmp_path / "int8.tflite"
    save_model(conv_chain(int8=True), model)
    compiled = edgepart.compile(model, str(HOST_2X1T))
    assert compiled.plan.splits, compiled.report()
    for s in compiled.plan.splits:
        assert s.exact and s.mode == "output_channels"
    out = tmp_path / "b"
    compiled.save(out)
    for executor in (None, "builtin"):
        _same_outputs(out, model, executor)


def _profile_with_units(tmp_path: Path, mib: int, units: int = 2) -> Path:
    text = FOUR_128MB.read_text()
    text = text.replace("value: 134217728", f"value: {mib << 20}")
    old = 'units: {value: 4, provenance: estimated, source: "assumed"}'
    new = f'units: {{value: {units}, provenance: estimated, source: "assumed"}}'
    text = text.replace(old, new)
    text = text.replace("name: four_units_128mb", f"name: units_{units}x{mib}mb")
    p = tmp_path / f"units_{units}x{mib}mb.yaml"
    p.write_text(text)
    return p


def fc_stack(widths=(1024, 1024, 256)) -> Model:
    rng = np.random.default_rng(9)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, widths[0]))
    h = x
    for k, (a, b) in enumerate(itertools.pairwise(widths)):
        w = g.constant(f"w{k}", (rng.standard_normal((b, a)) / np.sqrt(a)).astype(np.float32))
        y = g.tensor(f"h{k}", DType.FLOAT32, (1, b))
        g.op("FULLY_CONNECTED", [h, w, -1], [y], options={"fused_activation_function": "RELU"})
        h = y
    g.output(h)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", h)])
    return mb.build()


def test_a_layer_larger_than_any_unit_is_split_so_each_share_fits(tmp_path):
    """A 4 MiB FULLY_CONNECTED (plus its activations) on two 4 MiB units: no placement
    without a split; with it, each unit's share fits and the bundle reproduces the model."""
    prof = _profile_with_units(tmp_path, 4)
    model = tmp_path / "fc.tflite"
    save_model(fc_stack(), model)
    with pytest.raises(edgepart.PlacementInfeasibleError):
        edgepart.place(model, str(prof), split=False)
    compiled = edgepart.compile(model, str(prof))
    assert [s.reason for s in compiled.plan.splits] == ["memory"]
    pl = compiled.placement
    ev, g = pl.solution.evaluation, pl.problem.graph
    assert ev.feasible
    assert (ev.unit_weight_bytes + ev.unit_arena_bytes <= g.proc_memory[g.unit_proc]).all()
    assert "fits no placement without them" in compiled.report()
    out = tmp_path / "b"
    compiled.save(out)
    _same_outputs(out, model)


@pytest.mark.slow
def test_400mb_model_on_four_128mb_units(get_corpus_model, tmp_path):
    """Acceptance: the corpus ``big_weights_400mb`` (FC 4096-8192-4096-8192-10, 134 MB layers)
    on four 128 MB units: every big layer split so each unit's share fits; runs and verifies."""
    model = get_corpus_model("big_weights_400mb")
    compiled = edgepart.compile(model, str(FOUR_128MB))
    splits = compiled.plan.splits
    assert len(splits) == 3 and {s.reason for s in splits} == {"memory"}
    assert all(len(s.sizes) == 4 for s in splits)
    pl = compiled.placement
    ev, g = pl.solution.evaluation, pl.problem.graph
    cap = g.proc_memory[g.unit_proc]
    assert ev.feasible and (ev.unit_weight_bytes + ev.unit_arena_bytes <= cap).all()
    assert (ev.unit_weight_bytes > 0).all()  # every unit holds a share
    out = tmp_path / "big"
    compiled.save(out)
    result = edgepart.run_bundle(out, random=True, verify=True)
    assert all(d.identical for d in result.diffs)
    assert result.splits and all(gr.concurrent for gr in result.splits)
    shutil.rmtree(out)


def test_damaged_split_plans_are_refused(split_bundle):
    doc = json.loads((split_bundle / "plan.json").read_text())

    def refused(edit, match):
        d = json.loads(json.dumps(doc))
        edit(d)
        with pytest.raises(BundleError, match=match):
            plan_from_doc(d, "plan.json")

    refused(lambda d: d.update(version=1), "a version-1 plan has no 'splits' or 'collectives'")
    refused(lambda d: d.pop("collectives"), "'collectives' is a required property")
    refused(lambda d: d["splits"][0]["shards"].pop(), "shards: .* is too short")
    refused(
        lambda d: d["collectives"][0].update(to=["p99"]),
        "names partition 'p99', which the plan does not have",
    )
    refused(lambda d: d["splits"][1].update(id=d["splits"][0]["id"]), "two splits share an id")
    refused(lambda d: d["splits"][0].update(sizes=[1, 2, 3]), "2 shards for 3 sizes")

    def wrong_sender(d):
        c = next(c for c in d["collectives"] if c["kind"] == "send_recv")
        c["from"] = [c["to"][0]]

    refused(wrong_sender, "is not written by")


def test_the_report_shows_the_splits(split_bundle, tmp_path):
    from edgepart.report import write_report

    res = write_report(split_bundle, tmp_path / "r.html", profile=str(HOST_2X1T))
    tp = res.document["tensor_parallel"]
    assert len(tp["splits"]) == 2 and tp["summary"]["splits"] == 2
    assert {s["mode"] for s in tp["splits"]} == {"output_channels"}
    assert any("split graph" in n for n in res.document["meta"]["notes"])
    page = (tmp_path / "r.html").read_text()
    section = page.split('<section id="tensor_parallel">')[1].split("</section>")[0]
    assert "all-gather" in section and "cpu:1" in section and "broadcast" in section
    # every split with the gain it was predicted to bring, as plan.json records it
    plan_splits = json.loads((split_bundle / "plan.json").read_text())["splits"]
    for s, doc_split in zip(tp["splits"], plan_splits, strict=True):
        assert s["gain"] == pytest.approx(doc_split["predicted"]["gain"], rel=1e-4)
        assert s["gain"] >= 0.10
        assert f"<td>{float(s['gain']) * 100:.1f} %</td>" in section
