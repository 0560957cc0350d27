"""Which fixes are written together: a fix unit is one finding's fix, or a whole group's.

A group (a capture, its saves, its lowering) is written whole or not at all: a group missing
a member, or holding one this run may not write, is held back whole (ruff's isolation
groups). The planner asks this to know which fixes a run will write; the fixer writes units.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from migrate.findings import Applicability, Edit, Finding

# What `migrate apply` writes by default; --unsafe-fixes adds Applicability.UNSAFE.
WRITABLE = frozenset({Applicability.SAFE})
WITH_UNSAFE = frozenset({Applicability.SAFE, Applicability.UNSAFE})


@dataclass
class Held:
    """A fix that is not written, and why (a group member missing, an unsafe fix...)."""

    finding: Finding
    reason: str


def fixable(finding: Finding, allowed: Collection[Applicability] = WRITABLE) -> bool:
    """A finding whose fix this run may write."""
    return finding.autofix is not None and finding.autofix.applicability in allowed


@dataclass
class _Unit:
    """What is written whole or not at all: one finding's fix, or one group's."""

    findings: list[Finding]
    edits: list[Edit]

    @property
    def first(self) -> tuple[int, int, str]:
        f = self.findings[0]
        return (f.line, f.column, f.rule)


def fix_units(
    findings: Iterable[Finding], allowed: Collection[Applicability] = WRITABLE
) -> tuple[list[_Unit], list[Held]]:
    """Gather the writable fixes into units; a group missing a member, or with a member this
    run may not write, is held back whole (ruff's isolation groups)."""
    singles: list[_Unit] = []
    groups: dict[tuple[str, str], list[Finding]] = {}
    held: list[Held] = []
    present: set[tuple[str, str]] = set()  # findings with a fix to write
    reported: set[tuple[str, str]] = set()  # every finding, its fix held back or not
    for f in findings:
        reported.add((f.path, f.key))
        if f.autofix is None:
            continue
        present.add((f.path, f.key))
        if f.autofix.group is not None:
            groups.setdefault((f.path, f.autofix.group), []).append(f)
        elif f.autofix.applicability in allowed:
            singles.append(_Unit([f], list(f.autofix.edits)))
        else:
            held.append(Held(f, _not_allowed(f)))
    for members in groups.values():
        reason = _group_problem(members, present, reported, allowed)
        if reason is not None:
            held.extend(Held(m, reason) for m in members)
            continue
        edits = sorted({e for m in members for e in m.autofix.edits})  # type: ignore[union-attr]
        singles.append(_Unit(members, edits))
    return singles, held


def _not_allowed(f: Finding) -> str:
    assert f.autofix is not None
    if f.autofix.applicability is Applicability.DISPLAY:
        return "display-only fix: shown as a suggestion, never written"
    return "unsafe fix (see `migrate explain " + f.rule + "`): pass --unsafe-fixes to write it"


def _group_problem(
    members: list[Finding],
    present: set[tuple[str, str]],
    reported: set[tuple[str, str]],
    allowed: Collection[Applicability],
) -> str | None:
    expected = members[0].autofix.members if members[0].autofix else ()
    for key in expected:
        if (members[0].path, key) not in present:
            why = (
                "whose own fix is held back (see that finding)"
                if (members[0].path, key) in reported
                else "which is not selected or is suppressed"
            )
            where = key.replace("@", " at line ", 1).replace(":", ", col ")
            return f"its group also needs {where}, {why}; nothing of the group is written"
    for m in members:
        if m.autofix is not None and m.autofix.applicability not in allowed:
            return f"its group holds {m.rule} at line {m.line}: {_not_allowed(m)}"
    return None
