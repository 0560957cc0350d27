"""Decide, for the whole repository at once, which fixes keep the program working.

Checks see one file; a fix's safety can depend on others: a loader rewritten to read a
`.pt2` needs every writer of that file rewritten in the same run, a filter for tracer
warnings is dead only when no trace stays. The planner runs after the scan, asks the
repository facts (`migrate.facts`) and the fixes other findings will really write, and
holds back what would leave the tree inconsistent: a held finding becomes assisted, its
message saying why. Holding one fix can hold others (its group, a loader of its file), so
it repeats until nothing changes.

The migration intent (`--intent`, `[tool.migrate] intent`) is decided here, once for the
tree: under `drop` a construct that the scripting compiler or the tracer reads goes as soon
as nothing that stays scripts or traces it (a script rewritten in this same run blocks
nothing); under `keep-scriptable` only what warns in the pinned torch changes
(`WARNING_RULES`); without one, each site as before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from migrate.findings import Applicability, Finding, FixKind
from migrate.plan.context import (
    INTENTS,
    FindingKey,
    PlanningContext,
    PlanningRule,
    demote,
    finding_key,
    written_keys,
)
from migrate.plan.rules import PLANNING_RULES
from migrate.plan.units import fix_units
from migrate.plan.wrappers import join_wrapper_calls, unjoined
from migrate.registry import codes_with, intent_sensitive_codes

if TYPE_CHECKING:  # only named here: the facts package is imported when facts are built
    from migrate.facts import RepoFacts


def needs_facts(findings: Iterable[Finding]) -> bool:
    """Whether any fix here depends on other files (else the planner needs no facts)."""
    cross_file = codes_with("cross-file")
    # A MIG110 fold is the planner's to decide only under an intent (it says so).
    return any(
        f.autofix is not None and (f.rule in cross_file or f.get("planned")) for f in findings
    )


@dataclass
class FixPlan:
    """The findings as the run will treat them, and why each held one is held."""

    findings: list[Finding]
    held: dict[FindingKey, str] = field(default_factory=dict)


def plan_fixes(
    findings: list[Finding],
    allowed: Collection[Applicability],
    selected: Iterable[str],
    facts: RepoFacts | None = None,
    rules: Iterable[PlanningRule] | None = None,
    intent: str | None = None,
    held: dict[FindingKey, str] | None = None,
) -> FixPlan:
    """`held`: fixes held from the start, with their reason (the ones `apply --test` saw
    break the tests: held_with_reverted); what depends on them is held as in any round."""
    rules = list(rules if rules is not None else PLANNING_RULES)
    # A wrapper call joined to its wrapper's fix by an earlier plan (the scan's, for every
    # fix) is judged again for this run's fixes.
    plan = FixPlan([unjoined(f) for f in findings], dict(held or {}))
    plan.findings = [
        demote(f, plan.held[finding_key(f)])
        if finding_key(f) in plan.held and f.autofix is not None
        else f
        for f in plan.findings
    ]
    for _ in range(20):
        # Wrapper calls joined to what this round writes: a call that moves with its
        # wrapper is a writer or reader that moves (loaders_move_with_their_writers).
        current = join_wrapper_calls(plan.findings, allowed, facts)
        ctx = PlanningContext(
            current,
            written_keys(current, allowed),
            frozenset(selected),
            facts,
            intent,
        )
        holds: dict[FindingKey, str] = {}
        for rule in rules:
            for key, reason in rule(ctx).items():
                if key in ctx.written or _auto(plan.findings, key):
                    holds.setdefault(key, reason)
        holds = {k: r for k, r in holds.items() if k not in plan.held}
        swapped = False
        if intent == "drop":
            plan.findings, holds, swapped = _fall_back(plan.findings, holds)
        if not holds:
            if swapped:
                continue  # the eager routes taken are judged in the next round
            break
        plan.held.update(holds)
        plan.findings = [
            demote(f, holds[finding_key(f)]) if finding_key(f) in holds else f
            for f in plan.findings
        ]
    plan.findings = _demote_broken_groups(plan, allowed)
    plan.findings = join_wrapper_calls(plan.findings, allowed, facts)
    return plan


def _fall_back(
    findings: list[Finding], holds: dict[FindingKey, str]
) -> tuple[list[Finding], dict[FindingKey, str], bool]:
    """Under drop, a held export whose capture has an eager route (`drop_fallback`) takes
    it instead of being held, with every member of its group that has one: the capture
    becomes the object it captured. The holds left, and whether anything changed."""
    groups = {
        (f.path, f.autofix.group)
        for f in findings
        if finding_key(f) in holds
        and f.get("drop_fallback")
        and f.autofix is not None
        and f.autofix.group
    }
    out: list[Finding] = []
    swapped = False
    for f in findings:
        fallback = f.get("drop_fallback")
        in_group = f.autofix is not None and (f.path, f.autofix.group) in groups
        if fallback is None or not (finding_key(f) in holds or in_group):
            out.append(f)
            continue
        message, fix = fallback
        reason = holds.pop(finding_key(f), None) or "its group's export is held"
        head = f.message.split("; ", 1)[0]
        data = tuple((k, v) for k, v in f.data if k not in ("drop_fallback", "route"))
        out.append(
            dataclasses.replace(
                f,
                fix=FixKind.AUTO,
                autofix=fix,
                message=f"{head}; {message} (its export is held: {reason})",
                data=(*data, ("route", "eager"), ("fell_back", True)),
            )
        )
        swapped = True
    return out, holds, swapped


def held_with_reverted(
    findings: list[Finding],
    allowed: Collection[Applicability],
    selected: Iterable[str],
    facts: RepoFacts | None,
    intent: str | None,
    units: list,
    reverted: dict[int, str],
) -> dict[int, str]:
    """`apply --test` reverted `units[i]` for each `i` in `reverted` (its reason): the other
    units whose plan assumed one of those migrates in this run (a load of what a reverted
    save writes, an `is_scripting()` fold allowed because every script goes, a wrapper's
    calls), each with the planner's reason. The same plan as the run's, those units held
    from the start: nothing here decides what depends on what."""
    held = {finding_key(f): why for i, why in reverted.items() for f in units[i].findings}
    plan = plan_fixes(findings, allowed, selected, facts, intent=intent, held=held)
    written = written_keys(plan.findings, allowed)
    out: dict[int, str] = {}
    for i, unit in enumerate(units):
        lost = [finding_key(f) for f in unit.findings if finding_key(f) not in written]
        if i in reverted or not lost:
            continue
        reasons = [plan.held[k] for k in lost if k in plan.held]
        # The one real reason: a rule's, before a group member's "its group also needs".
        own = [r for r in reasons if not r.startswith("its group also needs")]
        out[i] = (own or reasons or ["it moves with a fix that is now held"])[0]
    return out


def _auto(findings: list[Finding], key: FindingKey) -> bool:
    return any(finding_key(f) == key and f.autofix is not None for f in findings)


def _demote_broken_groups(plan: FixPlan, allowed: Collection[Applicability]) -> list[Finding]:
    """Members of a group that lost a member are held too, saying which member."""
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


# Checks whose findings differ with the intent (the planner decides the rest); the capture
# rewrites' (MIG101-MIG103, MIG201-MIG204) with it: under `drop` a capture bound on two paths
# (`try: trace ... except: script`) is one binding (migrate.checks.export.alternatives).
INTENT_CHECKS = intent_sensitive_codes()


def intent_unlocks(scanner, findings: list[Finding]) -> dict[str, int]:
    """Without an intent: how many fixes (safe + unsafe) each intent would write, against
    the `findings` planned per site. Planned again under each intent, from the same scan and
    facts; only the files of INTENT_CHECKS' findings are analysed again (their trees are the
    scan's: migrate.analysis.parsed)."""
    from migrate.plan.units import WITH_UNSAFE

    if not _torchscript(findings):
        return {}
    out = {}
    for intent in INTENTS:
        raw = scanner.findings_under(intent, INTENT_CHECKS)
        facts = scanner.facts(force=needs_facts(raw))
        plan = plan_fixes(raw, WITH_UNSAFE, scanner.codes, facts, intent=intent)
        out[intent] = len(written_keys(plan.findings, WITH_UNSAFE))
    return out


def attach_unlocks(scanner, result) -> None:
    """Without an intent and with TorchScript findings, `result.unlocks` for the reports:
    with `--compare-intents` (`ScanOptions.compare_intents`), the fixes written per site
    ("none") and under each intent; without it {} (the reports name the option). Comparing
    analyses the files of INTENT_CHECKS' findings twice more and plans twice more, about
    what a scan with an intent costs again for those files: asked for, not paid by every
    scan."""
    from migrate.plan.units import WITH_UNSAFE

    if scanner.options.intent is not None or not _torchscript(result.findings):
        return
    if not scanner.options.compare_intents:
        result.unlocks = {}
        return
    counts = intent_unlocks(scanner, result.findings)
    result.unlocks = {"none": len(written_keys(result.findings, WITH_UNSAFE)), **counts}


def _torchscript(findings: list[Finding]) -> bool:
    """Findings an intent decides (capture and serialization rules)."""
    return any(f.rule[:4] in ("MIG1", "MIG2") for f in findings)
