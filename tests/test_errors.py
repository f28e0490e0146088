"""The error hierarchy: every class is exported, documented and raised somewhere in edgepart,
and the classes nothing else exercises (PassError, UnsupportedOpError) fire where they belong."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import edgepart
from edgepart import errors
from edgepart.bundle import parts
from edgepart.bundle.write import PartitionSpec, build_bundle
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model

PACKAGE = Path(edgepart.__file__).resolve().parent


def _constructed() -> dict[str, list[str]]:
    """Error class name -> ``file:line`` of every call constructing it outside errors.py."""
    out: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "errors.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                name = (
                    f.id
                    if isinstance(f, ast.Name)
                    else f.attr
                    if isinstance(f, ast.Attribute)
                    else ""
                )
                if name in errors.__all__:
                    out.setdefault(name, []).append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return out


def test_every_error_class_is_raised_somewhere() -> None:
    made = _constructed()
    never = [n for n in errors.__all__ if n != "EdgepartError" and n not in made]
    assert never == [], f"declared but never raised: {never}"
    # the root is caught, never raised itself
    assert "EdgepartError" not in made, made.get("EdgepartError")


def test_every_error_class_is_exported_and_says_when_it_is_raised() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.EdgepartError), name
        assert name in edgepart.__all__, name
        assert getattr(edgepart, name) is cls, name
        doc = " ".join((cls.__doc__ or "").split())
        assert len(doc) > 40, f"{name}: say when it is raised"
    public = {n for n in vars(errors) if isinstance(getattr(errors, n), type)}
    assert public == set(errors.__all__)


def _add_model(*, constant_output: bool = False, input_dtype: DType = DType.FLOAT32) -> Model:
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", input_dtype, (1, 4))
    c = g.constant("c", np.ones((1, 4), np.float32))
    y = g.tensor("y", DType.FLOAT32, (1, 4))
    g.op("ADD", [x, c], [y])
    g.output(y)
    if constant_output:
        g.output(c)
    return mb.build()


def test_a_constant_model_output_is_an_unsupported_tensor() -> None:
    with pytest.raises(errors.UnsupportedOpError, match=r"tensor 1 'c' is a constant model output"):
        build_bundle(_add_model(constant_output=True), [PartitionSpec([0])])


def test_a_bundle_input_without_a_numpy_type_is_an_unsupported_tensor() -> None:
    with pytest.raises(
        errors.UnsupportedOpError, match=r"'x' is a partition p0 input of type BFLOAT16"
    ):
        build_bundle(_add_model(input_dtype=DType.BFLOAT16), [PartitionSpec([0])])


def test_a_partition_that_does_not_read_back_is_a_pass_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The writer's output is read back; a broken file is edgepart's bug, named as such."""
    write = parts.write_model
    monkeypatch.setattr(parts, "write_model", lambda piece: write(piece)[:-16])
    with pytest.raises(errors.PassError, match=r"partition p0: extract then write_model .*bug"):
        build_bundle(_add_model(), [PartitionSpec([0])])
