"""Make rewritten Python look hand-written: the file gains no lint or format errors.

Runs once per file after all fix rounds, comparing the original text with the fixed one, and
touches only what the run changed: branches the rewrite settled (identical arms, `if x: pass`),
imports the rewrite left unused, blank-line runs left by removed statements, redundant
parentheses, nested functions without their blank lines, and lines the tool wrote past the
project's line length. `tidy(text, text)` returns `text`.
"""

from __future__ import annotations

import ast
import functools
import io
import os
import re
import tokenize
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from migrate.analysis.astwalk import walk_lines, walk_tree
from migrate.analysis.parsed import tree_of
from migrate.config import ConfigError
from migrate.fix.settled_branches import collapse_settled_branches
from migrate.fix.source_text import keep_endings, line_opcodes, relocate

if TYPE_CHECKING:
    from migrate.findings import Finding
    from migrate.fix.fixer import FileFix

DEFAULT_LINE_LENGTH = 88  # ruff's and black's default
MAX_LINE_LENGTH = 320  # ruff's largest
_OPEN, _CLOSE = "([{", ")]}"


def fix_source(
    path: str, text: str, analyze: Callable[[str], list[Finding]], newline: str = "\n", **options
) -> FileFix:
    """One file's fixes (fixer.fix_rounds, same arguments), then its layout tidied."""
    from migrate.fix.fixer import fix_rounds

    result = fix_rounds(path, text, analyze, newline, **options)
    if result.error is None and result.fixed != text and path.endswith((".py", ".pyi")):
        rounds = result.fixed
        # tidy reads every ending as \n; each untouched line gets its own back.
        result.fixed = keep_endings(text, tidy(text, rounds, path))
        # What is left was found in the last round's text; tidying moved its lines.
        result.remaining = relocate(result.remaining, rounds, result.fixed)
    return result


def tidy(original: str, fixed: str, path: str) -> str:
    """`fixed` with the layout damage of the rewrite repaired; `fixed` itself when the
    repair would not parse or changes nothing."""
    if fixed == original:
        return fixed
    from migrate.fix.source_text import newline_of

    newline = newline_of(fixed)
    # Every line ending read as \n (a file may mix them); source_text.keep_endings puts back
    # each untouched line's own.
    text, before = _lf(fixed), _lf(original)
    try:
        # First: a collapsed branch can leave an import unused (`if TYPE_CHECKING: pass`).
        text = collapse_settled_branches(before, text)
        text = remove_unused_imports(before, text, Path(path).name == "__init__.py")
        written = _written_lines(before)
        text = _place_written_imports(text, written)
        text = _drop_redundant_parentheses(text, written)
        limit = configured_line_length(path)
        text = _keep_exploded_calls(before, text, limit)
        text = _join_wrapped_values(text, written, limit)
        text = _explode_around_multiline_items(text, written)
        text = _wrap_long_lines(text, written | _long_before(before, text, limit), limit)
        text = _space_nested_functions(text, written)
        text = _collapse_blank_lines(before, text)
        tree_of(text)
    except (SyntaxError, ValueError, tokenize.TokenError, IndexError):
        return fixed
    return text.replace("\n", newline) if newline != "\n" else text


def _lf(text: str) -> str:
    return re.sub(r"\r\n?", "\n", text) if "\r" in text else text


# --------------------------------------------------------------------------- imports


def _names_used(tree: ast.Module) -> set[str]:
    """Names read anywhere, including inside string annotations and `__all__` (as ruff's F401
    reads them; a name in a docstring or a message does not count)."""
    used = {n.id for n in walk_lines(tree, None) if isinstance(n, ast.Name)}
    for node in _annotation_strings(tree):
        used.update(re.findall(r"[A-Za-z_]\w*", node.value))
    return used


