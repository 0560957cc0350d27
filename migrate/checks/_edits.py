"""Small edit builders shared by the Python checks."""

from __future__ import annotations

import ast

from migrate.checks.base import Edit, PythonContext


def replace(ctx: PythonContext, node: ast.AST, text: str) -> Edit:
    start, end = ctx.span(node)
    return Edit(start, end, text)


def delete_lines(ctx: PythonContext, node: ast.AST) -> Edit:
    """Delete the whole lines a decorator or statement occupies."""
    start, end = ctx.line_span(node)
    return Edit(start, end, "")


def remove_decorator(ctx: PythonContext, decorator: ast.expr) -> Edit:
    # The `@` sits before the decorator expression on the same line.
    return delete_lines(ctx, decorator)


def call_arg(call: ast.Call, index: int, keyword: str | None = None) -> ast.expr | None:
    if len(call.args) > index and not isinstance(call.args[index], ast.Starred):
        return call.args[index]
    if keyword:
        for kw in call.keywords:
            if kw.arg == keyword:
                return kw.value
    return None


def parenthesize_if_needed(ctx: PythonContext, node: ast.expr, text: str) -> str:
    """Keep operator precedence when an argument replaces a call expression."""
    simple = (
        ast.Name,
        ast.Attribute,
        ast.Call,
        ast.Subscript,
        ast.Constant,
        ast.Tuple,
        ast.List,
        ast.Dict,
        ast.Set,
        ast.ListComp,
        ast.DictComp,
        ast.SetComp,
    )
    if isinstance(node, simple) or (text.startswith("(") and text.endswith(")")):
        return text
    return f"({text})"
