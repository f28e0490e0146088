"""Latency predictors: kernel features to seconds, per executor configuration, from a JSON file.

A predictor file (``edgepart-latency-predictor``, version 1; ``docs/latency_predictors.md``)
holds, per *configuration* (an executor and a thread count, e.g. ``xnnpack_2t``):

- the fixed costs of an invocation: ``invoke_overhead_s`` (an empty model),
  ``builtin_plan_s`` (what an invocation costs beyond that when its execution plan runs any
  builtin kernel: the intercept of chains of builtin ops lies above the empty invocation, a
  plan of DELEGATE nodes alone does not pay it) and ``delegate_node_s`` (one DELEGATE node,
  per delegate);
- per kernel type (``xnn.conv``, ``tfl.binary``, ``gpu.conv`` ...) a :class:`KernelModel`:
  a non-negative linear *base* over work terms (a fixed cost per kernel plus seconds per
  million MACs and per megabyte read, written and of weights), times ``exp`` of a tree
  ensemble over the kernel's features (:data:`edgepart.cost.kernels.FEATURES`, plus the
  derived :data:`DERIVED`) that captures what the base misses (tile shapes, cache effects,
  per-op code paths). Either part may be absent;
- the cross-validated error of each kernel type and of whole chains, which becomes the
  uncertainty band of every prediction;
- on several threads, optionally ``one_task_config``: the same executor's one-thread
  configuration, whose models price the kernels XNNPACK runs as one task
  (:func:`edgepart.cost.xnn_tasks.one_task`: they never wake the thread pool).

A model's latency on one configuration is ``invoke overhead (+ builtin_plan_s) + delegate
nodes + sum of its kernels`` (:meth:`ConfigPredictor.model_seconds`). Evaluation is
vectorized: distinct feature rows are predicted once, trees are walked level by level for all
rows and trees at once.

Files load without pickle and are written deterministically (sorted keys, fixed float
formatting), so the same fit gives the same bytes.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgepart.cost.kernels import FEATURES, SPLIT_FROM, Kernels
from edgepart.cost.signature import unique_rows
from edgepart.cost.xnn_tasks import one_task_of
from edgepart.errors import PredictorError
from edgepart.fileio import atomic_write_text
from edgepart.jsondoc import canonical, load_file
from edgepart.schema import opnames

__all__ = [
    "BASIS",
    "DERIVED",
    "FORMAT",
    "LATENCY_SCALE_RANGE",
    "TREE_INPUTS",
    "VERSION",
    "ConfigPredictor",
    "KernelModel",
    "ModelEstimate",
    "Predictor",
    "PredictorError",
    "TreeEnsemble",
    "basis_matrix",
    "is_row_tile",
    "load_predictor",
    "runs_builtin",
    "streams_weights",
    "tree_matrix",
]

FORMAT = "edgepart-latency-predictor"
VERSION = 1
OBTAINED = ("measured", "calibrated", "estimated")
BASIS = ("one", "macs_m", "macs16_m", "macs32_m", "in_mb", "out_mb", "w_mb", "spill_mb")
# files written before the last term: their coefficient for it is zero
_OLD_BASIS = BASIS[:-1]
_F = {n: k for k, n in enumerate(FEATURES)}
# Columns computed from the features for the trees: the output channels in the last tile of
# 8, 16 and 32 (1 .. N). GEMM libraries pick their micro-kernel's width by what the last tile
# wastes: XNNPACK's float GEMM on AVX-512 runs 32-wide tiles, but a 16-wide kernel when at most
# 16 channels are left over, and that kernel streams weights at half the rate (a fully
# connected layer of 136 outputs takes twice the time of one of 128). A tree cannot find such
# a periodic rule in the raw channel count.
DERIVED = ("cout_tail8", "cout_tail16", "cout_tail32")
TREE_INPUTS = FEATURES + DERIVED
_WHILE = opnames.builtin_code("WHILE")
_IF = opnames.builtin_code("IF")
_RESHAPE = opnames.builtin_code("RESHAPE")


def is_row_tile(value: object) -> bool:
    """Whether ``value`` can be the rows of a GEMM tile (:func:`basis_matrix`): an integer from
    1 to 64 (files store it as JSON)."""
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 64


# Kernel classes that stream weight matrices, whose weights can be found in the cache or not
# (basis_matrix's spill_mb). Not the others: a depthwise convolution's few taps per channel,
# or the shapes and axes of data movement, are no traffic; fits that gave them the term used
# it as a stand-in for the graph's size (tens of seconds per megabyte). Nor transposed
# convolutions and batch matrix products: the calibration's chains hold too few of them with
# constant weights, and fits gave them 170 to 4,200 us per MB (not a cache's figures).
WEIGHT_STREAMING = frozenset({"conv", "fc", "rnn"})


def _plain_class(cls: str) -> str:
    """A type's class without its data-type suffix (``conv_q8``, ``fc_hy`` -> ``conv``, ``fc``)."""
    return cls.removesuffix("_q8").removesuffix("_hy")


