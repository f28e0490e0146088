"""Models LiteRT crashes on never reach it; where it can still crash, edgepart survives.

Custom ops whose kernels parse unverified FlexBuffer options (no options: SIGSEGV in
``Interpreter()``; garbage: SIGSEGV), recursive control flow (stack overflow while preparing),
LiteRT's RuntimeError from ``allocate_tensors``, absurd thread counts and arena sizes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import flatbuffers.flexbuffers as flex
import numpy as np
import pytest
from sec_helpers import cli, edit_plan, one_line_error, rewrite_manifest

import edgepart
from edgepart.errors import RuntimeBackendError, UnsupportedOpError, UsageError
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.tflite.litert_safety import FLEX_OPTION_KEYS, check_custom_options, check_model
from edgepart.tflite.reader import read_model
from edgepart.tflite.writer import write_model

GARBAGE = bytes(range(7, 40))


def _custom(tmp_path: Path, op: str, options: bytes | None, n_in: int = 1) -> Path:
    mb = ModelBuilder()
    g = mb.subgraph("main")
    ins = [g.input(f"x{i}", DType.FLOAT32, (16, 4)) for i in range(n_in)]
    y = g.tensor("y", DType.FLOAT32, (16, 4))
    g.op(op, ins, [y], custom_options=options)
    g.output(y)
    f = tmp_path / f"{op}_{'none' if options is None else len(options)}_{n_in}.tflite"
    f.write_bytes(write_model(mb.build()))
    return f


def _flex(values: dict) -> bytes:
    b = flex.Builder()
    with b.Map():
        for k, v in sorted(values.items()):
            if isinstance(v, bool):
                b.Bool(k, v)
            elif isinstance(v, int):
                b.Int(k, v)
            else:
                b.Float(k, v)
    return bytes(b.Finish())


VALID = {
    "AudioSpectrogram": {"window_size": 256, "stride": 128, "magnitude_squared": True},
    "Mfcc": {
        "upper_frequency_limit": 4000,
        "lower_frequency_limit": 20,
        "filterbank_channel_count": 40,
        "dct_coefficient_count": 13,
    },
    "TFLite_Detection_PostProcess": {
        "max_detections": 10,
        "max_classes_per_detection": 1,
        "nms_score_threshold": 0.5,
        "nms_iou_threshold": 0.6,
        "num_classes": 90,
        "y_scale": 10.0,
        "x_scale": 10.0,
        "h_scale": 5.0,
        "w_scale": 5.0,
    },
    "NumericVerify": {"tolerance": 0.1, "log_if_failed": False},
}


@pytest.mark.parametrize("op", sorted(FLEX_OPTION_KEYS))
def test_flexbuffer_options_are_verified(op):
    assert check_custom_options(op, _flex(VALID[op])) is None
    assert check_custom_options(op, None) == "it has no custom_options"
    for bad in (b"", b"\x01", GARBAGE, _flex(VALID[op])[:-3]):
        assert "not a well-formed FlexBuffer map" in check_custom_options(op, bad)
    missing = dict(VALID[op])
    missing.pop(FLEX_OPTION_KEYS[op][0])
    assert "lacks" in check_custom_options(op, _flex(missing))
    # every truncation and every single-byte change is either accepted or refused, never raises
    good = _flex(VALID[op])
    rng = np.random.default_rng(0)
    for k in range(len(good)):
        check_custom_options(op, good[:k])
        mutated = bytearray(good)
        mutated[k] = int(rng.integers(0, 256))
        check_custom_options(op, bytes(mutated))


def test_real_models_with_these_ops_pass(corpus):
    check_model(read_model(corpus["custom_op"]), "custom_op")  # AudioSpectrogram and Mfcc


@pytest.mark.parametrize("op", ["AudioSpectrogram", "Mfcc", "TFLite_Detection_PostProcess"])
@pytest.mark.parametrize("options", [None, GARBAGE], ids=["no-options", "garbage"])
def test_crashing_custom_ops_are_one_line_errors(tmp_path, op, options):
    model = _custom(tmp_path, op, options)
    one_line_error(cli("profile", str(model), "--no-progress"), f"op 0 {op}", "would crash")
    out = tmp_path / "b"
    proc = cli("partition", str(model), "--profile", "pixel8", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    for extra in ([], ["--verify"]):
        one_line_error(cli("run", str(out), "--random", *extra), "partition p0", "would crash")


def _recursive(tmp_path: Path, kind: str) -> Path:
    mb = ModelBuilder()
    g = mb.subgraph("main")
    c = g.input("c", DType.BOOL, ())
    x = g.input("x", DType.FLOAT32, (1, 4))
    y = g.tensor("y", DType.FLOAT32, (1, 4))
    if kind == "if":
        g.op("IF", [c, c, x], [y], options={"then_subgraph_index": 0, "else_subgraph_index": 0})
    elif kind == "while":
        cs = mb.subgraph("cond")
        cc = cs.input("cc", DType.BOOL, ())
        cs.input("cx", DType.FLOAT32, (1, 4))
        cs.output(cc)
        c2 = g.tensor("c2", DType.BOOL, ())
        g.op("WHILE", [c, x], [c2, y], options={"cond_subgraph_index": 1, "body_subgraph_index": 0})
        g.output(c2)
    else:  # IF in main calls subgraph 1, whose CALL_ONCE initializes with subgraph 0
        b = mb.subgraph("b")
        bc = b.input("bc", DType.BOOL, ())
        bx = b.input("bx", DType.FLOAT32, (1, 4))
        by = b.tensor("by", DType.FLOAT32, (1, 4))
        b.op("CALL_ONCE", [], [], options={"init_subgraph_index": 0})
        b.op("RELU", [bx], [by])
        b.output(by)
        del bc
        g.op("IF", [c, c, x], [y], options={"then_subgraph_index": 1, "else_subgraph_index": 1})
    g.output(y)
    f = tmp_path / f"recursive_{kind}.tflite"
    f.write_bytes(write_model(mb.build()))
    return f


@pytest.mark.parametrize("kind", ["if", "while", "mutual"])
def test_recursive_control_flow_is_refused(tmp_path, kind):
    model = _recursive(tmp_path, kind)
    with pytest.raises(UnsupportedOpError, match=r"subgraphs call each other in a cycle \(0 -> "):
        check_model(read_model(model), str(model))
    one_line_error(cli("profile", str(model), "--no-progress"), "call each other in a cycle")


def test_a_crash_the_checks_miss_is_contained(tmp_path, monkeypatch):
    """With the checks switched off in this process, LiteRT really crashes, in the child."""
    from edgepart.api import profiling

    monkeypatch.setattr(profiling, "check_model", lambda model, where: None)
    model = _custom(tmp_path, "AudioSpectrogram", None)
    with pytest.raises(RuntimeBackendError, match=r"LiteRT crashed \(signal SIGSEGV\)"):
        profiling.profile_host(model, budget=0.001)


def test_verify_contains_a_crash_of_the_source_model(tmp_path, monkeypatch):
    from edgepart.runtime import verification

    model = _custom(tmp_path, "Mfcc", GARBAGE, n_in=2)
    out = tmp_path / "b"
    edgepart.compile(model, "pixel8").save(out)
    monkeypatch.setattr(verification, "check_model", lambda model, where: None)
    with pytest.raises(UnsupportedOpError, match="would crash"):  # partitions are checked too
        edgepart.run_bundle(out, random=True, verify=True)
    # the source model alone, as --verify runs it
    with pytest.raises(RuntimeBackendError, match=r"LiteRT crashed \(signal SIGSEGV\)"):
        verification.run_isolated(
            verification.reference_outputs,
            (str(model), "AUTO", 1, None, [(0, "x0"), (1, "x1")], [(2, "y")], []),
            what="--verify",
        )


def test_litert_prepare_errors_are_one_line(tmp_path):
    """AudioSpectrogram with empty options and three inputs loads, then fails to prepare."""
    model = _custom(tmp_path, "AudioSpectrogram", b"", n_in=3)
    with pytest.raises(UsageError, match=r"LiteRT cannot run the source model .*NumInputs"):
        from edgepart.runtime.verification import reference_outputs

        reference_outputs(str(model), "AUTO", 1, None, [], [], [])
    # options the checks accept but the kernel refuses at prepare: one line from run
    model = _custom(tmp_path, "AudioSpectrogram", _flex(VALID["AudioSpectrogram"]), n_in=3)
    out = tmp_path / "b"
    assert cli("partition", str(model), "--profile", "pixel8", "-o", str(out)).returncode == 0
    line = one_line_error(cli("run", str(out), "--random"), "LiteRT cannot prepare it")
    assert line.startswith("edgepart: error: partition p0 ") and "NumInputs" in line


def test_absurd_thread_counts_are_refused(bundle):
    edit_plan(bundle, lambda p: p["partitions"][0].update(threads=1_000_000))
    one_line_error(cli("run", str(bundle), "--random", "--executor", "builtin"), "threads")
    shutil.rmtree(bundle)


def test_absurd_thread_count_options(small_model, tmp_path, bundle):
    one_line_error(cli("run", str(bundle), "--random", "--threads", "100000"), "num_threads")
    one_line_error(cli("profile", str(small_model), "--threads", "100000"), "threads 100000")


@pytest.mark.parametrize("size", [64 << 30, 1 << 62])
def test_an_absurd_arena_is_not_allocated_as_written(tmp_path, small_model, size):
    out = tmp_path / "b"
    edgepart.compile(small_model, "pixel8").save(out)
    if not (out / "arena.json").exists():
        pytest.skip("no arena.json")
    doc = json.loads((out / "arena.json").read_text())
    for mem in doc["memories"].values():
        mem["size"] = size
    (out / "arena.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
    rewrite_manifest(out)
    args = ("run", str(out), "--random", "--benchmark", "--repeat", "2", "--warmup", "0")
    proc = cli(*args, "--stream", "4")
    if proc.returncode == 2:  # the arena checker may refuse the document itself
        one_line_error(proc, "arena.json")
    else:
        assert proc.returncode == 0, proc.stderr
        assert "stream: 4 inputs" in proc.stdout
    # boundary tensors placed at the far end of the claimed memory: refused, not allocated
    for b in doc["buffers"]:
        if b["scope"] == "boundary":
            b["offset"] = size - b["size"] - (size - b["size"]) % doc["alignment"]
    (out / "arena.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
    rewrite_manifest(out)
    proc = cli(*args, "--stream", "4")
    one_line_error(proc)
    assert "arena" in proc.stderr


def test_custom_option_values_reads_only_safe_options():
    from flatbuffers import flexbuffers

    from edgepart.tflite.litert_safety import custom_option_values

    good = flexbuffers.Dumps({"window_size": 256, "stride": 128, "magnitude_squared": True})
    assert custom_option_values("AudioSpectrogram", good) == {
        "window_size": 256, "stride": 128, "magnitude_squared": 1}  # fmt: skip
    assert custom_option_values("AudioSpectrogram", good[:-3]) is None  # truncated
    assert custom_option_values("AudioSpectrogram", None) is None
    assert custom_option_values("Mfcc", good) is None  # lacks the keys Mfcc reads
    assert custom_option_values("MyOp", good) is None  # not an op LiteRT ships
