"""Buffer CSV parsing (with one-line, file:line errors) and ``edgepart plan-memory``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from edgepart.cli import main
from edgepart.errors import BufferTableError
from edgepart.memory import MemoryProblem, check_plan
from edgepart.memory.csvio import read_buffers_csv


def _write(tmp_path: Path, text: str, name: str = "b.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_positional_rows_header_and_comments(tmp_path: Path) -> None:
    p = read_buffers_csv(_write(tmp_path, "# a comment\na,0,2,100\n\nb,1,3,200,16\n"))
    assert p.ids == ("a", "b") and p.alignment.tolist() == [64, 16]
    q = read_buffers_csv(
        _write(tmp_path, "id,lower,upper,size,offset,memory\nx,0,4,64,128,sram\ny,1,2,8,,dram\n"),
        default_alignment=32,
    )
    assert q.fixed.tolist() == [128, -1]
    assert q.memories == ("sram", "dram")
    assert q.alignment.tolist() == [32, 32]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("a,0,2\n", "b.csv:1: expected 4 or 5 columns"),
        ("a,0,2,100\nb,0,2\n", "b.csv:2: expected 4 or 5 columns (id,lower,upper,size[,align"),
        (
            "id,lower,upper,size\nb,0,2\n",
            "b.csv:2: expected 4 columns (id,lower,upper,size), got 3",
        ),
        ("a,0,2,-5\n", "b.csv:1: buffer 'a' has negative size -5"),
        ("a,3,3,5\n", "b.csv:1: buffer 'a' has empty lifetime [3, 3)"),
        ("a,0,2,1.5\n", "b.csv:1: size '1.5' is not an integer"),
        ("a,zero,2,5\n", "b.csv:1: lower 'zero' is not an integer"),
        ("a,0,2,5\na,1,2,5\n", "b.csv:2: buffer id 'a' already used on line 1"),
        ("id,start,end,bytes\n", "b.csv:1: unknown column 'start'"),
        ("id,lower,size\n", "b.csv:1: header lacks column 'upper'"),
        ("a,0,2,5,0\n", "b.csv:1: buffer 'a' has alignment 0"),
        ("\n# nothing\n", "b.csv: no buffers"),
    ],
)
def test_bad_csv_gives_one_line_errors(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(BufferTableError) as err:
        read_buffers_csv(_write(tmp_path, text))
    assert error in str(err.value)
    assert "\n" not in str(err.value)


def test_cli_prints_all_strategies_and_writes_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _write(tmp_path, "id,lower,upper,size\na,0,2,100\nb,1,3,200\nc,2,4,100\n")
    out = tmp_path / "offsets.csv"
    assert main(["plan-memory", str(src), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    lines = {ln.split()[1]: ln.split() for ln in text.splitlines() if ln.startswith("default")}
    assert lines["tflite"][2:5] == ["356", "328", "1.0854"]
    assert lines["search"][2:5] == ["328", "328", "1.0000"]
    rows = list(csv.DictReader(out.open()))
    assert [r["id"] for r in rows] == ["a", "b", "c"]
    p = read_buffers_csv(src)
    check_plan(p, {r["id"]: int(r["offset"]) for r in rows})
    # The written file is itself a valid buffer table (with the offsets as fixed offsets).
    again = read_buffers_csv(out)
    assert isinstance(again, MemoryProblem) and again.fixed.tolist() == [0, 128, 0]


def test_cli_json_is_reproducible(tmp_path: Path) -> None:
    src = _write(
        tmp_path, "".join(f"t{i},{i % 7},{i % 7 + 3},{64 * (1 + i % 5)}\n" for i in range(40))
    )
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert (
        main(["plan-memory", str(src), "--strategy", "search", "--node-limit", "500", "-o", str(a)])
        == 0
    )
    assert (
        main(["plan-memory", str(src), "--strategy", "search", "--node-limit", "500", "-o", str(b)])
        == 0
    )
    assert a.read_bytes() == b.read_bytes()
    doc = json.loads(a.read_text())
    assert set(doc) == {"arenas", "offsets", "strategy"}
    assert doc["arenas"]["default"]["size"] >= doc["arenas"]["default"]["lower_bound"]


def test_cli_errors_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _write(tmp_path, "a,0,2,-1\n")
    assert main(["plan-memory", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("edgepart: error: ") and "b.csv:1" in err and "\n" not in err
    assert main(["plan-memory", str(tmp_path / "missing.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["plan-memory", str(tmp_path)]) == 2
    assert "is not an edgepart bundle" in capsys.readouterr().err
    assert main(["plan-memory", str(bad), "--time-limit", "-1"]) == 2
    assert not (tmp_path / "out.csv").exists()
