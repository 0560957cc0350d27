"""Which fixes are written together: a fix unit is one finding's fix, or a whole group's.

A group (a capture, its saves, its lowering) is written whole or not at all: a group missing
a member, or holding one this run may not write, is held back whole (ruff's isolation
groups). The planner asks this to know which fixes a run will write; the fixer writes units.

A fix that `rides` on others (a call of the repository's own wrapper, MIG121: no edit of its
own) joins the unit of the findings it names, in their file: it is written, counted and
reverted with them, and held when any of them is. A unit's `path` is its edits' file.
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
class FixUnit:
    """What is written whole or not at all: one finding's fix, or one group's."""

    findings: list[Finding]
    edits: list[Edit]

    @property
    def first(self) -> tuple[int, int, str]:
        f = self.findings[0]
        return (f.line, f.column, f.rule)

    @property
    def path(self) -> str:
        """The file its edits change (riders, in other files, come after its own findings)."""
        return self.findings[0].path

    @property
    def paths(self) -> list[str]:
        """Its file, then those of riders that carry edits of their own (a wrapper call
        passing the example inputs its wrapper's rewrite needs)."""
        out = [self.path]
        for f in self.findings:
            if f.autofix is not None and f.autofix.rides and f.autofix.edits:
                if f.path not in out:
                    out.append(f.path)
        return out

    def view(self, path: str) -> FixUnit:
        """What this unit writes in one file: in its own, its edits and findings with the
        riders that need no edit (counted there); in a rider's file, that rider's edits."""
        if path == self.path:
            return FixUnit(
                [f for f in self.findings if f.path == path or not _edits_of(f)],
                [
                    *self.edits,
                    *(e for f in self.findings if f.path == path for e in _rider_edits(f)),
                ],
            )
        mine = [f for f in self.findings if f.path == path and _rider_edits(f)]
        return FixUnit(mine, sorted(e for f in mine for e in _rider_edits(f)))


def _rider_edits(f: Finding) -> tuple[Edit, ...]:
    return f.autofix.edits if f.autofix is not None and f.autofix.rides else ()


def _edits_of(f: Finding) -> tuple[Edit, ...]:
    return f.autofix.edits if f.autofix is not None else ()


def fix_units(
    findings: Iterable[Finding], allowed: Collection[Applicability] = WRITABLE
) -> tuple[list[FixUnit], list[Held]]:
    """Gather the writable fixes into units; a group missing a member, or with a member this
    run may not write, is held back whole (ruff's isolation groups)."""
    singles: list[FixUnit] = []
    groups: dict[tuple[str, str], list[Finding]] = {}
    held: list[Held] = []
    present: set[tuple[str, str]] = set()  # findings with a fix to write
    reported: set[tuple[str, str]] = set()  # every finding, its fix held back or not
    riders: list[Finding] = []
    for f in findings:
        reported.add((f.path, f.key))
        if f.autofix is None:
            continue
        if f.autofix.rides:
            riders.append(f)
            continue
        present.add((f.path, f.key))
        if f.autofix.group is not None:
            groups.setdefault((f.path, f.autofix.group), []).append(f)
        elif f.autofix.applicability in allowed:
            singles.append(FixUnit([f], list(f.autofix.edits)))
        else:
            held.append(Held(f, _not_allowed(f)))
    for members in groups.values():
        reason = _group_problem(members, present, reported, allowed)
        if reason is not None:
            held.extend(Held(m, reason) for m in members)
            continue
        edits = sorted({e for m in members for e in m.autofix.edits})  # type: ignore[union-attr]
        singles.append(FixUnit(members, edits))
    if riders:
        return _join_riders(singles, riders, held, allowed)
    return singles, held


def _join_riders(
    units: list[FixUnit],
    riders: list[Finding],
    held: list[Held],
    allowed: Collection[Applicability],
) -> tuple[list[FixUnit], list[Held]]:
    """Each rider joins the units of the findings it rides on (merged into one: they are
    written and reverted together); one whose findings are not all written is held."""
    where = {(f.path, f.key): i for i, u in enumerate(units) for f in u.findings}
    reasons = {(h.finding.path, h.finding.key): h.reason for h in held}
    parent = list(range(len(units)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    joined: list[tuple[Finding, int]] = []
    for r in riders:
        rides = r.autofix.rides  # type: ignore[union-attr]
        found = [where.get(tuple(k)) for k in rides]  # type: ignore[arg-type]
        missing = [tuple(k) for k, i in zip(rides, found, strict=True) if i is None]
        if missing or r.autofix.applicability not in allowed:  # type: ignore[union-attr]
            path, key = missing[0] if missing else rides[0]
            why = reasons.get((path, key), "it is not written in this run")
            where_ = key.replace("@", " at line ", 1).split(":")[0]
            held.append(Held(r, f"its wrapper's fix ({where_} in {path}) is held: {why}"))
            continue
        first = root(found[0])  # type: ignore[arg-type]
        for i in found[1:]:
            parent[root(i)] = first  # type: ignore[arg-type]
        joined.append((r, found[0]))  # type: ignore[arg-type]
    merged: dict[int, FixUnit] = {}
    for i, u in enumerate(units):
        into = merged.get(root(i))
        if into is None:
            merged[root(i)] = FixUnit(list(u.findings), list(u.edits))
        else:
            into.findings.extend(u.findings)
            into.edits = sorted({*into.edits, *u.edits})
    for r, i in joined:
        merged[root(i)].findings.append(r)
    return list(merged.values()), held


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
