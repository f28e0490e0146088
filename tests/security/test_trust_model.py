"""The trust model (docs/security.md): a bundle is data; nothing in it names code edgepart
loads. A library whose constructor writes a marker file shows whether it was ever loaded."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sec_helpers import cli, edit_plan, one_line_error

import edgepart
from edgepart.errors import BundleError

MARKER_C = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void edgepart_test_marker(void) {
    const char *p = getenv("EDGEPART_TEST_MARKER");
    if (p) { int fd = open(p, O_CREAT | O_WRONLY, 0644); if (fd >= 0) close(fd); }
}
"""


@pytest.fixture(scope="module")
def marker_lib(tmp_path_factory: pytest.TempPathFactory, cc: str) -> Path:
    d = tmp_path_factory.mktemp("marker")
    (d / "marker.c").write_text(MARKER_C)
    out = d / "libmarker_delegate.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(out), str(d / "marker.c")], check=True)
    return out


def _name_library(bundle: Path, lib: Path) -> None:
    def edit(plan: dict) -> None:
        plan["partitions"][1]["executor"] = {
            "kind": "delegate",
            "delegate": "gpu",
            "library": str(lib),
        }

    edit_plan(bundle, edit)


def test_marker_library_runs_its_constructor_when_the_user_loads_it(marker_lib, bundle, tmp_path):
    """The control: given by the user, the library is loaded (then refused as no delegate)."""
    marker = tmp_path / "loaded"
    edit_plan(bundle, lambda p: p["partitions"][1].update(delegate="gpu", executor=None))
    proc = cli(
        "run",
        str(bundle),
        "--random",
        "--delegate-library",
        f"gpu={marker_lib}",
        env={"EDGEPART_TEST_MARKER": str(marker)},
    )
    one_line_error(proc, "not a TFLite external delegate library")
    assert marker.exists()


def test_run_never_loads_a_library_named_by_a_bundle(marker_lib, bundle, tmp_path):
    _name_library(bundle, marker_lib)
    marker = tmp_path / "loaded"
    for extra in ([], ["--verify"], ["--benchmark", "--repeat", "1", "--warmup", "0"]):
        proc = cli(
            "run", str(bundle), "--random", *extra, env={"EDGEPART_TEST_MARKER": str(marker)}
        )
        one_line_error(proc, "executor.library names a library to load", "--delegate-library gpu=")
        assert not marker.exists()
    for cmd in (
        ["report", str(bundle), "-o", str(tmp_path / "r.html")],
        ["plan-memory", str(bundle)],
    ):
        cli(*cmd, env={"EDGEPART_TEST_MARKER": str(marker)})
        assert not marker.exists()


def test_the_api_refuses_a_library_in_a_plan(marker_lib, bundle, tmp_path, monkeypatch):
    _name_library(bundle, marker_lib)
    marker = tmp_path / "loaded"
    monkeypatch.setenv("EDGEPART_TEST_MARKER", str(marker))
    with pytest.raises(BundleError, match=r"\$\.partitions\[1\]\.executor\.library"):
        edgepart.load_bundle(bundle)
    with pytest.raises(BundleError, match="cannot choose code"):
        edgepart.run_bundle(bundle, random=True)
    assert not marker.exists()


def test_a_bundle_cannot_be_written_with_a_library(small_model):
    with pytest.raises(TypeError):
        edgepart.bundle.ExecutorSpec("delegate", delegate="gpu", library="/x.so")  # type: ignore[call-arg]
