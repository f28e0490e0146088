"""Cost model: work per op, roofline estimates, measured latency tables, host profiling.

Modules: :mod:`~edgepart.cost.work` (FLOPs and bytes), :mod:`~edgepart.cost.hardware` (the
cost-side view of a device profile), :mod:`~edgepart.cost.roofline`, :mod:`~edgepart.cost.table`
(latency tables), :mod:`~edgepart.cost.model` (the :class:`CostModel` the partitioner calls) and
:mod:`~edgepart.profiling.host` (measuring this host with LiteRT).
"""
