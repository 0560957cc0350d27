"""Branches a rewrite settled: `if` statements whose arms the run made identical, or left
holding only `pass`, become what a maintainer would write (part of the tidy pass).

    if jit_mode == "script":                    op_jit = torch.export.export(op, (x,))
        op_jit = torch.export.export(op, (x,))
    else:                                 ->
        op_jit = torch.export.export(op, (x,))

    if use_jit:                           ->    (removed)
        pass

Only an `if` the run changed is touched, and only when dropping its test changes nothing a
program can observe: the test is a name, an attribute, a constant, or comparisons, `not`,
`and`/`or` of those (a call may do anything). Comments on the lines that would go, `elif`
chains, and arms holding a multi-line string (dedenting would change its value) are left.
"""

from __future__ import annotations

import ast
import io
import tokenize

from migrate.analysis.astwalk import walk_tree
from migrate.fix.source_text import line_opcodes

MAX_PASSES = 5  # a collapsed inner `if` can settle the one around it


def collapse_settled_branches(original: str, text: str) -> str:
    """`text` with each settled `if` the run changed collapsed; `text` when there is none."""
    for _ in range(MAX_PASSES):
        new = _collapse_one(original, text)
        if new is None:
            break
        text = new
    return _same_either_way(original, text)


def _same_either_way(original: str, text: str) -> str:
    """`x if TEST else x` on a line the run changed (`torch.jit.script(self) if jit else
    self` once the capture goes) is `x`, TEST being pure."""
    lines = text.split("\n")
    changed = _changed_lines(original.split("\n"), lines)
    found = [
        node
        for node in walk_tree(ast.parse(text))
        if isinstance(node, ast.IfExp)
        and node.lineno == node.end_lineno
        and node.lineno - 1 in changed
        and _pure(node.test)
        and ast.dump(node.body) == ast.dump(node.orelse)
    ]
    done: set[int] = set()  # one a line: a nested one is settled by the next tidy
    for node in sorted(found, key=lambda n: (n.lineno, n.col_offset), reverse=True):
        if node.lineno in done:
            continue
        done.add(node.lineno)
        line = lines[node.lineno - 1].encode("utf-8")
        start, end = node.col_offset, node.end_col_offset
        body = line[node.body.col_offset : node.body.end_col_offset]
        lines[node.lineno - 1] = (line[:start] + body + line[end:]).decode("utf-8")
    return "\n".join(lines) if found else text


def _collapse_one(original: str, text: str) -> str | None:
    lines = text.split("\n")
    tree = ast.parse(text)
    changed = _changed_lines(original.split("\n"), lines)
    comments = _comment_lines(text)
    siblings = {id(s): block for n in walk_tree(tree) for block in _blocks(n) for s in block}
    for node in walk_tree(tree):
        if not isinstance(node, ast.If) or not _header_is_plain(node, lines):
            continue
        span = range(node.lineno - 1, node.end_lineno or node.lineno)
        if not changed.intersection(span) or not _pure(node.test):
            continue
        replacement = _settled(node, lines, comments, siblings.get(id(node), [node]))
        if replacement is not None:
            lines[span.start : span.stop] = replacement
            return "\n".join(lines)
    return None


def _settled(
    node: ast.If, lines: list[str], comments: set[int], siblings: list[ast.stmt]
) -> list[str] | None:
    """The lines that replace the `if` statement, or None to leave it (an `if x: pass` that
    is the only statement of its block becomes `pass`)."""
    if not node.orelse:
        only_pass = len(node.body) == 1 and isinstance(node.body[0], ast.Pass)
        lines_of = range(node.lineno, (node.end_lineno or node.lineno) + 1)
        if comments.intersection(lines_of):
            return None
        if not only_pass:
            return [] if _returns_what_follows(node, lines, siblings) else None
        return [] if len(siblings) > 1 else [_indent(lines[node.lineno - 1]) + "pass"]
    else_at = _else_line(node, lines)
    if else_at is None or else_at + 1 in comments or node.lineno in comments:
        return None
    if node.body[0].lineno == node.lineno:  # `if x: a` on one line
        return None
    body = _trimmed(lines[node.lineno : else_at])
    orelse = _trimmed(lines[else_at + 1 : node.end_lineno])
    if body != orelse or _multiline_strings(node.body):
        return None
    indent = _indent(lines[node.lineno - 1])
    inner = _indent(body[0])
    if len(inner) <= len(indent) or not all(
        line.startswith(inner) or not line.strip() for line in body
    ):
        return None
    return [indent + line[len(inner) :] if line.strip() else line for line in body]


