"""Replace calls known to return a constant (`torch.jit.is_scripting()` once nothing
scripts) and simplify what they sit in: `not`, `and`, `or`, ternaries and the dead branch
of an `if`. The result is one edit over the outermost expression or statement that changes.
"""

from __future__ import annotations

import ast
import keyword
from collections.abc import Callable

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.dataflow import parent
from migrate.checks._edits import drop_statement, parenthesize_if_needed, precedence, replace
from migrate.checks.base import Edit, PythonContext

_AND_LEVEL = precedence(ast.BoolOp(op=ast.And(), values=[]), "")  # operands bind tighter
# Is this node one of the calls being replaced? Then by which constant.
Known = Callable[[ast.AST], bool | None]


def constant(node: ast.AST, known: Known) -> bool | None:
    """The truth value of an expression made of known calls, literals, not/and/or."""
    value = known(node)
    if value is not None:
        return value
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, type(None))):
        return bool(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = constant(node.operand, known)
        return None if inner is None else not inner
    if isinstance(node, ast.BoolOp):
        return _boolop(node, known)[0]
    return None


def _boolop(node: ast.BoolOp, known: Known) -> tuple[bool | None, list[ast.expr]]:
    """(constant value, or None and the operands that remain). `True and v` is `v` and
    `False or v` is `v`, exactly; a deciding constant after an unknown operand stays, since
    `x and False` is `x` when x is falsy."""
    short = isinstance(node.op, ast.Or)  # the value that decides the whole expression
    rest: list[ast.expr] = []
    for operand in node.values:
        value = constant(operand, known)
        if value is None:
            rest.append(operand)
        elif value is short:
            if not rest:
                return short, []
            rest.append(operand)
            break
    if not rest:
        return not short, []
    return None, rest


def fold(ctx: PythonContext, call: ast.expr, known: Known) -> Edit:
    """The edit that replaces `call` by its constant and simplifies around it."""
    node: ast.expr = call
    value = known(call)
    assert value is not None
    while True:
        holder = parent(ctx, node)
        if isinstance(holder, ast.UnaryOp) and isinstance(holder.op, ast.Not):
            node, value = holder, not value
            continue
        if isinstance(holder, ast.BoolOp):
            folded, rest = _boolop(holder, known)
            if folded is None:
                folded = _decided_as_truth(ctx, holder, rest, known)
            if folded is not None:
                node, value = holder, folded
                continue
            kept_lines = _without_lines(ctx, holder, rest)
            if kept_lines is not None:  # a condition laid out a line per operand stays so
                return replace(ctx, holder, kept_lines)
            joiner = " or " if isinstance(holder.op, ast.Or) else " and "
            text = joiner.join(_operand_text(ctx, r, known) for r in rest)
            if len(rest) == 1:
                group = _parenthesized(ctx, holder)
                if group is not None and precedence(rest[0], text) >= _AND_LEVEL + 2:
                    return Edit(*group, text)  # `not (a or b)` left with `a`: `not a`
                text = parenthesize_if_needed(ctx, rest[0], text, holder)
            elif parenthesize_if_needed(ctx, holder, "x", holder) != "x":
                text = f"({text})"
            return replace(ctx, holder, text)
        if isinstance(holder, ast.IfExp) and node is holder.test:
            kept = holder.body if value else holder.orelse
            return replace(ctx, holder, parenthesize_if_needed(ctx, kept, ctx.source(kept), holder))
        if isinstance(holder, ast.If) and node is holder.test:
            edit = _drop_branch(ctx, holder, value)
            if edit is not None:
                return edit
        return replace(ctx, node, "True" if value else "False")


def _parenthesized(ctx: PythonContext, node: ast.expr) -> tuple[int, int] | None:
    """The span of the parentheses that hold `node` alone (`not (a or b)`, a condition
    wrapped over lines), not a call's or a tuple's; None when there are none."""
    text, start, end = ctx.text, ctx.start(node), ctx.end(node)
    before = len(text[:start].rstrip())
    after = end + len(text[end:]) - len(text[end:].lstrip())
    if before == 0 or text[before - 1] != "(" or not text[after:].startswith(")"):
        return None
    ahead = text[: before - 1].rstrip()
    word = ahead.split()[-1] if ahead.split() else ""
    if ahead and (ahead[-1].isalnum() or ahead[-1] in "_)]}\"'"):
        if not keyword.iskeyword(word.rsplit("(", 1)[-1]):
            return None  # a call's parentheses, `f(a or b)`
    return before - 1, after + 1


def _without_lines(ctx: PythonContext, node: ast.BoolOp, rest: list[ast.expr]) -> str | None:
    """`node`'s text without the operands that are not in `rest`, when each of those starts
    its own line after the first operand (black's layout: `and not is_scripting()`): their
    lines go, with the comment lines just above them (they explain them); every other line,
    and the comments on them, stay as written."""
    values = node.values
    if node.lineno == node.end_lineno or values[0] not in rest:
        return None
    kept = {id(r) for r in rest}
    if any(v.lineno <= values[i - 1].end_lineno for i, v in enumerate(values) if i):
        return None
    start = ctx.start(node)
    text = ctx.text
    cut: list[tuple[int, int]] = []
    for i, value in enumerate(values):
        if id(value) in kept:
            continue
        prev_line_end = ctx.index.offset(values[i - 1].end_lineno + 1, 0)
        newline = text.rfind("\n", 0, prev_line_end)
        cut.append(
            (
                newline if newline >= ctx.end(values[i - 1]) else ctx.end(values[i - 1]),
                ctx.end(value),
            )
        )
    out, last = [], start
    for a, b in cut:
        out.append(text[last:a])
        last = b
    out.append(text[last : ctx.end(node)])
    return "".join(out)


def _decided_as_truth(
    ctx: PythonContext, node: ast.BoolOp, rest: list[ast.expr], known: Known
) -> bool | None:
    """`flag and False` where only its truth is asked (an `if`, `while`, `assert`, ternary
    test, `not`) and what runs before the constant has no effect (names, attributes,
    literals, `is` comparisons of those): always falsy, so the condition is the constant.
    As a value (`kept = flag and False`) it stays, since it can be `flag` itself."""
    short = isinstance(node.op, ast.Or)
    if len(rest) < 2 or constant(rest[-1], known) is not short:
        return None
    if not all(_pure(r) for r in rest[:-1]):
        return None
    holder = parent(ctx, node)
    asks_truth = (
        isinstance(holder, (ast.If, ast.While, ast.IfExp, ast.Assert)) and holder.test is node
    ) or (isinstance(holder, ast.UnaryOp) and isinstance(holder.op, ast.Not))
    return short if asks_truth else None


def _pure(node: ast.expr) -> bool:
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return _pure(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _pure(node.operand)
    if isinstance(node, ast.BoolOp):
        return all(_pure(v) for v in node.values)
    if isinstance(node, ast.Compare):
        return all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) and all(
            _pure(v) for v in (node.left, *node.comparators)
        )
    return False


def _operand_text(ctx: PythonContext, node: ast.expr, known: Known) -> str:
    value = constant(node, known)
    if value is not None:
        return str(value)
    text = ctx.source(node)
    return f"({text})" if precedence(node, text) <= _AND_LEVEL else text


def _lines(ctx: PythonContext, first: int, last: int) -> tuple[int, int]:
    """Offsets of whole lines first..last (1-based, newline of the last included)."""
    return ctx.index.offset(first, 0), ctx.index.offset(last + 1, 0)


def _indent(ctx: PythonContext, line: int) -> str:
    text = ctx.index.line_text(line)
    return text[: len(text) - len(text.lstrip())]


def _dedent(ctx: PythonContext, block: list[ast.stmt], first: int, to: str) -> str | None:
    """Lines first..end of `block` moved to indentation `to`; None when a multi-line string
    would change with them."""
    for node in walk_tree(ast.Module(body=block, type_ignores=[])):
        if isinstance(node, (ast.Constant, ast.JoinedStr)) and node.lineno != node.end_lineno:
            return None
    start, end = _lines(ctx, first, block[-1].end_lineno)
    own = _indent(ctx, block[0].lineno)
    if not own.startswith(to):
        return None
    cut = len(own) - len(to)
    out = []
    for line in ctx.text[start:end].splitlines(keepends=True):
        out.append(
            line[cut:] if line[:cut].strip() == "" and len(line) > cut else line.lstrip(" \t")
        )
    return "".join(out)


def _is_elif(ctx: PythonContext, node: ast.If) -> bool:
    holder = parent(ctx, node)
    return (
        isinstance(holder, ast.If)
        and holder.orelse == [node]
        and ctx.index.line_text(node.lineno)[node.col_offset :].startswith("elif")
    )


def _else_line(ctx: PythonContext, node: ast.If) -> int:
    for line in range(node.orelse[0].lineno - 1, node.body[-1].end_lineno, -1):
        if ctx.index.line_text(line).strip().startswith("else"):
            return line
    return node.orelse[0].lineno - 1


def _drop_branch(ctx: PythonContext, node: ast.If, value: bool) -> Edit | None:
    """`if <constant>:` without its dead branch; None when the layout does not allow it
    (bodies on the header line), and the condition is replaced by the constant instead."""
    if not value and not node.orelse and not _is_elif(ctx, node):
        return drop_statement(ctx, node)  # any layout, `if False: x = 1` included
    header_end = node.test.end_lineno
    chained = _is_elif_chain(ctx, node)
    else_inline = (
        node.orelse
        and not chained
        and ctx.index.line_text(node.orelse[0].lineno).strip().startswith("else")
    )
    if node.body[0].lineno == header_end or else_inline:
        return None
    indent = _indent(ctx, node.lineno)
    if _is_elif(ctx, node):
        if not value:  # the elif clause disappears; what follows it keeps its keyword
            start, end = _lines(ctx, node.lineno, node.body[-1].end_lineno)
            return Edit(start, end, "")
        if node.orelse:  # `elif True:` is the last branch taken: it becomes `else:`
            start, _ = _lines(ctx, node.lineno, header_end)
            _, end = _lines(ctx, node.lineno, node.orelse[-1].end_lineno)
            body_start, body_end = _lines(ctx, header_end + 1, node.body[-1].end_lineno)
            return Edit(start, end, f"{indent}else:\n" + ctx.text[body_start:body_end])
        start, end = _lines(ctx, node.lineno, header_end)
        return Edit(start, end, f"{indent}else:\n")
    if value:
        text = _dedent(ctx, node.body, header_end + 1, indent)
    elif chained:  # `if False: ... elif b:` -> `if b:`
        start, end = _lines(ctx, node.lineno, node.orelse[-1].end_lineno)
        rest_start, _ = _lines(ctx, node.orelse[0].lineno, node.orelse[0].lineno)
        tail = ctx.text[rest_start:end]
        cut = len(indent)
        return Edit(start, end, tail[:cut] + tail[cut + 2 :])  # drop the "el" of "elif"
    elif node.orelse:
        text = _dedent(ctx, node.orelse, _else_line(ctx, node) + 1, indent)
    else:
        return drop_statement(ctx, node)
    if text is None:
        return None
    start, end = _lines(ctx, node.lineno, node.end_lineno)
    return Edit(start, end, text)


def _is_elif_chain(ctx: PythonContext, node: ast.If) -> bool:
    return (
        len(node.orelse) == 1
        and isinstance(node.orelse[0], ast.If)
        and _is_elif(ctx, node.orelse[0])
    )
