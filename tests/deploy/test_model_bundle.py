"""``edgepart partition MODEL --profile DEVICE -o OUT/``: bundles that load, run and reproduce."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from _litert import interpreter, random_inputs, run
from pmodels import branchy_fp32, int8_mlp

from edgepart.bundle import PartitionSpec, build_bundle, load_bundle, plan_from_doc
from edgepart.cli import main
from edgepart.tflite.writer import write_model


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _partition(model: Path, out: Path, *extra: str) -> int:
    return main(["partition", str(model), "--profile", *extra, "-o", str(out)])


def _verify(bundle_dir: Path, model: Path) -> None:
    """Every partition file loads in LiteRT; the bundle reproduces the model bit for bit."""
    from edgepart.runtime import PartitionedInterpreter

    b = load_bundle(bundle_dir)
    for p in b.plan.partitions:
        interpreter(b.partition_bytes[p.id])  # loads and allocates in LiteRT
    ref = interpreter(path=str(model))
    xs = random_inputs(ref, seed=3)
    want = run(ref, xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # accelerator partitions run on the host fallback
        pi = PartitionedInterpreter(str(bundle_dir))
        pi.allocate_tensors()
        got = run(pi, xs)
    for a, c in zip(want, got, strict=True):
        np.testing.assert_array_equal(a, c)


@pytest.fixture(scope="module")
def mlp_file(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("m") / "int8_mlp.tflite"
    p.write_bytes(write_model(int8_mlp()))
    return p


@pytest.fixture(scope="module")
def branchy_file(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("m") / "branchy.tflite"
    p.write_bytes(write_model(branchy_fp32(width=1024, depth=4, branches=2)))
    return p


def test_bundle_is_byte_identical_valid_and_reproduces_the_model(mlp_file, tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert _partition(mlp_file, a, "coral_devboard") == 0
    report = capsys.readouterr().out
    assert _partition(mlp_file, b, "coral_devboard") == 0
    fa, fb = _files(a), _files(b)
    assert fa == fb
    assert {
        "plan.json",
        "manifest.json",
        "arena.json",
        "report.txt",
        "partition_report.txt",
    } <= set(fa)
    plan = json.loads(fa["plan.json"])
    plan_from_doc(plan)  # the one plan.json validator: the partitioner's keys too
    assert plan["format"] == "edgepart-bundle-plan" and plan["partitioner"]["version"] == 1
    assert [p["processor"] for p in plan["partitions"]] == ["edgetpu", "cpu"]
    assert plan["predicted"]["latency_s"] < plan["baseline"]["latency_s"]
    assert plan["baselines"][0]["name"] == "tflite-default:edgetpu"
    assert not plan["baselines"][0]["feasible"]
    assert plan["transfers"][0]["tensor"] == 0 and plan["transfers"][0]["to_domain"] == "tpu_sram"
    assert "TFLite default is infeasible" in report and "edgetpu:0" in report
    assert sorted(json.loads(fa["arena.json"])["memories"]) == ["dram", "tpu_sram"]
    _verify(a, mlp_file)
    capsys.readouterr()
    assert main(["run", str(a), "--verify", "--random", "--atol", "0"]) == 0
    assert "bit-identical" in capsys.readouterr().out


def test_concurrent_branches_bundle_runs(branchy_file, tmp_path):
    out = tmp_path / "o"
    assert _partition(branchy_file, out, "pixel8") == 0
    plan = json.loads((out / "plan.json").read_text())
    units = {(p["processor"], p["unit"]) for p in plan["partitions"]}
    assert len(plan["partitions"]) >= 2 and plan["speedup_over_baseline"] >= 1.0
    assert len(units) >= 1
    _verify(out, branchy_file)


@pytest.mark.parametrize(
    ("name", "profile", "extra"),
    [
        ("mobilenet_v2", "pixel8", ["--edge-cut", "3"]),
        ("mobilenet_v2_fp16", "galaxy_s24_ultra", ["--edge-cut", "4"]),
        ("densenet_tiny", "vivo_x100_pro", ["--objective", "throughput"]),
        ("custom_op", "pixel8", []),
        ("resource_vars", "pixel8", ["--edge-cut", "2"]),
        ("cond", "x86_host", []),
        ("mobilenet_v2_int8", "coral_devboard", ["--exact", "--time-limit", "10"]),
    ],
)
def test_corpus_bundles_load_and_run(corpus, tmp_path, name, profile, extra, capsys):
    out = tmp_path / "o"
    assert _partition(corpus[name], out, profile, *extra) == 0
    plan = json.loads((out / "plan.json").read_text())
    assert "partitioner" in plan
    plan_from_doc(plan)  # the one plan.json validator: the partitioner's keys too
    ops = sorted(o for p in plan["partitions"] for o in p["ops"])
    assert ops == list(range(plan["source"]["num_ops"]))
    _verify(out, corpus[name])


def test_no_output_prints_the_report_only(corpus, tmp_path, capsys):
    assert main(["partition", str(corpus["custom_op"]), "--profile", "pixel8"]) == 0
    out = capsys.readouterr().out
    assert "ops on the CPU that another processor refuses: 2" in out
    assert "gpu: AudioSpectrogram: Operation is not supported." in out
    assert "speedup" in out and "bundle written" not in out


def _oracle_conflict(
    a: dict, b: dict, parts: list[Any], anc: list[set[int]], outs: set[int]
) -> bool:
    """May buffers ``a`` and ``b`` (arena.json entries) hold data at the same time, whatever
    order the runtime picks among partitions not ordered by a dependency?"""
    if a["memory"] != b["memory"]:
        return False
    idx = {p.id: k for k, p in enumerate(parts)}
    prod = {t: k for k, p in enumerate(parts) for t in p.outputs}
    cons: dict[int, set[int]] = {}
    for k, p in enumerate(parts):
        for t in p.inputs:
            cons.setdefault(t, set()).add(k)

    def before(x: int, y: int) -> bool:  # x always ends before y starts
        return x in anc[y]

    def done_before(t: int, y: int) -> bool:  # every read of t is over before y starts
        return t not in outs and all(before(c, y) for c in cons.get(t, ()))

    if a["scope"] == b["scope"] == "partition":
        qa, qb = idx[a["partition"]], idx[b["partition"]]
        if qa == qb:
            la, lb = a["lifetime"], b["lifetime"]
            return la[0] < lb[1] and lb[0] < la[1]
        return not before(qa, qb) and not before(qb, qa) and parts[qa].unit != parts[qb].unit
    if a["scope"] == "partition":
        a, b = b, a
    t = a["tensor"]
    if b["scope"] == "partition":
        r = idx[b["partition"]]
        written_after = t in prod and before(r, prod[t])
        return not written_after and not done_before(t, r)
    u = b["tensor"]

    def staged_before(x: int, y: int) -> bool:
        # the bundle's rule: x's readers take their copy before they run, y is written after
        # its producer ran, so y's producer may be one of x's readers
        return (
            y in prod
            and x not in outs
            and all(c == prod[y] or before(c, prod[y]) for c in cons.get(x, ()))
        )

    return t != u and not staged_before(t, u) and not staged_before(u, t)


def _branchy_arena(path: Path, units: tuple[int, int, int]) -> tuple[dict, list[Any]]:
    """The global arena (``arena.json``) of the branchy model cut into its two branches and
    the ADD after both, on the given pixel8 CPU units; and the plan's partitions."""
    ops = [(0, 1, 2, 3), (4, 5, 6, 7), (8,)]
    specs = [PartitionSpec(o, processor="cpu", unit=u) for o, u in zip(ops, units, strict=True)]
    bundle = build_bundle(path, specs, profile="pixel8", arena="global")
    assert bundle.arena is not None
    parts = [
        SimpleNamespace(
            id=p.id,
            unit=p.unit_name,
            inputs=tuple(r.tensor for r in p.inputs),
            outputs=tuple(r.tensor for r in p.outputs),
        )
        for p in bundle.plan.partitions
    ]
    return dict(bundle.arena.doc), parts