def _annotation_strings(tree: ast.Module) -> list[ast.Constant]:
    roots: list[ast.AST] = []
    for node in walk_lines(tree, None):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns:
            roots.append(node.returns)
        elif isinstance(node, ast.arg) and node.annotation:
            roots.append(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                roots.append(node.value)
    return [
        n
        for root in roots
        for n in walk_tree(root)
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def _import_bindings(tree: ast.Module) -> list[tuple[str, tuple[str, str | None, str | None]]]:
    """(bound name, removal key) of each module-level import alias."""
    from migrate.fix.imports import _top_level_imports

    found = []
    for node in tree.body:
        for stmt in _top_level_imports(node):
            if isinstance(stmt, ast.Import):
                for a in stmt.names:
                    found.append((a.asname or a.name.split(".")[0], (a.name, None, a.asname)))
            elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
                if stmt.module == "__future__":
                    continue
                for a in stmt.names:
                    if a.name != "*":
                        found.append((a.asname or a.name, (stmt.module, a.name, a.asname)))
    return found


def remove_unused_imports(original: str, fixed: str, init_file: bool = False) -> str:
    """Drop module-level imports the original used and the fixed text no longer uses.
    Imports the original already left unused, and re-exports (`__init__.py`), stay."""
    from migrate.fix.edits import apply_edits
    from migrate.fix.imports import _removal_edits

    if init_file:
        return fixed
    tree = tree_of(fixed)
    used_before = _names_used(tree_of(original))
    used_after = _names_used(tree)
    doomed = [
        key
        for name, key in _import_bindings(tree)
        if name in used_before and name not in used_after
    ]
    if not doomed:
        return fixed
    edits = _removal_edits(fixed, tree, doomed)
    if edits is None:  # an import text edits cannot rewrite safely: leave it
        return fixed
    return apply_edits(fixed, edits, "\n")


def _place_written_imports(text: str, original_lines: set[str]) -> str:
    """A one-line import the rewrite wrote into the leading import block (where a try/if
    shim stood) moves where isort puts it: into the statement importing from its module, or
    into the group of its section."""
    from migrate.fix.edits import apply_edits
    from migrate.fix.imports import _addition_edits, _leading_imports

    lines = text.split("\n")
    moved = []
    for stmt in _leading_imports(tree_of(text)):
        line = lines[stmt.lineno - 1]
        one_line = stmt.end_lineno == stmt.lineno and stmt.col_offset == 0
        if one_line and line not in original_lines and "#" not in line and ";" not in line:
            moved.append(line)
    # Last first: a shim's import sits below the rest of the block, and the line it merges
    # into may itself be one the rewrite changed (a name removed) in its right place.
    for statement in reversed(moved):
        lines = text.split("\n")
        if statement not in lines:  # another moved import merged into it
            continue
        at = lines.index(statement)
        # A group of its own: its blank line goes with it, or two would part the groups.
        alone = 0 < at < len(lines) - 1 and lines[at - 1] == "" and lines[at + 1] == ""
        rest = "\n".join(lines[: at - alone] + lines[at + 1 :])
        tree = ast.parse(rest)
        if not _leading_imports(tree):
            continue
        text = apply_edits(rest, _addition_edits(rest, tree, [statement]), "\n")
    return text


# --------------------------------------------------------------------------- lines


def _written_lines(original: str) -> set[str]:
    """The original's lines; any other line of the result was written by the tool."""
    return set(original.split("\n"))  # not splitlines: a form feed does not end a line


def _long_before(original: str, text: str, limit: int) -> set[str]:
    """Lines of `text` that replace a line the original already had past the limit: the
    project lives with those, and a rewrite of a pin inside one does not reflow it."""
    old, new = original.split("\n"), text.split("\n")
    exempt: set[str] = set()
    for tag, i1, i2, j1, j2 in line_opcodes(old, new):
        if tag == "replace" and any(len(line) > limit for line in old[i1:i2]):
            exempt.update(new[j1:j2])
    return exempt


def _collapse_blank_lines(original: str, text: str) -> str:
    """No run of blank lines longer than ruff format allows (2 before module-level code, 1
    inside blocks) unless the original had that very run; no blank lines opening the file."""
    # A run is the original's own when the same lines surround it there.
    lines = original.split("\n")
    kept_runs = {
        (lines[start - 1] if start else "", run, nxt) for start, run, nxt in _blank_runs(lines)
    }
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    runs = {start: (run, nxt) for start, run, nxt in _blank_runs(lines)}
    imports_end = _leading_imports_end(text)
    docstring_end = _module_docstring_end(text)
    while i < len(lines):
        if i in runs:
            run, nxt = runs[i]
            key = (lines[i - 1] if i else "", run, nxt)
            allowed = 2 if not nxt[:1].isspace() else 1
            if i == docstring_end:
                allowed = 1  # ruff format: one blank line after the module's docstring
            if i == imports_end and not nxt.startswith(("def ", "class ", "async def ", "@")):
                allowed = 1  # isort: one blank line between imports and plain code
            if i > 0 and re.match(r"\s*class\b.*:\s*$", lines[i - 1]):
                allowed = 0  # ruff format: no blank line opens a class body
            if i == 0 and not original.startswith("\n"):
                allowed = 0  # an import removed from the top leaves no gap above the code
                kept_runs.discard(key)
            if run > allowed and key not in kept_runs:
                # A form feed (a page break) is the author's, never blank-line damage.
                breaks = [line for line in lines[i : i + run] if "\x0c" in line]
                out.extend(breaks + [""] * max(allowed - len(breaks), 0))
                i += run
                continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def _module_docstring_end(text: str) -> int:
    """0-based index of the line after the module's docstring (-1: none)."""
    body = ast.parse(text).body
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first.end_lineno  # type: ignore[return-value]
    return -1


def _leading_imports_end(text: str) -> int:
    """0-based index of the line after the module's leading import block (-1: none)."""
    from migrate.fix.imports import _leading_imports

    block = _leading_imports(tree_of(text))
    return block[-1].end_lineno if block else -1  # type: ignore[return-value]


def _blank_runs(lines: list[str]) -> list[tuple[int, int, str]]:
    """(start, length, next non-blank line) of each run of blank lines before code."""
    runs = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "":
            j = i
            while j < len(lines) and lines[j].strip() == "":
                j += 1
            if j < len(lines):
                runs.append((i, j - i, lines[j]))
            i = j
        else:
            i += 1
    return runs


def _statement_spans(tree: ast.Module) -> list[ast.stmt]:
    return [n for n in walk_lines(tree, None) if isinstance(n, ast.stmt)]


def _drop_redundant_parentheses(text: str, original_lines: set[str]) -> str:
    """`x = (a if c else b)` written by the tool loses the parentheses ruff format drops."""
    lines = text.split("\n")
    tree = tree_of(text)
    for node in _statement_spans(tree):
        if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.Return)):
            continue
        if node.lineno != node.end_lineno or lines[node.lineno - 1] in original_lines:
            continue
        value = node.value
        if value is None or isinstance(value, (ast.Tuple, ast.NamedExpr, ast.Yield)):
            continue
        line = lines[node.lineno - 1]
        start = value.col_offset
        end = value.end_col_offset
        assert end is not None
        # ast spans exclude the outer parentheses: look just outside them.
        head, tail = line[:start].rstrip(), line[end:].lstrip()
        if not (head.endswith("(") and tail.startswith(")")):
            continue
        bare = head[:-1].rstrip() + " " + line[start:end] + tail[1:]
        try:
            same = ast.dump(ast.parse(bare.strip())) == ast.dump(ast.parse(line.strip()))
        except SyntaxError:
            continue
        if same:
            indent = line[: len(line) - len(line.lstrip())]
            lines[node.lineno - 1] = indent + bare.strip()
    return "\n".join(lines)


