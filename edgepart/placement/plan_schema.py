"""Validate plan documents against their JSON Schemas (``edgepart/schemas/plan*.schema.json``).

* :func:`validate_bundle_plan`: the ``plan.json`` of a bundle written by ``edgepart partition
  MODEL``: the bundle plan schema (``bundle_plan.schema.json``, which it references) plus the
  partitioner's keys (``plan.schema.json``);
* :func:`validate_costgraph_plan`: the plan of ``edgepart partition --graph``
  (``plan_costgraph.schema.json``).

Errors are :class:`~edgepart.errors.PlanError`, one line with the JSON path.
"""

from __future__ import annotations

import functools
from typing import Any

from edgepart.errors import PlanError
from edgepart.jsondoc import schema_doc, schema_error

__all__ = ["validate_bundle_plan", "validate_costgraph_plan"]


@functools.cache
def _validator(name: str) -> Any:
    import jsonschema
    from referencing import Registry, Resource

    registry: Registry[Any] = Registry()
    for dep in ("bundle_plan.schema.json", "plan.schema.json", "plan_costgraph.schema.json"):
        doc = schema_doc(dep)
        registry = registry.with_resource(doc["$id"], Resource.from_contents(doc))
    return jsonschema.Draft202012Validator(schema_doc(name), registry=registry)


def _validate(doc: Any, schema: str, where: str) -> None:
    msg = schema_error(_validator(schema), doc, schema, where)
    if msg is not None:
        raise PlanError(msg)


def validate_bundle_plan(doc: Any, where: str = "plan.json") -> None:
    """Check a bundle ``plan.json`` written by the partitioner; raises :class:`PlanError`."""
    _validate(doc, "plan.schema.json", where)


def validate_costgraph_plan(doc: Any, where: str = "plan.json") -> None:
    """Check a cost-graph plan document; raises :class:`PlanError`."""
    _validate(doc, "plan_costgraph.schema.json", where)
