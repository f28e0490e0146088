"""Deployment: a placement of a model applied as partitions, a plan, a memory plan and a bundle.

The solvers (:mod:`edgepart.placement`) decide; this package applies the decision: the whole
job in two calls (:mod:`edgepart.deploy.compile`: :func:`~edgepart.deploy.compile.partition_model`
decides, :func:`~edgepart.deploy.compile.compile_placement` applies), the partitions as op sets
(:mod:`edgepart.deploy.apply`), the partitioner's ``plan.json`` keys
(:mod:`edgepart.deploy.plan_keys`) and the partition report (:mod:`edgepart.deploy.report_text`);
and the memory plans ``plan-memory`` compares for a buffer table, a model or a bundle
(:mod:`edgepart.deploy.memory_plans`).
The bundle itself, its arena across partitions included, is written by :mod:`edgepart.bundle`.
"""
