"""The README's Python section runs as written and uses only names from ``import edgepart``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import edgepart

REPO = Path(__file__).resolve().parent.parent


def _python_blocks() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def test_the_readme_python_uses_only_the_public_api() -> None:
    blocks = _python_blocks()
    assert blocks, "README.md has no ```python block"
    for code in blocks:
        tree = ast.parse(code)
        imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert all(
            isinstance(n, ast.Import) and [a.name for a in n.names] == ["edgepart"] for n in imports
        ), [ast.unparse(n) for n in imports]
        used = {
            n.attr
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and n.value.id == "edgepart"
        }
        assert used and used <= set(edgepart.__all__), used - set(edgepart.__all__)


def test_the_readme_python_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run from a scratch directory that sees the repository's examples/ (outputs land there)."""
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    for k, code in enumerate(_python_blocks()):
        exec(compile(code, f"README.md python block {k}", "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    assert "predicted latency" in out and "arena per memory domain" in out
    assert (tmp_path / "out" / "mobilenet_v2_pixel8" / "plan.json").is_file()
    assert (tmp_path / "host.json").is_file()
