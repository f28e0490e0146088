"""Predictor files and fits: format, validation, tree evaluation, sum fits, determinism."""

from __future__ import annotations

import json

import numpy as np
import pytest

from edgepart.cost.kernels import FEATURES, Kernels
from edgepart.cost.predictor import (
    BASIS,
    ConfigPredictor,
    KernelModel,
    Predictor,
    PredictorError,
    basis_matrix,
    load_predictor,
    predictor_from_dict,
    streams_weights,
)
from edgepart.cost.predictor_fit import chain_data, cross_validate, fit_config
from edgepart.errors import UsageError

F = {n: k for k, n in enumerate(FEATURES)}


def kernels(types: list[str], feats: np.ndarray, partitions: dict[str, int] | None = None):
    return Kernels(
        types=types,
        features=np.asarray(feats, np.float64),
        ops=[(i,) for i in range(len(types))],
        op_kernel=np.arange(len(types)),
        repeat=np.ones(len(types)),
        partitions=partitions or {},
    )


def feat(macs: float = 0.0, nbytes: float = 0.0, cout: float = 16.0, h: float = 8) -> np.ndarray:
    f = np.zeros(len(FEATURES))
    f[F["macs"]] = macs
    f[F["in_bytes"]] = nbytes
    f[F["cout"]] = cout
    f[F["h"]] = h
    return f


def simple_predictor() -> Predictor:
    coef = np.zeros(len(BASIS))
    coef[0] = 1e-6  # 1 us per kernel
    coef[1] = 1e-5  # 10 us per million MACs
    km = KernelModel("xnn.conv", coef, cv={"q10": -0.05, "q90": 0.08})
    cp = ConfigPredictor("xnnpack_1t", "xnnpack", 1, 5e-7, {"xnnpack": 2e-7}, {"xnn.conv": km},
                         cv={"q10": -0.1, "q90": 0.1})  # fmt: skip
    return Predictor("test device", "measured", "unit test", {"xnnpack_1t": cp})


def test_model_seconds_sums_kernels_invocation_and_nodes():
    p = simple_predictor()
    k = kernels(["xnn.conv", "xnn.conv"], [feat(2e6), feat(0)], {"xnnpack": 1})
    e = p.configs["xnnpack_1t"].model_seconds(k)
    assert e.seconds == pytest.approx(5e-7 + 2e-7 + (1e-6 + 2e-5) + 1e-6)
    assert e.kernels == 2 and e.by_type["xnn.conv"] == pytest.approx(22e-6)
    # the band is the conv's cross-validated band around the kernel time
    assert e.low_s == pytest.approx(7e-7 + 22e-6 / 1.1) and e.high_s > e.seconds


def test_unknown_types_fall_back_to_their_class():
    p = simple_predictor()
    k = kernels(["xnn.conv_q8", "tfl.conv"], [feat(1e6), feat(1e6)])
    e = p.configs["xnnpack_1t"].model_seconds(k)
    assert e.fallbacks == {"xnn.conv_q8": "xnn.conv", "tfl.conv": "xnn.conv"}
    k2 = kernels(["xnn.softmax"], [feat()])
    with pytest.raises(PredictorError, match=r"no model for kernel type 'xnn\.softmax'"):
        p.configs["xnnpack_1t"].model_seconds(k2)


def test_a_type_in_a_context_uses_its_own_model_else_the_plain_type():
    p = simple_predictor()
    cfg = p.configs["xnnpack_1t"]
    k = kernels(["xnn.conv@qd8"], [feat(1e6)])
    assert cfg.model_seconds(k).fallbacks == {"xnn.conv@qd8": "xnn.conv"}
    coef = np.zeros(len(BASIS))
    coef[0] = 3e-6
    cfg.kernels["xnn.conv@qd8"] = KernelModel("xnn.conv@qd8", coef, cv={"q10": 0, "q90": 0})
    e = cfg.model_seconds(k)
    assert e.fallbacks == {} and e.by_type["xnn.conv@qd8"] == pytest.approx(3e-6)


def test_kernels_of_no_class_fall_back_to_a_copy_of_their_data():
    p = simple_predictor()
    with pytest.raises(PredictorError, match=r"no model for kernel type 'tfl\.other'"):
        p.configs["xnnpack_1t"].model_seconds(kernels(["tfl.other"], [feat(0, 1e6)]))
    coef = np.zeros(len(BASIS))
    coef[0], coef[4] = 1e-6, 1e-4  # 1 us plus 100 us per MB read
    cfg = p.configs["xnnpack_1t"]
    cfg.kernels["xnn.copy"] = KernelModel("xnn.copy", coef, cv={"q10": -0.1, "q90": 0.1})
    e = cfg.model_seconds(kernels(["tfl.other"], [feat(0, 1e6)]))
    assert e.fallbacks == {"tfl.other": "xnn.copy"}
    assert e.by_type["tfl.other"] == pytest.approx(1e-6 + 1e-4)


def test_audio_custom_ops_use_their_own_models_else_the_fft_model_of_older_files():
    """AudioSpectrogram and Mfcc were "fft" kernels until they got classes of their own: a
    predictor without models for them prices them by its "fft" model, as it did then."""
    p = simple_predictor()
    cfg = p.configs["xnnpack_1t"]
    coef = np.zeros(len(BASIS))
    coef[0], coef[1] = 2e-6, 4e-5
    cfg.kernels["tfl.fft"] = KernelModel("tfl.fft", coef, cv={"q10": 0, "q90": 0})
    k = kernels(["tfl.spectrogram", "tfl.mfcc"], [feat(1e6), feat(1e6)])
    e = cfg.model_seconds(k)
    assert e.fallbacks == {"tfl.spectrogram": "tfl.fft", "tfl.mfcc": "tfl.fft"}
    assert e.by_type["tfl.mfcc"] == pytest.approx(2e-6 + 4e-5)
    own = coef.copy()
    own[0] = 7e-6
    cfg.kernels["tfl.mfcc"] = KernelModel("tfl.mfcc", own, cv={"q10": 0, "q90": 0})
    e = cfg.model_seconds(k)
    assert e.fallbacks == {"tfl.spectrogram": "tfl.fft"}
    assert e.by_type["tfl.mfcc"] == pytest.approx(7e-6 + 4e-5)


