"""A quiet HiGHS instance and a sparse-model builder shared by the LP bounds and the MILP."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

import highspy
import numpy as np

INF = float("inf")
_quiet_done = False


def new_highs(*, time_limit: float | None = None, mip: bool = False) -> Any:
    """A HiGHS solver with output off, one thread, deterministic settings.

    The first instance in a process prints a banner to file descriptor 1 from C++; it is
    swallowed so the CLI's output stays clean.
    """
    global _quiet_done
    if not _quiet_done:
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as devnull:
                os.dup2(devnull.fileno(), 1)
                h = highspy.Highs()  # type: ignore[no-untyped-call]
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        _quiet_done = True
    else:
        h = highspy.Highs()  # type: ignore[no-untyped-call]
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", 0)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(max(time_limit, 1e-3)))
    if mip:
        h.setOptionValue("mip_rel_gap", 1e-6)
        h.setOptionValue("mip_abs_gap", 1e-9)
    return h


@dataclass
class Model:
    """Columns and rows of a sparse (MI)LP, built incrementally, solved by HiGHS."""

    cost: list[float] = field(default_factory=list)
    lo: list[float] = field(default_factory=list)
    hi: list[float] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    r_lo: list[float] = field(default_factory=list)
    r_hi: list[float] = field(default_factory=list)
    r_idx: list[np.ndarray] = field(default_factory=list)
    r_val: list[np.ndarray] = field(default_factory=list)

    def cols(
        self, k: int, *, lo: float = 0.0, hi: float = INF, cost: float = 0.0, integer: bool = False
    ) -> np.ndarray:
        first = len(self.cost)
        self.cost += [cost] * k
        self.lo += [lo] * k
        self.hi += [hi] * k
        self.integer += [integer] * k
        return np.arange(first, first + k, dtype=np.int64)

    def row(self, idx: Any, val: Any, lo: float = -INF, hi: float = INF) -> None:
        self.r_idx.append(np.asarray(idx, dtype=np.int64))
        self.r_val.append(np.asarray(val, dtype=np.float64))
        self.r_lo.append(lo)
        self.r_hi.append(hi)

    def rows(self, idx: np.ndarray, val: np.ndarray, lo: Any, hi: Any) -> None:
        """Many rows of equal length at once: ``idx``, ``val`` are ``[R, K]``."""
        r = idx.shape[0]
        lo_a = np.broadcast_to(np.asarray(lo, dtype=np.float64), (r,))
        hi_a = np.broadcast_to(np.asarray(hi, dtype=np.float64), (r,))
        for i in range(r):
            self.r_idx.append(idx[i])
            self.r_val.append(val[i])
        self.r_lo += lo_a.tolist()
        self.r_hi += hi_a.tolist()

    @property
    def num_cols(self) -> int:
        return len(self.cost)

    def solve(self, h: Any, *, start: np.ndarray | None = None) -> tuple[str, np.ndarray, float]:
        """Pass the model to ``h`` and run it; returns (status, column values, dual bound)."""
        lp = highspy.HighsLp()
        nc, nr = len(self.cost), len(self.r_lo)
        lp.num_col_ = nc
        lp.num_row_ = nr
        lp.col_cost_ = np.asarray(self.cost, dtype=np.float64)
        lp.col_lower_ = np.asarray(self.lo, dtype=np.float64)
        lp.col_upper_ = np.asarray(self.hi, dtype=np.float64)
        lp.row_lower_ = np.asarray(self.r_lo, dtype=np.float64)
        lp.row_upper_ = np.asarray(self.r_hi, dtype=np.float64)
        lens = np.asarray([len(x) for x in self.r_idx], dtype=np.int64)
        start_ = np.zeros(nr + 1, dtype=np.int64)
        np.cumsum(lens, out=start_[1:])
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = start_.astype(np.int32)
        lp.a_matrix_.index_ = (
            np.concatenate(self.r_idx).astype(np.int32) if nr else np.zeros(0, np.int32)
        )
        lp.a_matrix_.value_ = np.concatenate(self.r_val) if nr else np.zeros(0)
        lp.a_matrix_.num_col_ = nc
        lp.a_matrix_.num_row_ = nr
        if any(self.integer):
            lp.integrality_ = [
                highspy.HighsVarType.kInteger if x else highspy.HighsVarType.kContinuous
                for x in self.integer
            ]
        h.passModel(lp)
        if start is not None:
            # a partial start (NaN = unset): HiGHS fixes the given values and completes the rest
            start = np.asarray(start, dtype=np.float64)
            idx = np.flatnonzero(~np.isnan(start))
            h.setSolution(len(idx), idx.astype(np.int32), start[idx])
        h.run()
        status = h.modelStatusToString(h.getModelStatus())
        info = h.getInfo()
        values = np.zeros(nc)
        if (
            info.primal_solution_status >= 1
            or h.getModelStatus() == highspy.HighsModelStatus.kOptimal
        ):
            values = np.asarray(h.getSolution().col_value, dtype=np.float64)
        if any(self.integer):
            bound = float(info.mip_dual_bound)
        elif h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
            bound = float(info.objective_function_value)
        else:
            bound = -INF
        return status, values, bound
