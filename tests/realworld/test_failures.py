"""Regression tests for the failures issue 19 found on real models (its problems 2-4 and 6-10;
problem 1 is ``test_edgetpu.py``, problem 5 ``test_runtime_memory.py``, the shapes of problem 2
also ``tests/ir/test_shapes.py``).

Models come from the real-model corpus (``real_models`` fixture) and the seeded corpus; the
CLI runs in a child process so that exit codes and stderr are what a user sees.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import edgepart
from edgepart.cost.plot import plot_points
from edgepart.cost.table import load_table
from edgepart.errors import BundleError, UsageError
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.tflite.writer import save_model

REPO = Path(__file__).resolve().parents[2]


def cli(
    *args: str, umask: int | None = None, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m edgepart`` from this checkout (optionally under another umask)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))

    def pre() -> None:
        if umask is not None:
            os.umask(umask)

    return subprocess.run(
        [sys.executable, "-m", "edgepart", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=cwd,
        preexec_fn=pre,
    )


def one_line_error(proc: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The run failed with ``code`` and exactly one ``edgepart: error:`` line, no traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("edgepart: error:")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def quiet(fn: Any, *args: Any, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


# ---------------------------------------------------------------- 2: dynamic shapes


def test_a_dynamic_audio_model_gets_a_runnable_bundle_at_the_size_given(
    real_models: dict[str, Path], tmp_path: Path
) -> None:
    """openWakeWord's melspectrogram takes [-1, -1] audio; LiteRT runs it after a resize."""
    m = real_models["oww_melspectrogram"]
    out = tmp_path / "mel"
    proc = cli(
        "partition", str(m), "--profile", "pixel8", "-o", str(out), "--input-shape", "input=1,1760"
    )
    assert proc.returncode == 0, proc.stderr
    plan = json.loads((out / "plan.json").read_text())
    (inp,) = plan["inputs"]
    assert inp["shape"] == [1, 1760] and inp["shape_signature"] == [-1, -1]
    proc = cli("run", str(out), "--random", "--verify")
    assert proc.returncode == 0, proc.stderr
    assert "bit-identical" in proc.stdout
    # without a size, the stored [1, 1] does not run: one line naming the fix
    line = one_line_error(
        cli("partition", str(m), "--profile", "pixel8", "-o", str(tmp_path / "x"))
    )
    assert "--input-shape input=N,N" in line and not (tmp_path / "x").exists()