def test_magnitudes_use_their_own_model_else_the_math_model_of_older_files():
    """COMPLEX_ABS was a "math" kernel until it got a class of its own ("magnitude")."""
    p = simple_predictor()
    cfg = p.configs["xnnpack_1t"]
    coef = np.zeros(len(BASIS))
    coef[0], coef[4] = 1e-7, 2e-4
    cfg.kernels["tfl.math"] = KernelModel("tfl.math", coef)
    k = kernels(["tfl.magnitude"], [feat(0, 1e5)])
    e = cfg.model_seconds(k)
    assert e.fallbacks == {"tfl.magnitude": "tfl.math"}
    assert e.by_type["tfl.magnitude"] == pytest.approx(1e-7 + 2e-4 * 0.1)
    cfg.kernels["tfl.magnitude"] = KernelModel("tfl.magnitude", 3 * coef)
    e = cfg.model_seconds(k)
    assert e.fallbacks == {} and e.by_type["tfl.magnitude"] == pytest.approx(3e-7 + 6e-5)


def test_file_round_trip_is_byte_identical(tmp_path):
    p = simple_predictor()
    a = tmp_path / "a.json"
    p.save(a)
    q = load_predictor(a)
    b = tmp_path / "b.json"
    q.save(b)
    assert a.read_bytes() == b.read_bytes()
    assert q.configs["xnnpack_1t"].kernels["xnn.conv"].coef[1] == pytest.approx(1e-5)


def test_free_form_figures_are_written_to_nine_digits():
    """``extra`` and ``calibration`` hold fit results whose last bits depend on the machine's
    floating-point summation order: a refit elsewhere must give the same bytes."""
    p = simple_predictor()
    last_bit = float(np.nextafter(0.1, 1.0))  # 0.1 and the next double: one ulp apart
    p.calibration = {"loo": {"median_abs": last_bit, "n": 6}, "rows": [last_bit, "x"]}
    p.configs["xnnpack_1t"].extra = {"terms": {"mac": 2.1224745830012663}}
    text = p.dumps()
    doc = json.loads(text)
    assert doc["calibration"] == {"loo": {"median_abs": 0.1, "n": 6}, "rows": [0.1, "x"]}
    assert doc["configs"]["xnnpack_1t"]["extra"] == {"terms": {"mac": 2.12247458}}
    p.calibration["loo"]["median_abs"] = 0.1
    p.calibration["rows"][0] = 0.1
    p.configs["xnnpack_1t"].extra["terms"]["mac"] = 2.122474583001266
    assert p.dumps() == text


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(version=9), r"\$\.version: unsupported version 9"),
        (lambda d: d.update(obtained="guessed"), r"\$\.obtained: 'guessed'"),
        (lambda d: d.update(features=["x"]), r"\$\.features: fitted on another kernel feature"),
        (
            lambda d: d["configs"]["xnnpack_1t"]["kernels"]["xnn.conv"].update(
                coef=[-1, 0, 0, 0, 0, 0, 0]
            ),
            r"\$\.configs\.xnnpack_1t\.kernels\.xnn\.conv\.coef: need 7 finite non-negative",
        ),
        (
            lambda d: d["configs"]["xnnpack_1t"].update(threads=0),
            r"\$\.configs\.xnnpack_1t: threads must be >= 1",
        ),
    ],
)
def test_bad_files_name_the_json_path(tmp_path, mutate, message):
    d = simple_predictor().to_json()
    mutate(d)
    with pytest.raises(PredictorError, match=message):
        predictor_from_dict(d, "p.json")
    f = tmp_path / "p.json"
    f.write_text("{not json")
    with pytest.raises(PredictorError, match=r"p\.json: invalid JSON at line 1 column 2"):
        load_predictor(f)


def test_exported_trees_predict_what_sklearn_predicts():
    sklearn = pytest.importorskip("sklearn.tree")
    from edgepart.cost.predictor import TREE_INPUTS, tree_matrix
    from edgepart.cost.predictor_fit import TREE_FEATURES, _Trees

    rng = np.random.default_rng(0)
    x = tree_matrix(rng.uniform(0, 100, (400, len(FEATURES))))
    tail32 = TREE_INPUTS.index("cout_tail32")
    y = np.sin(x[:, 4] / 10) + (x[:, 7] > 50) + (x[:, tail32] <= 16)
    trees = []
    for s in range(3):
        t = sklearn.DecisionTreeRegressor(max_depth=5, random_state=s)
        t.fit(x[:, list(TREE_FEATURES)], y + s)
        trees.append(t)
    ens = _Trees(TREE_FEATURES, trees, [0.5, 0.5, 0.5]).export("sum")
    want = sum(0.5 * t.predict(x[:, list(TREE_FEATURES)]) for t in trees)
    assert np.allclose(ens.predict(x), want)
    back = type(ens).from_json(json.loads(json.dumps(ens.to_json())), "t")
    assert np.allclose(back.predict(x), want, rtol=1e-8)


def _synthetic_chains(n: int, seed: int, truth, cout_hi: int = 64) -> list:
    """Chains of 1 to 5 kernels of two types whose latency follows ``truth``."""
    rng = np.random.default_rng(seed)
    items = []
    for _ in range(n):
        length = int(rng.integers(1, 6))
        types, feats, total = [], [], 1e-6
        for _ in range(length):
            t = "xnn.conv" if rng.random() < 0.6 else "xnn.binary"
            f = feat(macs=rng.uniform(1e4, 5e6) if t == "xnn.conv" else 0.0,
                     nbytes=rng.uniform(1e3, 1e6), cout=float(rng.integers(1, cout_hi)),
                     h=float(rng.integers(1, 32)))  # fmt: skip
            types.append(t)
            feats.append(f)
            total += truth(t, f)
        homo = types[0].split(".")[1] if len(set(types)) == 1 else None
        items.append((kernels(types, np.vstack(feats)), total, 1e-6, homo))
    return items


def linear_truth(t: str, f: np.ndarray) -> float:
    if t == "xnn.conv":
        return 2e-7 + 1e-11 * f[F["macs"]]
    return 1e-7 + 5e-11 * f[F["in_bytes"]]


def test_linear_fit_recovers_a_linear_truth_from_chain_sums():
    d = chain_data(_synthetic_chains(300, 0, linear_truth))
    models, rep = fit_config("xnnpack_1t", d, family="linear")
    for macs, cout in ((1e5, 16), (2e6, 3), (4e6, 40)):
        f = feat(macs, cout=cout)
        got = models["xnn.conv"].predict(f[None])[0]
        assert got == pytest.approx(linear_truth("xnn.conv", f), rel=0.05)
    assert rep.families["linear"]["median_abs"] < 0.01


