"""Shared parts of the framework-wrapper rules (MIG140-MIG144, issue 19): does this file use
the framework, which argument is which, and the edit that drops one argument of a call."""

from __future__ import annotations

import ast

from migrate.checks._flow import parent
from migrate.checks.base import Edit, PythonContext
from migrate.registry import Rule


def framework_import(ctx: PythonContext, rule: Rule) -> str | None:
    """The first import of the file (any scope) that names one of the rule's `frameworks`,
    followed through the repository's own re-exports the scan resolved; None when none."""

    def find() -> str | None:
        roots = set(rule.extra.get("frameworks") or ())
        for scope in ctx.table.scopes.values():
            for qual in scope.imports.values():
                if ctx.table.canonical(qual).split(".")[0] in roots:
                    return qual
        return None

    return ctx.memo(f"framework:{rule.code}", find)


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def bind(call: ast.Call, params: tuple[str, ...]) -> dict[str, ast.expr]:
    """Arguments by parameter name (positional ones in `params` order); starred ones skipped."""
    out: dict[str, ast.expr] = {}
    for name, arg in zip(params, call.args, strict=False):
        if isinstance(arg, ast.Starred):
            break
        out[name] = arg
    for kw in call.keywords:
        if kw.arg is not None:
            out[kw.arg] = kw.value
    return out


def is_literal(expr: ast.expr | None, value: object) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is value


def method_names(rule: Rule) -> tuple[str, ...]:
    return tuple(rule.extra.get("methods") or ())


def drop_argument(ctx: PythonContext, call: ast.Call, arg: ast.AST) -> Edit:
    """Delete one argument with its separating comma, keeping the call's line breaks."""
    items = sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]
    index = next(i for i, node in enumerate(items) if node is arg)
    if len(items) == 1:
        open_paren = ctx.text.index("(", ctx.end(call.func))
        return Edit(open_paren + 1, ctx.end(call) - 1, "")
    if index > 0:
        return Edit(ctx.end(items[index - 1]), ctx.end(arg), "")
    return Edit(ctx.start(arg), ctx.start(items[1]), "")


def in_keyword(ctx: PythonContext, names: tuple[str, ...]) -> bool:
    """Is the node being visited inside a keyword argument of one of these names?"""
    return any(isinstance(p, ast.keyword) and p.arg in names for p in ctx.parents)


def statement_call(ctx: PythonContext, call: ast.Call) -> ast.Expr | None:
    """The expression statement that is just this call (`f(x)` on its own line)."""
    holder = parent(ctx, call)
    return holder if isinstance(holder, ast.Expr) else None
