"""Rules of the source layout that import-linter does not check (docs/architecture.md).

* a module's file name is not repeated across packages (except the CLI's command modules, which
  are named for their command);
* a function-level import loads a heavy optional dependency lazily, and a comment says so;
  every other import, and every import of an edgepart module, sits at module level;
* no private name (``_name``) is imported from another package (private *modules* are checked
  by the ``private`` import-linter contract).
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

import edgepart

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, packaged
    import tomli as tomllib

PACKAGE = Path(edgepart.__file__).resolve().parent
ROOT = PACKAGE.parent

# Imported inside functions so that importing edgepart does not pay for them: each takes from
# ~0.08 s (jsonschema with referencing) to seconds (TensorFlow, torch) or is optional.
LAZY = frozenset(
    {
        "ray",
        "tensorflow",
        "keras",
        "torch",
        "litert_torch",
        "ai_edge_quantizer",
        "matplotlib",
        "adbutils",
        "pymetis",
        "jsonschema",
        "referencing",
        "playwright",
        "scipy",
        "sklearn",
    }
)


def _modules() -> list[tuple[str, Path, ast.Module]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append((".".join(parts), path, ast.parse(path.read_text(encoding="utf-8"))))
    return out


def test_module_names_are_not_repeated_across_packages() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if path.name in ("__init__.py", "__main__.py"):
            continue
        if rel.parts[0] == "cli" and not path.name.startswith("_"):
            continue  # edgepart/cli/<command>.py is named for its command
        where[path.name].append(str(rel))
    repeated = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert repeated == {}, f"rename one of each: {repeated}"


def _function_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            visit(child, inner)

    visit(tree, False)
    return found


def test_function_level_imports_are_heavy_optional_dependencies_with_a_comment() -> None:
    bad = []
    for _mod, path, tree in _modules():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in _function_level_imports(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if getattr(node, "level", 0) or any(
                n is None or n.split(".")[0] not in LAZY for n in names
            ):  # an edgepart module, the standard library or a light dependency
                bad.append(f"{where}: move to module level: {ast.unparse(node)}")
                continue
            # the comment is on the import, or on one of the three lines above it (or above
            # the run of imports it belongs to)
            first = node.lineno - 1
            while first > 0 and lines[first - 1].strip().startswith(("import ", "from ")):
                first -= 1
            span = lines[max(0, first - 3) : node.end_lineno]
            if not any("#" in line for line in span):
                bad.append(f"{where}: say why it is lazy: {ast.unparse(node)}")
    assert bad == []


def test_no_private_name_is_imported_from_another_package() -> None:
    bad = []
    for mod, path, tree in _modules():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            if not node.module.startswith("edgepart."):
                continue
            owner = node.module.rpartition(".")[0]  # the package the module belongs to
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and not (package == owner or package.startswith(owner + ".")):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert bad == []


def test_the_architecture_page_shows_the_layers_contract() -> None:
    """docs/architecture.md draws the layers of pyproject.toml's contract, in its order."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    layers = next(
        c["layers"] for c in contracts["tool"]["importlinter"]["contracts"] if c["id"] == "layers"
    )
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = page.split("## The layers", 1)[1].split("```", 2)[1]
    drawn = [re.split(r"\s{2,}", line.strip())[0] for line in block.splitlines() if line.strip()]
    assert drawn == layers
