"""Text from a scanned tree (file names, source lines quoted in messages and diffs) made safe
to print: a terminal runs the escape sequences a name like `\\x1b]0;title\\x07.py` holds (a
new window title, a cleared screen, a rewritten line), so every character Python does not
count as printable is shown as its escape instead. Shared by every stage that prints."""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(text: str) -> str:
    """`text` on one line, every character that is not printable (a tab is kept: it moves
    the cursor, nothing more) shown as its escape: `\\x1b`, `\\n`, `\\u202e`."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == "\t" else _escape(c) for c in text)


def printable_lines(text: str) -> str:
    """Each line of `text` made printable, its `\\n` kept (a `\\r\\n` shown as `\\n`)."""
    if text.isprintable():
        return text
    return "\n".join(printable(line.removesuffix("\r")) for line in text.split("\n"))
