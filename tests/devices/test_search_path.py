"""The search path: --search-path, then EDGEPART_PATH, then the shipped files; first match wins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from edgepart.cli import main
from edgepart.devices.delegate import delegate_dir, delegate_names, load_delegate
from edgepart.devices.host_executors import EXECUTOR_NAMES
from edgepart.devices.profile import load_profile, profile_dir, profile_names
from edgepart.devices.search_path import (
    ENV_VAR,
    catalog,
    search_dirs,
    using_search_path,
)
from edgepart.errors import ProfileError, UsageError


def _delegate_copy(root: Path, name: str, title: str) -> Path:
    doc = yaml.safe_load((delegate_dir() / f"{name}.yaml").read_text())
    doc["title"] = title
    (root / "delegates").mkdir(parents=True, exist_ok=True)
    path = root / "delegates" / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture(autouse=True)
def _no_user_path(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (ENV_VAR, "EDGEPART_DELEGATES_DIR", "EDGEPART_PROFILES_DIR"):
        monkeypatch.delenv(var, raising=False)


def test_without_user_directories_only_the_shipped_files(tmp_path: Path) -> None:
    (d,) = search_dirs("delegates")
    assert (d.path, d.origin) == (delegate_dir(), "shipped")
    assert all(e.shipped and not e.shadows for e in catalog("delegates"))
    assert [e.name for e in catalog("device_profiles")] == profile_names()


def test_first_match_wins_and_shadowed_files_are_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_gpu = _delegate_copy(tmp_path / "env", "gpu", "GPU from EDGEPART_PATH")
    opt_gpu = _delegate_copy(tmp_path / "opt", "gpu", "GPU from --search-path")
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "env"))
    assert load_delegate("gpu").title == "GPU from EDGEPART_PATH"
    (entry,) = [e for e in catalog("delegates") if e.name == "gpu"]
    assert (entry.path, entry.origin) == (env_gpu, ENV_VAR)
    assert entry.shadows == (delegate_dir() / "gpu.yaml",)
    with using_search_path([tmp_path / "opt"]):
        assert load_delegate("gpu").title == "GPU from --search-path"
        (entry,) = [e for e in catalog("delegates") if e.name == "gpu"]
        assert (entry.path, entry.origin) == (opt_gpu, "--search-path")
        assert entry.shadows == (env_gpu, delegate_dir() / "gpu.yaml")
        # A shipped profile naming gpu now gets the user's gpu.
        assert load_delegate(load_profile("pixel8").processors[1].delegate).path == str(opt_gpu)
    assert load_delegate("gpu").title == "GPU from EDGEPART_PATH"  # the block is over
    monkeypatch.delenv(ENV_VAR)
    assert load_delegate("gpu").path == str(delegate_dir() / "gpu.yaml")


def test_edgepart_path_holds_several_directories_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _delegate_copy(tmp_path / "a", "npu", "NPU a")
    _delegate_copy(tmp_path / "b", "npu", "NPU b")
    _delegate_copy(tmp_path / "b", "hexagon", "Hexagon b")
    monkeypatch.setenv(ENV_VAR, f"{tmp_path / 'a'}::{tmp_path / 'b'}")  # empty entries ignored
    assert load_delegate("npu").title == "NPU a" and load_delegate("hexagon").title == "Hexagon b"
    assert [d.origin for d in search_dirs("delegates")] == [ENV_VAR, ENV_VAR, "shipped"]
    assert search_dirs("device_profiles")[-1].path == profile_dir()  # no device_profiles/ there


def test_profiles_resolve_delegates_on_the_search_path_of_the_moment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A profile is cached with the search path it was validated under."""
    doc = yaml.safe_load((profile_dir() / "x86_host.yaml").read_text())
    doc["name"] = "mybox"
    doc["processors"][0]["delegate"] = "mycpu"
    prof = tmp_path / "mybox.yaml"
    prof.write_text(yaml.safe_dump(doc))
    with pytest.raises(ProfileError, match=r"processors\[0\]\.delegate: 'mycpu' is not allowed"):
        load_profile(str(prof))
    root = tmp_path / "data"
    xnn = yaml.safe_load((delegate_dir() / "xnnpack.yaml").read_text())
    xnn["name"] = "mycpu"
    xnn["predicates"] = "xnnpack"
    (root / "delegates").mkdir(parents=True)
    (root / "delegates" / "mycpu.yaml").write_text(yaml.safe_dump(xnn))
    with using_search_path([root]):
        assert load_profile(str(prof)).processors[0].delegate == "mycpu"
        assert "mycpu" in delegate_names()
        assert load_delegate("mycpu").host_executor == "xnnpack"
    with pytest.raises(ProfileError, match="'mycpu' is not allowed"):
        load_profile(str(prof))


