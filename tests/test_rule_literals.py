"""No rule code is written as a value outside its rule's own module.

A rule's role (which rule captures, saves, loads, reports a wrapper's calls...) is said once,
in its data (`roles:` and `symbols:` in rules/MIGnnn.yaml); code asks the registry for it
(`registry.codes_with`, `code_with`, `code_for`). Read from the source with `ast`: a string
constant that is a code (`"MIG201"`) or a key made from one (`"MIG121.calls"`) fails, in plain
strings and in f-strings' literal parts, except in migrate/checks/migNNN_*.py for that rule's
own code. Prose that names a rule for a reader (a message's "see MIG105", help text, a
docstring, a comment) is not a value and is allowed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "migrate"
CODE_VALUE = re.compile(r"\s*(MIG\d{3})(?:[.:][\w.:-]*)?\s*")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def own_code(path: Path, root: Path) -> str | None:
    """The code of the rule whose module `path` is (checks/migNNN_<slug>.py), else None."""
    match = re.fullmatch(r"mig(\d{3})_\w+\.py", path.name)
    return f"MIG{match.group(1)}" if match and path.parent == root / "checks" else None


def literals(root: Path) -> list[str]:
    """`path:line: "value"` for each rule code written as a value outside its rule."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skip = _docstrings(tree)
        mine = own_code(path, root)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            match = CODE_VALUE.fullmatch(node.value)
            if id(node) in skip or match is None or match.group(1) == mine:
                continue
            found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {node.value!r}")
    return found


def test_no_rule_code_is_a_value_outside_its_rule():
    assert len(list(PACKAGE.rglob("mig*_*.py"))) > 40  # the real package
    assert literals(PACKAGE) == []


def test_the_checker_sees_values_and_keys_but_not_prose_docstrings_or_the_rule_itself(tmp_path):
    root = tmp_path / "migrate"
    (root / "checks").mkdir(parents=True)
    (root / "checks" / "mig201_jit_save.py").write_text(
        'code = "MIG201"\nOTHER = "MIG202"\nmessage = "it loads it too (see MIG202)"\n'
    )
    (root / "facts.py").write_text(
        '"""Reads MIG201\'s findings."""\n'
        'SAVE = ("MIG201", "MIG204")\n'
        'KEY = f"MIG121.calls"\n'
        "def f(x):\n"
        '    """MIG101 in a docstring."""\n'
        '    return f"{x} rewrites it (see MIG101)"  # prose, in an f-string\n'
        'WHERE = f"{KEY} MIG102"\n'
    )
    assert literals(root) == [
        "migrate/checks/mig201_jit_save.py:2: 'MIG202'",
        "migrate/facts.py:2: 'MIG201'",
        "migrate/facts.py:2: 'MIG204'",
        "migrate/facts.py:3: 'MIG121.calls'",
        "migrate/facts.py:7: ' MIG102'",
    ]
