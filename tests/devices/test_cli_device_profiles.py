"""``edgepart profiles``: list, show, delegate, validate; errors are one line, exit status 2."""

from __future__ import annotations

import json

import yaml

from edgepart.cli import main
from edgepart.devices.profile import profile_dir


def test_list_and_show(capsys):
    assert main(["profiles"]) == 0
    out = capsys.readouterr().out
    assert "x86_host" in out and "xnnpack" in out
    assert main(["profiles", "show", "coral_devboard"]) == 0
    out = capsys.readouterr().out
    assert "edgetpu" in out and "[vendor_spec]" in out
    assert main(["profiles", "delegate", "gpu", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["policy"]["max_delegated_partitions"] == 1


def test_validate_and_errors(tmp_path, capsys):
    good = tmp_path / "box.yaml"
    doc = yaml.safe_load((profile_dir() / "x86_host.yaml").read_text())
    doc["name"] = "box"
    good.write_text(yaml.safe_dump(doc))
    assert main(["profiles", "validate", str(good)]) == 0
    assert "ok" in capsys.readouterr().out
    doc["processors"][0]["delegate"] = "cuda"
    good.write_text(yaml.safe_dump(doc))
    assert main(["profiles", "validate", str(good)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("edgepart: error: ") and "processors[0].delegate" in err
    assert "\n" not in err
    assert main(["profiles", "show", "nokia"]) == 2
    assert "shipped profiles" in capsys.readouterr().err