def streams_weights(ktype: str) -> bool:
    """Whether kernels of ``ktype`` (``xnn.conv_q8``, ``tfl.fc_hy@qd8`` ...) stream weight
    matrices (:data:`WEIGHT_STREAMING`)."""
    return _plain_class(ktype.partition("@")[0].partition(".")[2]) in WEIGHT_STREAMING


def basis_matrix(
    features: np.ndarray, row_tile: int | np.ndarray = 1, cache_bytes: float | np.ndarray = 0.0
) -> np.ndarray:
    """``[n, len(BASIS)]``: 1; MACs in millions, also with the output channels rounded up to
    tiles of 16 and of 32 (GEMM and depthwise micro-kernels compute whole tiles, so a
    convolution with 2 output channels costs nearly what one with 16 does); MB read, MB
    written and MB of weights; and the MB of weights again times the share of the graph's
    footprint (``ctx_bytes``) beyond a core's second-level cache of ``cache_bytes`` (one
    value, or one per row; ``spill_mb``, zero without a cache size). A graph that fits the
    cache finds its weights there at every invocation; one twice its size about half of
    them, the rest come from further out (measured in the calibration chains of an Intel
    host with a 2 MB cache: chains of 1 to 2 MB, mostly weights, ran 9% faster than a fit
    without the term predicted, larger ones within 1%).

    ``row_tile`` > 1 (the rows of a GEMM kernel's tile, :attr:`KernelModel.row_tile`; one value,
    or one per row of ``features``): the MACs of kernels of two rows or more count whole tiles
    of rows too. A matrix product computes
    ``row_tile`` rows at a time, so on a host whose tile is 7 rows, 2 to 7 rows take the same
    time and 8 take twice that (one row has a kernel of its own: its MACs are its own).
    """
    f = np.asarray(features, dtype=np.float64)
    out = np.empty((len(f), len(BASIS)))
    macs = f[:, _F["macs"]] * 1e-6
    tile = np.asarray(row_tile, dtype=np.float64)
    if np.any(tile > 1):
        rows = np.maximum(f[:, _F["rows"]], 1.0)
        tiled = (rows > 1) & (tile > 1)
        macs = macs * np.where(tiled, np.ceil(rows / tile) * tile / rows, 1.0)
    n = np.maximum(f[:, _F["cout"]], 1.0)
    out[:, 0] = 1.0
    out[:, 1] = macs
    out[:, 2] = macs * np.ceil(n / 16) * 16 / n
    out[:, 3] = macs * np.ceil(n / 32) * 32 / n
    out[:, 4] = f[:, _F["in_bytes"]] * 1e-6
    out[:, 5] = f[:, _F["out_bytes"]] * 1e-6
    out[:, 6] = f[:, _F["w_bytes"]] * 1e-6
    cache = np.broadcast_to(np.asarray(cache_bytes, dtype=np.float64), (len(f),))
    ctx = np.maximum(f[:, _F["ctx_bytes"]], 1.0)
    out[:, 7] = np.where(cache > 0, out[:, 6] * np.clip(1.0 - cache / ctx, 0.0, 1.0), 0.0)
    return out


def tree_matrix(features: np.ndarray) -> np.ndarray:
    """``[n, len(TREE_INPUTS)]``: the features and the :data:`DERIVED` columns."""
    f = np.asarray(features, dtype=np.float64)
    cout = np.maximum(f[:, _F["cout"]], 1.0)
    tails = [np.mod(cout - 1.0, n) + 1.0 for n in (8, 16, 32)]
    return np.column_stack([f, *tails])


# ---------------------------------------------------------------------------- trees


