"""Which edits are written together and how: whole fix units whose edits do not overlap,
spliced into the text in order.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable

from migrate.checks.base import Edit
from migrate.findings import Applicability, Finding
from migrate.plan.units import WRITABLE, FixUnit, fix_units


def choose_edits(
    findings: Iterable[Finding], allowed: Collection[Applicability] = WRITABLE
) -> tuple[list[Finding], list[Edit]]:
    """Take whole units whose edits do not overlap those already taken (first wins)."""
    units, _ = fix_units(findings, allowed)
    return take_units(units)


def take_units(units: list[FixUnit]) -> tuple[list[Finding], list[Edit]]:
    taken: list[Finding] = []
    spans = _Spans()
    edits: list[Edit] = []
    for unit in sorted(units, key=lambda u: u.first):
        if any(spans.collides(e) for e in unit.edits):
            continue
        for e in unit.edits:
            spans.add(e)
        taken.extend(unit.findings)
        edits.extend(unit.edits)
    return taken, sorted(set(edits))


class _Spans:
    """Edits taken so far, sorted by start, for overlap checks in O(log n) (a file can hold
    thousands of findings)."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.edits: list[Edit] = []
        self.seen: set[Edit] = set()

    def collides(self, e: Edit) -> bool:
        if e in self.seen:
            return False
        i = bisect.bisect_left(self.starts, e.start)
        # Taken edits do not overlap each other, so only the two before `e` and those that
        # start inside it can collide with it.
        j = max(i - 2, 0)
        while j < len(self.edits) and (j < i or self.starts[j] <= e.end):
            if edits_overlap(e, self.edits[j]):
                return True
            j += 1
        return False

    def add(self, e: Edit) -> None:
        if e in self.seen:
            return
        i = bisect.bisect_left(self.starts, e.start)
        self.starts.insert(i, e.start)
        self.edits.insert(i, e)
        self.seen.add(e)


def edits_overlap(a: Edit, b: Edit) -> bool:
    if a == b:
        return False
    if a.start == a.end or b.start == b.end:  # insertions collide only inside the other
        point, span = (a, b) if a.start == a.end else (b, a)
        return span.start < point.start < span.end
    return a.start < b.end and b.start < a.end


def apply_edits(text: str, edits: list[Edit], newline: str) -> str:
    out = []
    last = 0
    seen: set[Edit] = set()
    for edit in sorted(edits):
        if edit in seen:
            continue
        seen.add(edit)
        out.append(text[last : edit.start])
        out.append(_page_breaks(text, edit))
        out.append(edit.text.replace("\n", newline) if newline != "\n" else edit.text)
        last = max(last, edit.end)
    out.append(text[last:])
    return "".join(out)


def _page_breaks(text: str, edit: Edit) -> str:
    """The form feeds opening a line the edit rewrites or removes (`\\f@torch.jit.unused`):
    the author's page breaks, kept in front of what replaces it (at the start of a line a form
    feed is whitespace that Python ignores)."""
    if text[edit.start : edit.start + 1] != "\x0c" or edit.text.startswith("\x0c"):
        return ""
    if edit.start and text[edit.start - 1] not in "\r\n":
        return ""
    removed = text[edit.start : edit.end]
    return removed[: len(removed) - len(removed.lstrip("\x0c"))]
