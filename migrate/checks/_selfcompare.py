"""Whether a test compares a capture's result with the object it captured.

`op_jit = torch.jit.script(op)` then `assert_close(op_jit(x), op(x))` checks that scripting
keeps `op`'s numbers. Replacing the capture by `op` itself (the eager route) would leave
`assert_close(op(x), op(x))`, true for any `op`: such a capture is never made eager.
"""

from __future__ import annotations

import ast

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.dataflow import (
    bound_name,
    name_uses,
    parent,
    pos,
    reaching_value,
    scope_statements,
)
from migrate.checks._testcode import calls_both
from migrate.checks.base import PythonContext

COMPARATORS = frozenset(
    {
        "torch.testing.assert_close",
        "torch.testing.assert_allclose",
        "torch.allclose",
        "torch.equal",
        "torch.isclose",
        "numpy.testing.assert_allclose",
        "numpy.testing.assert_array_equal",
        "numpy.testing.assert_array_almost_equal",
        "numpy.testing.assert_equal",
        "numpy.allclose",
        "numpy.array_equal",
    }
)
# unittest-style methods and bare helpers a test suite defines for itself.
COMPARATOR_NAMES = frozenset(
    {
        "assert_close",
        "assert_allclose",
        "assertEqual",
        "assertAlmostEqual",
        "assertAllClose",
        "assertTensorsEqual",
        "assert_equal",
        "allclose",
        "equal",
    }
)


def self_comparison(ctx: PythonContext, calls: list[ast.Call], original: ast.expr) -> int | None:
    """The line of a comparison between a call of the capture's result (one of `calls`) and
    a call of `original` (the object captured, spelled the same way), if there is one."""
    if not isinstance(original, (ast.Name, ast.Attribute)):
        return None  # a fresh instance (`Net()`) is another object after the rewrite too
    spelled = ctx.source(original)
    for call in calls:
        for node in _values_of(ctx, call):
            found = _comparison(ctx, node)
            if found is None:
                continue
            comparison, operands = found
            others = [o for o in operands if not _holds(o, node)]
            if any(_calls_original(ctx, o, spelled) for o in others):
                return comparison.lineno  # type: ignore[attr-defined]
    # A test that calls both compares them some way the tool does not follow (a loop over
    # their outputs, a helper): as the eager object it would compare it with itself too.
    return calls_both(ctx, calls, original)


def _values_of(ctx: PythonContext, call: ast.Call) -> list[ast.expr]:
    """The call itself, and the reads of the name its value is bound to."""
    found: list[ast.expr] = [call]
    bound = bound_name(ctx, call) or _unpacked_into(ctx, call)
    if bound is not None:
        uses, problem = name_uses(ctx, bound[0], bound[1], ctx.table.scope_for(call))
        if problem is None:
            found += uses
    return found


def _unpacked_into(ctx: PythonContext, value: ast.expr) -> tuple[ast.stmt, str] | None:
    """`got, expected = jit(x), op(x)`: the statement and the name `value` is unpacked into."""
    values = parent(ctx, value)
    stmt = parent(ctx, values) if isinstance(values, ast.Tuple) else None
    if not (isinstance(stmt, ast.Assign) and stmt.value is values and len(stmt.targets) == 1):
        return None
    targets = stmt.targets[0]
    if not isinstance(targets, ast.Tuple) or len(targets.elts) != len(values.elts):  # type: ignore[union-attr]
        return None
    target = targets.elts[values.elts.index(value)]  # type: ignore[union-attr]
    return (stmt, target.id) if isinstance(target, ast.Name) else None


def _unpacked_value(ctx: PythonContext, node: ast.Name) -> ast.expr | None:
    """The element of `a, b = x, y` that the read `node` of `a` or `b` sees."""
    scope = ctx.table.scope_for(node)
    for stmt in reversed(scope_statements(scope)):
        if pos(stmt) >= pos(node) or not isinstance(stmt, ast.Assign):
            continue
        targets, values = stmt.targets[0], stmt.value
        if not (isinstance(targets, ast.Tuple) and isinstance(values, ast.Tuple)):
            continue
        names = [t.id if isinstance(t, ast.Name) else None for t in targets.elts]
        if node.id in names and len(names) == len(values.elts):
            value = values.elts[names.index(node.id)]
            uses, problem = name_uses(ctx, stmt, node.id, scope)
            return value if problem is None and any(u is node for u in uses) else None
    return None


def _comparison(ctx: PythonContext, node: ast.AST) -> tuple[ast.AST, list[ast.expr]] | None:
    """The comparison holding `node` in its statement: a comparator call or `==`-like."""
    current: ast.AST | None = parent(ctx, node)
    while current is not None and not isinstance(current, ast.stmt):
        if isinstance(current, ast.Compare):
            return current, [current.left, *current.comparators]
        if isinstance(current, ast.Call) and is_comparator(ctx, current.func):
            return current, [*current.args, *(k.value for k in current.keywords)]
        current = parent(ctx, current)
    return None


def is_comparator(ctx: PythonContext, func: ast.expr) -> bool:
    if ctx.qualname(func) in COMPARATORS:
        return True
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name in COMPARATOR_NAMES


def _holds(expr: ast.expr, node: ast.AST) -> bool:
    return any(n is node for n in walk_tree(expr))


def _calls_original(ctx: PythonContext, expr: ast.expr, spelled: str, depth: int = 0) -> bool:
    """`expr` computes a call of `spelled`, in place or through names bound to one."""
    for node in walk_tree(expr):
        if isinstance(node, ast.Call) and ctx.source(node.func) == spelled:
            return True
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and depth < 3:
            value = reaching_value(ctx, node) or _unpacked_value(ctx, node)
            if value is not None and _calls_original(ctx, value, spelled, depth + 1):
                return True
    return False