def test_boosted_trees_learn_what_the_linear_base_misses():
    pytest.importorskip("sklearn")

    def truth(t: str, f: np.ndarray) -> float:
        base = linear_truth(t, f)
        # small images run at a third of the speed (nothing the work terms see)
        return base * (3.0 if t == "xnn.conv" and f[F["h"]] < 6 else 1.0)

    d = chain_data(_synthetic_chains(400, 1, truth))
    lin, _ = cross_validate(d, "linear", folds=3)
    gbt, _ = cross_validate(d, "gbt", folds=3)
    err = lambda p: float(np.median(np.abs(p / d.total - 1)))  # noqa: E731
    assert err(gbt) < 0.5 * err(lin)


def test_bagged_boosting_averages_the_log_factors_of_runs_on_different_chains():
    pytest.importorskip("sklearn")
    from edgepart.cost.predictor import tree_matrix
    from edgepart.cost.predictor_fit import _boost, fit_gbt, fit_linear

    def truth(t: str, f: np.ndarray) -> float:
        return linear_truth(t, f) * (3.0 if t == "xnn.conv" and f[F["h"]] < 6 else 1.0)

    d = chain_data(_synthetic_chains(300, 2, truth))
    coef = fit_linear(d)
    x = tree_matrix(d.x)
    conv = d.types.index("xnn.conv")
    rows = d.t == conv

    def log_factor(trees) -> np.ndarray:
        return trees[conv].export("sum").predict(x[rows])

    runs = [_boost(d, coef, seed=0, bag=b) for b in range(3)]
    # the runs hold out different chains, so they stop at different trees
    assert len({tuple(np.round(log_factor(r), 9)) for r in runs}) == 3
    bagged = fit_gbt(d, coef, seed=0, bags=3)
    want = np.mean([log_factor(r) for r in runs], axis=0)
    assert np.allclose(log_factor(bagged), want)
    # one bag is the plain boosting run, bit for bit
    assert np.array_equal(log_factor(fit_gbt(d, coef, seed=0, bags=1)), log_factor(runs[0]))
    with pytest.raises(UsageError, match="bags must be >= 1"):
        fit_gbt(d, coef, bags=0)


def test_fits_are_deterministic():
    pytest.importorskip("sklearn")
    from edgepart.cost.predictor_fit import config_predictor

    d = chain_data(_synthetic_chains(120, 2, linear_truth))
    out = []
    for _ in range(2):
        models, rep = fit_config("xnnpack_1t", d, family="auto", seed=4)
        cp = config_predictor("xnnpack_1t", "xnnpack", 1, 5e-7, {}, models, rep)
        out.append(Predictor("d", "measured", "s", {"xnnpack_1t": cp}).dumps())
    assert out[0] == out[1]


def test_basis_rounds_output_channels_up_to_tiles():
    b = basis_matrix(np.vstack([feat(1e6, cout=2), feat(1e6, cout=16), feat(1e6, cout=40)]))
    assert b[:, 1].tolist() == [1.0, 1.0, 1.0]
    assert b[:, 2].tolist() == pytest.approx([8.0, 1.0, 48 / 40])
    assert b[:, 3].tolist() == pytest.approx([16.0, 2.0, 64 / 40])


def _gemm(macs: float, rows: float, cout: float = 32.0) -> np.ndarray:
    f = feat(macs, cout=cout)
    f[F["rows"]] = rows
    return f


def test_a_row_tile_counts_gemm_macs_in_whole_tiles_of_rows():
    rows = [1, 2, 7, 8, 14, 15]
    x = np.vstack([_gemm(1e6 * r, r) for r in rows])  # a million MACs per row
    assert basis_matrix(x)[:, 1].tolist() == pytest.approx(rows)
    # tiles of 7 rows: 1 row is its own kernel; 2 to 7 rows cost 7; 8 to 14 cost 14
    assert basis_matrix(x, 7)[:, 1].tolist() == pytest.approx([1, 7, 7, 14, 14, 21])
    assert basis_matrix(x, 7)[:, 3].tolist() == pytest.approx([1, 7, 7, 14, 14, 21])
    assert basis_matrix(x, 7)[:, 4:].tolist() == basis_matrix(x)[:, 4:].tolist()


def test_a_kernel_models_row_tile_round_trips_and_old_files_have_none():
    coef = np.zeros(len(BASIS))
    coef[1] = 1e-5
    km = KernelModel("xnn.fc", coef, row_tile=7)
    back = KernelModel.from_json("xnn.fc", json.loads(json.dumps(km.to_json())), "t")
    assert back.row_tile == 7
    x = np.vstack([_gemm(1e6 * r, r) for r in (2, 7, 8)])
    assert back.predict(x).tolist() == pytest.approx([7e-5, 7e-5, 14e-5])
    old = km.to_json()
    del old["row_tile"]
    assert KernelModel.from_json("xnn.fc", old, "t").row_tile == 1
    assert "row_tile" not in KernelModel("xnn.fc", coef).to_json()
    for bad in (0, 2.5, True, "7"):
        with pytest.raises(PredictorError, match="row_tile"):
            KernelModel.from_json("xnn.fc", {**old, "row_tile": bad}, "t")


def test_fits_given_the_hosts_row_tile_price_gemm_rows_in_steps():
    """XNNPACK's GEMM computes whole tiles of rows (7 on AVX-512): the linear fit, given the
    tile, recovers the steps from chain sums; counting rows singly it cannot."""
    rng = np.random.default_rng(5)

    def truth(t: str, f: np.ndarray) -> float:
        r = f[F["rows"]]
        tiles = 1.0 / 3.0 if r == 1 else np.ceil(r / 7)  # one row: a kernel of its own
        return 2e-7 + 1e-11 * f[F["macs"]] / r * 7 * tiles if t == "xnn.fc" else 1e-7

    items = []
    for _ in range(300):
        types, feats = [], []
        for _ in range(int(rng.integers(1, 4))):
            r = float(rng.integers(1, 22))
            types.append("xnn.fc")
            feats.append(_gemm(r * float(rng.uniform(1e4, 1e6)), r))
        total = 1e-6 + sum(truth(t, f) for t, f in zip(types, feats, strict=True))
        items.append((kernels(types, np.vstack(feats)), total, 1e-6, "fc"))
    x = np.vstack([_gemm(r * 5e5, r) for r in (2, 5, 7, 8, 14)])
    want = np.array([truth("xnn.fc", f) for f in x])
    tiled, _ = fit_config("xnnpack_1t", chain_data(items, row_tile=7), family="linear")
    plain, _ = fit_config("xnnpack_1t", chain_data(items), family="linear")
    assert tiled["xnn.fc"].row_tile == 7 and plain["xnn.fc"].row_tile == 1
    assert tiled["xnn.fc"].predict(x) == pytest.approx(want, rel=0.02)
    assert np.max(np.abs(plain["xnn.fc"].predict(x) / want - 1)) > 0.2


