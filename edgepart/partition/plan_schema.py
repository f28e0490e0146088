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
import json
from importlib import resources
from typing import Any

from edgepart.errors import PlanError

__all__ = ["validate_bundle_plan", "validate_costgraph_plan"]


def _load(name: str) -> Any:
    text = resources.files("edgepart").joinpath("schemas").joinpath(name).read_text("utf-8")
    return json.loads(text)


@functools.cache
def _validator(name: str) -> Any:
    import jsonschema
    from referencing import Registry, Resource

    registry: Registry[Any] = Registry()
    for dep in ("bundle_plan.schema.json", "plan.schema.json", "plan_costgraph.schema.json"):
        doc = _load(dep)
        registry = registry.with_resource(doc["$id"], Resource.from_contents(doc))
    return jsonschema.Draft202012Validator(_load(name), registry=registry)


def _validate(doc: Any, schema: str, where: str) -> None:
    import jsonschema

    errors = list(_validator(schema).iter_errors(doc))
    if not errors:
        return
    err = jsonschema.exceptions.best_match(errors)
    while err.context:
        err = jsonschema.exceptions.best_match(err.context)
    path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
    msg = err.message if len(err.message) <= 160 else err.message[:157] + "..."
    raise PlanError(f"{where}: {path}: {msg} (schema {schema})")


def validate_bundle_plan(doc: Any, where: str = "plan.json") -> None:
    """Check a bundle ``plan.json`` written by the partitioner; raises :class:`PlanError`."""
    _validate(doc, "plan.schema.json", where)


def validate_costgraph_plan(doc: Any, where: str = "plan.json") -> None:
    """Check a cost-graph plan document; raises :class:`PlanError`."""
    _validate(doc, "plan_costgraph.schema.json", where)