def test_a_copy_under_a_new_name_reaches_its_family_with_the_predicates_key(
    tmp_path: Path,
) -> None:
    xnn = yaml.safe_load((delegate_dir() / "xnnpack.yaml").read_text())
    xnn["name"] = "mycpu"
    path = tmp_path / "mycpu.yaml"
    path.write_text(yaml.safe_dump(xnn))
    # The shipped file relies on the xnnpack predicates, found by its name; a renamed copy
    # sees only the generic ones unless it says which family it uses.
    with pytest.raises(ProfileError, match="is a xnnpack predicate: set `predicates: xnnpack`"):
        load_delegate(str(path))
    xnn["predicates"] = "xnnpack"
    path.write_text(yaml.safe_dump(xnn))
    assert len(load_delegate(str(path)).ops) == len(load_delegate("xnnpack").ops)


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        (lambda p: None, "does not exist"),
        (lambda p: p.mkdir(), "holds neither delegates/ nor device_profiles/"),
    ],
)
def test_bad_directories_are_one_line_errors(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setup: object,
    words: str,
) -> None:
    bad = tmp_path / "nowhere"
    setup(bad)  # type: ignore[operator]
    with pytest.raises(UsageError, match=words), using_search_path([bad]):
        pass
    assert main(["--search-path", str(bad), "profiles", "list"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgepart: error: --search-path directory") and words in err
    assert err.count("\n") == 1
    monkeypatch.setenv(ENV_VAR, str(bad))
    assert main(["profiles", "list"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"edgepart: error: {ENV_VAR} directory") and words in err


def test_search_path_option_is_repeatable_and_ordered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _delegate_copy(tmp_path / "a", "npu", "NPU a")
    _delegate_copy(tmp_path / "b", "npu", "NPU b")
    args = ["--search-path", str(tmp_path / "a"), "--search-path", str(tmp_path / "b")]
    assert main([*args, "profiles", "delegate", "npu", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "NPU a"
    assert main(["profiles", "delegate", "npu", "--json"]) == 0  # nothing left behind
    assert json.loads(capsys.readouterr().out)["title"] != "NPU a"


def test_legacy_directory_variables_still_replace_the_shipped_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _delegate_copy(tmp_path / "legacy", "gpu", "GPU legacy")
    monkeypatch.setenv("EDGEPART_DELEGATES_DIR", str(tmp_path / "legacy" / "delegates"))
    assert delegate_names() == ["gpu"]
    assert load_delegate("gpu").title == "GPU legacy"
    assert search_dirs("delegates")[-1].origin == "EDGEPART_DELEGATES_DIR"
    monkeypatch.setenv("EDGEPART_PROFILES_DIR", str(tmp_path / "no-profiles"))
    assert profile_names() == []


def test_the_schemas_name_the_host_executors_of_the_code() -> None:
    """The JSON schemas (editor aids) cannot import the vocabulary: hold them to it."""
    root = Path(__file__).parents[2] / "edgepart" / "schemas"
    delegate = json.loads((root / "delegate.schema.json").read_text())
    assert tuple(delegate["$defs"]["executor"]["enum"]) == EXECUTOR_NAMES
    plan = json.loads((root / "bundle_plan.schema.json").read_text())
    kinds = plan["$defs"]["executor"]["properties"]["kind"]["enum"]
    assert tuple(kinds) == (*EXECUTOR_NAMES, "delegate")