def _join_wrapped_values(text: str, original_lines: set[str], limit: int) -> str:
    """`x = (` / a value the tool shortened / `)` on one line when it fits, as ruff format
    writes it (`x = (\n    torch.jit.annotate(int, a + b) * 2\n)` -> `x = (a + b) * 2`)."""
    lines = text.split("\n")
    tree = tree_of(text)
    for node in reversed(_statement_spans(tree)):
        if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.Return)) or node.value is None:
            continue
        first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[operator]
        if last - first != 2 or lines[first + 1] in original_lines:
            continue
        head, value, tail = lines[first], lines[first + 1].strip(), lines[last].strip()
        if not head.endswith("(") or tail != ")" or value.endswith(","):
            continue
        opener = head[:-1].rstrip()
        if not (opener.endswith("=") or opener.strip() == "return"):
            continue  # the parentheses hold a part of the value, not all of it
        joined = head[:-1].rstrip() + " " + value
        if len(joined) > limit:
            continue
        try:
            same = ast.dump(ast.parse(joined.strip())) == ast.dump(
                ast.parse("\n".join(lines[first : last + 1]).strip())
            )
        except SyntaxError:
            continue
        if same:
            lines[first : last + 1] = [joined]
    return "\n".join(lines)


def _space_nested_functions(text: str, original_lines: set[str]) -> str:
    """A function the tool wrote inside another gets the blank line before and after it
    that ruff format puts there (none where it opens or closes its block)."""
    lines = text.split("\n")
    tree = tree_of(text)
    before: set[int] = set()  # 0-based line indexes that need a blank line above
    for parent in walk_lines(tree, None):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if not isinstance(block, list) or parent is tree:
                continue
            for i, stmt in enumerate(block):
                if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                first = min([stmt.lineno] + [d.lineno for d in stmt.decorator_list]) - 1
                if lines[stmt.lineno - 1] in original_lines:
                    continue
                if i > 0:
                    before.add(first)
                if i + 1 < len(block):
                    nxt = block[i + 1]
                    before.add(min([nxt.lineno] + [d.lineno for d in _decorators(nxt)]) - 1)
    out: list[str] = []
    for index, line in enumerate(lines):
        if index in before and out and out[-1].strip() != "":
            # A comment right above belongs to the statement: the blank line goes above it.
            at = len(out)
            while at > 0 and out[at - 1].lstrip().startswith("#"):
                at -= 1
            if at > 0 and out[at - 1].strip() != "":
                out.insert(at, "")
        out.append(line)
    return "\n".join(out)


