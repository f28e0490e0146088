"""Calibration: generated chains, measuring with the real LiteRT, fitting, files, CLI."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

from edgepart.cli import main
from edgepart.cost.kernels import F, decompose
from edgepart.cost.predictor import load_predictor
from edgepart.cost.xnn_tasks import one_task
from edgepart.errors import PredictorError
from edgepart.profiling.calibrate import (
    MeasureConfig,
    load_measurements,
    measure,
    real_owner,
)
from edgepart.profiling.host_predictor import fit_host_predictor
from edgepart.profiling.kernel_gen import (
    BUILDS,
    SAMPLER_VERSION,
    ChainSpec,
    build_chain,
    draw_specs,
)
from edgepart.tflite.writer import write_model


def test_chains_are_deterministic_and_run_in_litert():
    from edgepart.profiling.timing import delegate_nodes, fill_inputs, make_interpreter

    specs = draw_specs(np.random.default_rng(7), 10)
    for spec in specs:
        a = write_model(build_chain(spec))
        assert a == write_model(build_chain(ChainSpec.from_json(spec.to_json())))
        for ex in ("xnnpack", "builtin"):
            it = make_interpreter(a, ex, 1)
            fill_inputs(it, 0)
            it.invoke()
            if ex == "xnnpack":
                owner, nodes = real_owner(it, build_chain(spec).main.num_ops)
                assert nodes == delegate_nodes(it)
                assert (nodes == 0) == all(o is None for o in owner)


def test_sparse_fp16_pointwise_weights_unpack_in_litert_to_what_was_drawn():
    from edgepart.cost.kernels import decompose
    from edgepart.profiling.timing import make_interpreter

    seen = 0
    for seed in range(60):
        m = build_chain(ChainSpec(seed=seed, homogeneous="conv", length=3))
        sg = m.main
        names = [sg.opcodes[c].name for c in sg.op_opcode]
        if "DENSIFY" not in names:
            continue
        seen += 1
        it = make_interpreter(bytes(write_model(m)), "builtin", 1, preserve_all_tensors=True)
        it.invoke()
        for i, name in enumerate(names):
            if name != "DENSIFY":
                continue
            packed = sg.tensor(int(sg.op_inputs.row(i)[0]))
            assert packed.sparsity is not None and packed.data is not None
            values = np.frombuffer(packed.data.tobytes(), np.float16)
            csr = packed.sparsity.dim_metadata[-1]
            seg, idx = csr.array_segments, csr.array_indices
            shape = packed.shape
            dense = np.zeros((int(np.prod(shape[:-1])), shape[-1]), np.float16)
            for r in range(dense.shape[0]):
                dense[r, idx[seg[r] : seg[r + 1]]] = values[seg[r] : seg[r + 1]]
            out = int(sg.op_outputs.row(i)[0])
            assert np.array_equal(it.get_tensor(out).reshape(dense.shape), dense)
        types = decompose(m, "builtin").types
        assert types.count("tfl.unary_f16") == names.count("DENSIFY")
    assert seen >= 2


def test_every_value_nobody_reads_is_an_output():
    m = build_chain(ChainSpec(seed=11, length=8))
    sg = m.main
    read = {int(t) for t in sg.op_inputs.idx if t >= 0}
    made = {int(t) for t in sg.op_outputs.idx if t >= 0}
    assert made - read <= {int(t) for t in sg.outputs}


@pytest.fixture(scope="module")
def small_measurements(tmp_path_factory):
    cfg = MeasureConfig(
        configs=(("xnnpack", 1), ("builtin", 1)), seed=3, batch=8, rounds=3, max_chains=24
    )
    meas = measure(cfg)
    path = tmp_path_factory.mktemp("cal") / "m.npz"
    meas.save(path)
    return meas, path


def test_measurements_round_trip(small_measurements):
    meas, path = small_measurements
    back = load_measurements(path)
    assert len(back.chains) == len(meas.chains) >= 24
    for a, b in zip(meas.chains, back.chains, strict=True):
        assert a.spec == b.spec
        assert a.stats == b.stats
        for ex in ("xnnpack", "builtin"):
            assert a.kernels[ex].types == b.kernels[ex].types
            assert np.array_equal(a.kernels[ex].features, b.kernels[ex].features)
    assert back.fixed["xnnpack_1t"]["invoke"]["p10_s"] > 0
    assert "delegate_node" in back.fixed["xnnpack_1t"]
    assert meas.host["clocks"]["xnnpack_1t"] == "thread cpu time"
    # the GEMM row tile is measured and kept with the measurements (gemm_tiles)
    assert back.host["gemm_row_tiles"] == meas.host["gemm_row_tiles"]
    assert sorted(back.host["gemm_row_tiles"]) == ["", "_hy", "_q8"]
    assert back.host["gemm_row_tile"] == meas.host["gemm_row_tiles"][""] >= 1
    assert all(len(t) == 40 for t in back.host["gemm_row_tile_s"].values())
    # the one-task widths only with a multi-thread XNNPACK configuration (none here)
    assert "gemm_task_outputs" not in back.host


def test_fixed_costs_are_the_median_of_moments_across_the_run(small_measurements):
    """The fixed costs are timed before the first chain and again beside the chains of every
    FIXED_EVERY-th batch; each statistic is the median over those moments, all of which the
    measurements file keeps."""
    from edgepart.cost.stats import Stats
    from edgepart.profiling.calibrate import FIXED_EVERY

    meas, path = small_measurements
    batches = [b for b in meas.batches if "chains" in b]
    expect = 1 + len([b for b in batches if b["batch"] % FIXED_EVERY == 0])
    assert len(batches) >= 3 and 2 <= expect < 1 + len(batches)
    back = load_measurements(path)
    assert back.fixed_moments == meas.fixed_moments and back.fixed == meas.fixed
    for name in ("xnnpack_1t", "builtin_1t"):
        moments = meas.fixed_moments[name]
        assert len(moments) == expect  # one thread: CPU clock, no round dropped
        if name == "xnnpack_1t":
            assert all("delegate_node" in m for m in moments)
        for kind, st in meas.fixed[name].items():
            got = [Stats(**m[kind]) for m in moments if kind in m]
            assert got, kind
            for stat in ("p10_s", "median_s", "min_s"):
                assert st[stat] == pytest.approx(float(np.median([getattr(g, stat) for g in got])))
            assert st["count"] == sum(g.count for g in got)


def test_median_stats_keeps_the_order_of_the_statistics():
    from edgepart.cost.stats import Stats, median_stats

    a = Stats(median_s=3.0, p10_s=2.0, p90_s=4.0, min_s=1.0, count=5, warmup=2, batch=7)
    b = Stats(median_s=5.0, p10_s=4.5, p90_s=9.0, min_s=4.0, count=3, warmup=1, batch=1)
    c = Stats(median_s=4.0, p10_s=1.0, p90_s=4.5, min_s=0.5, count=2, warmup=0, batch=2)
    m = median_stats([a, b, c])
    assert (m.min_s, m.p10_s, m.median_s, m.p90_s) == (1.0, 2.0, 4.0, 4.5)
    assert m.min_s <= m.p10_s <= m.median_s <= m.p90_s
    assert (m.count, m.warmup, m.batch) == (10, 2, 7)
    with pytest.raises(ValueError):
        median_stats([])


def test_a_chain_with_no_kernels_survives_the_round_trip(small_measurements, tmp_path):
    """A chain XNNPACK runs as free ops only (no kernel rows) is still a measurement of the
    configuration's fixed costs: the refit from the file must see the chains the fit saw."""
    import copy

    from edgepart.cost.kernels import Kernels
    from edgepart.profiling.calibrate import chains_for

    meas, _ = small_measurements
    m2 = copy.deepcopy(meas)
    nf = m2.chains[0].kernels["xnnpack"].features.shape[1]
    empty = Kernels(
        types=[],
        features=np.zeros((0, nf)),
        ops=[],
        op_kernel=np.zeros(0, np.int64),
        repeat=np.zeros(0),
        executor="xnnpack",
    )
    m2.chains[0].kernels["xnnpack"] = empty
    path = tmp_path / "m.npz"
    m2.save(path)
    back = load_measurements(path)
    assert len(back.chains[0].kernels["xnnpack"]) == 0
    for cfg in ("xnnpack_1t", "builtin_1t"):
        assert len(chains_for(back, cfg)) == len(chains_for(m2, cfg))


def test_refit_from_the_same_measurements_is_byte_identical(small_measurements, tmp_path):
    pytest.importorskip("sklearn")
    _, path = small_measurements
    outs = []
    for k in range(2):
        meas = load_measurements(path)
        pred, _ = fit_host_predictor(meas, family="linear", seed=0)
        out = tmp_path / f"p{k}.json"
        pred.save(out)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    p = load_predictor(tmp_path / "p0.json")
    assert sorted(p.configs) == ["builtin_1t", "xnnpack_1t"]
    assert p.obtained == "measured" and p.calibration["chains"] >= 24


@pytest.mark.parametrize("family", ["gbt", "rf", "auto"])
def test_tree_refits_are_byte_identical(small_measurements, tmp_path, family):
    """The tree families (and the cross-validated choice between all families) are seeded:
    the same measurements and seed give the same predictor file, byte for byte."""
    pytest.importorskip("sklearn")
    _, path = small_measurements
    outs = []
    for k in range(2):
        pred, _ = fit_host_predictor(load_measurements(path), family=family, seed=4)
        out = tmp_path / f"{family}{k}.json"
        pred.save(out)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    fams = {c.family for c in load_predictor(tmp_path / f"{family}0.json").configs.values()}
    assert fams <= {"linear", "gbt", "rf"} and (family == "auto" or fams == {family})


