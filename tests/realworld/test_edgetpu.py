"""Compiled Edge TPU models (issue 19, problem 1): the ``edgetpu-custom-op`` is the Edge TPU
delegate's, placed on the TPU, of unknown cost unless measured, counted as parameters by
``inspect``, and a bundle of it says in one line that it needs libedgetpu here.

The models are the real-model corpus' Coral models (``tools/real_models.py``).
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import edgepart
from edgepart.errors import PlacementInfeasibleError, RuntimeBackendError
from edgepart.tflite.edgetpu import decode_edgetpu_program
from edgepart.tflite.reader import read_model

CORAL = ("coral_mobilenet_v2_edgetpu", "coral_ssd_face_edgetpu", "coral_ssd_red_edgetpu")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edgepart", *args], capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("name", CORAL)
def test_the_compiled_op_is_the_edge_tpu_delegates(real_models: dict[str, Path], name: str) -> None:
    c = edgepart.claims(real_models[name], "coral_devboard")
    tpu = c.delegates["edgetpu"]
    sg = read_model(real_models[name]).main
    compiled = [i for i in range(sg.num_ops) if sg.op_name(i) == "edgetpu-custom-op"]
    assert tpu["takes"] == compiled
    # the ops around it (TFLite_Detection_PostProcess) are placed as usual: on the CPU
    placement = {r["op"]: r["processor"] for r in c.to_dict()["scenarios"]["default"]["placement"]}
    assert {placement[i] for i in compiled} == {"edgetpu"}
    assert {placement[i] for i in range(sg.num_ops) if i not in compiled} <= {"cpu"}


def test_inspect_counts_the_program_and_not_the_tensors_left_behind(
    real_models: dict[str, Path],
) -> None:
    path = real_models["coral_ssd_face_edgetpu"]
    m = read_model(path)
    program = len(m.main.op(0).custom_options or b"")
    assert program > 6_000_000
    info = edgepart.inspect_model(path)
    g = info.summary["subgraphs"][0]
    assert g["program_bytes"] == program
    assert info.summary["parameter_bytes"] >= program
    # 119 tensors of the ops the compiler replaced are referenced by no op
    assert g["unused_tensors"] == 119
    used = set(m.main.op_inputs.idx.tolist()) | set(m.main.op_outputs.idx.tolist())
    want = sum(
        int(m.main.tensor_nbytes[t]) for t in used if t >= 0 and not m.main.tensor_is_constant[t]
    )
    assert g["activation_bytes"] == want
    (prog,) = g["programs"]
    assert prog["estimated_cycles"] > 0 and prog["parameter_bytes"] > 6_000_000
    text = info.report()
    assert "compiled accelerator program 6.68 MB" in text
    assert "cycles estimated by the compiler" in text and "320x320x3" in text


def test_decoding_never_raises_on_damaged_programs(real_models: dict[str, Path]) -> None:
    co = read_model(real_models["coral_mobilenet_v2_edgetpu"]).main.op(0).custom_options
    assert co is not None
    good = decode_edgetpu_program(co)
    assert good.error is None and good.parameter_bytes > 3_000_000
    rng = np.random.default_rng(0)
    for cut in [0, 1, 7, 64, len(co) // 3, len(co) - 5]:
        assert decode_edgetpu_program(co[:cut]).total_bytes == cut
    for _ in range(20):
        b = bytearray(co[:4096])
        for i in rng.integers(0, len(b), 16):
            b[int(i)] = int(rng.integers(0, 256))
        p = decode_edgetpu_program(bytes(b))
        assert isinstance(p.describe(), str)


def test_partition_places_it_on_the_tpu_and_its_cost_is_unknown(
    real_models: dict[str, Path],
) -> None:
    path = real_models["coral_ssd_face_edgetpu"]
    plan = edgepart.place(path, "coral_devboard")
    where = {p.processor: list(p.ops) for p in plan.specs()}
    assert where == {"edgetpu": [0], "cpu": [1]}
    text = plan.report()
    assert "leave out 1 op(s) of unknown cost" in text and "TPU cycles" in text
    r = edgepart.roofline(path, "coral_devboard")
    assert r.rows[0]["procs"]["edgetpu"]["source"] == "unknown"
    assert r.rows[0]["procs"]["cpu"]["supported"] is False
    # a device without an Edge TPU cannot run the compiled op: one line naming it
    with pytest.raises(PlacementInfeasibleError, match=r"op 0 edgetpu-custom-op.*no CPU kernel"):
        edgepart.place(path, "pixel8")


def test_a_bundle_without_libedgetpu_says_so_in_one_line(
    real_models: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "b"
    edgepart.compile(real_models["coral_mobilenet_v2_edgetpu"], "coral_devboard").save(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeBackendError, match=r"libedgetpu\.so\.1.*cannot fall back"):
            edgepart.run_bundle(out, random=True)
    proc = _cli("run", str(out), "--random", "--verify")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("edgepart: error:")]
    assert len(errors) == 1 and "libedgetpu.so.1" in errors[0]