def _decorators(stmt: ast.stmt) -> list[ast.expr]:
    return list(getattr(stmt, "decorator_list", []))


# --------------------------------------------------------------------------- long lines


def _wrap_long_lines(text: str, original_lines: set[str], limit: int) -> str:
    """Split each line the tool wrote past `limit` at its last bracket pair, black style:
    the contents on one indented line if they fit, else one item a line with a trailing
    comma (a magic trailing comma keeps formatters from joining it back)."""
    lines = text.split("\n")
    tree = tree_of(text)
    single = {n.lineno for n in _statement_spans(tree) if n.lineno == n.end_lineno}
    compound = {
        n.lineno
        for n in _statement_spans(tree)
        if isinstance(n, (ast.If, ast.While, ast.For, ast.With, ast.FunctionDef, ast.ClassDef))
    }
    out: list[str] = []
    for number, line in enumerate(lines, start=1):
        if (
            len(line) > limit
            and line not in original_lines
            and number in single
            and number not in compound
        ):
            out.extend(_wrap_import(line) or _wrap(line, limit))
        else:
            out.append(line)
    return "\n".join(out)


def _wrap_import(line: str) -> list[str] | None:
    """isort's form of a long `from M import a, b`: one name a line, in parentheses."""
    found = re.fullmatch(r"(from [\w.]+ import) ([\w, ]+)", line)
    if not found or " as " in line:
        return None
    names = [name.strip() for name in found.group(2).split(",")]
    return [f"{found.group(1)} (", *(f"    {name}," for name in names), ")"]


