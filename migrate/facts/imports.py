"""The import statements of a file, read from its text without parsing the whole file.

What a scripting compiler can reach is the closure of a file's imports over the repository;
from `import torch` that is most of a large package, thousands of files that nothing else
parses. Parsing each just to list its imports cost about ten times what reading them costs.

One regular-expression pass skips string literals and comments (so an `import` in a docstring
example is not taken) and stops at each `import`/`from` that starts a statement: at a line's
start or after `;` or a compound statement's `:`. Only that statement is then parsed. Not
seen: an import inside parentheses spread over lines after another token (not valid Python),
and f-strings that nest the same quote (3.12+), which may hide the rest of their line.
"""

from __future__ import annotations

import ast
import functools
import re
import sys

# Strings (quotes only: a prefix changes nothing about where a string ends) and comments are
# matched to be skipped; a statement keyword counts after a newline, `;` or `:`. Each
# alternative starts with a fixed character, so the engine skips plain code fast.
_TOKENS = re.compile(
    r"""'''(?:[^'\\]+|\\.|'(?!''))*(?:'''|\Z)"""
    r'''|"""(?:[^"\\]+|\\.|"(?!""))*(?:"""|\Z)'''
    r"""|'(?:[^'\\\n]+|\\.)*'|"(?:[^"\\\n]+|\\.)*\""""
    r"|\#[^\n]*"
    r"|[\n;:][ \t]*(?P<keyword>import|from)\b",
    re.DOTALL,
)
_ANY_IMPORT = re.compile(r"\bimport\b")

# The same tokens in one match from a statement boundary to the next import keyword, so the
# engine runs through strings and comments without coming back to Python for each (about
# twice as fast). Possessive quantifiers (Python 3.11+) keep it linear: every character
# belongs to exactly one alternative, and the run stops only before a keyword or at the end.
_TO_NEXT_IMPORT = (
    re.compile(
        r"""(?:[^'"\#\n;:]++"""
        r"""|'''(?:[^'\\]++|\\.|'(?!''))*+(?:'''|\Z)"""
        r'''|"""(?:[^"\\]++|\\.|"(?!""))*+(?:"""|\Z)'''
        r"""|'(?:[^'\\\n]++|\\.)*+'|"(?:[^"\\\n]++|\\.)*+\""""
        r"|\#[^\n]*+"
        r"""|['"]"""  # a quote that opens no string on its line: skipped, as _TOKENS does
        r"|[\n;:](?![ \t]*+(?:import|from)\b)"
        r")*+[\n;:][ \t]*+(?P<keyword>import|from)\b",
        re.DOTALL,
    )
    if sys.version_info >= (3, 11)
    else None
)


# What can end an import statement before its line does, or carry it onto the next line.
_CONTINUES = re.compile(r"[()\\#;]")


def import_statements(text: str) -> list[ast.Import | ast.ImportFrom]:
    """The Import and ImportFrom statements of a Python source, in order."""
    if not _ANY_IMPORT.search(text):
        return []
    text = "\n" + text  # a statement on the first line follows a newline too
    if _TO_NEXT_IMPORT is None:
        return _by_token(text)
    found: list[ast.Import | ast.ImportFrom] = []
    pos = 0
    while (match := _TO_NEXT_IMPORT.match(text, pos)) is not None:
        pos = _take(text, match.start("keyword"), found)
    return found


def _by_token(text: str) -> list[ast.Import | ast.ImportFrom]:
    """import_statements one token at a time (Python 3.10 has no possessive quantifiers)."""
    found: list[ast.Import | ast.ImportFrom] = []
    pos = 0
    while (match := _TOKENS.search(text, pos)) is not None:
        pos = match.end()
        start = match.start("keyword")
        if start >= 0:
            pos = _take(text, start, found)
    return found


def _take(text: str, start: int, found: list[ast.Import | ast.ImportFrom]) -> int:
    """Add the import statement starting at `start` to `found`; where it ends (its
    continuation lines hold no new statement)."""
    end = _statement_end(text, start)
    node = _parse_statement(text[start:end].replace("\\\n", " "))
    if node is not None:
        found.append(node)
    return end


@functools.lru_cache(maxsize=65536)
def _parse_statement(source: str) -> ast.Import | ast.ImportFrom | None:
    """One import statement's node. Most are repeated across a repository (`import torch`):
    each text is parsed once; callers only read the nodes."""
    try:
        node = ast.parse(source).body[0]
    except (SyntaxError, ValueError, IndexError):
        return None
    return node if isinstance(node, (ast.Import, ast.ImportFrom)) else None


def _statement_end(text: str, start: int) -> int:
    """Where the import statement starting at `start` ends: at the end of its logical line
    (through parentheses and backslash continuations), before a comment or `; ...`."""
    line_end = text.find("\n", start)
    if line_end < 0:
        line_end = len(text)
    if not _CONTINUES.search(text, start, line_end):
        return line_end  # one plain line, as most imports are: what _logical_end finds
    return _logical_end(text, start)


def _logical_end(text: str, start: int) -> int:
    """_statement_end one character at a time."""
    end = start
    depth = 0
    n = len(text)
    while end < n:
        ch = text[end]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "\\" and end + 1 < n and text[end + 1] == "\n":
            end += 2
            continue
        elif ch in "#;" and depth <= 0:
            break
        elif ch == "\n" and depth <= 0:
            break
        elif ch == "#":  # a comment inside parentheses: skip to the line's end
            end = text.find("\n", end)
            if end < 0:
                end = n
            continue
        end += 1
    return end
