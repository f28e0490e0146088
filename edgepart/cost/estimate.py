"""Whole-model latency predictions, without timing the model: kernels plus fixed costs.

:func:`estimate_model` finds a model's kernels for each configuration of a predictor (the
executor's fusion rules, :func:`edgepart.cost.kernels.decompose`) and sums their predicted
latencies with the invocation and delegate-node costs, as ``benchmark_model`` would report the
model's average inference time on that configuration, each with the uncertainty band of the
predictor's cross-validation (:class:`~edgepart.cost.predictor.ModelEstimate`).

Configurations map to executors: ``xnnpack`` (LiteRT's default CPU path: XNNPACK plus builtin
kernels for what it refuses), ``builtin`` (``--use_xnnpack=false``), and accelerator delegates
(``gpu``, ``nnapi`` ...: the delegate's ops on the accelerator, the rest on the CPU).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from edgepart.cost.kernels import Kernels, decompose
from edgepart.cost.predictor import ConfigPredictor, ModelEstimate, Predictor
from edgepart.ir.graph import Model, Subgraph

__all__ = ["estimate_config", "estimate_model"]


def estimate_config(
    model: Model,
    cp: ConfigPredictor,
    *,
    sg: Subgraph | None = None,
    kernels: Kernels | None = None,
    trips: Mapping[int, float] | None = None,
) -> ModelEstimate:
    """The model's main subgraph on one predictor configuration.

    Parameters
    ----------
    model
        The model.
    cp
        The configuration (``predictor.configs[name]``).
    sg
        The main subgraph with resolved shapes (for models whose shapes depend on inputs).
    kernels
        Precomputed kernels for this configuration's executor.
    trips
        Iterations of the main subgraph's ``WHILE`` ops whose count depends on the inputs, as
        counted in a run (:func:`edgepart.profiling.shape_resolution.resolve`).
    """
    k = kernels if kernels is not None else decompose(model, cp.executor, sg=sg, trips=trips)
    return cp.model_seconds(k)


def estimate_model(
    model: Model,
    predictor: Predictor,
    *,
    configs: Sequence[str] | None = None,
    sg: Subgraph | None = None,
    trips: Mapping[int, float] | None = None,
) -> list[ModelEstimate]:
    """The model on every configuration of ``predictor`` (or the named ones), in name order
    (``sg``, ``trips``: as for :func:`estimate_config`).

    Kernels are found once per executor and reused across thread counts.
    """
    names = sorted(predictor.configs) if configs is None else list(configs)
    cache: dict[str, Kernels] = {}
    out = []
    for name in names:
        cp = predictor.configs[name]
        k = cache.get(cp.executor)
        if k is None:
            k = cache[cp.executor] = decompose(model, cp.executor, sg=sg, trips=trips)
        out.append(cp.model_seconds(k))
    return out