def _keep_exploded_calls(original: str, text: str, limit: int) -> str:
    """A call the original wrote one argument a line, rewritten into one line, keeps that
    layout (its closing bracket pair, two or more items, each on its own line)."""
    old, new = original.split("\n"), text.split("\n")
    old_tree, new_tree = tree_of(original), tree_of(text)
    replaced: dict[int, list[str]] = {}
    for tag, i1, i2, j1, j2 in line_opcodes(old, new):
        if tag != "replace":
            continue
        # Statements of the changed region, paired in order when both sides have as many.
        was = _simple_statements(old_tree, i1 + 1, i2)
        now = _simple_statements(new_tree, j1 + 1, j2)
        if len(was) != len(now):
            continue
        for before, after in zip(was, now, strict=True):
            line = new[after.lineno - 1]
            exploded = old[before.lineno - 1].rstrip().endswith(tuple(_OPEN))
            if not exploded or after.end_lineno != after.lineno or "#" in line:
                continue
            pair = _split_point(line)
            if pair and len(_top_level_items(line[pair[0] + 1 : pair[1]])) >= 2:
                replaced[after.lineno - 1] = _wrap(line, limit, explode=True)
    out: list[str] = []
    for index, line in enumerate(new):
        out.extend(replaced.get(index, [line]))
    return "\n".join(out)


def _simple_statements(tree: ast.Module, first: int, last: int) -> list[ast.stmt]:
    """Statements without a body lying wholly within lines first..last."""
    compound = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef, ast.ClassDef)
    return sorted(
        (
            n
            for n in _statement_spans(tree)
            if not isinstance(n, compound)
            and first <= n.lineno
            and (n.end_lineno or n.lineno) <= last
        ),
        key=lambda n: n.lineno,
    )


def _explode_around_multiline_items(text: str, original_lines: set[str]) -> str:
    """`f(a, (\n    x,\n))` written by the tool around an argument that spans lines becomes
    one argument a line, the long argument re-indented whole (ruff format's layout)."""
    lines = text.split("\n")
    edits: dict[int, tuple[int, list[str]]] = {}
    for stmt in _statement_spans(tree_of(text)):
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Expr, ast.Return)):
            continue
        first = lines[stmt.lineno - 1]
        if stmt.end_lineno == stmt.lineno or first in original_lines:
            continue
        block = lines[stmt.lineno - 1 : stmt.end_lineno]
        new = _explode_block(block)
        if new:
            edits[stmt.lineno - 1] = (len(block), new)
    out: list[str] = []
    index = 0
    while index < len(lines):
        if index in edits:
            count, new = edits[index]
            out.extend(new)
            index += count
        else:
            out.append(lines[index])
            index += 1
    return "\n".join(out)


def _explode_block(block: list[str]) -> list[str] | None:
    source = "\n".join(block)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source + "\n").readline))
    except (tokenize.TokenError, IndentationError):
        return None
    if any(t.type == tokenize.COMMENT or t.start[0] != t.end[0] for t in tokens):
        return None  # comments or strings spanning lines: leave them as written
    offsets = [0]
    for line in block:
        offsets.append(offsets[-1] + len(line) + 1)

    def at(position: tuple[int, int]) -> int:
        return offsets[position[0] - 1] + position[1]

    depth, opener, cuts, closer = 0, None, [], None
    for tok in tokens:
        if tok.type != tokenize.OP:
            continue
        if tok.string in _OPEN:
            depth += 1
            if depth == 1 and opener is None and tok.start[0] == 1:
                opener = at(tok.start)
        elif tok.string in _CLOSE:
            depth -= 1
            if depth == 0 and opener is not None and closer is None:
                closer = at(tok.start)
        elif tok.string == "," and depth == 1 and opener is not None and closer is None:
            cuts.append(at(tok.start))
    if opener is None or closer is None or opener == len(block[0].rstrip()) - 1:
        return None  # no pair, or already one item a line
    if source.count("\n", closer) or source.count("\n", 0, opener):
        return None  # the pair must open on the first line and close on the last
    items = [
        source[a:b].strip()
        for a, b in zip([opener + 1, *(c + 1 for c in cuts)], [*cuts, closer], strict=True)
    ]
    items = [i for i in items if i]
    if not any("\n" in item for item in items):
        return None
    indent = block[0][: len(block[0]) - len(block[0].lstrip())]
    inner = indent + "    "
    out = [source[: opener + 1]]
    for item in items:
        parts = item.split("\n")
        last = parts[-1]
        shift = len(inner) - (len(last) - len(last.lstrip()))
        moved = [parts[0]] + [_shift(p, shift) for p in parts[1:]]
        moved[0] = inner + moved[0]
        if not _grouping(source, opener, closer, len(items)):
            moved[-1] += ","
        out.extend(moved)
    out.append(indent + source[closer:].strip())
    return out