def _fits_with_fixed_cost(meas, key, base, dt, drop=True):
    """Refits (linear, seed 0) of ``meas`` with builtin_1t's fixed cost ``key`` set to its
    ``base`` cost plus ``dt`` seconds, and without ``key`` (``drop``; else with ``key`` at
    ``base`` exactly); and the measurements refitted. Every moment is set alike."""
    import copy

    def with_key(meas, dt):
        m = copy.deepcopy(meas)
        moments = m.fixed_moments["builtin_1t"]
        assert len(moments) >= 2  # the fit pairs the models moment by moment
        for fx in (m.fixed["builtin_1t"], *moments):
            if dt is None:
                del fx[key]
            else:
                fx[key] = {k: (v + dt if k.endswith("_s") else v) for k, v in fx[base].items()}
        return m

    m, without = with_key(meas, dt), with_key(meas, None if drop else 0.0)
    pa, _ = fit_host_predictor(m, family="linear", seed=0)
    pb, _ = fit_host_predictor(without, family="linear", seed=0)
    return pa.configs["builtin_1t"], pb.configs["builtin_1t"], m


def test_a_wider_loop_body_prices_preparing_a_called_op(small_measurements):
    """Loops of a 9-op body are measured beside the one-op loops; their intercept above the
    one-op loop's, per extra op, is what a WHILE or IF invocation pays per op of the
    subgraphs it calls (LiteRT prepares them again each time), and comes off the entries."""
    meas, _ = small_measurements
    for cfg in ("builtin_1t", "xnnpack_1t"):
        assert meas.fixed[cfg]["loop_wide"]["p10_s"] > 0
    ca, cb, _ = _fits_with_fixed_cost(meas, "loop_wide", "loop", 8e-7)
    a, b = ca.control_s, cb.control_s
    assert a["subgraph_op"] == pytest.approx(1e-7, rel=1e-6) and "subgraph_op" not in b
    assert a["while"] == pytest.approx(max(b["while"] - 2e-7, 0.0))
    assert a["if"] == pytest.approx(max(b["if"] - 1e-7, 0.0))
    assert a["while_iteration"] == b["while_iteration"]


def test_control_costs_pair_the_fixed_cost_models_moment_by_moment(small_measurements):
    """An IF's cost is a difference of fixed-cost models timed together at each moment of the
    calibration. The machine runs at another speed at every moment, and a burst of other work
    inflates the branch model alone at two of five: the fit takes each moment's difference,
    then the median, which lands on a figure a clean moment measured; the difference of each
    model's median over the moments (measurements without moments) does not."""
    import copy

    from edgepart.cost.stats import Stats
    from edgepart.profiling.calibrate import median_costs

    def at(s: float) -> dict:
        return Stats(s, s, s, s, 9).to_json()

    base = {"invoke": 0.5e-6, "op_chain": 0.6e-6, "int_op": 0.05e-6, "loop": 1.5e-6,
            "loop_iteration": 0.15e-6, "branch": 1.1e-6}  # fmt: skip
    speeds, burst = (1.0, 1.1, 1.2, 1.3, 1.4), (0.5e-6, 0.5e-6, 0.0, 0.0, 0.0)
    moments = [
        {k: at(v * s + (b if k == "branch" else 0.0)) for k, v in base.items()}
        for s, b in zip(speeds, burst, strict=True)
    ]
    clean = [0.45e-6 * s for s in speeds[2:]]  # the IF at the moments the burst missed
    m = copy.deepcopy(meas := small_measurements[0])
    m.fixed["builtin_1t"] = median_costs(moments)
    m.fixed_moments["builtin_1t"] = moments
    unpaired = copy.deepcopy(m)
    unpaired.fixed_moments["builtin_1t"] = []
    a = fit_host_predictor(m, family="linear", seed=0)[0].configs["builtin_1t"].control_s
    b = fit_host_predictor(unpaired, family="linear", seed=0)[0].configs["builtin_1t"].control_s
    assert a["if"] == pytest.approx(max(clean))  # the median moment's IF is a clean one's
    # the branch's median over the moments (1.54 us) is a burst moment's, the others' are not
    assert b["if"] == pytest.approx(1.54e-6 - 0.72e-6 - 0.06e-6)
    assert b["if"] > 1.2 * max(clean)
    # the loop's models moved with the machine only: either way its cost is the middle one's
    assert a["while"] == pytest.approx(b["while"]) == pytest.approx(0.85e-6 * 1.2)
    assert meas.fixed_moments["builtin_1t"] != moments  # the fixture is left as it was


def test_the_builtin_plan_cost_comes_off_the_chains_not_their_kernels(small_measurements):
    """The calibration measures the invocation of a plan of builtin ops (``op_chain``, the
    intercept of int32 ``ADD`` chains) beside the empty one; the fit charges the difference
    to every chain running a builtin kernel (and takes it off the control-flow entries, whose
    models run builtin ops), so the kernels do not absorb it."""
    from edgepart.profiling.calibrate import chains_for

    meas, _ = small_measurements
    for cfg in ("builtin_1t", "xnnpack_1t"):
        assert meas.fixed[cfg]["op_chain"]["p10_s"] > 0
    a, b, m = _fits_with_fixed_cost(meas, "op_chain", "invoke", 1e-7, drop=False)
    assert a.builtin_plan_s == pytest.approx(1e-7, rel=1e-6) and b.builtin_plan_s == 0.0
    assert a.control_s["while"] == pytest.approx(max(b.control_s["while"] - 1e-7, 0.0))
    ks = [c.kernels["builtin"] for c, _ in chains_for(m, "builtin_1t")]
    ka = np.array([a.model_seconds(k).kernels_s for k in ks])
    kb = np.array([b.model_seconds(k).kernels_s for k in ks])
    # the kernels no longer carry the plan's cost: each chain's kernels drop by about that
    # cost (a ratio would depend on how long the sampled chains are)
    assert 0.5e-7 < np.median(kb - ka) < 1.5e-7
    assert a.model_seconds(ks[0]).invoke_s == pytest.approx(a.invoke_s + 1e-7)


def test_cli_fit_only_writes_the_same_predictor_twice(small_measurements, tmp_path, capsys):
    _, path = small_measurements
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for out in (a, b):
        rc = main(["calibrate", "--host", "--fit-only", str(path), "--family", "linear",
                   "--predictor-out", str(out), "--no-progress"])  # fmt: skip
        assert rc == 0
    assert a.read_bytes() == b.read_bytes()
    assert "xnnpack_1t:" in capsys.readouterr().out


def test_cli_fit_only_warns_when_the_machine_swung_while_calibrating(small_measurements,
                                                                     tmp_path, capsys):  # fmt: skip
    """The same chains with their batches' canary records rewritten: steady, the report only
    says how far the canary ran; swung past UNSTEADY_SPREAD, it warns once for the calibration
    (every configuration was measured in the same batches)."""
    import dataclasses

    meas, _ = small_measurements
    assert len(meas.batches) >= 3
    out = {}
    for name, speeds in (("steady", (1.0, 1.02, 1.05)), ("swung", (1.0, 1.1, 1.6))):
        batches = [
            {**b, "canary_cpu_s": [4e-4 * speeds[i % 3]] * len(b["canary_cpu_s"])}
            for i, b in enumerate(meas.batches)
        ]
        path = tmp_path / f"{name}.npz"
        dataclasses.replace(meas, batches=batches).save(path)
        rc = main(["calibrate", "--host", "--fit-only", str(path), "--family", "linear",
                   "--predictor-out", str(tmp_path / f"{name}.json"), "--no-progress"])  # fmt: skip
        assert rc == 0
        out[name] = capsys.readouterr().out
    assert "canary ran at" in out["steady"] and "unsteady" not in out["steady"]
    warned = [ln for ln in out["swung"].splitlines() if "warning: the machine was unsteady" in ln]
    assert len(warned) == 1, out["swung"]
    assert "1.60x as long" in warned[0] and "calibrate again when the machine is quiet" in warned[0]


def test_cli_fit_only_fits_with_the_measurements_own_seed_unless_told(small_measurements,
                                                                      tmp_path):  # fmt: skip
    """A refit reproduces the calibration's file: its default seed is the one the measurements
    were drawn (and first fitted) with, not 0."""
    pytest.importorskip("sklearn")
    meas, path = small_measurements
    assert meas.seed == 3
    files = {}
    for name, extra in (("own", []), ("three", ["--seed", "3"]), ("zero", ["--seed", "0"])):
        files[name] = tmp_path / f"{name}.json"
        rc = main(["calibrate", "--host", "--fit-only", str(path), "--family", "gbt",
                   "--predictor-out", str(files[name]), "--no-progress", *extra])  # fmt: skip
        assert rc == 0
    assert files["own"].read_bytes() == files["three"].read_bytes()
    assert files["own"].read_bytes() != files["zero"].read_bytes()  # the seed does matter