def test_global_arena_separates_concurrent_partitions(branchy_file):
    # branch 0 on cpu:0, branch 1 on cpu:1 (concurrent), the ADD after both on cpu:0
    doc, parts = _branchy_arena(branchy_file, (0, 1, 0))
    assert [(p.unit, p.inputs, p.outputs) for p in parts] == [
        ("cpu:0", (0,), (12,)),
        ("cpu:1", (0,), (24,)),
        ("cpu:0", (12, 24), (25,)),
    ]
    anc = [set(), set(), {0, 1}]
    bufs = doc["buffers"]
    assert {b["scope"] for b in bufs} == {"partition", "boundary"}
    for i, a in enumerate(bufs):
        for b in bufs[i + 1 :]:
            if a["size"] and b["size"] and _oracle_conflict(a, b, parts, anc, {25}):
                apart = (
                    a["offset"] + a["size"] <= b["offset"] or b["offset"] + b["size"] <= a["offset"]
                )
                assert apart, (a, b)
    # the same partitions on one unit run one after another: internal buffers may share bytes
    doc2, _ = _branchy_arena(branchy_file, (0, 0, 0))
    assert doc2["memories"]["dram"]["size"] < doc["memories"]["dram"]["size"]


def test_bundle_bytes_do_not_depend_on_the_process(branchy_file, tmp_path):
    import os
    import subprocess
    import sys

    a, b = tmp_path / "a", tmp_path / "b"
    assert _partition(branchy_file, a, "pixel8") == 0
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    cmd = [sys.executable, "-m", "edgepart", "partition", str(branchy_file), "--profile"]
    subprocess.run([*cmd, "pixel8", "-o", str(b)], check=True, env=env, capture_output=True)
    assert _files(a) == _files(b)


def test_measured_latency_tables_feed_the_plan(corpus, tmp_path, capsys):
    table = tmp_path / "t.json"
    assert main(["profile", str(corpus["custom_op"]), "-o", str(table), "--no-progress"]) == 0
    out = tmp_path / "o"
    args = ["--latency-table", str(table), "--table-for", "cpu=host_xnnpack_1t"]
    assert _partition(corpus["custom_op"], out, "pixel8", *args) == 0
    plan = json.loads((out / "plan.json").read_text())
    src = plan["partitioner"]["cost_sources"]
    assert src["cpu"]["measured"] == 6 and src["gpu"]["roofline"] == 6
    capsys.readouterr()
    assert _partition(corpus["custom_op"], out, "pixel8", "--table-for", "cpu") == 2
    assert "expected PROC=TABLEPROC" in capsys.readouterr().err