@dataclass
class TreeEnsemble:
    """Regression trees over columns ``features`` of :func:`tree_matrix`, flattened into arrays.

    Internal nodes have ``feat >= 0`` and go to ``left`` when ``x[feat] <= thr``; leaves have
    ``feat == -1`` and hold ``value``. ``combine`` is ``sum`` (boosting, learning rate folded
    into the leaves) or ``mean`` (a forest).
    """

    features: tuple[int, ...]
    roots: np.ndarray
    feat: np.ndarray
    thr: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    combine: str = "sum"
    depth: int = 0

    def __len__(self) -> int:
        return len(self.roots)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The ensemble's output for rows ``x`` (``[n, len(TREE_INPUTS)]``)."""
        n = len(x)
        if n == 0 or len(self.roots) == 0:
            return np.zeros(n)
        cols = np.asarray(self.features, dtype=np.int64)
        xs = np.asarray(x, dtype=np.float64)[:, cols]
        node = np.broadcast_to(self.roots, (n, len(self.roots))).copy()
        rows = np.arange(n)[:, None]
        for _ in range(self.depth + 1):
            f = self.feat[node]
            inner = f >= 0
            if not inner.any():
                break
            v = xs[rows, np.maximum(f, 0)]
            nxt = np.where(v <= self.thr[node], self.left[node], self.right[node])
            node = np.where(inner, nxt, node)
        vals = self.value[node]
        out: np.ndarray = vals.mean(axis=1) if self.combine == "mean" else vals.sum(axis=1)
        return out

    def as_sum(self) -> TreeEnsemble:
        """The same function with ``combine == "sum"`` (a forest's leaves divided by its
        size)."""
        if self.combine == "sum":
            return self
        n = max(len(self.roots), 1)
        return TreeEnsemble(self.features, self.roots, self.feat, self.thr, self.left,
                            self.right, self.value / n, "sum", self.depth)  # fmt: skip

    @staticmethod
    def added(a: TreeEnsemble | None, b: TreeEnsemble | None) -> TreeEnsemble | None:
        """One ensemble whose output is ``a``'s plus ``b``'s (a factor ``exp(a + b)``)."""
        if a is None or not len(a):
            return b
        if b is None or not len(b):
            return a
        a, b = a.as_sum(), b.as_sum()
        feats = tuple(sorted(set(a.features) | set(b.features)))
        pos = {f: i for i, f in enumerate(feats)}
        parts = []
        off = 0
        for e in (a, b):
            remap = np.asarray([pos[f] for f in e.features], dtype=np.int64)
            inner = e.feat >= 0
            feat = np.where(inner, remap[np.maximum(e.feat, 0)], -1)
            left = np.where(inner, e.left + off, -1)
            right = np.where(inner, e.right + off, -1)
            parts.append((e.roots + off, feat, e.thr, left, right, e.value))
            off += len(e.feat)
        roots, feat, thr, left, right, value = (
            np.concatenate([p[i] for p in parts]) for i in range(6)
        )
        return TreeEnsemble(feats, roots, feat, thr, left, right, value, "sum",
                            max(a.depth, b.depth))  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "features": [TREE_INPUTS[i] for i in self.features],
            "combine": self.combine,
            "depth": int(self.depth),
            "roots": self.roots.tolist(),
            "feat": self.feat.tolist(),
            "thr": [_num(v) for v in self.thr.tolist()],
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "value": [_num(v) for v in self.value.tolist()],
        }

    @staticmethod
    def from_json(d: Mapping[str, Any], where: str) -> TreeEnsemble:
        try:
            feats = tuple(TREE_INPUTS.index(str(f)) for f in d["features"])
        except ValueError as err:
            raise PredictorError(f"{where}.features: {err}; known: {list(TREE_INPUTS)}") from None
        arrays = {}
        for k, dt in (("roots", np.int64), ("feat", np.int64), ("left", np.int64),
                      ("right", np.int64), ("thr", np.float64), ("value", np.float64)):  # fmt: skip
            try:
                arrays[k] = np.asarray(d[k], dtype=dt)
            except (KeyError, TypeError, ValueError):
                raise PredictorError(f"{where}.{k}: missing or not a list of numbers") from None
        n = len(arrays["feat"])
        if not all(len(arrays[k]) == n for k in ("thr", "left", "right", "value")):
            raise PredictorError(f"{where}: node arrays differ in length")
        inner = arrays["feat"] >= 0
        if (arrays["feat"] >= len(feats)).any():
            raise PredictorError(f"{where}.feat: a node uses a feature the ensemble lacks")
        for k in ("left", "right"):
            a = arrays[k][inner]
            if ((a < 0) | (a >= n)).any():
                raise PredictorError(f"{where}.{k}: child index out of range")
        if ((arrays["roots"] < 0) | (arrays["roots"] >= max(n, 1))).any() and n:
            raise PredictorError(f"{where}.roots: index out of range")
        if not np.isfinite(arrays["value"]).all():
            raise PredictorError(f"{where}.value: non-finite leaf value")
        combine = str(d.get("combine", "sum"))
        if combine not in ("sum", "mean"):
            raise PredictorError(f"{where}.combine: {combine!r}; allowed: sum, mean")
        return TreeEnsemble(
            feats,
            arrays["roots"],
            arrays["feat"],
            arrays["thr"],
            arrays["left"],
            arrays["right"],
            arrays["value"],
            combine,
            int(d.get("depth", 0)),
        )


def runs_builtin(k: Kernels) -> bool:
    """Whether kernels ``k`` include a builtin one (``tfl.``): its plan pays
    ``builtin_plan_s``."""
    return any(t.startswith("tfl.") for t in k.types)


def _num(v: float) -> float:
    """Floats rounded to 9 significant digits: compact files, identical bytes per fit."""
    if v == 0 or not math.isfinite(v):
        return float(v)
    return float(f"{v:.9g}")


# ---------------------------------------------------------------------------- kernel models


