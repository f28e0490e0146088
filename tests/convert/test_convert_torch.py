"""``edgepart convert`` of a PyTorch ``torch.export`` program through litert-torch (the optional
extra ``edgepart[torch]``; skipped, saying so, where it is not installed)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from convert_helpers import edgepart, run_child

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("litert_torch") is None or importlib.util.find_spec("torch") is None,
    reason="litert-torch is not installed: pip install 'edgepart[torch]'",
)

_PROGRAM = """
import sys, torch
torch.manual_seed(0)
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(16, 10)
    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x))).mean(dim=(2, 3))
        return torch.softmax(self.fc(y), -1)
m = Net().eval()
ep = torch.export.export(m, (torch.randn(1, 3, 32, 32),))
torch.export.save(ep, sys.argv[1])
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("torch")
    (root / "make.py").write_text(_PROGRAM)
    res = run_child([str(root / "make.py"), str(root / "net.pt2")], timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    return root / "net.pt2"


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["none", "fp16", "dynamic", "int8"])
def test_pytorch_program(program: Path, mode: str, tmp_path: Path) -> None:
    rec = tmp_path / "r.json"
    res = edgepart(
        "convert",
        str(program),
        "-o",
        str(tmp_path / "net.tflite"),
        "--quantize",
        mode,
        "--json",
        str(rec),
        timeout=900,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    d = json.loads(rec.read_text())
    assert d["kind"] == "torch" and d["inputs"] == [
        {"name": "args_0", "shape": [1, 3, 32, 32], "dtype": "float32"}
    ]
    assert d["ran_in_litert"] and d["passed"], d["checks"]
    c = d["checks"][0]
    print(
        f"torch {mode}: max abs {c['max_abs']:.2e}, max rel {c['max_rel']:.2e}, "
        f"SNR {c['snr_db']}, top-1 {c['top1']}"
    )
