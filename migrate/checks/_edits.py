"""Small edit builders shared by the Python checks."""

from __future__ import annotations

import ast

from migrate.analysis.dataflow import block_of, parent
from migrate.checks.base import Edit, PythonContext


def replace(ctx: PythonContext, node: ast.AST, text: str) -> Edit:
    start, end = ctx.span(node)
    return Edit(start, end, text)


def replace_with_arg(ctx: PythonContext, call: ast.AST, arg: ast.expr) -> Edit:
    """Replace a call by one of its arguments (`annotate(T, v)` -> `v`), keeping precedence."""
    return replace(ctx, call, parenthesize_if_needed(ctx, arg, ctx.source(arg), call))


def delete_lines(ctx: PythonContext, node: ast.AST) -> Edit:
    """Delete the whole lines a decorator or statement occupies."""
    start, end = ctx.line_span(node)
    return Edit(start, end, "")


def drop_statement(ctx: PythonContext, stmt: ast.stmt) -> Edit:
    """Delete a statement; the only statement of its block becomes `pass` (an empty block
    does not parse), and so does one sharing its line with others."""
    block = block_of(ctx, stmt)
    start, end = ctx.line_span(stmt)
    if block is None or len(block[1]) == 1:
        return Edit(*ctx.span(stmt), "pass")
    shared = [s for s in block[1] if s is not stmt and _shares_line(s, stmt)]
    if not shared and ctx.index.line_text(stmt.lineno)[: stmt.col_offset].strip() == "":
        return Edit(start, end, "")
    return Edit(*ctx.span(stmt), "pass")


def _shares_line(a: ast.stmt, b: ast.stmt) -> bool:
    return a.lineno <= b.end_lineno and b.lineno <= a.end_lineno  # type: ignore[operator]


def drop_definition(ctx: PythonContext, node: ast.stmt) -> Edit:
    """Delete a def or class with its decorators and the blank lines after it (those before
    it separate what stays)."""
    decorators = getattr(node, "decorator_list", [])
    first = min([node.lineno, *(d.lineno for d in decorators)])
    last = node.end_lineno or node.lineno
    total = len(ctx.text.splitlines())
    while last < total and not ctx.index.line_text(last + 1).strip():
        last += 1
    return Edit(ctx.index.offset(first, 0), ctx.index.offset(last + 1, 0), "")


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


# Binding strength of each expression form, weakest first (the Python grammar's levels).
_NAMED, _LAMBDA, _TERNARY, _OR, _AND, _NOT, _COMPARE = 0, 1, 2, 3, 4, 5, 6
_BITOR, _BITXOR, _BITAND, _SHIFT, _ARITH, _TERM, _UNARY, _POWER, _AWAIT, _ATOM = range(7, 17)
_BINOP = {
    ast.BitOr: _BITOR,
    ast.BitXor: _BITXOR,
    ast.BitAnd: _BITAND,
    ast.LShift: _SHIFT,
    ast.RShift: _SHIFT,
    ast.Add: _ARITH,
    ast.Sub: _ARITH,
    ast.Mult: _TERM,
    ast.Div: _TERM,
    ast.FloorDiv: _TERM,
    ast.Mod: _TERM,
    ast.MatMult: _TERM,
    ast.Pow: _POWER,
}


def precedence(node: ast.AST, text: str) -> int:
    """How tightly `node`, written as `text`, binds."""
    if isinstance(node, ast.BinOp):
        return _BINOP[type(node.op)]
    if isinstance(node, ast.UnaryOp):
        return _NOT if isinstance(node.op, ast.Not) else _UNARY
    if isinstance(node, ast.BoolOp):
        return _OR if isinstance(node.op, ast.Or) else _AND
    if isinstance(node, ast.Compare):
        return _COMPARE
    if isinstance(node, ast.IfExp):
        return _TERNARY
    if isinstance(node, ast.Lambda):
        return _LAMBDA
    if isinstance(node, ast.Await):
        return _AWAIT
    if isinstance(node, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Starred)):
        return _NAMED
    if isinstance(node, (ast.Tuple, ast.GeneratorExp)) and not text.startswith("("):
        return _NAMED  # a bare tuple or a call's sole generator argument
    return _ATOM


def _required(holder: ast.AST | None, child: ast.AST) -> int:
    """The weakest binding `child` may have where it sits in `holder` without parentheses."""
    if holder is None:
        return _ATOM
    if isinstance(holder, ast.BinOp):
        own = _BINOP[type(holder.op)]
        if isinstance(holder.op, ast.Pow):  # right-associative; `a ** -b` is fine
            return _AWAIT if child is holder.left else _UNARY
        return own if child is holder.left else own + 1
    if isinstance(holder, ast.UnaryOp):
        return _NOT if isinstance(holder.op, ast.Not) else _UNARY
    if isinstance(holder, ast.BoolOp):
        return (_OR if isinstance(holder.op, ast.Or) else _AND) + 1
    if isinstance(holder, ast.Compare):
        return _COMPARE + 1  # `a < (b < c)` is not the chain `a < b < c`
    if isinstance(holder, ast.IfExp):
        return _LAMBDA if child is holder.orelse else _OR
    if isinstance(holder, ast.Await):
        return _ATOM
    if isinstance(holder, (ast.Attribute, ast.Subscript)) and child is holder.value:
        return _ATOM
    if isinstance(holder, ast.Call) and child is holder.func:
        return _ATOM
    if isinstance(holder, ast.Starred) or (
        isinstance(holder, ast.Dict)
        and any(k is None and v is child for k, v in zip(holder.keys, holder.values, strict=True))
    ):
        return _BITOR  # `*x`, `**x`
    if isinstance(holder, ast.comprehension) and child is not holder.target:
        return _OR
    if isinstance(holder, ast.FormattedValue):
        return _TERNARY  # a lambda's colon would end the replacement field
    return _LAMBDA


def parenthesize_if_needed(
    ctx: PythonContext, node: ast.expr, text: str, replaced: ast.AST | None = None
) -> str:
    """`text` (the source of `node`) written where `replaced` stands, in parentheses when the
    grammar needs them there; without `replaced`, for a position that needs an atom (`f(...)`).
    """
    need = _ATOM if replaced is None else _required(parent(ctx, replaced), replaced)
    own = precedence(node, text)
    if own < need or (own < _ATOM and "\n" in text):
        # Line breaks were legal inside the call's brackets; keep them inside brackets.
        return f"({text})"
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and need == _ATOM
        and replaced is not None
        and isinstance(parent(ctx, replaced), ast.Attribute)
    ):
        return f"({text})"  # `1.real` would read as a float literal
    return text
