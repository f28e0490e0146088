"""benchmarks/column_stacks.py: the held-out column models it builds, and its refusal of a bad
predictor file."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import column_stacks  # noqa: E402  (benchmarks/ on sys.path)

from edgepart.tflite.reader import read_model_bytes  # noqa: E402


def test_every_group_is_built_in_int8_and_float_with_its_step_kind():
    built = column_stacks.models(3)
    groups = {g for g, _ in built.values()}
    assert groups == {
        f"{name} {fam}" for name, _, _, _ in column_stacks.GROUPS for fam in ("q8", "f32")
    }
    of_group = {name: (kind, length, stack) for name, kind, length, stack in column_stacks.GROUPS}
    ops_of = {"conv": "CONV_2D", "fc": "FULLY_CONNECTED", "stream": "READ_VARIABLE"}
    stacks = 0
    for key, (group, content) in built.items():
        kind, length, stack = of_group[group.rsplit(" ", 1)[0]]
        sg = read_model_bytes(content).main
        names = [sg.op_name(i) for i in range(sg.num_ops)]
        if kind in ("conv", "fc"):
            assert names.count(ops_of[kind]) == length, (key, group)
        elif kind == "stream":
            reads = names.count("READ_VARIABLE")
            assert reads == length if stack else reads >= 1, key
        if stack:  # one configuration: every layer's weights (or state) of one shape
            if kind == "stream":
                tensors = [sg.op(i).outputs[0] for i, n in enumerate(names) if n == "READ_VARIABLE"]
            else:
                tensors = [sg.op(i).inputs[1] for i, n in enumerate(names) if n == ops_of[kind]]
            shapes = {sg.tensor(int(t)).shape for t in tensors}
            assert len(tensors) == length and len(shapes) == 1, (key, shapes)
            stacks += 1
    assert sum(1 for g, _ in built.values() if g.startswith("stream x6")) == 2 * 3
    assert stacks == 2 * (3 + 2 + 2)


def test_a_file_that_is_not_a_predictor_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    bad = tmp_path / "p.json"
    bad.write_text("{}")
    monkeypatch.setattr(sys, "argv", ["column_stacks.py", str(bad)])
    assert column_stacks.main() == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(bad) in err[0]
