"""Does a text hold one of some prefilter patterns? Answered for every file a scan reads.

Prefilters are regular expressions, but nearly all are plain words (`jit`, `cu128`,
`torch\\.export`) or alternations of plain words. Python's regex engine tries an alternation
at almost every position of a text; `word in text` runs the string search, which is about
twice as fast per word on source code. So the plain alternatives are searched as strings and
only the others as one regular expression.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_META = set(".^$*+?{}[]|()\\")


def _split_alternatives(pattern: str) -> list[str] | None:
    """Top-level `a|b|c` -> ["a", "b", "c"]; None when a group or class makes it unclear."""
    if any(ch in pattern for ch in "()[]"):
        return None
    return pattern.split("|")


def as_literal(pattern: str) -> str | None:
    """The text a pattern matches when it is a plain word (escapes allowed), else None."""
    out = []
    escaped = False
    for ch in pattern:
        if escaped:
            if ch.isalnum():  # \d, \b, \w...: a class or an anchor, not a character
                return None
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in _META:
            return None
        else:
            out.append(ch)
    return None if escaped or not out else "".join(out)


class WordSearch:
    """Whether a text matches any of `patterns` (regular expressions)."""

    def __init__(self, patterns: Iterable[str]) -> None:
        words: list[str] = []
        others: list[str] = []
        for pattern in patterns:
            parts = _split_alternatives(pattern)
            literals = [as_literal(p) for p in parts] if parts is not None else [None]
            if all(lit is not None for lit in literals):
                words.extend(lit for lit in literals if lit not in words)  # type: ignore[misc]
            else:
                others.append(f"(?:{pattern})")
        self.words = tuple(words)
        self.regex = re.compile("|".join(others)) if others else None

    def search(self, text: str) -> bool:
        for word in self.words:
            if word in text:
                return True
        return self.regex is not None and self.regex.search(text) is not None
