"""Cost model: work per op, roofline estimates, measured latency tables.

Modules: :mod:`~edgepart.cost.work` (FLOPs and bytes), :mod:`~edgepart.cost.hardware` (the
cost-side view of a device profile), :mod:`~edgepart.cost.roofline`, :mod:`~edgepart.cost.table`
(latency tables) and :mod:`~edgepart.cost.model` (the :class:`CostModel` the partitioner calls).
The tables are measured by :mod:`edgepart.profiling`, a layer above.
"""
