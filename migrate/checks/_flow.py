"""Light data flow inside one function: where did the value bound to a name come from?"""

from __future__ import annotations

import ast

from migrate.checks.base import PythonContext
from migrate.pyscope import Scope

# Calls whose result is a TorchScript module (or, after the rewrite, an exported program).
CAPTURE_CALLS = frozenset(
    {
        "torch.jit.script",
        "torch.jit.trace",
        "torch.jit.trace_module",
        "torch.jit.load",
        "torch.jit.freeze",
        "torch.jit.optimize_for_inference",
        "torch.utils.mobile_optimizer.optimize_for_mobile",
    }
)


def scope_statements(scope: Scope) -> list[ast.stmt]:
    """Statements of a function or module body, nested blocks included, nested defs excluded."""
    body = getattr(scope.node, "body", [])
    out: list[ast.stmt] = []
    stack = list(reversed(body)) if isinstance(body, list) else []
    while stack:
        stmt = stack.pop()
        out.append(stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                stack.extend(reversed([s for s in block if isinstance(s, ast.stmt)]))
                for handler in block:
                    if isinstance(handler, ast.ExceptHandler):
                        stack.extend(reversed(handler.body))
    return sorted(out, key=lambda s: (s.lineno, s.col_offset))


def assignments(scope: Scope, name: str) -> list[ast.Assign]:
    """`name = ...` statements in the scope (single-name targets)."""
    found = []
    for stmt in scope_statements(scope):
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in stmt.targets
        ):
            found.append(stmt)
    return found


def origin_call(ctx: PythonContext, name: str, scope: Scope, before_line: int) -> ast.Call | None:
    """The last `name = <capture call>(...)` before a line, if the value came from one."""
    last = None
    for stmt in assignments(scope, name):
        if stmt.lineno >= before_line:
            break
        last = stmt
    if last is None or not isinstance(last.value, ast.Call):
        return None
    call = last.value
    # Look through method chains such as torch.jit.trace(m, x).eval()
    while isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call):
        if ctx.qualname(call.func) in CAPTURE_CALLS:
            break
        call = call.func.value
    return call if ctx.qualname(call.func) in CAPTURE_CALLS else None
