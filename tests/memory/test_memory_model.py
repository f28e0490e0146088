"""Model-level planning: all subgraphs, tensor offsets, TFLM offline plans, and the CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgepart.cli import main
from edgepart.memory import check_plan, plan_arena
from edgepart.memory.model_problem import (
    OFFLINE_PLAN_METADATA,
    model_buffers,
    offline_plan,
    tensor_offsets,
)
from edgepart.tflite.reader import read_model
from edgepart.tflite.writer import save_model


def test_every_subgraph_gets_its_own_arena(corpus: dict[str, Path]) -> None:
    mb = model_buffers(corpus["while_loop"])
    plan = plan_arena(mb.problem)
    assert {m for m in plan.arenas} == {"sg0", "sg1", "sg2"}
    check_plan(mb.problem, plan.offsets)
    lstm = model_buffers(corpus["lstm"])
    assert "sg0/persistent" in lstm.problem.memories  # LSTM state variables


def test_tensor_offsets_resolve_in_place_aliases(corpus: dict[str, Path]) -> None:
    mb = model_buffers(corpus["mobilenet_v2"])
    plan = plan_arena(mb.problem, strategy="tflite")
    off = tensor_offsets(mb, plan, 0)
    lt = mb.lifetimes[0]
    assert lt.alias, "MobileNetV2's residual ADDs run in place"
    for t, root in lt.alias.items():
        assert off[t] == off[root] >= 0
    sg = read_model(corpus["mobilenet_v2"]).main
    assert (off[sg.tensor_is_constant] == -1).all()


@pytest.mark.parametrize("name", ["densenet_tiny", "mobilenet_v2"])
def test_tflm_offline_plan_round_trip(name: str, corpus: dict[str, Path], tmp_path: Path) -> None:
    model, plan = offline_plan(corpus[name], time_limit=2)
    out = tmp_path / "planned.tflite"
    save_model(model, out)
    again = read_model(out)
    raw = again.metadata_bytes(OFFLINE_PLAN_METADATA)
    assert raw is not None
    words = np.frombuffer(raw, dtype="<i4")
    sg = again.main
    assert words[:3].tolist() == [1, 0, sg.num_tensors]
    offsets = words[3:].astype(np.int64)
    assert (offsets[sg.tensor_is_constant] == -1).all()
    # The offsets form a valid plan of the same (no in-place) problem, 16-byte aligned.
    mb = model_buffers(again, alignment=16, inplace=False, subgraphs=[0])
    assert mb.problem.memories == ("sg0",)
    peaks = check_plan(mb.problem, {b: int(offsets[int(b.split(":t")[1])]) for b in mb.problem.ids})
    assert peaks["sg0"] == plan.arenas["sg0"].size
    # The metadata does not disturb the regular runtime.
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(out))
    it.allocate_tensors()
    it.invoke()


def test_cli_on_a_model(
    corpus: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan.json"
    tflm = tmp_path / "tflm.tflite"
    code = main(
        ["plan-memory", str(corpus["densenet_tiny"]), "-o", str(out), "--tflm-plan", str(tflm)]
    )
    assert code == 0
    text = capsys.readouterr().out
    rows = {ln.split()[1]: ln.split() for ln in text.splitlines() if ln.startswith("sg0 ")}
    assert float(rows["tflite"][4]) > 1.05  # DenseNet's long-lived concat inputs trip greedy
    assert rows["search"][4] == "1.0000"
    assert out.exists() and tflm.exists()
    assert read_model(tflm).metadata_bytes(OFFLINE_PLAN_METADATA) is not None
