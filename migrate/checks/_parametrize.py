"""The values a test's parameter takes, read from its `@pytest.mark.parametrize` lists.

`@pytest.mark.parametrize("op", [rgb_to_hls, hls_to_rgb])` above `def test_jit(op, img)`
says what `op` is in every run of the test: MIG101 asks it whether `torch.jit.script(op)`
scripts functions or module instances. Only literal value lists are read (a list or tuple
written in the decorator, or a module-level name bound once to one); `pytest.param(v, ...)`
stands for `v`. Anything else (a generator, a fixture, `indirect=True`) answers None.
"""

from __future__ import annotations

import ast

from migrate.analysis.dataflow import reaching_value
from migrate.checks.base import PythonContext

_PARAMETRIZE = frozenset({"pytest.mark.parametrize", "_pytest.mark.parametrize"})


def parametrized_values(ctx: PythonContext, function: ast.AST, name: str) -> list[ast.expr] | None:
    """Every value `name` takes in `function`'s parametrize decorators; None when one of
    them gives it a value the file does not spell out (or none does)."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    found: list[ast.expr] = []
    for decorator in function.decorator_list:
        if not isinstance(decorator, ast.Call) or ctx.qualname(decorator.func) not in _PARAMETRIZE:
            continue
        names, values, indirect = _arguments(decorator)
        if names is None or name not in names:
            continue
        if indirect or values is None:
            return None
        rows = _literal_list(ctx, values)
        if rows is None:
            return None
        index = names.index(name)
        for row in rows:
            value = _column(row, index, len(names))
            if value is None:
                return None
            found.append(value)
    return found or None


def _arguments(call: ast.Call) -> tuple[list[str] | None, ast.expr | None, bool]:
    args = list(call.args)
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    spelled = args[0] if args else keywords.get("argnames")
    values = args[1] if len(args) > 1 else keywords.get("argvalues")
    indirect = keywords.get("indirect")
    is_indirect = indirect is not None and not (
        isinstance(indirect, ast.Constant) and indirect.value is False
    )
    return _names(spelled), values, is_indirect


def _names(spelled: ast.expr | None) -> list[str] | None:
    if isinstance(spelled, ast.Constant) and isinstance(spelled.value, str):
        return [n.strip() for n in spelled.value.split(",") if n.strip()]
    if isinstance(spelled, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in spelled.elts
    ):
        return [e.value.strip() for e in spelled.elts]  # type: ignore[union-attr]
    return None


def _literal_list(ctx: PythonContext, values: ast.expr) -> list[ast.expr] | None:
    if isinstance(values, ast.Name):
        bound = reaching_value(ctx, values)
        values = bound if bound is not None else values
    if isinstance(values, (ast.List, ast.Tuple)) and not any(
        isinstance(e, ast.Starred) for e in values.elts
    ):
        return list(values.elts)
    return None


def _column(row: ast.expr, index: int, width: int) -> ast.expr | None:
    """The value of the `index`-th name in one row of argvalues."""
    if (
        isinstance(row, ast.Call)
        and isinstance(row.func, ast.Attribute)
        and row.func.attr == "param"
        and row.args
    ):
        row = row.args[0] if width == 1 else ast.Tuple(elts=list(row.args), ctx=ast.Load())
    if width == 1:
        return None if isinstance(row, ast.Starred) else row
    if isinstance(row, (ast.Tuple, ast.List)) and len(row.elts) == width:
        value = row.elts[index]
        return None if isinstance(value, ast.Starred) else value
    return None