def test_row_tiles_by_data_type_go_to_the_gemm_types_of_that_type():
    """AMX computes 8-bit GEMMs in tiles of 16 rows and float ones in tiles of 7: per kernel
    type suffix, a type without its own tile takes the float one, and no other kernel has any."""
    types = ["xnn.fc", "xnn.conv_q8", "xnn.fc_hy", "xnn.dwconv_q8", "xnn.binary", "tfl.fc"]
    feats = np.vstack([_gemm(1e6 * 3, 3) for _ in types])
    items = [(kernels(types, feats), 1e-4, 1e-6, "")]
    assert chain_data(items, row_tile={"": 7, "_q8": 16}).row_tiles == {
        "xnn.fc": 7, "xnn.conv_q8": 16, "xnn.fc_hy": 7,
    }  # fmt: skip
    assert chain_data(items, row_tile=7).row_tiles == {t: 7 for t in types[:3]}
    assert chain_data(items, row_tile={"": 1, "_hy": 16}).row_tiles == {"xnn.fc_hy": 16}
    assert chain_data(items).row_tiles == {}


def test_tree_inputs_add_the_channels_in_the_last_tile():
    from edgepart.cost.predictor import DERIVED, TREE_INPUTS, tree_matrix

    m = tree_matrix(np.vstack([feat(1e6, cout=c) for c in (1, 8, 128, 136, 152, 0)]))
    assert m.shape == (6, len(TREE_INPUTS))
    assert m[:, : len(FEATURES)].tolist() == np.vstack(
        [feat(1e6, cout=c) for c in (1, 8, 128, 136, 152, 0)]).tolist()  # fmt: skip
    tails = m[:, len(FEATURES) :]
    assert DERIVED == ("cout_tail8", "cout_tail16", "cout_tail32")
    assert tails.tolist() == [[1, 1, 1], [8, 8, 8], [8, 16, 32], [8, 8, 8], [8, 8, 24],
                              [1, 1, 1]]  # fmt: skip


def test_trees_learn_a_rule_on_the_last_tile():
    """A kernel twice as slow when at most 16 channels fill its last tile of 32 (XNNPACK's
    float GEMM on AVX-512 then switches to a narrower, slower micro-kernel)."""
    pytest.importorskip("sklearn")

    def truth(t: str, f: np.ndarray) -> float:
        slow = t == "xnn.conv" and 1 <= (f[F["cout"]] - 1) % 32 + 1 <= 16
        return linear_truth(t, f) * (2.0 if slow else 1.0)

    d = chain_data(_synthetic_chains(500, 5, truth, cout_hi=1024))
    gbt, _ = cross_validate(d, "gbt", folds=3)
    assert float(np.median(np.abs(gbt / d.total - 1))) < 0.05


def test_control_flow_ops_cost_what_was_measured_plus_the_subgraphs_they_call():
    from edgepart.cost.kernels import decompose
    from edgepart.profiling.timing import branch_model, loop_model
    from edgepart.tflite.reader import read_model_bytes as read_model

    coef = np.zeros(len(BASIS))
    coef[0] = 1e-7  # every kernel 100 ns
    kms = {t: KernelModel(t, coef) for t in ("tfl.binary", "tfl.copy")}
    cp = ConfigPredictor("builtin_1t", "builtin", 1, 3e-7, {}, kms)
    Predictor("test device", "measured", "unit test", {"builtin_1t": cp})
    loop = decompose(read_model(loop_model(5)), "builtin")
    branch = decompose(read_model(branch_model()), "builtin")
    # without measured control costs the ops cost their kernel model (100 ns, a data copy's)
    e = cp.model_seconds(loop)
    assert e.seconds == pytest.approx(3e-7 + 1e-7 + 6e-7 + 5e-7)
    assert e.fallbacks == {"tfl.other": "tfl.copy"}
    cp.control_s = {"while": 9e-7, "while_iteration": 3e-8, "if": 5e-7}
    # WHILE: entry, 5 iterations, the condition 6 times and the body 5 times
    assert cp.model_seconds(loop).seconds == pytest.approx(3e-7 + 9e-7 + 5 * 3e-8 + 11e-7)
    # IF: entry, the copies of its operands and results (one copy kernel), one branch
    e = cp.model_seconds(branch)
    assert e.seconds == pytest.approx(3e-7 + 5e-7 + 1e-7 + 1e-7)
    # the per-type split is of the same seconds (the IF's under its kernel's type)
    assert sum(e.by_type.values()) == pytest.approx(e.kernels_s)
    assert e.by_type["tfl.other"] == pytest.approx(6e-7)
    assert "tfl.other" not in e.fallbacks  # measured, not a fallback model
    # the copies cost what copying the IF's operands and results does
    F_ = {n: i for i, n in enumerate(FEATURES)}
    row = branch.features[branch.types.index("tfl.other")]
    nbytes = row[F_["in_bytes"]] + row[F_["w_bytes"]] + row[F_["out_bytes"]]
    assert nbytes > 0
    per_mb = coef.copy()
    per_mb[BASIS.index("in_mb")] = 2e-5  # 20 us per MB read
    cp.kernels["tfl.copy"] = KernelModel("tfl.copy", per_mb)
    e2 = cp.model_seconds(branch)
    assert e2.by_type["tfl.other"] - e.by_type["tfl.other"] == pytest.approx(2e-5 * nbytes / 1e6)


