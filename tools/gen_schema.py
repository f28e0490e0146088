"""Generate ``edgepart/schema/tables.py`` from the installed TFLite schema bindings.

The TFLite schema ships with ``ai-edge-litert`` as flatc-generated Python
(``ai_edge_litert.schema_py_generated``). That module is slow to use (one Python call per field)
and unidiomatic, so edgepart keeps it out of its code paths: this script reads the generated
source with :mod:`ast` and writes compact tables (enums, and for every table its fields with their
vtable slot, type and default) that edgepart's own vectorized reader and its writer interpret.

Run it after upgrading ``ai-edge-litert``::

    python tools/gen_schema.py

The output is deterministic and committed; ``tests/tflite/test_schema.py`` checks it against the
installed bindings.
"""

from __future__ import annotations

import ast
import importlib.metadata
import inspect
import pprint
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "edgepart" / "schema" / "tables.py"

# Enum-typed scalar fields. The generated Python erases enum types to plain integers, so the
# mapping from field to enum is stated here. Fields are matched by (table, field) first, then by
# field name alone. gen_schema fails if an int8/uint8 options field is neither listed here nor in
# NOT_ENUM, so a new schema version cannot silently drop an enum.
FIELD_ENUMS_BY_NAME = {
    "padding": "Padding",
    "fused_activation_function": "ActivationFunctionType",
    "weights_format": "FullyConnectedOptionsWeightsFormat",
    "kernel_type": "LSTMKernelType",
    "combiner": "CombinerType",
    "quantized_bias_type": "TensorType",
    "custom_options_format": "CustomOptionsFormat",
    "format": "DimensionType",
    "out_type": "TensorType",
    "output_type": "TensorType",
    "idx_out_type": "TensorType",
    "index_out_type": "TensorType",
    "in_data_type": "TensorType",
    "out_data_type": "TensorType",
    "type": "TensorType",
    "comparison_direction": "StablehloComparisonDirection",
    "compare_type": "StablehloComparisonType",
    "algorithm": "RngAlgorithm",
    "reduce_function": "ReduceWindowFunction",
    "precision_config": "StablehloPrecisionConfig",
    "key_dtype": "TensorType",
    "value_dtype": "TensorType",
    "composite_attributes_format": "CustomOptionsFormat",
}
FIELD_ENUMS_BY_TABLE = {
    ("LSHProjectionOptions", "type"): "LSHProjectionType",
    ("MirrorPadOptions", "mode"): "MirrorPadMode",
    ("StablehloPadOptions", "mode"): None,
}
# Byte-sized fields that are genuinely integers or booleans, not enums.
NOT_ENUM = {"deprecated_builtin_code"}

SCALAR_KINDS = {
    "Bool": "bool",
    "Int8": "int8",
    "Uint8": "uint8",
    "Int16": "int16",
    "Uint16": "uint16",
    "Int32": "int32",
    "Uint32": "uint32",
    "Int64": "int64",
    "Uint64": "uint64",
    "Float32": "float32",
    "Float64": "float64",
}


def snake(name: str) -> str:
    """Turn a flatc CamelCase accessor name back into the schema's snake_case field name."""
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s)
    return s.lower()