def _grouping(source: str, opener: int, closer: int, items: int) -> bool:
    """Parentheses that only group one expression: a comma there would make it a tuple. A
    comma already after the one item makes them a tuple (`(x,)`): that comma stays."""
    if source[opener] != "(" or items != 1 or source[opener + 1 : closer].rstrip().endswith(","):
        return False
    before = source[:opener].rstrip()
    return not before or not (before[-1].isalnum() or before[-1] in "_)]}'\"")


def _shift(line: str, by: int) -> str:
    if by >= 0:
        return " " * by + line
    return line[min(-by, len(line) - len(line.lstrip())) :]


def _wrap(line: str, limit: int, depth: int = 0, explode: bool = False) -> list[str]:
    code, comment = _split_comment(line)
    if comment or depth > 4:
        return [line]
    indent = code[: len(code) - len(code.lstrip())]
    fluent = _fluent(code, indent, limit)
    if fluent:
        return fluent
    pair = _split_point(code)
    if pair is None:
        return [line]
    opener, closer = pair
    head, body, tail = code[: opener + 1], code[opener + 1 : closer].strip(), code[closer:]
    inner = indent + "    "
    if not body or len(head) > limit:
        return [line]
    items = _top_level_items(body)
    if len(inner + body) <= limit and not body.endswith(",") and not explode:
        middle = [inner + body]
    else:
        middle = []
        comma = "" if _grouping(code, opener, closer, len(items)) else ","
        for item in items:
            line = inner + item + comma
            middle.extend(_wrap(line, limit, depth + 1) if len(line) > limit else [line])
    return [head, *middle, indent + tail.lstrip()]


def _fluent(code: str, indent: str, limit: int) -> list[str] | None:
    """A call chain with two or more links after its first call (`f(...).g().h`) goes one
    link a line, as ruff format lays out chains: bare as a call argument (`item,`), inside
    new parentheses as the value of an assignment."""
    body, prefix, suffix = code.strip(), "", ""
    if body.endswith(","):
        body, suffix = body[:-1], ","
    else:
        target = re.match(r"[\w.]+ = ", body)
        if not target:
            return None
        prefix, body = target.group(0), body[target.end() :]
    links = _chain_links(body)
    if len(links) < 3:
        return None
    inner = indent + ("    " if prefix else "")
    lines = [inner + link for link in links]
    if prefix:
        return [indent + prefix + "(", *lines, indent + ")"]
    lines[-1] += suffix
    return lines


def _chain_links(expr: str) -> list[str]:
    """`f(a).g().h` -> ["f(a)", ".g()", ".h"]: the dots at bracket depth 0 after the first
    call; a single item when there is no such chain."""
    seen_call, cuts = False, []
    try:
        for tok, depth in _operators(expr):
            if tok.string == ")" and depth == 0:
                seen_call = True
            elif tok.string == "." and depth == 0 and seen_call:
                cuts.append(tok.start[1])
    except (tokenize.TokenError, IndentationError):
        return [expr]
    bounds = [0, *cuts, len(expr)]
    return [expr[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def _operators(text: str):
    """(operator token, bracket depth after it) along one line of code."""
    depth = 0
    for tok in tokenize.generate_tokens(io.StringIO(text + "\n").readline):
        if tok.type != tokenize.OP:
            continue
        if tok.string in _OPEN:
            depth += 1
        elif tok.string in _CLOSE:
            depth -= 1
        yield tok, depth


def _split_comment(line: str) -> tuple[str, str]:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line + "\n").readline))
    except (tokenize.TokenError, IndentationError):
        return line, "unparsable"
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            return line[: tok.start[1]].rstrip(), tok.string
    return line, ""


