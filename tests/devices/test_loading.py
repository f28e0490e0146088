"""Every shipped delegate and profile file loads; broken files fail with one precise line."""

from __future__ import annotations

import copy

import pytest
import yaml

from edgepart.devices.delegate import delegate_dir, delegate_names, load_delegate
from edgepart.devices.profile import PROVENANCES, load_profile, profile_dir, profile_names
from edgepart.errors import ProfileError


def test_shipped_delegates_load():
    names = delegate_names()
    assert {
        "xnnpack",
        "cpu_builtin",
        "gpu",
        "gpu_mldrift",
        "nnapi",
        "hexagon",
        "edgetpu",
        "npu",
    } <= set(names)
    for n in names:
        spec = load_delegate(n)
        assert spec.name == n and spec.ops and spec.source


def test_shipped_profiles_load_with_provenance_everywhere():
    names = profile_names()
    assert len(names) >= 6 and "x86_host" in names
    for n in names:
        p = load_profile(n)
        quantities = [m.capacity_bytes for m in p.memory_domains.values()]
        quantities += [m.bandwidth_bytes_per_s for m in p.memory_domains.values()]
        for x in p.processors:
            quantities += [
                x.units,
                x.threads,
                x.memory_bandwidth_bytes_per_s,
                x.memory_capacity_bytes,
                x.dispatch_overhead_s,
                *x.peak_ops_per_s.values(),
            ]
            load_delegate(x.delegate)
        for link in p.links:
            quantities += [link.bandwidth_bytes_per_s, link.latency_s]
        assert all(q.provenance in PROVENANCES and q.source for q in quantities)
    host = load_profile("x86_host")
    assert all(q.provenance == "measured" for q in host.processors[0].peak_ops_per_s.values())


def test_user_file_by_path(tmp_path):
    doc = yaml.safe_load((profile_dir() / "x86_host.yaml").read_text())
    doc["name"] = "my_box"
    path = tmp_path / "my_box.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert load_profile(str(path)).name == "my_box"


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ProfileError, match=r"shipped delegates: .*xnnpack"):
        load_delegate("tensorrt")
    with pytest.raises(ProfileError, match=r"shipped profiles: .*pixel8"):
        load_profile("iphone")


def _delegate_doc():
    return yaml.safe_load((delegate_dir() / "xnnpack.yaml").read_text())


def _profile_doc():
    return yaml.safe_load((profile_dir() / "coral_devboard.yaml").read_text())


def _set(path, value):
    def mutate(doc):
        node = doc
        for k in path[:-1]:
            node = node[k]
        if value is _DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = value
        return doc

    return mutate


_DELETE = object()

