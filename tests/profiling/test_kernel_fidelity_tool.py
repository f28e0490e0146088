"""benchmarks/kernel_fidelity.py: the one-op models of its groups, how it judges a predictor on
their timings, and its refusal of bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import kernel_fidelity as kf  # noqa: E402  (benchmarks/ on sys.path)

from edgepart.cost.kernels import FEATURES, decompose  # noqa: E402
from edgepart.cost.predictor import (  # noqa: E402
    BASIS,
    ConfigPredictor,
    KernelModel,
    Predictor,
)
from edgepart.profiling.timing import make_interpreter  # noqa: E402
from edgepart.tflite.reader import read_model_bytes  # noqa: E402

F = {n: k for k, n in enumerate(FEATURES)}


def test_every_group_is_one_kernel_of_its_class_per_model():
    want = {"conv1x1": "xnn.conv", "stem": "xnn.conv", "dw_aligned": "xnn.dwconv",
            "dw_unaligned": "xnn.dwconv", "dw_window": "xnn.dwconv"}  # fmt: skip
    assert set(want) == set(kf.GROUPS)
    for group, make in kf.GROUPS.items():
        items = dict(make())
        assert len(items) >= 20, group
        for name, content in items.items():
            k = decompose(read_model_bytes(content), "xnnpack")
            assert k.types == [want[group]], (group, name)
            f = k.features[0]
            if group == "dw_aligned":
                assert f[F["cout"]] % 8 == 0 and (f[F["kh"]], f[F["kw"]]) == (3, 3)
            elif group == "dw_unaligned":
                assert f[F["cout"]] % 8 != 0 and (f[F["kh"]], f[F["kw"]]) == (3, 3)
            elif group == "dw_window":
                assert f[F["kh"]] in (5, 7)
            elif group == "conv1x1":
                assert f[F["kh"]] == 1
            else:
                assert f[F["kh"]] == 3 and f[F["cin"]] <= 16
    # the unaligned counts are the aligned ones moved by 1 to 5 channels, nothing else changed
    for a, u in zip(dict(kf.GROUPS["dw_aligned"]()), dict(kf.GROUPS["dw_unaligned"]()),
                    strict=True):  # fmt: skip
        (ha, ca, sa), (hu, cu, su) = (a.split("_"), u.split("_"))
        assert (ha, sa) == (hu, su) and 1 <= abs(int(ca[1:]) - int(cu[1:])) <= 5


@pytest.mark.parametrize("group", sorted(kf.GROUPS))
def test_litert_runs_a_model_of_every_group(group):
    _, content = next(iter(kf.GROUPS[group]()))
    it = make_interpreter(content, "xnnpack", 1)
    inp = it.get_input_details()[0]
    it.set_tensor(inp["index"], np.ones(inp["shape"], np.float32))
    it.invoke()
    out = it.get_tensor(it.get_output_details()[0]["index"])
    assert np.isfinite(out).all() and out.max() <= 6.0  # RELU6 fused


def _predictor() -> Predictor:
    coef = np.zeros(len(BASIS))
    coef[0] = 1e-6  # 1 us per kernel
    coef[1] = 1e-5  # 10 us per million MACs
    km = KernelModel("xnn.conv", coef)
    cp = ConfigPredictor("xnnpack_1t", "xnnpack", 1, 5e-7, {"xnnpack": 2e-7}, {"xnn.conv": km})
    return Predictor("test", "measured", "unit test", {"xnnpack_1t": cp})


def test_judging_compares_kernel_times_without_the_fixed_costs():
    pred = _predictor()
    cp = pred.configs["xnnpack_1t"]
    items = dict(kf.GROUPS["conv1x1"]())
    names = sorted(items)[:6]
    contents = {"conv1x1": {n: items[n] for n in names}}
    kernel_s = {n: cp.model_seconds(decompose(read_model_bytes(items[n]), "xnnpack")).kernels_s
                for n in names}  # fmt: skip
    # measured: fixed costs (0.7 us) plus the kernel at 1.25 times its prediction; one piece
    # not timed, one whose kernel is under a microsecond
    measured: dict[str, float | None] = {
        f"conv1x1/{n}": 7e-7 + 1.25 * kernel_s[n] for n in names[:4]
    }
    measured[f"conv1x1/{names[4]}"] = None
    measured[f"conv1x1/{names[5]}"] = 7e-7 + 5e-7
    got = kf.judge(pred, "xnnpack_1t", contents, measured)["conv1x1"]
    assert got["n"] == 4
    assert got["median"] == pytest.approx(1 / 1.25 - 1)
    assert got["median_abs"] == pytest.approx(0.2)
    assert got["within_10"] == 0.0
    assert got["sum_ratio"] == pytest.approx(1 / 1.25)
    # no piece timed: the group is left out
    assert kf.judge(pred, "xnnpack_1t", contents, {}) == {}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH / "kernel_fidelity.py"), *args],
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def test_bad_input_is_one_line_and_status_2(tmp_path):
    pred = tmp_path / "p.json"
    _predictor().save(pred)
    bad = tmp_path / "timings.json"
    bad.write_text("[1, 2")
    r = _run("--predictor", str(pred), "--groups", "dw_window", "--timings", str(bad))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "--timings" in r.stderr
    r = _run("--predictor", str(pred), "--groups", "dw_windows")
    assert r.returncode == 2 and "unknown dw_windows" in r.stderr
    r = _run("--predictor", str(tmp_path / "missing.json"), "--groups", "dw_window")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_stored_timings_are_judged_again(tmp_path):
    """``--timings`` reads what ``--json`` wrote: the same figures without measuring."""
    pred = tmp_path / "p.json"
    _predictor().save(pred)
    items = dict(kf.GROUPS["conv1x1"]())
    timed = {"xnnpack_1t": {f"conv1x1/{n}": 1e-3 for n in items}}
    path = tmp_path / "t.json"
    import json

    path.write_text(json.dumps(timed))
    r = _run("--predictor", str(pred), "--groups", "conv1x1", "--timings", str(path))
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.strip().startswith("conv1x1"))
    assert f"n={len(items):4d}" in line


def test_every_op_of_a_model_is_cut_out_alone(tmp_path):
    """``--models``: each op as a model of its own, named by its index, LiteRT-runnable."""
    from edgepart.ir.builder import ModelBuilder
    from edgepart.ir.dtypes import DType
    from edgepart.tflite.writer import write_model

    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 16))
    w = g.constant("w", np.full((8, 16), 0.1, np.float32))
    y = g.tensor("y", DType.FLOAT32, (1, 8))
    g.op("FULLY_CONNECTED", [x, w, -1], [y])
    t = g.tensor("t", DType.FLOAT32, (1, 8))
    g.op("TANH", [y], [t])
    g.output(t)
    mb.add_signature("serving_default", 0, [("x", x)], [("t", t)])
    path = tmp_path / "m.tflite"
    path.write_bytes(write_model(mb.build()))
    ops = dict(kf.model_ops(path))
    assert sorted(ops) == ["op000", "op001"]
    for content in ops.values():
        m = read_model_bytes(content)
        assert m.main.num_ops == 1
        make_interpreter(content, "builtin", 1).invoke()
    got = kf.pieces(["dw_window"], {"m": path})
    assert sorted(got) == ["dw_window", "ops:m"] and sorted(got["ops:m"]) == ["op000", "op001"]