def test_control_flow_ops_pay_for_preparing_the_subgraphs_they_call_at_every_invocation():
    """LiteRT's WHILE and IF allocate and prepare their subgraphs again at every invocation:
    ``subgraph_op`` per op of the condition and body (the branch), not per iteration."""
    from edgepart.cost.kernels import decompose
    from edgepart.profiling.timing import WIDE_BODY_OPS, branch_model, loop_model
    from edgepart.tflite.reader import read_model_bytes as read_model

    coef = np.zeros(len(BASIS))
    coef[0] = 1e-7
    kms = {t: KernelModel(t, coef) for t in ("tfl.binary", "tfl.copy")}
    cp = ConfigPredictor("builtin_1t", "builtin", 1, 3e-7, {}, kms)
    Predictor("test device", "measured", "unit test", {"builtin_1t": cp})
    narrow, wide = (decompose(read_model(loop_model(5, n)), "builtin") for n in (1, WIDE_BODY_OPS))
    branch = decompose(read_model(branch_model()), "builtin")
    base = {"while": 9e-7, "while_iteration": 3e-8, "if": 5e-7}
    cp.control_s = dict(base)
    before = [cp.model_seconds(m).seconds for m in (narrow, wide, branch)]
    cp.control_s = {**base, "subgraph_op": 2e-7}
    after = [cp.model_seconds(m).seconds for m in (narrow, wide, branch)]
    # the condition's one op and the body's 1 or 9, once per invocation; the branch's one op
    assert after[0] - before[0] == pytest.approx(2 * 2e-7)
    assert after[1] - before[1] == pytest.approx((1 + WIDE_BODY_OPS) * 2e-7)
    assert after[2] - before[2] == pytest.approx(2e-7)
    # the wide body's extra ops also run at every one of the 5 iterations (kernels of 100 ns)
    assert before[1] - before[0] == pytest.approx(5 * (WIDE_BODY_OPS - 1) * 1e-7)


def test_control_flow_costs_round_trip_and_are_checked(tmp_path):
    p = simple_predictor()
    p.configs["xnnpack_1t"].control_s = {"if": 4.5e-7, "while": 8.5e-7, "while_iteration": 3e-8}
    a = tmp_path / "a.json"
    p.save(a)
    assert load_predictor(a).configs["xnnpack_1t"].control_s == p.configs["xnnpack_1t"].control_s
    d = p.to_json()
    d["configs"]["xnnpack_1t"]["control_flow_s"]["if"] = -1.0
    with pytest.raises(PredictorError, match=r"xnnpack_1t\.control_flow_s: values must be finite"):
        predictor_from_dict(d, "p.json")


def test_a_plan_with_builtin_kernels_pays_the_builtin_plan_cost_once(tmp_path):
    """Chains of builtin ops extrapolate to more than an empty invocation; a plan of
    DELEGATE nodes alone does not pay that. The cost is paid once per invocation, whatever
    the number of builtin kernels, and files written before it load with 0."""
    p = simple_predictor()
    cfg = p.configs["xnnpack_1t"]
    cfg.builtin_plan_s = 9e-8
    delegated = kernels(["xnn.conv"], [feat(0)], {"xnnpack": 1})
    mixed = kernels(["xnn.conv", "tfl.conv", "tfl.conv"], [feat(0)] * 3, {"xnnpack": 1})
    e = cfg.model_seconds(delegated)
    assert e.seconds == pytest.approx(5e-7 + 2e-7 + 1e-6) and e.invoke_s == pytest.approx(5e-7)
    e = cfg.model_seconds(mixed)
    assert e.seconds == pytest.approx(5e-7 + 9e-8 + 2e-7 + 3e-6)
    assert e.invoke_s == pytest.approx(5.9e-7) and e.low_s < e.seconds < e.high_s
    assert cfg.model_seconds(kernels([], np.zeros((0, len(FEATURES))))).seconds == 5e-7
    a = tmp_path / "a.json"
    p.save(a)
    assert load_predictor(a).configs["xnnpack_1t"].builtin_plan_s == 9e-8
    d = p.to_json()
    del d["configs"]["xnnpack_1t"]["builtin_plan_s"]
    assert predictor_from_dict(d, "old.json").configs["xnnpack_1t"].builtin_plan_s == 0.0
    d["configs"]["xnnpack_1t"]["builtin_plan_s"] = -1e-9
    with pytest.raises(PredictorError, match=r"xnnpack_1t: threads must be >= 1 and overheads"):
        predictor_from_dict(d, "p.json")


def test_boosting_leaves_are_shrunk_by_their_squared_shares():
    sklearn = pytest.importorskip("sklearn.tree")
    from edgepart.cost.predictor_fit import _shrink_leaves

    rng = np.random.default_rng(0)
    x = rng.random((40, 1)).astype(np.float32)
    t = np.where(x[:, 0] < 0.5, 1.0, -2.0)
    h = np.where(x[:, 0] < 0.5, 0.01, 1.0)  # left: kernels with a tenth of their chain
    m = sklearn.DecisionTreeRegressor(max_depth=1).fit(x, t, sample_weight=h)
    _shrink_leaves(m, x, t, h, 0.1)
    left = x[:, 0] < 0.5
    got = m.predict(np.array([[0.1], [0.9]], np.float32))
    assert got[0] == pytest.approx(h[left].sum() * 1.0 / (h[left].sum() + 0.1))
    assert got[1] == pytest.approx(-2.0 * h[~left].sum() / (h[~left].sum() + 0.1))
    assert abs(got[0]) < 0.9 and abs(got[1]) > 1.9  # little evidence: shrunk much


def test_builtin_kernels_after_qd8_cost_their_builtin_model_times_one_fitted_factor():
    from edgepart.profiling.host_predictor import after_qd8_models

    def const(t: str, secs: float) -> KernelModel:
        coef = np.zeros(len(BASIS))
        coef[0] = secs
        return KernelModel(t, coef)

    builtin = ConfigPredictor("builtin_1t", "builtin", 1, 0.0, {},
                              {"tfl.dwconv_hy": const("tfl.dwconv_hy", 2e-6)})  # fmt: skip
    models = {"xnn.conv_hy": const("xnn.conv_hy", 1e-6)}
    types = ["xnn.conv_hy", "tfl.dwconv_hy@qd8"]
    rng = np.random.default_rng(0)
    items = []
    for _ in range(9):
        factor = 2.5 * (1 + 0.02 * rng.standard_normal())
        items.append((kernels(types, [feat(), feat()]), 0.5e-6 + 1e-6 + 2e-6 * factor, 0.5e-6,
                      None))  # fmt: skip
    # a chain where the slow kernel is a sliver of the time says little: ignored
    few = kernels(["xnn.conv_hy"] * 20 + ["tfl.dwconv_hy@qd8"], [feat()] * 21)
    items.append((few, 0.5e-6 + 20e-6 + 2e-6 * 10, 0.5e-6, None))
    out = after_qd8_models(items, models, builtin)
    m = out["tfl.dwconv_hy@qd8"]
    assert m.cv["factor"] == pytest.approx(2.5, rel=0.03) and m.cv["chains"] == 9
    assert m.predict(feat()[None, :])[0] == pytest.approx(2e-6 * m.cv["factor"])
    assert m.n == 10
    assert after_qd8_models(items[:4], models, builtin) == {}  # too few chains: plain models
    # an XNNPACK type the fit merged into its plain class prices the chain by that class
    merged = {"xnn.conv": const("xnn.conv", 1e-6)}
    assert after_qd8_models(items, merged, builtin)["tfl.dwconv_hy@qd8"].cv["chains"] == 9


