"""Fitting latency predictors from measured chains (whole-chain latencies, not per-kernel times).

The training data of one configuration is a set of chains, each a list of kernels (type,
features, repeats) with one measured latency ``T``. The kernels' share of it is
``y = T - invoke overhead - delegate nodes``; nothing tells how ``y`` splits among the kernels,
so every family below is fitted to the *sums* (the same structure as whole models):

Every family minimizes the error of each chain's *total* (fixed costs included), relative to
the measured total: a chain of a few tiny kernels is mostly invocation, and the difference
between two nearly equal times says little about its kernels.

``linear``
    Per kernel type a fixed cost plus non-negative seconds per million MACs and per megabyte
    read, written and of weights (:data:`edgepart.cost.predictor.BASIS`): the sum over a chain
    is linear in the coefficients, solved by non-negative least squares on the relative error
    of each chain (with a small ridge, and two Huber reweighting passes against outliers).
``gbt``
    The linear fit times ``exp`` of gradient-boosted regression trees per kernel type, trained
    on the chain sums directly: each round computes, for every chain, the log error of its sum
    and gives every kernel its Gauss-Newton step (the chain's error scaled by the kernel's share
    of the chain), and a depth-limited tree per type fits those steps; each leaf's step is
    shrunk as XGBoost's ``lambda`` does (a leaf of kernels that are a small share of every
    chain they are in stays near the base). Early stopping on held-out chains. Bagged:
    :data:`BAGS` boosting runs, each holding out its own random share of the chains for
    early stopping, are averaged in log space (one boosting run depends on which chains it
    held out; averaging takes most of that chance out of the predictor).
``rf``
    nn-Meter's choice: random forests per kernel type, on per-kernel targets obtained by
    splitting each chain's time over its kernels in proportion to the linear fit's predictions.

A configuration of several threads may be fitted against a *reference*, the same executor's
one-thread configuration: a kernel's linear part is then ``c + s * p`` per type, with ``p``
the reference's prediction for the kernel (its tree factor ``f`` multiplies ``c`` too, so the
result is the reference's model with its base scaled, ``(c + s * base) * f``), and each family
fits on top of that as above. Two threads' timings are noisier than one thread's (wall clock,
the second core shared), and their own fit priced the kernels of real networks with speed-ups
the chains do not show (10-24% too slow on large models); the reference carries what one
thread's fit learned about each kernel, and the chains of two threads only fit how much faster
each type runs.

:func:`fit_predictor` cross-validates the families (folds by chain), keeps the one with the
lowest median error on held-out chains (or the one asked for), and refits it on every chain.
Per kernel type, the held-out errors of the chains the type dominates give its uncertainty band.

Trees are scikit-learn's ``DecisionTreeRegressor``/``RandomForestRegressor`` (fitting only;
the predictor file stores them as arrays and evaluates them without scikit-learn). Everything
is seeded: the same measurements and seed give a byte-identical predictor.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgepart.cost.kernels import FEATURES, Kernels
from edgepart.cost.predictor import (
    TREE_INPUTS,
    ConfigPredictor,
    KernelModel,
    TreeEnsemble,
    basis_matrix,
    streams_weights,
    tree_matrix,
)
from edgepart.cost.xnn_tasks import gemm_row_tile
from edgepart.errors import PredictorError, UsageError

__all__ = [
    "FAMILIES",
    "ChainData",
    "FitReport",
    "chain_data",
    "cross_validate",
    "fit_config",
    "fit_linear",
    "linear_totals",
]

FAMILIES = ("linear", "gbt", "rf")
# boosting runs averaged per gbt fit (fit_gbt). Four against one, on the same measurements
# (a Zen 3 host, 2026-12-03): held-out chain error 19.0 -> 18.1% (builtin), 16.5 -> 16.2%,
# 15.6 -> 15.2%; median error on 50 unseen models 13.0 -> 10.7%, 18.3 -> 15.5%,
# 16.4 -> 14.1%; the fit takes 2.5x as long
BAGS = 4
MIN_ROWS = 40  # fewer kernels of a type: it shares the model of its plain class
Progress = Callable[[str], None]
_F = {n: k for k, n in enumerate(FEATURES)}


@dataclass
class ChainData:
    """The training data of one configuration, as arrays (see the module docstring)."""

    types: list[str]
    x: np.ndarray  # [R, F] kernel features
    t: np.ndarray  # [R] type index
    c: np.ndarray  # [R] chain index
    rep: np.ndarray  # [R] repeats
    total: np.ndarray  # [C] measured chain latency
    fixed: np.ndarray  # [C] invocation + delegate nodes
    homo: list[str | None]  # per chain: the class of a homogeneous chain
    offset: np.ndarray  # [C] kernel time predicted by another configuration (not fitted here)
    # a reference configuration's models per type (module docstring): then ``ref`` holds per
    # row their prediction and its tree factor, ``[R, 2]``
    ref_models: dict[str, KernelModel] | None = None
    ref: np.ndarray | None = None
    # per GEMM type, the rows of its tile on the host (basis_matrix); others count rows singly
    row_tiles: dict[str, int] = field(default_factory=dict)
    # a core's second-level cache on the host (basis_matrix's spill_mb; 0: not used)
    cache_bytes: float = 0.0

    @property
    def y(self) -> np.ndarray:
        """Kernel time of each chain (at least 1% of its total, 1 ns)."""
        out: np.ndarray = np.maximum(self.total - self.fixed - self.offset, np.maximum(
            0.01 * self.total, 1e-9))  # fmt: skip
        return out

    @property
    def chains(self) -> int:
        return len(self.total)

    def subset(self, chains: np.ndarray) -> ChainData:
        """The data of some chains (renumbered)."""
        keep = np.zeros(self.chains, dtype=bool)
        keep[chains] = True
        new = np.full(self.chains, -1, dtype=np.int64)
        new[np.flatnonzero(keep)] = np.arange(int(keep.sum()))
        rows = keep[self.c]
        return ChainData(
            self.types,
            self.x[rows],
            self.t[rows],
            new[self.c[rows]],
            self.rep[rows],
            self.total[keep],
            self.fixed[keep],
            [h for h, k in zip(self.homo, keep.tolist(), strict=True) if k],
            self.offset[keep],
            self.ref_models,
            None if self.ref is None else self.ref[rows],
            self.row_tiles,
            self.cache_bytes,
        )


def chain_data(
    items: Sequence[tuple[Kernels, float, float, str | None]],
    offsets: Sequence[float] | None = None,
    *,
    external: Callable[[str, np.ndarray], np.ndarray | None] | None = None,
    min_rows: int = MIN_ROWS,
    reference: Callable[[str], KernelModel | None] | None = None,
    row_tile: int | Mapping[str, int] = 1,
    cache_bytes: float = 0.0,
) -> ChainData:
    """Arrays from ``(kernels, measured total, fixed cost, homogeneous class)`` per chain.

    ``external(type, features)`` may return the seconds of kernels another configuration
    predicts (builtin kernels inside XNNPACK configurations; on several threads, the kernels
    XNNPACK runs as one task): those become the chain's offset instead of rows; NaN leaves a
    kernel to this fit. Types with fewer than ``min_rows`` kernels join their plain class
    (``xnn.copy_q8`` -> ``xnn.copy``) when that class has enough. ``reference(type)`` may give
    the model another configuration has for a type (the same executor on one thread): the
    fit then scales it (module docstring), if every type has one. ``row_tile``: the rows of
    the host's GEMM tile, by which XNNPACK matrix products count their MACs; one for every
    data type or one per kernel type suffix (:func:`edgepart.cost.xnn_tasks.gemm_row_tile`,
    :func:`edgepart.cost.predictor.basis_matrix`). ``cache_bytes``: a core's second-level
    cache, by which the kernels' bytes beyond it count (``spill_mb``; 0: not used).
    """
    counts: dict[str, int] = {}
    for k, _, _, _ in items:
        for typ in k.types:
            counts[typ] = counts.get(typ, 0) + 1
    alias: dict[str, str] = {}
    for typ, n in counts.items():
        plain = typ.removesuffix("_q8")
        if n < min_rows and plain != typ and counts.get(plain, 0) >= min_rows:
            alias[typ] = plain
    types: list[str] = []
    tix: dict[str, int] = {}
    xs, ts, cs, reps = [], [], [], []
    total, fixed, homo = [], [], []
    off = list(offsets) if offsets is not None else [0.0] * len(items)
    for ci, (k, tot, fix, h) in enumerate(items):
        ext_rows: dict[str, list[int]] = {}
        for j, typ in enumerate(k.types):
            if external is not None:
                ext_rows.setdefault(typ, []).append(j)
        handled: set[int] = set()
        for typ, rows in ext_rows.items():
            secs = external(typ, k.features[rows]) if external is not None else None
            if secs is not None:
                # NaN: a kernel the other configuration leaves to this fit
                done = np.isfinite(secs)
                off[ci] += float((secs[done] * k.repeat[rows][done]).sum())
                handled.update(np.asarray(rows)[done].tolist())
        for j, (typ, f, r) in enumerate(zip(k.types, k.features, k.repeat, strict=True)):
            if j in handled:
                continue
            typ = alias.get(typ, typ)
            if typ not in tix:
                tix[typ] = len(types)
                types.append(typ)
            xs.append(f)
            ts.append(tix[typ])
            cs.append(ci)
            reps.append(r)
        total.append(tot)
        fixed.append(fix)
        homo.append(h)
    d = ChainData(
        types,
        np.vstack(xs) if xs else np.zeros((0, len(FEATURES))),
        np.asarray(ts, np.int64),
        np.asarray(cs, np.int64),
        np.asarray(reps, np.float64),
        np.asarray(total, np.float64),
        np.asarray(fixed, np.float64),
        homo,
        np.asarray(off, np.float64),
    )
    d.row_tiles = {t: n for t in types if (n := gemm_row_tile(t, row_tile)) > 1}
    d.cache_bytes = float(cache_bytes)
    if reference is not None and types:
        refs = {t: reference(t) for t in types}
        if all(m is not None for m in refs.values()):
            d.ref_models = {t: m for t, m in refs.items() if m is not None}
            d.ref = np.zeros((len(d.x), 2))
            for ti, t in enumerate(types):
                idx = np.flatnonzero(d.t == ti)
                m = d.ref_models[t]
                full = m.predict(d.x[idx])
                d.ref[idx, 0] = full / m.base(d.x[idx])
                d.ref[idx, 1] = full
    return d


# ---------------------------------------------------------------------------- linear


def _columns(d: ChainData) -> np.ndarray:
    """Per kernel row, the terms its type's coefficients multiply: the :data:`BASIS`, or with
    a reference, its tree factor and its prediction (module docstring)."""
    if d.ref is not None:
        return d.ref
    cache: float | np.ndarray = 0.0
    if d.cache_bytes > 0:
        kinds = np.array([d.cache_bytes * streams_weights(name) for name in d.types])
        cache = kinds[d.t] if len(kinds) else 0.0
    if not d.row_tiles:
        return basis_matrix(d.x, 1, cache)
    tiles = np.array([d.row_tiles.get(name, 1) for name in d.types], dtype=np.int64)
    return basis_matrix(d.x, tiles[d.t], cache)


def _design(d: ChainData) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """``[chains, types * terms]`` sums of repeats times terms (:func:`_columns`), and the
    column ids."""
    phi = _columns(d) * d.rep[:, None]
    nb = phi.shape[1]
    a = np.zeros((d.chains, len(d.types) * nb))
    for j in range(nb):
        np.add.at(a, (d.c, d.t * nb + j), phi[:, j])
    cols = [(t, j) for t in range(len(d.types)) for j in range(nb)]
    return a, cols


def fit_linear(d: ChainData, *, ridge: float = 1e-6, huber: float = 0.15) -> np.ndarray:
    """Per type coefficients ``[types, terms]`` (:func:`_columns`; non-negative; module
    docstring)."""
    # scipy is optional (the `calibrate` extra): load it only when a linear model is fitted
    from scipy.optimize import nnls

    a, _ = _design(d)
    # the error that matters is the chain's: relative to its measured total, fixed costs
    # included (a chain of a few tiny kernels is mostly invocation; its kernel part is noise)
    tot = d.total
    known = d.fixed + d.offset
    w = np.ones(d.chains)
    used = np.flatnonzero(np.abs(a).sum(axis=0) > 0)
    coef = np.zeros(a.shape[1])
    if not len(used):
        return coef.reshape(len(d.types), -1)
    for _ in range(3):
        b = a[:, used] / tot[:, None] * np.sqrt(w)[:, None]
        scale = np.linalg.norm(b, axis=0)
        scale[scale == 0] = 1.0
        bs = b / scale
        rhs = (tot - known) / tot * np.sqrt(w)
        lam = np.sqrt(ridge * d.chains)
        bb = np.vstack([bs, lam * np.eye(len(used))])
        rr = np.concatenate([rhs, np.zeros(len(used))])
        sol, _ = nnls(bb, rr, maxiter=50 * len(used) + 200)
        coef[:] = 0.0
        coef[used] = sol / scale
        rel = np.abs((a @ coef + known) / tot - 1.0)
        w = np.minimum(1.0, huber / np.maximum(rel, 1e-12))
    return coef.reshape(len(d.types), -1)


def linear_totals(d: ChainData, coef: np.ndarray) -> np.ndarray:
    """Per chain, the total latency a linear fit (:func:`fit_linear`) predicts, fixed costs
    included."""
    kernels = np.bincount(d.c, weights=_base_rows(d, coef) * d.rep, minlength=d.chains)
    out: np.ndarray = kernels + d.fixed + d.offset
    return out


def _base_rows(d: ChainData, coef: np.ndarray) -> np.ndarray:
    """Per kernel row, the linear prediction (one repeat)."""
    phi = _columns(d)
    out: np.ndarray = np.maximum((phi * coef[d.t]).sum(axis=1), 1e-9)
    return out


# ---------------------------------------------------------------------------- trees


def _sklearn() -> Any:
    # scikit-learn is optional (the `calibrate` extra) and slow to import: load it only when
    # a tree family is fitted
    try:
        import sklearn.tree  # noqa: F401
        from sklearn.ensemble import RandomForestRegressor
        from sklearn.tree import DecisionTreeRegressor
    except ImportError:
        raise UsageError(
            "fitting tree predictors needs scikit-learn: pip install 'edgepart[calibrate]' "
            "(or use --family linear)"
        ) from None
    return DecisionTreeRegressor, RandomForestRegressor


@dataclass
class _Trees:
    """Trees of one type during fitting (sklearn tree_ objects, scaled)."""

    feats: tuple[int, ...]
    trees: list[Any] = field(default_factory=list)
    scale: list[float] = field(default_factory=list)

    def export(self, combine: str) -> TreeEnsemble:
        roots, feat, thr, left, right, value = [], [], [], [], [], []
        off = 0
        depth = 0
        for tr, s in zip(self.trees, self.scale, strict=True):
            t = tr.tree_
            n = t.node_count
            roots.append(off)
            f = t.feature.astype(np.int64)
            leaf = t.children_left < 0
            feat.append(np.where(leaf, -1, f))
            thr.append(np.where(leaf, 0.0, t.threshold))
            left.append(np.where(leaf, -1, t.children_left + off))
            right.append(np.where(leaf, -1, t.children_right + off))
            value.append(np.where(leaf, t.value[:, 0, 0] * s, 0.0))
            depth = max(depth, int(t.max_depth))
            off += n

        def cat(xs: list[np.ndarray], dt: type) -> np.ndarray:
            return np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)

        return TreeEnsemble(
            self.feats,
            np.asarray(roots, np.int64),
            cat(feat, np.int64),
            cat(thr, np.float64),
            cat(left, np.int64),
            cat(right, np.int64),
            cat(value, np.float64),
            combine,
            depth,
        )


# Every tree input but the repeat count and the graph's footprint. The chains' footprints span
# 40 bytes to hundreds of MB, but trees that split on it predicted unseen models worse
# (XNNPACK 1 thread: median error 9.2% -> 16.2% on the same measurements, 2026-12-03): they
# learn the busy moments of the large chains rather than cache behaviour.
TREE_FEATURES = tuple(k for k, n in enumerate(TREE_INPUTS) if n not in ("steps", "ctx_bytes"))


def _loss(d: ChainData, p: np.ndarray, chains: np.ndarray | None = None) -> float:
    s = np.bincount(d.c, weights=p * d.rep, minlength=d.chains) + d.fixed + d.offset
    r = np.log(np.maximum(s, 1e-15) / d.total)
    if chains is not None:
        r = r[chains]
    return float(np.mean(np.minimum(r * r, 1.0)))


def fit_gbt(
    d: ChainData,
    coef: np.ndarray,
    *,
    bags: int = BAGS,
    seed: int = 0,
    **kw: Any,
) -> dict[int, _Trees]:
    """Boosted trees per type, averaged over ``bags`` boosting runs (module docstring).

    Every bag holds out its own random share of the chains for early stopping and is fitted on
    the rest, so the bags see different chains and stop at different rounds; their log
    factors are averaged (each tree's step scaled by ``1 / bags``), which the predictor file
    stores as one ensemble of the same form as a single run's.
    """
    if bags < 1:
        raise UsageError(f"bags must be >= 1, got {bags}")
    runs = [_boost(d, coef, seed=seed, bag=b, **kw) for b in range(bags)]
    out = runs[0]
    for other in runs[1:]:
        for t, m in other.items():
            out[t].trees.extend(m.trees)
            out[t].scale.extend(m.scale)
    if bags > 1:
        for m in out.values():
            m.scale = [s / bags for s in m.scale]
    return out


def _boost(
    d: ChainData,
    coef: np.ndarray,
    *,
    rounds: int = 160,
    lr: float = 0.15,
    depth: int = 4,
    min_leaf: int = 12,
    seed: int = 0,
    bag: int = 0,
    val_share: float = 0.15,
    patience: int = 25,
    leaf_l2: float = 0.1,
) -> dict[int, _Trees]:
    """One boosting run: trees per type on the chain-sum loss (module docstring).

    ``leaf_l2`` shrinks every leaf's Newton step as XGBoost's ``lambda`` does:
    ``sum(h t) / (sum(h) + leaf_l2)``, with ``h`` the squared share of a kernel in its chain.
    A leaf of kernels that are a small part of every chain they are in (tiny kernels beside an
    invocation's fixed costs) then stays near the linear base instead of taking whatever factor
    the chains' leftover error suggests."""
    tree_cls, _ = _sklearn()
    rng = np.random.default_rng([seed, 3] + [bag] * (bag > 0))
    val = rng.random(d.chains) < val_share
    train_rows = ~val[d.c]
    base = _base_rows(d, coef)
    g = np.zeros(len(base))
    models: dict[int, _Trees] = {t: _Trees(TREE_FEATURES) for t in range(len(d.types))}
    rows_of = {t: np.flatnonzero(d.t == t) for t in range(len(d.types))}
    best, best_round, counts = _loss(d, base, np.flatnonzero(val)), 0, {t: 0 for t in models}
    known = d.fixed + d.offset
    # float32 C-contiguous rows: scikit-learn's tree then skips its input checks (most of a
    # small tree's fitting time)
    xs = np.ascontiguousarray(tree_matrix(d.x)[:, list(TREE_FEATURES)], dtype=np.float32)
    per_type = []
    for t, rows in rows_of.items():
        tr = rows[train_rows[rows]]
        if len(tr) >= 2 * min_leaf:
            per_type.append((t, rows, tr, xs[rows], xs[tr]))
    for it in range(rounds):
        p = base * np.exp(g)
        s = np.bincount(d.c, weights=p * d.rep, minlength=d.chains) + known
        r = np.clip(np.log(np.maximum(s, 1e-15) / d.total), -1.0, 1.0)
        share = p * d.rep / np.maximum(s[d.c], 1e-15)
        hess = share * share + 1e-6
        target = np.clip(-r[d.c] * share / hess, -2.0, 2.0)
        for t, rows, tr, x_all, x_tr in per_type:
            m = tree_cls(max_depth=depth, min_samples_leaf=min_leaf, random_state=seed)
            m.fit(x_tr, target[tr], sample_weight=hess[tr], check_input=False)
            if leaf_l2 > 0:
                _shrink_leaves(m, x_tr, target[tr], hess[tr], leaf_l2)
            g[rows] += lr * m.predict(x_all, check_input=False)
            models[t].trees.append(m)
            models[t].scale.append(lr)
        if val.any():
            cur = _loss(d, base * np.exp(g), np.flatnonzero(val))
            if cur < best - 1e-6:
                best, best_round = cur, it + 1
                counts = {t: len(models[t].trees) for t in models}
            elif it + 1 - best_round >= patience:
                break
        else:
            counts = {t: len(models[t].trees) for t in models}
    for t, m in models.items():  # keep the trees of the best round
        m.trees = m.trees[: counts[t]]
        m.scale = m.scale[: counts[t]]
    return models


def _shrink_leaves(m: Any, x: np.ndarray, t: np.ndarray, h: np.ndarray, lam: float) -> None:
    """Set a fitted tree's leaf values to ``sum(h t) / (sum(h) + lam)`` over its samples."""
    leaf = m.apply(x, check_input=False)
    n = m.tree_.node_count
    sh = np.bincount(leaf, weights=h, minlength=n)
    sht = np.bincount(leaf, weights=h * t, minlength=n)
    vals = m.tree_.value
    is_leaf = m.tree_.children_left < 0
    vals[is_leaf, 0, 0] = sht[is_leaf] / (sh[is_leaf] + lam)


def fit_rf(
    d: ChainData,
    coef: np.ndarray,
    *,
    trees: int = 48,
    depth: int = 10,
    min_leaf: int = 5,
    seed: int = 0,
    passes: int = 2,
) -> dict[int, _Trees]:
    """Random forests per type on attributed per-kernel targets (module docstring)."""
    _, forest_cls = _sklearn()
    base = _base_rows(d, coef)
    g = np.zeros(len(base))
    xs = tree_matrix(d.x)[:, list(TREE_FEATURES)]
    models: dict[int, _Trees] = {}
    for _ in range(passes):
        p = base * np.exp(g)
        s = np.bincount(d.c, weights=p * d.rep, minlength=d.chains)
        attributed = p * d.y[d.c] / np.maximum(s[d.c], 1e-15)
        target = np.clip(np.log(attributed / base), -3.0, 3.0)
        models = {}
        for t in range(len(d.types)):
            rows = np.flatnonzero(d.t == t)
            if len(rows) < 2 * min_leaf:
                continue
            f = forest_cls(n_estimators=trees, max_depth=depth, min_samples_leaf=min_leaf,
                           max_features=0.6, random_state=seed, n_jobs=1)  # fmt: skip
            f.fit(xs[rows], target[rows])
            g[rows] = f.predict(xs[rows])
            models[t] = _Trees(TREE_FEATURES, list(f.estimators_), [1.0] * len(f.estimators_))
    return models


# ---------------------------------------------------------------------------- one fit


@dataclass
class _Fit:
    types: list[str]
    coef: np.ndarray
    trees: dict[int, _Trees]
    family: str
    ref_models: dict[str, KernelModel] | None = None
    row_tiles: dict[str, int] = field(default_factory=dict)
    cache_bytes: float = 0.0

    def kernel_models(self, d: ChainData | None = None) -> dict[str, KernelModel]:
        out = {}
        combine = "mean" if self.family == "rf" else "sum"
        for t, name in enumerate(self.types):
            tr = self.trees.get(t)
            ens = tr.export(combine) if tr is not None and tr.trees else None
            ref = self.ref_models.get(name) if self.ref_models is not None else None
            if ref is None:
                km = KernelModel(name, self.coef[t].copy(), ens,
                                 row_tile=self.row_tiles.get(name, 1),
                                 cache_bytes=self.cache_bytes * streams_weights(name))  # fmt: skip
            else:
                # c * f + s * p, with p = base * f the reference's prediction and f its tree
                # factor: the reference's model with its base scaled by s plus c, and its
                # trees' output added to this fit's
                fixed, scale = (float(v) for v in self.coef[t])
                coef = ref.coef * scale
                coef[0] += fixed
                floor = max(ref.floor_s * scale, 1e-12)
                km = KernelModel(name, coef, TreeEnsemble.added(ref.trees, ens), floor,
                                 row_tile=ref.row_tile, cache_bytes=ref.cache_bytes)  # fmt: skip
            if d is not None:
                rows = d.x[d.t == t]
                km.n = len(rows)
                if len(rows):
                    for col in ("macs", "in_bytes", "w_bytes", "out_bytes", "n_out", "ctx_bytes"):
                        v = rows[:, _F[col]]
                        km.ranges[col] = (float(v.min()), float(v.max()))
            out[name] = km
        return out


def _fit_once(d: ChainData, family: str, seed: int, bags: int = BAGS) -> _Fit:
    coef = fit_linear(d)
    trees: dict[int, _Trees] = {}
    if family == "gbt":
        trees = fit_gbt(d, coef, seed=seed, bags=bags)
    elif family == "rf":
        trees = fit_rf(d, coef, seed=seed)
    return _Fit(list(d.types), coef, trees, family, d.ref_models, d.row_tiles, d.cache_bytes)


def _predict_rows(fit: _Fit, d: ChainData) -> np.ndarray:
    """Per kernel row of ``d`` (whose types may differ from the fit's), one repeat's seconds."""
    models = fit.kernel_models()
    out = np.zeros(len(d.x))
    for t, name in enumerate(d.types):
        rows = np.flatnonzero(d.t == t)
        m = models.get(name) or _fallback(models, name)
        if m is None or not len(rows):
            continue
        out[rows] = m.predict(d.x[rows])
    return out


def _fallback(models: Mapping[str, KernelModel], name: str) -> KernelModel | None:
    base, at, _ = name.partition("@")
    prefix, _, cls = base.partition(".")
    base_cls = cls.split("_q8")[0]
    alts = [base] * bool(at) + [f"{prefix}.{base_cls}", f"tfl.{cls}", f"xnn.{cls}"]
    for alt in (*alts, f"{prefix}.other"):
        if alt in models:
            return models[alt]
    return None


# ---------------------------------------------------------------------------- CV and fit


@dataclass
class FitReport:
    """What :func:`fit_config` found: per family the held-out errors, and the choice."""

    config: str
    chains: int
    kernels: int
    family: str
    families: dict[str, dict[str, float]]
    per_type: dict[str, dict[str, float]]
    seconds: float
    # fitted against a reference configuration: per type the fixed seconds and the scale of
    # the reference's prediction (module docstring)
    reference: str | None = None
    scales: dict[str, tuple[float, float]] = field(default_factory=dict)
    # the chains' times brought to the calibration's typical machine state
    # (edgepart.profiling.machine_state.StateCorrection.to_json), if they were
    machine_state: dict[str, float] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "config": self.config,
            "chains": self.chains,
            "kernels": self.kernels,
            "family": self.family,
            "families": self.families,
            "per_type": self.per_type,
        }
        if self.reference is not None:
            out["reference"] = self.reference
            out["scales"] = {t: {"fixed_s": c, "scale": k} for t, (c, k) in self.scales.items()}
        if self.machine_state is not None:
            out["machine_state"] = self.machine_state
        return out


def cross_validate(
    d: ChainData, family: str, *, folds: int = 3, seed: int = 0, bags: int = BAGS
) -> tuple[np.ndarray, np.ndarray]:
    """Held-out predictions: per chain the predicted total, and per kernel row its seconds."""
    rng = np.random.default_rng([seed, 11])
    fold = rng.permutation(d.chains) % folds
    pred_total = np.zeros(d.chains)
    row_pred = np.zeros(len(d.x))
    for k in range(folds):
        test = np.flatnonzero(fold == k)
        train = np.flatnonzero(fold != k)
        if not len(test) or not len(train):
            continue
        fit = _fit_once(d.subset(train), family, seed, bags)
        dt = d.subset(test)
        rp = _predict_rows(fit, dt)
        s = np.bincount(dt.c, weights=rp * dt.rep, minlength=dt.chains)
        pred_total[test] = s + dt.fixed + dt.offset
        mask = np.zeros(d.chains, dtype=bool)
        mask[test] = True
        row_pred[mask[d.c]] = rp
    return pred_total, row_pred


def _summary(err: np.ndarray) -> dict[str, float]:
    if not len(err):
        return {"n": 0.0}
    a = np.abs(err)
    return {
        "n": float(len(err)),
        "median_abs": float(np.median(a)),
        "within_5": float(np.mean(a <= 0.05)),
        "within_10": float(np.mean(a <= 0.10)),
        "q10": float(np.quantile(err, 0.1)),
        "q90": float(np.quantile(err, 0.9)),
    }


def fit_config(
    name: str,
    d: ChainData,
    *,
    family: str = "auto",
    seed: int = 0,
    folds: int = 3,
    bags: int = BAGS,
    progress: Progress | None = None,
) -> tuple[dict[str, KernelModel], FitReport]:
    """Cross-validate, choose the family, refit on all chains (module docstring).

    Returns the kernel models (their ``cv`` filled from the held-out errors) and a report.
    """
    t0 = time.perf_counter()
    fams = FAMILIES if family == "auto" else (family,)
    for f in fams:
        if f not in FAMILIES:
            raise UsageError(f"unknown predictor family {f!r}; choose one of {FAMILIES}")
    if d.chains < 2 * folds:
        raise PredictorError(
            f"{name}: {d.chains} measured chains; need at least {2 * folds} (a longer budget)"
        )
    results: dict[str, dict[str, float]] = {}
    held: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for f in fams:
        if progress:
            progress(f"{name}: cross-validating {f}")
        pt, rp = cross_validate(d, f, folds=folds, seed=seed, bags=bags)
        held[f] = (pt, rp)
        err = pt / d.total - 1.0
        mixed = np.array([h is None for h in d.homo])
        results[f] = {**_summary(err), **{f"mixed_{k}": v for k, v in _summary(err[mixed]).items()}}
    best = min(fams, key=lambda f: (results[f]["median_abs"], FAMILIES.index(f)))
    if progress:
        progress(f"{name}: fitting {best} on {d.chains} chains")
    fit = _fit_once(d, best, seed, bags)
    models = fit.kernel_models(d)
    # per type: held-out errors of the kernel part of chains the type dominates
    pt, rp = held[best]
    s_type = np.zeros((d.chains, len(d.types)))
    np.add.at(s_type, (d.c, d.t), rp * d.rep)
    kern = s_type.sum(axis=1)
    kerr = kern / d.y - 1.0
    per_type: dict[str, dict[str, float]] = {}
    for t, tname in enumerate(d.types):
        dom = s_type[:, t] >= 0.5 * np.maximum(kern, 1e-15)
        summ = _summary(kerr[dom])
        per_type[tname] = summ
        if tname in models and summ.get("n", 0) >= 5:
            models[tname].cv = {k: v for k, v in summ.items() if k != "n"}
            models[tname].cv["chains"] = summ["n"]
    rep = FitReport(
        config=name,
        chains=d.chains,
        kernels=len(d.x),
        family=best,
        families=results,
        per_type=per_type,
        seconds=time.perf_counter() - t0,
    )
    if d.ref is not None:
        rep.scales = {t: (float(fit.coef[i, 0]), float(fit.coef[i, 1]))
                      for i, t in enumerate(d.types)}  # fmt: skip
    return models, rep


def config_predictor(
    name: str,
    executor: str,
    threads: int,
    invoke_s: float,
    node_s: Mapping[str, float],
    models: Mapping[str, KernelModel],
    report: FitReport,
    fallback: str | None = None,
    control_s: Mapping[str, float] | None = None,
    builtin_plan_s: float = 0.0,
) -> ConfigPredictor:
    """A :class:`ConfigPredictor` from fitted models and their report."""
    fam = report.families[report.family]
    return ConfigPredictor(
        name=name,
        executor=executor,
        threads=threads,
        invoke_s=invoke_s,
        node_s=dict(node_s),
        kernels=dict(models),
        family=report.family,
        cv={k: v for k, v in fam.items() if not k.startswith("mixed_")},
        fallback=fallback,
        extra={"families": report.families, "chains": report.chains},
        control_s=dict(control_s or {}),
        builtin_plan_s=builtin_plan_s,
    )
