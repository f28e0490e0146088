"""Loading and validating cost graphs: arrays, renumbering, and errors that name the JSON path."""

from __future__ import annotations

import copy
import json
import re
from importlib import resources

import jsonschema
import numpy as np
import pytest
from pgraphs import doc, graph

from edgepart.errors import CostGraphError
from edgepart.placement.costgraph import costgraph_from_dict, load_costgraph
from edgepart.placement.synth import random_costgraph_doc

L = {"cpu": 1.0, "gpu": 2.0}


def _schema() -> dict:
    text = resources.files("edgepart").joinpath("schemas/costgraph.schema.json").read_text()
    return json.loads(text)


def test_arrays_and_defaults():
    d = doc(
        [L, {"cpu": 3.0, "gpu": "unsupported"}, L],
        [(0, 1, 10), (0, 2, 10), (1, 2, 7, "b")],
        inputs=[{"name": "x", "bytes": 5, "consumers": [0, 1]}],
        outputs=[{"src": 2, "bytes": 4}],
    )
    d["nodes"][0]["weight_bytes"] = 100
    d["nodes"][2]["colocation"] = "g"
    g = costgraph_from_dict(d)
    assert g.num_nodes == 3 and g.num_units == 2 and g.num_edges == 3
    assert np.isinf(g.latency[1, 1]) and g.latency[1, 0] == 3.0
    # Edges 0->1 and 0->2 carry one tensor (same src, default label); then the input x and
    # the model output of node 2.
    assert g.tensor_bytes.tolist() == [10, 7, 5, 4]
    assert g.tensor_consumers.tolist() == [(1, 2), (2,), (0, 1), ()]
    # Activation: distinct input tensors + outputs (sum of produced tensors by default).
    assert g.output_bytes.tolist() == [10, 7, 4]
    assert g.activation_bytes.tolist() == [5 + 10, 10 + 5 + 7, 10 + 7 + 4]
    assert g.weight_bytes.tolist() == [100, 0, 0]
    assert g.coloc.tolist() == [-1, -1, 0] and g.coloc_names == ("g",)
    # Link cost = latency + bytes / bandwidth, both directions (symmetric by default).
    assert g.transfer_cost[0, 0, 1] == pytest.approx(1.0 + 10 / 100)
    assert g.transfer_cost[0, 1, 0] == pytest.approx(1.0 + 10 / 100)
    assert g.transfer_cost[0, 0, 0] == 0.0
    assert g.host_domain == g.domain_names.index("dram")
    assert g.tensor_name(1) == "1:b" and g.tensor_name(2) == "x" and g.tensor_name(3) == "2:0"


def test_non_topological_order_is_sorted_stably():
    g = graph([L, L, L, L], [(2, 0, 1), (3, 1, 1)])
    # 2 must precede 0 and 3 precede 1; smallest document position first among ready nodes.
    assert g.ids == (2, 0, 3, 1)