def test_added_ensembles_predict_the_sum_of_their_outputs():
    sklearn = pytest.importorskip("sklearn.tree")
    from edgepart.cost.predictor import TREE_INPUTS, TreeEnsemble, tree_matrix
    from edgepart.cost.predictor_fit import _Trees

    rng = np.random.default_rng(3)
    x = tree_matrix(rng.uniform(0, 100, (300, len(FEATURES))))
    y = np.cos(x[:, 2] / 7) + (x[:, 9] > 40)
    # ensembles over different feature sets; one a forest (mean), one boosted (sum)
    fa, fb = (1, 2, 9), (2, 5, TREE_INPUTS.index("cout_tail16"))
    ta = [sklearn.DecisionTreeRegressor(max_depth=4, random_state=s).fit(x[:, fa], y + s)
          for s in range(3)]  # fmt: skip
    tb = [sklearn.DecisionTreeRegressor(max_depth=2, random_state=s).fit(x[:, fb], -y)
          for s in range(2)]  # fmt: skip
    a = _Trees(fa, ta, [1.0] * 3).export("mean")
    b = _Trees(fb, tb, [0.3, 0.3]).export("sum")
    both = TreeEnsemble.added(a, b)
    assert both is not None and both.combine == "sum" and len(both) == 5
    assert np.allclose(both.predict(x), a.predict(x) + b.predict(x))
    assert TreeEnsemble.added(None, b) is b and TreeEnsemble.added(a, None) is a
    back = TreeEnsemble.from_json(json.loads(json.dumps(both.to_json())), "t")
    assert np.allclose(back.predict(x), both.predict(x), rtol=1e-8)


def _reference_model() -> KernelModel:
    coef = np.zeros(len(BASIS))
    coef[0], coef[1] = 4e-7, 2e-5  # 0.4 us per kernel, 20 us per million MACs
    return KernelModel("xnn.conv", coef)


def test_more_threads_scale_the_one_thread_models_per_type():
    """Two threads' chains, fitted against the one-thread model: the exported model is the
    reference's with its base scaled, and recovers a per-kernel cost plus a speed-up."""
    ref = _reference_model()
    truth = lambda t, f: 3e-7 + 0.55 * ref.predict(f[None])[0]  # noqa: E731
    items = [it for it in _synthetic_chains(300, 5, truth) if set(it[0].types) == {"xnn.conv"}]
    d = chain_data(items, reference=lambda t: ref if t == "xnn.conv" else None)
    assert d.ref_models == {"xnn.conv": ref} and d.ref is not None
    models, rep = fit_config("xnnpack_2t", d, family="linear")
    m = models["xnn.conv"]
    assert m.coef[0] == pytest.approx(3e-7 + 0.55 * 4e-7, rel=0.05)
    assert m.coef[1] == pytest.approx(0.55 * 2e-5, rel=0.05)
    for macs in (1e4, 1e6, 5e6):
        f = feat(macs)
        assert m.predict(f[None])[0] == pytest.approx(truth("xnn.conv", f), rel=0.03)
    assert rep.families["linear"]["median_abs"] < 0.01
    fixed, scale = rep.scales["xnn.conv"]  # reported: 1 / scale is the speed-up
    assert scale == pytest.approx(0.55, rel=0.05) and fixed == pytest.approx(3e-7, rel=0.3)
    # a type with no reference: the configuration is fitted on its own
    mixed = chain_data(_synthetic_chains(100, 6, truth),
                       reference=lambda t: ref if t == "xnn.conv" else None)  # fmt: skip
    assert mixed.ref is None and mixed.ref_models is None


def test_a_reference_with_trees_keeps_its_trees_under_the_fitted_ones():
    pytest.importorskip("sklearn")
    from edgepart.cost.predictor_fit import cross_validate

    # a one-thread model whose trees triple the cost of small images
    def one(t: str, f: np.ndarray) -> float:
        return linear_truth(t, f) * (3.0 if f[F["h"]] < 6 else 1.0)

    d1 = chain_data(_synthetic_chains(400, 7, one))
    ref, _ = fit_config("xnnpack_1t", d1, family="gbt", seed=1, bags=2)
    assert ref["xnn.conv"].trees is not None

    # two threads: the one-thread cost times 0.6 (conv) and 0.8 (binary), but narrow
    # convolutions gain nothing from the second thread
    def two(t: str, f: np.ndarray) -> float:
        s = 0.6 if t == "xnn.conv" else 0.8
        if t == "xnn.conv" and f[F["cout"]] < 8:
            s = 1.0
        return s * float(ref[t].predict(f[None])[0])

    items = _synthetic_chains(500, 8, two)
    d = chain_data(items, reference=lambda t: ref.get(t))
    assert d.ref is not None
    held, _ = cross_validate(d, "gbt", folds=3, bags=2)
    lin, _ = cross_validate(d, "linear", folds=3)
    err = lambda p: float(np.median(np.abs(p / d.total - 1)))  # noqa: E731
    assert err(held) < 0.03 and err(held) < err(lin)
    models, _ = fit_config("xnnpack_2t", d, family="gbt", seed=1, bags=2)
    m = models["xnn.conv"]
    # the exported model holds the reference's trees and its own, summed
    assert m.trees is not None and len(m.trees) > len(ref["xnn.conv"].trees or ())
    rng = np.random.default_rng(9)
    couts, hs = rng.integers(1, 64, 40), rng.integers(1, 32, 40)
    fs = np.vstack([feat(rng.uniform(1e5, 5e6), cout=float(c), h=float(h))
                    for c, h in zip(couts, hs, strict=True)])  # fmt: skip
    want = np.array([two("xnn.conv", f) for f in fs])
    assert np.median(np.abs(m.predict(fs) / want - 1)) < 0.05


