"""What the planning rules share: a finding's key, the findings' roles by the rules' data,
what a rule may ask of the run (`PlanningContext`) and how a held fix is shown (`demote`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from migrate.findings import Applicability, Finding, FixKind
from migrate.plan.units import fix_units
from migrate.registry import codes_with, warning_codes

if TYPE_CHECKING:  # only named here: the facts package is imported when facts are built
    from migrate.facts import RepoFacts

FindingKey = tuple[str, str]  # (path, RULE@line:column)

# What the planning rules ask about, by the role each rule's data declares (rules/*.yaml,
# registry.ROLES): a new rule joins by saying its role there, not by being listed here.
TRACE_RULES = codes_with("trace")  # a trace that goes: MIG118 asks whether any stays
CAPTURE_RULES = codes_with("capture")
SCRIPT_RULES = codes_with("script")
PRODUCER_RULES = codes_with("producer")
CONSUMER_RULES = codes_with("consumer")
# Fixes that remove what the scripting compiler reads (decorators, type hints): right only
# once nothing scripts that code.
TYPING_RULES = codes_with("typing")
WRAPPER_CALLS = codes_with("wrapper-call")
# The rules whose constructs warn at import or call time in torch 2.13 (`python
# benchmarks/jit_warnings.py` runs each API; `warns_in` in their data): the only ones
# `keep-scriptable` changes. With them go what must move together: a TracerWarning filter
# with its traces, a lite loader (silent itself) with the `_save_for_lite_interpreter` that
# writes its file, optimize_for_mobile with its capture and lite save.
WARNING_RULES = warning_codes()
INTENTS = ("drop", "keep-scriptable")


def finding_key(f: Finding) -> FindingKey:
    return (f.path, f.key)


@dataclass
class PlanningContext:
    """What a planning rule may ask: the current findings, which fixes will be written."""

    findings: list[Finding]
    written: set[FindingKey]
    selected: frozenset[str]
    facts: RepoFacts | None  # the one facts object, the scan's repository pass in it
    intent: str | None = None

    def by_path(self, path: str) -> list[Finding]:
        return [f for f in self.findings if f.path == path]


PlanningRule = Callable[[PlanningContext], dict[FindingKey, str]]


def written_keys(findings: Iterable[Finding], allowed: Collection[Applicability]) -> set:
    units, _ = fix_units(findings, allowed)
    return {finding_key(f) for u in units for f in u.findings}


def demote(f: Finding, reason: str) -> Finding:
    """An auto finding the run will not write: assisted, its message the rule's head (what is
    wrong) and why the rewrite is held, instead of what the rewrite would have done."""
    head = f.message.split("; ", 1)[0]
    return dataclasses.replace(
        f, fix=FixKind.ASSISTED, autofix=None, message=f"{head}; not rewritten: {reason}"
    )
