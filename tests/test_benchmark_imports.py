"""The benchmarks import names from the package: each name they import must still be there
after a module moves (a moved name broke benchmarks/dev_corpus.py once)."""

from __future__ import annotations

import ast
import importlib
import importlib.util

import pytest

from tests.scan_support import ROOT


def _imports() -> list[tuple[str, str, str]]:
    found = []
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("migrate"):
                found += [(path.name, node.module, alias.name) for alias in node.names]
    return found


IMPORTS = _imports()


def test_the_benchmarks_import_from_the_package():
    assert any(name == "dev_corpus.py" for name, _, _ in IMPORTS)


@pytest.mark.parametrize(("script", "module", "name"), IMPORTS, ids=lambda v: str(v))
def test_each_imported_name_exists(script, module, name):
    imported = importlib.import_module(module)
    assert hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}"), (
        f"benchmarks/{script}: `from {module} import {name}` no longer resolves"
    )
