"""The text report of ``edgepart plan-memory`` for one problem planned by several strategies:
per memory, each strategy's peak, lower bound and their ratio, then the arena without reuse."""

from __future__ import annotations

from collections.abc import Mapping

from edgepart.memory.arena import ArenaPlan
from edgepart.memory.problem import MemoryProblem

__all__ = ["format_strategies"]


def format_strategies(name: str, problem: MemoryProblem, plans: Mapping[str, ArenaPlan]) -> str:
    """The comparison table of ``plans`` (strategy -> plan of ``problem``, in order); ``name``
    titles it. A note says when a time limit cut a search short (results may then vary)."""
    n_mem = len(problem.memories)
    lines = [f"{name}: {len(problem)} buffers, {n_mem} {'memory' if n_mem == 1 else 'memories'}"]
    header = f"{'memory':<12} {'strategy':<10} {'peak B':>14} {'bound B':>14} {'peak/bound':>10}"
    lines.append(header + f" {'time s':>8}  method (stopped by)")
    timed_out = False
    last = list(plans)[-1]
    for memory in problem.memories:
        for s, plan in plans.items():
            r = plan.arenas[memory]
            timed_out |= r.stopped_by == "time"
            lines.append(
                f"{memory:<12} {s:<10} {r.size:>14,} {r.lower_bound:>14,} {r.ratio:>10.4f}"
                f" {plan.timings.get('total', 0.0):>8.3f}  {r.method} ({r.stopped_by})"
            )
        r = plans[last].arenas[memory]
        lines.append(f"{memory:<12} {'no reuse':<10} {r.naive:>14,}")
    if timed_out:
        lines.append(
            "note: a time limit cut the search short; results may vary between runs "
            "(use --node-limit for reproducible output)"
        )
    return "\n".join(lines) + "\n"
