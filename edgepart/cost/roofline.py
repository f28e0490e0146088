"""Roofline latency estimates: per op and processor, the slower of compute and memory.

For op *i* on processor *p* (Williams, Waterman and Patterson, CACM 2009)::

    compute_s = flops_i / peak_p(dtype_i)
    memory_s  = bytes_i / bandwidth_p
    time_s    = max(compute_s, memory_s) + op_overhead_p

The op is *compute-bound* when ``compute_s >= memory_s``, i.e. when its operational intensity
``flops / bytes`` reaches the processor's ridge point ``peak / bandwidth``. Everything is
vectorized: an ``[ops, processors]`` matrix for a 100,000-op graph takes milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgepart.cost.hardware import Hardware, ProcessorSpec
from edgepart.cost.work import OpWork

__all__ = ["Roofline", "peak_matrix", "roofline", "roofline_time"]


@dataclass(frozen=True, eq=False)
class Roofline:
    """Roofline estimates for ``N`` ops on ``P`` processors (``[N, P]`` arrays, seconds)."""

    processors: tuple[str, ...]
    time_s: np.ndarray
    compute_s: np.ndarray
    memory_s: np.ndarray
    intensity: np.ndarray  # [N] FLOPs per byte

    @property
    def compute_bound(self) -> np.ndarray:
        """``[N, P]`` True where the compute roof is the binding one."""
        out: np.ndarray = self.compute_s >= self.memory_s
        return out


def peak_matrix(dtypes: np.ndarray, procs: tuple[ProcessorSpec, ...]) -> np.ndarray:
    """``[N, P]`` peak ops/s for each op's dtype on each processor (0 = no peak known)."""
    uniq, inv = np.unique(np.asarray(dtypes, dtype=np.int64), return_inverse=True)
    table = np.array([[p.peak(int(d)) for p in procs] for d in uniq.tolist()], dtype=np.float64)
    if table.size == 0:
        return np.zeros((len(dtypes), len(procs)))
    out: np.ndarray = table[inv.reshape(-1)]
    return out


def roofline(work: OpWork, hw: Hardware | tuple[ProcessorSpec, ...]) -> Roofline:
    """Roofline estimates of every op on every processor of ``hw``."""
    procs = hw.processors if isinstance(hw, Hardware) else tuple(hw)
    peaks = peak_matrix(work.dtype, procs)
    flops = work.flops.astype(np.float64)[:, None]
    nbytes = work.bytes.astype(np.float64)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        compute = np.where(flops > 0, flops / peaks, 0.0)
        bw = np.array([p.bandwidth for p in procs], dtype=np.float64)[None, :]
        memory = np.where(nbytes > 0, nbytes / bw, 0.0)
    compute = np.nan_to_num(compute, nan=np.inf, posinf=np.inf)
    overhead = np.array([p.op_overhead_s for p in procs], dtype=np.float64)[None, :]
    folded = work.folded[:, None]
    time = np.where(folded, 0.0, np.maximum(compute, memory) + overhead)
    return Roofline(
        processors=tuple(p.name for p in procs),
        time_s=time,
        compute_s=compute,
        memory_s=memory,
        intensity=work.intensity,
    )


def roofline_time(flops: float, nbytes: float, dtype: int, proc: ProcessorSpec) -> float:
    """Roofline seconds for one piece of work on one processor (overhead included)."""
    peak = proc.peak(dtype)
    compute = flops / peak if flops > 0 else 0.0
    if flops > 0 and peak <= 0:
        compute = float("inf")
    memory = nbytes / proc.bandwidth if nbytes > 0 else 0.0
    return max(compute, memory) + proc.op_overhead_s
