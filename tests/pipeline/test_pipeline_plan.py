"""Stage plans of corpus models: the planner against the exact DP over ideals, the bundle.

The stage DP itself equals brute force on small graphs (tests/placement/test_scale.py,
``test_stage_dp_equals_brute_force``); here the planner's fallback for graphs with too many
ideals (the DP over block boundaries of the execution order) is held to the exact optimum on
every corpus model and profile where the exact DP runs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import edgepart
from edgepart.api.pipelines import plan_pipeline
from edgepart.errors import EdgepartError, PlacementInfeasibleError, UsageError
from edgepart.placement.stages import plan_stages, stage_time

PROFILES = [("x86_host", 1), ("pixel8", None), ("raspberry_pi5", 1), ("coral_devboard", None)]


def _problem_or_skip(path: Path, profile: str, threads: int | None):  # type: ignore[no-untyped-def]
    try:
        return plan_pipeline(path, profile, cpu_threads=threads, method="blocks")
    except EdgepartError as err:  # models no processor of the profile can run
        pytest.skip(f"{path.name} on {profile}: {err}")


@pytest.mark.parametrize(("profile", "threads"), PROFILES)
def test_planner_within_one_percent_of_the_dp(corpus, profile, threads):
    ran = 0
    for name, path in corpus.items():
        try:
            blocks = plan_pipeline(path, profile, cpu_threads=threads, method="blocks")
        except EdgepartError:
            continue  # the model does not lower on this profile (control flow, custom op)
        g = blocks.problem.graph
        exact = plan_stages(g, method="ideals", max_ideals=20_000, max_pairs=400_000)
        if exact is None:
            continue  # too many ideals for the exact DP
        ran += 1
        assert exact.optimal and exact.method == "ideals"
        assert blocks.period_s <= exact.period_s * 1.01 + 1e-12, name
        assert blocks.period_s >= exact.period_s * (1 - 1e-9), name  # the DP is optimal
        auto = plan_pipeline(path, profile, cpu_threads=threads)
        if auto.stages.method == "ideals":
            assert auto.period_s == pytest.approx(exact.period_s, rel=1e-12)
    assert ran >= 5


def test_plan_stages_cover_the_model_and_recompute(corpus):
    pp = plan_pipeline(corpus["mobilenet_v2"], "x86_host", cpu_threads=1)
    g = pp.problem.graph
    assert len(pp.stages.stages) == 2  # two 1-thread CPU units
    ops = [o for s in pp.stage_ops for o in s]
    assert sorted(ops) == list(range(pp.problem.model.main.num_ops))
    for s in pp.stages.stages:
        ref = stage_time(g, s.nodes, s.unit)
        assert ref.time_s == pytest.approx(s.time_s, rel=1e-9)
    assert pp.period_s == max(pp.stage_times)
    d = pp.to_dict()
    assert [s["ops"] for s in d["stages"]] == [len(o) for o in pp.stage_ops]
    assert "period" in pp.report()
    # each stage is a prefix-closed difference: nothing of stage 1 feeds stage 0
    first = np.zeros(g.num_nodes, dtype=bool)
    first[pp.stages.stages[0].nodes] = True
    for v in pp.stages.stages[0].nodes:
        assert first[list(g.pred.tolist()[int(v)])].all()


def test_bundle_has_one_partition_per_stage(corpus, tmp_path):
    pp = plan_pipeline(corpus["mobilenet_v2"], "x86_host", cpu_threads=1)
    b = pp.bundle(tmp_path / "b")
    assert len(b.plan.partitions) == len(pp.stages.stages)
    assert (tmp_path / "b" / "plan.json").exists()
    got = sorted(len(p.ops) for p in b.plan.partitions)
    assert got == sorted(len(o) for o in pp.stage_ops)


def test_bad_options(corpus):
    with pytest.raises(UsageError, match="cpu_threads"):
        plan_pipeline(corpus["lstm"], "x86_host", cpu_threads=0)
    with pytest.raises(UsageError, match="method"):
        plan_pipeline(corpus["lstm"], "x86_host", method="greedy")
    with pytest.raises(PlacementInfeasibleError, match="caps"):
        plan_pipeline(corpus["mobilenet_v2"], "x86_host", method="ideals", max_ideals=3)


def test_exported_from_edgepart():
    assert edgepart.plan_pipeline is plan_pipeline
    assert "plan_pipeline" in edgepart.__all__