@dataclass
class KernelModel:
    """The predictor of one kernel type (see the module docstring)."""

    type: str
    coef: np.ndarray  # over BASIS, seconds per unit
    trees: TreeEnsemble | None = None
    floor_s: float = 1e-9
    cv: dict[str, float] = field(default_factory=dict)
    n: int = 0
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    # rows per tile of a GEMM kernel type on the calibrated host (basis_matrix); 1: not a GEMM
    # or not measured (files without it)
    row_tile: int = 1
    # bytes of a core's second-level cache on the calibrated host (basis_matrix's spill_mb);
    # 0: unknown, the term is not used
    cache_bytes: float = 0.0

    def base(self, features: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.maximum(
            basis_matrix(features, self.row_tile, self.cache_bytes) @ self.coef, self.floor_s
        )
        return out

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Seconds per kernel for feature rows (``[n, len(FEATURES)]``)."""
        b = self.base(features)
        if self.trees is None or len(self.trees) == 0:
            return b
        g = self.trees.predict(tree_matrix(features))
        out: np.ndarray = b * np.exp(np.clip(g, -5.0, 5.0))
        return out

    def to_json(self) -> dict[str, Any]:
        # without a cache size the spill term is zero: written as files before it were
        used = len(BASIS) if self.cache_bytes > 0 or self.coef[-1] != 0 else len(_OLD_BASIS)
        d: dict[str, Any] = {
            "basis": list(BASIS[:used]),
            "coef": [_num(v) for v in self.coef[:used].tolist()],
            "floor_s": _num(self.floor_s),
            "cv": {k: _num(v) for k, v in sorted(self.cv.items())},
            "n": int(self.n),
            "ranges": {k: [_num(a), _num(b)] for k, (a, b) in sorted(self.ranges.items())},
        }
        if self.trees is not None:
            d["trees"] = self.trees.to_json()
        if self.row_tile > 1:
            d["row_tile"] = int(self.row_tile)
        if self.cache_bytes > 0:
            d["cache_bytes"] = _num(self.cache_bytes)
        return d

    @staticmethod
    def from_json(t: str, d: Mapping[str, Any], where: str) -> KernelModel:
        basis = list(d.get("basis", []))
        if basis not in (list(BASIS), list(_OLD_BASIS)):
            raise PredictorError(f"{where}.basis: expected {list(BASIS)}")
        try:
            coef = np.asarray(d["coef"], dtype=np.float64)
        except (KeyError, TypeError, ValueError):
            raise PredictorError(f"{where}.coef: missing or not numbers") from None
        if coef.shape != (len(basis),) or not np.isfinite(coef).all() or (coef < 0).any():
            raise PredictorError(f"{where}.coef: need {len(basis)} finite non-negative numbers")
        coef = np.concatenate([coef, np.zeros(len(BASIS) - len(basis))])
        cache = d.get("cache_bytes", 0.0)
        if isinstance(cache, bool) or not isinstance(cache, int | float) or not cache >= 0:
            raise PredictorError(f"{where}.cache_bytes: need a non-negative number of bytes")
        trees = None
        if "trees" in d:
            trees = TreeEnsemble.from_json(d["trees"], f"{where}.trees")
        row_tile = d.get("row_tile", 1)
        if not is_row_tile(row_tile):
            raise PredictorError(f"{where}.row_tile: need an integer from 1 to 64")
        return KernelModel(
            t,
            coef,
            trees,
            float(d.get("floor_s", 1e-9)),
            {str(k): float(v) for k, v in dict(d.get("cv", {})).items()},
            int(d.get("n", 0)),
            {str(k): (float(v[0]), float(v[1])) for k, v in dict(d.get("ranges", {})).items()},
            row_tile,
            float(cache),
        )


@dataclass(frozen=True)
class ModelEstimate:
    """A whole-model prediction on one configuration.

    ``low_s``/``high_s`` bound the measured latency as the predictor's cross-validated
    errors do (10th to 90th percentile); ``by_type`` splits ``kernels_s`` per kernel type.
    """

    config: str
    seconds: float
    low_s: float
    high_s: float
    invoke_s: float
    delegate_s: float
    kernels_s: float
    kernels: int
    partitions: Mapping[str, int]
    by_type: Mapping[str, float]
    obtained: str
    notes: tuple[str, ...] = ()
    fallbacks: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "seconds": self.seconds,
            "low_s": self.low_s,
            "high_s": self.high_s,
            "invoke_s": self.invoke_s,
            "delegate_s": self.delegate_s,
            "kernels_s": self.kernels_s,
            "kernels": self.kernels,
            "partitions": dict(self.partitions),
            "by_type": dict(sorted(self.by_type.items())),
            "obtained": self.obtained,
            "notes": list(self.notes),
            "fallbacks": dict(sorted(self.fallbacks.items())),
        }


@dataclass
class ConfigPredictor:
    """Predictors of one executor configuration (see the module docstring)."""

    name: str
    executor: str
    threads: int
    invoke_s: float
    node_s: dict[str, float]
    kernels: dict[str, KernelModel]
    family: str = "linear"
    cv: dict[str, float] = field(default_factory=dict)
    fallback: str | None = None  # another configuration for kernel types missing here
    extra: dict[str, Any] = field(default_factory=dict)
    # control flow, measured: an IF op (one branch invocation), a WHILE op (its last condition
    # invocation) and each further loop iteration (a condition and a body invocation); the
    # called subgraphs' kernels come on top. Empty: control-flow ops cost their kernel model.
    control_s: dict[str, float] = field(default_factory=dict)
    # beyond invoke_s, when the execution plan runs a builtin kernel (measured: chains of
    # builtin ops extrapolate to this much above an empty invocation; DELEGATE nodes do not)
    builtin_plan_s: float = 0.0
    # the configuration (the same executor on one thread) that prices the kernels XNNPACK runs
    # as one task (:func:`edgepart.cost.xnn_tasks.one_task`): they take on any thread count
    # what they take on one
    one_task_config: str | None = None
    # the widest one-row matrix product XNNPACK runs as one task on this host, by kernel type
    # suffix (measured by calibrate --host: edgepart.profiling.gemm_tiles); empty: the widths
    # every instruction set has (edgepart.cost.xnn_tasks)
    gemm_outputs: dict[str, float] = field(default_factory=dict)
    # what every prediction of this configuration is multiplied by: the machine's speed now
    # against its calibration (latencies now / then, measured by ``calibrate --host
    # --recheck``: :mod:`edgepart.profiling.recheck`); 1: as calibrated
    latency_scale: float = 1.0
    _owner: Predictor | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ lookups
    def model_for(self, ktype: str) -> tuple[KernelModel | None, str]:
        """The kernel model used for ``ktype`` and the type it was found under.

        The type itself, then its plain class (``xnn.conv_q8`` -> ``xnn.conv``), (for ``rnn``)
        the fully connected class, (for a class split out of another,
        :data:`edgepart.cost.kernels.SPLIT_FROM`) the class it came from, the other CPU
        executor's class, ``other``, then ``copy`` (a pass over the data); each looked up here
        first, then in the fallback configuration (the CPU kernels of a delegate's
        configuration).
        """
        # a type in a context (``tfl.dwconv_hy@qd8``): its own model, else the plain type's
        base, at, _ = ktype.partition("@")
        prefix, _, cls = base.partition(".")
        plain = _plain_class(cls)
        cands = [ktype] * bool(at) + [base, f"{prefix}.{plain}", f"tfl.{cls}", f"xnn.{cls}",
                 f"tfl.{plain}", f"xnn.{plain}", f"{prefix}.other", "tfl.other",
                 "xnn.other"]  # fmt: skip
        if plain == "rnn":
            # a predictor calibrated without recurrent chains: the step's matrix product
            cands[2:2] = [f"{prefix}.fc", "tfl.fc", "xnn.fc"]
        elif plain in SPLIT_FROM:
            # a predictor from before the class was split out of another: that one priced it
            cands[2:2] = [f"{prefix}.{SPLIT_FROM[plain]}", f"tfl.{SPLIT_FROM[plain]}"]
        # an op of no known class (custom ops, rare builtins), or of a class the calibration
        # did not cover (a predictor older than the class): a pass over its data, the least
        # any kernel costs
        cands += [f"{prefix}.copy", "tfl.copy", "xnn.copy"]
        other = None
        if self.fallback and self._owner is not None:
            other = self._owner.configs.get(self.fallback)
            if other is self:
                other = None
        for c in dict.fromkeys(cands):
            m = self.kernels.get(c)
            if m is not None:
                return m, c
            if other is not None:
                m = other.kernels.get(c)
                if m is not None:
                    return m, f"{self.fallback}:{c}"
        return None, ""

    def fixed_s(self, k: Kernels) -> float:
        """The fixed cost of invoking a (sub)graph of kernels ``k``: the invocation, and
        ``builtin_plan_s`` when it :func:`runs_builtin`."""
        if self.builtin_plan_s and runs_builtin(k):
            return (self.invoke_s + self.builtin_plan_s) * self.latency_scale
        return self.invoke_s * self.latency_scale

    def kernel_seconds(self, k: Kernels) -> tuple[np.ndarray, dict[str, str]]:
        """Seconds of each kernel of ``k`` (its repeats included), and the fallbacks used."""
        out = np.zeros(len(k))
        used: dict[str, str] = {}
        if not len(k):
            return out, used
        types = np.asarray(k.types)
        one = self.one_task_reference()
        for t in sorted(set(k.types)):
            rows = np.flatnonzero(types == t)
            if one is not None:
                single = one_task_of(t, k.features[rows], self.gemm_outputs)
                if single.any():
                    one._predict_rows(t, k.features, rows[single], out, used)
                    rows = rows[~single]
            if len(rows):
                self._predict_rows(t, k.features, rows, out, used)
        out *= k.repeat * self.latency_scale
        return out, used

    def one_task_reference(self) -> ConfigPredictor | None:
        """The configuration that prices kernels XNNPACK runs as one task (``one_task_config``),
        if there is one."""
        if self.one_task_config is None or self._owner is None:
            return None
        return self._owner.configs.get(self.one_task_config)

    def _predict_rows(
        self, t: str, features: np.ndarray, rows: np.ndarray, out: np.ndarray, used: dict[str, str]
    ) -> None:
        """``out[rows]``: one repeat of the kernels ``rows`` (all of type ``t``)."""
        m, found = self.model_for(t)
        if m is None:
            raise PredictorError(
                f"predictor {self.name}: no model for kernel type {t!r} and no fallback"
            )
        if found != t:
            used[t] = found
        feats = np.ascontiguousarray(features[rows], dtype=np.float64)
        # distinct rows once (a hash of the bits: much faster than np.unique(axis=0))
        first, inv = unique_rows(feats.view(np.int64))
        out[rows] = m.predict(first.view(np.float64))[inv]

    def kernel_seconds_with_calls(
        self, k: Kernels
    ) -> tuple[np.ndarray, dict[str, float], dict[str, str], list[str]]:
        """Seconds per kernel with the subgraphs control-flow kernels call added to them; the
        seconds per kernel type (called kernels under their own types); fallbacks; notes."""
        secs, used = self.kernel_seconds(k)
        if self.control_s and k.calls:
            replaced = self._control_ops(k, secs)
            # a type whose every kernel was replaced used no fallback model after all
            for t in [t for t in used if all(i in replaced for i, kt in enumerate(k.types)
                                             if kt == t)]:  # fmt: skip
                del used[t]
        by_type: dict[str, float] = {}
        for t, s in zip(k.types, secs.tolist(), strict=True):
            by_type[t] = by_type.get(t, 0.0) + s
        notes = list(k.notes)
        for kidx, sub, mult in k.calls:
            est = self.model_seconds(sub)
            secs[kidx] += mult * (est.kernels_s + est.delegate_s)
            for t, v in est.by_type.items():
                by_type[t] = by_type.get(t, 0.0) + mult * v
            notes.extend(est.notes)
            used.update(est.fallbacks)
        return secs, by_type, used, notes

    def _control_ops(self, k: Kernels, secs: np.ndarray) -> set[int]:
        """Replace the kernel-model seconds of control-flow kernels by the measured costs of
        the ops themselves (``control_s``): ``WHILE`` is its entry plus an iteration per trip
        (a trip invokes the condition and the body: the body's multiplier), ``IF`` its entry;
        each also pays ``subgraph_op`` per op of the subgraphs it calls (the condition and
        the body, the branch), which LiteRT allocates and prepares again at every invocation
        of the op and releases after it. Returns the kernels replaced."""
        replaced: set[int] = set()
        trips: dict[int, float] = {}
        called_ops: dict[int, int] = {}
        for kidx, sub, mult in k.calls:
            trips[kidx] = min(trips.get(kidx, mult), mult)
            called_ops[kidx] = called_ops.get(kidx, 0) + len(sub.op_kernel)
        per_op = self.control_s.get("subgraph_op", 0.0)
        for kidx, n in trips.items():
            code = int(k.features[kidx, _F["opcode"]])
            rep = float(k.repeat[kidx]) * self.latency_scale
            prepare = per_op * called_ops[kidx]
            if code == _WHILE and "while" in self.control_s:
                per = self.control_s["while"] + n * self.control_s.get("while_iteration", 0.0)
                secs[kidx] = rep * (per + prepare)
                replaced.add(kidx)
            elif code == _IF and "if" in self.control_s:
                copies = self._if_copies_s(k.features[kidx])
                secs[kidx] = rep * (self.control_s["if"] + copies + prepare)
                replaced.add(kidx)
        return replaced

    def _if_copies_s(self, row: np.ndarray) -> float:
        """What an ``IF`` op's copies cost: LiteRT's IF kernel copies every operand but the
        condition into the branch's inputs, and the branch's outputs back (``memcpy``, each
        invocation; weights passed as operands too). Priced as one copy kernel of as many
        bytes. (``oww_hey_jarvis`` passes its branch 411 KB of weights: measured 47.5 us on
        builtin kernels, 29.4 us predicted without the copies.)"""
        nbytes = float(row[_F["in_bytes"]] + row[_F["w_bytes"]] + row[_F["out_bytes"]])
        m, _ = self.model_for("tfl.copy")
        if m is None or nbytes <= 0:
            return 0.0
        f = np.zeros((1, len(FEATURES)))
        elems = max(nbytes / 4.0, 1.0)  # as float32
        for col, v in (("n_out", elems), ("in_bytes", nbytes), ("out_bytes", nbytes),
                       ("opcode", _RESHAPE), ("h", 1), ("w", 1), ("cin", elems),
                       ("cout", elems), ("kh", 1), ("kw", 1), ("sh", 1), ("sw", 1),
                       ("dil", 1), ("rows", elems), ("red", 1), ("n_in", 1), ("steps", 1),
                       ("ctx_bytes", row[_F["ctx_bytes"]])):  # fmt: skip
            f[0, _F[col]] = v
        return float(m.predict(f)[0])

    def model_seconds(self, k: Kernels) -> ModelEstimate:
        """Whole-(sub)graph latency: invocation, delegate nodes, kernels and called subgraphs."""
        secs, by_type, used, notes = self.kernel_seconds_with_calls(k)
        node = self.nodes_s(k.partitions)
        total_k = float(secs.sum())
        fixed = self.fixed_s(k)
        total = fixed + node + total_k
        lo, hi = self.band(by_type, total_k)
        if self.latency_scale != 1.0:
            notes.append(
                f"times {self.latency_scale:.3f}: the machine's speed against its calibration "
                "when last re-checked (calibrate --host --recheck)"
            )
        return ModelEstimate(
            config=self.name,
            seconds=total,
            low_s=(fixed + node + total_k / (1 + hi)) if total_k else total,
            high_s=(fixed + node + total_k / (1 + lo)) if total_k else total,
            invoke_s=fixed,
            delegate_s=node,
            kernels_s=total_k,
            kernels=len(k),
            partitions=dict(k.partitions),
            by_type=by_type,
            obtained=self._owner.obtained if self._owner is not None else "measured",
            notes=tuple(dict.fromkeys(notes)),
            fallbacks=used,
        )

    def nodes_s(self, partitions: Mapping[str, int]) -> float:
        """What ``partitions`` DELEGATE nodes (per delegate) cost per invocation."""
        s = sum(self.node_s.get(d, 0.0) * n for d, n in partitions.items())
        return float(s * self.latency_scale)

    def band(self, by_type: Mapping[str, float], total: float) -> tuple[float, float]:
        """The 10th and 90th percentile of the relative error ``predicted / measured - 1``
        expected for a model whose kernel time splits as ``by_type`` (time-weighted per-type
        cross-validation quantiles; the whole-chain quantiles where a type has none)."""
        glo, ghi = self.cv.get("q10", -0.1), self.cv.get("q90", 0.1)
        if total <= 0:
            return glo, ghi
        lo = hi = 0.0
        for t, s in by_type.items():
            m, _ = self.model_for(t)
            cv = m.cv if m is not None else {}
            w = s / total
            lo += w * min(cv.get("q10", glo), 0.0)
            hi += w * max(cv.get("q90", ghi), 0.0)
        return min(lo, glo, 0.0), max(hi, ghi, 0.0)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "executor": self.executor,
            "threads": self.threads,
            "invoke_overhead_s": _num(self.invoke_s),
            "builtin_plan_s": _num(self.builtin_plan_s),
            "delegate_node_s": {k: _num(v) for k, v in sorted(self.node_s.items())},
            "family": self.family,
            "cv": {k: _num(v) for k, v in sorted(self.cv.items())},
            "fallback": self.fallback,
            "extra": canonical(self.extra, floats=_num),
            "control_flow_s": {k: _num(v) for k, v in sorted(self.control_s.items())},
            "kernels": {t: self.kernels[t].to_json() for t in sorted(self.kernels)},
        }
        if self.one_task_config:  # optional fields: files without them read as before
            out["one_task_config"] = self.one_task_config
        if self.gemm_outputs:
            out["gemm_one_task_outputs"] = {
                k: _num(v) for k, v in sorted(self.gemm_outputs.items())
            }
        if self.latency_scale != 1.0:
            out["latency_scale"] = _num(self.latency_scale)
        return out


@dataclass
class Predictor:
    """A predictor file: configurations of one device (see the module docstring)."""

    device: str
    obtained: str
    source: str
    configs: dict[str, ConfigPredictor]
    calibration: dict[str, Any] = field(default_factory=dict)
    path: str | None = None

    def __post_init__(self) -> None:
        for c in self.configs.values():
            c._owner = self

    def config(self, executor: str, threads: int | None = None) -> ConfigPredictor:
        """The configuration for ``executor`` with ``threads`` (the nearest thread count
        measured if that one was not; any if ``threads`` is None).

        Raises
        ------
        PredictorError
            If the predictor has no configuration for the executor.
        """
        cands = [c for c in self.configs.values() if c.executor == executor]
        if not cands:
            raise PredictorError(
                f"{self.path or 'predictor'}: no configuration for executor {executor!r}; "
                f"it has {sorted(self.configs)}"
            )
        if threads is None:
            return sorted(cands, key=lambda c: c.threads)[0]
        return min(cands, key=lambda c: (abs(c.threads - threads), c.threads))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "device": self.device,
            "obtained": self.obtained,
            "source": self.source,
            "features": list(FEATURES),
            "calibration": canonical(self.calibration, floats=_num),
            "configs": {k: self.configs[k].to_json() for k in sorted(self.configs)},
        }

    def dumps(self) -> str:
        return (
            json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), allow_nan=False)
            + "\n"
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the predictor atomically (deterministic bytes)."""
        atomic_write_text(path, self.dumps())


LATENCY_SCALE_RANGE = (0.25, 4.0)
"""The latency scales a predictor file may hold (:attr:`ConfigPredictor.latency_scale`): a
machine four times faster or slower than at its calibration is another machine; calibrate it."""

PREDICTOR_LIMIT = 1 << 28
"""Largest latency-predictor file read (256 MiB)."""


def load_predictor(path: str | os.PathLike[str]) -> Predictor:
    """Read and validate a predictor file.

    Raises
    ------
    PredictorError
        Naming the file and the JSON path of the first invalid field.
    """
    p = os.fspath(path)
    # the project's bounded, strict JSON reader: a regular file of at most PREDICTOR_LIMIT
    # bytes (a FIFO or /dev/zero is refused, not read), duplicate keys and NaN refused
    doc = load_file(p, what="latency predictor", limit=PREDICTOR_LIMIT, error=PredictorError)
    pred = predictor_from_dict(doc, p)
    pred.path = p
    return pred


def _nonnegative_map(c: dict[str, Any], key: str, loc: str) -> dict[str, float]:
    """``c[key]`` (absent: empty) as names to finite non-negative numbers, else one line."""
    try:
        out = {str(k): float(v) for k, v in dict(c.get(key, {})).items()}
    except (TypeError, ValueError) as err:
        raise PredictorError(f"{loc}.{key}: {err}") from None
    if any(not math.isfinite(v) or v < 0 for v in out.values()):
        raise PredictorError(f"{loc}.{key}: values must be finite, >= 0")
    return out


def predictor_from_dict(doc: Any, where: str = "<predictor>") -> Predictor:
    """Validate a parsed predictor document (see :func:`load_predictor`)."""
    if not isinstance(doc, dict):
        raise PredictorError(f"{where}: $ must be an object")
    if doc.get("format") != FORMAT:
        raise PredictorError(f"{where}: $.format: not {FORMAT!r}")
    if doc.get("version") != VERSION:
        raise PredictorError(
            f"{where}: $.version: unsupported version {doc.get('version')}; this edgepart "
            f"reads version {VERSION}"
        )
    if list(doc.get("features", [])) != list(FEATURES):
        raise PredictorError(
            f"{where}: $.features: fitted on another kernel feature set; calibrate again"
        )
    obtained = doc.get("obtained")
    if obtained not in OBTAINED:
        raise PredictorError(f"{where}: $.obtained: {obtained!r}; allowed: {list(OBTAINED)}")
    configs: dict[str, ConfigPredictor] = {}
    cdoc = doc.get("configs")
    if not isinstance(cdoc, dict) or not cdoc:
        raise PredictorError(f"{where}: $.configs: need at least one configuration")
    for name, c in cdoc.items():
        loc = f"{where}: $.configs.{name}"
        if not isinstance(c, dict):
            raise PredictorError(f"{loc}: must be an object")
        try:
            threads = int(c["threads"])
            invoke = float(c["invoke_overhead_s"])
            plan = float(c.get("builtin_plan_s", 0.0))  # files before it: 0
            nodes = {str(k): float(v) for k, v in dict(c.get("delegate_node_s", {})).items()}
        except (KeyError, TypeError, ValueError) as err:
            raise PredictorError(f"{loc}: missing or bad field ({err})") from None
        if threads < 1 or not all(math.isfinite(v) and v >= 0 for v in (invoke, plan)):
            raise PredictorError(f"{loc}: threads must be >= 1 and overheads finite, >= 0")
        if any(not math.isfinite(v) or v < 0 for v in nodes.values()):
            raise PredictorError(f"{loc}.delegate_node_s: values must be finite, >= 0")
        control = _nonnegative_map(c, "control_flow_s", loc)
        scale = c.get("latency_scale", 1.0)
        if (isinstance(scale, bool) or not isinstance(scale, int | float)
                or not LATENCY_SCALE_RANGE[0] <= scale <= LATENCY_SCALE_RANGE[1]):  # fmt: skip
            lo_s, hi_s = LATENCY_SCALE_RANGE
            raise PredictorError(
                f"{loc}.latency_scale: {scale!r}; need a number from {lo_s} to {hi_s} (re-check "
                "with calibrate --host --recheck, or remove the field)"
            )
        widths = _nonnegative_map(c, "gemm_one_task_outputs", loc)
        kernels = {}
        for t, kd in dict(c.get("kernels", {})).items():
            kernels[str(t)] = KernelModel.from_json(str(t), kd, f"{loc}.kernels.{t}")
        configs[str(name)] = ConfigPredictor(
            name=str(name),
            executor=str(c.get("executor", "")),
            threads=threads,
            invoke_s=invoke,
            node_s=nodes,
            kernels=kernels,
            family=str(c.get("family", "linear")),
            cv={str(k): float(v) for k, v in dict(c.get("cv", {})).items()},
            fallback=c.get("fallback"),
            extra=dict(c.get("extra", {})),
            control_s=control,
            builtin_plan_s=plan,
            one_task_config=c.get("one_task_config"),
            gemm_outputs=widths,
            latency_scale=float(scale),
        )
    for name, cp in configs.items():
        ref = cp.one_task_config
        if ref is None:
            continue
        loc = f"{where}: $.configs.{name}.one_task_config"
        other = configs.get(ref) if isinstance(ref, str) else None
        if other is None or other is cp:
            raise PredictorError(f"{loc}: {ref!r} is not another configuration of this file")
        if other.executor != cp.executor or other.threads != 1:
            raise PredictorError(
                f"{loc}: {ref!r} must be the one-thread configuration of executor {cp.executor!r}"
            )
    return Predictor(
        device=str(doc.get("device", "")),
        obtained=str(obtained),
        source=str(doc.get("source", "")),
        configs=configs,
        calibration=dict(doc.get("calibration", {})),
    )


def predict_many(cp: ConfigPredictor, kernels: Sequence[Kernels]) -> list[ModelEstimate]:
    """:meth:`ConfigPredictor.model_seconds` of several kernel sets."""
    return [cp.model_seconds(k) for k in kernels]