def _returns_what_follows(node: ast.If, lines: list[str], siblings: list[ast.stmt]) -> bool:
    """`if X: return f` followed by `return f`: the arm ends the function as what follows
    it does, the same way (its lines, dedented, are the rest of the block's)."""
    if not isinstance(node.body[-1], (ast.Return, ast.Raise)) or node.body[0].lineno == node.lineno:
        return False
    at = next((i for i, s in enumerate(siblings) if s is node), None)
    rest = siblings[at + 1 :] if at is not None else []
    if not rest or _multiline_strings(node.body):
        return False
    body = _dedented(_trimmed(lines[node.lineno : node.end_lineno]))
    after = _dedented(_trimmed(lines[rest[0].lineno - 1 : rest[-1].end_lineno]))
    return body is not None and body == after


def _dedented(block: list[str]) -> list[str] | None:
    if not block:
        return None
    inner = _indent(block[0])
    if not all(line.startswith(inner) or not line.strip() for line in block):
        return None
    return [line[len(inner) :] for line in block]


def _header_is_plain(node: ast.If, lines: list[str]) -> bool:
    """`if TEST:` on one line (not `elif`, no comment: checked by the caller), as ast sees it."""
    header = lines[node.lineno - 1]
    if node.test.end_lineno != node.lineno or not header.lstrip().startswith("if "):
        return False
    tail = header.encode("utf-8")[node.test.end_col_offset :].decode("utf-8", "replace")
    return tail.strip() == ":" or (
        tail.lstrip().startswith(":") and node.body[0].lineno == node.lineno
    )


def _else_line(node: ast.If, lines: list[str]) -> int | None:
    """0-based index of the plain `else:` line of `node`, None for `elif` or anything else."""
    first = node.orelse[0].lineno - 1
    for index in range((node.body[-1].end_lineno or node.lineno), first):
        stripped = lines[index].strip()
        if stripped == "else:":
            return index
        if stripped and not stripped.startswith("#"):
            return None
    return None


def _trimmed(block: list[str]) -> list[str]:
    while block and not block[-1].strip():
        block = block[:-1]
    return block


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _pure(test: ast.expr) -> bool:
    """Evaluating `test` has no effect a program relies on: names, attributes, constants,
    tuples and comparisons of them, `not`, `and`/`or`."""
    if isinstance(test, (ast.Name, ast.Constant)):
        return True
    if isinstance(test, ast.Attribute):
        return _pure(test.value)
    if isinstance(test, ast.Tuple):
        return all(_pure(e) for e in test.elts)
    if isinstance(test, ast.Compare):
        return _pure(test.left) and all(_pure(c) for c in test.comparators)
    if isinstance(test, ast.BoolOp):
        return all(_pure(v) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _pure(test.operand)
    return False


def _multiline_strings(body: list[ast.stmt]) -> bool:
    return any(
        isinstance(n, (ast.Constant, ast.JoinedStr)) and n.lineno != n.end_lineno
        for stmt in body
        for n in walk_tree(stmt)
    )


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    """Each statement list of `node` (a body, an else, a finally)."""
    return [
        getattr(node, name)
        for name in ("body", "orelse", "finalbody", "handlers")
        if isinstance(getattr(node, name, None), list)
    ]


def _changed_lines(before: list[str], after: list[str]) -> set[int]:
    """0-based lines of `after` that the run wrote (not in an equal block of the diff)."""
    return {
        j
        for tag, _, _, j1, j2 in line_opcodes(before, after)
        if tag != "equal"
        for j in range(j1, j2)
    }


def _comment_lines(text: str) -> set[int]:
    """1-based lines holding a comment."""
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return {tok.start[0] for tok in tokens if tok.type == tokenize.COMMENT}