# (kind, mutation, key path expected in the message, words expected in the message)
BROKEN = [
    ("delegate", _set(["schema"], "edgepart/delegate@9"), "schema", "allowed: edgepart/delegate@1"),
    ("delegate", _set(["target"], "fpga"), "target", "allowed: cpu, gpu, dsp, npu"),
    ("delegate", _set(["claiming", "method"], "magic"), "claiming.method", "allowed: epochs"),
    (
        "delegate",
        _set(["claiming", "max_delegated_partitions"], -1),
        "claiming.max_delegated_partitions",
        "allowed: >= 0",
    ),
    ("delegate", _set(["claiming", "greedy"], "maybe"), "claiming.greedy", "interpreter"),
    ("delegate", _set(["claiming", "colour"], 1), "claiming.colour", "unknown key"),
    ("delegate", _set(["ops", "CONV_3X3"], {}), "ops.CONV_3X3", "unknown builtin operator"),
    (
        "delegate",
        _set(["ops", "ADD", "max_version"], "two"),
        "ops.ADD.max_version",
        "expected an integer",
    ),
    (
        "delegate",
        _set(["ops", "ADD", "dtypes"], {"activations": ["FLOAT33"]}),
        "ops.ADD.dtypes.activations[0]",
        "allowed: FLOAT32",
    ),
    (
        "delegate",
        _set(["ops", "ADD", "dtypes"], {"biases": ["FLOAT32"]}),
        "ops.ADD.dtypes.biases",
        "allowed: activations, weights, indices",
    ),
    (
        "delegate",
        _set(["ops", "SOFTMAX", "constraints"], ["softmax_beta_is_2"]),
        "ops.SOFTMAX.constraints[0]",
        "valid names:",
    ),
    (
        "delegate",
        _set(["ops", "ADD", "constraints"], [{"stride_le": "three"}]),
        "ops.ADD.constraints[0]",
        "expects int",
    ),
    (
        "delegate",
        _set(["ops", "ADD", "constraints"], [{"fused_activation_in": ["SWISH"]}]),
        "ops.ADD.constraints[0]",
        "allowed: NONE",
    ),
    (
        "delegate",
        _set(["ops", "ADD", "constraints"], ["stride_le"]),
        "ops.ADD.constraints[0]",
        "needs an argument",
    ),
    ("delegate", _set(["name"], "other"), "name", "must match the file name"),
    ("delegate", _set(["library", "load"], "dlopen"), "library.load", "allowed: external, builtin"),
    ("delegate", _set(["library", "load"], _DELETE), "library.load", "missing required key"),
    (
        "delegate",
        _set(["library", "executor"], "gpu"),
        "library.executor",
        "allowed: xnnpack, builtin, reference",
    ),
    (
        "delegate",
        _set(["library"], {"load": "builtin", "executor": "xnnpack", "files": []}),
        "library.files",
        "unknown key",
    ),
    (
        "delegate",
        _set(["library"], {"load": "external", "files": ["/opt/qnn/libQnnTFLiteDelegate.so"]}),
        "library.files[0]",
        "no directory",
    ),
    (
        "delegate",
        _set(["library"], {"load": "external", "options": {"backend": "htp;x:y"}}),
        "library.options.backend",
        "without ';' or ':'",
    ),
    (
        "delegate",
        _set(["library"], {"load": "external", "fallback": "gpu"}),
        "library.fallback",
        "allowed: xnnpack, builtin, reference",
    ),
    (
        "delegate",
        _set(["benchmark_model", "flags"], ["-use_gpu"]),
        "benchmark_model.flags[0]",
        "--name=value",
    ),
    (
        "delegate",
        _set(["benchmark_model", "flags"], ["--external_delegate_path={lib}"]),
        "benchmark_model.flags[0]",
        "{library} stands for",
    ),
    ("delegate", _set(["benchmark_model", "flags"], []), "benchmark_model.flags", "non-empty"),
    (
        "delegate",
        _set(["benchmark_model", "provider"], "GPU; rm -rf"),
        "benchmark_model.provider",
        "the name the tool logs",
    ),
    ("delegate", _set(["benchmark_model", "label"], "external"), "benchmark_model.label", "not"),
    ("delegate", _set(["benchmark_model", "colour"], 1), "benchmark_model.colour", "unknown key"),
    ("delegate", _set(["predicates"], "os"), "predicates", "is not a predicate module"),
    ("delegate", _set(["source"], _DELETE), "source", "missing required key"),
    ("profile", _set(["schema"], 3), "schema", "allowed: edgepart/device@1"),
    (
        "profile",
        _set(["processors", 0, "kind"], "tpu"),
        "processors[0].kind",
        "allowed: cpu, gpu, dsp, npu",
    ),
    (
        "profile",
        _set(["processors", 1, "delegate"], "coral"),
        "processors[1].delegate",
        "allowed: cpu_builtin",
    ),
    (
        "profile",
        _set(["processors", 0, "units", "provenance"], "guess"),
        "processors[0].units.provenance",
        "allowed: vendor_spec, third_party, measured, estimated",
    ),
    (
        "profile",
        _set(["processors", 0, "units", "source"], _DELETE),
        "processors[0].units.source",
        "missing required key",
    ),
    (
        "profile",
        _set(
            ["processors", 0, "peak_ops_per_s", "fp64"],
            {"value": 1, "provenance": "estimated", "source": "x"},
        ),
        "processors[0].peak_ops_per_s.fp64",
        "allowed: fp32, fp16, int8",
    ),
    (
        "profile",
        _set(["processors", 0, "threads", "value"], 2.5),
        "processors[0].threads.value",
        "a whole number",
    ),
    (
        "profile",
        _set(["processors", 0, "memory_bandwidth_bytes_per_s", "value"], -3),
        "processors[0].memory_bandwidth_bytes_per_s.value",
        ">= 0",
    ),
    (
        "profile",
        _set(["processors", 0, "memory_domain"], "l3"),
        "processors[0].memory_domain",
        "allowed: dram, tpu_sram",
    ),
    ("profile", _set(["processors", 1, "name"], "cpu"), "processors[1].name", "used twice"),
    ("profile", _set(["links", 0, "to"], "dram"), "links[0].to", "itself"),
    (
        "profile",
        _set(["links", 0, "latency_s", "value"], "1e-5"),
        "links[0].latency_s.value",
        "write 1.0e-5",
    ),
    ("profile", _set(["default_delegates"], ["gpu", "gpu"]), "default_delegates", "twice"),
    ("profile", _set(["memory_domains"], {}), "memory_domains", "at least one"),
    ("profile", _set(["processors"], []), "processors", "non-empty"),
]


@pytest.mark.parametrize(
    "kind,mutate,where,words", BROKEN, ids=[f"{k}:{w}" for k, _, w, _ in BROKEN]
)
def test_broken_file_gives_one_line_with_file_and_key_path(tmp_path, kind, mutate, where, words):
    doc = mutate(copy.deepcopy(_delegate_doc() if kind == "delegate" else _profile_doc()))
    stem = "xnnpack" if kind == "delegate" else "coral_devboard"
    path = tmp_path / f"{stem}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    load = load_delegate if kind == "delegate" else load_profile
    with pytest.raises(ProfileError) as err:
        load(str(path))
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}: {where}:"), msg
    assert words in msg, msg


@pytest.mark.parametrize(
    "text,words",
    [
        ("schema: [unclosed", "YAML syntax error at line 1"),
        ("- just\n- a list\n", "<root>: expected a mapping"),
        ("", "<root>: expected a mapping"),
    ],
)
def test_malformed_yaml(tmp_path, text, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError) as err:
        load_profile(str(path))
    assert str(err.value).startswith(str(path)) and words in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(ProfileError, match="no such file"):
        load_delegate(str(tmp_path / "nope.yaml"))


def test_shipped_files_match_the_json_schemas():
    import json

    import jsonschema

    root = delegate_dir().parent / "edgepart" / "schemas"
    dschema = json.loads((root / "delegate.schema.json").read_text())
    pschema = json.loads((root / "device_profile.schema.json").read_text())
    for n in delegate_names():
        jsonschema.validate(yaml.safe_load((delegate_dir() / f"{n}.yaml").read_text()), dschema)
    for n in profile_names():
        jsonschema.validate(yaml.safe_load((profile_dir() / f"{n}.yaml").read_text()), pschema)
