"""benchmarks/fidelity.py's repeatability figure: each run of a model judged against the median
of the other runs, the ceiling a predictor judged on those measurements can reach."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import fidelity  # noqa: E402  (benchmarks/ on sys.path)


def test_each_run_is_judged_against_the_median_of_the_others() -> None:
    values = {
        ("a", "x"): {0: 1.0, 1: 1.0, 2: 1.2},  # errors 1/11, 1/11, 0.2
        ("b", "x"): {0: 2.0, 1: 2.0},  # errors 0, 0
        ("a", "y"): {0: 1.0, 1: 1.04, 2: 1.5},  # 1/1.27-1, 1.04/1.25-1, 1.5/1.02-1
        ("c", "y"): {0: 3.0},  # one run: nothing to compare
    }
    rep = fidelity.repeatability(values)
    assert sorted(rep) == ["x", "y"]
    x, y = rep["x"], rep["y"]
    assert x["n"] == 5 and y["n"] == 3
    assert x["within_5"] == pytest.approx(2 / 5) and x["within_10"] == pytest.approx(4 / 5)
    assert x["median"] == pytest.approx(1 / 11)
    errs = sorted([abs(1.0 / 1.27 - 1), abs(1.04 / 1.25 - 1), abs(1.5 / 1.02 - 1)])
    assert y["median"] == pytest.approx(errs[1])
    assert y["within_10"] == 0.0


def test_identical_runs_agree_exactly() -> None:
    rep = fidelity.repeatability({("m", "c"): {0: 5e-6, 1: 5e-6, 2: 5e-6}})["c"]
    assert rep == {"n": 3, "within_5": 1.0, "within_10": 1.0, "median": 0.0}


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--rounds", "2"], "--rounds 2: need at least 3 samples"),
        (["--runs", "0"], "--runs 0: need at least 1"),
        (["--timings", "t.json", "--probe", "m.npz"], "--timings judges stored timings"),
    ],
)
def test_too_few_samples_or_runs_are_refused_before_any_timing(
    extra: list[str], says: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["fidelity.py", "--mode", "predictor", "--predictor", "p.json", *extra]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exc:
        fidelity.main()
    assert exc.value.code == 2
    assert says in capsys.readouterr().err


def test_an_unreadable_predictor_is_one_line_and_status_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "host.predictor.json"
    bad.write_text("{not json")
    monkeypatch.setattr(
        sys, "argv", ["fidelity.py", "--mode", "predictor", "--predictor", str(bad)]
    )
    assert fidelity.main() == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"fidelity: {bad}") and "Traceback" not in err[0]


def test_the_spread_takes_out_the_common_bias_and_nothing_else() -> None:
    """Every model 20% over: a bias of +20% and no spread. One model 40% over among them: it
    is 1.4/1.2 = +16.7% off the bias, outside 10%."""
    same = fidelity.spread([0.2] * 5)
    assert same["bias"] == pytest.approx(0.2) and same["mad"] == pytest.approx(0.0)
    assert same["within_10"] == 1.0
    one = fidelity.spread([0.2, 0.2, 0.2, 0.4, -0.1])
    assert one["bias"] == pytest.approx(0.2)
    assert one["within_10"] == pytest.approx(3 / 5)
    assert one["mad"] == pytest.approx(0.0)


def test_stored_timings_are_judged_with_the_new_predictions(tmp_path: Path) -> None:
    """--timings: each stored timing keeps its measurement and gets this run's prediction;
    a timing of a model or configuration the predictor does not predict is left out."""
    runs = [
        {"run": 0, "model": "a", "config": "xnnpack_1t", "meas_s": 2e-3, "wall_s": 2.5e-3,
         "pred_s": 9.0, "err": 9.0},
        {"run": 1, "model": "a", "config": "xnnpack_1t", "meas_s": 4e-3, "wall_s": None,
         "pred_s": 9.0, "err": 9.0},
        {"run": 0, "model": "b", "config": "builtin_1t", "meas_s": 1e-3, "wall_s": 1e-3},
    ]  # fmt: skip
    f = tmp_path / "earlier.json"
    f.write_text(json.dumps({"runs": runs, "medians": []}))
    rows = fidelity._rejudged(str(f), {("a", "xnnpack_1t"): 3e-3})
    assert [(r["run"], r["pred_s"]) for r in rows] == [(0, 3e-3), (1, 3e-3)]
    assert rows[0]["err"] == pytest.approx(0.5) and rows[1]["err"] == pytest.approx(-0.25)
    assert rows[0]["wall_err"] == pytest.approx(0.2) and rows[1]["wall_err"] is None
    assert rows[0]["meas_s"] == 2e-3


@pytest.mark.parametrize("content", [None, "{not json", '{"medians": []}', '{"runs": [{"x": 1}]}'])
def test_unusable_stored_timings_are_one_line_and_status_2(
    content: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "earlier.json"
    if content is not None:
        f.write_text(content)
    with pytest.raises(SystemExit) as exc:
        fidelity._rejudged(str(f), {})
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"fidelity: --timings {f}: ")


def test_several_stored_sets_are_judged_each_and_their_repeated_misses_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--timings A,B,C: each set's medians over its own runs, the share within 10% set by
    set, and the models off by more than 10% in at least half of the sets (with the sign
    they kept); a model off in one set of three is the machine's, not listed."""
    meas = {  # model: measured seconds in sets A, B, C (two runs each, the median in between)
        "steady": (1.0, 1.0, 1.0),  # predicted 1.2: +20% in every set
        "swings": (1.0, 0.8, 1.25),  # predicted 1.0: 0, +25%, -20%
        "once": (1.0, 1.0, 0.8),  # predicted 1.0: +25% in one set only
        "fine": (1.0, 1.02, 0.98),
    }
    paths = []
    for k in range(3):
        runs = [
            {"run": r, "model": m, "config": "xnnpack_1t", "meas_s": v[k] * (1 + d), "wall_s": None}
            for m, v in meas.items()
            for r, d in ((0, -0.01), (1, 0.01))
        ]
        f = tmp_path / f"set{k}.json"
        f.write_text(json.dumps({"runs": runs, "medians": []}))
        paths.append(str(f))
    preds = {(m, "xnnpack_1t"): 1.2 if m == "steady" else 1.0 for m in meas}
    out = tmp_path / "across.json"
    configs = [("xnnpack_1t", "xnnpack", 1), ("builtin_1t", "builtin", 1)]
    assert fidelity._across_sets(paths, preds, {}, configs, str(out)) == 0
    text = capsys.readouterr().out
    assert "xnnpack_1t   within 10% set by set: 75.0% / 50.0% / 25.0%" in text
    assert "off by more than 10% in at least half of the sets: 2" in text
    listed = [ln.split()[0] for ln in text.splitlines() if ln.startswith("   ")]
    assert listed == ["steady", "swings"]
    steady = next(ln for ln in text.splitlines() if ln.startswith("   steady"))
    assert steady.split()[1:4] == ["+20.0%", "+20.0%", "+20.0%"] and "(one sign)" in steady
    assert "(both)" in next(ln for ln in text.splitlines() if ln.startswith("   swings"))
    assert "builtin_1t" not in text  # no timing of it in any set
    doc = json.loads(out.read_text())
    assert [s["timings"] for s in doc["sets"]] == paths
    assert {r["model"] for r in doc["sets"][2]["medians"]} == set(meas)
    swing = next(r for r in doc["sets"][1]["medians"] if r["model"] == "swings")
    assert swing["meas_s"] == pytest.approx(0.8) and swing["err"] == pytest.approx(0.25)


def test_a_bad_set_among_several_is_one_line_before_any_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"runs": [{"run": 0, "model": "a", "config": "xnnpack_1t",
                                          "meas_s": 1e-3, "wall_s": None}]}))  # fmt: skip
    bad = tmp_path / "bad.json"
    bad.write_text('{"runs": [{"x": 1}]}')
    with pytest.raises(SystemExit) as exc:
        fidelity._across_sets(
            [str(good), str(bad)],
            {("a", "xnnpack_1t"): 1e-3},
            {},
            [("xnnpack_1t", "xnnpack", 1)],
            str(tmp_path / "out.json"),
        )
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and not (tmp_path / "out.json").exists()
    assert err.count("\n") == 1 and err.startswith(f"fidelity: --timings {bad}: ")