def _two_thread_predictor() -> Predictor:
    """One thread: 1 us + 10 us per million MACs per kernel; two threads: 3 us + half that."""
    one = simple_predictor().configs["xnnpack_1t"]
    coef = np.zeros(len(BASIS))
    coef[0], coef[1] = 3e-6, 5e-6
    two = ConfigPredictor("xnnpack_2t", "xnnpack", 2, 5e-7, {"xnnpack": 2e-7},
                          {"xnn.conv": KernelModel("xnn.conv", coef)},
                          one_task_config="xnnpack_1t")  # fmt: skip
    return Predictor("test device", "measured", "unit test", {"xnnpack_1t": one, "xnnpack_2t": two})


def test_kernels_run_as_one_task_cost_on_two_threads_what_they_cost_on_one(tmp_path):
    p = _two_thread_predictor()
    big = feat(4e6)
    big[F["rows"]], big[F["cout"]] = 64.0, 64.0  # 64 rows: many tiles
    small = feat(512)
    small[F["rows"]], small[F["cout"]] = 1.0, 4.0  # one row of 4 outputs: one tile
    k = kernels(["xnn.conv", "xnn.conv"], [big, small])
    secs, _ = p.configs["xnnpack_2t"].kernel_seconds(k)
    assert secs[0] == pytest.approx(3e-6 + 5e-6 * 4)  # the two-thread model
    assert secs[1] == pytest.approx(1e-6 + 1e-5 * 512e-6)  # the one-thread model
    # without the reference, the two-thread model prices both
    p.configs["xnnpack_2t"].one_task_config = None
    assert p.configs["xnnpack_2t"].kernel_seconds(k)[0][1] == pytest.approx(3e-6 + 5e-9 * 512e-3)
    p = _two_thread_predictor()
    path = tmp_path / "p.json"
    p.save(path)
    q = load_predictor(path)
    assert q.configs["xnnpack_2t"].one_task_config == "xnnpack_1t"
    assert q.configs["xnnpack_1t"].one_task_config is None
    assert "one_task_config" not in json.loads(path.read_text())["configs"]["xnnpack_1t"]
    assert np.array_equal(q.configs["xnnpack_2t"].kernel_seconds(k)[0], secs)


def test_a_measured_gemm_width_prices_wider_one_row_kernels_by_one_thread(tmp_path):
    p = _two_thread_predictor()
    wide = feat(4096)
    wide[F["rows"]], wide[F["cout"]] = 1.0, 32.0  # one row of 32 outputs
    k = kernels(["xnn.conv"], [wide])
    two_model = 3e-6 + 5e-6 * 4096e-6
    assert p.configs["xnnpack_2t"].kernel_seconds(k)[0][0] == pytest.approx(two_model)
    p.configs["xnnpack_2t"].gemm_outputs = {"": 32.0, "_q8": 64.0}
    assert p.configs["xnnpack_2t"].kernel_seconds(k)[0][0] == pytest.approx(1e-6 + 1e-5 * 4096e-6)
    path = tmp_path / "p.json"
    p.save(path)
    doc = json.loads(path.read_text())["configs"]
    assert doc["xnnpack_2t"]["gemm_one_task_outputs"] == {"": 32.0, "_q8": 64.0}
    assert "gemm_one_task_outputs" not in doc["xnnpack_1t"]  # none measured: not written
    assert load_predictor(path).configs["xnnpack_2t"].gemm_outputs == {"": 32.0, "_q8": 64.0}


@pytest.mark.parametrize("bad", [{"": -1}, {"": "wide"}, {"_q8": float("inf")}, [32]])
def test_a_bad_gemm_width_is_refused(bad):
    doc = _two_thread_predictor().to_json()
    doc["configs"]["xnnpack_2t"]["gemm_one_task_outputs"] = bad
    with pytest.raises(PredictorError, match=r"configs\.xnnpack_2t\.gemm_one_task_outputs"):
        predictor_from_dict(doc)


@pytest.mark.parametrize(
    ("ref", "message"),
    [("xnnpack_4t", "is not another configuration"), ("xnnpack_2t", "is not another"),
     ("builtin_1t", "must be the one-thread configuration of executor 'xnnpack'")],
)  # fmt: skip
def test_a_bad_one_task_reference_is_refused(ref, message):
    doc = _two_thread_predictor().to_json()
    doc["configs"]["builtin_1t"] = dict(doc["configs"]["xnnpack_1t"], executor="builtin")
    doc["configs"]["xnnpack_2t"]["one_task_config"] = ref
    with pytest.raises(PredictorError, match=rf"configs\.xnnpack_2t\.one_task_config: .*{message}"):
        predictor_from_dict(doc)


def test_kernels_another_configuration_prices_leave_the_fit_and_nan_keeps_a_kernel_in_it():
    a, b = feat(1e6), feat(2e6)
    items = [(kernels(["xnn.conv", "xnn.conv"], [a, b]), 1e-4, 1e-6, None)] * 3
    # the first kernel of each chain priced elsewhere at 5 us, the second left to the fit
    d = chain_data(items, external=lambda t, f: np.where(f[:, F["macs"]] < 1.5e6, 5e-6, np.nan))
    assert len(d.x) == 3 and np.all(d.x[:, F["macs"]] == 2e6)
    assert np.allclose(d.offset, 5e-6)


def _spill_feat(weights: float, ctx: float) -> np.ndarray:
    f = feat(0.0, 1e3)
    f[F["w_bytes"]] = weights
    f[F["ctx_bytes"]] = ctx
    return f


def test_spill_counts_the_weights_of_graphs_past_the_cache():
    """A graph within the cache spills nothing; of one four times its size, three quarters of
    the weights come from further out; without a cache size the term is zero."""
    x = np.vstack([_spill_feat(5e5, c) for c in (5e5, 2e6, 8e6)])
    spill = BASIS.index("spill_mb")
    assert basis_matrix(x, 1, 2e6)[:, spill].tolist() == pytest.approx([0.0, 0.0, 0.5 * 0.75])
    assert basis_matrix(x)[:, spill].tolist() == [0.0, 0.0, 0.0]
    assert basis_matrix(x, 1, np.array([2e6, 2e6, 0.0]))[:, spill].tolist() == [0.0, 0.0, 0.0]
    assert basis_matrix(x, 1, 2e6)[:, :spill].tolist() == basis_matrix(x)[:, :spill].tolist()


def test_only_kernels_that_stream_weight_matrices_spill():
    assert all(map(streams_weights, ["xnn.conv", "tfl.fc_hy@qd8", "xnn.fc_q8", "tfl.rnn"]))
    assert not any(map(streams_weights, ["xnn.dwconv", "tfl.copy", "xnn.reduce", "xnn.bmm"]))


