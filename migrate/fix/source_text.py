"""A file's text as it was and as it is after the fixes: its bytes decoded and encoded back
with the same encoding, BOM and line endings, and lines mapped from one version of the text
to the next (a report names a line where it is on disk).
"""

from __future__ import annotations

import bisect
import codecs
import dataclasses
import difflib
import io
import tokenize
from dataclasses import dataclass

from migrate.checks.base import source_lines
from migrate.findings import Finding


@dataclass
class Decoded:
    text: str
    encoding: str
    bom: bool
    newline: str


def decode(data: bytes) -> Decoded:
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    bom = data.startswith(codecs.BOM_UTF8)
    text = data.decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    return Decoded(text, encoding, bom, newline_of(text))


def newline_of(text: str) -> str:
    """The file's line ending: the one most of its lines end with (CRLF, a lone CR or LF;
    LF on a tie). New lines get it; the lines already there keep their own (keep_endings)."""
    crlf = text.count("\r\n")
    counts = {"\n": text.count("\n") - crlf, "\r\n": crlf, "\r": text.count("\r") - crlf}
    return max(counts, key=counts.__getitem__)


def keep_endings(original: str, fixed: str) -> str:
    """`fixed` with each line the fix left alone ending as it did in `original`, and every
    other line ending with the original's most common ending (a file may mix them)."""
    old, new = source_lines(original), source_lines(fixed)
    old_body, new_body = [_body(line) for line in old], [_body(line) for line in new]
    majority = newline_of(original)
    out = []
    for tag, i1, i2, j1, j2 in line_opcodes(old_body, new_body):
        # A line edited in place (as many lines on both sides) is still that line.
        paired = tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1)
        for k in range(j2 - j1):
            body = new_body[j1 + k]
            ending = new[j1 + k][len(body) :]
            if ending:  # only a last line ends with nothing, and it stays so
                ending = (old[i1 + k][len(old_body[i1 + k]) :] if paired else "") or majority
            out.append(body + ending)
    return "".join(out)


def line_opcodes(old: list[str], new: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes between two line lists, near-linear on large files: the common head
    and tail are matched first, and the middle is diffed with difflib's junk heuristic (a
    file of a thousand alike decorated functions made autojunk=False quadratic: 89 s)."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while (
        tail < min(len(old), len(new)) - head
        and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]
    ):
        tail += 1
    mid_old, mid_new = old[head : len(old) - tail], new[head : len(new) - tail]
    ops: list[tuple[str, int, int, int, int]] = []
    if head:
        ops.append(("equal", 0, head, 0, head))
    matcher = difflib.SequenceMatcher(None, mid_old, mid_new, autojunk=len(mid_old) > 400)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        ops.append((tag, i1 + head, i2 + head, j1 + head, j2 + head))
    if tail:
        ops.append(("equal", len(old) - tail, len(old), len(new) - tail, len(new)))
    return ops


def relocate(findings: list[Finding], before: str, after: str) -> list[Finding]:
    """`findings` located in the text `before`, moved to where the same lines are in `after`
    (a report must name the file as it is on disk: the original after a dry run, the
    tidied text after a write). A line that changed maps to the start of what replaced it."""
    if before == after or not findings:
        return findings
    old = [_body(line) for line in source_lines(before)]
    new = [_body(line) for line in source_lines(after)]
    blocks = line_opcodes(old, new)
    starts = [i1 for _, i1, _, _, _ in blocks]

    def moved(line: int) -> int:
        index = line - 1  # 0-based line of `before`
        k = bisect.bisect_right(starts, index) - 1
        if k < 0:
            return line
        tag, i1, _, j1, j2 = blocks[k]
        if tag == "equal":
            return j1 + index - i1 + 1
        return j1 + min(index - i1, max(j2 - j1 - 1, 0)) + 1

    out = []
    for f in findings:
        line, end = moved(f.line), moved(f.end_line)
        out.append(
            f
            if (line, end) == (f.line, f.end_line)
            else dataclasses.replace(f, line=line, end_line=max(end, line))
        )
    return out


def _body(line: str) -> str:
    return line.rstrip("\r\n")


def encode(decoded: Decoded, text: str) -> bytes:
    encoding = "utf-8" if decoded.encoding == "utf-8-sig" else decoded.encoding
    data = text.encode(encoding)
    return codecs.BOM_UTF8 + data if decoded.bom else data