def test_measure_keeps_to_its_budget():
    # the budget covers the GEMM tile probe before the chains (about 3 s, more on a busy
    # machine: 6 s in one CI run), so it leaves room for chains after it
    cfg = MeasureConfig(configs=(("xnnpack", 1),), seed=5, batch=6, rounds=3, budget_s=15.0)
    t0 = time.monotonic()
    meas = measure(cfg)
    elapsed = time.monotonic() - t0
    assert meas.chains
    # a batch in flight stops sampling at the deadline; only its kernel bookkeeping remains
    assert elapsed < cfg.budget_s + 4.0
    # every batch records how fast the machine ran: the canary's samples, a pair per round
    done = [b for b in meas.batches if "chains" in b]
    assert done
    for b in done:
        wall, cpu = b["canary_wall_s"], b["canary_cpu_s"]
        assert len(wall) == len(cpu) >= 1
        assert all(0 < c <= 1.05 * w for c, w in zip(cpu, wall, strict=True))


def test_calibrate_cli_errors(tmp_path, capsys):
    assert main(["calibrate"]) == 2
    assert "give --host" in capsys.readouterr().err
    bad = tmp_path / "x.npz"
    bad.write_bytes(b"not a zip")
    assert main(["calibrate", "--host", "--fit-only", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "not an edgepart calibration measurements file" in err and err.count("\n") == 1
    assert "not an .npz archive" in err and "pickle" not in err  # no advice to load it unsafely
    # an archive cut short (a copy interrupted): one line, status 2, nothing written
    good = tmp_path / "good.npz"
    np.savez_compressed(good, header=np.frombuffer(b"{}", np.uint8), k_feat=np.zeros(5000))
    cut = tmp_path / "cut.npz"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    out = tmp_path / "p.json"
    assert main(["calibrate", "--host", "--fit-only", str(cut), "--predictor-out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "truncated or corrupted" in err and str(cut) in err and err.count("\n") == 1
    assert not out.exists()
    assert main(["calibrate", "--host", "--budget", "0.1"]) == 2
    assert "need at least half a minute" in capsys.readouterr().err


def test_a_bad_batch_record_is_named_and_nothing_is_written(small_measurements, tmp_path, capsys):
    """The fit reads every batch's canary samples (machine_state): a file whose records are not
    numbers is refused in one line naming the record, before anything is fitted or written."""
    import copy

    meas = copy.deepcopy(small_measurements[0])
    meas.batches[1]["canary_cpu_s"] = [1e-4, "fast"]
    path = tmp_path / "m.npz"
    meas.save(path)
    out = tmp_path / "p.json"
    assert main(["calibrate", "--host", "--fit-only", str(path), "--predictor-out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "header.batches[1].canary_cpu_s: expected a list of positive seconds" in err
    assert err.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [("gemm_row_tile", v, "need an integer from 1 to 64") for v in (0, 2.5, "7", True)]
    + [("gemm_row_tiles", v, "need an object of integers from 1 to 64")
       for v in ({"": 0}, {"_q8": 16.0}, {"_hy": 65}, [7])]
    + [("gemm_task_outputs", v, "need an object of integers from 0")
       for v in ({"": -1}, {"_q8": 2.5}, {"": True}, [32])],
)  # fmt: skip
def test_a_bad_gemm_tile_figure_is_named_and_nothing_is_written(
    small_measurements, tmp_path, capsys, key, value, message
):
    import copy

    meas = copy.deepcopy(small_measurements[0])
    meas.host[key] = value
    path = tmp_path / "m.npz"
    meas.save(path)
    out = tmp_path / "p.json"
    assert main(["calibrate", "--host", "--fit-only", str(path), "--predictor-out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"host.{key} is {value!r}; {message}" in err
    assert err.count("\n") == 1 and not out.exists()


def test_report_json(small_measurements, tmp_path, capsys):
    _, path = small_measurements
    out = tmp_path / "p.json"
    assert main(["calibrate", "--host", "--fit-only", str(path), "--family", "linear",
                 "--predictor-out", str(out), "--json"]) == 0  # fmt: skip
    rep = json.loads(capsys.readouterr().out)
    assert rep["files"] == [str(out)]
    assert {r["config"] for r in rep["reports"]} == {"xnnpack_1t", "builtin_1t"}


def test_predictor_from_a_per_op_table(corpus, tmp_path, capsys):
    """A measured per-op table (here the host's; a phone's from `profile --adb` has the same
    format) fits a predictor that reproduces the table's own sum on its model."""
    from edgepart.cost.estimate import estimate_model
    from edgepart.tflite.reader import read_model

    table = tmp_path / "t.json"
    assert main(["profile", str(corpus["mobilenet_v2"]), "-o", str(table), "--no-progress",
                 "--executor", "builtin"]) == 0  # fmt: skip
    out = tmp_path / "p.json"
    rc = main(["calibrate", "--from-table", f"{table}={corpus['mobilenet_v2']}",
               "--predictor-out", str(out)])  # fmt: skip
    assert rc == 0
    assert "host_builtin_1t:" in capsys.readouterr().out
    pred = load_predictor(out)
    m = read_model(corpus["mobilenet_v2"])
    est = estimate_model(m, pred)[0]
    from edgepart.cost.table import load_table
    from edgepart.profiling.table_fit import table_chains

    pt = load_table(table).processors["host_builtin_1t"]
    # the fit was given the ops one by one and the segments (ops timed together in context);
    # on a noisy machine the two disagree by up to 30%, and the fit lands near one of them:
    # the sum of the single ops, or the table's own prediction (scaled to the segments)
    chains = table_chains(m, pt, "builtin")
    singles = sum(t for _, t, _, cls in chains if cls is not None) + pt.invoke_overhead_s
    refs = [singles, pt.models[0]["predicted_s"]]
    assert min(abs(est.seconds / r - 1) for r in refs) < 0.2, (est.seconds, refs)
    assert main(["calibrate", "--from-table", "x.json"]) == 2


def test_a_table_fit_keeps_ops_measured_as_zero_and_uses_segments(corpus, tmp_path):
    """A cheap op can be valued 0 in a table (its time minus the invocation's fixed cost, never
    below zero): it was measured, so its kernel type keeps a model priced near zero instead of
    none (every model with a softmax would fail to estimate). Segments, measured in context
    and recorded with their ops as one flat list, are chains of their own."""
    import json

    from edgepart.cost.estimate import estimate_model
    from edgepart.cost.table import load_table
    from edgepart.profiling.table_fit import UNRESOLVED_S, predictor_from_tables, table_chains
    from edgepart.tflite.reader import read_model

    table = tmp_path / "t.json"
    assert main(["profile", str(corpus["mobilenet_v2"]), "-o", str(table), "--no-progress",
                 "--executor", "builtin"]) == 0  # fmt: skip
    doc = json.loads(table.read_text())
    proc = doc["processors"]["host_builtin_1t"]
    softmax = [e for e in proc["entries"] if e["key"].startswith("SOFTMAX")]
    segments = [e for e in proc["entries"] if e.get("role") == "segment"]
    assert len(softmax) == 1 and len(segments) >= 2
    softmax[0]["value_s"] = 0.0
    table.write_text(json.dumps(doc))
    m = read_model(corpus["mobilenet_v2"])
    pt = load_table(table).processors["host_builtin_1t"]
    chains = table_chains(m, pt, "builtin")
    sm = [t for k, t, _, cls in chains if cls is not None and k.types == ["tfl.softmax"]]
    assert sm == [UNRESOLVED_S]
    multi = sorted(round(t, 12) for k, t, _, cls in chains if cls is None)
    assert multi == sorted(round(e["value_s"], 12) for e in segments if e["value_s"] > 0)
    pred = predictor_from_tables([(m, pt)])
    est = estimate_model(m, pred)[0]  # raised PredictorError (no model for tfl.softmax)
    assert est.seconds > 0


@pytest.mark.slow
def test_calibrate_host_end_to_end_within_its_budget(tmp_path, monkeypatch, capsys):
    """`calibrate --host --budget 1` measures, fits and writes the host profile, its predictor
    and the measurements within the minute; `--profile host` then finds them."""
    from edgepart.devices.profile import load_profile

    t0 = time.monotonic()
    rc = main(["calibrate", "--host", "--budget", "1", "-o", str(tmp_path), "--no-progress",
               "--family", "linear"])  # fmt: skip
    elapsed = time.monotonic() - t0
    assert rc == 0
    assert elapsed < 60 * 1.1
    out = capsys.readouterr().out
    assert "wrote" in out and "chains" in out
    for f in ("host.yaml", "host.predictor.json", "host.measurements.npz"):
        assert (tmp_path / f).is_file()
    monkeypatch.setenv("EDGEPART_HOST_PROFILE", str(tmp_path / "host.yaml"))
    prof = load_profile("host")
    assert prof.processors[0].peak_ops_per_s["fp32"].provenance == "measured"
    pred = load_predictor(prof.latency_predictor)
    assert {c.executor for c in pred.configs.values()} == {"xnnpack", "builtin"}
    for c in pred.configs.values():
        # measured control flow: an IF and a WHILE cost something, an iteration less than either,
        # and preparing an op of the subgraphs they call again a few microseconds at most
        cf = c.control_s
        assert set(cf) == {"if", "subgraph_op", "while", "while_iteration"}
        assert 0 < cf["if"] < 1e-4 and 0 < cf["while"] < 1e-4
        assert 0 <= cf["while_iteration"] < min(cf["if"], cf["while"])
        assert 0 <= cf["subgraph_op"] < 5e-6


@pytest.mark.slow
def test_requiring_a_steady_machine_stops_early_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """`--require-steady` judges the first batches and stops at once on a machine past the limit:
    status 2, one line that says how unsteady, and no file or directory left behind. No machine
    measures three batches at exactly one speed, so with the limit at 1.0 every run stops; the
    batches judged are three instead of twenty to keep the test short."""
    import edgepart.api.prediction as api
    from edgepart.profiling import machine_state

    monkeypatch.setattr(api, "STEADY_LIMIT", 1.0)
    monkeypatch.setattr(machine_state, "STEADY_BATCHES", 3)
    out = tmp_path / "new" / "host"
    t0 = time.monotonic()
    rc = main(["calibrate", "--host", "--require-steady", "--budget", "2", "-o", str(out),
               "--no-progress", "--family", "linear"])  # fmt: skip
    assert rc == 2
    assert time.monotonic() - t0 < 60  # three batches, not the two-minute budget
    cap = capsys.readouterr()
    assert cap.out == ""
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cap.err
    assert lines[0].startswith("edgepart: error: calibrate: the machine is unsteady now")
    assert "first 3 batches" in lines[0] and "nothing was written" in lines[0]
    assert not (tmp_path / "new").exists()


def test_require_steady_is_for_a_calibration_that_measures(small_measurements, tmp_path, capsys):
    _, path = small_measurements
    rc = main(["calibrate", "--host", "--require-steady", "--fit-only", str(path),
               "--predictor-out", str(tmp_path / "p.json")])  # fmt: skip
    assert rc == 2
    err = capsys.readouterr().err
    assert "--require-steady" in err and "not with --fit-only" in err
    assert not (tmp_path / "p.json").exists()


def test_pool_chains_never_pool_an_identity():
    # a 1x1 image pools only as an identity, which XNNPACK elides, and with it every op of a
    # chain that ends there: such chains measured nothing but the fixed costs
    for seed in range(60):
        sg = build_chain(ChainSpec(seed=seed, homogeneous="pool", length=6)).main
        for i in range(sg.num_ops):
            if sg.op_name(i) not in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
                continue
            o = sg.op_options[i]
            shape = sg.tensor(int(sg.op_inputs.row(i)[0])).shape
            identity = o["filter_height"] == o["filter_width"] == o["stride_h"] == 1
            assert not (identity and shape[1] == shape[2] == 1), (seed, i, shape)


def test_fft_chains_run_in_litert():
    from edgepart.profiling.timing import fill_inputs, make_interpreter

    spec = ChainSpec(seed=4, homogeneous="fft", length=3)
    m = build_chain(spec)
    names = {m.main.op_name(i) for i in range(m.main.num_ops)}
    assert "RFFT2D" in names and names & {"COMPLEX_ABS", "REAL", "IMAG"}
    it = make_interpreter(write_model(m), "builtin", 1)
    fill_inputs(it, 0)
    it.invoke()
    out = it.get_tensor(it.get_output_details()[0]["index"])
    assert np.isfinite(out).all() and np.abs(out).max() > 0


@pytest.mark.parametrize("trips", [1, 3, 8])
def test_loop_models_run_their_trips(trips):
    from edgepart.profiling.timing import (
        WIDE_BODY_OPS,
        branch_model,
        fill_inputs,
        int_op_chain,
        loop_model,
        make_interpreter,
    )

    for ex in ("xnnpack", "builtin"):
        for model, want in ((loop_model(trips), trips), (int_op_chain(trips), trips),
                            (loop_model(trips, WIDE_BODY_OPS), trips),
                            (branch_model(), 1)):  # fmt: skip
            it = make_interpreter(model, ex, 1)
            fill_inputs(it, 0)
            it.invoke()
            outs = {d["name"]: it.get_tensor(d["index"]) for d in it.get_output_details()}
            counter = [v for v in outs.values() if v.dtype == np.int32]
            assert len(counter) == 1 and int(counter[0][0]) == want


def test_small_chains_are_long_chains_of_tiny_tensors():
    specs = [s for s in draw_specs(np.random.default_rng(5), 600) if s.small and not s.column]
    assert 20 <= len(specs) <= 80  # about 8 %
    assert any(s.homogeneous for s in specs) and any(s.homogeneous is None for s in specs)
    for spec in specs[:12]:
        assert 12 <= spec.length <= 40
        assert ChainSpec.from_json(spec.to_json()) == spec
        sg = build_chain(spec).main
        sizes = sorted(int(np.prod(sg.tensor(t).shape)) for t in range(sg.num_tensors)
                       if not sg.tensor_is_constant[t])  # fmt: skip
        # activations stay tiny (a few start again small after an upsampling chain grew them)
        assert sizes[len(sizes) // 2] <= 4096


def test_column_chains_run_one_column_of_up_to_256_channels_through_dozens_of_kernels():
    """Column chains (about 5% of the draws): 4 to 16 steps over one column of 1 to 4 frames
    and up to 256 channels, past the 32 of the other small chains; each step kind alone in
    some, mixed in others; both executors run them, and what decompose says XNNPACK takes is
    what LiteRT's XNNPACK takes."""
    from edgepart.ir.dtypes import DType
    from edgepart.profiling.kernel_gen import COLUMN_STEPS
    from edgepart.profiling.timing import fill_inputs, make_interpreter

    specs = [s for s in draw_specs(np.random.default_rng(5), 1200) if s.column and not s.stack]
    assert 30 <= len(specs) <= 95  # about 5%
    assert {s.column for s in specs} == {*COLUMN_STEPS, "mixed"}
    assert {s.family for s in specs} == {"f32", "q8"}
    widest = 0
    for spec in specs[:24]:
        assert 4 <= spec.length <= 16 and spec.small and spec.homogeneous is None
        assert ChainSpec.from_json(spec.to_json()) == spec
        m = build_chain(spec)
        sg = m.main
        names = [sg.op_name(i) for i in range(sg.num_ops)]
        # weights unpacked at run time (sparse fp16 pointwise weights: DENSIFY, DEQUANTIZE)
        unpacked: set[int] = set()
        for i, n in enumerate(names):
            src = int(sg.op(i).inputs[0]) if sg.op(i).inputs else -1
            if n == "DENSIFY" or (
                n == "DEQUANTIZE" and (sg.tensor_is_constant[src] or src in unpacked)
            ):
                unpacked.add(int(sg.op(i).outputs[0]))
        for t in range(sg.num_tensors):
            shape = sg.tensor(t).shape
            if (sg.tensor_is_constant[t] or t in unpacked or len(shape) != 4
                    or sg.tensor(t).dtype == DType.RESOURCE):  # fmt: skip
                continue
            assert shape[0] == 1 and shape[2] == 1 and shape[3] <= 256, (spec, shape)
            widest = max(widest, shape[3])
        if spec.column == "stream":
            assert names.count("READ_VARIABLE") >= 1
        elif spec.column != "mixed":
            kinds = {"conv": "CONV_2D", "fc": "FULLY_CONNECTED"}
            if spec.column in kinds:
                assert names.count(kinds[spec.column]) == spec.length
        content = write_model(m)
        for ex in ("xnnpack", "builtin"):
            it = make_interpreter(content, ex, 1)
            fill_inputs(it, 0)
            for _ in range(2):
                it.invoke()
            for d in it.get_output_details():
                assert np.isfinite(it.get_tensor(d["index"]).astype(np.float64)).all()
        k = decompose(m, "xnnpack")
        owner, _ = real_owner(make_interpreter(content, "xnnpack", 1), sg.num_ops, content)
        for j in range(sg.num_ops):
            if k.op_kernel[j] >= 0:
                ours = k.types[k.op_kernel[j]].startswith("xnn.")
                assert ours == (owner[j] is not None), (spec, j, names[j])
    assert widest > 32  # the small chains' cap does not bind


def test_stack_chains_repeat_one_step_configuration_over_one_column():
    """Stacks (about 4% of the draws): 2 to 24 steps of one column step kind, every step the
    same kernels with the same features as the first, each reading the one before (one graph
    input), the width kept; int8 and float; both executors run them, and what decompose says
    XNNPACK takes is what LiteRT's XNNPACK takes."""
    from edgepart.profiling.kernel_gen import COLUMN_STEPS
    from edgepart.profiling.timing import fill_inputs, make_interpreter

    specs = [s for s in draw_specs(np.random.default_rng(5), 2000) if s.stack]
    assert 40 <= len(specs) <= 120  # about 4% of the draws not taken by column chains
    assert {s.column for s in specs} == set(COLUMN_STEPS)
    assert {s.family for s in specs} == {"f32", "q8"}
    assert {s.length for s in specs} <= set(range(2, 25)) and len({s.length for s in specs}) > 10
    checked = 0
    for spec in sorted(specs, key=lambda s: (s.column, s.family, s.seed)):
        assert spec.small and spec.version == SAMPLER_VERSION
        assert ChainSpec.from_json(spec.to_json()) == spec
        m = build_chain(spec)
        sg = m.main
        assert len(sg.inputs) == 1
        k = decompose(m, "xnnpack")
        # the kernels of the steps (between the int8 chains' quantize and dequantize)
        body = range(1, len(k) - 1) if spec.family == "q8" else range(len(k))
        if spec.column == "unary" and len(body) < spec.length:
            continue  # clamps XNNPACK fuses into one
        assert len(body) % spec.length == 0, spec
        n = len(body) // spec.length
        steps = {
            (tuple(k.types[body[0] + i * n : body[0] + (i + 1) * n]),
             k.features[body[0] + i * n : body[0] + (i + 1) * n].tobytes())
            for i in range(spec.length)
        }  # fmt: skip
        assert len(steps) == 1, spec
        widths = {sg.tensor(t).shape[-1] for t in range(sg.num_tensors)
                  if len(sg.tensor(t).shape) == 4 and not sg.tensor_is_constant[t]}  # fmt: skip
        assert len(widths) == 1, (spec, widths)
        if checked < 12:
            content = write_model(m)
            for ex in ("xnnpack", "builtin"):
                it = make_interpreter(content, ex, 1)
                fill_inputs(it, 0)
                it.invoke()
            owner, _ = real_owner(make_interpreter(content, "xnnpack", 1), sg.num_ops, content)
            for j in range(sg.num_ops):
                if k.op_kernel[j] >= 0:
                    ours = k.types[k.op_kernel[j]].startswith("xnn.")
                    assert ours == (owner[j] is not None), (spec, j, sg.op_name(j))
        checked += 1
    assert checked >= 40


def test_specs_of_sampler_version_17_build_the_chains_they_built():
    """Version 18 added stacks and changed no other chain: specs of 17 (the measurements of
    earlier calibrations) rebuild byte for byte (hashes taken with the version 17 sampler);
    a stack of version 17 never existed and is refused."""
    import dataclasses
    import hashlib

    from edgepart.profiling.kernel_gen import CLASS_WEIGHTS, NEW_IN_19

    w = tuple(sorted((c, v) for c, v in CLASS_WEIGHTS.items() if c not in NEW_IN_19))
    specs = [
        ChainSpec(seed=1, family="f32", length=8, weights=w),
        ChainSpec(seed=2, family="q8", length=3, homogeneous="conv"),
        ChainSpec(seed=3, family="f32", length=2, motif=True),
        ChainSpec(seed=4, family="q8", length=20, small=True),
        ChainSpec(seed=5, family="q8", length=9, small=True, column="stream"),
        ChainSpec(seed=6, family="f32", length=12, small=True, column="mixed"),
        ChainSpec(seed=7, family="hy", length=5),
    ]
    got = [
        hashlib.sha256(write_model(build_chain(dataclasses.replace(s, version=17)))).hexdigest()
        for s in specs
    ]
    assert [h[:16] for h in got] == [
        "bffe6a2447aaa8c6", "5005591c9ae3fc7c", "8471c2adc01f76e9", "4a41ba96436ab671",
        "501107337e0d3809", "21e744048b025a4a", "e50387f77c37e7fa",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="sampler version 17"):
        build_chain(ChainSpec(seed=1, column="conv", small=True, stack=True, version=17))
    with pytest.raises(ValueError, match="sampler version 16"):
        build_chain(ChainSpec(seed=1, version=16))


# Specs and the hashes of their chains, taken with the sampler of each older version. 20 drew
# short-time Fourier frames among the filter banks and several parts of one spectrum; 22 gave
# float32 chains' frames one output per bin and drew constant 2-D right-hand sides of batch
# products (21, which drew the same in 8-bit chains too, was not adopted and is not built); 23
# drew image networks' first convolutions.
_OLDER_SPECS = [
    ChainSpec(seed=20, family="f32", length=2, homogeneous="conv"),
    ChainSpec(seed=48, family="f32", length=2, homogeneous="conv"),
    ChainSpec(seed=4, family="f32", length=3, homogeneous="fft"),
    ChainSpec(seed=3, family="f32", length=3, homogeneous="bmm"),
    ChainSpec(seed=11, family="f32", length=10),
    ChainSpec(seed=12, family="q8", length=6),
]
_OLDER_HASHES = {
    19: ["f10f701c6ba5a680", "30d343d95e813651", "81816c9b486c98ba", "c95d44d78901274a",
         "4d146e4c8cf7343b", "1ca4ae7f80d8cf32"],
    20: ["fb355f0c7facdd7a", "619d0eaf177d3523", "8ac746c813585403", "3ae5a846457d4c7b",
         "4943e540fd05bcc1", "a905100241557427"],
    22: ["bf5cd2cac42130dc", "0b67869bd0ee4264", "54495c6b3c815f76", "ac58cba4f2a5f561",
         "dfac9eedd98c0c37", "514ee149d73b489e"],
}  # fmt: skip


@pytest.mark.parametrize("version", sorted(_OLDER_HASHES))
def test_specs_of_an_older_sampler_version_build_the_chains_they_built(version: int) -> None:
    """Specs of an older version rebuild byte for byte, so its measurements can still be
    refitted, and the same seeds build other chains in the next version."""
    import dataclasses
    import hashlib

    def digest(spec: ChainSpec, v: int) -> str:
        m = build_chain(dataclasses.replace(spec, version=v))
        return hashlib.sha256(write_model(m)).hexdigest()[:16]

    assert [digest(s, version) for s in _OLDER_SPECS] == _OLDER_HASHES[version]
    later = min(v for v in BUILDS if v > version)
    assert digest(_OLDER_SPECS[0], later) != digest(_OLDER_SPECS[0], version)


def test_image_networks_first_convolutions_are_drawn_and_run_in_litert():
    """Version 23 draws stems: a fresh image of 1 to 4 channels, full resolution, a 3 x 3 to
    7 x 7 window; each kind runs on both executors, and version 22 specs never drew them."""
    from edgepart.cost.kernels import FEATURES
    from edgepart.profiling.timing import fill_inputs, make_interpreter

    f = {n: i for i, n in enumerate(FEATURES)}

    def stems(version: int) -> list[tuple[int, ChainSpec, tuple[float, ...]]]:
        out = []
        for seed in range(120):
            spec = ChainSpec(seed=seed, family="f32", length=2, homogeneous="conv",
                             version=version)  # fmt: skip
            m = build_chain(spec)
            g = m.main
            first = g.tensors[g.inputs[0]].shape[-1]  # a stem's image is a chain input
            for row in decompose(m, "builtin").features:
                stem = row[f["cin"]] <= 4 and row[f["h"]] >= 8 and row[f["kh"]] == row[f["kw"]] > 1
                if stem and first == row[f["cin"]]:
                    out.append((seed, spec, tuple(row)))
        return out

    new, old = stems(23), stems(22)
    assert len(new) >= 6 and len(new) >= 3 * max(len(old), 1)
    assert {int(r[f["cin"]]) for _, _, r in new} >= {1, 3}
    assert {int(r[f["kh"]]) for _, _, r in new} & {5, 7}
    for _, spec, _ in new[:3]:
        content = write_model(build_chain(spec))
        for ex in ("xnnpack", "builtin"):
            it = make_interpreter(content, ex, 1)
            fill_inputs(it, 0)
            it.invoke()
            assert np.isfinite(it.get_tensor(it.get_output_details()[0]["index"])).all()


def test_batch_products_by_a_constant_matrix_are_drawn_and_run_in_litert():
    """A batch of rows times one constant 2-D matrix (openWakeWord's mel filter bank,
    ``einsum`` projections): version 22 draws it, XNNPACK takes it, and it runs."""
    from edgepart.profiling.timing import fill_inputs, make_interpreter

    found = []
    for seed in range(40):
        m = build_chain(ChainSpec(seed=seed, family="f32", length=2, homogeneous="bmm"))
        g = m.main
        for i in range(g.num_ops):
            op = g.ops[i]
            if g.op_name(i) == "BATCH_MATMUL" and g.tensors[op.inputs[1]].rank == 2:
                assert g.tensors[op.inputs[1]].is_constant
                found.append(m)
    assert len(found) >= 2
    for m in found[:2]:
        assert "xnn.bmm" in decompose(m, "xnnpack").types
        for ex in ("xnnpack", "builtin"):
            it = make_interpreter(write_model(m), ex, 1)
            fill_inputs(it, 0)
            it.invoke()
            assert np.isfinite(it.get_tensor(it.get_output_details()[0]["index"])).all()


def test_short_time_fourier_frames_are_drawn_as_convolutions_and_run_in_litert():
    """Audio front ends that frame a waveform with a convolution (openWakeWord's mel
    spectrogram: 1 x 512 kernels, 160 apart) are past the filter banks' widths (8 to 256) and
    strides (1 to 8): sampler version 20 draws them too."""
    from edgepart.profiling.timing import fill_inputs, make_interpreter

    found = []
    for seed in range(150):
        m = build_chain(ChainSpec(seed=seed, family="f32", length=2, homogeneous="conv"))
        k = decompose(m, "xnnpack")
        for i, t in enumerate(k.types):
            f = k.features[i]
            if t == "xnn.conv" and f[F["kw"]] >= 256 and f[F["sw"]] >= 64:
                found.append((m, f))
    assert len(found) >= 3
    kws = {int(f[F["kw"]]) for _, f in found}
    assert kws <= {256, 400, 512, 1024, 2048}
    # version 22: most float32 frames have one output per frequency bin, as a transform has
    bins = [f for _, f in found if f[F["cout"]] == f[F["kw"]] // 2 + 1]
    assert len(bins) >= len(found) / 2
    for m, f in found[:2]:
        assert f[F["kh"]] == 1 and f[F["cin"]] == 1 and f[F["red"]] == f[F["kw"]]
        for ex in ("xnnpack", "builtin"):
            it = make_interpreter(write_model(m), ex, 1)
            fill_inputs(it, 0)
            it.invoke()
            out = it.get_tensor(it.get_output_details()[0]["index"])
            assert np.isfinite(out).all()


def test_fft_chains_take_one_to_three_parts_of_one_spectrum():
    """The magnitudes (``COMPLEX_ABS``, a kernel class of its own) cost 30 times what the
    real part does: chains of version 20 take several parts of one transform, so the fit sees
    the same transform with and without them."""
    from edgepart.profiling.timing import fill_inputs, make_interpreter

    counts = []
    for seed in range(12):
        m = build_chain(ChainSpec(seed=seed, family="f32", length=2, homogeneous="fft"))
        names = [m.main.op_name(i) for i in range(m.main.num_ops)]
        parts = [n for n in names if n in ("COMPLEX_ABS", "REAL", "IMAG")]
        counts.append(len(parts) - names.count("RFFT2D"))
        types = decompose(m, "builtin").types
        assert types.count("tfl.magnitude") == names.count("COMPLEX_ABS")
        it = make_interpreter(write_model(m), "builtin", 1)
        fill_inputs(it, 0)
        it.invoke()
    assert min(counts) == 0 and max(counts) >= 2


def test_int8_fully_connected_chains_with_per_tensor_weights_prepare_on_builtin_kernels():
    """Per-tensor int8 weights get a bias of one scale: a per-channel bias beside them has no
    tensor-wide scale, and LiteRT's builtin kernel refused such a layer whenever input scale
    times weight scale exceeded a fiftieth of the output scale (38 of 9,520 chains of one
    calibration were lost that way)."""
    from edgepart.profiling.timing import make_interpreter

    seen = 0
    for seed in range(40):
        m = build_chain(ChainSpec(seed=seed, family="q8", homogeneous="fc", length=3))
        sg = m.main
        for i in range(sg.num_ops):
            if sg.op_name(i) != "FULLY_CONNECTED" or len(sg.op(i).inputs) < 3:
                continue
            w, b = (sg.tensor(t) for t in sg.op(i).inputs[1:3])
            if b.quantization is not None:
                assert len(b.quantization.scale) == len(w.quantization.scale)
                seen += 1
        make_interpreter(write_model(m), "builtin", 1)  # raises if LiteRT refuses
    assert seen >= 20


def test_recurrent_chains_run_and_are_one_rnn_kernel_per_step():
    from edgepart.cost.kernels import FEATURES, decompose
    from edgepart.profiling.timing import fill_inputs, make_interpreter

    f = {n: k for k, n in enumerate(FEATURES)}
    m = build_chain(ChainSpec(seed=2, homogeneous="rnn", length=1))
    sg = m.main
    assert [sg.op_name(i) for i in range(sg.num_ops)] == ["UNIDIRECTIONAL_SEQUENCE_LSTM"]
    batch, steps, nin = sg.tensor(int(sg.op_inputs.row(0)[0])).shape
    cells = sg.tensor(int(sg.op_outputs.row(0)[0])).shape[-1]
    for ex in ("xnnpack", "builtin"):  # XNNPACK takes no recurrent op
        it = make_interpreter(write_model(m), ex, 1)
        fill_inputs(it, 0)
        it.invoke()
        assert np.isfinite(it.get_tensor(it.get_output_details()[0]["index"])).all()
        k = decompose(m, ex)
        assert k.types == ["tfl.rnn"] and k.repeat.tolist() == [steps]
        row = k.features[0]
        assert (row[f["rows"]], row[f["red"]], row[f["cout"]]) == (batch, nin + cells, 4 * cells)
        assert row[f["macs"]] == batch * (nin + cells) * 4 * cells


@pytest.mark.parametrize("family", ["f32", "q8"])
def test_variable_chains_copy_through_a_resource_variable(family):
    from edgepart.profiling.timing import fill_inputs, make_interpreter

    for seed in range(40):  # copy chains draw a variable round trip about one time in five
        m = build_chain(ChainSpec(seed=seed, family=family, homogeneous="copy", length=3))
        sg = m.main
        names = [sg.op_name(i) for i in range(sg.num_ops)]
        if "READ_VARIABLE" in names:
            break
    else:
        pytest.fail("no chain drew a variable")
    assert names.index("ASSIGN_VARIABLE") < names.index("READ_VARIABLE")
    content = write_model(m)
    for ex in ("xnnpack", "builtin"):
        it = make_interpreter(content, ex, 1)
        fill_inputs(it, 0)
        for _ in range(2):  # the second invocation reads what the first one assigned
            it.invoke()
        k = decompose(m, ex)
        copies = [k.types[k.op_kernel[i]] for i, n in enumerate(names) if "VARIABLE" in n]
        prefix = "xnn" if ex == "xnnpack" else "tfl"
        want = f"{prefix}.copy"  # 8-bit copies too: data movement is dtype-blind
        assert copies == [want] * 2 * names.count("READ_VARIABLE"), (ex, copies)
        if ex == "xnnpack":
            owner, _ = real_owner(it, sg.num_ops, content)
            assert all(owner[i] is not None for i, n in enumerate(names) if "VARIABLE" in n)
            # without the bytes, an ASSIGN_VARIABLE (no outputs) is reached from no output
            assert real_owner(it, sg.num_ops)[0][names.index("ASSIGN_VARIABLE")] is None


@pytest.mark.parametrize("family", ["f32", "q8"])
def test_streaming_layers_keep_their_window_in_variables_set_once(family):
    from edgepart.profiling.timing import fill_inputs, make_interpreter

    for seed in range(60):
        m = build_chain(ChainSpec(seed=seed, family=family, motif=True, length=3))
        sg = m.main
        names = [sg.op_name(i) for i in range(sg.num_ops)]
        if "CALL_ONCE" in names:
            break
    else:
        pytest.fail("no chain drew a streaming layer")
    assert names[0] == "CALL_ONCE" and sg.op_options[0]["init_subgraph_index"] == 1
    init = m.subgraphs[1]
    assert {init.op_name(i) for i in range(init.num_ops)} == {"VAR_HANDLE", "ASSIGN_VARIABLE"}
    # each layer: read the kept frames, join the new ones, store the newest, convolve the window
    i = names.index("READ_VARIABLE")
    assert names[i + 1 : i + 3] == ["CONCATENATION", "STRIDED_SLICE"]
    assert "ASSIGN_VARIABLE" in names[i + 3 : i + 5]
    content = write_model(m)
    for ex in ("xnnpack", "builtin"):
        it = make_interpreter(content, ex, 1)
        fill_inputs(it, 0)
        for _ in range(3):  # later invocations read what earlier ones stored
            it.invoke()
        for d in it.get_output_details():
            assert np.isfinite(it.get_tensor(d["index"]).astype(np.float64)).all()
        k = decompose(m, ex)
        assert "CALL_ONCE" not in {sg.op_name(o) for ops in k.ops for o in ops}  # once only
        if ex == "xnnpack":
            owner, _ = real_owner(it, sg.num_ops, content)
            layer = {"READ_VARIABLE", "CONCATENATION", "STRIDED_SLICE", "ASSIGN_VARIABLE"}
            for j, n in enumerate(names):
                if n in ("CALL_ONCE", "VAR_HANDLE"):
                    continue
                if n in layer:
                    assert owner[j] is not None, (j, n)  # XNNPACK takes the whole layer
                # the chain's other blocks: claimed as LiteRT claims them (free ops: no kernel)
                if k.op_kernel[j] >= 0:
                    ours = k.types[k.op_kernel[j]].startswith("xnn.")
                    assert ours == (owner[j] is not None), (j, n)


@pytest.mark.parametrize("family", ["f32", "q8"])
def test_depthwise_chains_also_draw_streaming_temporal_layers(family):
    """Chains of depthwise convolutions alone also draw a streaming layer's: a tall kernel
    over a window of a few frames, one to four output rows (keyword spotters run dozens)."""
    from edgepart.profiling.timing import fill_inputs, make_interpreter

    found = []
    for seed in range(40):
        m = build_chain(ChainSpec(seed=seed, family=family, homogeneous="dwconv", length=4))
        sg = m.main
        for i in range(sg.num_ops):
            if sg.op_name(i) != "DEPTHWISE_CONV_2D":
                continue
            op = sg.op(i)
            x, w = (sg.tensor(t).shape for t in op.inputs[:2])
            y = sg.tensor(op.outputs[0]).shape
            opt = op.options
            if w[2] == 1 and x[2] == 1 and w[1] >= 2 and y[1] <= 4 and opt["padding"] == "VALID":
                assert x[1] == w[1] - 1 + y[1]  # the window: kept frames and the new ones
                assert opt["stride_h"] == 1 and y[3] == x[3]
                found.append((seed, m))
    assert len(found) >= 3, found
    taps = set()
    for _, m in found:
        sg = m.main
        taps |= {
            sg.tensor(sg.op(i).inputs[1]).shape[1]
            for i in range(sg.num_ops)
            if sg.op_name(i) == "DEPTHWISE_CONV_2D"
        }
    assert max(taps) >= 9  # tall kernels, not only 3x1
    content = write_model(found[0][1])
    it = make_interpreter(content, "xnnpack", 1)
    fill_inputs(it, 0)
    it.invoke()
    assert all(
        np.isfinite(it.get_tensor(d["index"]).astype(np.float64)).all()
        for d in it.get_output_details()
    )
    owner, _ = real_owner(it, found[0][1].main.num_ops, content)
    names = [found[0][1].main.op_name(i) for i in range(found[0][1].main.num_ops)]
    assert all(owner[j] is not None for j, n in enumerate(names) if n == "DEPTHWISE_CONV_2D")


def test_fully_connected_chains_also_draw_weights_known_only_at_run_time():
    from edgepart.cost.kernels import FEATURES
    from edgepart.profiling.timing import fill_inputs, make_interpreter

    for seed in range(80):  # about one fully connected op in ten
        m = build_chain(ChainSpec(seed=seed, homogeneous="fc", length=2))
        sg = m.main
        dyn = [i for i in range(sg.num_ops) if sg.op_name(i) == "FULLY_CONNECTED"
               and sg.op_inputs.row(i)[1] in set(sg.inputs.tolist())]  # fmt: skip
        if dyn:
            break
    else:
        pytest.fail("no chain drew a fully connected op with run-time weights")
    content = write_model(m)
    for ex in ("xnnpack", "builtin"):
        it = make_interpreter(content, ex, 1)
        fill_inputs(it, 0)
        it.invoke()
        k = decompose(m, ex)
        row = k.features[k.op_kernel[dyn[0]]]
        assert k.types[k.op_kernel[dyn[0]]] == "tfl.fc"  # XNNPACK packs weights ahead only
        ins = sg.op_inputs.row(dyn[0])
        bias = 4 * sg.tensor(int(ins[2])).shape[0] if len(ins) > 2 and ins[2] >= 0 else 0
        # constant bytes: the bias alone, if it has one
        assert row[FEATURES.index("n_in")] == 2 and row[FEATURES.index("w_bytes")] == bias
        if ex == "xnnpack":
            assert real_owner(it, sg.num_ops, content)[0][dyn[0]] is None  # LiteRT agrees


def test_audio_custom_op_chains_run_in_litert_and_read_their_options():
    from flatbuffers import flexbuffers

    from edgepart.cost.kernels import FEATURES
    from edgepart.profiling.timing import fill_inputs, make_interpreter

    f = {n: k for k, n in enumerate(FEATURES)}
    seen: set[str] = set()
    cls = {"AudioSpectrogram": "spectrogram", "Mfcc": "mfcc"}
    # their own classes since sampler version 19; in 18's "fft" chains a fifth of the kernels
    # each (those specs still build, and their kernels get the new types)
    specs = [ChainSpec(seed=s, homogeneous=h, length=3) for s in range(8)
             for h in ("spectrogram", "mfcc")]  # fmt: skip
    specs += [ChainSpec(seed=s, homogeneous="fft", length=3, version=18) for s in range(12)]
    for spec in specs:
        seed = spec.seed
        m = build_chain(spec)
        sg = m.main
        names = [sg.op_name(i) for i in range(sg.num_ops)]
        if not {"Mfcc", "AudioSpectrogram"} & set(names):
            continue
        it = make_interpreter(write_model(m), "builtin", 1)
        fill_inputs(it, 0)
        it.invoke()
        for d in it.get_output_details():  # spectrogram magnitudes only: no NaN from a log
            assert np.isfinite(it.get_tensor(d["index"])).all(), (seed, names)
        k = decompose(m, "builtin")
        for i, name in enumerate(names):
            if name not in ("Mfcc", "AudioSpectrogram"):
                continue
            seen.add(name)
            row = k.features[k.op_kernel[i]]
            assert k.types[k.op_kernel[i]] == f"tfl.{cls[name]}"
            opts = flexbuffers.Loads(bytes(sg.op_custom_options[i]))
            bins = sg.tensor(int(sg.op_outputs.row(i)[0])).shape[-1]
            if name == "Mfcc":
                bins = sg.tensor(int(sg.op_inputs.row(i)[0])).shape[-1]
                assert row[f["opcode"]] == -3 and row[f["cin"]] == opts["filterbank_channel_count"]
                assert row[f["macs"]] == row[f["rows"]] * (
                    bins + opts["filterbank_channel_count"] * opts["dct_coefficient_count"]
                )
            else:
                n = 1 << (opts["window_size"] - 1).bit_length()
                assert row[f["opcode"]] == -2 and row[f["red"]] == n and bins == n // 2 + 1
    assert seen == {"Mfcc", "AudioSpectrogram"}
    # version 19's "fft" chains are real FFTs only
    for seed in range(12):
        sg = build_chain(ChainSpec(seed=seed, homogeneous="fft", length=3)).main
        names = {sg.op_name(i) for i in range(sg.num_ops)}
        assert "RFFT2D" in names and not names & {"Mfcc", "AudioSpectrogram"}, seed


def test_retyping_saved_measurements_restores_the_current_kernel_types(
    small_measurements, tmp_path, capsys
):
    import retype_measurements

    meas, path = small_measurements
    stale = load_measurements(path)
    c = next(c for c in stale.chains if len(c.kernels.get("xnnpack", [])) > 0)
    c.kernels["xnnpack"].types = ["xnn.stale"] * len(c.kernels["xnnpack"])
    stale.save(tmp_path / "stale.npz")
    assert retype_measurements.retype(str(tmp_path / "stale.npz"), str(tmp_path / "new.npz")) == 1
    back = load_measurements(tmp_path / "new.npz")
    for a, b in zip(meas.chains, back.chains, strict=True):
        assert a.stats == b.stats
        for ex in ("xnnpack", "builtin"):
            assert a.kernels[ex].types == b.kernels[ex].types
    # a file whose kernels no longer decompose the same way is refused, not rewritten
    c.kernels["xnnpack"].features = c.kernels["xnnpack"].features * 2.0
    stale.save(tmp_path / "changed.npz")
    with pytest.raises(SystemExit, match="measure again"):
        retype_measurements.retype(str(tmp_path / "changed.npz"), str(tmp_path / "x.npz"))
    assert not (tmp_path / "x.npz").exists()
    # stale geometry (rows, as a slice's rows were before they counted contiguous runs): only
    # --geometry rewrites it, back to exactly what the chains decompose to now; a change in
    # a kernel's work is refused either way
    geo = load_measurements(path)
    g = next(c for c in geo.chains if len(c.kernels.get("xnnpack", [])) > 0)
    g.kernels["xnnpack"].features[:, F["rows"]] += 1.0
    geo.save(tmp_path / "geo.npz")
    with pytest.raises(SystemExit, match="measure again"):
        retype_measurements.retype(str(tmp_path / "geo.npz"), str(tmp_path / "g0.npz"))
    assert retype_measurements.main(
        ["--geometry", str(tmp_path / "geo.npz"), str(tmp_path / "g1.npz")]
    ) == 0  # fmt: skip
    regeo = load_measurements(tmp_path / "g1.npz")
    for a, b in zip(meas.chains, regeo.chains, strict=True):
        for ex in ("xnnpack", "builtin"):
            assert np.array_equal(a.kernels[ex].features, b.kernels[ex].features)
    g.kernels["xnnpack"].features[:, F["in_bytes"]] += 1.0
    geo.save(tmp_path / "work.npz")
    with pytest.raises(SystemExit, match="kernels or their work changed"):
        retype_measurements.retype(
            str(tmp_path / "work.npz"), str(tmp_path / "g2.npz"), geometry=True
        )
    assert not (tmp_path / "g2.npz").exists()
    # a file that is not a measurements file: one line and exit status 2, nothing written
    bad = tmp_path / "bad.npz"
    bad.write_text("not a zip")
    assert retype_measurements.main([str(bad), str(tmp_path / "y.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an .npz archive" in err
    assert not (tmp_path / "y.npz").exists()


def test_two_threads_are_fitted_against_one_thread_and_refit_identically(tmp_path):
    """A configuration of two threads scales the one-thread models per kernel type (its
    report gives each type's scale and fixed cost), and refits byte for byte."""
    pytest.importorskip("sklearn")
    # every round kept: the fit is under test, not the filter (under CI's parallel tests the
    # canary can reject every round of two threads)
    cfg = MeasureConfig(configs=(("xnnpack", 1), ("xnnpack", 2)), seed=5, batch=8, rounds=3,
                        max_chains=16, canary_limit=math.inf)  # fmt: skip
    path = tmp_path / "m.npz"
    measure(cfg).save(path)
    outs = []
    for k in range(2):
        pred, reps = fit_host_predictor(load_measurements(path), family="gbt", seed=1, bags=1)
        pred.save(tmp_path / f"p{k}.json")
        outs.append((tmp_path / f"p{k}.json").read_bytes())
    assert outs[0] == outs[1]
    by = {r.config: r for r in reps}
    assert by["xnnpack_1t"].reference is None and not by["xnnpack_1t"].scales
    two = by["xnnpack_2t"]
    assert two.reference == "xnnpack_1t" and two.to_json()["reference"] == "xnnpack_1t"
    assert two.scales and all(c >= 0 and k >= 0 for c, k in two.scales.values())
    p = load_predictor(tmp_path / "p0.json")
    assert p.configs["xnnpack_2t"].extra["reference"] == "xnnpack_1t"
    assert "reference" not in p.configs["xnnpack_1t"].extra
    # kernels XNNPACK runs as one task cost on two threads what the one-thread model says
    assert p.configs["xnnpack_2t"].one_task_config == "xnnpack_1t"
    assert p.configs["xnnpack_1t"].one_task_config is None
    # with the widest one-row GEMM of one task measured here, per data type, and kept
    meas = load_measurements(path)
    widths = meas.host["gemm_task_outputs"]
    assert set(widths) == {"", "_q8", "_hy"}
    assert p.configs["xnnpack_2t"].gemm_outputs == {k: float(v) for k, v in widths.items()}
    one = two_split = 0
    for c in meas.chains:
        k = c.kernels["xnnpack"]
        single = one_task(k.types, k.features, widths)
        s1 = p.configs["xnnpack_1t"].kernel_seconds(k)[0]
        s2 = p.configs["xnnpack_2t"].kernel_seconds(k)[0]
        # the same models on a subset of the rows (a matrix product over fewer rows may
        # round the last bit differently)
        np.testing.assert_allclose(s2[single], s1[single], rtol=1e-12, atol=0)
        one += int(single.sum())
        two_split += int((s1[~single] != s2[~single]).sum())
    assert one > 0 and two_split > 0


def test_the_canary_filter_drops_preempted_rounds_not_a_machine_a_lucky_round_outran():
    """Wall-clock rounds are dropped when the canary ran over 1.25 times its undisturbed
    time: its recent 10th percentile, not its fastest round ever (one fast outlier rejected
    every later round of a calibration), and not rounds long past (the machine's speed
    drifts)."""
    from edgepart.profiling.calibrate import CANARY_WINDOW, canary_reference

    rng = np.random.default_rng(0)
    typical = list(400e-6 * (1 + 0.03 * rng.random(CANARY_WINDOW - 1)))
    lucky = [309e-6, *typical]
    ref = canary_reference(lucky)
    assert 400e-6 <= ref <= 404e-6
    kept = [v for v in typical if v <= 1.25 * ref]
    assert len(kept) == len(typical)  # min() kept none of them: 1.25 x 309 us < 400 us
    assert 1.25 * ref < 2 * 400e-6  # a round that lost half its time to another process
    # a machine that got 20% slower a minute ago is judged by its new speed
    drifted = typical + list(480e-6 * (1 + 0.03 * rng.random(CANARY_WINDOW)))
    assert canary_reference(drifted) >= 480e-6
    assert canary_reference([]) == 1.0


def test_chains_the_canary_dropped_are_named_as_the_reason_a_fit_is_refused(tmp_path):
    """A configuration left without chains because every round ran under interference is
    refused with that reason, not as a budget too short."""
    pytest.importorskip("sklearn")
    # a limit of zero rejects every round: two threads' wall samples are all dropped, while
    # one thread's samples (thread CPU time) are not filtered
    cfg = MeasureConfig(configs=(("xnnpack", 1), ("xnnpack", 2)), seed=5, batch=8, rounds=3,
                        max_chains=8, canary_limit=0.0)  # fmt: skip
    meas = measure(cfg)
    assert all(c.stats["xnnpack_2t"] is None for c in meas.chains)
    assert all(c.stats["xnnpack_1t"] is not None for c in meas.chains)
    assert all(b["canary_rounds_kept"] == 0 for b in meas.batches)
    with pytest.raises(PredictorError) as err:
        fit_host_predictor(meas, family="gbt", seed=1, bags=1)
    msg = str(err.value)
    assert msg.startswith("xnnpack_2t: 0 of 8 measured chains kept") and "quieter machine" in msg


def test_a_recheck_times_calibration_chains_again_and_scales_the_predictor_alone(
    small_measurements, tmp_path, capsys
):
    """``calibrate --host --recheck``: some of the calibration's own chains, timed again, give
    per configuration how fast the machine runs now against then; the predictor stores it and
    nothing fitted changes."""
    import shutil

    import edgepart
    from edgepart.profiling.recheck import probe_chains

    meas, path = small_measurements
    pred, _ = fit_host_predictor(meas, family="linear", seed=0)
    d = tmp_path / "host"
    d.mkdir()
    pred.save(d / "host.predictor.json")
    shutil.copy(path, d / "host.measurements.npz")
    fitted = (d / "host.predictor.json").read_bytes()
    # the chains: a fixed choice per seed among those measured on every configuration, with
    # their calibration times (no canary in these measurements: as measured)
    probes = probe_chains(meas, ["builtin_1t", "xnnpack_1t"], 10)
    assert len(probes) == 10 and probes == probe_chains(meas, ["builtin_1t", "xnnpack_1t"], 10)
    times = {round(s.p10_s, 15) for c in meas.chains for s in c.stats.values() if s is not None}
    assert all(round(v, 15) in times for _, then in probes for v in then.values())
    res = edgepart.recheck_host(d, chains=12)
    assert sorted(res.checks) == ["builtin_1t", "xnnpack_1t"]
    assert res.files == [d / "host.predictor.json"]
    back = load_predictor(d / "host.predictor.json")
    for name, c in res.checks.items():
        # the same machine minutes after it measured the chains: about as fast
        assert c.chains == 12 and 0.5 < c.q25 <= c.scale <= c.q75 < 2.0
        want = c.scale if c.applies else 1.0
        assert back.configs[name].latency_scale == pytest.approx(want, rel=1e-8)
        assert back.configs[name].extra["recheck"]["chains"] == 12
        assert back.configs[name].extra["recheck"]["applied"] is c.applies
        back.configs[name].latency_scale = 1.0
        del back.configs[name].extra["recheck"]
    assert back.dumps().encode() == fitted
    # the CLI: to another file, the original left as it was
    out = tmp_path / "scaled.json"
    argv = ["calibrate", "--host", "--recheck", "-o", str(d), "--recheck-chains", "8",
            "--predictor-out", str(out), "--no-progress"]  # fmt: skip
    before = (d / "host.predictor.json").read_bytes()
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.count("of the calibration's chains now take") == 2 and f"wrote {out}" in text
    checks = load_predictor(out).configs
    for line in [ln for ln in text.splitlines() if "chains now take" in ln]:
        applied = checks[line.split(":")[0]].extra["recheck"]["applied"]
        assert ("predictions scaled by" in line) is applied
        assert ("not applied" in line) is not applied
    unsteady = any(
        c.extra["recheck"]["q75"] > 1.10 * c.extra["recheck"]["q25"] for c in checks.values()
    )
    assert ("the machine was unsteady while re-checking" in text) == unsteady
    assert (d / "host.predictor.json").read_bytes() == before
    assert load_predictor(out).configs["xnnpack_1t"].extra["recheck"]["chains"] == 8


def test_recheck_errors_are_one_line(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    for argv, message in [
        (["-o", str(empty)], "host.predictor.json: cannot read: no such file"),
        (["-o", str(empty), "--recheck-chains", "3"], "--recheck-chains 3: need at least 8"),
        (["--fit-only", str(empty / "m.npz")], "give --recheck or --fit-only, not both"),
    ]:
        assert main(["calibrate", "--host", "--recheck", "--no-progress", *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert list(empty.iterdir()) == []


def test_a_recheck_applies_shifts_beyond_the_minute_to_minute_swing_measured_steadily(
    small_measurements,
):
    """A steady 0.85 or 1.12 is a shift: applied. 0.97 or 1.04 is the machine's swing from
    one minute to the next: recorded, not applied. An unsteady 1.12 moved while it was
    measured: not applied either."""
    from edgepart.profiling.recheck import MIN_SHIFT, Recheck, apply_recheck

    assert MIN_SHIFT == 0.05
    cases = [(0.85, 0.83, 0.87, True), (1.12, 1.10, 1.15, True), (0.97, 0.95, 0.99, False),
             (1.04, 1.02, 1.06, False), (1.12, 1.02, 1.20, False), (1.06, 1.04, 1.08, True),
             (0.94, 0.92, 0.96, True)]  # fmt: skip
    for scale, q25, q75, applied in cases:
        pred, _ = fit_host_predictor(small_measurements[0], family="linear", seed=0)
        chk = Recheck("xnnpack_1t", scale, 64, q25, q75)
        assert chk.applies is applied, scale
        assert chk.verdict.startswith("predictions scaled by" if applied else "not applied")
        if not applied:
            assert ("unsteady" in chk.verdict) is chk.unsteady
        apply_recheck(pred, {"xnnpack_1t": chk})
        cp = pred.configs["xnnpack_1t"]
        assert cp.latency_scale == (scale if applied else 1.0)
        assert cp.extra["recheck"] == {"scale": scale, "chains": 64, "q25": q25, "q75": q75,
                                       "applied": applied}  # fmt: skip


def test_a_scale_far_from_one_is_another_machine_and_nothing_is_written(
    small_measurements, tmp_path
):
    from edgepart.profiling.recheck import Recheck, apply_recheck

    pred, _ = fit_host_predictor(small_measurements[0], family="linear", seed=0)
    with pytest.raises(PredictorError, match=r"xnnpack_1t: .* run at 5\.00 times .* calibrate"):
        apply_recheck(pred, {"xnnpack_1t": Recheck("xnnpack_1t", 5.0, 64, 4.8, 5.2)})
