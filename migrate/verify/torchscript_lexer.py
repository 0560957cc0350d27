"""A TorchScript archive's code read the way TorchScript's lexer reads it, as text Python's
`ast` reads alike: comments and strings are found with TorchScript's rules, and any
character the two readers could split differently is refused. See ``docs/security.md``.
"""

from __future__ import annotations

import re

from migrate.verify.archive_zip import ArchiveUnreadable

#: Where plain code stops: a comment, a string, or a character the two readers disagree on.
_SPECIAL = re.compile(r"[#\"']|[^\n\x20-\x7e]")
_STRING_END = {
    (q, n): re.compile(
        (rf"(?:[^{q}\\\n]|\\.)*?{q}" if n == 1 else rf"(?:[^{q}\\]|\\.|{q}(?!{q}{q}))*?{q}{{3}}"),
        re.DOTALL,
    )
    for q in "\"'"
    for n in (1, 3)
}


def torchscript_reading(text: str, file: str) -> str:
    """The code of ``text`` as TorchScript's lexer splits it, as text Python reads alike.

    TorchScript's lexer (``torch/csrc/jit/frontend/lexer.h``) ends a comment only at
    ``\\n``, lexes a ``# type:`` comment as a token, and finds a string's end by its own
    escape rule; Python's tokenizer ends comments at ``\\r`` too, and reads prefixes
    (``f"..."``) and line ends its own way. So the comments and strings are found here with
    TorchScript's rules; comments are dropped and each string becomes a plain Python
    literal of its raw text. Any character the two could read differently outside a
    string (a carriage return, form feed or other control character, a non-ASCII
    character) is refused, in comments too: torch.jit.save writes none of them.
    """
    out: list[str] = []
    pos, n = 0, len(text)

    def refuse(at: int, what: str) -> ArchiveUnreadable:
        line = text.count("\n", 0, at) + 1
        return ArchiveUnreadable(f"{file}:{line}: refusing to read: {what}")

    while pos < n:
        m = _SPECIAL.search(text, pos)
        if m is None:
            out.append(text[pos:])
            break
        out.append(text[pos : m.start()])
        at, ch = m.start(), m.group()
        if ch == "#":
            end = text.find("\n", at)
            end = n if end < 0 else end
            comment = text[at:end]
            if comment.startswith("# type:"):
                raise refuse(at, "a '# type:' comment (TorchScript reads it as code)")
            odd = re.search(r"[^\x20-\x7e]", comment)
            if odd:
                raise refuse(
                    at + odd.start(),
                    f"{odd.group()!r} in a comment (TorchScript ends comments only at "
                    "a newline, Python also at a carriage return)",
                )
            pos = end
        elif ch in "\"'":
            quotes = 3 if text.startswith(ch * 3, at) else 1
            end = _STRING_END[(ch, quotes)].match(text, at + quotes)
            if end is None:
                raise refuse(at, "a string that does not end (TorchScript's rules)")
            raw = text[at + quotes : end.end() - quotes]
            if out and re.search(r"[\w]$", out[-1]):
                out.append(" ")  # `f"..."`: Python must not read a prefix TorchScript lacks
            out.append(repr(raw))
            pos = end.end()
        else:
            what = "a carriage return" if ch == "\r" else f"the character {ch!r}"
            raise refuse(at, f"{what} outside a string (TorchScript and Python read it apart)")
    return "".join(out)
