"""Bundle writing and loading: layout, determinism, schemas, and refusal of bad bundles."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from edgepart.bundle import (
    BUNDLE_VERSION,
    PartitionSpec,
    PlanGraph,
    build_bundle,
    load_bundle,
    write_bundle,
)
from edgepart.errors import BundleError, OutputError, PlanError, UsageError
from edgepart.ir import analysis
from edgepart.jsondoc import dumps
from edgepart.tflite.reader import read_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
import itertools

from rt_models import branchy_mlp


def _chain_specs(model, k=3):
    order = analysis.topological_order(model.main).tolist()
    n = len(order)
    bounds = [round(n * i / k) for i in range(k + 1)]
    return [
        PartitionSpec(order[a:b], unit=i % 2) for i, (a, b) in enumerate(itertools.pairwise(bounds))
    ]


@pytest.fixture
def mnv2(corpus):
    return corpus["mobilenet_v2"]


@pytest.fixture
def bundle_dir(tmp_path, mnv2):
    model = read_model(mnv2)
    write_bundle(tmp_path / "b", mnv2, _chain_specs(model), arena="boundary")
    return tmp_path / "b"


def _rewrite(bundle: Path, rel: str, data: bytes) -> None:
    """Replace a file and fix its manifest entry (to reach the checks behind the checksums)."""
    (bundle / rel).write_bytes(data)
    manifest = json.loads((bundle / "manifest.json").read_text())
    for e in manifest["files"]:
        if e["path"] == rel:
            e["bytes"] = len(data)
            e["sha256"] = hashlib.sha256(data).hexdigest()
    (bundle / "manifest.json").write_bytes(dumps(manifest))


def _edit_plan(bundle: Path, edit) -> None:
    plan = json.loads((bundle / "plan.json").read_text())
    edit(plan)
    _rewrite(bundle, "plan.json", dumps(plan))


def test_layout_and_manifest(bundle_dir, mnv2):
    names = sorted(str(p.relative_to(bundle_dir)) for p in bundle_dir.rglob("*") if p.is_file())
    assert names == [
        "arena.json",
        "manifest.json",
        "partitions/p0.tflite",
        "partitions/p1.tflite",
        "partitions/p2.tflite",
        "plan.json",
        "report.txt",
    ]
    manifest = json.loads((bundle_dir / "manifest.json").read_text())
    assert manifest["format"] == "edgepart-bundle" and manifest["version"] == BUNDLE_VERSION
    src = manifest["source_model"]
    assert src["sha256"] == hashlib.sha256(mnv2.read_bytes()).hexdigest()
    assert src["bytes"] == mnv2.stat().st_size and src["path"] == str(mnv2.resolve())
    assert [e["path"] for e in manifest["files"]] == sorted(e["path"] for e in manifest["files"])
    for e in manifest["files"]:
        data = (bundle_dir / e["path"]).read_bytes()
        assert e["bytes"] == len(data)
        assert e["sha256"] == hashlib.sha256(data).hexdigest()


def test_plan_round_trips_and_partitions_are_routed_by_tensor(bundle_dir):
    b = load_bundle(bundle_dir)
    plan = b.plan
    assert plan.signature_key == "serving_default"
    assert [t.name for t in plan.inputs] == ["input"]
    assert sorted(o for p in plan.partitions for o in p.ops) == list(range(plan.num_ops))
    made = {}
    for p in plan.partitions:
        for t in p.inputs:
            assert t.tensor in made or t.tensor == plan.inputs[0].tensor
        made.update({t.tensor: p.id for t in p.outputs})
        assert list(p.depends_on) == sorted(
            {made[t.tensor] for t in p.inputs if t.tensor in made and made[t.tensor] != p.id},
            key=[q.id for q in plan.partitions].index,
        )
    doc = json.loads((bundle_dir / "plan.json").read_text())
    assert dumps(plan.to_doc()) == dumps(doc)


def test_same_input_gives_byte_identical_bundles(tmp_path, mnv2):
    model = read_model(mnv2)
    for name in ("x", "y"):
        write_bundle(tmp_path / name, mnv2, _chain_specs(model), arena="boundary")
    for f in (tmp_path / "x").rglob("*"):
        if f.is_file():
            assert f.read_bytes() == (tmp_path / "y" / f.relative_to(tmp_path / "x")).read_bytes()


def test_specs_are_put_in_dependency_order_and_profile_fills_delegates(tmp_path, mnv2):
    model = read_model(mnv2)
    specs = _chain_specs(model)
    specs = [
        PartitionSpec(specs[2].ops, processor="gpu"),
        PartitionSpec(specs[0].ops, processor="cpu", unit=3),
        PartitionSpec(specs[1].ops, processor="tpu", id="npu_part"),
    ]
    b = write_bundle(tmp_path / "b", mnv2, specs, profile="pixel8")
    assert [p.id for p in b.plan.partitions] == ["p0", "npu_part", "p2"]
    assert [p.delegate for p in b.plan.partitions] == ["xnnpack", "nnapi", "gpu"]
    assert b.plan.device_profile == "pixel8" == b.manifest["device_profile"]


def test_predictions_and_partitioner_keys_are_kept(tmp_path, mnv2):
    model = read_model(mnv2)
    specs = [
        PartitionSpec(s.ops, predicted={"start_s": 0.001 * i, "end_s": 0.001 * (i + 1)})
        for i, s in enumerate(_chain_specs(model))
    ]
    extra = {"predicted": {"latency_s": 0.003, "period_s": 0.001}, "transfers": [{"bytes": 4}]}
    b = write_bundle(tmp_path / "b", mnv2, specs, plan_extra=extra)
    loaded = load_bundle(tmp_path / "b")
    assert loaded.plan.predicted == {"latency_s": 0.003, "period_s": 0.001}
    assert loaded.plan.extra == {"transfers": [{"bytes": 4}]}
    assert loaded.plan.partitions[1].predicted == {"start_s": 0.001, "end_s": 0.002}
    assert "predicted: latency 3.00 ms" in b.report  # durations in 3 significant figures
    with pytest.raises(UsageError, match="plan_extra may not set partitions"):
        build_bundle(mnv2, specs, plan_extra={"partitions": []})


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda specs: specs[:-1], r"op \d+ \w+ is in no partition"),
        (lambda specs: [*specs, PartitionSpec([0])], r"op 0 CONV_2D is in two partitions"),
        (
            lambda specs: [PartitionSpec([0, 2]), PartitionSpec([1]), PartitionSpec(range(3, 65))],
            "not convex",
        ),
        (
            lambda specs: [PartitionSpec(s.ops, processor="dsp") for s in specs],
            "processor 'dsp' is not in profile 'pixel8'",
        ),
        (
            lambda specs: [PartitionSpec(s.ops, executor="turbo") for s in specs],
            "executor 'turbo' is not known",
        ),
    ],
)
def test_bad_specs_are_refused_and_nothing_is_written(tmp_path, mnv2, mutate, message):
    specs = mutate(_chain_specs(read_model(mnv2)))
    with pytest.raises(PlanError, match=message):
        write_bundle(tmp_path / "b", mnv2, specs, profile="pixel8")
    assert not (tmp_path / "b").exists()
    assert list(tmp_path.iterdir()) == []


def test_partitions_that_depend_on_each_other_are_refused():
    model = branchy_mlp(width=8, depth=2, branches=2)
    # {0, 3} and {1, 2}: each convex? 0->1 and 2->3 make a cycle between the two sets
    with pytest.raises(PlanError, match=r"cycle|not convex"):
        build_bundle(model, [PartitionSpec([0, 3, 4]), PartitionSpec([1, 2])])


def test_existing_bundle_is_replaced_but_other_directories_are_not(tmp_path, mnv2, bundle_dir):
    model = read_model(mnv2)
    write_bundle(bundle_dir, mnv2, _chain_specs(model, 2))
    assert len(load_bundle(bundle_dir).plan.partitions) == 2
    other = tmp_path / "home"
    other.mkdir()
    (other / "precious.txt").write_text("keep")
    with pytest.raises(
        OutputError, match=r"home/precious.txt was not written by edgepart; refusing"
    ):
        write_bundle(other, mnv2, _chain_specs(model, 2))
    assert (other / "precious.txt").read_text() == "keep"


def test_failed_rewrite_leaves_the_old_bundle_intact(bundle_dir, mnv2):
    before = {p: p.read_bytes() for p in bundle_dir.rglob("*") if p.is_file()}
    with pytest.raises(PlanError):
        write_bundle(
            bundle_dir,
            mnv2,
            [PartitionSpec([0, 2]), PartitionSpec([1]), PartitionSpec(range(3, 65))],
        )
    assert {p: p.read_bytes() for p in bundle_dir.rglob("*") if p.is_file()} == before
    load_bundle(bundle_dir)


# ---------------------------------------------------------------------------- refusals


def test_missing_bundle_and_missing_manifest(tmp_path, mnv2):
    with pytest.raises(BundleError, match="no such bundle directory"):
        load_bundle(tmp_path / "nope")
    with pytest.raises(BundleError, match="a model, not a bundle"):
        load_bundle(mnv2)
    (tmp_path / "empty").mkdir()
    with pytest.raises(BundleError, match=r"manifest.json: missing; .* is not an edgepart bundle"):
        load_bundle(tmp_path / "empty")


def test_truncated_partition_file(bundle_dir):
    f = bundle_dir / "partitions" / "p1.tflite"
    size = f.stat().st_size
    f.write_bytes(f.read_bytes()[:1000])
    with pytest.raises(
        BundleError,
        match=rf"p1.tflite: truncated: 1000 bytes, manifest.json "
        rf"records {size}; re-create the bundle",
    ):
        load_bundle(bundle_dir)


def test_missing_partition_file(bundle_dir):
    (bundle_dir / "partitions" / "p2.tflite").unlink()
    with pytest.raises(BundleError, match=r"p2.tflite: missing \(listed in manifest.json\)"):
        load_bundle(bundle_dir)


def test_corrupted_partition_file(bundle_dir):
    f = bundle_dir / "partitions" / "p0.tflite"
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x01
    f.write_bytes(bytes(data))
    with pytest.raises(BundleError, match=r"p0.tflite: checksum mismatch: sha256 [0-9a-f]{16}"):
        load_bundle(bundle_dir)


def test_edited_plan_without_manifest_update_is_a_checksum_mismatch(bundle_dir):
    f = bundle_dir / "plan.json"
    f.write_text(f.read_text().replace('"unit": 1', '"unit": 0'))
    with pytest.raises(BundleError, match=r"plan.json: checksum mismatch"):
        load_bundle(bundle_dir)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("version", 2, "edgepart-bundle version 2 is not supported .*reads version 1"),
        ("format", "zip", "format is 'zip', expected 'edgepart-bundle'"),
        ("creator", {"tool": "x"}, r"\$.creator: 'version' is a required property"),
    ],
)
def test_bad_manifest(bundle_dir, field, value, message):
    manifest = json.loads((bundle_dir / "manifest.json").read_text())
    manifest[field] = value
    (bundle_dir / "manifest.json").write_bytes(dumps(manifest))
    with pytest.raises(BundleError, match=message):
        load_bundle(bundle_dir)


def test_manifest_that_is_not_json(bundle_dir):
    (bundle_dir / "manifest.json").write_text('{"format": "edgepart-bundle",')
    with pytest.raises(BundleError, match=r"manifest.json: invalid JSON at line 1 column \d+"):
        load_bundle(bundle_dir)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["partitions"][1].update(unit=-1),
            r"\$.partitions\[1\].unit: -1 is less than the minimum of 0",
        ),
        (lambda d: d.update(version=7), "edgepart-bundle-plan version 7 is not supported"),
        (
            lambda d: d["partitions"][2].update(depends_on=[]),
            r"partition 'p2': depends_on is \[\] but its inputs come from \['p1'\]",
        ),
        (
            lambda d: d["partitions"][0]["ops"].pop(),
            r"op \d+ is in no partition; every op must be placed",
        ),
        (
            lambda d: d["partitions"].reverse(),
            "neither a model input nor written by an earlier partition",
        ),
        (
            lambda d: d["partitions"][1]["inputs"][0].update(shape=[1, 2]),
            r"input tensor \d+: float32\[1, 2\] here but float32",
        ),
    ],
)
def test_inconsistent_plan(bundle_dir, edit, message):
    _edit_plan(bundle_dir, edit)
    with pytest.raises(BundleError, match=message):
        load_bundle(bundle_dir)


def test_plan_without_partition_file_listing(bundle_dir):
    manifest = json.loads((bundle_dir / "manifest.json").read_text())
    manifest["files"] = [e for e in manifest["files"] if e["path"] != "partitions/p1.tflite"]
    (bundle_dir / "manifest.json").write_bytes(dumps(manifest))
    with pytest.raises(
        BundleError, match=r"plan.json uses partitions/p1.tflite, which the manifest does not list"
    ):
        load_bundle(bundle_dir)


def test_arena_plan_respects_concurrency(tmp_path):
    model = branchy_mlp(width=16, depth=2, branches=2)
    specs = [PartitionSpec([0, 1]), PartitionSpec([2, 3], unit=1), PartitionSpec([4])]
    b = write_bundle(tmp_path / "b", model, specs, arena="boundary")
    graph = PlanGraph.from_plan(b.plan)
    x, h0, h1 = graph.staged_tensors()
    # x is read by both branches, which run concurrently and write h0 and h1: all conflict
    assert graph.conflict(x, h0) and graph.conflict(x, h1) and graph.conflict(h0, h1)
    offsets = sorted(buf.offset for buf in b.arena.buffers)
    assert offsets == [0, 64, 128]
    assert b.arena.memories["host"]["size"] == 192


def test_arena_with_overlapping_live_buffers_is_refused(tmp_path):
    model = branchy_mlp(width=16, depth=2, branches=2)
    specs = [PartitionSpec([0, 1]), PartitionSpec([2, 3], unit=1), PartitionSpec([4])]
    bundle_dir = tmp_path / "b"
    write_bundle(bundle_dir, model, specs, arena="boundary")
    arena = json.loads((bundle_dir / "arena.json").read_text())
    graph = PlanGraph.from_plan(load_bundle(bundle_dir).plan)
    staged = graph.staged_tensors()
    a, b = next((t, u) for t in staged for u in staged if t < u and graph.conflict(t, u))
    for buf in arena["buffers"]:
        if buf["tensor"] in (a, b):
            buf["offset"] = 0
    _rewrite(bundle_dir, "arena.json", dumps(arena))
    with pytest.raises(
        BundleError,
        match=rf"buffers of tensors {min(a, b)} and {max(a, b)} "
        r"overlap .* may be live at the same time",
    ):
        load_bundle(bundle_dir)


def test_arena_missing_a_boundary_buffer_is_refused(bundle_dir):
    arena = json.loads((bundle_dir / "arena.json").read_text())
    dropped = arena["buffers"].pop()["tensor"]
    _rewrite(bundle_dir, "arena.json", dumps(arena))
    with pytest.raises(BundleError, match=f"no boundary buffer for tensor {dropped}"):
        load_bundle(bundle_dir)
