"""Whether code is a test, and what in a test only checks TorchScript.

A rewrite of a capture in a test must keep the test testing something: replacing
`torch.jit.script(m)` by `m` where the test compares the two, asserts the capture, or expects
scripting to raise leaves a test that checks nothing (or fails for the wrong reason).
"""

from __future__ import annotations

import ast
from pathlib import PurePosixPath

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.dataflow import parent
from migrate.checks.base import PythonContext

_TEST_FOLDERS = ("tests", "test", "testing", "unittests")
# `with self.assertRaises(...)`, `with pytest.raises(...)`: the block expects an error.
_RAISES = ("assertRaises", "assertRaisesRegex", "raises")


def in_test(ctx: PythonContext, node: ast.AST) -> bool:
    """Test code: a test module (`test_*.py`, `*_test.py`, `conftest.py`, under `tests/`)
    or a `test*` function."""
    path = PurePosixPath(ctx.path)
    if path.name.startswith("test_") or path.stem.endswith("_test") or path.name == "conftest.py":
        return True
    if any(part in _TEST_FOLDERS for part in path.parts[:-1]):
        return True
    return test_function(ctx, node) is not None


def enclosing_function(ctx: PythonContext, node: ast.AST) -> ast.AST | None:
    current = parent(ctx, node)
    while current is not None and not isinstance(
        current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    ):
        current = parent(ctx, current)
    return current


def test_function(
    ctx: PythonContext, node: ast.AST
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The `test*` function holding `node`, if any."""
    current = enclosing_function(ctx, node)
    while current is not None:
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)) and current.name.startswith(
            "test"
        ):
            return current
        current = enclosing_function(ctx, current)
    return None


def expects_error(ctx: PythonContext, node: ast.AST) -> bool:
    """`node` runs inside `with self.assertRaises(...)` / `with pytest.raises(...)`."""
    current = parent(ctx, node)
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(current, (ast.With, ast.AsyncWith)):
            for item in current.items:
                call = item.context_expr
                func = call.func if isinstance(call, ast.Call) else None
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in _RAISES:
                    return True
        current = parent(ctx, current)
    return False


def asserted(ctx: PythonContext, node: ast.AST) -> bool:
    """`node` is what an `assert` tests (`assert torch.jit.trace(m, x)`)."""
    current = parent(ctx, node)
    while isinstance(current, (ast.UnaryOp, ast.BoolOp, ast.Call)) and not isinstance(
        current, ast.stmt
    ):
        current = parent(ctx, current)
    return isinstance(current, ast.Assert)


def calls_both(ctx: PythonContext, result_calls: list[ast.Call], original: ast.expr) -> int | None:
    """In a test function, the capture's result is called and so is what it captured: the
    test compares them one way or another (through a loop, a helper, a stored output). The
    line of the first call of the result, or None."""
    if not result_calls or not isinstance(original, (ast.Name, ast.Attribute)):
        return None
    test = test_function(ctx, result_calls[0])
    if test is None:
        return None
    spelled = ctx.source(original).strip()
    for node in walk_tree(test):
        if isinstance(node, ast.Call) and ctx.source(node.func).strip() == spelled:
            return result_calls[0].lineno
    return None
