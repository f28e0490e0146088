"""Deployment: a placement of a model applied as partitions, a plan, a memory plan and a bundle.

The solvers (:mod:`edgepart.placement`) decide; this package applies the decision: the
partitions as op sets (:mod:`edgepart.deploy.apply`), the global arena across partitions
(:mod:`edgepart.deploy.memory_plan`), the one-call pipeline (:mod:`edgepart.deploy.compile`)
and the partition report (:mod:`edgepart.deploy.report_text`).
"""
