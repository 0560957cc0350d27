"""`FixBuilder`: the group fix of a capture and its uses, assembled by the export rewrites.

A rule turns it into its finding's fix (`ctx.report(edits=..., imports=..., group=...)`);
it is not `migrate.findings.Fix`, the finished fix a finding carries.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from migrate.checks.base import Edit, GroupFix


@dataclass
class FixBuilder:
    """Edits plus imports, or the reason a person is needed (then no edits are applied)."""

    edits: list[Edit] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problem: str | None = None
    # The findings that carry these edits (rule, reported node): written all or none.
    members: list[tuple[str, ast.AST]] = field(default_factory=list)
    # export's (args, kwargs) source texts, and what the fix promises when it is known to be
    # more than the rule's default (None: the rule's).
    example: tuple[str, str | None] | None = None
    applicability: str | None = None
    eager: bool = False  # the capture became the module itself (its result is only called)
    each_call: bool = False  # each call became an export check (export.per_call)
    round_trip: bool = False  # saved and loaded back in place: one program per call structure
    module_route: bool = False  # the name holds the program's `.module()` (uses call or pass it)

    @property
    def auto(self) -> bool:
        return self.problem is None

    def member(self, code: str, node: ast.AST) -> None:
        if all(n is not node or c != code for c, n in self.members):
            self.members.append((code, node))

    def group(self) -> GroupFix | None:
        return GroupFix(list(self.members)) if self.members else None

    def need(self, spelled: tuple[str, tuple[str, ...]]) -> str:
        text, imports = spelled
        for spec in imports:
            if spec not in self.imports:
                self.imports.append(spec)
        return text

    def fail(self, problem: str) -> FixBuilder:
        if self.problem is None:
            self.problem = problem
        return self

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def suffix(self) -> str:
        return "".join(f"; {n}" for n in self.notes)


def short(text: str, limit: int = 40) -> str:
    """Source text on one line, cut to `limit` characters, for a message."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
