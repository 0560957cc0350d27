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


def _alternatives(pattern: str) -> list[str] | None:
    """Top-level `a|b[|]|c(?:d|e)` -> ["a", "b[|]", "c(?:d|e)"], past escapes, character
    classes and groups; None when the parentheses do not balance."""
    parts: list[str] = []
    start = 0
    i = 0
    in_class = False
    depth = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern[i + 1 : i + 2] in ("]", "^"):  # a leading ] or ^ is part of the class
                i += 1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return None
        elif ch == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    return None if in_class or depth else [*parts, pattern[start:]]


def _literal_head(pattern: str) -> str:
    """The plain text every match of `pattern` (no top-level `|`) starts with: its characters
    up to the first metacharacter, less the last one when a quantifier may drop it."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            if pattern[i + 1 : i + 2] in ("b", "B", "A") and not out:
                i += 2  # an anchor before any text matches nothing itself
                continue
            if i + 1 >= len(pattern) or pattern[i + 1].isalnum():
                break  # \d, \b...: a class or an anchor
            out.append(pattern[i + 1])
            i += 2
            continue
        if ch in _META:
            if ch in "?*{" and out:
                out.pop()
            break
        out.append(ch)
        i += 1
    return "".join(out)


class WordSearch:
    """Whether a text matches any of `patterns` (regular expressions)."""

    def __init__(self, patterns: Iterable[str]) -> None:
        words: list[str] = []
        others: list[str] = []
        for pattern in patterns:
            parts = _alternatives(pattern)
            literals = [as_literal(p) for p in parts] if parts is not None else [None]
            if all(lit is not None for lit in literals):
                words.extend(lit for lit in literals if lit not in words)  # type: ignore[misc]
            else:
                others.append(f"(?:{pattern})")
        # A word holding another (`_C._jit` holds `jit`) is found whenever that one is.
        self.words = tuple(w for w in words if not any(o != w and o in w for o in words))
        self.regex = re.compile("|".join(others)) if others else None
        # Plain heads of the regex's alternatives (`sm_[5-7]` -> "sm_"): a match can only
        # start where one occurs, and finding them is much cheaper than the regex's search.
        heads: list[str] | None = []
        for pattern in others:
            parts = _alternatives(pattern[3:-1])  # unwrap "(?:...)"
            found = [_literal_head(p) for p in parts] if parts is not None else [""]
            if not all(found):
                heads = None
                break
            heads.extend(h for h in found if h not in heads)  # type: ignore[union-attr]
        self.heads = tuple(heads) if heads is not None else None

    def search(self, text: str) -> bool:
        for word in self.words:
            if word in text:
                return True
        if self.regex is None:
            return False
        if self.heads is None:
            return self.regex.search(text) is not None
        # Every match starts where one of the heads does: try the regex only there.
        for head in self.heads:
            at = text.find(head)
            while at >= 0:
                if self.regex.match(text, at) is not None:
                    return True
                at = text.find(head, at + 1)
        return False


def lines_holding(text: str, word: str) -> list[tuple[int, int]]:
    """(start, end) of each line of `text` that holds `word` (split at "\n"), in order: a
    string search for the word, where a regex tried at every line start costs about twice
    as much."""
    lines = []
    at = text.find(word)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        if end < 0:
            end = len(text)
        lines.append((start, end))
        at = text.find(word, end)
    return lines


def is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"  # what `\w` matches in a str pattern


class WholeWords:
    """What `re.search(r"\\b(?:w1|w2|...)\\b", text)` answers, for literal words: a word that
    starts and ends with a word character is found by string search and its two neighbours
    checked, where the regex engine tries the alternation at every position of the text; any
    other word (an identifier ending in a combining mark) is left to that regex."""

    def __init__(self, words: Iterable[str]) -> None:
        unique = sorted(set(words))
        plain = [w for w in unique if w and is_word_char(w[0]) and is_word_char(w[-1])]
        others = [re.escape(w) for w in unique if w not in plain]
        self.words = tuple(plain)
        self._others = re.compile(r"\b(?:" + "|".join(others) + r")\b") if others else None

    def _starts(self, text: str, first_only: bool) -> list[int]:
        """Offsets where a word occurs as a whole word (the first one only, if asked)."""
        found: list[int] = []
        if self._others is not None:
            for match in self._others.finditer(text):
                found.append(match.start())
                if first_only:
                    return found
        for word in self.words:
            size = len(word)
            at = text.find(word)
            while at >= 0:
                end = at + size
                if (at == 0 or not is_word_char(text[at - 1])) and (
                    end == len(text) or not is_word_char(text[end])
                ):
                    found.append(at)
                    if first_only:
                        return found
                at = text.find(word, at + 1)
        return found

    def search(self, text: str) -> bool:
        return bool(self._starts(text, True))

    def lines(self, text: str) -> list[int] | None:
        """The 1-based numbers of the lines holding a whole word, in order: what
        `astwalk.lines_matching` answers for the `\\b(?:...)\\b` regex; None when the
        text has a carriage return (the parser counts a lone one as a line break)."""
        if "\r" in text:
            return None
        out: list[int] = []
        line, pos = 1, 0
        for at in sorted(self._starts(text, False)):
            line += text.count("\n", pos, at)
            pos = at
            if not out or out[-1] != line:
                out.append(line)
        return out