def test_a_kernel_models_cache_round_trips_and_old_files_load_without_the_term():
    coef = np.zeros(len(BASIS))
    coef[BASIS.index("w_mb")] = 1e-4
    coef[BASIS.index("spill_mb")] = 3e-4
    km = KernelModel("xnn.fc", coef, cache_bytes=2e6)
    back = KernelModel.from_json("xnn.fc", json.loads(json.dumps(km.to_json())), "t")
    assert back.cache_bytes == 2e6
    x = np.vstack([_spill_feat(1e6, 1e6), _spill_feat(1e6, 4e6)])
    assert back.predict(x).tolist() == pytest.approx([1e-4, 1e-4 + 3e-4 * 0.5])
    # a file written before the term: seven coefficients, no cache
    old = km.to_json()
    old["basis"], old["coef"] = old["basis"][:-1], old["coef"][:-1]
    del old["cache_bytes"]
    got = KernelModel.from_json("xnn.fc", old, "t")
    assert got.cache_bytes == 0.0 and got.coef.tolist() == [*coef[:-1].tolist(), 0.0]
    assert got.predict(x).tolist() == pytest.approx([1e-4, 1e-4])
    assert got.to_json() == old  # and is written as it was
    for bad in (-1.0, True, "2e6", float("nan")):
        with pytest.raises(PredictorError, match="cache_bytes"):
            KernelModel.from_json("xnn.fc", {**km.to_json(), "cache_bytes": bad}, "t")
    with pytest.raises(PredictorError, match="coef"):
        KernelModel.from_json("xnn.fc", {**km.to_json(), "coef": old["coef"]}, "t")


def test_fits_given_the_cache_size_find_what_weights_past_it_cost():
    """Chains whose footprint passes the cache pay more per byte of weights: with the cache
    size the linear fit recovers both rates from chain sums (and gives the term to the
    matrix products only); without it, one rate misprices both kinds of graph."""
    rng = np.random.default_rng(3)

    def truth(t: str, f: np.ndarray) -> float:
        if t == "xnn.copy":
            return 2e-7
        mb = f[F["w_bytes"]] * 1e-6
        share = max(0.0, 1.0 - 2e6 / f[F["ctx_bytes"]])
        return 1e-7 + 2e-5 * mb + 6e-5 * mb * share

    items = []
    for _ in range(300):
        ctx = float(np.exp(rng.uniform(np.log(1e5), np.log(6e7))))
        n = int(rng.integers(1, 4))
        types = ["xnn.fc"] * n + ["xnn.copy"]
        feats = [_spill_feat(float(rng.uniform(1e4, 4e6)), ctx) for _ in range(n + 1)]
        total = 1e-6 + sum(truth(t, f) for t, f in zip(types, feats, strict=True))
        items.append((kernels(types, np.vstack(feats)), total, 1e-6, None))
    x = np.vstack([_spill_feat(1e6, c) for c in (5e5, 2e6, 8e6, 4e7)])
    want = np.array([truth("xnn.fc", f) for f in x])
    cached, _ = fit_config("xnnpack_1t", chain_data(items, cache_bytes=2e6), family="linear")
    plain, _ = fit_config("xnnpack_1t", chain_data(items), family="linear")
    assert cached["xnn.fc"].cache_bytes == 2e6 and plain["xnn.fc"].cache_bytes == 0.0
    assert cached["xnn.copy"].cache_bytes == 0.0
    assert cached["xnn.fc"].predict(x) == pytest.approx(want, rel=0.02)
    assert np.max(np.abs(plain["xnn.fc"].predict(x) / want - 1)) > 0.2


def test_a_latency_scale_multiplies_every_part_of_a_prediction_and_says_so(tmp_path):
    """``calibrate --host --recheck`` stores how fast the machine runs now against its
    calibration; every part of an estimate (invocation, builtin plan, delegate nodes,
    kernels, control flow and the subgraphs it calls, the band) scales by it."""
    from edgepart.cost.kernels import decompose
    from edgepart.profiling.timing import loop_model
    from edgepart.tflite.reader import read_model_bytes as read_model

    p = simple_predictor()
    cfg = p.configs["xnnpack_1t"]
    cfg.builtin_plan_s = 9e-8
    cfg.kernels["tfl.binary"] = KernelModel("tfl.binary", np.eye(len(BASIS))[0] * 1e-7)
    cfg.kernels["tfl.copy"] = KernelModel("tfl.copy", np.eye(len(BASIS))[0] * 2e-7)
    cfg.control_s = {"while": 9e-7, "while_iteration": 3e-8}
    mixed = kernels(["xnn.conv", "tfl.conv"], [feat(2e6), feat(0)], {"xnnpack": 1})
    loop = decompose(read_model(loop_model(5)), "builtin")
    before = [cfg.model_seconds(k) for k in (mixed, loop)]
    secs_before, _ = cfg.kernel_seconds(mixed)
    cfg.latency_scale = 0.8
    after = [cfg.model_seconds(k) for k in (mixed, loop)]
    for b, a in zip(before, after, strict=True):
        for part in ("seconds", "low_s", "high_s", "invoke_s", "delegate_s", "kernels_s"):
            assert getattr(a, part) == pytest.approx(0.8 * getattr(b, part)), part
        assert not any("re-checked" in n for n in b.notes)
        assert any("times 0.800" in n and "re-checked" in n for n in a.notes)
    assert cfg.kernel_seconds(mixed)[0] == pytest.approx(0.8 * secs_before)
    assert cfg.nodes_s({"xnnpack": 2}) == pytest.approx(0.8 * 4e-7)
    # the scale round-trips; files without it (and unscaled ones, written as before) read 1
    a = tmp_path / "a.json"
    p.save(a)
    assert load_predictor(a).configs["xnnpack_1t"].latency_scale == 0.8
    cfg.latency_scale = 1.0
    assert "latency_scale" not in p.to_json()["configs"]["xnnpack_1t"]
    assert predictor_from_dict(p.to_json(), "old.json").configs["xnnpack_1t"].latency_scale == 1


@pytest.mark.parametrize("bad", [0.1, 5.0, -1.0, True, "0.9", None])
def test_a_latency_scale_out_of_range_is_refused(bad):
    d = simple_predictor().to_json()
    d["configs"]["xnnpack_1t"]["latency_scale"] = bad
    with pytest.raises(PredictorError, match=r"xnnpack_1t\.latency_scale: .*from 0\.25 to 4\.0"):
        predictor_from_dict(d, "p.json")
