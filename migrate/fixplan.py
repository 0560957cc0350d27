"""Decide, for the whole repository at once, which fixes keep the program working.

Checks see one file; a fix's safety can depend on others: a loader rewritten to read a
`.pt2` needs every writer of that file rewritten in the same run, a filter for tracer
warnings is dead only when no trace stays. The planner runs after the scan, asks the
repository facts (`migrate.analysis`) and the fixes other findings will really write, and
holds back what would leave the tree inconsistent: a held finding becomes assisted, its
message saying why. Holding one fix can hold others (its group, a loader of its file), so
it repeats until nothing changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from migrate.findings import Applicability, Finding, FixKind

FindingKey = tuple[str, str]  # (path, RULE@line:column)

# Rules whose fix makes a traced capture go away (MIG118 asks whether any stays).
TRACE_RULES = ("MIG102", "MIG103")


def finding_key(f: Finding) -> FindingKey:
    return (f.path, f.key)


@dataclass
class Plan:
    """The findings as the run will treat them, and why each held one is held."""

    findings: list[Finding]
    held: dict[FindingKey, str] = field(default_factory=dict)


@dataclass
class Context:
    """What a planning rule may ask: the current findings, which fixes will be written."""

    findings: list[Finding]
    written: set[FindingKey]
    selected: frozenset[str]
    facts: object | None

    def by_path(self, path: str) -> list[Finding]:
        return [f for f in self.findings if f.path == path]


PlanningRule = Callable[[Context], dict[FindingKey, str]]


def written_keys(findings: Iterable[Finding], allowed: Collection[Applicability]) -> set:
    from migrate.fixer import fix_units

    units, _ = fix_units(findings, allowed)
    return {finding_key(f) for u in units for f in u.findings}


def demote(f: Finding, reason: str) -> Finding:
    """An auto finding the run will not write: assisted, with the reason in its message."""
    return dataclasses.replace(
        f, fix=FixKind.ASSISTED, autofix=None, message=f"{f.message}; not rewritten: {reason}"
    )


def plan_fixes(
    findings: list[Finding],
    allowed: Collection[Applicability],
    selected: Iterable[str],
    facts: object | None = None,
    rules: Iterable[PlanningRule] | None = None,
) -> Plan:
    rules = list(rules if rules is not None else PLANNING_RULES)
    plan = Plan(list(findings))
    for _ in range(20):
        ctx = Context(
            plan.findings, written_keys(plan.findings, allowed), frozenset(selected), facts
        )
        holds: dict[FindingKey, str] = {}
        for rule in rules:
            for key, reason in rule(ctx).items():
                if key in ctx.written or _auto(plan.findings, key):
                    holds.setdefault(key, reason)
        holds = {k: r for k, r in holds.items() if k not in plan.held}
        if not holds:
            break
        plan.held.update(holds)
        plan.findings = [
            demote(f, holds[finding_key(f)]) if finding_key(f) in holds else f
            for f in plan.findings
        ]
    plan.findings = _demote_broken_groups(plan, allowed)
    return plan


def _auto(findings: list[Finding], key: FindingKey) -> bool:
    return any(finding_key(f) == key and f.autofix is not None for f in findings)


def _demote_broken_groups(plan: Plan, allowed: Collection[Applicability]) -> list[Finding]:
    """Members of a group that lost a member are held too, saying which member."""
    from migrate.fixer import fix_units

    _, held = fix_units(plan.findings, allowed)
    group_holds = {
        finding_key(h.finding): h.reason
        for h in held
        if h.finding.autofix is not None
        and h.finding.autofix.group is not None
        and "its group also needs" in h.reason
    }
    plan.held.update(group_holds)
    return [
        demote(f, group_holds[finding_key(f)]) if finding_key(f) in group_holds else f
        for f in plan.findings
    ]


# --------------------------------------------------------------------------- rules


def tracer_filters_stay_while_traces_do(ctx: Context) -> dict[FindingKey, str]:
    """MIG118: a TracerWarning filter is dead only when no trace stays in its file."""
    holds: dict[FindingKey, str] = {}
    filters = [f for f in ctx.findings if f.rule == "MIG118" and f.autofix is not None]
    for flt in filters:
        if not all(code in ctx.selected for code in TRACE_RULES):
            holds[finding_key(flt)] = (
                "the tool cannot tell whether a trace stays in this file while "
                f"{'/'.join(TRACE_RULES)} are not selected"
            )
            continue
        staying = [
            f
            for f in ctx.by_path(flt.path)
            if f.rule in TRACE_RULES and finding_key(f) not in ctx.written
        ]
        if staying:
            lines = ", ".join(str(f.line) for f in staying)
            holds[finding_key(flt)] = (
                f"the trace{'s' * (len(staying) > 1)} on line{'s' * (len(staying) > 1)} "
                f"{lines} stay{'s' * (len(staying) == 1)} TorchScript and still warn"
            )
    return holds


PLANNING_RULES: list[PlanningRule] = [tracer_filters_stay_while_traces_do]
