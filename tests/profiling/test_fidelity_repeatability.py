"""benchmarks/fidelity.py's repeatability figure: each run of a model judged against the median
of the other runs, the ceiling a predictor judged on those measurements can reach."""

from __future__ import annotations

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