def test_computed_shapes_are_profiled_at_their_run_time_size(
    real_models: dict[str, Path], tmp_path: Path
) -> None:
    """The audio model computes [1, 43, 1024] frames from its input; profiling timed them at
    the stored [1, 1, 1024] and failed (random data in computed slice bounds)."""
    out = tmp_path / "t.json"
    proc = cli(
        "profile",
        str(real_models["star_trek_activation_phrase"]),
        "--no-progress",
        "--budget",
        "0.002",
        "--no-fusion",
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert ", 0 failed," in proc.stdout
    # it printed "inf ms (+inf%)" and exited 0
    assert not re.search(r"\binf\b|\bnan\b", proc.stdout + out.read_text()), proc.stdout
    table = load_table(out)
    assert table.processors  # a valid latency table


# ---------------------------------------------------------------- 3: one-line errors


# a sparse fp16 model (DENSIFY) and the audio model (RFFT2D, computed shapes)
@pytest.mark.parametrize("name", ["mp_pose_detection", "star_trek_activation_phrase"])
def test_profile_o_writes_a_valid_table(
    real_models: dict[str, Path], tmp_path: Path, name: str
) -> None:
    out = tmp_path / "t.json"
    proc = cli(
        "profile",
        str(real_models[name]),
        "--no-progress",
        "--budget",
        "0.002",
        "--no-fusion",
        "-o",
        str(out),
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    text = out.read_text()
    assert not re.search(r"\b(-?Infinity|NaN)\b", text)  # strict JSON
    doc = json.loads(text)
    assert doc["processors"]


def test_a_table_without_a_prediction_saves(tmp_path: Path) -> None:
    """A profile whose units partly failed predicts nothing; the table still writes (it wrote
    ``inf`` and raised in json.dumps)."""
    from edgepart.cost.table import LatencyTable, ProcessorTable, Stats

    pt = ProcessorTable("host_xnnpack_1t")
    s = Stats(median_s=1e-3, p10_s=1e-3, p90_s=1e-3, min_s=1e-3, count=5)
    pt.models.append({"name": "m", "ops": 3, "stats": s.to_json(), "predicted_s": None})
    path = tmp_path / "t.json"
    LatencyTable({pt.name: pt}).save(path)
    assert load_table(path).processors["host_xnnpack_1t"].models[0]["predicted_s"] is None


def test_run_on_a_bundle_with_mediapipe_custom_ops_is_one_line(
    real_models: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "b"
    quiet(edgepart.compile, real_models["mp_face_landmark_with_attention"], "pixel8").save(out)
    with pytest.raises(BundleError, match="no kernel for the custom op Landmarks2TransformMatrix"):
        quiet(edgepart.run_bundle, out, random=True)
    line = one_line_error(cli("run", str(out), "--random", "--verify"))
    assert "Landmarks2TransformMatrix" in line


def test_run_on_a_bundle_at_sizes_the_model_cannot_run_is_one_line(
    real_models: dict[str, Path], tmp_path: Path
) -> None:
    """A bundle of the melspectrogram front end at its stored [1, 1] (written without the
    partitioner's shape check): LiteRT's XNNPACK cannot reshape it; that was a traceback."""
    from edgepart.bundle import PartitionSpec, write_bundle

    src = real_models["oww_melspectrogram"]
    out = tmp_path / "b"
    n = edgepart.read_model(src).main.num_ops
    write_bundle(out, src, [PartitionSpec(range(n))])
    with pytest.raises(BundleError, match="LiteRT cannot prepare it"):
        quiet(edgepart.run_bundle, out, random=True)
    line = one_line_error(cli("run", str(out), "--random", "--verify"))
    assert "--input-shape" in line


@pytest.mark.parametrize(
    "command",
    [
        ["partition", "{m}", "--profile", "pixel8", "-o", "{f}/bundle"],
        ["roofline", "{m}", "--profile", "pixel8", "-o", "{f}/r.png"],
        ["profile", "{m}", "--no-progress", "--budget", "0.001", "--no-fusion", "-o", "{f}/t.json"],
        ["plan-memory", "{m}", "-o", "{f}/plan.json"],
    ],
    ids=["partition", "roofline", "profile", "plan-memory"],
)
@pytest.mark.parametrize("below", ["{f}", "{f}/deeper"], ids=["child", "grandchild"])
def test_an_output_below_a_file_is_one_line(
    corpus: dict[str, Path], tmp_path: Path, command: list[str], below: str
) -> None:
    """``-o`` under a file was NotADirectoryError (one level down) or FileExistsError (a
    missing folder between the file and the output)."""
    f = tmp_path / "a_file"
    f.write_text("keep me")
    args = [a.replace("{f}", below).format(m=corpus["mobilenet_v2"], f=f) for a in command]
    line = one_line_error(cli(*args))
    assert "is a file, not a directory" in line and str(f) in line
    assert f.read_text() == "keep me"


def test_a_bundle_onto_an_existing_file_is_one_line(
    corpus: dict[str, Path], tmp_path: Path
) -> None:
    f = tmp_path / "a_file"
    f.write_text("keep me")
    line = one_line_error(
        cli("partition", str(corpus["cond"]), "--profile", "pixel8", "-o", str(f))
    )
    assert "not an edgepart bundle" in line and "choose a new output" in line
    assert f.read_text() == "keep me"


# ---------------------------------------------------------------- 4: IF model with an empty shape


@pytest.mark.parametrize("objective", ["latency", "throughput"])
def test_the_if_wake_word_model_partitions_and_verifies(
    real_models: dict[str, Path], tmp_path: Path, objective: str
) -> None:
    """oww_hey_jarvis reshapes to a scalar with an empty shape constant (an empty data vector):
    it was taken for an activation nothing produces, and plan.json refused the bundle."""
    for profile in ("pixel8", "coral_devboard", "x86_host"):
        out = tmp_path / f"{profile}-{objective}"
        quiet(edgepart.compile, real_models["oww_hey_jarvis"], profile, objective=objective).save(
            out
        )
        run = quiet(edgepart.run_bundle, out, random=True, verify=True)
        assert run.diffs and all(d.identical for d in run.diffs)


# ---------------------------------------------------------------- 6: sparse models


def test_sparse_fp16_models_profile_every_op(real_models: dict[str, Path]) -> None:
    """DENSIFY then DEQUANTIZE of a sparse fp16 weight is one decompression chain, timed with
    the op that reads it (each half was timed alone, and 46 units failed)."""
    res = quiet(
        edgepart.profile_host,
        real_models["mp_face_detection_full_range_sparse"],
        budget=0.001,
        fusion=False,
    )
    failed = [u for u in res.units if u.stats is None]
    assert not failed, [u.error for u in failed[:3]]
    names = {res.table.processors[res.processor].entries[u.key].kind for u in res.units}
    assert names


# ---------------------------------------------------------------- 7: --latency-table mapping


def test_a_latency_table_that_backs_no_processor_says_what_to_pass(
    corpus: dict[str, Path], tmp_path: Path
) -> None:
    table = tmp_path / "t.json"
    quiet(edgepart.profile_host, corpus["mobilenet_v2"], budget=0.001, fusion=False, output=table)
    with pytest.raises(UsageError, match=r"--table-for cpu=host_xnnpack_1t"):
        edgepart.place(corpus["mobilenet_v2"], "pixel8", latency_tables=[table])
    with pytest.raises(UsageError, match=r"--table-for cpu=host_xnnpack_1t"):
        edgepart.roofline(corpus["mobilenet_v2"], "pixel8", latency_tables=[table])
    mapped = edgepart.roofline(
        corpus["mobilenet_v2"],
        "pixel8",
        latency_tables=[table],
        table_for={"cpu": "host_xnnpack_1t"},
    )
    assert mapped.totals["cpu"]["sources"]["measured"] > 0
    line = one_line_error(
        cli(
            "partition",
            str(corpus["mobilenet_v2"]),
            "--profile",
            "pixel8",
            "--latency-table",
            str(table),
        )
    )
    assert "--table-for cpu=host_xnnpack_1t" in line


# ---------------------------------------------------------------- 8: run --verify exit status


def test_run_verify_exits_1_when_outputs_differ(corpus: dict[str, Path], tmp_path: Path) -> None:
    from edgepart.bundle import PartitionSpec, write_bundle

    src = corpus["mobilenet_v2"]
    out = tmp_path / "b"
    # one partition on TFLite's builtin kernels, verified against the source under XNNPACK:
    # a real float difference (other summation orders)
    n = edgepart.read_model(src).main.num_ops
    write_bundle(out, src, [PartitionSpec(range(n), delegate="cpu_builtin")])
    run = quiet(edgepart.run_bundle, out, random=True, verify=True)
    assert run.diffs and not all(d.identical for d in run.diffs)
    proc = cli("run", str(out), "--random", "--verify", "--rtol", "0")
    assert proc.returncode == 1, proc.stderr
    assert "verify failed" in proc.stderr and "Traceback" not in proc.stderr
    # within the default tolerance the same run passes
    assert cli("run", str(out), "--random", "--verify").returncode == 0
    # bad input stays status 2
    one_line_error(cli("run", str(tmp_path / "missing"), "--random", "--verify"))


# ---------------------------------------------------------------- 9: umask, random inputs


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_outputs_follow_the_umask(corpus: dict[str, Path], tmp_path: Path, mask: int) -> None:
    out = tmp_path / "b"
    proc = cli(
        "partition", str(corpus["mobilenet_v2"]), "--profile", "pixel8", "-o", str(out), umask=mask
    )
    assert proc.returncode == 0, proc.stderr
    table = tmp_path / "r.png"
    assert (
        cli(
            "roofline",
            str(corpus["mobilenet_v2"]),
            "--profile",
            "pixel8",
            "-o",
            str(table),
            umask=mask,
        ).returncode
        == 0
    )
    for path in [out, out / "partitions", *out.rglob("*"), table]:
        mode = stat.S_IMODE(path.stat().st_mode)
        want = (0o777 if path.is_dir() else 0o666) & ~mask
        assert mode == want, (path, oct(mode), oct(want))


def _embedding_model(path: Path, vocab: int = 50) -> None:
    mb = ModelBuilder()
    g = mb.subgraph("main")
    ids = g.input("ids", DType.INT32, (1, 12))
    table = g.constant("table", np.arange(vocab * 8, dtype=np.float32).reshape(vocab, 8))
    emb = g.tensor("emb", DType.FLOAT32, (1, 12, 8))
    y = g.tensor("y", DType.FLOAT32, (1, 12, 8))
    g.op("GATHER", [table, ids], [emb], options={"axis": 0, "batch_dims": 0})
    g.op("RELU", [emb], [y])
    g.output(y)
    mb.add_signature("serving_default", 0, [("ids", ids)], [("y", y)])
    save_model(mb.build(), path)


def test_random_inputs_stay_in_an_embedding_vocabulary(tmp_path: Path) -> None:
    src = tmp_path / "text.tflite"
    _embedding_model(src, vocab=50)
    out = tmp_path / "b"
    quiet(edgepart.compile, src, "x86_host").save(out)
    for seed in range(5):
        run = quiet(edgepart.run_bundle, out, random=True, seed=seed, verify=True)
        (ids,) = run.inputs
        assert int(ids.min()) >= 0 and int(ids.max()) < 50
        assert run.diffs and all(d.identical for d in run.diffs)


# ---------------------------------------------------------------- 10: misleading output


def test_roofline_draws_the_slowest_op(real_models: dict[str, Path]) -> None:
    """The slowest op of the pose landmark model is a PAD: no FLOPs, so no intensity on a log
    axis, and it was left out of the plot."""
    r = quiet(edgepart.roofline, real_models["mp_pose_landmark_full"], "pixel8")
    gc = r.costs
    for p in range(len(gc.processors)):
        slowest = int(np.argmax(np.where(r.supported[:, p], gc.latency[:, p], -1)))
        ops, x, y = plot_points(gc, p, 1e-3, r.supported)
        assert slowest in ops.tolist()
        assert np.all(np.isfinite(x)) and np.all(y > 0)


def test_roofline_costs_a_processor_only_on_the_ops_it_runs(corpus: dict[str, Path]) -> None:
    """A float model on the Coral board: the Edge TPU refuses every op, so it has no
    whole-model time (it printed one, costing ops it cannot run)."""
    r = quiet(edgepart.roofline, corpus["mobilenet_v2"], "coral_devboard")
    n = len(r.rows)
    assert r.totals["edgetpu"]["latency_s"] is None and r.totals["edgetpu"]["ops"] == 0
    assert all(not row["procs"]["edgetpu"]["supported"] for row in r.rows)
    assert all(row["procs"]["edgetpu"]["time_s"] is None for row in r.rows)
    assert r.totals["cpu"]["ops"] == n and r.totals["cpu"]["latency_s"] > 0
    text = r.format_text()
    assert f"edgetpu: runs none of the {n} ops" in text
    assert not re.search(r"edgetpu: whole model", text)
    # nothing of the TPU is drawn either
    ops, _, _ = plot_points(r.costs, r.processors.index("edgetpu"), 1e-3, r.supported)
    assert len(ops) == 0


def test_benchmark_prints_measurements_and_predictions_apart(
    corpus: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "b"
    quiet(edgepart.compile, corpus["mobilenet_v2"], "pixel8").save(out)
    proc = cli("run", str(out), "--random", "--benchmark", "--repeat", "3", "--warmup", "1")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    measured = next(i for i, ln in enumerate(lines) if ln.startswith("measured on this machine"))
    predicted = next(
        i for i, ln in enumerate(lines) if ln.startswith("predicted by the cost model")
    )
    assert predicted > measured
    assert "not comparable" in lines[predicted] and "pixel8" in lines[predicted]
    assert not any("predicted" in ln for ln in lines[measured:predicted])


def test_the_throughput_objective_shows_the_baselines_period(real_models: dict[str, Path]) -> None:
    plan = quiet(edgepart.place, real_models["oww_alexa"], "pixel8", objective="throughput")
    line = next(ln for ln in plan.report().splitlines() if ln.startswith("predicted latency"))
    assert re.search(r"TFLite default \(.*\): period \S+ \S+, latency", line), line


def test_tiny_models_never_print_zero_milliseconds(real_models: dict[str, Path]) -> None:
    plan = quiet(edgepart.place, real_models["oww_alexa"], "pixel8")
    text = plan.report()
    assert "0.000 ms" not in text and ("µs" in text)
    r = quiet(edgepart.roofline, real_models["oww_alexa"], "pixel8")
    assert "0.000 ms" not in r.format_text()
