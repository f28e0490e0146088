"""Executors per processor: kernel sets, external delegate libraries, host fallback."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter
from rt_cuts import contiguous

from edgepart.bundle import ExecutorSpec, PartitionSpec, build_bundle, write_bundle
from edgepart.errors import RuntimeBackendError, UsageError
from edgepart.runtime import HostFallbackWarning, PartitionedInterpreter, choose_executor
from edgepart.tflite.reader import read_model


@pytest.fixture(scope="module")
def gpu_bundle(corpus):
    """mobilenet_v2 with its middle partition planned for the GPU of a Pixel 8."""
    path = corpus["mobilenet_v2"]
    a, b, c = contiguous(read_model(path), 3, seed=4)
    return build_bundle(
        path,
        [PartitionSpec(a), PartitionSpec(b, processor="gpu"), PartitionSpec(c, processor="tpu")],
        profile="pixel8",
    )


def _run(pi, x):
    pi.allocate_tensors()
    pi.set_tensor(0, x)
    pi.invoke()
    return pi.get_tensor(171)


def test_choices_follow_the_delegate_of_each_processor(gpu_bundle):
    parts = gpu_bundle.plan.partitions
    env: dict[str, str] = {}
    kinds = [choose_executor(p, environ=env).kind for p in parts]
    assert [p.delegate for p in parts] == ["xnnpack", "gpu", "nnapi"]
    assert kinds == ["xnnpack", "xnnpack", "xnnpack"]
    gpu = choose_executor(parts[1], environ=env)
    assert gpu.fallback and gpu.requested == "gpu"
    assert gpu.executed_on == (
        "host CPU, XNNPACK (host fallback for gpu: no gpu delegate library on this machine)"
    )
    assert choose_executor(parts[1], fallback="builtin", environ=env).kind == "builtin"
    lib = choose_executor(parts[1], environ={"EDGEPART_DELEGATE_GPU": "/x/libgpu.so"})
    assert (lib.kind, lib.library, lib.explicit) == ("delegate", "/x/libgpu.so", True)
    assert choose_executor(parts[0], override="reference").kind == "reference"
    with pytest.raises(UsageError, match="executor override must be one of"):
        choose_executor(parts[0], override="gpu")


def test_missing_delegates_fall_back_to_the_host_and_say_so(gpu_bundle, monkeypatch):
    monkeypatch.delenv("EDGEPART_DELEGATE_GPU", raising=False)
    monkeypatch.delenv("EDGEPART_DELEGATE_NNAPI", raising=False)
    with pytest.warns(
        HostFallbackWarning,
        match=r"2 partition\(s\) run on the host, not their "
        r"processor: p1 \(gpu\) on host CPU, XNNPACK",
    ):
        pi = PartitionedInterpreter(bundle=gpu_bundle)
    report = [c.to_dict() for c in pi.executors]
    assert [r["fallback"] for r in report] == [False, True, True]
    assert "host fallback for nnapi" in report[2]["executed_on"]
    x = np.random.default_rng(0).standard_normal((1, 96, 96, 3)).astype(np.float32)
    ref = Interpreter(model_path=gpu_bundle.manifest["source_model"]["path"])
    ref.allocate_tensors()
    ref.set_tensor(0, x)
    ref.invoke()
    assert np.array_equal(_run(pi, x), ref.get_tensor(171))


def test_fallback_can_be_refused(gpu_bundle, monkeypatch):
    monkeypatch.delenv("EDGEPART_DELEGATE_GPU", raising=False)
    with pytest.raises(
        RuntimeBackendError,
        match="partition p1 needs the gpu delegate but no "
        "library is configured and fallback is "
        "disabled",
    ):
        PartitionedInterpreter(bundle=gpu_bundle, fallback=None)


def test_a_real_external_delegate_library_is_loaded(gpu_bundle, null_delegate):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pi = PartitionedInterpreter(
            bundle=gpu_bundle,
            delegate_libraries={
                "gpu": null_delegate,
                "nnapi": {"library": null_delegate, "options": {"k": "v"}},
            },
        )
    assert not [w for w in caught if issubclass(w.category, HostFallbackWarning)]
    assert [c.kind for c in pi.executors] == ["xnnpack", "delegate", "delegate"]
    assert pi.executors[1].executed_on == f"gpu delegate ({null_delegate})"
    # the null delegate claims nothing, so LiteRT runs every op on its default CPU path
    x = np.random.default_rng(1).standard_normal((1, 96, 96, 3)).astype(np.float32)
    ref = Interpreter(model_path=gpu_bundle.manifest["source_model"]["path"])
    ref.allocate_tensors()
    ref.set_tensor(0, x)
    ref.invoke()
    assert np.array_equal(_run(pi, x), ref.get_tensor(171))


def test_explicit_delegate_in_the_plan(corpus, tmp_path, null_delegate):
    """The plan names the delegate; its library comes from whoever runs the bundle."""
    path = corpus["mobilenet_v2"]
    a, b = contiguous(read_model(path), 2, seed=2)
    spec = ExecutorSpec("delegate", delegate="hexagon")
    write_bundle(tmp_path / "b", path, [PartitionSpec(a), PartitionSpec(b, executor=spec)])
    pi = PartitionedInterpreter(tmp_path / "b", delegate_libraries={"hexagon": null_delegate})
    assert pi.executors[1].executed_on == f"hexagon delegate ({null_delegate})"


@pytest.mark.parametrize(
    ("library", "message"),
    [
        (
            "/nonexistent/libgpu_delegate.so",
            r"cannot load the gpu delegate library '/nonexistent/libgpu_delegate.so': .*No such "
            r"file",
        ),
        (
            "libc.so.6",
            r"'libc.so.6' is not a TFLite external delegate library \(no "
            r"tflite_plugin_create_delegate symbol\)",
        ),
    ],
)
def test_unloadable_delegate_library_is_an_error(gpu_bundle, library, message):
    with pytest.raises(RuntimeBackendError, match=message):
        PartitionedInterpreter(bundle=gpu_bundle, delegate_libraries={"gpu": library})


def test_delegate_that_refuses_to_start_is_an_error(gpu_bundle, null_delegate):
    libs = {"gpu": {"library": null_delegate, "options": {"fail": "1"}}}
    with pytest.raises(
        RuntimeBackendError,
        match=r"refused to create a delegate: .*null delegate: asked to fail by option fail=1",
    ):
        PartitionedInterpreter(bundle=gpu_bundle, delegate_libraries=libs)


def test_the_delegate_file_names_library_and_host_fallback(gpu_bundle, tmp_path):
    """A user's gpu.yaml on the search path decides the library searched and the fallback."""
    import yaml

    from edgepart.devices.delegate import delegate_dir
    from edgepart.devices.search_path import using_search_path

    parts = gpu_bundle.plan.partitions
    doc = yaml.safe_load((delegate_dir() / "gpu.yaml").read_text())
    doc["library"] = {
        "load": "external",
        "files": ["libno_such_gpu_delegate_here.so"],
        "options": {"precision": "fp16"},
        "fallback": "reference",
    }
    (tmp_path / "delegates").mkdir()
    (tmp_path / "delegates" / "gpu.yaml").write_text(yaml.safe_dump(doc))
    with using_search_path([tmp_path]):
        c = choose_executor(parts[1], environ={})
        assert (c.kind, c.fallback, c.host) == ("reference", True, "reference")
        assert c.executed_on.startswith("host CPU, reference kernels (host fallback for gpu")
        assert choose_executor(parts[1], fallback="builtin", environ={}).kind == "builtin"
        lib = choose_executor(parts[1], environ={"EDGEPART_DELEGATE_GPU": "/x/libgpu.so"})
        assert (lib.kind, dict(lib.options), lib.host) == (
            "delegate",
            {"precision": "fp16"},
            "reference",
        )
    assert choose_executor(parts[1], environ={}).kind == "xnnpack"
    with pytest.raises(UsageError, match="fallback executor must be auto or one of"):
        choose_executor(parts[1], fallback="gpu", environ={})
