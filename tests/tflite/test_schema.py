"""The committed schema tables match the installed TFLite bindings, and decode like them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from edgepart.schema import opnames
from edgepart.schema import tables as _schema
from edgepart.tflite.reader import read_model

ROOT = Path(__file__).resolve().parents[2]


def test_generated_tables_are_current(tmp_path):
    """Regenerating from the installed ai-edge-litert reproduces the committed file."""
    code = (ROOT / "tools" / "gen_schema.py").read_text()
    out = tmp_path / "_schema.py"
    patched = code.replace(
        'OUT = Path(__file__).resolve().parents[1] / "edgepart" / "schema" / "tables.py"',
        f"OUT = Path({str(out)!r})",
    )
    script = tmp_path / "gen.py"
    script.write_text(patched)
    subprocess.run([sys.executable, str(script)], check=True, capture_output=True)
    assert out.read_text() == (ROOT / "edgepart" / "schema" / "tables.py").read_text()


def test_builtin_codes_match_the_bindings():
    import ai_edge_litert.schema_py_generated as gen

    for name, code in vars(gen.BuiltinOperator).items():
        if not name.startswith("_"):
            assert opnames.BUILTIN_CODES[name] == code
    assert opnames.builtin_name(128) == "CUMSUM"


def test_options_decode_like_the_object_api(corpus):
    """Every op's builtin options equal what flatc's object API decodes (differential)."""
    import ai_edge_litert.schema_py_generated as gen

    checked = 0
    for path in corpus.values():
        data = path.read_bytes()
        ref = gen.ModelT.InitFromObj(gen.Model.GetRootAs(data, 0))
        model = read_model(path)
        for sg_ref, sg in zip(ref.subgraphs, model.subgraphs, strict=True):
            for i, op_ref in enumerate(sg_ref.operators):
                ours = sg.op_options[i]
                if op_ref.builtinOptions is None:
                    continue
                assert ours is not None
                for field, value in vars(op_ref.builtinOptions).items():
                    mine = ours[_snake(field)]
                    enum = _enum_of(ours.type, _snake(field))
                    if enum is not None and isinstance(mine, str):
                        mine = {v: k for k, v in _schema.ENUMS[enum].items()}[mine]
                    if isinstance(value, bytes):
                        value = value.decode()
                    if isinstance(value, (list, np.ndarray)):
                        assert list(np.asarray(value).tolist()) == list(mine or ())
                    elif isinstance(value, float):
                        assert np.float32(value) == np.float32(mine)
                    else:
                        assert value == mine, (path.name, i, field)
                checked += 1
    assert checked > 100


def _snake(camel: str) -> str:
    import re

    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", camel)
    return re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s).lower()


def _enum_of(table: str, field: str) -> str | None:
    for f in _schema.TABLES[table]:
        if f[0] == field:
            return f[4]
    return None
