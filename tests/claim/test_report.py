"""The JSON-able claim report and its text rendering."""

from __future__ import annotations

import json

import numpy as np
import pytest
from probes import branches_model, six_op_probe

from edgepart.claim.explain import claim_report, format_claim_report
from edgepart.errors import ProfileError, UsageError
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType


def test_report_per_delegate_and_default_placement():
    m = six_op_probe()
    rep = claim_report(m, profile="pixel8")
    assert set(rep["delegates"]) == {"xnnpack", "gpu", "nnapi"}
    x = rep["delegates"]["xnnpack"]
    assert x["processor"] == "cpu"
    assert [p["ops"] for p in x["partitions"]] == [[0, 2], [4, 5]]
    assert x["refused"] == {"CUMSUM: unsupported operator type": [1, 3]}
    gpu = rep["delegates"]["gpu"]
    assert gpu["processor"] == "gpu" and gpu["num_taken"] == 6  # the GPU parser takes CUMSUM
    scen = rep["scenarios"]["default"]
    assert scen["delegates"] == ["gpu"]
    assert {row["processor"] for row in scen["placement"]} == {"gpu"}
    json.dumps(rep)  # JSON-able


def test_requested_delegates_in_order_then_xnnpack():
    m = branches_model(2, [2, 1], refused="REVERSE_V2")
    rep = claim_report(m, delegates=["gpu"])
    scen = rep["scenarios"]["requested"]
    assert scen["delegates"] == ["gpu", "xnnpack"]
    owners = {row["op"]: row["delegate"] for row in scen["placement"]}
    assert owners[0] == owners[1] == "gpu" and owners[3] == "xnnpack"
    assert rep["delegates"]["gpu"]["supported_not_taken"] == [3]
    text = format_claim_report(rep)
    assert "gpu: takes 2/5 ops in 1 partition(s)" in text
    assert "supported but left on the CPU by the partition policy: ops 3" in text


def test_report_is_deterministic():
    m = six_op_probe()
    a = json.dumps(claim_report(m, profile="galaxy_s24_ultra"), sort_keys=True)
    b = json.dumps(claim_report(m, profile="galaxy_s24_ultra"), sort_keys=True)
    assert a == b


def test_report_errors():
    m = six_op_probe()
    with pytest.raises(ProfileError, match="unknown device profile"):
        claim_report(m, profile="nokia3310")
    with pytest.raises(UsageError, match="fallback"):
        claim_report(m, delegates=["cpu_builtin"])
    with pytest.raises(UsageError, match="subgraph 3 does not exist"):
        claim_report(m, subgraph=3)


def test_no_profile_analyses_every_shipped_delegate():
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 4))
    y = g.tensor("y", DType.FLOAT32, (1, 4))
    g.op("ADD", [x, g.constant("c", np.ones((1, 4), np.float32))], [y])
    g.output(y)
    rep = claim_report(mb.build())
    assert "cpu_builtin" not in rep["delegates"]
    assert {"xnnpack", "gpu", "edgetpu", "hexagon"} <= set(rep["delegates"])
    assert rep["delegates"]["hexagon"]["num_taken"] == 0  # float ADD: 8-bit only
