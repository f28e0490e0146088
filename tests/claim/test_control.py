"""Control edges: the metadata format and the side-effect chain."""

from __future__ import annotations

import numpy as np
import pytest
from probes import _variables_probe, control_edge_probe, serialize_control_dependencies

from edgepart.claim.control import (
    might_have_side_effect,
    model_control_edges,
    parse_control_dependencies,
)
from edgepart.errors import ModelFormatError


def test_metadata_roundtrip_and_errors():
    edges = [[(1, 2), (2, 3), (-5, 70000)], [], [(0, 1)]]
    assert parse_control_dependencies(serialize_control_dependencies(edges)) == edges
    with pytest.raises(ModelFormatError, match="version"):
        parse_control_dependencies(b"\x02\x00")
    with pytest.raises(ModelFormatError, match="truncated"):
        parse_control_dependencies(serialize_control_dependencies(edges)[:-1])
    with pytest.raises(ModelFormatError, match="trailing"):
        parse_control_dependencies(serialize_control_dependencies(edges) + b"\x00")


def test_model_edges_need_one_list_per_subgraph():
    assert model_control_edges(control_edge_probe(with_metadata=True)) == [[(2, 3)]]
    assert model_control_edges(control_edge_probe(with_metadata=False)) is None


def test_side_effect_ops_are_resource_users():
    flags = might_have_side_effect(_variables_probe().main)
    # VAR_HANDLE, READ_VARIABLE and ASSIGN_VARIABLE touch the resource; ADD/CUMSUM/MUL do not
    assert np.flatnonzero(flags).tolist() == [0, 1, 3]