def test_overrides_and_self_link():
    d = doc(
        [L, L, L],
        [(0, 1, 10), (1, 2, 10)],
        procs=[
            {"name": "cpu", "kind": "cpu", "memory_domain": "dram"},
            {"name": "gpu", "kind": "gpu", "memory_domain": "dram"},
        ],
        links=[{"src": "dram", "dst": "dram", "latency_s": 0.25}],
    )
    d["edges"][1]["transfer_s"] = {"dram->dram": 0.125}
    g = costgraph_from_dict(d)
    assert g.self_link.tolist() == [True]
    assert g.transfer_cost[0, 0, 0] == 0.25 and g.transfer_cost[1, 0, 0] == 0.125


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: d["nodes"][1]["latency_s"].update(gpu=-1), "nodes[1].latency_s.gpu: expected"),
        (lambda d: d["nodes"][1]["latency_s"].update(gpu="no"), "nodes[1].latency_s.gpu:"),
        (
            lambda d: d["nodes"][0]["latency_s"].pop("gpu"),
            "nodes[0].latency_s: missing required key 'gpu'",
        ),
        (lambda d: d["nodes"][0]["latency_s"].update(npu=1), "nodes[0].latency_s.npu: unknown key"),
        (lambda d: d["nodes"][0].update(wieght_bytes=1), "nodes[0].wieght_bytes: unknown key"),
        (lambda d: d["nodes"][2].update(id=0), "nodes[2].id: duplicate node id 0"),
        (lambda d: d["nodes"][2].update(id=True), "nodes[2].id: expected a node id"),
        (
            lambda d: d["nodes"][1].update(weight_bytes=1.5),
            "nodes[1].weight_bytes: expected an integer",
        ),
        (lambda d: d["edges"][1].update(dst=9), "edges[1].dst: unknown node id 9"),
        (lambda d: d["edges"][1].update(dst=1), "edges[1]: self-loop on node 1"),
        (
            lambda d: d["edges"].append({"src": 0, "dst": 2, "bytes": 3}),
            "edges[2]: tensor size 3 differs from 4 given by edges[0]",
        ),
        (lambda d: d["edges"].append({"src": 0, "dst": 1, "bytes": 4}), "edges[2]: duplicates"),
        (lambda d: d["edges"][0].pop("bytes"), "edges[0].bytes: missing"),
        (lambda d: d["edges"][0].update(transfer_s={"dram->x": 1}), "edges[0].transfer_s.dram->x"),
        (lambda d: d["processors"][1].update(kind="fpga"), "processors[1].kind: expected one of"),
        (
            lambda d: d["processors"][1].update(units=0),
            "processors[1].units: expected an integer >= 1",
        ),
        (lambda d: d["processors"][1].update(name="cpu"), "processors[1].name: duplicate"),
        (lambda d: d.update(links=[]), "links: no link from memory domain 'dram' to 'vram'"),
        (lambda d: d["links"][0].update(bandwidth_bytes_per_s=0), "links[0].bandwidth_bytes_per_s"),
        (lambda d: d.update(version=2), "version: unsupported version 2"),
        (lambda d: d.update(format="x"), "format: expected 'edgepart-costgraph'"),
        (lambda d: d.update(extra=1), "extra: unknown key"),
        (lambda d: d.update(baseline={"delegate": "npu"}), "baseline.delegate: unknown processor"),
        (lambda d: d.update(outputs=[{"src": 2}]), "outputs[0].bytes: missing"),
        (
            lambda d: d.update(inputs=[{"name": "x", "bytes": 1, "consumers": [0, 0]}]),
            "inputs[0].consumers[1]: node 0 is listed twice",
        ),
    ],
)
def test_errors_name_the_json_path(mutate, needle):
    d = doc([L, L, L], [(0, 1, 4), (1, 2, 4)])
    mutate(d)
    with pytest.raises(CostGraphError, match=re.escape(needle)) as info:
        costgraph_from_dict(d, source="g.json")
    msg = str(info.value)
    assert msg.startswith("g.json: ") and "\n" not in msg


def test_cycle_is_reported_with_node_ids():
    d = doc([L, L, L, L], [(0, 1, 1), (1, 2, 1), (2, 3, 1), (3, 1, 1)])
    d["nodes"][3]["id"] = "d"
    d["edges"][2]["dst"] = "d"
    d["edges"][3]["src"] = "d"
    with pytest.raises(
        CostGraphError,
        match=r"cycle \((1 -> 2 -> 'd' -> 1|2 -> 'd' -> 1 -> 2|'d' -> 1 -> 2 -> 'd')\)",
    ):
        costgraph_from_dict(d)


def test_file_errors(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"format": "edgepart-costgraph",\n  "version": 1,,}')
    with pytest.raises(CostGraphError, match=r"bad.json: invalid JSON at line 2 column 16"):
        load_costgraph(p)
    with pytest.raises(CostGraphError, match="cannot read"):
        load_costgraph(tmp_path / "missing.json")
    p.write_text(json.dumps(doc([L], [])))
    assert load_costgraph(p).num_nodes == 1


@pytest.mark.parametrize("seed", range(5))
def test_schema_accepts_what_the_loader_accepts(seed):
    d = random_costgraph_doc(25, 4, seed, memory_pressure=True, colocation=True)
    jsonschema.validate(d, _schema())
    costgraph_from_dict(d)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["nodes"][1]["latency_s"].update(cpu=-1.0),
        lambda d: d["processors"][0].update(kind="fpga"),
        lambda d: d["edges"][0].update(bytes=-1),
        lambda d: d.update(version=2),
        lambda d: d["nodes"][0].update(color="red"),
    ],
)
def test_schema_and_loader_reject_the_same_structural_errors(mutate):
    d = copy.deepcopy(random_costgraph_doc(8, 2, 0))
    mutate(d)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(d, _schema())
    with pytest.raises(CostGraphError):
        costgraph_from_dict(d)


def test_large_graph_loads_as_arrays():
    g = costgraph_from_dict(random_costgraph_doc(20_000, 4, 1))
    assert g.latency.shape == (20_000, 4)
    assert g.succ.idx.dtype == np.int64 and len(g.pred.idx) == g.num_edges