def _brackets(code: str) -> list[tuple[int, int, int]]:
    """(opener column, closer column, depth) of each bracket pair on one line."""
    pairs = []
    stack: list[int] = []
    tokens = tokenize.generate_tokens(io.StringIO(code.strip() + "\n").readline)
    shift = len(code) - len(code.lstrip())
    for tok in tokens:
        if tok.type != tokenize.OP:
            continue
        if tok.string in _OPEN:
            stack.append(tok.start[1] + shift)
        elif tok.string in _CLOSE and stack:
            start = stack.pop()
            pairs.append((start, tok.start[1] + shift, len(stack)))
    return pairs


def _split_point(code: str) -> tuple[int, int] | None:
    """The last non-empty outermost bracket pair, as black's right-hand split takes it."""
    outer = [(o, c) for o, c, depth in _brackets(code) if depth == 0 and c > o + 1]
    return max(outer, key=lambda p: p[1]) if outer else None


def _top_level_items(body: str) -> list[str]:
    """The comma-separated items of a bracket's contents (commas inside brackets kept)."""
    items, start = [], 0
    for tok, depth in _operators(body):
        if tok.string == "," and depth == 0:
            items.append(body[start : tok.start[1]].strip())
            start = tok.end[1]
    rest = body[start:].strip()
    if rest:
        items.append(rest)
    return items


# --------------------------------------------------------------------------- configuration


def configured_line_length(path: str | Path) -> int:
    """The line length the project of `path` lints with: ruff's, black's or flake8's setting
    in the closest folder holding one (ruff.toml, pyproject.toml, setup.cfg, tox.ini, .flake8),
    else 88. A path that is not on disk (fixture text) gets the default."""
    file = Path(path)
    if not file.exists():
        return DEFAULT_LINE_LENGTH
    return _line_length_in(file.resolve().parent)


@functools.lru_cache(maxsize=256)
def _line_length_in(folder: Path) -> int:
    for directory in (folder, *folder.parents):
        found = _line_length_setting(directory)
        if found:
            return found
    return DEFAULT_LINE_LENGTH


def _line_length_setting(directory: Path) -> int | None:
    """The line length set in `directory`, if any. A setting of the wrong type (`[tool] ruff
    = 5`, `line-length = "wide"`) is a ConfigError naming the file, as the linter itself
    would refuse it; a file that is not TOML at all is skipped, as before."""
    import configparser

    import tomllib

    for name in ("ruff.toml", ".ruff.toml"):
        path = directory / name
        data = _read_toml(path, tomllib)
        if data and "line-length" in data:
            return _length(data["line-length"], path, "line-length")
    path = directory / "pyproject.toml"
    tool = (_read_toml(path, tomllib) or {}).get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: `tool` must be a table; not read")
    for linter in ("ruff", "black"):
        table = tool.get(linter, {})
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool] {linter} must be a table; not read")
        for key in ("line-length", "line_length"):
            if key in table:
                return _length(table[key], path, f"[tool.{linter}] {key}")
    for name in ("setup.cfg", "tox.ini", ".flake8"):
        config = configparser.ConfigParser()
        try:
            config.read_string(_read_config(directory / name).decode("utf-8"))
            value = config.get("flake8", "max-line-length", fallback=None)
        except (configparser.Error, UnicodeDecodeError):
            continue
        if value and value.strip().isdigit():
            return int(value)
    return None


def _length(value, path: Path, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LINE_LENGTH:
        wanted = f"an integer from 1 to {MAX_LINE_LENGTH}"
        raise ConfigError(f"{path}: {key} must be {wanted}, not {value!r}; not read")
    return value


def _read_config(path: Path) -> bytes:
    """A linter's config file of the tree, read through the scan's checks (a FIFO or
    `/dev/zero` named setup.cfg is not read); empty when absent or skipped."""
    from migrate.scan.discover import Skipped, read_checked

    if not os.path.lexists(path):
        return b""
    try:
        return read_checked(path)
    except (OSError, Skipped):
        return b""


def _read_toml(path: Path, tomllib) -> dict | None:
    try:
        return tomllib.loads(_read_config(path).decode("utf-8")) or None
    except (UnicodeDecodeError, ValueError):
        return None
