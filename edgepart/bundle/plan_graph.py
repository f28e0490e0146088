"""The partition graph of a plan: producers, consumers, dependencies and what may overlap in time.

Both the plan checks and the runtime derive their routing from this one analysis, so what the
loader accepts is exactly what the runtime can execute.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from edgepart.bundle.format import Plan

__all__ = ["PlanGraph", "tensor_nbytes"]


def tensor_nbytes(dtype: str, shape: tuple[int, ...]) -> int:
    """Bytes of a dense tensor of this NumPy dtype name and shape."""
    return int(np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64)))


@dataclass(frozen=True)
class PlanGraph:
    """Dependency structure of a plan's partitions (positions are indices into the plan).

    ``producer[t]`` is the partition writing tensor ``t``; ``consumers[t]`` the partitions
    reading it as an input; ``ancestors[p]`` every partition ``p`` transitively waits for.
    """

    producer: Mapping[int, int]
    consumers: Mapping[int, tuple[int, ...]]
    deps: tuple[tuple[int, ...], ...]
    ancestors: tuple[frozenset[int], ...]
    model_inputs: tuple[int, ...]

    @staticmethod
    def from_plan(plan: Plan) -> PlanGraph:
        """Analyse a plan whose partitions are in dependency order (checked elsewhere)."""
        producer: dict[int, int] = {}
        consumers: dict[int, list[int]] = {}
        for k, p in enumerate(plan.partitions):
            for t in p.outputs:
                producer.setdefault(t.tensor, k)
            for t in p.inputs:
                consumers.setdefault(t.tensor, []).append(k)
        deps: list[tuple[int, ...]] = []
        ancestors: list[frozenset[int]] = []
        for k, p in enumerate(plan.partitions):
            d = sorted({producer[t.tensor] for t in p.inputs if producer.get(t.tensor, k) < k})
            deps.append(tuple(d))
            anc: set[int] = set(d)
            for j in d:
                anc |= ancestors[j]
            ancestors.append(frozenset(anc))
        return PlanGraph(
            producer=producer,
            consumers={t: tuple(c) for t, c in consumers.items()},
            deps=tuple(deps),
            ancestors=tuple(ancestors),
            model_inputs=tuple(t.tensor for t in plan.inputs),
        )

    def before_or_same(self, a: int, b: int) -> bool:
        """True if partition ``a`` always finishes before ``b`` starts, or ``a == b``."""
        return a == b or a in self.ancestors[b]

    def concurrent(self, a: int, b: int) -> bool:
        """True if partitions ``a`` and ``b`` may run at the same time (no path between them)."""
        return not self.before_or_same(a, b) and not self.before_or_same(b, a)

    def staged_tensors(self) -> list[int]:
        """Tensors handed from one party to another: read by a partition and either a model
        input or written by another partition. Ascending tensor index."""
        out = []
        for t, cons in self.consumers.items():
            p = self.producer.get(t)
            if p is None or any(c != p for c in cons):
                out.append(t)
        return sorted(out)

    def precedes(self, t: int, u: int) -> bool:
        """True if every read of ``t`` is over before ``u`` is written (they may share bytes).

        ``t`` is read by its consumers before they run; ``u`` is written by its producer after
        it runs (model inputs are written before anything runs).
        """
        pu = self.producer.get(u)
        if pu is None:
            return False
        return all(self.before_or_same(c, pu) for c in self.consumers.get(t, ()))

    def conflict(self, t: int, u: int) -> bool:
        """True if staged tensors ``t`` and ``u`` may be live at once (must not share bytes)."""
        return t != u and not self.precedes(t, u) and not self.precedes(u, t)
