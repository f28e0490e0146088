"""Bounded work for every loader: YAML bombs, deep nesting, duplicate keys, huge integers,
absurd counts, lying .npy headers, non-regular files, and a model whose ops form a cycle.
Each is one EdgepartError line (exit 2 in the CLI), quickly, never a traceback."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from sec_helpers import cli, edit_plan, one_line_error

import edgepart
from edgepart.cost.predictor import load_predictor
from edgepart.errors import (
    BundleError,
    CostGraphError,
    ModelFormatError,
    PredictorError,
    ProfileError,
    UsageError,
)
from edgepart.fileio import read_npy
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.placement.costgraph import load_costgraph
from edgepart.placement.synth import random_costgraph_doc
from edgepart.profiling.calibrate import load_measurements
from edgepart.tflite.writer import write_model

REPO = Path(__file__).resolve().parents[2]
BOMB = "\n".join(
    ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    + [
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    ]
)


def _one_line(err: pytest.ExceptionInfo[Exception]) -> str:
    msg = str(err.value)
    assert msg and "\n" not in msg
    return msg


def test_billion_laughs_yaml_is_refused_quickly(tmp_path):
    f = tmp_path / "bomb.yaml"
    f.write_text(BOMB + "\n")
    assert f.stat().st_size < 1000  # 10^9 values once expanded
    t = time.perf_counter()
    with pytest.raises(ProfileError) as err:
        edgepart.load_device(f)
    assert time.perf_counter() - t < 10  # was 30-52 s and MemoryError
    assert "YAML bomb" in _one_line(err) and "line " in str(err.value)
    assert len(str(err.value)) < 400  # the expanded value is never repr()'d


@pytest.mark.parametrize("opener,closer", [("[", "]"), ("{a: ", "}")])
def test_deep_yaml_is_one_line(tmp_path, opener, closer):
    f = tmp_path / "deep.yaml"
    f.write_text(opener * 5000 + "1" + closer * 5000 + "\n")
    with pytest.raises(ProfileError) as err:
        edgepart.load_device(f)
    assert "nested deeper than" in _one_line(err)
    one_line_error(cli("profiles", "validate", str(f)), "nested deeper than")


def test_duplicate_yaml_keys_are_refused(tmp_path):
    text = (REPO / "device_profiles" / "x86_host.yaml").read_text()
    f = tmp_path / "x86_host.yaml"
    edited = text.replace("default_delegates: []", "default_delegates: []\nsoc: other")
    f.write_text(edited)
    line = edited.splitlines().index("soc: other") + 1  # the second 'soc' is named
    with pytest.raises(ProfileError) as err:
        edgepart.load_device(f)
    assert "'soc' appears twice" in _one_line(err) and f"line {line}," in str(err.value)
    one_line_error(cli("profiles", "validate", str(f)), "appears twice")


def test_absurd_unit_counts_are_refused(tmp_path):
    text = (REPO / "device_profiles" / "x86_host.yaml").read_text()
    f = tmp_path / "x86_host.yaml"
    f.write_text(text.replace("units: {value: 2,", "units: {value: 1000000000000,"))
    with pytest.raises(ProfileError) as err:
        edgepart.load_device(f)
    assert "units" in _one_line(err) and "<= 1024" in str(err.value)


def test_a_fifo_as_yaml_does_not_hang(tmp_path):
    f = tmp_path / "p.yaml"
    os.mkfifo(f)
    done: list[BaseException] = []

    def load() -> None:
        try:
            edgepart.load_device(f)
        except BaseException as e:  # collected for the assertion below
            done.append(e)

    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(20)
    assert done and isinstance(done[0], ProfileError), done
    assert "not a regular file" in str(done[0])


def _costgraph(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "g.json"
    f.write_text(text)
    return f


def test_deep_costgraph_is_one_line(tmp_path):
    f = _costgraph(tmp_path, '{"format": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(CostGraphError) as err:
        load_costgraph(f)
    assert "nested deeper than" in _one_line(err)
    one_line_error(cli("partition", "--graph", str(f)), "nested deeper than")


@pytest.mark.parametrize("value", ["9" * 5000, str(2**64), str(-(2**63) - 1)])
def test_costgraph_integers_beyond_64_bits(tmp_path, value):
    doc = random_costgraph_doc(4, 2, 1)
    text = json.dumps(doc).replace('"bytes": ', f'"bytes": {value}, "x": ', 1)
    f = _costgraph(tmp_path, text)
    with pytest.raises(CostGraphError) as err:
        load_costgraph(f)
    assert "64" in _one_line(err) or "integer" in str(err.value)


def test_costgraph_units_are_bounded(tmp_path):
    doc = random_costgraph_doc(4, 2, 1)
    doc["processors"][0]["units"] = 10**12
    f = _costgraph(tmp_path, json.dumps(doc))
    with pytest.raises(CostGraphError) as err:
        load_costgraph(f)
    assert "units" in _one_line(err)


def test_deep_bundle_json_is_one_line(bundle):
    edit_plan(bundle, lambda p: p.update(extra=json.loads("[" * 900 + "]" * 900)))
    text = (bundle / "plan.json").read_text()
    (bundle / "plan.json").write_text(
        text.replace('"extra": ', '"extra": ' + "[" * 5000, 1).replace("\n}", "]" * 5000 + "\n}")
    )
    from sec_helpers import rewrite_manifest

    rewrite_manifest(bundle)
    with pytest.raises(BundleError) as err:
        edgepart.load_bundle(bundle)
    assert "nested deeper than" in _one_line(err)


def _npy(tmp_path: Path, header_shape: str, data: bytes) -> Path:
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': {header_shape}, }}"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    f = tmp_path / "x.npy"
    f.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + data)
    return f


def test_npy_header_claiming_1e11_floats_is_not_allocated(tmp_path):
    f = _npy(tmp_path, "(100000000000,)", b"\0" * 64)
    with pytest.raises(UsageError) as err:
        read_npy(f)
    assert "400,000,000,000 bytes" in _one_line(err) and "holds 64 bytes" in str(err.value)


def test_npy_inputs_to_run(tmp_path, bundle):
    empty = tmp_path / "empty.npy"
    empty.write_bytes(b"")
    one_line_error(cli("run", str(bundle), "--input", f"0={empty}"), "not a .npy file")
    zero = tmp_path / "zero.npy"
    np.save(zero, np.zeros((0,), np.float32))
    one_line_error(cli("run", str(bundle), "--input", f"0={zero}"), "got shape [0]")
    huge = _npy(tmp_path, "(100000000000,)", b"")
    one_line_error(cli("run", str(bundle), "--input", f"0={huge}"), "truncated or corrupted")


def _cyclic_model() -> bytes:
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 4))
    a, b, y = (g.tensor(n, DType.FLOAT32, (1, 4)) for n in "aby")
    g.op("ADD", [x, b], [a])
    g.op("ADD", [a, x], [b])
    g.op("RELU", [a], [y])
    g.output(y)
    return write_model(mb.build())


def test_plan_memory_refuses_a_cyclic_model(tmp_path):
    f = tmp_path / "cyc.tflite"
    f.write_bytes(_cyclic_model())
    one_line_error(cli("plan-memory", str(f)), "subgraph 0", "cycle")
    from edgepart.memory.model_problem import model_buffers

    with pytest.raises(ModelFormatError, match="cycle"):
        model_buffers(f)


def test_a_costgraph_key_with_a_newline_is_named_on_one_line(tmp_path):
    """Found by the costgraph fuzz harness: an unknown key holding a newline was copied into
    the message as is, making it two lines."""
    doc = random_costgraph_doc(4, 2, 1)
    doc["links"][0]["band\nwidth"] = 1
    with pytest.raises(CostGraphError) as err:
        load_costgraph(_costgraph(tmp_path, json.dumps(doc)))
    assert 'links[0]["band\\nwidth"]: unknown key' in _one_line(err)


def test_predictor_and_measurement_files_are_regular_files_read_with_limits(tmp_path):
    """A FIFO given as a latency predictor or calibration measurements file is refused at once
    (it used to be opened with a blocking read and hang), as is a missing file."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(PredictorError, match="is a FIFO"):
        load_predictor(fifo)
    with pytest.raises(UsageError, match="is a FIFO"):
        load_measurements(fifo)
    with pytest.raises(UsageError, match="no such file"):
        load_measurements(tmp_path / "missing.npz")