def main() -> int:
    import ai_edge_litert.schema_py_generated as gen

    version = importlib.metadata.version("ai-edge-litert")
    tree = ast.parse(inspect.getsource(gen))
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    enums: dict[str, dict[int, str]] = {}
    for name, node in classes.items():
        members = {}
        for stmt in node.body:
            if (
                isinstance(stmt, ast.Assign)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, int)
            ):
                members[stmt.value.value] = stmt.targets[0].id  # type: ignore[attr-defined]
        is_table = any(isinstance(s, ast.FunctionDef) and s.name == "Init" for s in node.body)
        if members and not is_table:
            enums[name] = dict(sorted(members.items()))

    table_names = sorted(
        (
            n
            for n, c in classes.items()
            if any(isinstance(s, ast.FunctionDef) and s.name == "Init" for s in c.body)
            and not n.endswith("T")
        ),
        key=len,
        reverse=True,
    )

    def owner(fn_name: str) -> tuple[str, str] | None:
        for t in table_names:
            if fn_name.startswith(t + "Add"):
                return t, fn_name[len(t) + 3 :]
        return None

    def method_src(table: str, method: str) -> str:
        for s in classes[table].body:
            if isinstance(s, ast.FunctionDef) and s.name == method:
                return ast.unparse(s)
        return ""

    def union_enum(table: str, field_camel: str) -> str:
        unpack = method_src(table + "T", "_UnPack")
        m = re.search(
            r"self\.\w+ = (\w+)Creator\(self\.\w+Type, \w+\." + field_camel + r"\(\)\)", unpack
        )
        if not m:
            raise SystemExit(f"cannot find union enum of {table}.{field_camel}")
        return m.group(1)

    tables: dict[str, list[tuple[str, int, str, object, str | None]]] = {}
    for fn_name in sorted(funcs):
        hit = owner(fn_name)
        if hit is None:
            continue
        table, camel = hit
        body = ast.unparse(funcs[fn_name])
        m = re.search(r"builder\.Prepend(\w+)Slot\((\d+), ([^,]+), (.+)\)\s*$", body, re.M)
        if not m:
            continue
        kind, slot, default_src = m.group(1), int(m.group(2)), m.group(4)
        field = snake(camel)
        enum = None
        default: object = None
        if kind in SCALAR_KINDS:
            ftype = SCALAR_KINDS[kind]
            default = ast.literal_eval(default_src)
            if ftype == "bool":
                default = bool(default)
            if ftype in ("int8", "uint8") and field not in NOT_ENUM:
                if (table, field) in FIELD_ENUMS_BY_TABLE:
                    enum = FIELD_ENUMS_BY_TABLE[(table, field)]
                elif field.endswith("_type") and method_src(table, camel[:-4]).find("Union(") >= 0:
                    enum = union_enum(table, camel[:-4])
                    ftype = "utype"
                elif field in FIELD_ENUMS_BY_NAME:
                    enum = FIELD_ENUMS_BY_NAME[field]
        elif kind == "UOffsetTRelative":
            src = method_src(table, camel)
            single = method_src(table, camel)
            if "Union(" in src:
                ftype = "union:" + union_enum(table, camel)
            elif "self._tab.String(o + self._tab.Pos)" in single:
                ftype = "string"
            elif re.search(r"\bobj = (\w+)\(\)", src) and "Indirect(o + self._tab.Pos)" in src:
                ftype = re.search(r"\bobj = (\w+)\(\)", src).group(1)  # type: ignore[union-attr]
            elif "self._tab.Vector(o)" in src:
                m2 = re.search(r"obj = (\w+)\(\)", src)
                if m2:
                    ftype = "[" + m2.group(1) + "]"
                elif "self._tab.String(" in src:
                    ftype = "[string]"
                else:
                    m3 = re.search(r"number_types\.(\w+)Flags, a \+", src)
                    if not m3:
                        raise SystemExit(f"unknown vector type of {table}.{camel}")
                    ftype = "[" + SCALAR_KINDS[m3.group(1)] + "]"
            else:
                raise SystemExit(f"unknown field kind of {table}.{camel}: {src[:200]}")
        elif kind == "Struct":
            raise SystemExit(f"struct fields are not supported: {table}.{camel}")
        else:
            raise SystemExit(f"unknown slot kind {kind} in {fn_name}")
        tables.setdefault(table, []).append((field, slot, ftype, default, enum))

    for t in table_names:
        tables.setdefault(t, [])
    for t in tables:
        tables[t].sort(key=lambda f: f[1])
        slots = [f[1] for f in tables[t]]
        if slots != sorted(set(slots)):
            raise SystemExit(f"duplicate slots in {t}: {slots}")
        for f in tables[t]:
            if f[4] is not None and f[4] not in enums:
                raise SystemExit(f"{t}.{f[0]} names unknown enum {f[4]}")

    lines = [
        '"""TFLite schema tables. GENERATED by tools/gen_schema.py; do not edit by hand.',
        "",
        f"Source: ai_edge_litert.schema_py_generated from ai-edge-litert {version}.",
        "Each table maps to a tuple of fields (name, vtable slot, type, default, enum name).",
        "Types: a scalar name, 'string', '[elem]' for vectors, a table name, 'utype' for a union's",
        "type field, 'union:<Enum>' for a union value.",
        '"""',
        "",
        "# fmt: off",
        f"SCHEMA_SOURCE = {f'ai-edge-litert {version}'!r}",
        "",
        "ENUMS: dict[str, dict[int, str]] = " + pprint.pformat(enums, width=100, sort_dicts=True),
        "",
        "TABLES: dict[str, tuple[tuple[str, int, str, object, str | None], ...]] = "
        + pprint.pformat({k: tuple(v) for k, v in tables.items()}, width=100, sort_dicts=True),
        "",
    ]
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT} ({len(enums)} enums, {len(tables)} tables) from ai-edge-litert {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
